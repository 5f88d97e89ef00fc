"""REST handlers behind Jupyter's authentication; the work runs off Tornado's event loop.

`GET /gpulens/status` reads NVML and the cached framework probes. `GET /gpulens/doctor` costs
a framework probe and a GPU smoke test, so its report is kept for ``DOCTOR_FRESH_S`` and made
one run at a time on a thread of its own: reloading the page, or another page firing requests
at the server with the user's cookie, cannot make it run back to back, and it never holds up
the status route. `POST /gpulens/analyze` analyses a notebook's code cells sent in its body
(never running them) on a thread of its own, one analysis at a time, so a large notebook
holds up neither the event loop nor the status route.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from gpulens.analysis.config import DEFAULT_CONFIG, Config, ConfigError, load_config
from gpulens.analysis.incremental import DocumentAnalyzer
from gpulens.device.frameworks import FrameworkProbeCache
from gpulens.device.status import StatusSource
from gpulens.jupyter.notebook_actions import (
    MAX_BODY_BYTES,
    ActionsRequest,
    RequestError,
    notebook_actions,
    parse_request,
)

# jupyter_server's authorizer is asked for this resource; its default lets any logged-in user.
AUTH_RESOURCE = "gpulens"
# how long a doctor report is served again before a request runs the doctor anew
DOCTOR_FRESH_S = 60.0
# notebooks whose earlier analyses are kept (each edit sends the whole notebook again)
KEPT_ANALYZERS = 8
# pyproject.toml is read again when its cached config is older than this (the language
# server's interval): edits to `[tool.gpulens]` apply without a restart
PROJECT_RECHECK_S = 2.0


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
        """The `gpulens.status/2` payload; `?refresh=1` probes the frameworks again."""
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


class ProjectConfigs:
    """The `[tool.gpulens]` config of a notebook's folder, looked for only inside ``root`` (the
    folder the server serves): a request cannot make the server read a file outside it."""

    def __init__(
        self,
        root: str | None,
        *,
        recheck_s: float = PROJECT_RECHECK_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._root = None if root is None else os.path.realpath(root)
        self._recheck_s = recheck_s
        self._clock = clock
        self._kept: dict[str, tuple[float, Config, str | None]] = {}

    def folder_of(self, path: str) -> str | None:
        """The real folder of the notebook at ``path`` (relative to the root), or None without
        a root; RequestError when it lies outside the root."""
        if self._root is None:
            return None
        try:
            folder = os.path.realpath(os.path.join(self._root, os.path.dirname(path.lstrip("/"))))
        except ValueError:  # a NUL in the path
            folder = ""
        if folder != self._root and not folder.startswith(self._root + os.sep):
            raise RequestError(f'"path" {path!r} is not inside the folder this server serves')
        return folder

    def get(self, path: str | None) -> tuple[Config, str | None]:
        """The config for the notebook at ``path`` and, when `[tool.gpulens]` is broken, why."""
        folder = None if path is None else self.folder_of(path)
        if folder is None or self._root is None:
            return DEFAULT_CONFIG, None
        kept = self._kept.get(folder)
        if kept is not None and self._clock() - kept[0] < self._recheck_s:
            return kept[1], kept[2]
        try:
            config, problem = load_config(Path(folder), within=Path(self._root)), None
        except ConfigError as error:
            config, problem = DEFAULT_CONFIG, f"{error}; the defaults apply"
        except OSError as error:
            config, problem = DEFAULT_CONFIG, f"pyproject.toml could not be read ({error})"
        self._kept[folder] = (self._clock(), config, problem)
        return config, problem


class NotebookAnalyzers:
    """What the last analyses of the most recent notebooks computed, to reuse on the next
    request for the same notebook (a lab sends the whole notebook after each edit)."""

    def __init__(self, size: int = KEPT_ANALYZERS) -> None:
        self._size = size
        self._kept: OrderedDict[str, DocumentAnalyzer] = OrderedDict()

    def get(self, path: str | None) -> DocumentAnalyzer:
        key = path or ""
        analyzer = self._kept.pop(key, None) or DocumentAnalyzer()
        self._kept[key] = analyzer
        while len(self._kept) > self._size:
            self._kept.popitem(last=False)
        return analyzer


def answer_request(
    body: bytes, configs: ProjectConfigs, analyzers: NotebookAnalyzers | None = None
) -> dict[str, Any]:
    """The `gpulens.notebook-actions/1` answer to a request body; RequestError when it is bad."""
    request: ActionsRequest = parse_request(body)
    config, problem = configs.get(request.path)
    analyzer = None if analyzers is None else analyzers.get(request.path)
    return notebook_actions(request, config, problem, analyzer)


class AnalyzeHandler(_GpulensHandler):
    @tornado.web.authenticated
    @authorized("read")
    async def post(self) -> None:
        """Findings with their fixes, "Fix all in notebook" and a selection's refactor for the
        notebook's code cells in the body (`gpulens.notebook-actions/1`); nothing is run."""
        body = self.request.body
        if len(body) > MAX_BODY_BYTES:
            raise tornado.web.HTTPError(
                413, f"the request is over {MAX_BODY_BYTES:,} bytes: the notebook is too large"
            )
        loop = asyncio.get_running_loop()
        executor: ThreadPoolExecutor = self.settings["gpulens_analysis_executor"]
        configs: ProjectConfigs = self.settings["gpulens_project_configs"]
        analyzers: NotebookAnalyzers = self.settings["gpulens_notebook_analyzers"]
        try:
            answer = await loop.run_in_executor(executor, answer_request, body, configs, analyzers)
        except RequestError as error:
            raise tornado.web.HTTPError(400, str(error)) from None
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(answer))


def _contents_root(serverapp: Any) -> str | None:
    """The folder notebooks' paths are relative to; None for contents not kept in files."""
    root = getattr(getattr(serverapp, "contents_manager", None), "root_dir", None)
    if not isinstance(root, str):
        root = getattr(serverapp, "root_dir", None)
    return root if isinstance(root, str) and os.path.isdir(root) else None


def setup_handlers(serverapp: Any) -> None:
    web_app = serverapp.web_app
    # One source per server: NVML initialised once, frameworks probed once and cached.
    source = StatusSource(probes=FrameworkProbeCache(kernel_python(serverapp)))
    web_app.settings["gpulens_source"] = source
    web_app.settings["gpulens_doctor"] = DoctorReports(lambda smoke: run_doctor(source, smoke))
    web_app.settings["gpulens_analysis_executor"] = ThreadPoolExecutor(
        max_workers=1, thread_name_prefix="gpulens-analyze"
    )
    web_app.settings["gpulens_project_configs"] = ProjectConfigs(_contents_root(serverapp))
    # used on the analysis thread alone, like the configs
    web_app.settings["gpulens_notebook_analyzers"] = NotebookAnalyzers()
    base = web_app.settings["base_url"]
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "gpulens", "status"), StatusHandler),
            (url_path_join(base, "gpulens", "doctor"), DoctorHandler),
            (url_path_join(base, "gpulens", "analyze"), AnalyzeHandler),
        ],
    )
