r'''Notebook cells that start with a cell magic, as JupyterLab-LSP sends them.

JupyterLab-LSP hands a notebook to a language server as one Python text, and a cell that
starts with `%%gpulens` (or `%%timeit`, ...) becomes a call with the cell's body in a string:

    get_ipython().run_cell_magic("gpulens", "", """for x in loader:
        total += model(x).sum().item()""")

(a `"""` in the body escaped as `\"\"\"`). For magics whose body is Python, the body is
analysed as the code it is, in the program around it, and each finding and fix is mapped back
onto the text the client sent: a finding lands on the characters it names inside the string,
and a fix edits them there.
'''

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpulens.analysis.model import Edit, Finding, Fix, Span
from gpulens.analysis.notebook import _PYTHON_CELL_MAGICS, python_view
from gpulens.analysis.source import split_lines

if TYPE_CHECKING:
    from gpulens.analysis.config import Config
    from gpulens.analysis.engine import Analysis
    from gpulens.analysis.incremental import DocumentAnalyzer

# JupyterLab-LSP's own wrapping (its IPython "overrides"): the magic's name, its line with
# `"` and `\` escaped, then the body in a triple-quoted string, always at a cell's start
_CALL = re.compile(
    r'^get_ipython\(\)\.run_cell_magic\("(?P<name>[^"\n]*)", "(?:[^"\\\n]|\\.)*", """', re.M
)
_CLOSE = re.compile(r'"""\)')
_ESCAPED = '\\"\\"\\"'
_QUOTES = '"""'


@dataclass(frozen=True, slots=True)
class _Body:
    """One wrapped body: its lines are the same lines in the program and in the text."""

    first_line: int  # the call's line
    prefix: int  # columns of the call before the body, on its first line
    last_line: int  # the line of the closing quotes
    end_column: int  # where the body ends on its last line, in the text
    escapes: tuple[tuple[int, ...], ...]  # per line: program columns of an escaped `"""`

    def holds(self, line: int) -> bool:
        return self.first_line <= line <= self.last_line

    def to_text(self, line: int, column: int) -> tuple[int, int]:
        """A program position inside the body, in the text's coordinates."""
        shift = self.prefix if line == self.first_line else 0
        for quotes in self.escapes[line - self.first_line]:
            if column <= quotes:
                break
            # inside the three quotes is their start; past them, three more characters
            shift += 3 if column >= quotes + 3 else quotes - column
        position = (line, column + shift)
        return min(position, (self.last_line, self.end_column))


@dataclass(frozen=True, slots=True)
class WrappedMagics:
    """A text with wrapped cell magics, and the program it is analysed as: the same lines,
    each body in place of its call."""

    program: str
    bodies: tuple[_Body, ...]

    @classmethod
    def of(cls, text: str) -> WrappedMagics | None:
        """None when the text holds no wrapped magic whose body is Python."""
        if "run_cell_magic" not in text:
            return None
        pieces: list[str] = []
        bodies: list[_Body] = []
        cursor = 0
        line_starts = _line_starts(text)
        for call in _CALL.finditer(text):
            if call.start() < cursor or call.group("name") not in _PYTHON_CELL_MAGICS:
                continue
            close = _CLOSE.search(text, call.end())
            if close is None:
                continue
            raw = text[call.end() : close.start()]
            view = python_view(raw.replace(_ESCAPED, _QUOTES))
            first = _line_of(line_starts, call.start())
            last = _line_of(line_starts, close.start())
            # what follows the closing quotes on their line is left out of the program
            line_end = text.find("\n", close.end())
            rest = len(text) if line_end < 0 else line_end
            pieces += [text[cursor : call.start()], view]
            cursor = rest
            bodies.append(
                _Body(
                    first_line=first,
                    prefix=call.end() - call.start(),
                    last_line=last,
                    end_column=close.start() - line_starts[last],
                    escapes=tuple(_escapes(line) for line in raw.split("\n")),
                )
            )
        if not bodies:
            return None
        pieces.append(text[cursor:])
        return cls("".join(pieces), tuple(bodies))

    def body_at(self, line: int) -> _Body | None:
        return next((body for body in self.bodies if body.holds(line)), None)

    def to_text(self, line: int, column: int) -> tuple[int, int]:
        body = self.body_at(line)
        return (line, column) if body is None else body.to_text(line, column)

    def span_to_text(self, span: Span) -> Span | None:
        """The span in the text; None when it reaches from a body out of it."""
        if self.body_at(span.line) != self.body_at(span.end_line):
            return None
        line, column = self.to_text(span.line, span.column)
        end_line, end_column = self.to_text(span.end_line, span.end_column)
        return Span(line, column, end_line, end_column)

    def edit_to_text(self, edit: Edit, home: _Body | None) -> Edit | None:
        """The edit in the text; None when it cannot be made there. ``home``: the body of
        the finding the edit fixes, if any."""
        span = edit.span
        after_body = home is not None and span == Span.point(home.last_line + 1, 0)
        if home is not None and after_body and edit.new_text.endswith("\n"):
            # a line added after the body's last statement: still the body's, not the code
            # after the cell, so it goes before the closing quotes
            end = Span.point(home.last_line, home.end_column)
            return Edit(end, _escape("\n" + edit.new_text[:-1]))
        mapped = self.span_to_text(span)
        if mapped is None:
            return None
        inside = self.body_at(span.line) is not None
        return Edit(mapped, _escape(edit.new_text) if inside else edit.new_text)

    def finding_to_text(self, finding: Finding) -> Finding | None:
        span = self.span_to_text(finding.span)
        if span is None:
            return None
        home = self.body_at(finding.span.line)
        fixes = []
        for fix in finding.fixes:
            edits = [self.edit_to_text(edit, home) for edit in fix.edits]
            if all(edit is not None for edit in edits):
                fixes.append(Fix(fix.title, tuple(e for e in edits if e is not None), fix.safe))
        return replace(finding, span=span, fixes=tuple(fixes))

    def analysis_to_text(self, analysis: Analysis) -> Analysis:
        findings = [f for f in map(self.finding_to_text, analysis.findings) if f is not None]
        problem = analysis.syntax_problem
        if problem is not None:
            line, column = self.to_text(problem.line, problem.column)
            problem = replace(problem, line=line, column=column)
        return replace(analysis, findings=findings, syntax_problem=problem)


def analyze_text(text: str, config: Config, analyzer: DocumentAnalyzer) -> Analysis:
    """`analyzer.analyze`, with the bodies of wrapped cell magics analysed as code."""
    wrapped = WrappedMagics.of(text)
    if wrapped is None:
        return analyzer.analyze(text, config)
    return wrapped.analysis_to_text(analyzer.analyze(wrapped.program, config))


def _escapes(line: str) -> tuple[int, ...]:
    """Program columns where an escaped `\\"\\"\\"` of this body line stands as `\"\"\"`."""
    found: list[int] = []
    start = line.find(_ESCAPED)
    while start >= 0:
        found.append(start - 3 * len(found))
        start = line.find(_ESCAPED, start + len(_ESCAPED))
    return tuple(found)


def _escape(text: str) -> str:
    return text.replace(_QUOTES, _ESCAPED)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for line in split_lines(text):
        starts.append(starts[-1] + len(line))
    return starts


def _line_of(line_starts: list[int], offset: int) -> int:
    low, high = 0, len(line_starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if line_starts[middle] <= offset:
            low = middle
        else:
            high = middle - 1
    return low
