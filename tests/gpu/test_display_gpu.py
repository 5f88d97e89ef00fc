"""The words of live payloads on a GPU machine: the status bar text from live NVML, and a
profile of the demo's training cell, labelled, heated and laid out in 100 columns."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpulens.device.display import short_name
from gpulens.device.nvml import NvmlMonitor
from gpulens.device.status import StatusSource
from gpulens.profiler.display import device_seconds
from gpulens.profiler.report import TEXT_WIDTH, render_text

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]

_probe_monitor = NvmlMonitor()
_first = _probe_monitor.read()
_probe_monitor.close()
if not _first["available"]:
    pytest.skip(f"no GPU readable here: {_first['reason']}", allow_module_level=True)


def test_the_status_bar_names_the_first_gpu_and_offers_each_device() -> None:
    source = StatusSource()
    try:
        payload = source.snapshot(wait_for_frameworks=True)
    finally:
        source.close()
    shown = payload["display"]
    visible = [gpu for gpu in payload["gpus"] if gpu["visible"]]
    assert shown["text"].startswith(short_name(visible[0]["name"]) + " · ")
    assert " GiB · " in shown["text"] and shown["icon"] == "gpu"
    if len(visible) > 1:
        assert shown["text"].endswith(f"(+{len(visible) - 1})")
    devices = [choice["device"] for choice in shown["devices"]]
    assert devices == [gpu["cuda_device"] for gpu in visible] + ["cpu"]
    assert shown["tooltip"].count("| cuda:") == len(visible)


def test_a_profiled_gpu_cell_is_worded_heated_and_fits_100_columns(tmp_path: Any) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "demo.json"
    command = [sys.executable, "-m", "gpulens", "profile", "examples/profile_demo.py"]
    done = subprocess.run(
        [*command, "--cell", "3", "--format", "json", "-o", str(out), "--timeout", "120"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(out.read_text())
    assert payload["backend"] in ("cupti", "torch"), payload["warnings"]
    hottest = max(payload["lines"], key=device_seconds)
    assert hottest["heat"] == 1.0 and " kernels · " in hottest["label"]
    assert payload["display"]["header"].startswith("gpulens profile · cell 3 of profile_demo.py")
    report = render_text(payload).splitlines()
    header = next(row for row in report if row.startswith("Line "))
    assert header.index("Source") <= TEXT_WIDTH - 40
