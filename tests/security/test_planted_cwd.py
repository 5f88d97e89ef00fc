"""Modules in the folder gpulens is started in never run: the CLI, the server, jupyter-lsp.

Editors and jupyter-lsp start the language server in the project folder, and a user runs
`python -m gpulens ...` wherever they are; a repository holding `json.py`, `lsprotocol/` or
`numba.py` must not get its code run that way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from security_helpers import (
    MODULES,
    PACKAGES,
    RUNPY_IMPORTS,
    frameworks_probed,
    language_server,
    plant,
    ran,
)

from gpulens.jupyter.lsp_spec import gpulens_spec


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """A folder with planted modules, and the folder of their markers."""
    folder, markers = tmp_path / "project", tmp_path / "markers"
    plant(folder, markers)
    return folder, markers


@pytest.mark.parametrize(
    "command",
    [["status", "--json"], ["doctor", "--json", "--no-smoke"]],
    ids=["status", "doctor"],
)
def test_python_m_gpulens_imports_nothing_from_its_working_directory(
    project: tuple[Path, Path], command: list[str]
) -> None:
    folder, markers = project
    done = subprocess.run(
        [sys.executable, "-m", "gpulens", *command],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran(markers) == []
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(done.stdout)["schema"].startswith("gpulens.")


async def test_server_started_in_a_project_folder_imports_nothing_from_it(
    project: tuple[Path, Path],
) -> None:
    folder, markers = project
    argv = [sys.executable, "-m", "gpulens", "serve"]
    async with language_server(argv, cwd=folder, workspace=folder) as client:
        await frameworks_probed(client)
    assert ran(markers) == []


async def test_jupyter_lsp_starts_the_server_with_a_safe_path(tmp_path: Path) -> None:
    folder, markers = tmp_path / "notebooks", tmp_path / "markers"
    # runpy's own imports too: only a launcher's -P keeps those out
    plant(folder, markers, (*MODULES, *PACKAGES, *RUNPY_IMPORTS))
    spec = gpulens_spec(None)["gpulens"]
    env = {**os.environ, **spec["env"]}
    async with language_server(spec["argv"], cwd=folder, workspace=folder, env=env) as client:
        await frameworks_probed(client)
    assert ran(markers) == []
