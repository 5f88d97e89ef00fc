"""`textDocument/publishDiagnostics` params as JSON text, each diagnostic written once.

A keystroke changes the findings of one function; the others come back as the very same
`Finding` objects (the analysis replays a function's findings only where the function's
text and place are unchanged, so their positions in the client's units are too). Each
finding's diagnostic is converted and serialized once and its JSON text reused: a 2 MB file
has ~10,000 findings, which lsprotocol's converter took seconds to serialize per keystroke.
The JSON is what `convert.finding_to_diagnostic` (`convert.merged_to_diagnostic` for a
finding shown with a profile merged in) serialized by lsprotocol gives.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpulens.analysis.model import Finding, Severity
from gpulens.lsp.convert import MEASURED_SOURCE, SOURCE, LineIndex, severity_to_lsp

if TYPE_CHECKING:
    from pygls.workspace.position_codec import PositionCodec

    from gpulens.profiler.measured import Merged

# a string as `json.dumps` writes it (ASCII, escaped)
_string = json.encoder.encode_basestring_ascii
_SOURCE, _MEASURED_SOURCE = _string(SOURCE), _string(MEASURED_SOURCE)
_SEVERITY = {severity: severity_to_lsp(severity).value for severity in Severity}


def diagnostic_json(finding: Finding, index: LineIndex, origin: str | None = None) -> str:
    """The JSON of ``finding``'s diagnostic (`convert.finding_to_diagnostic`); of one a
    profile found (``origin``: the `Merged` origin that says so),
    `convert.merged_to_diagnostic`'s.

    Written as `json.dumps` writes the dict (its separators, its escaping of strings), in a
    third of its time: a first publication writes every finding of the file."""
    span = finding.span
    line, character = index.client_position(span.line, span.column)
    end_line, end_character = index.client_position(span.end_line, span.end_column)
    # lets a client tell fixable findings apart without asking for code actions
    fixable = "true" if any(fix.safe for fix in finding.fixes) else "false"
    if origin is None:
        source, data = _SOURCE, f'{{"fixable": {fixable}}}'
    else:
        source, data = _MEASURED_SOURCE, f'{{"fixable": {fixable}, "origin": {_string(origin)}}}'
    return (
        f'{{"range": {{"start": {{"line": {line}, "character": {character}}}, '
        f'"end": {{"line": {end_line}, "character": {end_character}}}}}, '
        f'"message": {_string(finding.message)}, '
        f'"severity": {_SEVERITY[finding.severity]}, "code": {_string(finding.code)}, '
        f'"source": {source}, "data": {data}}}'
    )


class PublishedDiagnostics:
    """The diagnostics of one document or notebook, kept from one publication to the next."""

    def __init__(self) -> None:
        # id(finding) -> (the finding, kept alive so that its id is not reused; the origin
        # of one a profile found, else None; its JSON)
        self._written: dict[int, tuple[Finding, str | None, str]] = {}
        self._kept: dict[int, tuple[Finding, str | None, str]] = {}
        self._codec: PositionCodec | None = None

    def params_json(
        self,
        uri: str,
        version: int | None,
        text: str,
        shown: Sequence[Finding | Merged],
        codec: PositionCodec,
        *,
        lines: Sequence[str] | None = None,
    ) -> str:
        """The params of the publication of ``shown`` for ``text`` as JSON text: findings as
        the analysis found them, or as shown with a profile merged in. ``lines``:
        ``split_lines(text)`` where the caller has them."""
        if codec is not self._codec:  # another position encoding: nothing written holds
            self._written, self._codec = {}, codec
        written, kept = self._written, self._kept
        index: LineIndex | None = None
        parts = []
        for item in shown:
            origin: str | None = None
            if isinstance(item, Finding):
                finding = item
            else:
                finding = item.finding
                origin = item.origin if item.from_profile else None
            entry = written.get(id(finding))
            if entry is None or entry[0] is not finding or entry[1] != origin:
                if index is None:  # only for findings not written before
                    index = LineIndex(text, codec, lines)
                entry = (finding, origin, diagnostic_json(finding, index, origin))
            kept[id(finding)] = entry
            parts.append(entry[2])
        # (a version of None is left out, as lsprotocol leaves out what is unset)
        head = json.dumps({"uri": uri} if version is None else {"uri": uri, "version": version})
        head = head[:-1]
        return f'{head}, "diagnostics": [{", ".join(parts)}]}}'

    def forget_unpublished(self) -> None:
        """Keep only what the last publication (of every text of the target) wrote."""
        self._written, self._kept = self._kept, {}
