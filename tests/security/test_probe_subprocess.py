"""What a probe or smoke-test script sees when gpulens runs it in the user's interpreter.

`run_script` is the one door the framework probes and the GPU smoke test go through (the smoke
test needs a GPU to run at all, so its safety is proven here, at that door): its working
directory is fresh, empty and private, gone afterwards, and not on `sys.path`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from security_helpers import plant, ran

from gpulens.device.frameworks import run_script

REPORT = """
import json, os, stat, sys
here = os.getcwd()
print(json.dumps({
    "cwd": here,
    "entries": os.listdir(here),
    "mode": stat.S_IMODE(os.stat(here).st_mode),
    "path": sys.path,
    "json": json.__file__,
}))
"""


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process's temp dir, holding planted modules; returns the markers' folder."""
    import tempfile

    temp_dir, markers = tmp_path / "shared-tmp", tmp_path / "markers"
    plant(temp_dir, markers)
    monkeypatch.setenv("TMPDIR", str(temp_dir))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    assert tempfile.gettempdir() == str(temp_dir)
    return markers


def test_a_probe_script_runs_in_a_fresh_private_directory_off_its_path(
    shared_tmp: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the caller's own working directory is a planted project too
    project = tmp_path / "project"
    plant(project, shared_tmp)
    monkeypatch.chdir(project)
    done = run_script(sys.executable, REPORT, "torch", timeout_s=60, env=os.environ)
    assert ran(shared_tmp) == []
    seen = json.loads(done.stdout)
    assert seen["entries"] == []
    assert seen["mode"] == 0o700
    assert Path(seen["cwd"]).parent == Path(os.environ["TMPDIR"])
    assert not Path(seen["cwd"]).exists(), "the probe's directory is removed afterwards"
    assert "" not in seen["path"] and seen["cwd"] not in seen["path"]
    assert str(project) not in seen["path"]
    assert not seen["json"].startswith(str(tmp_path))  # the standard library's
