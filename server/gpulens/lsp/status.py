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

from gpulens.device.frameworks import FrameworkProbeCache
from gpulens.device.status import StatusPoller, StatusSource
from gpulens.lsp.settings import EditorSettings, plain
from gpulens.lsp.trust import probe_interpreter

if TYPE_CHECKING:
    from gpulens.lsp.server import GpulensServer

STATUS_METHOD = "gpulens/status"


class StatusNotifications:
    """The status source of one server, and the poller that notifies its client."""

    def __init__(self, server: GpulensServer) -> None:
        self._server = server
        self.source = StatusSource(probes=FrameworkProbeCache())
        self.poller = StatusPoller(self.source, self._publish)
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """Notify now and from now on (called on the event loop, after `initialized`)."""
        self._loop = asyncio.get_running_loop()
        self.poller.start()

    def follow(self, settings: EditorSettings, trusted: bool | None) -> None:
        python = probe_interpreter(settings.profile_python, trusted)
        self.source.probes.set_python(python or sys.executable)
        self.poller.set_interval(settings.status_interval_seconds)

    def stop(self) -> None:
        self.poller.stop()

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
