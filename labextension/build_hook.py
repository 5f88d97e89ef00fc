"""Builds the JupyterLab extension into server/gpulens/labextension when its sources changed.

Called by hatch-jupyter-builder when a wheel is built (`build-function =
"labextension.build_hook.build_labextension"`), by `make lab-build`, and by the lab UI tests.
Editable installs (`pip install -e`) skip it, so they need no Node; `make lab-build` (or the
lab tests) builds on demand. `npm install` runs only when the lock file is newer than node_modules.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

LABEXT = Path(__file__).resolve().parent
BUILT = LABEXT.parent / "server" / "gpulens" / "labextension"
# inputs of the build: a change to any of them makes the built extension stale
BUILD_INPUTS = (
    "src",
    "schema",
    "style",
    "package.json",
    "package-lock.json",
    "build-labextension.cjs",
    "tsconfig.json",
)

log = logging.getLogger("gpulens.labextension")


def _newest_mtime(paths: list[Path]) -> float:
    newest = 0.0
    for path in paths:
        for file in path.rglob("*") if path.is_dir() else [path]:
            if file.is_file():
                newest = max(newest, file.stat().st_mtime)
    return newest


def is_stale() -> bool:
    stamp = BUILT / "package.json"
    inputs = [LABEXT / name for name in BUILD_INPUTS]
    return not stamp.exists() or stamp.stat().st_mtime < _newest_mtime(inputs)


def ensure_built(force: bool = False) -> Path:
    """The built extension, built first when missing, stale, or `force`."""
    if not force and not is_stale():
        return BUILT
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(
            "building the gpulens JupyterLab extension needs Node >= 20.19 and npm on PATH"
        )
    installed = LABEXT / "node_modules" / ".package-lock.json"
    lock = LABEXT / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        # a package of its own, not hoisted into the repository's npm workspace; `install`,
        # not `ci`: the lock lacks the optional native builds a registry mirror may not carry
        subprocess.run(
            [npm, "install", "--workspaces=false", "--no-audit", "--no-fund"],
            cwd=LABEXT,
            check=True,
        )
    subprocess.run([npm, "run", "build:prod"], cwd=LABEXT, check=True)
    (BUILT / "package.json").touch()
    return BUILT


def build_labextension(target_name: str, version: str, **_: object) -> None:
    """hatch-jupyter-builder's build function."""
    if version == "editable":
        log.info("editable install: the lab extension is built by `make lab-build`, not here")
        return
    if target_name == "wheel":
        ensure_built()


if __name__ == "__main__":
    import sys

    print(ensure_built(force="--force" in sys.argv))
