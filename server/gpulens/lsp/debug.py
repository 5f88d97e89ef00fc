"""Requests for checking the server from outside, off unless ``GPULENS_DEBUG_REQUESTS=1``.

`gpulens/_debug/documentText {uri}` answers the server's copy of an open document (null for
one that is not open): the test suite compares it with the client's after every edit.
`gpulens/_debug/probeCounts` answers what the probes of profiles' merges have cost the
process (`analysis.assumed.counts`: whole texts parsed, lines analysed again). They read
nothing from disk and run nothing, and no editor sends them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from gpulens.lsp.documents import open_document
from gpulens.lsp.settings import plain

if TYPE_CHECKING:
    from gpulens.lsp.server import GpulensServer

ENV = "GPULENS_DEBUG_REQUESTS"
DOCUMENT_TEXT = "gpulens/_debug/documentText"
PROBE_COUNTS = "gpulens/_debug/probeCounts"


def register(server: GpulensServer) -> None:
    if os.environ.get(ENV) != "1":
        return

    @server.feature(DOCUMENT_TEXT)
    def document_text(ls: Any, params: Any) -> str | None:
        arguments = plain(params)
        uri = arguments.get("uri") if isinstance(arguments, dict) else None
        document = open_document(ls, uri) if isinstance(uri, str) else None
        return None if document is None else document.source

    @server.feature(PROBE_COUNTS)
    def probe_counts(ls: Any, params: Any) -> dict[str, int]:
        from gpulens.analysis.assumed import counts

        return dict(counts)
