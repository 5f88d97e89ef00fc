"""The pygls wiring: one server object holding each feature's state, each feature's requests
registered by its own module.

pygls takes one handler per method, so the methods several features follow are handled here
and handed to each: the lifecycle (`initialize`, `initialized`, `shutdown`) and the text
documents' opens, edits and closes.
"""

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
    measure_fix,
    notebooks,
    profiling,
    settings,
    status,
    stdio,
)
from gpulens.lsp.protocol import GpulensProtocol, log_answered_errors_in_one_line

logger = logging.getLogger(__name__)

# how long after `initialized` the status starts polling (see on_initialized)
STATUS_START_DELAY_S = 0.5


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
        self.settings = settings.SettingsStore(self, on_change=self._settings_changed)
        self.diagnostics = diagnostics.DiagnosticsScheduler(self)
        self.status = status.StatusNotifications(self)
        self.profiles = profiling.Profiles()
        self._reporting = False
        log_answered_errors_in_one_line()

    def _settings_changed(self) -> None:
        self.status.follow(self.settings.editor, self.settings.workspace_trusted)

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
        if self._reporting:
            # the log message itself could not be sent (its own error lands here): writing
            # it again would recurse until the stack or stderr's pipe gave out
            logger.error("gpulens: error while reporting an error: %s", error)
            return
        self._reporting = True
        try:
            self._report(error, source)
        finally:
            self._reporting = False

    def _report(self, error: Exception, source: Any) -> None:
        detail = ""
        data = getattr(error, "data", None)
        if isinstance(data, dict) and isinstance(data.get("traceback"), list):
            detail = "\n" + "".join(data["traceback"])
        elif error.__traceback__ is not None:
            detail = "\n" + "".join(traceback.format_tb(error.__traceback__))
        kind = "request" if source is FeatureRequestError else "message"
        self.log(types.MessageType.Error, f"gpulens: error handling a {kind}: {error}{detail}")

    def stop_work(self) -> None:
        """Stop what runs beside the requests: the status poller, a profile (it would keep
        the process alive until its timeout), the analyses."""
        self.status.stop()
        self.profiles.kill()
        self.diagnostics.shutdown()

    def shutdown(self) -> None:
        self.stop_work()
        super().shutdown()


def build_server() -> GpulensServer:
    """A server with every feature registered, ready for `start_io`."""
    server = GpulensServer()
    settings.register(server)
    notebooks.register(server)
    code_actions.register(server)
    hover.register(server)
    commands.register(server)
    status.register(server)
    profiling.register(server)
    measure_fix.register(server)
    debug.register(server)

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: GpulensServer, params: types.InitializeParams) -> None:
        options = settings.plain(params.initialization_options)
        ls.settings.initialize(options)
        delay = options.get("diagnosticDelayMs") if isinstance(options, dict) else None
        if isinstance(delay, int | float) and not isinstance(delay, bool) and delay >= 0:
            ls.diagnostics.delay_s = delay / 1000
        # after this answer is written: nothing but the handshake before it
        asyncio.get_running_loop().call_soon(ls.diagnostics.preload)

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: GpulensServer, params: types.InitializedParams) -> None:
        # the status (NVML, the framework probes) starts a moment later: the first document's
        # analysis waits for the settings, not for it. Its first payload goes out then;
        # settings only tune it
        asyncio.get_running_loop().call_later(STATUS_START_DELAY_S, ls.status.start)
        try:
            await ls.settings.pull()
        finally:
            ls.settings.ready.set()

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: GpulensServer, params: None) -> None:
        ls.stop_work()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GpulensServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.diagnostics.schedule(params.text_document.uri, delay_s=0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GpulensServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.profiles.edited(params, ls.workspace.position_codec)
        ls.diagnostics.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GpulensServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.profiles.closed(params.text_document.uri)
        ls.diagnostics.forget(params.text_document.uri, [params.text_document.uri])

    return server
