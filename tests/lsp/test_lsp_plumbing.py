"""The server's plumbing, whatever rules exist: capabilities, sync, settings, commands."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import (
    CLEAN,
    LOOP_SYNC,
    SERVER_COMMAND,
    TIMEOUT_S,
    RecordingClient,
    change_document,
    initialize_params,
    open_document,
    server_config,
    still_answers,
    uri_in,
    wait_for_published,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams


async def wait_until(condition, timeout: float = TIMEOUT_S) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


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


async def test_settings_are_pulled_after_initialized_and_on_change(
    client: RecordingClient, tmp_path: Path
) -> None:
    await wait_until(lambda: client.configuration_requests >= 1)
    uri = uri_in(tmp_path)
    open_document(client, uri, CLEAN)
    await wait_for_published(client, uri)
    before = client.configuration_requests
    count = len(client.published[uri])
    client.set_configuration({"rules": {"severity": {"GPU001": "error"}}}, section="gpulens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_until(lambda: client.configuration_requests > before)
    # open documents are analysed again with the new settings (even with no finding)
    await wait_for_published(client, uri, after=count)


async def test_bad_settings_warn_and_keep_the_server_running(
    client: RecordingClient, tmp_path: Path
) -> None:
    client.set_configuration(
        {"device": "tpu:banana", "rules": {"ignore": ["NOTACODE"], "severity": {"GPU001": "loud"}}},
        section="gpulens",
    )
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_until(lambda: len(client.messages) >= 3)
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    assert any("tpu:banana" in m for m in warnings), warnings
    assert any("NOTACODE" in m for m in warnings), warnings
    assert any("loud" in m for m in warnings), warnings
    uri = uri_in(tmp_path)
    open_document(client, uri, CLEAN)
    await wait_for_published(client, uri)
    await still_answers(client)


async def test_settings_pushed_in_the_notification_are_read(
    client: RecordingClient, tmp_path: Path
) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"gpulens": {"rules": {"select": ["XYZ"]}}})
    )
    await wait_until(lambda: any("XYZ" in m.message for m in client.messages))


@pytest_lsp.fixture(config=server_config())
async def client_with_bad_init_options(lsp_client: RecordingClient, tmp_path: Path):
    await lsp_client.initialize_session(
        initialize_params(tmp_path, options={"gpulens": {"statusIntervalSeconds": -1}})
    )
    yield
    await lsp_client.shutdown_session()


async def test_bad_initialization_options_warn(client_with_bad_init_options: RecordingClient):
    client = client_with_bad_init_options
    await wait_until(lambda: any("statusIntervalSeconds" in m.message for m in client.messages))
    await still_answers(client)


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
    with pytest.raises(JsonRpcInvalidParams):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="gpulens.selectDevice", arguments=arguments)
        )
    await still_answers(client)


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


def test_serve_rejects_a_bad_tcp_address() -> None:
    done = subprocess.run(
        [*SERVER_COMMAND, "--tcp", "nonsense"],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "HOST:PORT" in done.stderr


def test_serve_over_tcp_answers_initialize() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [*SERVER_COMMAND, "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        connection = _connect(port)
        body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}'
        connection.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        connection.settimeout(TIMEOUT_S)
        received = b""
        while b'"id": 1' not in received and b'"id":1' not in received:
            chunk = connection.recv(65536)
            assert chunk, "connection closed before the answer"
            received += chunk
        assert b"capabilities" in received
        connection.close()
    finally:
        proc.kill()
        proc.wait()


def _connect(port: int) -> socket.socket:
    import time

    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_serve_help_is_fast_and_light() -> None:
    # `gpulens --help` must not pay for pygls: the subcommand imports it only when it runs
    code = "import sys, gpulens.commands.serve; print('pygls' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=30
    )
    assert done.stdout.strip() == "False"
