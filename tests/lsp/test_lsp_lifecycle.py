"""The LSP lifecycle and error rules that a client relies on: initialize once, nothing but
`exit` after `shutdown`, the exit code, requests without params, and a quiet stderr."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import (
    LOOP_SYNC,
    LOOP_SYNC_LINE,
    RawServer,
    RecordingClient,
    change_document,
    codes,
    initialize_params,
    open_document,
    uri_in,
    wait_for_published,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from gpulens.lsp.commands import SELECT_DEVICE

HOVER_NOWHERE = {
    "textDocument": {"uri": "file:///gpulens-tests/lifecycle/nowhere.py"},
    "position": {"line": 0, "character": 0},
}


def test_requests_after_shutdown_are_refused_and_exit_is_0() -> None:
    server = RawServer()
    try:
        server.initialize()
        assert server.request("shutdown") == {"jsonrpc": "2.0", "id": 2, "result": None}
        for method, params in [("textDocument/hover", HOVER_NOWHERE), ("gpulens/status", None)]:
            answer = server.request(method, params)
            assert answer["error"]["code"] == -32600, answer
            assert "shutting down" in answer["error"]["message"]
        server.notify("exit")
        assert server.proc.wait(timeout=10) == 0
    finally:
        server.close()


def test_requests_before_initialize_are_refused() -> None:
    server = RawServer()
    try:
        server.notify("textDocument/didOpen", {"textDocument": {"uri": 3}})
        answer = server.request("textDocument/hover", HOVER_NOWHERE)
        assert answer["error"]["code"] == -32002, answer
        assert "not initialized" in answer["error"]["message"]
        assert "result" in server.initialize()
    finally:
        server.close()


def test_exit_without_shutdown_is_exit_code_1() -> None:
    server = RawServer()
    try:
        server.initialize()
        server.notify("exit")
        assert server.proc.wait(timeout=10) == 1
    finally:
        server.close()


def test_status_request_without_params_is_answered() -> None:
    # what the VS Code client sends: no "params" member at all, which JSON-RPC allows
    server = RawServer()
    try:
        server.initialize()
        server.send({"id": "status", "method": "gpulens/status"})
        answer = server.collect(lambda m: m.get("id") == "status")[-1]
        assert "error" not in answer, answer
        assert answer["result"]["schema"] == "gpulens.status/1"
    finally:
        server.close()


def test_invalid_params_are_one_line_on_stderr(tmp_path: Path) -> None:
    log = tmp_path / "stderr.txt"
    with log.open("wb") as stderr:
        server = RawServer(stderr=stderr)
        try:
            server.initialize()
            bad = [
                ("textDocument/hover", {"textDocument": 5}),
                ("textDocument/codeAction", {"textDocument": {"uri": "file:///a.py"}}),
                ("workspace/executeCommand", {"command": SELECT_DEVICE, "arguments": [42]}),
            ]
            for method, params in bad:
                assert server.request(method, params)["error"]["code"] == -32602
            server.notify("textDocument/didOpen", {"textDocument": {"uri": 3}})
            assert server.request("shutdown")["result"] is None
            server.notify("exit")
            assert server.proc.wait(timeout=10) == 0
        finally:
            server.close()
    text = log.read_text()
    assert "Traceback" not in text, text
    # every line is a log record of its own: nothing spills over several lines
    assert all(line[:4].isdigit() for line in text.splitlines()), text
    for what in ["'textDocument/hover'", "'textDocument/codeAction'", "gpulens.selectDevice: 42"]:
        said = [line for line in text.splitlines() if what in line]
        assert len(said) == 1 and "WARNING" in said[0], text
    assert "'textDocument/didOpen'" in text


@pytest.mark.asyncio
async def test_a_second_initialize_is_refused_and_keeps_the_documents(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri, lambda p: p.version == 1 and "GPU001" in codes(p))

    with pytest.raises(JsonRpcException) as refused:
        await client.protocol.send_request_async(types.INITIALIZE, initialize_params(tmp_path))
    assert refused.value.code == -32600
    assert "already initialized" in str(refused.value)

    # the document is still open and still follows incremental changes
    change_document(client, uri, 2, "    # still here\n", start=(LOOP_SYNC_LINE, 0))
    published = await wait_for_published(client, uri, lambda p: p.version == 2)
    assert [d.range.start.line for d in published.diagnostics] == [LOOP_SYNC_LINE + 1]
