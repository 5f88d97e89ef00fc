"""Notebook documents (LSP 3.17 notebook sync): cells analysed as one program."""

from __future__ import annotations

import itertools

import pytest
from lsp_helpers import (
    RecordingClient,
    apply_text_edits,
    code_actions,
    codes,
    edits_for,
    text_in,
    wait_for_published,
)
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

_names = itertools.count()

CELL_1 = 'import torch\nx = torch.randn(10, device="cuda")\n'
CELL_2 = "total = 0.0\nfor i in range(100):\n    total += (x * i).sum().item()\n"
NOTES = "# Training\nThe loop below syncs on `.item()`."


class Notebook:
    """A notebook as the client holds it: cell URIs, texts and versions."""

    def __init__(self, client: RecordingClient, cells: list[tuple[str, str]]) -> None:
        self.client = client
        self.uri = f"file:///gpulens-tests/notebooks/nb{next(_names)}.ipynb"
        self.version = 1
        self.cells = [
            (f"vscode-notebook-cell:{self.uri[len('file://') :]}#W{i}sZmlsZQ", kind, text)
            for i, (kind, text) in enumerate(cells)
        ]

    def cell_uri(self, index: int) -> str:
        return self.cells[index][0]

    def open(self) -> None:
        self.client.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=self.uri,
                    notebook_type="jupyter-notebook",
                    version=self.version,
                    cells=[
                        types.NotebookCell(kind=_kind(kind), document=uri)
                        for uri, kind, _ in self.cells
                    ],
                ),
                cell_text_documents=[
                    types.TextDocumentItem(
                        uri=uri,
                        language_id="python" if kind == "code" else "markdown",
                        version=1,
                        text=text,
                    )
                    for uri, kind, text in self.cells
                ],
            )
        )

    def replace_cell_text(self, index: int, text: str, cell_version: int) -> None:
        uri, kind, old = self.cells[index]
        lines = old.split("\n")
        self.version += 1
        self.cells[index] = (uri, kind, text)
        self.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(
                    uri=self.uri, version=self.version
                ),
                change=types.NotebookDocumentChangeEvent(
                    cells=types.NotebookDocumentCellChanges(
                        text_content=[
                            types.NotebookDocumentCellContentChanges(
                                document=types.VersionedTextDocumentIdentifier(
                                    uri=uri, version=cell_version
                                ),
                                changes=[
                                    types.TextDocumentContentChangePartial(
                                        range=types.Range(
                                            start=types.Position(line=0, character=0),
                                            end=types.Position(
                                                line=len(lines) - 1, character=len(lines[-1])
                                            ),
                                        ),
                                        text=text,
                                    )
                                ],
                            )
                        ]
                    )
                ),
            )
        )

    def close(self) -> None:
        self.client.notebook_document_did_close(
            types.DidCloseNotebookDocumentParams(
                notebook_document=types.NotebookDocumentIdentifier(uri=self.uri),
                cell_text_documents=[
                    types.TextDocumentIdentifier(uri=uri) for uri, _, _ in self.cells
                ],
            )
        )


def _kind(kind: str) -> types.NotebookCellKind:
    return types.NotebookCellKind.Code if kind == "code" else types.NotebookCellKind.Markup


async def test_every_code_cell_gets_diagnostics_of_its_own(
    shared_client: RecordingClient,
) -> None:
    notebook = Notebook(shared_client, [("code", CELL_1), ("markdown", NOTES), ("code", "y = 1\n")])
    notebook.open()
    for index in (0, 2):
        published = await wait_for_published(shared_client, notebook.cell_uri(index))
        assert published.version == 1
    assert shared_client.published[notebook.cell_uri(1)] == []


async def test_a_name_from_an_earlier_cell_is_known_in_a_later_one(
    shared_client: RecordingClient,
) -> None:
    notebook = Notebook(shared_client, [("code", CELL_1), ("markdown", NOTES), ("code", CELL_2)])
    notebook.open()
    later = await wait_for_published(shared_client, notebook.cell_uri(2))
    (diagnostic,) = [d for d in later.diagnostics if d.code == "GPU001"]
    # positions are the cell's own, not the concatenated program's
    assert diagnostic.range.start.line == 2
    assert "item()" in text_in(CELL_2, diagnostic.range)
    earlier = await wait_for_published(shared_client, notebook.cell_uri(0))
    assert "GPU001" not in codes(earlier)


async def test_editing_an_earlier_cell_reanalyses_the_later_ones(
    shared_client: RecordingClient,
) -> None:
    notebook = Notebook(shared_client, [("code", CELL_1), ("code", CELL_2)])
    notebook.open()
    await wait_for_published(shared_client, notebook.cell_uri(1), lambda p: "GPU001" in codes(p))
    count = len(shared_client.published[notebook.cell_uri(1)])
    # x now lives on the host: `.item()` in the loop no longer syncs a GPU
    notebook.replace_cell_text(0, "import torch\nx = torch.randn(10)\n", cell_version=2)
    after = await wait_for_published(shared_client, notebook.cell_uri(1), after=count)
    assert "GPU001" not in codes(after)


async def test_quick_fix_in_a_cell_edits_that_cell(shared_client: RecordingClient) -> None:
    notebook = Notebook(shared_client, [("code", CELL_1), ("code", CELL_2)])
    notebook.open()
    cell = notebook.cell_uri(1)
    published = await wait_for_published(shared_client, cell, lambda p: "GPU001" in codes(p))
    (diagnostic,) = [d for d in published.diagnostics if d.code == "GPU001"]
    start = (diagnostic.range.start.line, diagnostic.range.start.character)
    actions = await code_actions(shared_client, cell, start, only=["quickfix"])
    fix = next(a for a in actions if a.is_preferred)
    assert fix.edit is not None
    assert edits_for(fix.edit, notebook.cell_uri(0)) == []
    fixed = apply_text_edits(CELL_2, edits_for(fix.edit, cell))
    assert fixed != CELL_2
    compile(CELL_1 + fixed, "cells.py", "exec")


async def test_closing_the_notebook_clears_its_cells(shared_client: RecordingClient) -> None:
    notebook = Notebook(shared_client, [("code", CELL_1), ("code", CELL_2)])
    notebook.open()
    cell = notebook.cell_uri(1)
    await wait_for_published(shared_client, cell, lambda p: "GPU001" in codes(p))
    count = len(shared_client.published[cell])
    notebook.close()
    cleared = await wait_for_published(shared_client, cell, after=count)
    assert list(cleared.diagnostics) == []
