"""`gpulens check --fix` writes into the file itself: mode, owner, hard links and symbolic
links stay as they were, and a read-only file is left alone (with one line, exit 2).

Real files and a real `python -m gpulens check --fix` in a subprocess.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

LOOP_SYNC = """\
import torch
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
"""
# the total starts as a Python float: the fix sums in float64, as the float did
FIXED = (
    LOOP_SYNC.replace("(x * i).sum().item()", "(x * i).sum().detach().double()")
    + "total = float(total)  # one sync, after the loop\n"
)
NOBODY = 65534


def fix(*paths: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpulens", "check", "--fix", *paths],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_fixed_text_is_what_the_fix_makes(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(LOOP_SYNC)
    result = fix("a.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "a.py").read_text() == FIXED


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600, 0o664])
def test_the_mode_is_kept(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "train.py"
    path.write_text(LOOP_SYNC)
    path.chmod(mode)
    assert fix("train.py", cwd=tmp_path).returncode == 0
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_the_file_keeps_its_inode_and_owner(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(LOOP_SYNC)
    if os.geteuid() == 0:  # root can give the file away: --fix must not take it back
        os.chown(path, NOBODY, NOBODY)
    before = path.stat()
    assert fix("train.py", cwd=tmp_path).returncode == 0
    after = path.stat()
    assert path.read_text() == FIXED
    assert (after.st_ino, after.st_uid, after.st_gid) == (
        before.st_ino,
        before.st_uid,
        before.st_gid,
    )


def test_a_hard_link_sees_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(LOOP_SYNC)
    other = tmp_path / "elsewhere" / "same.py"
    other.parent.mkdir()
    os.link(path, other)
    assert fix("train.py", cwd=tmp_path).returncode == 0
    assert other.read_text() == FIXED
    assert path.stat().st_nlink == 2


@pytest.mark.parametrize("named", [True, False], ids=["named", "found in a folder"])
def test_a_symbolic_link_stays_a_link_and_its_target_is_fixed(tmp_path: Path, named: bool) -> None:
    real = tmp_path / "shared" / "module.py"
    real.parent.mkdir()
    real.write_text(LOOP_SYNC)
    project = tmp_path / "project"
    project.mkdir()
    link = project / "module.py"
    link.symlink_to(Path("..") / "shared" / "module.py")
    result = fix("module.py" if named else ".", cwd=project)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink()
    assert os.readlink(link) == str(Path("..") / "shared" / "module.py")
    assert real.read_text() == FIXED


def test_a_read_only_file_is_left_alone_and_the_others_are_fixed(tmp_path: Path) -> None:
    locked = tmp_path / "locked.py"
    locked.write_text(LOOP_SYNC)
    locked.chmod(0o444)
    (tmp_path / "open.py").write_text(LOOP_SYNC)
    result = fix(".", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: locked.py: the file is read-only, so its fixes were not written; make it "
        "writable (chmod u+w) to fix it, or leave out --fix"
    ]
    assert locked.read_text() == LOOP_SYNC
    assert stat.S_IMODE(locked.stat().st_mode) == 0o444
    assert (tmp_path / "open.py").read_text() == FIXED
    # the read-only file's finding is still reported, and only the other counts as fixed
    assert "locked.py:5:14: GPU001" in result.stdout
    assert result.stdout.strip().endswith("Found 2 problems (1 fixed, 1 remaining).")


def test_a_read_only_notebook_is_left_alone(tmp_path: Path) -> None:

    notebook = {
        "cells": [{"cell_type": "code", "source": LOOP_SYNC.splitlines(keepends=True)}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook, indent=1) + "\n")
    before = path.read_bytes()
    path.chmod(0o444)
    result = fix("nb.ipynb", cwd=tmp_path)
    assert result.returncode == 2
    assert "nb.ipynb: the file is read-only" in result.stderr
    assert path.read_bytes() == before


def test_crlf_and_a_declared_encoding_are_kept(tmp_path: Path) -> None:
    text = "# -*- coding: latin-1 -*-\n# café\n" + LOOP_SYNC
    path = tmp_path / "old.py"
    path.write_bytes(text.replace("\n", "\r\n").encode("latin-1"))
    assert fix("old.py", cwd=tmp_path).returncode == 0
    expected = "# -*- coding: latin-1 -*-\n# café\n" + FIXED
    assert path.read_bytes() == expected.replace("\n", "\r\n").encode("latin-1")


def test_a_shorter_fixed_text_leaves_no_tail(tmp_path: Path) -> None:
    # GPU007's fix shortens the line: the old text's last bytes must not survive the write
    text = 'import torch\ndevice = torch.device("cuda")\nmodel = Net().to("cuda")\n'
    path = tmp_path / "short.py"
    path.write_text(text)
    assert fix("short.py", cwd=tmp_path).returncode == 0
    assert path.read_text() == text.replace('.to("cuda")', ".to(device)")


def test_a_write_that_fails_part_way_puts_the_old_text_back(tmp_path: Path) -> None:
    # The fixed text is longer than the file, and the process may not grow a file past its
    # current size (RLIMIT_FSIZE): the write stops part way, as on a full disk.
    path = tmp_path / "train.py"
    path.write_text(LOOP_SYNC)
    size = len(LOOP_SYNC.encode())
    assert len(FIXED.encode()) > size

    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error (EFBIG), not a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    result = subprocess.run(
        [sys.executable, "-m", "gpulens", "check", "--fix", "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=limit_file_size,
    )
    assert result.returncode == 2
    assert path.read_text() == LOOP_SYNC
    assert result.stderr.strip().splitlines() == [
        "error: train.py: writing the fixes failed (File too large), so the file was left as "
        "it was; free some disk space or check the disk, then run --fix again"
    ]
