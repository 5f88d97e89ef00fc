"""Notebooks: cells analysed as one program (names flow from earlier cells to later ones),
findings mapped back to cell-relative positions."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from gpulens.analysis.config import DEFAULT_CONFIG, Config
from gpulens.analysis.engine import Analysis, analyze
from gpulens.analysis.incremental import DocumentAnalyzer, shift_finding
from gpulens.analysis.model import Edit, Finding, Fix, Span

# cell magics whose body is Python: the magic line is blanked and the body analysed
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "gpulens", "prun", "debug", "memit"}
_LINE_MAGIC = re.compile(r"^\s*(%|!|\?)|^\s*\w+\s*=\s*[%!]|\?\s*$")


def python_view(cell: str) -> str:
    """The cell with IPython syntax (magics, shell escapes, `obj?`) blanked, lines kept."""
    lines = cell.split("\n")
    first = lines[0].lstrip() if lines else ""
    if first.startswith("%%"):
        name = first[2:].split(maxsplit=1)[0] if len(first) > 2 else ""
        if name not in _PYTHON_CELL_MAGICS:
            return "\n" * (len(lines) - 1)
        lines[0] = ""
    return "\n".join("" if _LINE_MAGIC.match(line) else line for line in lines)


def analyze_cells(
    cells: Sequence[str], config: Config = DEFAULT_CONFIG, analyzer: DocumentAnalyzer | None = None
) -> list[Analysis]:
    """One Analysis per cell, positions relative to the cell (line 0 = the cell's first line).

    ``analyzer`` carries what earlier versions of the same notebook computed."""
    views = [python_view(cell) for cell in cells]
    starts: list[int] = []
    line = 0
    for view in views:
        starts.append(line)
        line += view.count("\n") + 1
    program = "\n".join(views)
    whole = analyzer.analyze(program, config) if analyzer is not None else analyze(program, config)
    per_cell: list[list[Finding]] = [[] for _ in cells]
    for finding in whole.findings:
        index = _cell_of(starts, finding.span.line)
        offset = starts[index]
        if finding.span.end_line - offset > views[index].count("\n"):
            continue  # spans two cells: cannot be drawn in either
        per_cell[index].append(_shift(finding, -offset, views[index]))
    problem_cell = (
        None if whole.syntax_problem is None else _cell_of(starts, whole.syntax_problem.line)
    )
    return [
        Analysis(
            findings,
            None
            if index != problem_cell or whole.syntax_problem is None
            else replace(whole.syntax_problem, line=whole.syntax_problem.line - starts[index]),
        )
        for index, findings in enumerate(per_cell)
    ]


def _cell_of(starts: list[int], line: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= line:
            low = middle
        else:
            high = middle - 1
    return low


def _shift(finding: Finding, delta: int, cell: str) -> Finding:
    moved = shift_finding(finding, delta)
    lines = cell.split("\n")
    fixes = []
    for fix in moved.fixes:
        edits = tuple(_into_cell(edit, lines) for edit in fix.edits)
        # a fix that edits another cell (an import in the first cell, say) is left out: the
        # client applies edits to this cell's text alone
        if all(e is not None for e in edits):
            fixes.append(Fix(fix.title, tuple(e for e in edits if e is not None), fix.safe))
    return replace(moved, fixes=tuple(fixes))


def _into_cell(edit: Edit, lines: list[str]) -> Edit | None:
    """The edit in cell coordinates, or None when it reaches into another cell.

    A line inserted after the cell's last statement (after a loop that ends the cell)
    stands at the start of the next cell in the joined program: it becomes a new last line.
    """
    last = len(lines) - 1
    span = edit.span
    if span.line >= 0 and span.end_line <= last:
        return edit
    if span == Span.point(last + 1, 0) and edit.new_text.endswith("\n"):
        return Edit(Span.point(last, len(lines[last])), "\n" + edit.new_text[:-1])
    return None
