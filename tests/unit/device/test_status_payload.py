"""The `gpulens.status/1` payload and its formatting, from recorded readings and reports."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from gpulens.device.nvml import NvmlMonitor
from gpulens.device.recorded import RecordedBackend, load_snapshot
from gpulens.device.status import (
    build_status,
    cuda_ordinals,
    format_status_line,
    format_status_table,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nvml"
NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)
UUID0 = "GPU-4a9bf750-3b07-df72-6eb8-c7aacc5b9467"
UUID1 = "GPU-1cc3f679-2929-ae9e-513c-87e6150fcaf5"


def reading(label: str = "loaded") -> Any:
    return NvmlMonitor(RecordedBackend(load_snapshot(FIXTURES / "h200x2.json", label))).read()


@pytest.fixture(scope="module")
def frameworks() -> dict[str, Any]:
    """What the frameworks reported on the same 2-GPU machine (gpulens doctor --json there)."""
    return json.loads((FIXTURES / "doctor-h200x2.json").read_text())["status"]["frameworks"]


GPUS = [{"index": 0, "uuid": UUID0}, {"index": 1, "uuid": UUID1}]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, {0: 0, 1: 1}),
        ("1", {1: 0}),
        ("1,0", {1: 0, 0: 1}),
        ("", {}),
        ("-1", {}),
        ("0,7,1", {0: 0}),  # CUDA stops at the first entry that names no GPU
        ("0,0", {}),  # a GPU named twice makes the list invalid
        (" 1 ", {1: 0}),
        ("GPU-1cc3f679", {1: 0}),  # UUID prefixes are accepted
        ("gpu-4a9bf750-3b07-df72-6eb8-c7aacc5b9467,1", {0: 0, 1: 1}),
        ("GPU-", {}),  # ambiguous prefix
    ],
)
def test_cuda_visible_devices_follows_the_cuda_rules(value: str | None, expected: dict) -> None:
    assert cuda_ordinals(value, GPUS) == expected


def test_payload_keeps_hidden_gpus_and_marks_them(frameworks: dict[str, Any]) -> None:
    payload = build_status(reading(), frameworks, "1", NOW)
    assert payload["schema"] == "gpulens.status/1"
    assert dt.datetime.fromisoformat(payload["time"]) == NOW
    assert [g["index"] for g in payload["gpus"]] == [0, 1]
    assert [g["visible"] for g in payload["gpus"]] == [False, True]
    assert [g["cuda_device"] for g in payload["gpus"]] == [None, "cuda:0"]
    assert payload["cuda_visible_devices"] == "1"
    assert payload["frameworks_state"] == "ready"
    json.dumps(payload)  # the wire needs plain JSON


def test_payload_leaves_out_frameworks_that_are_not_installed() -> None:
    reports = {
        "torch": {"installed": True, "version": "2.11.0", "cuda": True, "python": "/x/python"},
        "tensorflow": {"installed": False},
    }
    payload = build_status(reading("idle"), reports, None, NOW)
    assert list(payload["frameworks"]) == ["torch"]
    assert "python" not in payload["frameworks"]["torch"]  # probe internals stay inside


def test_pending_probe_is_said_so() -> None:
    payload = build_status(reading("idle"), None, None, NOW)
    assert payload["frameworks_state"] == "pending"
    assert payload["frameworks"] == {}
    assert "probing" in format_status_table(payload)


def test_line_for_one_visible_gpu(frameworks: dict[str, Any]) -> None:
    line = format_status_line(build_status(reading(), frameworks, "1", NOW))
    # GPU 1 under load: 97 %, 2644377600 bytes used of 150754820096, 59 °C, 685.8 W
    assert line == "H200 97% · 2.5/140.4 GiB · 59°C · 686 W"


def test_line_for_two_gpus(frameworks: dict[str, Any]) -> None:
    line = format_status_line(build_status(reading(), frameworks, None, NOW))
    assert line == "2 GPUs · 0: 99% 2.5G · 1: 97% 2.5G"


def test_line_without_gpu_says_cpu_only_or_names_other_devices() -> None:
    none = {
        "available": False,
        "reason": "No NVIDIA driver found",
        "driver_version": None,
        "cuda_driver_version": None,
        "gpus": [],
    }
    assert format_status_line(build_status(none, {}, None, NOW)) == "CPU only"
    mac = {"torch": {"installed": True, "devices": ["mps"], "build": "mps", "cuda": False}}
    assert format_status_line(build_status(none, mac, None, NOW)) == "GPU: mps"
    table = format_status_table(build_status(none, {}, None, NOW))
    assert table.startswith("CPU only: No NVIDIA driver found")


def test_table_lists_processes_and_visibility(frameworks: dict[str, Any]) -> None:
    table = format_status_table(build_status(reading(), frameworks, "1", NOW))
    lines = table.splitlines()
    assert lines[0] == "NVIDIA driver 580.159.04 · CUDA 13.0 · CUDA_VISIBLE_DEVICES='1'"
    row0 = next(line for line in lines if line.startswith("0 "))
    row1 = next(line for line in lines if line.startswith("1 "))
    assert row0.split()[-1] == "hidden"
    assert row1.split()[-1] == "cuda:0"
    assert "681 / 700 W" in row0
    assert "1380 MHz" in row0
    assert sum("pid 552" in line and "python3" in line and "1.9 GiB" in line for line in lines) == 2
    assert any(line.split()[:2] == ["torch", "2.11.0+cu130"] for line in lines)


def test_table_shows_a_lost_gpu_and_its_reason() -> None:
    lost = reading("idle")
    lost["gpus"][1] = {**lost["gpus"][1], "error": "GPU 1 stopped responding", "processes": None}
    table = format_status_table(build_status(lost, {}, None, NOW))
    assert "GPU 1: GPU 1 stopped responding" in table
    assert any(line.startswith("1 ") and line.endswith("lost") for line in table.splitlines())


def test_line_for_the_single_gpu_machine_under_load() -> None:
    calls = load_snapshot(FIXTURES / "h200x1.json", "loaded")
    payload = build_status(NvmlMonitor(RecordedBackend(calls)).read(), {}, None, NOW)
    watts = calls["nvmlDeviceGetPowerUsage 0"]["value"] / 1000
    used = calls["nvmlDeviceGetMemoryInfo 0"]["value"]["used"] / 1024**3
    temperature = calls["nvmlDeviceGetTemperature 0 0"]["value"]
    assert format_status_line(payload) == (
        f"H200 99% · {used:.1f}/140.4 GiB · {temperature}°C · {watts:.0f} W"
    )
