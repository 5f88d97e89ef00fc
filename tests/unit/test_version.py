"""The version is written once, in pyproject.toml: what is installed, `gpulens --version`, the
language server, both editor clients and the changelog say the same.

To release another version, set it in pyproject.toml, then
    npm version X.Y.Z --no-git-tag-version --workspace extension
    npm --prefix labextension version X.Y.Z --no-git-tag-version
and add its section to CHANGELOG.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_the_installed_package_has_the_version_of_pyproject() -> None:
    import gpulens

    # an editable install keeps the metadata of the last `pip install`: `make` reinstalls
    # whenever pyproject.toml changes
    assert installed_version("gpulens") == VERSION
    assert gpulens.__version__ == VERSION


def test_gpulens_version_prints_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gpulens", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == f"gpulens {VERSION}\n"


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("extension/package.json", ()),
        ("labextension/package.json", ()),
        ("package-lock.json", ("packages", "extension")),
        ("labextension/package-lock.json", ()),
        ("labextension/package-lock.json", ("packages", "")),
    ],
)
def test_each_client_has_the_version_of_pyproject(path: str, where: tuple[str, ...]) -> None:
    data = json.loads((REPO / path).read_text())
    for key in where:
        data = data[key]
    assert data["version"] == VERSION, (
        f"{path} says {data['version']}, pyproject.toml {VERSION}: see this test's docstring"
    )


def test_the_changelog_has_a_section_for_it() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert f"## [{VERSION}]" in changelog
