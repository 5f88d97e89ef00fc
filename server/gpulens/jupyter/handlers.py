"""REST handlers behind Jupyter's authentication; the work runs off Tornado's event loop.

`GET /gpulens/status` reads NVML and the cached framework probes. `GET /gpulens/doctor` costs
a framework probe and a GPU smoke test, so its report is kept for ``DOCTOR_FRESH_S`` and made
one run at a time on a thread of its own: reloading the page, or another page firing requests
at the server with the user's cookie, cannot make it run back to back, and it never holds up
the status route.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from gpulens.device.frameworks import FrameworkProbeCache
from gpulens.device.status import StatusSource

# jupyter_server's authorizer is asked for this resource; its default lets any logged-in user.
AUTH_RESOURCE = "gpulens"
# how long a doctor report is served again before a request runs the doctor anew
DOCTOR_FRESH_S = 60.0


def kernel_python(serverapp: Any) -> str:
    """The interpreter of the default kernel: the frameworks users import live there."""
    try:
        manager = serverapp.kernel_spec_manager
        spec = manager.get_kernel_spec(serverapp.kernel_manager.default_kernel_name)
        program = spec.argv[0]
    except Exception:  # no kernelspec (or a broken one): the server's own interpreter
        return sys.executable
    if program in ("python", "python3", "{python}"):
        return sys.executable
    found = program if os.path.isabs(program) else shutil.which(program)
    return found or sys.executable


class _GpulensHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def source(self) -> StatusSource:
        return self.settings["gpulens_source"]

    def _flag(self, name: str) -> bool:
        return self.get_query_argument(name, "0").lower() in ("1", "true", "yes")


class StatusHandler(_GpulensHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self) -> None:
        """The `gpulens.status/1` payload; `?refresh=1` probes the frameworks again."""
        source = self.source
        if self._flag("refresh"):
            source.probes.refresh()
        loop = asyncio.get_running_loop()
        payload = await loop.run_in_executor(
            None, lambda: source.snapshot(wait_for_frameworks=True)
        )
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(payload))


class DoctorReports:
    """Doctor reports (with and without the smoke test), each reused for ``fresh_s``; at most
    one run at a time, on the doctor's own thread. Concurrent requests share the run."""

    def __init__(
        self,
        run: Callable[[bool], dict[str, Any]],
        *,
        fresh_s: float = DOCTOR_FRESH_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._run = run
        self._fresh_s = fresh_s
        self._clock = clock
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpulens-doctor")
        self._kept: dict[bool, tuple[float, dict[str, Any]]] = {}
        self._running: dict[bool, asyncio.Future[dict[str, Any]]] = {}

    async def get(self, smoke: bool) -> dict[str, Any]:
        kept = self._kept.get(smoke)
        if kept is not None and self._clock() - kept[0] < self._fresh_s:
            return kept[1]
        running = self._running.get(smoke)
        if running is None:
            loop = asyncio.get_running_loop()
            running = loop.run_in_executor(self._executor, self._run, smoke)
            self._running[smoke] = running
            running.add_done_callback(lambda done: self._finished(smoke, done))
        # a client that hangs up must not cancel the run the others wait for
        return await asyncio.shield(running)

    def _finished(self, smoke: bool, done: asyncio.Future[dict[str, Any]]) -> None:
        self._running.pop(smoke, None)
        if not done.cancelled() and done.exception() is None:
            self._kept[smoke] = (self._clock(), done.result())


def run_doctor(source: StatusSource, smoke: bool) -> dict[str, Any]:
    """The `gpulens.doctor/1` report with findings, probing the frameworks anew once (the
    status route then shows the fresh answer too)."""
    from gpulens.device.doctor import diagnose, gather_facts

    source.probes.refresh()
    facts = gather_facts(
        source.probes.python,
        smoke=smoke,
        monitor=source.monitor,
        probe=lambda _python: source.probes.get(block=True) or {},
    )
    return {**facts, "findings": diagnose(facts)}


class DoctorHandler(_GpulensHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self) -> None:
        """The `gpulens.doctor/1` report with findings; `?smoke=0` skips the smoke test.
        Reports are reused for `DOCTOR_FRESH_S` (their `time` says when they were made)."""
        smoke = self.get_query_argument("smoke", "1").lower() not in ("0", "false", "no")
        reports: DoctorReports = self.settings["gpulens_doctor"]
        report = await reports.get(smoke)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(report))


def setup_handlers(serverapp: Any) -> None:
    web_app = serverapp.web_app
    # One source per server: NVML initialised once, frameworks probed once and cached.
    source = StatusSource(probes=FrameworkProbeCache(kernel_python(serverapp)))
    web_app.settings["gpulens_source"] = source
    web_app.settings["gpulens_doctor"] = DoctorReports(lambda smoke: run_doctor(source, smoke))
    base = web_app.settings["base_url"]
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "gpulens", "status"), StatusHandler),
            (url_path_join(base, "gpulens", "doctor"), DoctorHandler),
        ],
    )
