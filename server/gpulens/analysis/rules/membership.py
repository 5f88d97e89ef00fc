"""GPU001 for `x in items` with a GPU value and a Python list or tuple: the membership test
compares the value with the items in turn (`x == item`) and reads each answer as a bool,
one wait for the GPU per item. A set or a dict looks the value up by its hash instead."""

from __future__ import annotations

import ast

from gpulens.analysis.context import Context
from gpulens.analysis.rules.common import shown
from gpulens.analysis.rules.registry import checks
from gpulens.analysis.rules.sync import report_sync
from gpulens.analysis.symbols import dotted_name

_GROWN = frozenset({"append", "insert", "extend"})


@checks(ast.Compare)
def check_membership(node: ast.Compare, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None or len(node.ops) != 1 or not isinstance(node.ops[0], ast.In | ast.NotIn):
        return
    value = ctx.value(node.left)
    if value is None or not value.on_gpu or not _list_or_tuple(node.comparators[0], ctx):
        return
    report_sync(
        node,
        f"`{shown(ctx, node)}` compares the GPU value `{shown(ctx, node.left)}` with the "
        "items one by one and reads each answer on the host, a wait for the GPU per item",
        loop,
        ctx,
        advice=". Read the value to the host once (`int(x)`) before the test, or keep the "
        "chosen items in a device mask.",
        subject=value,
    )


def _list_or_tuple(node: ast.expr, ctx: Context) -> bool:
    """A list or tuple display, or a name the function grows (`chosen.append(i)`) or binds
    to a list display: what `in` walks item by item. Not one of strings (`key in ["prompt",
    "completion"]`): an array compared with a string is simply unequal, nothing to read."""
    if isinstance(node, ast.List | ast.Tuple):
        return not _names_only(node)
    if isinstance(node, ast.ListComp):
        return True
    name = dotted_name(node)
    if name is None or ctx.function is None:
        return False
    for inner in ast.walk(ctx.function):
        match inner:
            case ast.Call(func=ast.Attribute(value=grown, attr=attr)) if attr in _GROWN:
                if dotted_name(grown) == name:
                    return True
            case ast.Assign(targets=[target], value=ast.List() | ast.ListComp() as shown_list):
                if dotted_name(target) == name:
                    return not _names_only(shown_list)
    return False


def _names_only(display: ast.expr) -> bool:
    """A display of strings (or None) only."""
    items = display.elts if isinstance(display, ast.List | ast.Tuple) else []
    return bool(items) and all(
        isinstance(i, ast.Constant) and (i.value is None or isinstance(i.value, str | bytes))
        for i in items
    )
