"""`gpulens status` and `gpulens doctor` as users run them: subprocesses, real NVML here.

This machine has no NVIDIA driver, so the live path must say so; the recorded 2x H200 answers
(GPULENS_NVML_REPLAY) drive the same commands through the multi-GPU formatting.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "nvml" / "h200x2.json"


def gpulens(*args: str, env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "gpulens", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, **(env or {})),
        check=False,
    )


def _no_driver_here() -> bool:
    from gpulens.device.nvml import NvmlMonitor

    return not NvmlMonitor().read()["available"]


needs_no_driver = pytest.mark.skipif(not _no_driver_here(), reason="this machine has a GPU")


@needs_no_driver
def test_status_json_says_no_gpu_and_why() -> None:
    done = gpulens("status", "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["schema"] == "gpulens.status/1"
    assert payload["available"] is False
    assert "NVIDIA driver" in payload["reason"]
    assert payload["frameworks_state"] == "ready"


@needs_no_driver
def test_status_table_says_cpu_only() -> None:
    done = gpulens("status")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CPU only: No NVIDIA driver found")


@needs_no_driver
def test_doctor_json_and_text_without_a_gpu() -> None:
    done = gpulens("doctor", "--json")
    assert done.returncode == 0, done.stderr  # no GPU is a warning, not an error
    report = json.loads(done.stdout)
    assert report["schema"] == "gpulens.doctor/1"
    assert report["findings"][0]["code"] == "no-gpu"
    assert report["smoke"] == {
        "skipped": "no framework with CUDA sees a GPU (torch or CuPy needed)"
    }
    assert report["cpu"]["logical_cores"] == os.cpu_count()
    text = gpulens("doctor").stdout
    assert text.startswith("CPU ")
    assert "warning  No NVIDIA driver found" in text


def test_status_replaying_two_gpus_with_one_hidden() -> None:
    env = {"GPULENS_NVML_REPLAY": f"{FIXTURE}#loaded", "CUDA_VISIBLE_DEVICES": "1"}
    payload = json.loads(gpulens("status", "--json", env=env).stdout)
    assert [g["visible"] for g in payload["gpus"]] == [False, True]
    table = gpulens("status", env=env).stdout
    assert "CUDA_VISIBLE_DEVICES='1'" in table
    assert table.count("pid 552") == 2


def test_watch_refreshes_until_interrupted() -> None:
    env = dict(os.environ, GPULENS_NVML_REPLAY=str(FIXTURE))
    process = subprocess.Popen(
        [sys.executable, "-m", "gpulens", "status", "--json", "--watch", "0.2"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    time.sleep(3)
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=20)
    assert process.returncode == 0
    frames = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert len(frames) >= 3  # the probe ran once; later frames are NVML reads only
    assert all(frame["gpus"][0]["name"] == "NVIDIA H200" for frame in frames)


def test_watch_needs_a_positive_interval() -> None:
    done = gpulens("status", "--watch", "0")
    assert done.returncode == 2
    assert "--watch: expected a positive, finite number of seconds" in done.stderr
