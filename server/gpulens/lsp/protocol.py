"""The JSON-RPC and LSP rules pygls leaves out, in a subclass of its protocol."""

from __future__ import annotations

import json
import logging
from collections.abc import Generator
from typing import Any

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    RPCRequest,
)

from gpulens.lsp.text_documents import LspWorkspace
from gpulens.lsp.wire import INVALID_REQUEST, first_line

logger = logging.getLogger(__name__)

SERVER_NOT_INITIALIZED = types.ErrorCodes.ServerNotInitialized.value


class GpulensProtocol(LanguageServerProtocol):
    """pygls' protocol, with the parts of LSP it leaves out.

    - A request whose params cannot be read is answered with InvalidParams (pygls answers
      nothing, and the client waits forever), logged in one line. A message without `params`
      has null params, as JSON-RPC allows (the VS Code client sends `gpulens/status` so).
    - Requests after `shutdown` are answered with InvalidRequest and requests before
      `initialize` with ServerNotInitialized, as the spec asks (pygls drops the first in
      silence and fails the second with a traceback); notifications before it are dropped.
    - A second `initialize` is refused before any handler sees it: it would have replaced the
      workspace, open documents and all.
    - A standard notification the server has no use for (`textDocument/didSave`, which some
      clients send unasked) is ignored in silence, as LSP lets a server do; pygls would log
      a warning each time.
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

    def notify_json(self, method: str, params: str) -> None:
        """A notification whose params are JSON text already (large, mostly unchanged
        payloads: `published`); sent as pygls sends any message."""
        if self.writer is None:
            logger.error("Unable to send %s, no available transport!", method)
            return
        body = f'{{"jsonrpc": "2.0", "method": {json.dumps(method)}, "params": {params}}}'
        data = body.encode(self.CHARSET)
        if self._include_headers:
            header = (
                f"Content-Length: {len(data)}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            )
            data = header.encode(self.CHARSET) + data
        try:
            self.writer.write(data)
        except BrokenPipeError:
            logger.warning("could not send %s: the client closed the connection", method)

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
        method = getattr(message, "method", None)
        if isinstance(message, RPCRequest):
            refusal = self._refusal(message.method)
            if refusal is not None:
                code, reason = refusal
                logger.warning("refused %s: %s", message.method, reason)
                self.reply_error(message.id, code, reason)
                return
        elif method is not None and self._workspace is None and method != types.EXIT:
            logger.warning("dropped %s: the server is not initialized yet", method)
            return
        elif method is not None and self._unused_notification(method):
            logger.debug("ignored %s: nothing here follows it", method)
            return
        super().handle_message(message)

    def _unused_notification(self, method: str) -> bool:
        """A notification LSP defines that no handler here takes (pygls answers
        `$/cancelRequest` itself)."""
        handled = method in self.fm.features or method in self.fm.builtin_features
        return not handled and method in types.METHOD_TO_TYPES and method != types.CANCEL_REQUEST

    def _refusal(self, method: str) -> tuple[int, str] | None:
        """The error a request gets at this point of the lifecycle, if any (LSP's rules)."""
        if self._shutdown and method != types.EXIT:
            return INVALID_REQUEST, "the server is shutting down: only `exit` is accepted now"
        if method == types.INITIALIZE and self._workspace is not None:
            return INVALID_REQUEST, "the server is already initialized; send `initialize` once"
        if self._workspace is None and method not in (types.INITIALIZE, types.EXIT):
            return SERVER_NOT_INITIALIZED, "the server is not initialized yet: send `initialize`"
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
    return first_line(error)


class _AnsweredErrorsInOneLine(logging.Filter):
    """pygls logs each error it answers a request with, traceback and all, as an ERROR. An
    error the client is told about (bad params, an unknown command) is no fault of the
    server: one warning line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError):
            record.msg = f"{record.getMessage()}: {first_line(error)}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_ONE_LINE = _AnsweredErrorsInOneLine()


def log_answered_errors_in_one_line() -> None:
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_ONE_LINE)  # added once at most
