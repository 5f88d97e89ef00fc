"""What gets analysed together: a text document alone, or a notebook's code cells as one program.

A Snapshot is an immutable copy taken on the event loop; worker threads analyse snapshots
and never touch the workspace, which only the event loop changes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from gpulens.analysis import Analysis, Config
    from gpulens.analysis.incremental import DocumentAnalyzer
    from gpulens.lsp.server import GpulensServer
    from gpulens.profiler.probe_memo import ParsedText

# Above this many characters a document is not analysed (one info log says so): parsing a
# multi-megabyte generated file would hold a worker for seconds for no useful finding.
MAX_ANALYSED_CHARS = 2_000_000


@dataclass(frozen=True, slots=True)
class Snapshot:
    target: str  # the text document's URI, or the notebook's
    versions: tuple[int | None, ...]  # the notebook's then each cell's; changes with any text
    uris: tuple[str, ...]  # the analysed texts: the document, or the notebook's code cells
    texts: tuple[str, ...]
    config: Config
    is_notebook: bool

    def with_texts(self, texts: list[str]) -> Snapshot:
        return replace(self, texts=tuple(texts))

    def index_of(self, uri: str) -> int | None:
        wanted = unquote(uri)
        for index, candidate in enumerate(self.uris):
            if unquote(candidate) == wanted:
                return index
        return None

    def version_of(self, uri: str) -> int | None:
        index = self.index_of(uri)
        if index is None:
            return None
        return self.versions[index + 1] if self.is_notebook else self.versions[0]

    @property
    def size(self) -> int:
        return sum(len(text) for text in self.texts)

    def same_input(self, other: Snapshot) -> bool:
        return (
            self.versions == other.versions
            and self.uris == other.uris
            and self.config == other.config
        )


def analyse(snapshot: Snapshot, analyzer: DocumentAnalyzer) -> list[Analysis] | None:
    """One Analysis per text of ``snapshot``; None when it is too large to analyse.

    Runs in a worker thread; ``analyzer`` reuses what the document's earlier versions
    computed, and gives what a fresh analysis would. A text document is analysed with the
    bodies of the cell magics JupyterLab-LSP wraps in strings as code (`wrapped_magics`).
    """
    from gpulens.analysis import analyze_cells
    from gpulens.analysis.wrapped_magics import analyze_text

    if snapshot.size > MAX_ANALYSED_CHARS:
        return None
    if snapshot.is_notebook:
        return analyze_cells(list(snapshot.texts), snapshot.config, analyzer)
    return [analyze_text(snapshot.texts[0], snapshot.config, analyzer)]


def statement_starts(snapshot: Snapshot, analyzer: DocumentAnalyzer) -> tuple[int, ...] | None:
    """Where the top-level statements of a text document start, as its analysis found them
    (None for a notebook, or a text that did not parse): fixes are then checked by parsing
    only the statements they touch."""
    if snapshot.is_notebook:
        return None
    return analyzer.blocks.statement_starts(snapshot.texts[0])


def text_lines(snapshot: Snapshot, analyzer: DocumentAnalyzer) -> list[str] | None:
    """A text document's lines as its analysis split them (None for a notebook): the
    publication converts positions on them instead of splitting the text again. Only
    while no analysis of the document runs."""
    return None if snapshot.is_notebook else analyzer.blocks.lines_of(snapshot.texts[0])


def parsed_text(snapshot: Snapshot, analyzer: DocumentAnalyzer) -> ParsedText | None:
    """A text document's text as its analysis parsed it (`probe_memo.parsed_text`); None
    for a notebook. Only while no analysis of the document runs."""
    from gpulens.profiler.probe_memo import parsed_text

    return None if snapshot.is_notebook else parsed_text(snapshot.texts[0], analyzer)


def open_document(ls: GpulensServer, uri: str) -> TextDocument | None:
    """The open text document at ``uri``; None for a closed one (never read from disk)."""
    return ls.workspace.text_documents.get(unquote(uri))


def notebook_of(ls: GpulensServer, uri: str) -> types.NotebookDocument | None:
    """The notebook whose URI is ``uri``, or that holds the cell ``uri``."""
    workspace = ls.workspace
    return workspace.get_notebook_document(notebook_uri=uri) or workspace.get_notebook_document(
        cell_uri=uri
    )


def target_of(ls: GpulensServer, uri: str) -> str | None:
    """The URI whose snapshot covers ``uri``: its notebook's for a cell, else its own."""
    notebook = notebook_of(ls, uri)
    if notebook is not None:
        return notebook.uri
    return uri if open_document(ls, uri) is not None else None


def open_targets(ls: GpulensServer) -> list[str]:
    cells = {
        unquote(cell.document)
        for notebook in ls.workspace.notebook_documents.values()
        for cell in notebook.cells
    }
    documents = [doc.uri for key, doc in ls.workspace.text_documents.items() if key not in cells]
    notebooks = [notebook.uri for notebook in ls.workspace.notebook_documents.values()]
    return documents + notebooks


def code_cells(ls: GpulensServer, notebook: types.NotebookDocument) -> list[TextDocument]:
    """The notebook's Python code cells, in order (markdown and other languages left out)."""
    cells = []
    for cell in notebook.cells:
        if cell.kind != types.NotebookCellKind.Code:
            continue
        document = open_document(ls, cell.document)
        if document is not None and document.language_id in (None, "", "python"):
            cells.append(document)
    return cells


def snapshot_of(ls: GpulensServer, uri: str) -> Snapshot | None:
    """A snapshot of what ``uri`` (a document, a cell or a notebook) is analysed with."""
    notebook = notebook_of(ls, uri)
    if notebook is not None:
        cells = code_cells(ls, notebook)
        return Snapshot(
            target=notebook.uri,
            versions=(notebook.version, *(cell.version for cell in cells)),
            uris=tuple(cell.uri for cell in cells),
            texts=tuple(cell.source for cell in cells),
            config=ls.settings.config_for(notebook.uri),
            is_notebook=True,
        )
    document = open_document(ls, uri)
    if document is None:
        return None
    return Snapshot(
        target=document.uri,
        versions=(document.version,),
        uris=(document.uri,),
        texts=(document.source,),
        config=ls.settings.config_for(document.uri),
        is_notebook=False,
    )
