"""What the lab UI tests share: build the extension if stale, find Chromium, start `jupyter lab`.

Everything a fresh machine lacks is set up here: `npm ci` and the build when the sources are
newer than the built extension, Debian's Chromium through apt when /usr/bin/chromium is missing.
No browser is ever downloaded by Playwright.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "labextension"))
from build_hook import ensure_built  # noqa: E402

JUPYTERLAB_LSP = "jupyterlab-lsp==5.3.0"
SHIPPED_SERVER_CONFIG = REPO / "jupyter-config" / "jupyter_server_config.d" / "gpulens.json"
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def ensure_lab_build() -> Path:
    """The built extension, built first when missing or older than its sources."""
    return ensure_built()


def ensure_chromium() -> str:
    """Debian's Chromium; installed with apt-get when missing (never a downloaded browser)."""
    if not Path(CHROMIUM).exists():
        apt = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
        if os.geteuid() != 0:
            apt.insert(0, "sudo")
        if subprocess.run(apt, check=False).returncode != 0:
            subprocess.run([*apt[: apt.index("install")], "update"], check=True)
            subprocess.run(apt, check=True)
    return CHROMIUM


def ensure_jupyterlab_lsp() -> Path:
    """The `share/jupyter` folder of jupyterlab-lsp's prebuilt lab extension, installed once
    with pip into .cache/ (not into the environment: the other lab tests run without it)."""
    target = REPO / ".cache" / "jupyterlab-lsp" / JUPYTERLAB_LSP.split("==")[1]
    share = target / "share" / "jupyter"
    if not (share / "labextensions" / "@jupyter-lsp" / "jupyterlab-lsp").is_dir():
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        subprocess.run([*pip, "--target", str(target), JUPYTERLAB_LSP], check=True)
    return share


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path

    def page_url(self, path: str = "lab") -> str:
        return f"{self.url}/{path}?token={self.token}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def write_notebook(path: Path, cells: list[str | dict[str, Any]]) -> Path:
    """A notebook of code cells (strings) or full cell dicts, with a python3 kernelspec."""
    nb_cells = []
    for number, given in enumerate(cells):
        cell = (
            {"cell_type": "code", "source": given, "outputs": [], "execution_count": None}
            if isinstance(given, str)
            else given
        )
        nb_cells.append({"id": f"cell-{number}", "metadata": {}, **cell})
    notebook = {
        "cells": nb_cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1))
    return path


@contextmanager
def running_lab(
    python: Path,
    home: Path,
    *,
    labextension: Path | None,
    env_path: str | None = None,
    data_paths: tuple[Path, ...] = (),
) -> Iterator[Lab]:
    """`jupyter lab` of `python` on 127.0.0.1 with a token, its state under `home`.

    `labextension`: a built extension to link into the lab's data dir (the development
    checkout); None uses what the environment has installed (a wheel's shared data).
    `data_paths`: more `share/jupyter` folders whose lab extensions the lab loads too.
    """
    config = home / "config"
    data = home / "data"
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    (data / "labextensions").mkdir(parents=True, exist_ok=True)
    if labextension is not None:
        (config / "jupyter_server_config.d").mkdir(exist_ok=True)
        shutil.copy(SHIPPED_SERVER_CONFIG, config / "jupyter_server_config.d" / "gpulens.json")
        (data / "labextensions" / "gpulens").symlink_to(labextension, target_is_directory=True)
    # no news or update toasts over what the tests look at
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    root = home / "root"
    root.mkdir(exist_ok=True)
    port, token = free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_DATA_DIR=str(data),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    if labextension is not None:
        # inside a virtualenv Jupyter prefers the env's own share/jupyter, where an earlier
        # install may have left an older build: the build under test must win
        env["JUPYTER_PREFER_ENV_PATH"] = "0"
    if labextension is None:  # only what the environment itself enables
        env["JUPYTER_CONFIG_PATH"] = str(config)
    if env_path is not None:
        env["PATH"] = env_path
    if data_paths:
        env["JUPYTER_PATH"] = os.pathsep.join(str(path) for path in data_paths)
    log = home / "lab.log"
    command = [
        str(python),
        "-m",
        "jupyterlab",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--port-retries=0",
        "--no-browser",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True",
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]
    with log.open("w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    lab = Lab(url, token, root, log)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab did not start:\n{lab.log_text()}")
            time.sleep(0.25)
        yield lab
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# -- driving a notebook in the page (Playwright's sync API) ------------------------------------
def open_notebook(page: Any, lab: Lab, name: str) -> None:
    """Opens `name` (under the lab's root) in a workspace of its own, with its kernel idle."""
    # a workspace of its own, so that no tab of an earlier test comes back
    page.goto(lab.page_url(f"lab/workspaces/{Path(name).stem}/tree/{name}"))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
    page.wait_for_function(
        """() => {
          const panel = window.jupyterapp.shell.currentWidget;
          const kernel = panel && panel.sessionContext && panel.sessionContext.session
            && panel.sessionContext.session.kernel;
          return kernel && kernel.status === 'idle';
        }""",
        timeout=90_000,
    )


def notebook_cell(page: Any, index: int) -> Any:
    """The locator of the visible notebook's cell `index`."""
    return page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(index)


def cell_sources(page: Any) -> list[str]:
    """Every cell's source, as the notebook's shared model holds it."""
    return page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.content.widgets"
        ".map(cell => cell.model.sharedModel.getSource())"
    )


def editor_selection(page: Any, index: int) -> tuple[int, int]:
    """The main selection of cell `index`'s editor, as CodeMirror offsets (UTF-16)."""
    return tuple(
        page.evaluate(
            """i => {
              const view = window.jupyterapp.shell.currentWidget.content.widgets[i].editor.editor;
              const main = view.state.selection.main;
              return [main.from, main.to];
            }""",
            index,
        )
    )
