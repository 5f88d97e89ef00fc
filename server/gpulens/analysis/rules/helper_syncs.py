"""GPU001 at the call of another module's helper that reads what it is handed on the host
(`to_numpy(loss)`, `to_float(t)`): the wait is the helper's, the fix is the caller's."""

from __future__ import annotations

import ast

from gpulens.analysis.context import Context, Loop
from gpulens.analysis.rules.common import shown
from gpulens.analysis.rules.registry import checks
from gpulens.analysis.rules.sync import report_sync
from gpulens.analysis.symbols import Kind, Value, keyword

_ADVICE = (
    ": the CPU stops feeding the GPU. Keep the value on the device (accumulate it there) and "
    "convert it once after the loop, or every N steps."
)


@checks(ast.Call)
def check_helper_read(node: ast.Call, ctx: Context) -> None:
    loop = ctx.hot_loop
    reads_of = ctx.evaluator.helper_reads
    if loop is None or reads_of is None:
        return
    found = reads_of(node.func)
    if found is None:
        return
    name, reads = found
    for position, parameter, read in reads:
        argument = _argument(node, position, parameter)
        if argument is None:
            continue
        subject = _subject(argument, loop, ctx)
        if subject is None or _kept_as_is_otherwise(node, argument, ctx):
            continue
        report_sync(
            node,
            f"`{shown(ctx, node)}` runs {name}(), which reads the value it is handed on the "
            f"host ({read} there) and waits for all queued GPU work",
            loop,
            ctx,
            advice=_ADVICE,
            subject=subject,
            unsure=None if not subject.guessed else _unsure(loop),
        )
        return


def _argument(node: ast.Call, position: int, parameter: str) -> ast.expr | None:
    if 0 <= position < len(node.args):
        argument = node.args[position]
        return None if isinstance(argument, ast.Starred) else argument
    if any(isinstance(a, ast.Starred) for a in node.args):
        return None  # which position each value fills is not known
    bound = keyword(node, parameter)
    return bound.value if bound is not None else None


def _kept_as_is_otherwise(node: ast.Call, argument: ast.expr, ctx: Context) -> bool:
    """`step if capturable else to_float(step)`: the code converts the value only in the
    mode where the other arm does not keep it as it is, the mode it is made on the host in."""
    statement = ctx.statement
    if statement is None:
        return False
    held = ast.dump(argument)
    for choice in ast.walk(statement):
        if isinstance(choice, ast.IfExp):
            if choice.orelse is node and ast.dump(choice.body) == held:
                return True
            if choice.body is node and ast.dump(choice.orelse) == held:
                return True
    return False


def _subject(argument: ast.expr, loop: Loop, ctx: Context) -> Value | None:
    """The GPU value handed to the helper: one the file places there, or a loss the loop
    (or the function that is one training step) runs its backward pass on, a tensor on the
    model's device (a guess). Not any value of such a step: a helper that converts whatever
    it is handed is as often handed a Python number (`to_float(self.alpha.value)`)."""
    value = ctx.value(argument)
    if value is not None:
        return value if value.on_gpu else None
    if not loop.backward or not isinstance(argument, ast.Name):
        return None
    return Value(Kind.GPU, guessed=True) if argument.id in loop.backward_names() else None


def _unsure(loop: Loop) -> str:
    if isinstance(loop.node, ast.FunctionDef | ast.AsyncFunctionDef):
        return "as the backward pass this step runs on it suggests"
    return "as the backward pass the loop runs on it suggests"
