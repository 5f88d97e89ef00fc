"""Helpers for the language-server tests: a recording client, documents, edits, waits."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

SERVER_COMMAND = [sys.executable, "-m", "gpulens", "serve"]
TIMEOUT_S = 10.0

# The pitfall every test leans on: `.item()` syncs the GPU on every iteration (GPU001).
LOOP_SYNC = """\
import torch
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
"""
LOOP_SYNC_LINE = 4
LOOP_SYNC_CALL = "(x * i).sum().item()"

# The same program with nothing for gpulens to say: the sum stays on the device.
CLEAN = """\
import torch
x = torch.randn(10, device="cuda")
total = torch.zeros((), device="cuda")
for i in range(100):
    total += (x * i).sum()
print(total.item())
"""


class RecordingClient(LanguageClient):
    """pytest-lsp's client, also keeping every publishDiagnostics in order (with versions)."""

    published: defaultdict[str, list[types.PublishDiagnosticsParams]]
    configuration_requests: int
    initialize_result: types.InitializeResult


def make_client() -> RecordingClient:
    client = RecordingClient(converter_factory=default_converter)
    client.published = defaultdict(list)
    client.configuration_requests = 0

    def publish(client: RecordingClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published[params.uri].append(params)

    def configuration(client: RecordingClient, params: types.ConfigurationParams) -> list[Any]:
        client.configuration_requests += 1
        return [
            client.get_configuration(section=item.section, scope_uri=item.scope_uri)
            for item in params.items
        ]

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    features[types.WORKSPACE_CONFIGURATION] = configuration
    register_lsp_features(client, features)
    return client


def server_config(**env: str) -> ClientServerConfig:
    import os

    return ClientServerConfig(
        server_command=SERVER_COMMAND,
        client_factory=make_client,
        server_env={**os.environ, **env} if env else None,
    )


def initialize_params(root: Path, options: Any = None, spec: str = "visual-studio-code"):
    capabilities = client_capabilities(spec)
    # the recorded VS Code capabilities predate notebook sync; VS Code has it today
    capabilities.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()
    )
    return types.InitializeParams(
        capabilities=capabilities,
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=options,
    )


def uri_in(folder: Path, name: str = "train.py") -> str:
    return (folder / name).as_uri()


def open_document(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=version, text=text
            )
        )
    )


def change_document(
    client: LanguageClient,
    uri: str,
    version: int,
    text: str,
    *,
    start: tuple[int, int] | None = None,
    end: tuple[int, int] | None = None,
) -> None:
    """Replace ``start``..``end`` (client units) by ``text``; the whole document without."""
    if start is None:
        change: Any = types.TextDocumentContentChangeWholeDocument(text=text)
    else:
        end = end or start
        change = types.TextDocumentContentChangePartial(
            range=types.Range(
                start=types.Position(line=start[0], character=start[1]),
                end=types.Position(line=end[0], character=end[1]),
            ),
            text=text,
        )
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[change],
        )
    )


async def wait_for_published(
    client: RecordingClient,
    uri: str,
    predicate: Callable[[types.PublishDiagnosticsParams], bool] = lambda p: True,
    timeout: float = TIMEOUT_S,
    after: int = 0,
) -> types.PublishDiagnosticsParams:
    """The first publishDiagnostics for ``uri`` (from the ``after``-th on) that satisfies
    ``predicate``; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    seen = after
    while True:
        published = client.published[uri]
        for params in published[seen:]:
            if predicate(params):
                return params
        seen = len(published)
        if time.monotonic() > deadline:
            last = published[-1] if published else None
            raise AssertionError(f"no matching diagnostics for {uri} in {timeout}s; last: {last}")
        await asyncio.sleep(0.01)


async def wait_until(condition: Callable[[], bool], timeout: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


async def still_answers(client: LanguageClient) -> None:
    """The server is alive and answering requests (a hover on a document nobody opened)."""
    result = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri="file:///nowhere/alive.py"),
                position=types.Position(line=0, character=0),
            )
        ),
        TIMEOUT_S,
    )
    assert result is None


def codes(params: types.PublishDiagnosticsParams) -> list[str]:
    return [str(d.code) for d in params.diagnostics]


def lsp_lines(text: str) -> list[str]:
    """The lines of ``text`` as LSP counts them (\\n, \\r\\n, \\r), ends kept."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    if not lines or text.endswith(("\n", "\r")):
        lines.append("")
    return lines


def offset_of(text: str, position: types.Position) -> int:
    """The string offset of an LSP position (UTF-16 columns) in ``text``."""
    lines = lsp_lines(text)
    if position.line >= len(lines):
        return len(text)
    before = sum(len(x) for x in lines[: position.line])
    line = lines[position.line]
    units = 0
    for index, char in enumerate(line):
        if units >= position.character or char in "\r\n":
            return before + index
        units += 2 if ord(char) > 0xFFFF else 1
    return before + len(line.rstrip("\r\n"))


def position_of(text: str, offset: int) -> types.Position:
    """The LSP position (UTF-16 columns) of a string offset."""
    start = 0
    for line, piece in enumerate(lsp_lines(text)):
        if offset <= start + len(piece.rstrip("\r\n")):
            units = len(text[start:offset].encode("utf-16-le", "surrogatepass")) // 2
            return types.Position(line=line, character=units)
        start += len(piece)
    raise AssertionError(f"offset {offset} is past the text")


def snap(text: str, offset: int) -> int:
    """Never between the two characters of a \\r\\n (LSP cannot point there)."""
    if 0 < offset < len(text) and text[offset - 1] == "\r" and text[offset] == "\n":
        return offset - 1
    return offset


def send_change(
    client: RecordingClient, uri: str, version: int, *, old: str, span: tuple[int, int], new: str
) -> None:
    """Replace ``span`` (string offsets into ``old``) by ``new``, as one incremental change."""
    start, end = span
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=position_of(old, start), end=position_of(old, end)),
                    text=new,
                )
            ],
        )
    )


def text_in(text: str, lsp_range: types.Range) -> str:
    return text[offset_of(text, lsp_range.start) : offset_of(text, lsp_range.end)]


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits the way an editor does: all against the old text, inserts at one
    point in the order given."""
    spans = [
        (offset_of(text, e.range.start), offset_of(text, e.range.end), order, e.new_text)
        for order, e in enumerate(edits)
    ]
    spans.sort(key=lambda s: (s[0], s[1], s[2]))
    pieces: list[str] = []
    cursor = 0
    for begin, end, _, new_text in spans:
        pieces.append(text[cursor:begin])
        pieces.append(new_text)
        cursor = max(cursor, end)
    pieces.append(text[cursor:])
    return "".join(pieces)


def edits_for(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    """The text edits a WorkspaceEdit makes to ``uri``, in either of its two shapes."""
    found: list[types.TextEdit] = []
    for change in edit.document_changes or []:
        if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri:
            found.extend(e for e in change.edits if isinstance(e, types.TextEdit))
    found.extend((edit.changes or {}).get(uri, []))
    return found


async def code_actions(
    client: LanguageClient,
    uri: str,
    start: tuple[int, int],
    *,
    end: tuple[int, int] | None = None,
    only: list[str] | None = None,
    diagnostics: list[types.Diagnostic] | None = None,
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=start[0], character=start[1]),
                end=types.Position(line=(end or start)[0], character=(end or start)[1]),
            ),
            context=types.CodeActionContext(diagnostics=diagnostics or [], only=only),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


class RawServer:
    """`gpulens serve` driven byte by byte, for what a well-behaved client never sends."""

    def __init__(self, stderr: Any = None) -> None:
        """``stderr``: a file for the server's stderr (default: thrown away)."""
        import queue
        import subprocess
        import threading

        self.proc = subprocess.Popen(
            SERVER_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
        )
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read_forever, daemon=True).start()

    def _read_forever(self) -> None:
        import json

        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b"\n"):
                    break
            if length is None:
                continue
            self._messages.put(json.loads(stream.read(length)))

    def send_bytes(self, body: bytes) -> None:
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def write(self, data: bytes) -> None:
        """Bytes as they are, framed or not."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def collect(
        self, wanted: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT_S
    ) -> list[dict[str, Any]]:
        """Every message received until one satisfies ``wanted`` (it included), answering
        the server's own requests with null on the way."""
        import queue

        received: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self._messages.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"nothing wanted arrived in {timeout}s") from None
            received.append(message)
            if "method" in message and "id" in message:
                self.send({"id": message["id"], "result": None})
            if wanted(message):
                return received

    def send(self, message: dict[str, Any]) -> None:
        import json

        self.send_bytes(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"method": method, "params": params})

    def request(
        self, method: str, params: Any = None, timeout: float = TIMEOUT_S
    ) -> dict[str, Any]:
        """Send a request and return its response (result or error), answering the server's
        own requests with null on the way."""
        self._next_id += 1
        request_id = self._next_id
        self.send({"id": request_id, "method": method, "params": params})
        try:
            received = self.collect(
                lambda m: m.get("id") == request_id and "method" not in m, timeout
            )
        except AssertionError:
            raise AssertionError(f"no answer to {method} in {timeout}s") from None
        return received[-1]

    def initialize(self) -> dict[str, Any]:
        params = {"processId": None, "rootUri": None, "capabilities": {}}
        answer = self.request("initialize", params)
        self.notify("initialized", {})
        return answer

    def close(self) -> int | None:
        try:
            self.request("shutdown", timeout=5)
            self.notify("exit")
            return self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()
            self.proc.wait()
            return None


class ProfilingClient(RecordingClient):
    refreshes: list[str]


def make_profiling_client() -> ProfilingClient:
    """A client that answers, and records, the refreshes the server asks for once a profile
    is shown (inlay hints, code lenses)."""
    client: Any = make_client()
    refreshes: list[str] = []
    client.refreshes = refreshes

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_hint_refresh(params: None = None) -> None:
        refreshes.append("inlayHint")

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params: None = None) -> None:
        refreshes.append("codeLens")

    return client
