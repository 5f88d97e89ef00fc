"""REST handlers behind Jupyter's authentication; the work runs off Tornado's event loop."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from gpulens.device.frameworks import FrameworkProbeCache
from gpulens.device.status import StatusSource

# jupyter_server's authorizer is asked for this resource; its default lets any logged-in user.
AUTH_RESOURCE = "gpulens"


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


class DoctorHandler(_GpulensHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self) -> None:
        """The `gpulens.doctor/1` report with findings; `?smoke=0` skips the smoke test."""
        from gpulens.device.doctor import diagnose, gather_facts

        python = self.source.probes.python
        smoke = self.get_query_argument("smoke", "1").lower() not in ("0", "false", "no")
        loop = asyncio.get_running_loop()
        facts = await loop.run_in_executor(
            None, lambda: gather_facts(python, smoke=smoke, monitor=self.source.monitor)
        )
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({**facts, "findings": diagnose(facts)}))


def setup_handlers(serverapp: Any) -> None:
    web_app = serverapp.web_app
    # One source per server: NVML initialised once, frameworks probed once and cached.
    web_app.settings["gpulens_source"] = StatusSource(
        probes=FrameworkProbeCache(kernel_python(serverapp))
    )
    base = web_app.settings["base_url"]
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "gpulens", "status"), StatusHandler),
            (url_path_join(base, "gpulens", "doctor"), DoctorHandler),
        ],
    )
