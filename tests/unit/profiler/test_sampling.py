"""Sampled lines (`gpulens.profiler.sampling`): a Python-heavy loop's fast lines go quiet
between recorded stretches, and what the profile then says is true: their hits are the runs
recorded (shown with +), their host time is partly estimated (≈), a rarely taken branch
stays recorded whole, and a GPU call made while a line was quiet is counted, never put on a
line it may not belong to.

`sys.monitoring` (Python 3.12+) is what can disable a line's events; the cells run in a
3.12+ interpreter found on this machine (this one, `python3.13`/`python3.12` on PATH, or
pyenv's), with this checkout's `gpulens` on PYTHONPATH (the profiler needs only the
standard library).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SERVER = HERE.parents[2] / "server"
STEPS, EVERY = 1_200_000, 100_000


@cache
def monitoring_python() -> str | None:
    """An interpreter with sys.monitoring: this one, or the first of the others that runs."""
    if sys.version_info >= (3, 12):
        return sys.executable
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [str(v / "bin" / "python") for v in sorted(pyenv.glob("3.1[2-9]*"), reverse=True)]
    candidates += [found for name in ("python3.13", "python3.12") if (found := shutil.which(name))]
    for candidate in candidates:
        probe = [candidate, "-c", "import sys; assert hasattr(sys, 'monitoring')"]
        if subprocess.run(probe, capture_output=True, timeout=60, check=False).returncode == 0:
            return candidate
    return None


def profiled(tmp_path: Path, cell: str, steps: int = STEPS, sample: bool = True) -> Any:
    python = monitoring_python()
    if python is None:
        pytest.skip("no Python 3.12+ on this machine: line sampling needs sys.monitoring")
    done = subprocess.run(
        [python, str(HERE / "sampling_cells.py"), cell, str(steps), "sample" if sample else "-"],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(SERVER)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    result["lines"] = {line["line"]: line for line in result["payload"]["lines"]}
    return result


def test_a_python_heavy_loop_is_sampled_and_says_so(tmp_path: Path) -> None:
    result = profiled(tmp_path, "loop")
    lines, payload = result["lines"], result["payload"]
    assert result["sampled"] == [2, 3, 4] and result["quiet"] >= 1
    assert all(lines[n]["sampled"] for n in (2, 3, 4)) and "sampled" not in lines[5]
    # the runs recorded: the first 65,536 line events whole (3 a run), then stretches
    assert 65_536 // 3 < lines[3]["hits"] < STEPS
    assert lines[3]["label"].endswith("+ hits · ≈" + lines[3]["label"].split("≈")[1])
    assert "hits" in lines[3]["label"] and "+ hits" in lines[3]["label"]
    assert "sampled: this line ran too often" in lines[3]["hover"]
    (note,) = [w for w in payload["warnings"] if "ran too often and too fast" in w]
    assert note.startswith("Lines 2, 3 and 4 ran too often and too fast to record every run")
    assert "past the cell's first 65,536 line events" in note
    assert "GPU call" not in note  # every call was made on the branch, recorded whole


def test_a_rarely_taken_branch_keeps_its_exact_runs_and_calls(tmp_path: Path) -> None:
    result = profiled(tmp_path, "loop")
    lines = result["lines"]
    assert lines[5]["hits"] == STEPS // EVERY and "sampled" not in lines[5]
    # its run ends a quiet stretch, and the loop's lines are recorded again after it: the
    # loop's time is not left on the branch (a dozen launches' worth of host time)
    assert lines[5]["host_s"] * 10 < lines[3]["host_s"]
    assert lines[5]["kernels"]["count"] == result["calls"] == STEPS // EVERY
    assert result["payload"]["unattributed"]["kernels"] == 0


def test_the_same_loop_recorded_whole_has_exact_hits(tmp_path: Path) -> None:
    result = profiled(tmp_path, "loop", sample=False)
    lines = result["lines"]
    assert result["sampled"] == [] and result["quiet"] == 0
    assert lines[2]["hits"] == STEPS + 1 and lines[3]["hits"] == STEPS
    assert "+" not in lines[3]["label"] and "≈" not in lines[3]["label"]
    assert not [w for w in result["payload"]["warnings"] if "too often" in w]


def test_a_short_cell_is_never_sampled(tmp_path: Path) -> None:
    steps = 20_000  # about 50,000 line events: under the events a cell keeps whole
    result = profiled(tmp_path, "loop", steps=steps)
    assert result["sampled"] == [] and result["lines"][3]["hits"] == steps


def test_a_call_made_by_a_quiet_line_is_counted_not_placed(tmp_path: Path) -> None:
    result = profiled(tmp_path, "hot call")
    lines, payload = result["lines"], result["payload"]
    assert result["sampled"] == [2, 3]
    placed = lines[3]["kernels"]["count"]
    unplaced = payload["unattributed"]["kernels"]
    assert placed + unplaced == result["calls"] == STEPS // EVERY
    # most of the loop's time is quiet: nearly every call but the first (recorded whole)
    assert unplaced >= 1
    (note,) = [w for w in payload["warnings"] if "ran too often" in w]
    calls = "call was" if unplaced == 1 else "calls were"
    assert note.endswith(
        f"; {unplaced} GPU {calls} made while they ran unrecorded: not placed on a line"
    )
    assert result["total"] == sum(i for i in range(STEPS) if i % EVERY)  # the cell's own result


LOOP_SCRIPT = """\
total = 0
for i in range(600_000):
    total += i
print(total)
"""


def cli_profile(tmp_path: Path, *options: str) -> dict[int, dict[str, Any]]:
    """`gpulens profile` of a Python-heavy script, its child run by a 3.12+ interpreter."""
    python = monitoring_python()
    if python is None:
        pytest.skip("no Python 3.12+ on this machine: line sampling needs sys.monitoring")
    script = tmp_path / "loop.py"
    script.write_text(LOOP_SCRIPT, encoding="utf-8")
    command = [sys.executable, "-m", "gpulens", "profile", str(script), "--python", python]
    command += ["--backend", "host", "--format", "json", *options]
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {line["line"]: line for line in json.loads(done.stdout)["lines"]}


def test_the_cli_samples_a_python_heavy_script_unless_told_not_to(tmp_path: Path) -> None:
    sampled = cli_profile(tmp_path)
    # sampled: fewer runs recorded; a machine too busy for a steady stretch records it whole
    if sampled[3].get("sampled"):
        assert sampled[3]["hits"] < 600_000
    else:
        assert sampled[3]["hits"] == 600_000
    whole = cli_profile(tmp_path, "--no-sampling")
    assert "sampled" not in whole[3] and whole[3]["hits"] == 600_000
    assert whole[2]["hits"] == 600_001


def test_no_sampling_is_an_option_of_the_magic_and_not_of_a_replay(tmp_path: Path) -> None:
    from gpulens.magic import parse_options

    assert parse_options("").sample is True
    assert parse_options("--no-sampling --backend host").sample is False
    saved = tmp_path / "saved.json"
    saved.write_text("{}", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "gpulens", "profile", str(saved), "--replay", "--no-sampling"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and "drop --no-sampling" in done.stderr
