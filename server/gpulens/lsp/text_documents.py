"""The server's copy of each open document, with lines split as LSP splits them.

pygls' `TextDocument` splits with `str.splitlines`, which also breaks at form feeds, `\\v`,
`\\x1c`-`\\x1e`, `\\x85`, U+2028 and U+2029. LSP breaks lines only at `\\n`, `\\r\\n` and `\\r`:
past the first of the others, every incremental change landed on another line than the editor
meant, and the server's text (and the fixes computed on it) drifted from the editor's.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

from gpulens.analysis.source import split_lines
from gpulens.lsp.convert import offset_at


class LspTextDocument(TextDocument):
    """A pygls TextDocument whose lines and incremental changes follow LSP's line breaks."""

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(split_lines(self.source))

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        # Positions past a line's end or past the last line are clamped as the spec and
        # VS Code's own TextDocument clamp them, never dropped or moved to the next line.
        source = self.source
        start = offset_at(source, change.range.start, self.position_codec)
        end = offset_at(source, change.range.end, self.position_codec)
        if end < start:
            start, end = end, start
        self._source = source[:start] + change.text + source[end:]


class LspWorkspace(Workspace):
    """pygls' Workspace, holding LspTextDocuments (notebook cells included)."""

    @classmethod
    def replacing(cls, workspace: Workspace) -> LspWorkspace:
        """The same workspace (root, folders, sync kind, position encoding), still empty."""
        return cls(
            workspace.root_uri,
            workspace._sync_kind,
            list(workspace.folders.values()),
            workspace.position_encoding,
        )

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LspTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self.position_codec,
        )
