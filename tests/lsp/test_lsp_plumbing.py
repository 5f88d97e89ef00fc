"""The server's plumbing, whatever rules exist: capabilities, sync, commands, empty answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_helpers import (
    CLEAN,
    LOOP_SYNC,
    RecordingClient,
    change_document,
    open_document,
    still_answers,
    uri_in,
    wait_for_published,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture
def client(shared_client: RecordingClient) -> RecordingClient:
    """One server for the module: these tests change no setting (a chosen device aside,
    which nothing here reads)."""
    return shared_client


async def test_initialize_advertises_the_standard_features(client: RecordingClient) -> None:
    result = client.initialize_result
    caps = result.capabilities
    assert result.server_info is not None
    assert result.server_info.name == "gpulens"
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions)
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert sync.open_close
    actions = caps.code_action_provider
    assert isinstance(actions, types.CodeActionOptions)
    assert set(actions.code_action_kinds or []) >= {
        "quickfix",
        "refactor.rewrite",
        "source.fixAll.gpulens",
    }
    assert caps.hover_provider
    assert caps.execute_command_provider is not None
    assert "gpulens.selectDevice" in caps.execute_command_provider.commands
    assert caps.position_encoding in (None, types.PositionEncodingKind.Utf16)
    notebook_sync = caps.notebook_document_sync
    assert isinstance(notebook_sync, types.NotebookDocumentSyncOptions)
    selector = notebook_sync.notebook_selector[0]
    assert [cell.language for cell in selector.cells or []] == ["python"]
    assert isinstance(selector.notebook, types.NotebookDocumentFilterNotebookType)
    assert selector.notebook.notebook_type == "jupyter-notebook"


async def test_open_publishes_for_the_opened_version(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, CLEAN, version=7)
    published = await wait_for_published(client, uri)
    assert published.version == 7


async def test_close_clears_the_documents_diagnostics(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri)
    count = len(client.published[uri])
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    cleared = await wait_for_published(client, uri, after=count)
    assert list(cleared.diagnostics) == []
    assert cleared.version is None


async def test_rapid_changes_publish_newest_version_last(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, CLEAN)
    await wait_for_published(client, uri, lambda p: p.version == 1)
    for version in range(2, 12):
        change_document(client, uri, version, "#", start=(0, 0))
        await asyncio.sleep(0.02 * (version % 3))  # some inside the debounce, some not
    await wait_for_published(client, uri, lambda p: p.version == 11)
    await asyncio.sleep(0.3)  # anything still in flight would land now
    versions = [p.version for p in client.published[uri]]
    assert versions == sorted(versions), versions
    assert versions[-1] == 11
    # debounced: fewer analyses than changes
    assert len(versions) < 11


@pytest.mark.parametrize("arguments", [[{"device": "cuda:1"}], ["cuda:1"]])
async def test_select_device_accepts_both_argument_shapes(
    client: RecordingClient, arguments: list[object]
) -> None:
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="gpulens.selectDevice", arguments=arguments)
    )
    assert result == {"device": "cuda:1"}


@pytest.mark.parametrize(
    "arguments", [["tpu:banana"], [{"device": 3}], [], ["cuda", "cpu"], [{"gpu": "cuda"}]]
)
async def test_select_device_rejects_what_it_cannot_write(
    client: RecordingClient, arguments: list[object]
) -> None:
    logged = len(client.log_messages)
    with pytest.raises(JsonRpcInvalidParams):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="gpulens.selectDevice", arguments=arguments)
        )
    await still_answers(client)
    # the error is also in the client's log, for whoever reads the output panel
    assert any(
        "gpulens.selectDevice" in m.message and m.type == types.MessageType.Error
        for m in client.log_messages[logged:]
    )


async def test_unknown_command_is_an_error(client: RecordingClient) -> None:
    with pytest.raises(JsonRpcException):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="gpulens.noSuchCommand", arguments=[])
        )
    await still_answers(client)


async def test_hover_where_there_is_no_finding_is_empty(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, CLEAN)
    result = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=3),
        )
    )
    assert result is None


async def test_code_actions_where_there_is_no_finding_offer_no_quick_fix(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, CLEAN)
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
            ),
            context=types.CodeActionContext(diagnostics=[], only=["quickfix"]),
        )
    )
    assert not result
