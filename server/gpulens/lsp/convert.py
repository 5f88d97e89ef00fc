"""lsprotocol <-> analysis.model: positions, severities, diagnostics and edits.

The analysis counts columns in code points; the client counts them in its negotiated
position encoding (UTF-16 unless it asked otherwise). Lines are split the way LSP splits
them (``\\n``, ``\\r\\n``, ``\\r``), not the way ``str.splitlines`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from gpulens.analysis.model import Edit, Finding, Severity, Span
from gpulens.analysis.source import split_lines

if TYPE_CHECKING:
    # the profile's merge loads with the first profile, not with the server
    from gpulens.profiler.measured import Merged

SOURCE = "gpulens"
# the source of a diagnostic that a profile found where the analysis was silent
MEASURED_SOURCE = "gpulens (measured)"
SOURCES = frozenset({SOURCE, MEASURED_SOURCE})

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


def severity_to_lsp(severity: Severity) -> types.DiagnosticSeverity:
    return _SEVERITY[severity]


class LineIndex:
    """The lines of one text, for converting columns between code points and client units."""

    __slots__ = ("_codec", "lines")

    def __init__(self, text: str, codec: PositionCodec, lines: Sequence[str] | None = None) -> None:
        """``lines``: ``split_lines(text)`` where the caller has them (a 2 MB text's split
        costs 20 ms: its analysis split it already)."""
        # Python's tokenizer and LSP break lines at the same three endings: one split serves
        self.lines: list[str] = (split_lines(text) if lines is None else list(lines)) or [""]
        if text.endswith(("\n", "\r")):
            self.lines.append("")
        self._codec = codec

    def _line(self, line: int) -> str:
        return self.lines[line].rstrip("\r\n") if 0 <= line < len(self.lines) else ""

    def to_client(self, line: int, column: int) -> types.Position:
        """A code-point position of the analysis as a client position, clamped to the text."""
        line, character = self.client_position(line, column)
        return types.Position(line=line, character=character)

    def client_position(self, line: int, column: int) -> tuple[int, int]:
        """`to_client` as (line, character), without building a `Position`."""
        if line >= len(self.lines):
            last = len(self.lines) - 1
            return last, self._units(self._line(last))
        line = max(line, 0)
        text = self._line(line)
        column = max(0, min(column, len(text)))
        if text.isascii():
            return line, column
        return line, self._units(text[:column])

    def from_client(self, position: types.Position) -> tuple[int, int]:
        """A client position as (line, code-point column), clamped to the text."""
        if position.line >= len(self.lines):
            last = len(self.lines) - 1
            return last, len(self._line(last))
        return position.line, _column(self._line(position.line), position.character, self._codec)

    def _units(self, text: str) -> int:
        return len(text) if text.isascii() else self._codec.client_num_units(text)

    def span_to_range(self, span: Span) -> types.Range:
        return types.Range(
            start=self.to_client(span.line, span.column),
            end=self.to_client(span.end_line, span.end_column),
        )

    def range_to_span(self, lsp_range: types.Range) -> Span:
        line, column = self.from_client(lsp_range.start)
        end_line, end_column = self.from_client(lsp_range.end)
        if (end_line, end_column) < (line, column):
            line, column, end_line, end_column = end_line, end_column, line, column
        return Span(line, column, end_line, end_column)

    def end(self) -> types.Position:
        return self.to_client(len(self.lines) - 1, len(self._line(len(self.lines) - 1)))

    def off_the_end(self, edit: Edit) -> Edit:
        """``edit``, or the same change made before the text's final line break when it
        would add whole lines after it. Editors that hold a text as lines with an implied
        final break (Neovim) append such an edit as lines, and its own final break as one
        more: an empty line the user never asked for. Same text, in any editor."""
        last = len(self.lines) - 1
        span = edit.span
        if last == 0 or self.lines[last] or span.line < last:
            return edit  # no final line break, or the edit starts before it
        ending = self.lines[last - 1][len(self._line(last - 1)) :]
        if not edit.new_text.endswith(ending):
            return edit
        before = Span.point(last - 1, len(self._line(last - 1)))
        return Edit(before, ending + edit.new_text[: -len(ending)])


def _column(line: str, character: int, codec: PositionCodec) -> int:
    """The code-point column of ``character`` client units into ``line`` (no line break),
    clamped to its end."""
    if line.isascii():
        return min(character, len(line))
    units = 0
    for index, char in enumerate(line):
        if units >= character:
            return index
        units += codec.impl.code_units_for_char(char)
    return len(line)


def offset_at(text: str, position: types.Position, codec: PositionCodec) -> int:
    """The string offset of a client position in ``text``, clamped as LSP clamps it: past a
    line's end is its end (before the line break), past the last line is the end of the text.

    Called twice per keystroke on the whole document, so it splits only as far as it must.
    """
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        # lone carriage returns (old Mac files) end lines too: the general, slower way
        index = LineIndex(text, codec)
        line, column = index.from_client(position)
        return sum(len(x) for x in index.lines[:line]) + column
    start = 0
    if position.line:
        pieces = text.split("\n", position.line)
        if len(pieces) <= position.line:  # past the last line
            return len(text)
        start = len(text) - len(pieces[-1])
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    if end > start and text[end - 1] == "\r":
        end -= 1
    return start + _column(text[start:end], position.character, codec)


def finding_to_diagnostic(finding: Finding, index: LineIndex) -> types.Diagnostic:
    return types.Diagnostic(
        range=index.span_to_range(finding.span),
        message=finding.message,
        severity=severity_to_lsp(finding.severity),
        code=finding.code,
        source=SOURCE,
        # lets a client tell fixable findings apart without asking for code actions
        data={"fixable": any(fix.safe for fix in finding.fixes)},
    )


def merged_to_diagnostic(merged: Merged, index: LineIndex) -> types.Diagnostic:
    """A finding as shown with a profile merged in: one the profile found says so in its
    source, and in its data (`"origin": "profile"`)."""
    diagnostic = finding_to_diagnostic(merged.finding, index)
    if merged.from_profile:
        diagnostic.source = MEASURED_SOURCE
        diagnostic.data = {**(diagnostic.data or {}), "origin": merged.origin}
    return diagnostic


def edits_to_text_edits(edits: Iterable[Edit], index: LineIndex) -> list[types.TextEdit]:
    return [
        types.TextEdit(range=index.span_to_range(edit.span), new_text=edit.new_text)
        for edit in map(index.off_the_end, edits)
    ]


def workspace_edit(
    uri: str,
    version: int | None,
    text_edits: Sequence[types.TextEdit],
    versioned: bool,
) -> types.WorkspaceEdit:
    """One document's edits; versioned (documentChanges) when the client supports it, so a
    client can refuse an edit computed for an older text."""
    if versioned:
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=version
                    ),
                    edits=list(text_edits),
                )
            ]
        )
    return types.WorkspaceEdit(changes={uri: list(text_edits)})


def minimal_replacement(before: str, after: str) -> Edit:
    """The smallest single edit that turns ``before`` into ``after`` (code-point columns)."""
    limit = min(len(before), len(after))
    prefix = 0
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < limit - prefix
        and before[len(before) - 1 - suffix] == after[len(after) - 1 - suffix]
    ):
        suffix += 1
    # never split a "\r\n" pair: LSP positions cannot point between its two characters
    while prefix > 0 and before[prefix - 1] == "\r" and before[prefix : prefix + 1] == "\n":
        prefix -= 1
    while (
        suffix > 0
        and before[len(before) - suffix] == "\n"
        and before[len(before) - suffix - 1 : len(before) - suffix] == "\r"
    ):
        suffix -= 1
    start = _offset_to_position(before, prefix)
    end = _offset_to_position(before, len(before) - suffix)
    return Edit(Span(start[0], start[1], end[0], end[1]), after[prefix : len(after) - suffix])


def _offset_to_position(text: str, offset: int) -> tuple[int, int]:
    """(line, code-point column) of a string offset, lines split the LSP way."""
    head = text[:offset]
    line_start = max(head.rfind("\n"), head.rfind("\r")) + 1
    line = head.count("\n") + head.count("\r") - head.count("\r\n")
    return line, offset - line_start
