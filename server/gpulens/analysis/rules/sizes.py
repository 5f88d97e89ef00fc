"""GPU001 for GPU values used where Python needs an int: a slice's bound (`x[:, : n]`), a
factory's size (`torch.zeros(b, n)`), a random draw's bounds (`torch.randint(0, n, ...)`),
`range(n)`. A 0-d tensor there is turned into a Python int through `__index__`, which
copies it to the host and waits for all queued GPU work, on every pass of a hot loop. A
length's maximum (`lengths.max()`) read so once per batch is the common case; a length per
item (`for i, n in enumerate(lengths): x[i, :n]`) waits once per item.

Whatever the array library, an index or a size must be one number: a GPU value there is one
element, so the wait is certain wherever the value is on the GPU (by a guess: a hint). Only
a value the function computes counts (`lengths.max()`, a count it summed, what a method of
the file returned): a size handed in as a parameter or a batch's field is as often a
Python int the caller took from a shape (`logits_to_keep`, `gradient_steps`), which the
file's guesses cannot tell from a tensor.
"""

from __future__ import annotations

import ast
import builtins

from gpulens.analysis.context import Context
from gpulens.analysis.rules.common import shown
from gpulens.analysis.rules.registry import checks
from gpulens.analysis.rules.sync import report_sync
from gpulens.analysis.symbols import names_in

# which positional arguments are sizes or integer bounds ("all", or the leading count)
_ALL = -1
_SIZED_FUNCTIONS: dict[str, int] = {
    **{
        f"{lib}.{name}": _ALL
        for lib in ("torch", "cupy")
        for name in ("zeros", "ones", "empty", "arange", "eye")
    },
    **{f"torch.{name}": _ALL for name in ("rand", "randn", "randint", "randperm")},
    "torch.full": 1,
    "cupy.full": 1,
    "range": _ALL,
}
_SIZED_METHODS: dict[str, int] = {"new_zeros": _ALL, "new_ones": _ALL, "new_empty": _ALL}
_SIZE_KEYWORDS = frozenset({"size", "shape", "low", "high", "end", "start", "n"})

_ADVICE = (
    ". Take sizes and bounds from host data (a shape, lengths kept on the CPU), or read the "
    "values the loop needs at once (`.tolist()`) before it."
)


@checks(ast.Subscript)
def check_slice_bound(node: ast.Subscript, ctx: Context) -> None:
    """`x[:, : lengths.max()]`: a slice whose bound is a GPU value."""
    loop = ctx.hot_loop
    if loop is None:
        return
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    for part in parts:
        if not isinstance(part, ast.Slice):
            continue
        for bound in (part.lower, part.upper, part.step):
            if bound is not None and _device_scalar(bound, ctx):
                what = (
                    f"`{shown(ctx, node)}` slices at `{shown(ctx, bound)}`, a GPU value: "
                    "Python needs the bound as an int, so it copies the value to the host and "
                    "waits for all queued GPU work"
                )
                report_sync(node, what, loop, ctx, advice=_ADVICE, subject=ctx.value(bound))
                return


@checks(ast.Call)
def check_size_argument(node: ast.Call, ctx: Context) -> None:
    """`torch.zeros(b, lengths.max())`, `torch.randint(0, n, (b,))`, `range(n)`: a size or
    an integer bound that is a GPU value."""
    loop = ctx.hot_loop
    if loop is None:
        return
    sized = _sized_positions(node, ctx)
    if sized is None:
        return
    positional = node.args if sized == _ALL else node.args[:sized]
    candidates = [*positional, *(k.value for k in node.keywords if k.arg in _SIZE_KEYWORDS)]
    for size in (e for c in candidates for e in _elements(c)):
        if _device_scalar(size, ctx):
            what = (
                f"`{shown(ctx, node)}` takes `{shown(ctx, size)}`, a GPU value, as a size or "
                "bound: "
                "Python needs it as an int, so it copies the value to the host and waits for "
                "all queued GPU work"
            )
            report_sync(node, what, loop, ctx, advice=_ADVICE, subject=ctx.value(size))
            return


def _sized_positions(node: ast.Call, ctx: Context) -> int | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "range":
        return _ALL if ctx.scope.lookup("range") is None else None
    if isinstance(func, ast.Attribute) and func.attr in _SIZED_METHODS:
        return _SIZED_METHODS[func.attr] if ctx.on_gpu(func.value) else None
    name = ctx.qualname(func)
    return None if name is None else _SIZED_FUNCTIONS.get(name)


def _elements(node: ast.expr) -> list[ast.expr]:
    """A size given as a tuple or list is checked element by element (`*shape` is left:
    what it unpacks is sizes, not the one value it names)."""
    parts = node.elts if isinstance(node, ast.Tuple | ast.List) else [node]
    return [e for e in parts if not isinstance(e, ast.Starred)]


def _device_scalar(node: ast.expr, ctx: Context) -> bool:
    return ctx.on_gpu(node) and _computed_here(node, ctx.function, set())


def _computed_here(node: ast.expr, function: ast.AST | None, seen: set[str]) -> bool:
    """Whether ``node`` is computed in ``function`` by a call other than a builtin's (a
    tensor method, the array library, a function or method), following its names through
    the function's assignments and loops; not a value only handed in."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and not (
            isinstance(inner.func, ast.Name) and inner.func.id in _BUILTINS
        ):
            return True
        if isinstance(inner, ast.Name) and function is not None and inner.id not in seen:
            seen.add(inner.id)
            if any(_computed_here(s, function, seen) for s in _sources(function, inner.id)):
                return True
    return False


def _sources(function: ast.AST, name: str) -> list[ast.expr]:
    """What the function binds ``name`` from: an assignment's value (whole, for an
    unpacking), an augmented assignment's operand, a loop's iterable."""
    found: list[ast.expr] = []
    for node in ast.walk(function):
        match node:
            case ast.Assign(targets=targets, value=value) if any(
                name in names_in(t) for t in targets
            ):
                found.append(value)
            case (
                ast.AnnAssign(target=target, value=ast.expr() as value)
                | ast.AugAssign(target=target, value=value)
            ) if name in names_in(target):
                found.append(value)
            case (
                ast.For(target=target, iter=iterable)
                | ast.comprehension(target=target, iter=iterable)
            ) if name in names_in(target):
                found.append(iterable)
    return found


_BUILTINS = frozenset(dir(builtins))
