"""The user's installation: a fresh venv with only `pip install "<wheel>[jupyter]"`, no Node.

The wheel is the one the build backend makes from this checkout (the lab extension built by
the hatch-jupyter-builder hook), cached under .cache/lab-wheel/<hash of the sources>/ with the
venv installed from it, so an unchanged checkout reuses both. `GPULENS_LAB_WHEEL=path` tests a
given wheel instead (e.g. the one `make package` left in dist/).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "labextension" / "ui-tests"))
from lab_harness import (
    ARTIFACTS,
    CHROMIUM_FLAGS,
    REPO,
    Lab,
    ensure_chromium,
    running_lab,
    write_notebook,
)

sync_api = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CACHE = REPO / ".cache" / "lab-wheel"
# what goes into the wheel: a change to any of these makes a new one
WHEEL_INPUTS = [
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "server/gpulens",
    "jupyter-config",
    "labextension/src",
    "labextension/schema",
    "labextension/style",
    "labextension/package.json",
    "labextension/package-lock.json",
    "labextension/build-labextension.cjs",
    "labextension/build_hook.py",
]
LABEXT_IN_WHEEL = "share/jupyter/labextensions/gpulens/package.json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def sources_hash() -> str:
    digest = hashlib.sha256()
    for name in WHEEL_INPUTS:
        path = REPO / name
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for file in files:
            relative = file.relative_to(REPO).as_posix()
            if (
                not file.is_file()
                or "__pycache__" in file.parts
                or relative.startswith("server/gpulens/labextension/")  # build output
            ):
                continue
            digest.update(relative.encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def path_without_node() -> str:
    """PATH with every directory holding `node` or `npm` left out."""
    keep = [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and not (Path(entry, "node").exists() or Path(entry, "npm").exists())
    ]
    return os.pathsep.join(keep)


def prune(folder: Path, keep: set[str]) -> None:
    """Drops the cached builds of older sources: one wheel and one venv are kept."""
    if folder.is_dir():
        for entry in folder.iterdir():
            if entry.name not in keep:
                shutil.rmtree(entry, ignore_errors=True)


def built_wheel() -> Path:
    given = os.environ.get("GPULENS_LAB_WHEEL")
    if given:
        return Path(given).resolve()
    folder = CACHE / sources_hash()
    wheels = sorted(folder.glob("gpulens-*.whl"))
    if wheels:
        return wheels[-1]
    prune(CACHE, keep={folder.name, "venvs"})
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(folder), str(REPO)],
        check=True,
    )
    return sorted(folder.glob("gpulens-*.whl"))[-1]


@pytest.fixture(scope="module")
def wheel() -> Path:
    pytest.importorskip("build")
    return built_wheel()


@pytest.fixture(scope="module")
def venv(wheel: Path) -> Path:
    """A venv with only the wheel and its [jupyter] extra, installed with no Node on PATH."""
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()[:16]
    home = CACHE / "venvs" / digest
    python = home / "bin" / "python"
    stamp = home / ".installed"
    if not stamp.exists():
        prune(home.parent, keep=set())
        subprocess.run([sys.executable, "-m", "venv", str(home)], check=True)
        env = dict(os.environ, PATH=path_without_node(), PIP_DISABLE_PIP_VERSION_CHECK="1")
        env.pop("VIRTUAL_ENV", None)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", f"{wheel}[jupyter]"],
            check=True,
            env=env,
        )
        stamp.touch()
    return python


def test_the_wheel_carries_the_lab_extension_and_the_server_config(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    data = [name.split(".data/data/", 1)[1] for name in names if ".data/data/" in name]
    assert LABEXT_IN_WHEEL in data, f"{wheel.name} has no lab extension: {data}"
    assert any(
        name.startswith("share/jupyter/labextensions/gpulens/static/remoteEntry.") for name in data
    )
    assert "etc/jupyter/jupyter_server_config.d/gpulens.json" in data
    # shipped once, as shared data, not again inside the Python package
    assert not [name for name in names if name.startswith("gpulens/labextension/")]


def jupyter(python: Path, home: Path, *args: str) -> str:
    env = dict(
        os.environ,
        PATH=f"{python.parent}{os.pathsep}{path_without_node()}",
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    env.pop("JUPYTER_PATH", None)
    env.pop("JUPYTER_CONFIG_PATH", None)
    done = subprocess.run(
        [str(python.parent / "jupyter"), *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return ANSI.sub("", done.stdout + done.stderr)


def test_lab_and_server_list_the_extensions_enabled(venv: Path, tmp_path: Path) -> None:
    listed = jupyter(venv, tmp_path, "labextension", "list")
    assert re.search(r"gpulens v\S+\s+enabled\s+OK", listed), listed
    servers = jupyter(venv, tmp_path, "server", "extension", "list")
    assert re.search(r"gpulens\.jupyter\s+enabled", servers), servers
    assert re.search(r"gpulens\.jupyter\s+OK", servers), servers


@pytest.fixture(scope="module")
def lab(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    env_path = f"{venv.parent}{os.pathsep}{path_without_node()}"
    with running_lab(
        venv, tmp_path_factory.mktemp("wheel-lab"), labextension=None, env_path=env_path
    ) as lab:
        yield lab


@pytest.fixture(scope="module")
def page(lab: Lab) -> Iterator[Any]:
    executable = ensure_chromium()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_FLAGS
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.set_default_timeout(60_000)
        yield page
        browser.close()


def test_installed_lab_has_the_status_item_and_the_profile_command(
    venv: Path, page: Any, lab: Lab
) -> None:
    write_notebook(lab.root / "wheel.ipynb", ["n = 0\nfor k in range(40):\n    n += k"])
    page.goto(lab.page_url("lab/workspaces/wheel/tree/wheel.ipynb"))
    page.wait_for_function(
        "() => (document.querySelector('.gpulens-status') || {}).textContent === 'CPU only'"
    )
    page.wait_for_function(
        """() => {
          const panel = window.jupyterapp.shell.currentWidget;
          const kernel = panel && panel.sessionContext && panel.sessionContext.session
            && panel.sessionContext.session.kernel;
          return kernel && kernel.status === 'idle';
        }""",
        timeout=90_000,
    )
    cell = page.locator(".jp-NotebookPanel:visible .jp-Cell").first
    cell.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Alt+Shift+P")
    cost = cell.locator(".gpulens-cost[data-line='3']")
    cost.wait_for()
    # the body of the loop ran 40 times: the host backend's label, in the report's wording
    # (its `label`: "40 hits · 12 µs host")
    label = cost.inner_text()
    assert label.startswith("40 hits · "), label
    assert label.endswith(" host"), label
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "lab-wheel.png"))
    # the lab extension came from the venv's share/, where the wheel put it
    assert (venv.parent.parent / LABEXT_IN_WHEEL).exists()
