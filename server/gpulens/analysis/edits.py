"""Applying edits and fixes: the one way `gpulens check --fix`, the language server's
quick-fixes, its fix-all and fix-on-save change a text.

`apply_fixes` takes each fix whole or not at all, and never leaves a text that parsed
unparsable; `fix_until_stable` repeats it with a fresh analysis until nothing changes.
"""

from __future__ import annotations

import ast
import functools
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpulens.analysis.model import Edit, Finding, Fix
from gpulens.analysis.source import split_lines

if TYPE_CHECKING:
    from gpulens.analysis.engine import Analysis

# Fixes can uncover or shift other findings; a few rounds reach a fixed point, and the cap
# stops two rules that undo each other from looping forever.
MAX_FIX_ROUNDS = 10


@functools.lru_cache(maxsize=8)
def _offsets(text: str) -> tuple[int, ...]:
    """Where each line starts, lines split as `SourceText` splits them. Kept for the last
    few texts: the quick-fixes at one spot are each checked against the same text."""
    starts = [0]
    for line in split_lines(text):
        starts.append(starts[-1] + len(line))
    return tuple(starts)


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


# ---- fixes: whole or not at all, never a text that stops parsing --------------------------------


@dataclass(frozen=True, slots=True)
class AppliedFixes:
    """What `apply_fixes` made of a text: the new text, and what became of each fix."""

    text: str
    applied: tuple[Fix, ...] = ()
    # an edit overlaps one of a fix taken before: left whole for a later round
    deferred: tuple[Fix, ...] = ()
    # the text would not parse with it (or its own edits overlap): never applied
    rejected: tuple[Fix, ...] = ()
    # edits a line at or after the text's first syntax error, which the analysis did not
    # see as the user will write it: left alone
    past_error: tuple[Fix, ...] = ()


def line_break_of(text: str) -> str:
    """The text's line break, as its first line ends ("\\n" for a text of one line)."""
    newline = text.find("\n")
    cr = text.find("\r")
    if cr == -1 or (newline != -1 and newline < cr):
        return "\n"
    return "\r\n" if text.startswith("\r\n", cr) else "\r"


def apply_fixes(
    text: str,
    fixes: Iterable[Fix],
    *,
    cell: bool = False,
    statement_starts: Sequence[int] | None = None,
) -> AppliedFixes:
    """Apply ``fixes`` in order, each whole or not at all, so that the text still parses
    (or, if it did not, parses as far as it did).

    A fix with an edit overlapping one of a fix taken before it is deferred whole (an edit
    identical to one already taken is made once); a fix that would break the parse is
    rejected. The line breaks a fix inserts are the text's own (`line_break_of`).
    ``cell``: the text is a notebook cell, whose IPython syntax is not Python.
    ``statement_starts``: the first line of each top-level statement of ``text``, a text
    that parses, where the caller knows them (the language server's parser does): then only
    the statements a fix touches are parsed again, not the whole text.
    """
    line_starts = _offsets(text)
    newline = line_break_of(text)
    check = _ParseCheck(text, line_starts, cell, statement_starts)
    taken: list[_Placed] = []
    chosen: list[tuple[Fix, list[_Placed]]] = []
    deferred: list[Fix] = []
    rejected: list[Fix] = []
    past_error: list[Fix] = []
    for fix in fixes:
        placed = [_place(edit, text, line_starts, newline) for edit in fix.edits]
        if not placed:
            continue
        if check.past_error(placed):
            past_error.append(fix)
        elif _overlapping(placed, placed):
            rejected.append(fix)
        elif _overlapping(placed, taken):
            deferred.append(fix)
        else:
            taken.extend(p for p in placed if p not in taken)
            chosen.append((fix, placed))
    if check.keeps_parse(taken):
        applied = tuple(fix for fix, _ in chosen)
        return AppliedFixes(
            _splice(text, taken), applied, (*deferred,), (*rejected,), (*past_error,)
        )
    # some fix breaks the parse: take them one at a time to find which
    kept: list[_Placed] = []
    accepted: list[Fix] = []
    for fix, placed in chosen:
        trial = kept + [p for p in placed if p not in kept]
        if check.keeps_parse(trial):
            kept = trial
            accepted.append(fix)
        else:
            rejected.append(fix)
    return AppliedFixes(
        _splice(text, kept), (*accepted,), (*deferred,), (*rejected,), (*past_error,)
    )


@dataclass(frozen=True, slots=True)
class FixedTexts:
    """What `fix_until_stable` made of a file's text or a notebook's cells."""

    texts: tuple[str, ...]
    analyses: tuple[Analysis, ...]  # of ``texts``
    fixed: int  # fixes applied, over every round
    rejected: tuple[Fix, ...]  # fixes left out because the text would not have parsed


def fix_until_stable(
    texts: Sequence[str],
    analyses: Sequence[Analysis],
    reanalyze: Callable[[list[str]], Sequence[Analysis]],
    *,
    cells: bool = False,
    only: int | None = None,
) -> FixedTexts:
    """Apply the first safe fix of every finding (`apply_fixes`), analyse again, and repeat
    until nothing changes (at most MAX_FIX_ROUNDS rounds).

    ``texts``: a file's text, or a notebook's code cells (``cells``) analysed as one program
    by ``reanalyze``; ``only``: fix that one text alone. After a cell with a syntax error no
    cell is fixed: the analysis did not see the rest as the user will write it.
    """
    current, results = list(texts), list(analyses)
    fixed = 0
    rejected: dict[Fix, None] = {}
    for _ in range(MAX_FIX_ROUNDS):
        candidate = list(current)
        count = 0
        broken = [i for i, analysis in enumerate(results) if analysis.syntax_problem is not None]
        for index, (text, analysis) in enumerate(zip(current, results, strict=True)):
            if broken and index > broken[0]:
                break
            if only is not None and index != only:
                continue
            safe = [fix for f in analysis.findings if (fix := first_safe_fix(f)) is not None]
            outcome = apply_fixes(text, safe, cell=cells)
            candidate[index] = outcome.text
            count += len(outcome.applied)
            rejected.update(dict.fromkeys(outcome.rejected))
        if candidate == current:
            break
        current, results, fixed = candidate, list(reanalyze(candidate)), fixed + count
    return FixedTexts(tuple(current), tuple(results), fixed, tuple(rejected))


# ---- the parts -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Placed:
    """An edit as string offsets into the text it applies to."""

    begin: int
    end: int
    new_text: str
    line: int  # of ``begin``
    end_line: int  # of ``end``


def _place(edit: Edit, text: str, line_starts: Sequence[int], newline: str) -> _Placed:
    def offset(line: int, column: int) -> int:
        if line >= len(line_starts):
            return len(text)
        return min(line_starts[line] + column, len(text))

    new_text = edit.new_text
    if newline != "\n" and "\n" in new_text:
        new_text = new_text.replace("\r\n", "\n").replace("\n", newline)
    last = len(line_starts) - 1
    return _Placed(
        offset(edit.span.line, edit.span.column),
        offset(edit.span.end_line, edit.span.end_column),
        new_text,
        min(edit.span.line, last),
        min(edit.span.end_line, last),
    )


def _overlapping(edits: Sequence[_Placed], others: Sequence[_Placed]) -> bool:
    """Whether an edit of ``edits`` overlaps a different one of ``others`` (two inserts at
    one point do not overlap: both are made, in order)."""
    return any(
        a.begin < b.end and b.begin < a.end and a != b for a in edits for b in others if a is not b
    )


def _splice(text: str, edits: Sequence[_Placed]) -> str:
    """``text`` with non-overlapping ``edits`` made; inserts at one point in list order."""
    pieces: list[str] = []
    cursor = 0
    for edit in sorted(edits, key=lambda e: (e.begin, e.end)):  # stable: ties keep their order
        pieces.append(text[cursor : edit.begin])
        pieces.append(edit.new_text)
        cursor = edit.end
    pieces.append(text[cursor:])
    return "".join(pieces)


class _ParseCheck:
    """Whether a text with some edits made parses as well as the text did."""

    def __init__(
        self, text: str, line_starts: Sequence[int], cell: bool, statements: Sequence[int] | None
    ) -> None:
        self._text = text
        self._line_starts = line_starts
        self._cell = cell
        self._statements = sorted(set(statements)) if statements is not None and not cell else None
        # a text the caller parsed into statements has no syntax error: no parse needed
        self._error = None if self._statements is not None else _error_line(text, cell)

    def past_error(self, edits: Sequence[_Placed]) -> bool:
        return self._error is not None and any(e.end_line >= self._error for e in edits)

    def keeps_parse(self, edits: Sequence[_Placed]) -> bool:
        if not edits:
            return True
        if self._statements is not None and self._statements_parse(edits):
            return True
        after = _splice(self._text, edits)
        error = _error_line(after, self._cell)
        if self._error is None or error is None:
            return error is None and self._error is None
        # the error the text had, at the same place from its end: the fixes broke nothing
        return len(_offsets(after)) - error == len(self._line_starts) - self._error

    def _statements_parse(self, edits: Sequence[_Placed]) -> bool:
        """Whether the top-level statements the edits touch parse alone once edited. The
        statements around them parse alone too and are unchanged, so the text then parses."""
        assert self._statements is not None
        first = min(e.line for e in edits)
        last = max(e.end_line for e in edits)
        start = max((s for s in self._statements if s <= first), default=0)
        stop = min((s for s in self._statements if s > last), default=len(self._line_starts))
        begin = self._line_starts[start]
        end = self._line_starts[stop] if stop < len(self._line_starts) else len(self._text)
        if any(e.begin < begin or e.end > end for e in edits):
            return False
        shifted = [
            _Placed(e.begin - begin, e.end - begin, e.new_text, e.line, e.end_line) for e in edits
        ]
        window = _splice(self._text[begin:end], shifted)
        # glued to the next statement's first line, it would not be the same text
        ends_a_line = end == len(self._text) or not window or window.endswith(("\n", "\r"))
        return ends_a_line and _error_line(window, cell=False) is None


def _error_line(text: str, cell: bool) -> int | None:
    """The 0-based line of the first syntax error of ``text``; None when it parses."""
    if cell:
        from gpulens.analysis.notebook import python_view

        text = python_view(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in the user's strings
            ast.parse(text)
    except SyntaxError as error:
        return max((error.lineno or 1) - 1, 0)
    except (ValueError, RecursionError, MemoryError):  # a NUL byte, a 20,000-term sum
        return 0
    return None
