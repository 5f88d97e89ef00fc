"""The pygls wiring: one server object, each feature registered by its own module."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import traceback
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter

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
from gpulens.lsp.protocol import GpulensProtocol, log_answered_errors_in_one_line

logger = logging.getLogger(__name__)


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
        log_answered_errors_in_one_line()

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
    debug.register(server)

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: GpulensServer, params: None) -> None:
        ls.diagnostics.shutdown()

    return server
