"""Helpers the rule families share: text edits that keep the file valid Python."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from gpulens.analysis.model import Edit, Fix, Span

if TYPE_CHECKING:
    from gpulens.analysis.context import Context, Loop

_MAX_SHOWN = 48


def shown(ctx: Context, node: ast.AST) -> str:
    """The source of ``node`` on one line, shortened for a message."""
    text = " ".join(ctx.text(node).split())
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def fix(title: str, edits: tuple[Edit, ...], changes: str | None = None) -> Fix:
    """A fix; with ``changes`` (what applying it changes in what the program does, in a few
    words) it is a quick-fix only, never applied by `--fix` or "Fix all", and says why."""
    if changes is None:
        return Fix(title, edits)
    return Fix(f"{title} — {changes}", edits, safe=False)


def has_double_star(call: ast.Call) -> bool:
    return any(k.arg is None for k in call.keywords)


def replace(ctx: Context, node: ast.AST, new_text: str) -> Edit:
    return Edit(ctx.span(node), new_text)


def add_keyword(ctx: Context, call: ast.Call, text: str) -> Edit:
    """Append `name=value` to a call's arguments."""
    arguments: list[ast.AST] = [*call.args, *call.keywords]
    if arguments:
        last = max(arguments, key=lambda a: (a.end_lineno or 0, a.end_col_offset or 0))  # type: ignore[attr-defined]
        end = ctx.span(last)
        return Edit(Span.point(end.end_line, end.end_column), f", {text}")
    # `f()`: insert inside the parentheses, which end the call
    end = ctx.span(call)
    return Edit(Span.point(end.end_line, end.end_column - 1), text)


def starts_line(ctx: Context, node: ast.stmt) -> bool:
    """Whether nothing but indentation stands before ``node`` on its line."""
    span = ctx.span(node)
    return not ctx.source.lines[span.line][: span.column].strip()


def insert_before(ctx: Context, statement: ast.stmt, code: str) -> Edit | None:
    """A new line ``code`` just above ``statement``, at its indentation."""
    if not starts_line(ctx, statement):
        return None
    span = ctx.span(statement)
    indent = ctx.source.indentation(span.line)
    return Edit(Span.point(span.line, 0), f"{indent}{code}\n")


def insert_after(ctx: Context, statement: ast.stmt, code: str) -> Edit | None:
    """A new line ``code`` just below ``statement`` (and its body), at its indentation."""
    if not starts_line(ctx, statement):
        return None
    span = ctx.span(statement)
    indent = ctx.source.indentation(span.line)
    last = span.end_line
    lines = ctx.source.lines
    if last + 1 >= len(lines) and not lines[last].endswith("\n"):
        return Edit(Span.point(last, len(lines[last])), f"\n{indent}{code}")
    return Edit(Span.point(last + 1, 0), f"{indent}{code}\n")


def after_loop(ctx: Context, loop: Loop, code: str) -> Edit | None:
    if loop.statement is None or loop.called_from:
        return None
    return insert_after(ctx, loop.statement, code)


def methods_called_on_self(method: ast.AST) -> set[str]:
    """The names of the methods a function calls on its first parameter (`self.m(...)`)."""
    arguments = getattr(method, "args", None)
    if arguments is None or not arguments.args:
        return set()
    this = arguments.args[0].arg
    return {
        node.func.attr
        for node in ast.walk(method)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == this
    }


def written_number(node: ast.expr) -> bool:
    """`0.4`, `-1`: a number written in the code."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    )
