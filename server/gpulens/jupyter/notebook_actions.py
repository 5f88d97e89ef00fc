"""`POST /gpulens/analyze`: a notebook's code cells in; their findings with fixes, "Fix all in
notebook" and the selection refactors out, as edits a JupyterLab client applies as they are.

The wire (``gpulens.notebook-actions/1``) counts positions as offsets into a cell's text in
UTF-16 code units, the way JavaScript strings, CodeMirror and the notebook's shared model
count them: the client never converts a position. Every word the client shows (menu labels,
hover text, "nothing to do" notices) is in the answer. Nothing here runs the user's code or
reads a file; the handler resolves the project's config.

Request::

    {"cells": ["<code cell source>", ...],       // the notebook's code cells, in order
     "path": "folder/notebook.ipynb",            // optional, for [tool.gpulens]
     "device": "cuda:1",                         // optional, what device fixes write
     "fix_all": true,                            // optional: compute "Fix all in notebook"
     "selection": {"cell": 1, "from": 0, "to": 42},   // optional, with "refactor"
     "refactor": "move_to_device",               // a key of REFACTOR_MENU_TITLES
     "profiles": [null, {gpulens.profile/2}, ...]}  // optional: each code cell's last
                                                 // %%gpulens output, or null

A cell's profile is merged into its findings as the language server merges one
(`gpulens.profiler.measured`): a finding on a measured line carries its cost or drops to a
hint where the cost was negligible, and the profile's own findings (a sync, small copies or
pageable copies the analysis did not see) come with ``"origin": "profile"``. Its lines are
matched to the cell's text, so a line edited since the profile keeps none of its figures.

Every action (a finding's fix, "Fix all in notebook", a refactor) carries its edits as
``"cells": [{"cell": index, "edits": [{"from", "to", "insert"}, ...]}]``; a cell's edits are
sorted and do not overlap, so a client applies them from the last to the first, one undoable
step per cell. Refactors read the selected cell alone, as the language server's do.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpulens.analysis import Analysis, Config, Edit, Fix, analyze_cells
from gpulens.analysis.config import ConfigError, parse_device
from gpulens.analysis.edits import apply_edits, apply_fixes, first_safe_fix
from gpulens.analysis.incremental import DocumentAnalyzer
from gpulens.analysis.model import Span
from gpulens.analysis.notebook_fixes import fix_all_cells
from gpulens.analysis.refactors import REFACTOR_MENU_TITLES, refactor
from gpulens.analysis.source import split_lines
from gpulens.profiler.measured import ORIGIN_PROFILE, Merged, merge_measured, place_profile

SCHEMA = "gpulens.notebook-actions/1"
# A notebook's code as one program is analysed up to this size (the language server's bound);
# a larger request body is refused with 413 before it is parsed.
MAX_CHARS = 2_000_000
MAX_BODY_BYTES = 4 * MAX_CHARS  # JSON escapes of non-ASCII text take up to 6 bytes a char

MENU_PREFIX = "gpulens: "
FIX_ALL_LABEL = f"{MENU_PREFIX}Fix all in notebook"
DEVICE_PROMPT = "The device the selected code moves to (cuda, cuda:1, cpu, mps, …)"
BULB_TITLE = "gpulens: fixes for this line"
# the refactors that write a device: a client asks which before it requests them
_ASKS_DEVICE = frozenset({"move_to_device"})

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


class RequestError(ValueError):
    """The request body is not what the route takes; the message says what is wrong."""


@dataclass(frozen=True, slots=True)
class Selection:
    cell: int
    start: int  # UTF-16 offsets into the cell's text
    end: int


@dataclass(frozen=True, slots=True)
class ActionsRequest:
    cells: tuple[str, ...]
    path: str | None = None
    device: str | None = None
    fix_all: bool = False
    selection: Selection | None = None
    refactor: str | None = None
    # per code cell, its last profile (a `gpulens.profile/2` payload), or None
    profiles: tuple[dict[str, Any] | None, ...] = ()


def parse_request(body: bytes) -> ActionsRequest:
    """The request in ``body``; RequestError with a one-line reason when it is malformed."""
    try:
        raw = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RequestError(f"the body is not JSON ({error})") from None
    if not isinstance(raw, Mapping):
        raise RequestError('the body must be a JSON object with "cells"')
    cells = raw.get("cells")
    if not isinstance(cells, list) or not all(isinstance(cell, str) for cell in cells):
        raise RequestError('"cells" must be a list of the code cells\' sources')
    if sum(len(cell) for cell in cells) > MAX_CHARS:
        raise RequestError(f"the notebook's code is over {MAX_CHARS:,} characters")
    path = raw.get("path")
    if path is not None and not isinstance(path, str):
        raise RequestError('"path" must be the notebook\'s path, a string')
    device = raw.get("device")
    if device is not None:
        try:
            device = parse_device(device, '"device"')
        except ConfigError as error:
            raise RequestError(str(error)) from None
    kind = raw.get("refactor")
    if kind is not None and kind not in REFACTOR_MENU_TITLES:
        raise RequestError(f'"refactor" must be one of {", ".join(REFACTOR_MENU_TITLES)}')
    selection = _selection(raw.get("selection"), cells)
    if kind is not None and selection is None:
        raise RequestError('a "refactor" needs a "selection"')
    return ActionsRequest(
        cells=tuple(cells),
        path=path,
        device=device,
        fix_all=raw.get("fix_all") is True,
        selection=selection,
        refactor=kind,
        profiles=_profiles(raw.get("profiles"), len(cells)),
    )


def _profiles(raw: object, cells: int) -> tuple[dict[str, Any] | None, ...]:
    if raw is None:
        return ()
    reason = (
        '"profiles" must list, per code cell, its last %%gpulens output (a gpulens.profile '
        "payload) or null"
    )
    if not isinstance(raw, list) or len(raw) > cells:
        raise RequestError(reason)
    for entry in raw:
        if entry is None:
            continue
        if not isinstance(entry, dict) or not str(entry.get("schema", "")).startswith(
            "gpulens.profile/"
        ):
            raise RequestError(reason)
    return tuple(raw)


def _selection(raw: object, cells: Sequence[str]) -> Selection | None:
    if raw is None:
        return None
    reason = '"selection" must be {"cell": index, "from": offset, "to": offset} within the cell'
    if not isinstance(raw, Mapping):
        raise RequestError(reason)
    cell, start, end = raw.get("cell"), raw.get("from"), raw.get("to")
    numbers = (cell, start, end)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        raise RequestError(reason)
    assert isinstance(cell, int) and isinstance(start, int) and isinstance(end, int)
    if cell >= len(cells) or not start <= end <= _utf16_length(cells[cell]):
        raise RequestError(reason)
    return Selection(cell, start, end)


# -- positions ------------------------------------------------------------------------------
def _utf16_length(text: str) -> int:
    return len(text) + len(_ASTRAL.findall(text))


class CellText:
    """One cell's text: analysis positions (line, code-point column) to UTF-16 offsets, and back."""

    def __init__(self, text: str) -> None:
        self.text = text
        lines = split_lines(text)
        # where each line starts; the end of a text that ends in a line break starts a last,
        # empty line
        self._line_starts = [0]
        for line in lines[:-1] if lines and not _ends_line(text) else lines:
            self._line_starts.append(self._line_starts[-1] + len(line))
        self._astral = [match.start() for match in _ASTRAL.finditer(text)]

    def offset(self, line: int, column: int) -> int:
        """The UTF-16 offset of a (line, code-point column) position, clamped to the text."""
        if line >= len(self._line_starts):
            return self.utf16(len(self.text))
        return self.utf16(min(self._line_starts[line] + column, len(self.text)))

    def utf16(self, index: int) -> int:
        """The UTF-16 offset of the code point at ``index``."""
        return index + bisect.bisect_left(self._astral, index)

    def _index(self, offset: int) -> int:
        """The code point at a UTF-16 offset (inside a surrogate pair: the pair's start)."""
        index = offset
        for before, at in enumerate(self._astral):
            unit = at + before  # where that character starts in UTF-16; it takes two units
            if unit >= offset:
                break
            if unit + 1 == offset:
                return at
            index -= 1
        return max(0, min(index, len(self.text)))

    def position(self, offset: int) -> tuple[int, int]:
        """The (line, code-point column) of a UTF-16 offset."""
        index = self._index(offset)
        line = bisect.bisect_right(self._line_starts, index) - 1
        return line, index - self._line_starts[line]

    def span(self, start: int, end: int) -> Span:
        first, last = self.position(start), self.position(end)
        return Span(first[0], first[1], last[0], last[1])


def _ends_line(text: str) -> bool:
    return text.endswith(("\n", "\r"))


def replacement_edits(before: str, after: str) -> list[dict[str, Any]]:
    """Edits that turn ``before`` into ``after``: one per changed run of lines, in order."""
    if before == after:
        return []
    old, new = split_lines(before), split_lines(after)
    starts = [0]
    for line in old:
        starts.append(starts[-1] + len(line))
    cell = CellText(before)
    edits = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, old_first, old_last, new_first, new_last in matcher.get_opcodes():
        if tag == "equal":
            continue
        edits.append(
            {
                "from": cell.utf16(starts[old_first]),
                "to": cell.utf16(starts[old_last]),
                "insert": "".join(new[new_first:new_last]),
            }
        )
    return edits


def refactor_edits(text: str, edits: Sequence[Edit]) -> list[dict[str, Any]]:
    """A refactor's edits on the wire: what `apply_edits` makes of them, as line-run
    replacements."""
    return replacement_edits(text, apply_edits(text, edits))


def fix_edits(text: str, fix: Fix) -> list[dict[str, Any]] | None:
    """A finding's fix on the wire, as `apply_fixes` makes it (whole, as the CLI and the
    language server apply it); None when it would leave the cell unparsable."""
    applied = apply_fixes(text, [fix], cell=True)
    if not applied.applied:
        return None
    return replacement_edits(text, applied.text)


# -- the answer -----------------------------------------------------------------------------
def _cell_edits(index: int, edits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"cell": index, "edits": edits}] if edits else []


def _finding(merged: Merged, index: int, text: str, cell: CellText) -> dict[str, Any]:
    finding = merged.finding
    span = finding.span
    preferred = first_safe_fix(finding)
    fixes = []
    for fix in finding.fixes:
        edits = fix_edits(text, fix)
        if edits is None:
            continue  # it would leave the cell unparsable: a bug of its rule, not offered
        fixes.append(
            {
                "title": fix.title,
                "label": f"{MENU_PREFIX}{fix.title}",
                "safe": fix.safe,
                "preferred": fix is preferred,
                "cells": _cell_edits(index, edits),
            }
        )
    measured = " (measured)" if merged.origin == ORIGIN_PROFILE else ""
    return {
        "code": finding.code,
        "severity": finding.severity.value,
        "message": finding.message,
        "hover": f"{finding.code}{measured}: {finding.message}",
        "origin": merged.origin,
        "from": cell.offset(span.line, span.column),
        "to": cell.offset(span.end_line, span.end_column),
        "fixes": fixes,
    }


def _merged(
    analysis: Analysis, text: str, profile: dict[str, Any] | None, config: Config, program: str
) -> list[Merged]:
    """The cell's findings, with its last profile's figures merged in."""
    measured = {} if profile is None else place_profile(profile, split_lines(text))
    return merge_measured(analysis.findings, measured, text, config, program=program)


def _imports_of(cells: Sequence[str]) -> str:
    """The notebook's import statements (of the cells that parse): what a value the profile
    found on the GPU is, torch's or CuPy's."""
    imports = []
    for text in cells:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        imports += [
            ast.unparse(node) for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)
        ]
    return "\n".join(imports) + "\n"


def notebook_actions(
    request: ActionsRequest,
    config: Config,
    problem: str | None = None,
    analyzer: DocumentAnalyzer | None = None,
) -> dict[str, Any]:
    """The answer to ``request``, the notebook analysed with ``config``; ``problem`` is a
    one-line reason the project's config could not be used (the defaults were). ``analyzer``
    reuses what earlier versions of the same notebook computed."""
    if request.device is not None:
        config = config.merged(device=request.device)
    cells = list(request.cells)
    analyses = analyze_cells(cells, config, analyzer)
    profiles = list(request.profiles) + [None] * (len(cells) - len(request.profiles))
    program = _imports_of(cells) if any(profiles) else ""
    shown = [
        _merged(analysis, text, profile, config, program)
        for text, analysis, profile in zip(cells, analyses, profiles, strict=True)
    ]
    answer: dict[str, Any] = {
        "schema": SCHEMA,
        "device": config.device,
        "problem": problem,
        "cells": [
            {"findings": [_finding(m, index, text, CellText(text)) for m in merged]}
            for index, (text, merged) in enumerate(zip(cells, shown, strict=True))
        ],
        "refactors": [
            {"id": kind, "label": f"{MENU_PREFIX}{title}", "asks_device": kind in _ASKS_DEVICE}
            for kind, title in REFACTOR_MENU_TITLES.items()
        ],
        "device_prompt": DEVICE_PROMPT,
        "bulb_title": BULB_TITLE,
    }
    fixable = any(first_safe_fix(f) is not None for a in analyses for f in a.findings)
    answer["fix_all"] = {"label": FIX_ALL_LABEL, "cells": None} if fixable else None
    if request.fix_all and fixable:
        fixed = fix_all_cells(cells, config)
        answer["fix_all"]["cells"] = [
            edit
            for index, (before, after) in enumerate(zip(cells, fixed, strict=True))
            for edit in _cell_edits(index, replacement_edits(before, after))
        ]
    if request.refactor is not None and request.selection is not None:
        answer["refactor"] = _refactor(request.refactor, request.selection, cells, config)
    return answer


def _refactor(kind: str, selection: Selection, cells: list[str], config: Config) -> dict[str, Any]:
    text = cells[selection.cell]
    span = CellText(text).span(selection.start, selection.end)
    fix = refactor(kind, text, span, config.device)
    menu_title = REFACTOR_MENU_TITLES[kind]
    if fix is None:
        return {
            "id": kind,
            "title": menu_title,
            "cells": [],
            "message": f"{menu_title.rstrip('…')}: nothing in the selection to change.",
        }
    return {
        "id": kind,
        "title": fix.title,
        "cells": _cell_edits(selection.cell, refactor_edits(text, fix.edits)),
        "message": None,
    }
