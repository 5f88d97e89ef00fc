"""GPU001 for whole-tensor comparisons whose answer is a Python bool: `torch.equal(a, b)`,
`torch.allclose(a, b)`, `torch.eq(a, b).all()` tested by an `if`. The comparison runs on the
device and the host waits for its answer.

In a loop over GPU values the wait is per iteration, as for any read. In a module's `forward`
(or `__call__`, or a method of its class that the forward calls) the test runs on every call,
on the inputs: kernels and attention layers compare their two inputs to spot the symmetric
case on every forward. The file rarely shows where the inputs are (a library's module runs on
whatever its user hands it), so there the finding is a hint.
"""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context, Loop
from gpulens.analysis.definitions import Function
from gpulens.analysis.guards import leaves_loop
from gpulens.analysis.rules.common import shown
from gpulens.analysis.rules.registry import checks
from gpulens.analysis.rules.sync import report_sync
from gpulens.analysis.symbols import Kind, Value
from gpulens.analysis.values import is_host_expression

# the methods a module's user calls once per step: the forward and what wraps it
_ENTRIES = ("forward", "__call__")
_LOOP_ADVICE = (
    ". Keep the comparison on the device and read it once after the loop (or every N steps); "
    "where the same tensor is meant, test identity (`a is b`)."
)
_FORWARD_ADVICE = (
    ". Test identity (`x1 is x2`) or let the caller pass a flag saying the inputs are the same; "
    "a comparison kept on the device (`torch.where`) needs no read."
)


@checks(ast.Call)
def check_compared_whole(node: ast.Call, ctx: Context) -> None:
    """`torch.equal(x1, x2)`: a device comparison read back as a Python bool."""
    if ctx.qualname(node.func) not in fw.TORCH_READ_BOOLS or not node.args:
        return
    what = (
        f"`{shown(ctx, node)}` compares on the device and hands the answer to the host as a "
        "Python bool, waiting for all queued GPU work"
    )
    loop = ctx.hot_loop
    held = next((a for a in node.args if ctx.on_gpu(a)), None)
    if loop is not None and held is not None:
        saved, ctx.deciding_exit = ctx.deciding_exit, ctx.deciding_exit or _decides_exit(node, ctx)
        try:
            report_sync(node, what, loop, ctx, advice=_LOOP_ADVICE, subject=ctx.value(held))
        finally:
            ctx.deciding_exit = saved
        return
    _report_per_call(node, what, node.args, ctx)


@checks(ast.If, ast.IfExp)
def check_equality_tested(node: ast.If | ast.IfExp, ctx: Context) -> None:
    """`if torch.eq(x1, x2).all():` in a forward whose inputs the file does not place (on
    a GPU value in a loop, the truth test's own check reports it)."""
    for operand in _tested(node.test):
        compared = _all_equal(operand, ctx)
        if compared is None or (ctx.hot_loop is not None and ctx.on_gpu(operand)):
            continue
        what = (
            f"Using `{shown(ctx, operand)}` as a Python bool copies the comparison to the host "
            "and waits for all queued GPU work"
        )
        _report_per_call(operand, what, compared, ctx)


def _report_per_call(node: ast.expr, what: str, compared: list[ast.expr], ctx: Context) -> None:
    """A hint where ``node`` runs on every call of a module's forward and compares values
    that may be on the GPU (none known to be on the host)."""
    entry = _runs_per_forward(ctx)
    function = ctx.function
    if entry is None or function is None or not _may_be_on_gpu(compared, ctx):
        return
    loop = Loop(function, function.lineno - 1, frozenset(), None, called_from=entry)
    report_sync(
        node,
        what,
        loop,
        ctx,
        advice=_FORWARD_ADVICE,
        subject=Value(Kind.GPU, guessed=True),
        unsure="as the inputs of a module run there are (the file does not place them)",
    )


def _runs_per_forward(ctx: Context) -> str | None:
    """How messages name the loop that runs the current method: a class's `forward` or
    `__call__`, or a method of the class one of them calls on `self`. None elsewhere."""
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
        if entry is not None and _entry(entry) and function.name in _self_calls(entry):
            return (
                f"the loop that calls {owner}.{name}() (which calls {function.name}()) once per "
                "step"
            )
    return None


def _entry(function: Function) -> bool:
    """A module's forward, or a `__call__` that wraps its base's (`super().__call__(...)`,
    which runs the forward): a `__call__` of its own is any object's entry (a pipeline's,
    run once per generation)."""
    if function.name == "forward":
        return True
    return function.name == "__call__" and any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "__call__"
        and isinstance(call.func.value, ast.Call)
        and isinstance(call.func.value.func, ast.Name)
        and call.func.value.func.id == "super"
        for call in ast.walk(function)
    )


def _decides_exit(node: ast.expr, ctx: Context) -> bool:
    """The test of an `assert`, or of an `if` whose body leaves the loop: the program
    needs the answer there (as the truth-test check reads it)."""
    match ctx.statement:
        case ast.Assert(test=test):
            return _within(node, test)
        case ast.If(test=test, body=body):
            return _within(node, test) and leaves_loop(body)
    return False


def _within(node: ast.expr, tree: ast.expr) -> bool:
    return any(inner is node for inner in ast.walk(tree))


def _self_calls(function: Function) -> set[str]:
    """The names of the methods a function calls on its first parameter (`self.m(...)`)."""
    if not function.args.args:
        return set()
    this = function.args.args[0].arg
    return {
        call.func.attr
        for call in ast.walk(function)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == this
    }


def _may_be_on_gpu(compared: list[ast.expr], ctx: Context) -> bool:
    """Some value compared is not known to be on the host (a tensor the file made there, a
    number, a constant)."""
    for value in compared:
        if isinstance(value, ast.Constant) or is_host_expression(value):
            continue
        held = ctx.value(value)
        if held is None or held.on_gpu:
            return True
    return False


def _tested(test: ast.expr) -> list[ast.expr]:
    """The operands an `if` reads as bools: the test, each operand of `and`/`or`, what `not`
    negates."""
    match test:
        case ast.BoolOp(values=values):
            return [t for value in values for t in _tested(value)]
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return _tested(operand)
    return [test]


def _all_equal(node: ast.expr, ctx: Context) -> list[ast.expr] | None:
    """The two tensors of `torch.eq(a, b).all()` or `torch.all(torch.eq(a, b))`."""
    match node:
        case ast.Call(func=ast.Attribute(attr="all", value=inner), args=[], keywords=[]):
            pass
        case ast.Call(args=[inner], keywords=[]) if ctx.qualname(node.func) == "torch.all":
            pass
        case _:
            return None
    if (
        isinstance(inner, ast.Call)
        and ctx.qualname(inner.func) == "torch.eq"
        and len(inner.args) == 2
        and not inner.keywords
    ):
        return list(inner.args)
    return None
