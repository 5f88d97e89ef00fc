"""How `gpulens check` prints: ruff-like text lines, or the JSON array of the CLI contract.

Positions inside the analysis are 0-based; everything printed here is 1-based.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from gpulens.analysis import Edit, Span
from gpulens.commands._check_file import FileResult, Located


def ordered(results: Iterable[FileResult]) -> list[tuple[str, Located]]:
    """Every finding with its path, sorted by path, cell, line, column, code."""
    items = [(r.path, located) for r in results for located in r.findings]
    items.sort(key=lambda item: _sort_key(*item))
    return items


def _sort_key(path: str, located: Located) -> tuple[str, int, int, int, str]:
    span = located.finding.span
    return (path, located.cell or 0, span.line, span.column, located.finding.code)


def where(path: str, cell: int | None, line: int, column: int) -> str:
    """`path:line:col`, or `nb.ipynb:cell 3:line:col` with the line inside the cell."""
    place = path if cell is None else f"{path}:cell {cell}"
    return f"{place}:{line + 1}:{column + 1}"


def text_line(path: str, located: Located) -> str:
    finding = located.finding
    marker = " [*]" if any(fix.safe for fix in finding.fixes) else ""
    if located.origin == "profile":
        marker += " (measured)"
    start = where(path, located.cell, finding.span.line, finding.span.column)
    return f"{start}: {finding.code}{marker} {finding.message}"


def write_text(findings: Sequence[tuple[str, Located]], out: TextIO) -> None:
    for path, located in findings:
        out.write(text_line(path, located) + "\n")


def summary(findings: Sequence[tuple[str, Located]], fixed: int, fixing: bool) -> str:
    """Ruff's closing line: what was found, what `--fix` did or could do."""
    count = len(findings)
    if fixing and fixed:
        return f"Found {_problems(count + fixed)} ({fixed} fixed, {count} remaining)."
    if not count:
        return "All checks passed."
    fixable = sum(1 for _, located in findings if any(f.safe for f in located.finding.fixes))
    if fixable and not fixing:
        return f"Found {_problems(count)} ({fixable} fixable with --fix)."
    return f"Found {_problems(count)}."


def _problems(count: int) -> str:
    return f"{count} problem" if count == 1 else f"{count} problems"


def finding_json(path: str, located: Located) -> dict[str, Any]:
    finding = located.finding
    payload: dict[str, Any] = {"path": path}
    if located.cell is not None:
        payload["cell"] = located.cell
    payload.update(_span_json(finding.span))
    payload.update(
        code=finding.code,
        severity=str(finding.severity),
        message=finding.message,
        fixes=[
            {"title": fix.title, "safe": fix.safe, "edits": [_edit_json(e) for e in fix.edits]}
            for fix in finding.fixes
        ],
    )
    return payload


def _span_json(span: Span) -> dict[str, int]:
    """1-based, as the CLI contract writes positions."""
    return {
        "line": span.line + 1,
        "column": span.column + 1,
        "end_line": span.end_line + 1,
        "end_column": span.end_column + 1,
    }


def _edit_json(edit: Edit) -> dict[str, Any]:
    return {**_span_json(edit.span), "new_text": edit.new_text}


def write_json(
    findings: Sequence[tuple[str, Located]], out: TextIO, *, origins: bool = False
) -> None:
    """The JSON array; ``origins``: each finding says where it comes from ("analysis" or
    "profile"), as it does once a saved profile was merged in."""
    items = [finding_json(path, located) for path, located in findings]
    if origins:
        for item, (_, located) in zip(items, findings, strict=True):
            item["origin"] = located.origin
    json.dump(items, out, indent=2)
    out.write("\n")
