"""Applying text edits: shared by `gpulens check --fix`, the tests and the server's fix-all."""

from __future__ import annotations

from collections.abc import Iterable

from gpulens.analysis.model import Edit, Finding, Fix
from gpulens.analysis.source import split_lines


def _offsets(text: str) -> list[int]:
    """Where each line starts, lines split as `SourceText` splits them."""
    starts = [0]
    for line in split_lines(text):
        starts.append(starts[-1] + len(line))
    return starts


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits; identical duplicates count once, later overlaps are dropped."""
    starts = _offsets(text)

    def offset(line: int, column: int) -> int:
        if line >= len(starts):
            return len(text)
        return min(starts[line] + column, len(text))

    ordered = sorted(set(edits), key=lambda e: (e.span.start, e.span.end))
    accepted: list[tuple[int, int, str]] = []
    last_end = -1
    for edit in ordered:
        begin = offset(edit.span.line, edit.span.column)
        end = offset(edit.span.end_line, edit.span.end_column)
        # two inserts at one point are both kept (in order); anything else overlapping is not
        if begin < last_end:
            continue
        accepted.append((begin, end, edit.new_text))
        last_end = max(last_end, end)
    pieces: list[str] = []
    cursor = 0
    for begin, end, new_text in accepted:
        pieces.append(text[cursor:begin])
        pieces.append(new_text)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def fix_all_edits(findings: Iterable[Finding]) -> list[Edit]:
    """The edits of the first safe fix of each finding, ready for `apply_edits`."""
    edits: list[Edit] = []
    for finding in findings:
        fix = next((f for f in finding.fixes if f.safe), None)
        if fix is not None:
            edits.extend(fix.edits)
    return edits


def first_safe_fix(finding: Finding) -> Fix | None:
    return next((f for f in finding.fixes if f.safe), None)
