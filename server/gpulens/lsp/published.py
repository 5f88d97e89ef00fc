"""`textDocument/publishDiagnostics` params as JSON text, each diagnostic written once.

A keystroke changes the findings of one function; the others come back as the very same
`Finding` objects (the analysis replays a function's findings only where the function's
text and place are unchanged, so their positions in the client's units are too). Each
finding's diagnostic is converted and serialized once and its JSON text reused: a 2 MB file
has ~10,000 findings, which lsprotocol's converter took seconds to serialize per keystroke.
The JSON is what `convert.finding_to_diagnostic` serialized by lsprotocol gives.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gpulens.lsp.convert import SOURCE, LineIndex, severity_to_lsp

if TYPE_CHECKING:
    from pygls.workspace.position_codec import PositionCodec

    from gpulens.analysis.model import Finding


def diagnostic_json(finding: Finding, index: LineIndex) -> str:
    """The JSON of ``finding``'s diagnostic (`convert.finding_to_diagnostic`)."""
    start = index.to_client(finding.span.line, finding.span.column)
    end = index.to_client(finding.span.end_line, finding.span.end_column)
    return json.dumps(
        {
            "range": {
                "start": {"line": start.line, "character": start.character},
                "end": {"line": end.line, "character": end.character},
            },
            "message": finding.message,
            "severity": severity_to_lsp(finding.severity).value,
            "code": finding.code,
            "source": SOURCE,
            # lets a client tell fixable findings apart without asking for code actions
            "data": {"fixable": any(fix.safe for fix in finding.fixes)},
        }
    )


class PublishedDiagnostics:
    """The diagnostics of one document or notebook, kept from one publication to the next."""

    def __init__(self) -> None:
        # id(finding) -> (the finding, kept alive so that its id is not reused; its JSON)
        self._written: dict[int, tuple[Finding, str]] = {}
        self._kept: dict[int, tuple[Finding, str]] = {}
        self._codec: PositionCodec | None = None

    def params_json(
        self,
        uri: str,
        version: int | None,
        text: str,
        findings: Sequence[Finding],
        codec: PositionCodec,
    ) -> str:
        """The params of the publication of ``findings`` for ``text`` as JSON text."""
        if codec is not self._codec:  # another position encoding: nothing written holds
            self._written, self._codec = {}, codec
        written, kept = self._written, self._kept
        index: LineIndex | None = None
        parts = []
        for finding in findings:
            entry = written.get(id(finding))
            if entry is None or entry[0] is not finding:
                if index is None:  # only for findings not written before
                    index = LineIndex(text, codec)
                entry = (finding, diagnostic_json(finding, index))
            kept[id(finding)] = entry
            parts.append(entry[1])
        # (a version of None is left out, as lsprotocol leaves out what is unset)
        head = json.dumps({"uri": uri} if version is None else {"uri": uri, "version": version})
        head = head[:-1]
        return f'{head}, "diagnostics": [{", ".join(parts)}]}}'

    def forget_unpublished(self) -> None:
        """Keep only what the last publication (of every text of the target) wrote."""
        self._written, self._kept = self._kept, {}
