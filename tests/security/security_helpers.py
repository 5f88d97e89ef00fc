"""Planted modules and interpreters that leave a marker file when they run, and a real client.

A planted module is what a hostile neighbour (a file in the shared temp dir) or a hostile
repository (a file in the workspace) can put where Python might import it from. Each one
creates ``markers/<name>`` when imported, so a test proves that nothing ran by finding that
folder empty after the real CLI, server or Jupyter route did its work.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

# What the probes, the smoke test, the CLI and the server import after start-up: a planted
# copy of any of them would run in place of the real one.
MODULES = ("json", "argparse", "numba", "torch", "cupy", "jax", "tensorflow")
PACKAGES = ("lsprotocol", "pygls")
# Imported by runpy before any code of a `python -m` module runs: only -P keeps it out.
RUNPY_IMPORTS = ("contextlib",)

# the console script, as an editor's terminal or a pre-commit hook runs it
GPULENS = str(Path(sys.executable).with_name("gpulens"))
STATUS_METHOD = "gpulens/status"
TIMEOUT_S = 60.0


def plant(folder: Path, markers: Path, names: Iterable[str] = (*MODULES, *PACKAGES)) -> None:
    """Modules in ``folder`` that each create ``markers/<name>`` when imported."""
    folder.mkdir(parents=True, exist_ok=True)
    markers.mkdir(parents=True, exist_ok=True)
    for name in names:
        code = f"open({str(markers / name)!r}, 'a').close()\n"
        if name in PACKAGES:
            (folder / name).mkdir(exist_ok=True)
            (folder / name / "__init__.py").write_text(code)
        else:
            (folder / f"{name}.py").write_text(code)


def ran(markers: Path) -> list[str]:
    """The planted modules (or interpreters) that ran."""
    return sorted(os.listdir(markers)) if markers.exists() else []


def marker_interpreter(path: Path, marker: Path) -> Path:
    """An interpreter that records each run in ``marker``, then runs the real one."""
    path.write_text(f'#!/bin/sh\necho ran >> "{marker}"\nexec "{sys.executable}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def runs_of(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


# --- a real LSP client ----------------------------------------------------------------------------


class StatusClient(LanguageClient):
    statuses: list[dict[str, Any]]


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def make_client() -> StatusClient:
    client = make_test_lsp_client()
    client.__class__ = StatusClient
    client.statuses = []

    @client.feature(STATUS_METHOD)
    def on_status(params: Any) -> None:
        client.statuses.append(_plain(params))

    return client  # type: ignore[return-value]


@asynccontextmanager
async def language_server(
    argv: list[str],
    *,
    cwd: Path,
    workspace: Path,
    env: Mapping[str, str] | None = None,
    options: Any = None,
    settings: dict[str, Any] | None = None,
) -> AsyncIterator[StatusClient]:
    """A server started by ``argv`` in ``cwd``, initialized as VS Code would, with ``settings``
    as its `gpulens` section (answered to `workspace/configuration` too)."""
    client = make_client()
    client.set_configuration(settings or {}, section="gpulens")
    await client.start_io(*argv, cwd=str(cwd), env=dict(env or os.environ))
    try:
        await asyncio.wait_for(
            client.initialize_session(
                types.InitializeParams(
                    capabilities=client_capabilities("visual-studio-code"),
                    root_uri=workspace.as_uri(),
                    workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
                    initialization_options=options,
                )
            ),
            TIMEOUT_S,
        )
        yield client
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT_S)
    finally:
        await client.stop()


async def frameworks_probed(client: StatusClient) -> dict[str, Any]:
    """The first status notification whose framework probes have answered."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        for payload in client.statuses:
            if payload.get("frameworks_state") == "ready":
                return payload
        await asyncio.sleep(0.05)
    raise AssertionError(f"no status with probed frameworks within {TIMEOUT_S} s")
