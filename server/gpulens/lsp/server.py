"""The pygls wiring: one server object, each feature registered by its own module."""

from __future__ import annotations

import logging
import traceback
from typing import Any

from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, default_converter

from gpulens import __version__
from gpulens.lsp import (
    code_actions,
    commands,
    diagnostics,
    hover,
    notebooks,
    profiling,
    settings,
    status,
)

logger = logging.getLogger(__name__)


class GpulensProtocol(LanguageServerProtocol):
    """pygls' protocol, answering requests whose params it cannot read.

    pygls turns such a message into an exception before any handler sees it and answers
    nothing, which leaves the client waiting forever; the spec wants InvalidParams.
    """

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if isinstance(data, dict) and "id" in data and "method" in data:
                cause = error.__cause__ or error
                reply = JsonRpcInvalidParams(
                    f"invalid params for {data['method']!r}: {_first_line(cause)}"
                )
                self._send_response(data["id"], error=reply.to_response_error())
            raise


class GpulensServer(LanguageServer):
    """The language server, holding the state the feature modules share."""

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
    """A server with every feature registered, ready for `start_io`."""
    server = GpulensServer()
    settings.register(server)
    diagnostics.register(server)
    notebooks.register(server)
    code_actions.register(server)
    hover.register(server)
    commands.register(server)
    status.register(server)
    profiling.register(server)

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: GpulensServer, params: None) -> None:
        ls.diagnostics.shutdown()

    return server
