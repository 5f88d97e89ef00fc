"""Measured, not guessed, on a GPU machine (`pytest -m gpu`): "Measure this fix" on training-style
cells, the timed run's span, and a live profile merged into the findings by `gpulens check
--profile`.

The training cell (examples/overlap_demo.py) does host work each step (a batch prepared in
Python, as a loader without workers does) and GPU work of the same length (its setup sizes
the host's work to the GPU's step): with `.item()` every step the host waits for each step's
GPU work before it prepares the next batch; accumulated on the device, the two overlap. The
compute-bound cell spends each step in the GPU's matmuls and nearly nothing on the host: its
one wait per step costs next to nothing, and the fix must not be called faster.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HAS_GPU = importlib.util.find_spec("torch") is not None and shutil.which("nvidia-smi") is not None
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_GPU, reason="needs torch and an NVIDIA GPU (device machine)"),
    # ten fresh processes of a training cell, each run twice: 120 s was not enough on an H100
    pytest.mark.timeout(360),
]

FIX_TITLE = "Accumulate `total` on the device, read it once after the loop"

REPO = Path(__file__).resolve().parents[2]
# the example training cell: each step prepares a batch on the host, then gives the GPU work
TRAINING = (REPO / "examples" / "overlap_demo.py").read_text(encoding="utf-8")

COMPUTE_BOUND = """\
import torch

# %% setup
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
a @ a
torch.cuda.synchronize()

# %% each step a few long matmuls, one read of the result
total = 0.0
for step in range(10):
    b = a
    for _ in range(8):
        b = (b @ a) * 0.011  # 1 / sqrt(8192): the values stay near 1
    total += b.float().mean().item()
print(total)
"""


def sync_line(text: str) -> int:
    """The 1-based line of the cell's `.item()` (not of a comment naming it)."""
    return next(
        n
        for n, line in enumerate(text.splitlines(), 1)
        if ".item()" in line and not line.lstrip().startswith("#")
    )


def gpulens(folder: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpulens", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def measured(folder: Path, name: str, text: str, runs: int) -> dict[str, Any]:
    (folder / name).write_text(text, encoding="utf-8")
    line = str(sync_line(text))
    args = ["--line", line, "--rule", "GPU001", "--runs", str(runs), "--json"]
    done = gpulens(folder, "measure-fix", name, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    print(result["message"])  # the figure, for the record of the run
    assert (folder / name).read_text(encoding="utf-8") == text  # never written
    return result


def test_a_gpu001_fix_on_a_training_cell_drops_the_syncs_and_is_faster(tmp_path: Path) -> None:
    result = measured(tmp_path, "train.py", TRAINING, runs=5)
    assert result["backend"] in ("cupti", "torch")
    assert result["fix"] == {"title": FIX_TITLE}
    changes = {change["record"]: change for change in result["changes"]}
    # one wait per step as it is; after the fix, the one read after the loop
    assert changes["syncs"]["before"] >= 100 and changes["syncs"]["after"] <= 2
    assert changes["dtoh"]["before"] >= 100 and changes["dtoh"]["after"] <= 2
    assert "syncs " in result["message"] and " → " in result["message"]
    assert result["verdict"] == "faster", result["message"]
    assert result["test"]["p_faster"] <= result["test"]["alpha"] == 0.05
    # host and GPU work of one length per step overlap once the per-step wait goes: measured
    # 1.30x on an H100 (2026-11-24; a run below 1.3x failed the bound this had), more on the
    # H200; the verdict and its p above are the claim, this only that the gain is not slight
    assert result["speedup"] > 1.15


def test_a_fix_that_saves_nothing_measurable_is_not_called_faster(tmp_path: Path) -> None:
    result = measured(tmp_path, "matmuls.py", COMPUTE_BOUND, runs=7)
    changes = {change["record"]: change for change in result["changes"]}
    assert changes["syncs"]["before"] >= 10 and changes["syncs"]["after"] <= 2
    assert result["verdict"] in ("within-noise", "slower"), result["message"]
    assert "faster, beyond the noise" not in result["message"]


# the cell queues ~0.3 s of GPU work and returns at once: its wall time ends when the work does
SLEEPER = """\
import time

import torch

# %% setup: the GPU's cycles per second, from a 50M-cycle spin after a 100M-cycle one that
# brings the clocks up (a spin's length in seconds follows the SM clock)
torch.cuda._sleep(100_000_000)
torch.cuda.synchronize()
began = time.perf_counter()
torch.cuda._sleep(50_000_000)
torch.cuda.synchronize()
cycles = int(0.3 * 50_000_000 / (time.perf_counter() - began))

# %% the cell
torch.cuda._sleep(cycles)
"""


def test_the_timed_run_ends_when_the_gpu_work_it_queued_is_done(tmp_path: Path) -> None:
    from gpulens.profiler.runner import run_profile

    path = tmp_path / "sleeper.py"
    path.write_text(SLEEPER, encoding="utf-8")
    payload = run_profile(str(path), cell=2, timed=True, timeout=120)
    assert payload["error"] is None, payload["error"]
    print(f"profiled cell {payload['wall_s']:.4f} s, timed {payload['timed']['wall_s']:.4f} s")
    assert payload["wall_s"] < 0.1  # the profiled cell's last line returned at once
    # ~0.3 s at the calibrated clock: half of it even if the clock doubled since
    assert payload["timed"]["error"] is None and payload["timed"]["wall_s"] >= 0.15


def test_a_live_profile_is_merged_into_the_findings_by_check(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAINING, encoding="utf-8")
    line = sync_line(TRAINING)
    saved = tmp_path / "loop.json"
    done = gpulens(
        tmp_path, "profile", "train.py", "--line", str(line), "--format", "json", "-o", str(saved)
    )
    assert done.returncode == 0, done.stderr
    done = gpulens(tmp_path, "check", "train.py", "--profile", str(saved), "--format", "json")
    found = json.loads(done.stdout)
    (sync,) = [f for f in found if f["line"] == line and f["code"] == "GPU001"]
    assert sync["origin"] == "analysis" and sync["severity"] == "warning"
    assert " Measured in the last profile: 100 syncs, " in sync["message"]
    print(sync["message"])
