"""A neighbour's modules in the shared temp dir never run in gpulens' processes.

On a shared GPU machine any user can write `/tmp/json.py` or `/tmp/numba.py`. The framework
probes (`gpulens status`, `gpulens doctor`, the language server's status) must not import
them. The tests give each process a private TMPDIR holding the planted modules, so the real
/tmp is left alone; the first test proves Python really takes that TMPDIR as its temp dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from security_helpers import (
    GPULENS,
    frameworks_probed,
    language_server,
    plant,
    ran,
)


@pytest.fixture
def shared_tmp(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose temp dir holds planted modules, and the folder of their markers."""
    temp_dir, markers = tmp_path / "shared-tmp", tmp_path / "markers"
    plant(temp_dir, markers)
    return dict(os.environ, TMPDIR=str(temp_dir)), markers


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working directory with nothing in it, so only the temp dir is under test."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def test_python_takes_the_private_tmpdir_as_its_temp_dir(
    shared_tmp: tuple[dict[str, str], Path], elsewhere: Path
) -> None:
    env, _ = shared_tmp
    done = subprocess.run(
        [sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
        env=env,
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == env["TMPDIR"]


@pytest.mark.parametrize(
    "command",
    [["status", "--json"], ["doctor", "--json"]],
    ids=["status", "doctor"],
)
def test_cli_probes_run_nothing_from_the_temp_dir(
    shared_tmp: tuple[dict[str, str], Path], elsewhere: Path, command: list[str]
) -> None:
    env, markers = shared_tmp
    done = subprocess.run(
        [GPULENS, *command],
        env=env,
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran(markers) == []
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    status = report.get("status", report)
    assert status["frameworks_state"] == "ready"


async def test_language_server_probes_run_nothing_from_the_temp_dir(
    shared_tmp: tuple[dict[str, str], Path], elsewhere: Path
) -> None:
    env, markers = shared_tmp
    argv = [GPULENS, "serve"]
    async with language_server(argv, cwd=elsewhere, workspace=elsewhere, env=env) as client:
        await frameworks_probed(client)
    assert ran(markers) == []
