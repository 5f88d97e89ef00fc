"""`gpulens profile --nproc-per-node 2` for real, on CPUs: torch's launcher, the gloo backend,
the host capture backend. What the ranks do is known from each script's source.

These need torch in the interpreter that runs the ranks (the launcher is torch's own); the
dev extras do not install it, so without torch they are skipped, saying so. The test of the
message for an interpreter without torch runs everywhere.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(
    not HAS_TORCH,
    reason="needs torch (pip install 'gpulens[torch]'): the ranks are launched by "
    "torch.distributed.run; tests/unit/profiler/test_ranks_recorded.py covers the merge",
)
pytestmark = [
    pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX process groups"),
    pytest.mark.timeout(180),
]

SERVER = str(Path(__file__).resolve().parents[2] / "server")
PREAMBLE = """
import os
import time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.ones(1000)
"""


def script(tmp_path: Path, body: str) -> tuple[Path, str]:
    source = PREAMBLE.lstrip("\n") + textwrap.dedent(body).lstrip("\n")
    path = tmp_path / "job.py"
    path.write_text(source, encoding="utf-8")
    return path, source


def line_of(source: str, marker: str) -> int:
    return next(i for i, text in enumerate(source.splitlines(), 1) if marker in text)


def start(path: Path, tmp: Path, *extra: str, python: str | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SERVER, "TMPDIR": str(tmp)}
    command = [sys.executable, "-m", "gpulens", "profile", "--nproc-per-node", "2", str(path)]
    command += ["--format", "json", *extra]
    if python:
        command += ["--python", python]
    return subprocess.Popen(
        command, cwd=path.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    out, err = process.communicate(timeout=150)
    return process.returncode, json.loads(out), err


def left_behind(tmp: Path) -> list[str]:
    """Processes whose command line names the run's temporary folder (the ranks do)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if str(tmp).encode() in command:
                found.append(command.decode(errors="replace"))
    return found


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


@needs_torch
def test_the_sleeping_rank_is_named_and_nothing_is_left(tmp_path: Path, tmp: Path) -> None:
    path, source = script(
        tmp_path,
        """
        for step in range(5):
            if rank == 1:
                time.sleep(0.05)  # slow
            dist.all_reduce(x)
        print("sum", float(x[0]))
        """,
    )
    status, payload, err = finish(start(path, tmp))
    assert status == 0, err
    assert payload["ranks"]["reported"] == [0, 1] and payload["error"] is None
    lines = {line["line"]: line for line in payload["lines"]}
    slow = lines[line_of(source, "# slow")]
    assert {f["rank"]: f["hits"] for f in slow["ranks"]} == {0: 0, 1: 5}
    assert any(h["message"].startswith("rank 1 is the straggler") for h in slow["hints"])
    assert "sum 32.0" in payload["output"]  # both ranks ran the all-reduces: 2**5
    assert os.listdir(tmp) == []  # neither our folder nor torch's logs
    assert sorted(os.listdir(path.parent)) == ["job.py", "tmp"]  # nothing in the user's folder


@needs_torch
def test_a_rank_that_raises_is_named_with_the_other_ranks_lines(tmp_path: Path, tmp: Path) -> None:
    path, source = script(
        tmp_path,
        """
        if rank == 1:
            1 / 0  # boom
        for step in range(600):
            time.sleep(0.1)  # waits
        """,
    )
    status, payload, err = finish(start(path, tmp))
    assert status == 1, err
    error = payload["error"]
    assert (error["type"], error["line"], error["rank"]) == (
        "ZeroDivisionError",
        line_of(source, "# boom"),
        1,
    )
    assert "on rank 1" in payload["display"]["message"]
    waits = next(line for line in payload["lines"] if line["line"] == line_of(source, "# waits"))
    assert {f["rank"]: f["hits"] > 0 for f in waits["ranks"]} == {0: True, 1: False}
    assert payload["ranks"]["reported"] == [0, 1]  # rank 0 was stopped, and still reported
    assert os.listdir(tmp) == []


@needs_torch
def test_a_rank_killed_outright_is_named_with_the_signal(tmp_path: Path, tmp: Path) -> None:
    path, _ = script(
        tmp_path,
        """
        if rank == 1:
            os.kill(os.getpid(), 9)  # killed
        for step in range(600):
            time.sleep(0.1)
        """,
    )
    status, payload, err = finish(start(path, tmp))
    assert status == 1, err
    assert payload["ranks"]["failed"] == [{"rank": 1, "message": "it was killed by signal SIGKILL"}]
    assert payload["ranks"]["reported"] == [0]
    assert "rank 1 sent no profile: it was killed by signal SIGKILL" in payload["display"]["notes"]
    assert os.listdir(tmp) == []


@needs_torch
def test_ctrl_c_stops_every_rank_and_reports_the_lines_that_ran(tmp_path: Path, tmp: Path) -> None:
    path, source = script(
        tmp_path,
        """
        print("ready", rank, flush=True)
        for step in range(6000):
            time.sleep(0.01)  # loop
        """,
    )
    process = start(path, tmp)
    try:
        deadline = time.monotonic() + 90
        while not any(name.startswith("gpulens-ranks-") for name in os.listdir(tmp)):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        while len([c for c in left_behind(tmp) if "--rank-job" in c]) < 2:
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        time.sleep(3)  # the ranks are in their loop by now
        process.send_signal(signal.SIGINT)
        status, payload, _ = finish(process)
    finally:
        process.kill()
    assert status == 128 + signal.SIGINT
    assert payload["error"]["type"] == "Interrupted"
    loop = next(line for line in payload["lines"] if line["line"] == line_of(source, "# loop"))
    assert all(f["hits"] > 0 for f in loop["ranks"])
    assert left_behind(tmp) == []
    assert os.listdir(tmp) == []


def test_an_interpreter_without_torch_is_told_so(tmp_path: Path, tmp: Path) -> None:
    candidates = [sys.executable, getattr(sys, "_base_executable", sys.executable)]
    python = next(
        (
            p
            for p in candidates
            if subprocess.run(
                [p, "-c", "import torch"], capture_output=True, check=False
            ).returncode
        ),
        None,
    )
    if python is None:
        pytest.skip("every interpreter here has torch")
    path, _ = script(tmp_path, "")
    status, payload, _ = finish(start(path, tmp, python=python))
    assert status == 1
    assert payload["error"]["type"] == "InterpreterError"
    assert "install torch in that interpreter" in payload["error"]["message"]
    assert os.listdir(tmp) == []
