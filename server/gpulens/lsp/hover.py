"""Hover on a finding: the rule's documentation (what happens on the GPU, bad and good code),
then a profiled line's costs; Markdown, or plain text for clients that prefer it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from gpulens.analysis import Finding, Span
from gpulens.lsp import profiling
from gpulens.lsp.convert import LineIndex
from gpulens.lsp.markup import markup, preferred_kind

if TYPE_CHECKING:
    from gpulens.lsp.server import GpulensServer

logger = logging.getLogger(__name__)


def rule_doc(code: str) -> str | None:
    """The rule's Markdown doc, or None for a code the catalogue does not (yet) hold."""
    try:
        # imported on first hover: registering every rule costs time the server's start
        # does not need to spend
        from gpulens.analysis.rules import RULES
    except Exception:
        logger.exception("the rule catalogue failed to import")
        return None
    rule = RULES.get(code)
    return None if rule is None else rule.doc


def hover_text(findings: Sequence[Finding]) -> str:
    """Markdown for the findings under the cursor: each one's message, then its rule's doc."""
    parts: list[str] = []
    seen: set[str] = set()
    for finding in findings:
        part = f"**{finding.code}** {finding.message}"
        doc = None if finding.code in seen else rule_doc(finding.code)
        seen.add(finding.code)
        parts.append(part if doc is None else f"{part}\n\n{doc}")
    return "\n\n---\n\n".join(parts)


def _markup_kind(ls: GpulensServer) -> types.MarkupKind:
    document = ls.client_capabilities.text_document
    hover = None if document is None else document.hover
    return preferred_kind(None if hover is None else hover.content_format)


def register(server: GpulensServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: GpulensServer, params: types.HoverParams) -> types.Hover | None:
        # pygls takes one handler per method: a profiled line's costs join the findings here
        found = await findings_hover(ls, params)
        details = profiling.profile_details(ls, params.text_document.uri, params.position.line)
        parts = [text for text in (found and found[0], details) if text]
        if not parts:
            return None
        contents = markup("\n\n---\n\n".join(parts), _markup_kind(ls))
        return types.Hover(contents=contents, range=found[1] if found else None)

    async def findings_hover(
        ls: GpulensServer, params: types.HoverParams
    ) -> tuple[str, types.Range] | None:
        """The findings under the cursor, as Markdown, and the range of the first."""
        uri = params.text_document.uri
        result = await ls.diagnostics.current(uri)
        found = None if result is None else result.analysis_of(uri)
        position = None if result is None else result.snapshot.index_of(uri)
        if result is None or found is None or position is None:
            return None
        shown = (await ls.diagnostics.shown(result))[position]  # with a profile's figures
        index = LineIndex(found[0], ls.workspace.position_codec)
        line, column = index.from_client(params.position)
        point = Span.point(line, column)
        here = [m.finding for m in shown if m.finding.span.contains(point)]
        if not here:
            return None
        return hover_text(here), index.span_to_range(here[0].span)
