"""GPU001 for whole-tensor comparisons whose answer is a Python bool: `torch.equal(a, b)`,
`torch.allclose(a, b)`, `torch.eq(a, b).all()` tested by an `if`. The comparison runs on the
device and the host waits for its answer.

In a loop over GPU values the wait is per iteration, as for any read. In a module's forward
(`forwards`) the test runs on every call, on the inputs: kernels and attention layers compare
their two inputs to spot the symmetric case on every forward. The file rarely shows where the
inputs are (a library's module runs on whatever its user hands it), so there it is a hint.
"""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context
from gpulens.analysis.guards import leaves_loop
from gpulens.analysis.rules.common import shown
from gpulens.analysis.rules.forwards import report_per_call
from gpulens.analysis.rules.registry import checks
from gpulens.analysis.rules.sync import report_sync

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
    report_per_call(node, what, node.args, ctx, advice=_FORWARD_ADVICE)


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
        report_per_call(operand, what, compared, ctx, advice=_FORWARD_ADVICE)


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
