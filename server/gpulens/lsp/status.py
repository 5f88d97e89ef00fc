"""LSP `gpulens/status`: the status payload as a notification every
``gpulens.statusIntervalSeconds`` (and at once after `initialized`), and as a request answered
with the payload now.

The polling is `gpulens.device.status.StatusPoller`'s; this module hands its payloads to the
client and follows the settings (`gpulens.lsp.settings`): the interval, and the interpreter
the framework probes run, which is the configured one only in a trusted folder
(`gpulens.lsp.trust`).
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

from gpulens.lsp.settings import EditorSettings, plain
from gpulens.lsp.trust import probe_interpreter

if TYPE_CHECKING:
    from gpulens.device.status import StatusPoller, StatusSource
    from gpulens.lsp.server import GpulensServer

STATUS_METHOD = "gpulens/status"


class StatusNotifications:
    """The status source of one server, and the poller that notifies its client. Both are
    made on first use (after `initialize` is answered): NVML and the probes load then."""

    def __init__(self, server: GpulensServer) -> None:
        self._server = server
        self._source: StatusSource | None = None
        self._poller: StatusPoller | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._python = sys.executable
        self._interval_s: float | None = None
        self._stopped = False

    @property
    def source(self) -> StatusSource:
        if self._source is None:
            from gpulens.device.frameworks import FrameworkProbeCache
            from gpulens.device.status import StatusSource

            self._source = StatusSource(probes=FrameworkProbeCache())
            self._source.probes.set_python(self._python)
        return self._source

    @property
    def poller(self) -> StatusPoller:
        if self._poller is None:
            from gpulens.device.status import StatusPoller

            self._poller = StatusPoller(self.source, self._publish)
            if self._interval_s is not None:
                self._poller.set_interval(self._interval_s)
        return self._poller

    def start(self) -> None:
        """Notify now and from now on (called on the event loop, after `initialized`);
        nothing once the server stopped."""
        if self._stopped:
            return
        self._loop = asyncio.get_running_loop()
        self.poller.start()

    def follow(self, settings: EditorSettings, trusted: bool | None) -> None:
        python = probe_interpreter(settings.profile_python, trusted)
        self._python = python or sys.executable
        self._interval_s = settings.status_interval_seconds
        if self._source is not None:
            self._source.probes.set_python(self._python)
        if self._poller is not None:
            self._poller.set_interval(self._interval_s)

    def stop(self) -> None:
        self._stopped = True
        if self._poller is not None:
            self._poller.stop()

    def _publish(self, payload: dict[str, Any]) -> None:
        # on the poller's thread: the notification is written from the event loop
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._server.protocol.notify, STATUS_METHOD, payload)


def register(server: GpulensServer) -> None:
    @server.feature(STATUS_METHOD)
    async def status_request(ls: GpulensServer, params: Any = None) -> dict[str, Any]:
        params = plain(params) or {}
        status = ls.status.source
        if isinstance(params, dict) and params.get("refreshFrameworks"):
            status.probes.refresh()
        # off the event loop: the first NVML init can take a while on a many-GPU machine
        return await asyncio.get_running_loop().run_in_executor(None, status.snapshot)
