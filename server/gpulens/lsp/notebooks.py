"""Notebook documents (LSP 3.17): the code cells of a notebook are analysed as one program,
so a tensor made on the GPU in cell 1 is known in cell 3; diagnostics go to each cell's URI.

pygls keeps the notebook and its cell documents in the workspace; these handlers only say
which notebook to analyse again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from gpulens.lsp.server import GpulensServer

NOTEBOOK_TYPE = "jupyter-notebook"

SYNC_OPTIONS = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            notebook=types.NotebookDocumentFilterNotebookType(notebook_type=NOTEBOOK_TYPE),
            cells=[types.NotebookCellLanguage(language="python")],
        )
    ]
)


def register(server: GpulensServer) -> None:
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(ls: GpulensServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.diagnostics.schedule(params.notebook_document.uri, delay_s=0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(ls: GpulensServer, params: types.DidChangeNotebookDocumentParams) -> None:
        cells = params.change.cells
        for closed in (cells.structure.did_close or []) if cells and cells.structure else []:
            ls.diagnostics.clear(closed.uri)
        ls.diagnostics.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(ls: GpulensServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.diagnostics.forget(
            params.notebook_document.uri, [cell.uri for cell in params.cell_text_documents]
        )
