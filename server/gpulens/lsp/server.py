"""The pygls wiring: one server object, each feature registered by its own module."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import traceback
from collections.abc import Generator
from typing import Any, BinaryIO

import cattrs
from lsprotocol import types
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    RPCRequest,
)

from gpulens import __version__
from gpulens.lsp import (
    code_actions,
    commands,
    debug,
    diagnostics,
    hover,
    notebooks,
    profiling,
    settings,
    status,
    stdio,
)
from gpulens.lsp.text_documents import LspWorkspace
from gpulens.lsp.wire import INVALID_REQUEST

logger = logging.getLogger(__name__)


class GpulensProtocol(LanguageServerProtocol):
    """pygls' protocol, with the parts of LSP it leaves out.

    - A request whose params cannot be read is answered with InvalidParams (pygls answers
      nothing, and the client waits forever), logged in one line. A message without `params`
      has null params, as JSON-RPC allows (the VS Code client sends `gpulens/status` so).
    - Requests after `shutdown` are answered with InvalidRequest, as the spec asks (pygls
      drops them in silence).
    - A second `initialize` is refused before any handler sees it: it would have replaced the
      workspace, open documents and all.
    - Open documents split lines as LSP does (`text_documents`).
    """

    @property
    def is_shut_down(self) -> bool:
        return self._shutdown

    def reply_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """Answer request ``msg_id`` (None: a message whose id is unknown) with an error."""
        # by hand: lsprotocol's message type leaves out an id of null, which JSON-RPC requires
        error = {"code": code, "message": message}
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def report_error(self, error: Exception) -> None:
        self._server._report_server_error(error, JsonRpcException)

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" not in data:
            return data  # a nested object, when pygls uses this as json's object_hook
        if "method" in data and "params" not in data:
            data = {**data, "params": None}
        try:
            return self._converter.structure(data, self._message_type(data))
        except Exception as error:
            method = data.get("method")
            if not isinstance(method, str):
                logger.warning("unreadable response from the client: %s", _reason(error))
                raise JsonRpcInvalidParams() from None
            reason = f"invalid params for {method!r}: {_reason(error)}"
            logger.warning("%s", reason)
            if "id" in data:
                self.reply_error(data["id"], JsonRpcInvalidParams.CODE, reason)
            raise JsonRpcInvalidParams(reason) from None

    def _message_type(self, data: dict[str, Any]) -> Any:
        """The lsprotocol type of a message, chosen as pygls chooses it."""
        if "id" not in data:
            return self.get_message_type(data.get("method", "")) or JsonRPCNotification
        if "error" in data:
            return types.ResponseErrorMessage
        if "method" in data:
            return self.get_message_type(data["method"]) or JsonRPCRequestMessage
        return self._result_types.pop(data["id"], None) or JsonRPCResponseMessage

    def handle_message(self, message: Any) -> None:
        if isinstance(message, RPCRequest):
            refusal = self._refusal(message.method)
            if refusal is not None:
                logger.warning("refused %s: %s", message.method, refusal)
                self.reply_error(message.id, INVALID_REQUEST, refusal)
                return
        super().handle_message(message)

    def _refusal(self, method: str) -> str | None:
        if self._shutdown and method != types.EXIT:
            return "the server is shutting down: only `exit` is accepted now"
        if method == types.INITIALIZE and self._workspace is not None:
            return "the server is already initialized; `initialize` may be sent only once"
        return None

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        result = yield from super().lsp_initialize(params)
        # pygls builds its own Workspace; no document can be open yet, so trade it for ours
        self._workspace = LspWorkspace.replacing(self.workspace)
        return result


def _reason(error: BaseException) -> str:
    """What was wrong with a message, in one line."""
    if isinstance(error, cattrs.ClassValidationError):
        return "; ".join(cattrs.transform_error(error))
    return _first_line(error)


class _AnsweredErrorsInOneLine(logging.Filter):
    """pygls logs each error it answers a request with, traceback and all, as an ERROR. An
    error the client is told about (bad params, an unknown command) is no fault of the
    server: one warning line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError):
            record.msg = f"{record.getMessage()}: {_first_line(error)}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_ONE_LINE = _AnsweredErrorsInOneLine()


class GpulensServer(LanguageServer):
    """The language server, holding the state the feature modules share."""

    protocol: GpulensProtocol

    def __init__(self) -> None:
        super().__init__(
            name="gpulens",
            version=__version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=notebooks.SYNC_OPTIONS,
            protocol_cls=GpulensProtocol,
            converter_factory=default_converter,
        )
        self.settings = settings.SettingsStore(self)
        self.diagnostics = diagnostics.DiagnosticsScheduler(self)
        logging.getLogger("pygls.protocol.json_rpc").addFilter(_ONE_LINE)

    def serve_stdio(self, stdin: BinaryIO, stdout: BinaryIO) -> int:
        """Serve over a pair of pipes until the input ends or `exit`; the exit code."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout))
        try:
            return asyncio.run(stdio.serve_stdio(self.protocol, stdin, self._stop_event))
        finally:
            self.shutdown()

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        # pygls' own loop goes deaf after one bad frame: never use it
        self.serve_stdio(stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)

    def log(self, level: types.MessageType, message: str) -> None:
        """A line in the client's output panel (`window/logMessage`)."""
        self.window_log_message(types.LogMessageParams(type=level, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Every unexpected error goes to the log, not to a pop-up: a user mid-typing cannot
        # act on it, and requests already carry their error back in the response.
        detail = ""
        data = getattr(error, "data", None)
        if isinstance(data, dict) and isinstance(data.get("traceback"), list):
            detail = "\n" + "".join(data["traceback"])
        elif error.__traceback__ is not None:
            detail = "\n" + "".join(traceback.format_tb(error.__traceback__))
        kind = "request" if source is FeatureRequestError else "message"
        self.log(types.MessageType.Error, f"gpulens: error handling a {kind}: {error}{detail}")

    def shutdown(self) -> None:
        self.diagnostics.shutdown()
        super().shutdown()


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def build_server() -> GpulensServer:
    """A server with every feature registered, ready for `start_io` or `start_tcp`."""
    server = GpulensServer()
    settings.register(server)
    diagnostics.register(server)
    notebooks.register(server)
    code_actions.register(server)
    hover.register(server)
    commands.register(server)
    status.register(server)
    profiling.register(server)
    debug.register(server)

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: GpulensServer, params: None) -> None:
        ls.diagnostics.shutdown()

    return server
