"""GPU003, implicit moves: a host-made index tensor picking from a GPU tensor.

`scores[torch.arange(n), labels]` makes the index in host memory; PyTorch then copies it
to the GPU before the pick can run, every time the line runs: the same host allocation,
fill and transfer as `torch.arange(n).to(device)`, only the copy is not written.
"""

from __future__ import annotations

import ast

from gpulens.analysis.context import Context
from gpulens.analysis.model import Fix, Severity
from gpulens.analysis.rules.common import add_keyword, shown
from gpulens.analysis.rules.factories import (
    CPU_THEN_MOVED,
    device_fixes,
    host_factory_of,
    made_earlier,
)
from gpulens.analysis.rules.registry import checks


@checks(ast.Subscript)
def check_host_index(node: ast.Subscript, ctx: Context) -> None:
    receiver = ctx.value(node.value)
    if receiver is None or not receiver.on_gpu or receiver.lib != "torch":
        return
    severity = Severity.HINT if receiver.guessed else None
    index = node.slice
    for element in index.elts if isinstance(index, ast.Tuple) else [index]:
        if _report(node, element, ctx, severity):
            return


def _report(
    node: ast.Subscript, element: ast.expr, ctx: Context, severity: Severity | None
) -> bool:
    picked = shown(ctx, node.value)
    if isinstance(element, ast.Call | ast.Subscript):
        found = host_factory_of(element, ctx)
        if found is None:
            return False
        factory, steps = found
        ctx.report(
            CPU_THEN_MOVED,
            element,
            f"`{shown(ctx, factory)}` makes the index in host memory; picking from "
            f"`{picked}`, a GPU tensor, copies it to the GPU first, every time this runs. "
            "Pass `device=` so the GPU makes it in place: no host allocation, no transfer.",
            _fixes(node, factory, steps, ctx),
            severity=severity,
        )
        return True
    if isinstance(element, ast.Name):
        made = made_earlier(element.id, ctx)
        if made is None:
            return False
        # reported at the factory, where `device=` goes
        ctx.report(
            CPU_THEN_MOVED,
            made[0],
            f"`{shown(ctx, made[0])}` makes `{element.id}` in host memory; `{shown(ctx, node)}` "
            f"below picks from `{picked}`, a GPU tensor, with it, which copies it to the GPU "
            "first, every time this runs. Pass `device=` so the GPU makes it in place: no "
            "host allocation, no transfer.",
            severity=severity,
        )
        return True
    return False


def _fixes(
    node: ast.Subscript, factory: ast.Call, steps: frozenset[str], ctx: Context
) -> tuple[Fix, ...]:
    """`device=x.device` where the picked tensor is a name (`x[...]`)."""
    if not isinstance(node.value, ast.Name):
        return ()
    device = f"{node.value.id}.device"
    edit = add_keyword(ctx, factory, f"device={device}")
    return device_fixes(
        factory, f"Create it on the device (`device={device}`)", (edit,), ctx, steps
    )
