"""The server process and the wire: TCP, argument errors, and what no well-behaved client
sends (errors come back, the server stays up)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from lsp_helpers import RawServer


@pytest.fixture
def raw() -> Iterator[RawServer]:
    server = RawServer()
    server.initialize()
    yield server
    server.close()


def assert_alive(server: RawServer) -> None:
    answer = server.request(
        "textDocument/hover",
        {"textDocument": {"uri": "file:///alive.py"}, "position": {"line": 0, "character": 0}},
    )
    assert answer.get("result") is None
    assert "error" not in answer
    assert server.proc.poll() is None


def test_unknown_request_is_method_not_found(raw: RawServer) -> None:
    answer = raw.request("gpulens/noSuchThing", {"x": 1})
    assert answer["error"]["code"] == -32601
    raw.notify("gpulens/noSuchNotification", {"x": 1})
    assert_alive(raw)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("textDocument/hover", {"textDocument": 5}),
        ("textDocument/hover", {"position": {"line": 0, "character": 0}}),
        ("textDocument/codeAction", {"textDocument": {"uri": "file:///a.py"}, "range": "all"}),
        ("textDocument/hover", [1, 2, 3]),
        ("workspace/executeCommand", {"command": 42}),
    ],
)
def test_malformed_params_are_invalid_params(raw: RawServer, method: str, params: object) -> None:
    answer = raw.request(method, params)
    assert answer["error"]["code"] == -32602, answer
    assert_alive(raw)


def test_malformed_notifications_are_survived(raw: RawServer) -> None:
    raw.notify("textDocument/didOpen", {"textDocument": {"uri": 3}})
    raw.notify("textDocument/didChange", {"textDocument": {"uri": "file:///never-opened.py"}})
    raw.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": "file:///never-opened.py", "version": 2},
            "contentChanges": [{"text": "x = 1"}],
        },
    )
    raw.notify("textDocument/didClose", {"textDocument": {"uri": "file:///never-opened.py"}})
    raw.notify("workspace/didChangeConfiguration", {"settings": [1, "two"]})
    assert_alive(raw)


def test_broken_json_and_bytes_are_survived(raw: RawServer) -> None:
    raw.send_bytes(b'{"jsonrpc": "2.0", "id": 99, "method": ')
    raw.send_bytes(b"\xff\xfe not utf-8 \xc3\x28")
    raw.send_bytes(b"[]")
    raw.send_bytes(b'"just a string"')
    assert_alive(raw)


def test_serve_help_is_fast_and_light() -> None:
    # `gpulens --help` must not pay for pygls: the subcommand imports it only when it runs
    code = "import sys, gpulens.commands.serve; print('pygls' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=30
    )
    assert done.stdout.strip() == "False"
