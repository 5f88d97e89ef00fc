"""Awkward input to every subcommand: a one-line error, exit status 2, never a traceback.

Each case runs the real CLI (`python -m gpulens ...`) in a subprocess on a folder of awkward
entries: missing paths, symbolic link loops, broken links, FIFOs and sockets, unreadable
files and folders, files that are not UTF-8, notebooks that are not notebooks, and bad
options of every subcommand.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# GPU001 with a safe fix: what `--fix` has to write
LOOP_SYNC = """\
import torch
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
"""
CELLS = "import os\n# %%\nx = 1\n# %%\ny = x + 1\n"
LATIN1_DECLARED = "# -*- coding: latin-1 -*-\nname = 'café'\n"


def _without_file_permission_override() -> None:
    """In the child, before exec: root reads every file whatever its mode; drop the two
    capabilities that let it, so that an unreadable file is unreadable for the CLI too."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for capability in (cap_dac_override, cap_dac_read_search):
        libc.prctl(pr_capbset_drop, capability, 0, 0, 0)


def gpulens(
    *args: str, cwd: Path, stdin: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    run = subprocess.run(
        [sys.executable, "-m", "gpulens", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
        preexec_fn=_without_file_permission_override,
    )
    return subprocess.CompletedProcess(
        run.args, run.returncode, run.stdout.decode(errors="replace"), run.stderr.decode()
    )


def make_awkward_folder(root: Path) -> None:
    """Every kind of entry a tree walk can meet, beside files that are fine."""
    (root / "ok.py").write_text("import torch\n")
    (root / "sync.py").write_text(LOOP_SYNC)
    (root / "cells.py").write_text(CELLS)
    (root / "empty.py").write_text("")
    (root / "binary.py").write_bytes(b"\x7fELF\x02\x01\x00\xff\xfe\x00" * 20)
    (root / "latin1.py").write_bytes("name = 'café'\n".encode("latin-1"))
    (root / "latin1_declared.py").write_bytes(LATIN1_DECLARED.encode("latin-1"))
    (root / "bogus_cookie.py").write_text("# -*- coding: klingon -*-\nx = 1\n")
    (root / "nul.py").write_bytes(b"x = 1\x00\n")
    (root / "syntax_error.py").write_text("def f(:\n    pass\n")
    (root / "folder.py").mkdir()
    (root / "folder.py" / "inner.py").write_text("x = 1\n")
    os.mkfifo(root / "fifo.py")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "socket.py"))
    (root / "broken_link.py").symlink_to(root / "nowhere.py")
    (root / "loop.py").symlink_to(root / "loop.py")
    (root / "unreadable.py").write_text("x = 1\n")
    (root / "unreadable.py").chmod(0)
    (root / "locked").mkdir()
    (root / "locked" / "inside.py").write_text("x = 1\n")
    (root / "locked").chmod(0)
    (root / "readonly.py").write_text(LOOP_SYNC)
    (root / "readonly.py").chmod(0o444)
    (root / "not_json.ipynb").write_text("{")
    (root / "list.ipynb").write_text("[]")
    (root / "cells_not_dicts.ipynb").write_text(json.dumps({"cells": [1, "x"]}))
    (root / "source_number.ipynb").write_text(
        json.dumps({"cells": [{"cell_type": "code", "source": 5}]})
    )
    (root / "deep.ipynb").write_text("[" * 100_000)
    (root / "not_utf8.ipynb").write_bytes(b'{"cells": ["\xff"]}')
    (root / ".gitignore").write_text("[z-a]\n*.pyc\n")  # a typo must not stop the walk
    (root / "script").write_text("print('no suffix')\n")
    (root / "script").chmod(0o644)


@pytest.fixture(scope="module")
def awkward(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("awkward")
    make_awkward_folder(root)
    yield root
    for folder in (root / "locked",):
        folder.chmod(0o755)


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    status: int = 2  # usage or I/O error
    says: str = ""  # a word the one line must hold
    env: tuple[tuple[str, str], ...] = ()
    stdin: bytes = b""


LONG = "long" * 80 + ".py"

CASES = {
    # ---- check: named paths that cannot be read ------------------------------------------
    "check a missing file": Case(("check", "missing.py"), says="no such file"),
    "check a path through a file": Case(("check", "ok.py/inner.py"), says="no such file"),
    "check a name too long": Case(("check", LONG), says="too long"),
    "check a FIFO": Case(("check", "fifo.py"), says="FIFO"),
    "check a socket": Case(("check", "socket.py"), says="socket"),
    "check a broken link": Case(("check", "broken_link.py"), says="nowhere.py"),
    "check a link loop": Case(("check", "loop.py"), says="loop"),
    "check an unreadable file": Case(("check", "unreadable.py"), says="Permission denied"),
    "check an unreadable folder": Case(("check", "locked"), says="Permission denied"),
    "check a binary file": Case(("check", "binary.py"), says="UTF-8"),
    "check latin-1 without a coding comment": Case(("check", "latin1.py"), says="coding"),
    "check an unknown coding": Case(("check", "bogus_cookie.py"), says="klingon"),
    "check a notebook that is not JSON": Case(("check", "not_json.ipynb"), says="JSON"),
    "check a notebook that is a list": Case(("check", "list.ipynb"), says="cells"),
    "check a notebook of numbers": Case(("check", "cells_not_dicts.ipynb"), says="cell 1"),
    "check a cell source that is a number": Case(("check", "source_number.ipynb"), says="cell 1"),
    "check a notebook nested too deep": Case(("check", "deep.ipynb"), says="deep.ipynb"),
    "check a notebook not UTF-8": Case(("check", "not_utf8.ipynb"), says="UTF-8"),
    "check a read-only file with --fix": Case(("check", "--fix", "readonly.py"), says="read-only"),
    # ---- check: files that are fine, however odd ------------------------------------------
    "check an empty file": Case(("check", "empty.py"), status=0),
    "check latin-1 with a coding comment": Case(("check", "latin1_declared.py"), status=0),
    "check a file with a NUL byte": Case(("check", "nul.py"), status=0, says="null"),
    "check a file with a syntax error": Case(("check", "syntax_error.py"), status=0, says="syntax"),
    "check a folder named x.py": Case(("check", "folder.py"), status=0),
    "check a file without suffix": Case(("check", "script"), status=0),
    # ---- check: options ----------------------------------------------------------------------
    "check --select of no rule": Case(("check", "--select", "NOPE", "ok.py"), says="NOPE"),
    "check --ignore of no rule": Case(("check", "--ignore", "GPU9", "ok.py"), says="GPU9"),
    "check --explain of no rule": Case(("check", "--explain", "GPU999"), says="GPU999"),
    "check --format bogus": Case(("check", "--format", "bogus", "ok.py"), says="bogus"),
    "check --bogus": Case(("check", "--bogus"), says="--bogus"),
    "check stdin with other paths": Case(("check", "-", "ok.py"), says="stdin"),
    "check stdin that is not UTF-8": Case(
        ("check", "--stdin-filename", "x.py"), stdin=b"\xff\xfe\x00", says="UTF-8"
    ),
    "check --exclude of a bad pattern": Case(("check", "--exclude", "[z-a]", "ok.py"), says="z-a"),
    # ---- status ------------------------------------------------------------------------------
    "status --watch -1": Case(("status", "--watch", "-1"), says="--watch"),
    "status --watch 0": Case(("status", "--watch", "0"), says="--watch"),
    "status --watch nan": Case(("status", "--watch", "nan"), says="--watch"),
    "status --watch inf": Case(("status", "--watch", "inf"), says="--watch"),
    "status --watch abc": Case(("status", "--watch", "abc"), says="abc"),
    "status --python missing": Case(("status", "--python", "/nowhere/python"), says="/nowhere"),
    "status --python not executable": Case(("status", "--python", "ok.py"), says="ok.py"),
    "status --bogus": Case(("status", "--bogus"), says="--bogus"),
    # ---- doctor ------------------------------------------------------------------------------
    "doctor --python missing": Case(("doctor", "--python", "/nowhere/python"), says="/nowhere"),
    "doctor --python empty": Case(("doctor", "--python", ""), says="--python"),
    "doctor --bogus": Case(("doctor", "--bogus"), says="--bogus"),
    # ---- profile -----------------------------------------------------------------------------
    "profile a missing file": Case(("profile", "missing.py"), says="no such file"),
    "profile a folder": Case(("profile", "folder.py"), says="folder"),
    "profile a FIFO": Case(("profile", "fifo.py"), says="FIFO"),
    "profile a broken link": Case(("profile", "broken_link.py"), says="nowhere.py"),
    "profile a link loop": Case(("profile", "loop.py"), says="loop"),
    "profile an unreadable file": Case(("profile", "unreadable.py"), says="Permission denied"),
    "profile a binary file": Case(("profile", "binary.py"), says="UTF-8"),
    "profile latin-1 without a coding comment": Case(("profile", "latin1.py"), says="coding"),
    "profile a notebook": Case(("profile", "not_json.ipynb"), says="%%gpulens"),
    "profile --cell -1": Case(("profile", "cells.py", "--cell", "-1"), says="--cell"),
    "profile --cell 99": Case(("profile", "cells.py", "--cell", "99"), says="99"),
    "profile --cell abc": Case(("profile", "cells.py", "--cell", "abc"), says="abc"),
    "profile --line -3": Case(("profile", "cells.py", "--line", "-3"), says="--line"),
    "profile --line 0": Case(("profile", "cells.py", "--line", "0"), says="--line"),
    "profile --line 99": Case(("profile", "cells.py", "--line", "99"), says="99"),
    "profile --cell and --line": Case(("profile", "cells.py", "--cell", "1", "--line", "2")),
    "profile --timeout -5": Case(("profile", "ok.py", "--timeout", "-5"), says="--timeout"),
    "profile --timeout 0": Case(("profile", "ok.py", "--timeout", "0"), says="--timeout"),
    "profile --timeout nan": Case(("profile", "ok.py", "--timeout", "nan"), says="--timeout"),
    "profile --timeout inf": Case(("profile", "ok.py", "--timeout", "inf"), says="--timeout"),
    "profile --format bogus": Case(("profile", "ok.py", "--format", "bogus"), says="bogus"),
    "profile --backend bogus": Case(("profile", "ok.py", "--backend", "bogus"), says="bogus"),
    "profile -o into a missing folder": Case(
        ("profile", "ok.py", "-o", "missing/out.json"), says="missing"
    ),
    "profile -o onto a folder": Case(("profile", "ok.py", "-o", "folder.py"), says="folder.py"),
    "profile --python missing": Case(
        ("profile", "ok.py", "--python", "/nowhere/python"), says="/nowhere"
    ),
    "profile an option after FILE": Case(("profile", "ok.py", "--bogus"), says="--bogus"),
    # ---- profile: files that are fine --------------------------------------------------------
    "profile an empty file": Case(("profile", "empty.py"), status=0),
    "profile latin-1 with a coding comment": Case(("profile", "latin1_declared.py"), status=0),
    "profile cell 0, the preamble": Case(("profile", "cells.py", "--cell", "0"), status=0),
    # ---- serve and the command itself --------------------------------------------------------
    "serve --tcp": Case(("serve", "--tcp", "localhost:2087"), says="not supported"),
    "serve --log-level bogus": Case(("serve", "--log-level", "bogus"), says="bogus"),
    "serve with a bogus GPULENS_LOG_LEVEL": Case(
        ("serve",), env=(("GPULENS_LOG_LEVEL", "chatty"),), says="GPULENS_LOG_LEVEL"
    ),
    "an unknown command": Case(("frobnicate",), says="frobnicate"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_awkward_input_gets_one_line_and_no_traceback(case: Case, awkward: Path) -> None:
    result = gpulens(*case.args, cwd=awkward, stdin=case.stdin, env=dict(case.env))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == case.status, result.stderr
    lines = result.stderr.strip().splitlines()
    if case.status == 2 or case.says:
        assert len(lines) == 1, result.stderr
        assert case.says in lines[0], lines[0]
    if case.status == 2:
        # a closing line that says all is well would contradict the error
        assert "All checks passed" not in result.stdout


def test_bare_command_prints_its_help_and_exits_2(tmp_path: Path) -> None:
    result = gpulens(cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "check" in result.stderr and "profile" in result.stderr


def test_a_tree_walk_reports_each_unreadable_entry_once_and_checks_the_rest(
    awkward: Path,
) -> None:
    result = gpulens("check", "--format", "json", ".", cwd=awkward)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    reported = sorted(line.split(":", 2)[1].strip() for line in errors)
    assert reported == sorted(
        [
            "binary.py",
            "bogus_cookie.py",
            "broken_link.py",
            "cells_not_dicts.ipynb",
            "deep.ipynb",
            "fifo.py",
            "latin1.py",
            "list.ipynb",
            "locked",
            "loop.py",
            "not_json.ipynb",
            "not_utf8.ipynb",
            "socket.py",
            "source_number.ipynb",
            "unreadable.py",
        ]
    ), result.stderr
    # the readable files were checked: both copies of the loop have their finding
    paths = {finding["path"] for finding in json.loads(result.stdout)}
    assert paths == {"readonly.py", "sync.py"}


def test_the_help_says_what_exit_status_2_means(tmp_path: Path) -> None:
    result = gpulens("check", "--help", cwd=tmp_path)
    assert "could not be read" in result.stdout


def test_a_deleted_working_folder_is_one_line(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f"cd {gone} && rmdir {gone} && exec {sys.executable} -m gpulens check ."
    result = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_unreadable_entries_are_unreadable_here(awkward: Path) -> None:
    """The permission cases above test what they say: the CLI's process cannot read these."""
    probe = "import sys; open(sys.argv[1]).read()"
    result = subprocess.run(
        [sys.executable, "-c", probe, "unreadable.py"],
        cwd=awkward,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=_without_file_permission_override,
    )
    assert "PermissionError" in result.stderr
    assert stat.S_IMODE((awkward / "unreadable.py").stat().st_mode) == 0
