"""Checks every refactor test makes: the result parses and a second application is a no-op."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from gpulens.analysis.edits import apply_edits
from gpulens.analysis.model import Edit, Span

DATA = Path(__file__).parent / "data"
Refactor = Callable[[str, Span | None], list[Edit]]


def example(name: str) -> str:
    return (DATA / f"{name}.py.txt").read_text(encoding="utf-8")


def lines(first: int, last: int) -> Span:
    """A selection of whole lines ``first..last`` (0-based, inclusive)."""
    return Span(first, 0, last + 1, 0)


def follow(selection: Span | None, edits: list[Edit]) -> Span | None:
    """The same code selected again once ``edits`` are applied (lines move, not columns)."""
    if selection is None:
        return None

    def added(edit: Edit) -> int:
        return edit.new_text.count("\n") - (edit.span.end_line - edit.span.line)

    before_start = sum(added(e) for e in edits if e.span.end <= selection.start)
    before_end = sum(added(e) for e in edits if e.span.end < selection.end)
    return Span(
        selection.line + before_start,
        selection.column,
        selection.end_line + before_end,
        selection.end_column,
    )


def applied(refactor: Refactor, text: str, selection: Span | None) -> str:
    """Apply ``refactor``; assert the output parses and that applying it again does nothing."""
    edits = refactor(text, selection)
    assert edits, "the refactor offered nothing"
    output = apply_edits(text, edits)
    ast.parse(output)
    again = refactor(output, follow(selection, edits))
    assert again == [], f"not idempotent: {again}\n{output}"
    return output
