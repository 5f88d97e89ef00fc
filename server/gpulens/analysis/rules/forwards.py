"""GPU001 in a module's forward whose data the file does not place: reads that run on every
call of the module, once per step of whoever trains or evaluates it.

A library's module (a kernel, a variational strategy, a cache) runs on whatever its user hands
it, and on the GPU once the user moves the model there: a read in its `forward` waits for the
GPU once per step. The file rarely shows the device, so what this module reports is a hint.
The forward is `forward`, a `__call__` that wraps the module call (`super().__call__(...)`,
`Base.__call__(self, ...)`, `self.forward(...)`), or a method of the class one of them calls on
`self`. A `__call__` of its own is any object's entry (a pipeline's, run once per generation).
"""

from __future__ import annotations

import ast

from gpulens.analysis.context import Context, Loop
from gpulens.analysis.definitions import Function
from gpulens.analysis.rules.common import methods_called_on_self, shown
from gpulens.analysis.rules.registry import checks
from gpulens.analysis.rules.sync import may_be_tensor, report_sync
from gpulens.analysis.symbols import Kind, Value
from gpulens.analysis.values import is_host_expression

_ENTRIES = ("forward", "__call__")
# reads of a whole value to the host
_READS = frozenset({"item", "tolist"})
_UNSURE = "as the inputs and buffers of a module run there are (the file does not place them)"


@checks(ast.Call)
def check_forward_read(node: ast.Call, ctx: Context) -> None:
    """`self.initialized.item()`, `x.max().item()` in a forward, where nothing says where the
    value is (a value known on the GPU in a loop is the sync check's)."""
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in _READS or node.args:
        return
    if ctx.hot_loop is not None or ctx.value(func.value) is not None:
        return
    if not may_be_tensor(func.value, ctx):
        return
    report_per_call(
        node,
        f"`{shown(ctx, node)}` copies the value to the host and waits for all queued GPU work",
        [func.value],
        ctx,
        advice=". Keep a flag that is set once as a Python attribute, or keep the value on the "
        "device; a read the host needs is worth taking once per step at most.",
    )


def report_per_call(
    node: ast.expr, what: str, read: list[ast.expr], ctx: Context, *, advice: str
) -> None:
    """A hint where ``node`` runs on every call of a module's forward and reads values that
    may be on the GPU (not all known to be on the host)."""
    entry = runs_per_forward(ctx)
    function = ctx.function
    if entry is None or function is None or not _may_be_on_gpu(read, ctx):
        return
    loop = Loop(function, function.lineno - 1, frozenset(), None, called_from=entry)
    report_sync(
        node, what, loop, ctx, advice=advice, subject=Value(Kind.GPU, guessed=True), unsure=_UNSURE
    )


def runs_per_forward(ctx: Context) -> str | None:
    """How messages name the loop that runs the current method, where it is a forward (see
    the module's doc) or a method of the class that one calls on `self`. None elsewhere."""
    function = ctx.function
    if function is None:
        return None
    definitions = ctx.evaluator.definitions
    owner = definitions.owner.get(id(function))
    if owner is None:
        return None
    if _entry(function):
        return f"the loop that calls {owner}.{function.name}() once per step"
    methods = definitions.methods.get(owner, {})
    for name in _ENTRIES:
        entry = methods.get(name)
        if entry is not None and _entry(entry) and function.name in methods_called_on_self(entry):
            return (
                f"the loop that calls {owner}.{name}() (which calls {function.name}()) once per "
                "step"
            )
    return None


def _entry(function: Function) -> bool:
    if function.name == "forward":
        return True
    return function.name == "__call__" and any(
        _runs_the_module(call, function) for call in ast.walk(function)
    )


def _runs_the_module(call: ast.AST, function: Function) -> bool:
    """`super().__call__(...)`, `Module.__call__(self, ...)`, `self.forward(...)`."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return False
    receiver = call.func.value
    this = function.args.args[0].arg if function.args.args else None
    match call.func.attr:
        case "__call__":
            if isinstance(receiver, ast.Call):
                return isinstance(receiver.func, ast.Name) and receiver.func.id == "super"
            return (
                isinstance(receiver, ast.Name)
                and bool(call.args)
                and isinstance(call.args[0], ast.Name)
                and call.args[0].id == this
            )
        case "forward":
            return isinstance(receiver, ast.Name) and receiver.id == this
    return False


def _may_be_on_gpu(read: list[ast.expr], ctx: Context) -> bool:
    """Some value read is not known to be on the host (a tensor the file made there, a
    number, a constant)."""
    for value in read:
        if isinstance(value, ast.Constant) or is_host_expression(value):
            continue
        held = ctx.value(value)
        if held is None or held.on_gpu:
            return True
    return False
