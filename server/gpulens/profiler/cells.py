"""`# %%` cells of a script: numbered from 1; code before the first marker is the preamble (0)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from gpulens.analysis.source import source_lines, split_lines

# VS Code / Jupytext / Spyder cell markers: "# %%", "#%%", "# %% [markdown]", "# In[3]:"
_MARKER = re.compile(r"^\s*#\s*(%%|In\[\s*\d*\s*\]:)")
_MARKDOWN = re.compile(r"^\s*#\s*%%.*\[(markdown|md)\]", re.IGNORECASE)


@dataclass(frozen=True)
class Cell:
    """Lines `first_line`..`last_line` (1-based, inclusive) of the file; index 0 = preamble."""

    index: int
    first_line: int
    last_line: int
    source: str
    markdown: bool = False


def split_cells(text: str) -> list[Cell]:
    """The preamble (always present, maybe empty) then one Cell per marker.

    A cell's range starts at its marker line, so the marker (a comment) keeps its real line.
    """
    lines = split_lines(text)
    starts = [i for i, line in enumerate(lines) if _MARKER.match(line)]
    bounds = [0, *starts, len(lines)]
    cells: list[Cell] = []
    for index in range(len(bounds) - 1):
        begin, stop = bounds[index], bounds[index + 1]
        if index == 0 and begin == stop:
            cells.append(Cell(0, 1, 0, ""))
            continue
        chunk = lines[begin:stop]
        markdown = bool(index and _MARKDOWN.match(lines[begin]))
        cells.append(Cell(index, begin + 1, stop, "".join(chunk), markdown))
    return cells


def last_line_of(first_line: int, source: str) -> int:
    """The last 1-based line a chunk starting at `first_line` covers."""
    return first_line + max(len(source_lines(source)) - 1, 0)


def cell_at_line(cells: list[Cell], line: int) -> Cell | None:
    """The cell holding 1-based `line` (the preamble too), or None past the end."""
    for cell in cells:
        if cell.first_line <= line <= cell.last_line:
            return cell
    return None


def cell_by_number(cells: list[Cell], number: int) -> Cell | None:
    for cell in cells:
        if cell.index == number:
            return cell
    return None


def sets_up_process_group(text: str, line: int) -> bool:
    """Whether the code that runs to profile the cell holding 1-based `line` (every cell up to
    it, as setup; the whole file where it has no markers) calls `init_process_group`: a
    distributed job, which runs as ranks of torch's launcher or not at all. Read, never run;
    a cell that does not parse is left out."""
    cells = split_cells(text)
    held = cell_at_line(cells, line)
    upto = held.index if held is not None and len(cells) > 1 else len(cells) - 1
    for cell in cells[: upto + 1]:
        if cell.markdown or "init_process_group" not in cell.source:
            continue
        try:
            tree = ast.parse(cell.source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if name == "init_process_group":
                    return True
    return False
