"""The `gpulens.status/2` payload and its words, from recorded readings and reports."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from gpulens.device.display import short_name, status_table
from gpulens.device.nvml import NvmlMonitor
from gpulens.device.recorded import RecordedBackend, load_snapshot
from gpulens.device.status import build_status, cuda_ordinals

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
    assert payload["schema"] == "gpulens.status/2"
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
    assert "probing" in status_table(payload)
    assert payload["display"]["frameworks"]["lines"] == ["probing…"]


def text(payload: dict[str, Any]) -> str:
    return payload["display"]["text"]


def test_line_for_one_visible_gpu(frameworks: dict[str, Any]) -> None:
    payload = build_status(reading(), frameworks, "1", NOW)
    # GPU 1 under load: 97 %, 2644377600 bytes used of 150754820096, 59 °C
    assert text(payload) == "H200 · 97% · 2.5/140.4 GiB · 59°C"
    assert payload["display"]["icon"] == "gpu"
    assert [choice["device"] for choice in payload["display"]["devices"]] == ["cuda:0", "cpu"]


def test_two_gpus_show_the_first_cuda_sees_and_how_many_more(frameworks: dict[str, Any]) -> None:
    shown = build_status(reading(), frameworks, None, NOW)["display"]
    assert shown["text"] == "H200 · 99% · 2.5/140.4 GiB · 56°C (+1)"
    by_device = {choice["device"]: choice for choice in shown["devices"]}
    assert by_device["cuda:0"]["text"] == shown["text"]
    assert by_device["cuda:1"]["text"] == "H200 · 97% · 2.5/140.4 GiB · 59°C (+1)"
    assert by_device["cuda:1"]["detail"] == "97% busy · 2.5/140.4 GiB used · 1 process"
    assert by_device["cpu"]["text"] == "cpu · 2 GPUs not used"
    assert shown["title"] == "2 GPUs · NVIDIA driver 580.159.04 · CUDA 13.0"


def test_the_tooltip_lists_every_gpu_process_and_framework(frameworks: dict[str, Any]) -> None:
    tooltip = build_status(reading(), frameworks, None, NOW)["display"]["tooltip"]
    assert "NVIDIA driver 580\\.159\\.04" in tooltip
    assert len([row for row in tooltip.splitlines() if row.startswith("| cuda:")]) == 2
    assert "- cuda:1: python3 (pid 552) · 1.9 GiB" in tooltip
    assert "- torch 2\\.11\\.0\\+cu130 · cuda:0, cuda:1 · CUDA 13\\.0" in tooltip


def test_markdown_in_names_cannot_break_the_tooltip(frameworks: dict[str, Any]) -> None:
    odd = reading()
    odd["gpus"][0] = {**odd["gpus"][0], "name": "NVIDIA X | *evil*"}
    tooltip = build_status(odd, frameworks, None, NOW)["display"]["tooltip"]
    assert "NVIDIA X \\| \\*evil\\*" in tooltip


def test_memory_nearly_full_or_a_lost_gpu_warns() -> None:
    full = reading("idle")
    total = full["gpus"][0]["memory_total_bytes"]
    full["gpus"][0] = {**full["gpus"][0], "memory_used_bytes": int(0.91 * total)}
    assert build_status(full, {}, None, NOW)["display"]["warning"] is True
    full["gpus"][0]["memory_used_bytes"] = int(0.89 * total)
    assert build_status(full, {}, None, NOW)["display"]["warning"] is False
    lost = reading("idle")
    lost["gpus"][0] = {**lost["gpus"][0], "error": "GPU 0 stopped responding"}
    shown = build_status(lost, {}, None, NOW)["display"]
    assert (shown["text"], shown["icon"], shown["warning"]) == ("H200 lost (+1)", "lost", True)


def test_names_shorten_to_the_model() -> None:
    assert short_name("NVIDIA H100 80GB HBM3") == "H100"
    assert short_name("NVIDIA A100-SXM4-80GB") == "A100"
    assert short_name("NVIDIA GeForce RTX 4090") == "RTX 4090"
    assert short_name("NVIDIA H200") == "H200"
    assert short_name("Tesla T4") == "T4"


def test_line_without_gpu_says_cpu_only_or_names_other_devices() -> None:
    none = {
        "available": False,
        "reason": "No NVIDIA driver found",
        "driver_version": None,
        "cuda_driver_version": None,
        "gpus": [],
    }
    cpu_only = build_status(none, {}, None, NOW)
    assert (text(cpu_only), cpu_only["display"]["icon"]) == ("CPU only", "cpu")
    assert cpu_only["display"]["reason"] == "CPU only: No NVIDIA driver found"
    assert [choice["device"] for choice in cpu_only["display"]["devices"]] == ["cpu"]
    mac = {"torch": {"installed": True, "devices": ["mps"], "build": "mps", "cuda": False}}
    assert text(build_status(none, mac, None, NOW)) == "GPU: mps"
    table = status_table(cpu_only)
    assert table.startswith("CPU only: No NVIDIA driver found")


def test_table_lists_processes_and_visibility(frameworks: dict[str, Any]) -> None:
    table = status_table(build_status(reading(), frameworks, "1", NOW))
    lines = table.splitlines()
    assert lines[0] == "NVIDIA driver 580.159.04 · CUDA 13.0 · CUDA_VISIBLE_DEVICES='1'"
    row0 = next(line for line in lines if line.startswith("0 "))
    row1 = next(line for line in lines if line.startswith("1 "))
    assert row0.split()[-1] == "hidden"
    assert row1.split()[-1] == "cuda:0"
    assert "681/700 W" in row0
    assert "1380 MHz" in row0
    assert sum("pid 552" in line and "python3" in line and "1.9 GiB" in line for line in lines) == 2
    assert any(line.split()[:2] == ["torch", "2.11.0+cu130"] for line in lines)


def test_table_shows_a_lost_gpu_and_its_reason() -> None:
    lost = reading("idle")
    lost["gpus"][1] = {**lost["gpus"][1], "error": "GPU 1 stopped responding", "processes": None}
    table = status_table(build_status(lost, {}, None, NOW))
    assert "GPU 1: GPU 1 stopped responding" in table
    assert any(line.startswith("1 ") and line.endswith("lost") for line in table.splitlines())


def test_line_for_the_single_gpu_machine_under_load() -> None:
    calls = load_snapshot(FIXTURES / "h200x1.json", "loaded")
    payload = build_status(NvmlMonitor(RecordedBackend(calls)).read(), {}, None, NOW)
    used = calls["nvmlDeviceGetMemoryInfo 0"]["value"]["used"] / 1024**3
    temperature = calls["nvmlDeviceGetTemperature 0 0"]["value"]
    assert text(payload) == f"H200 · 99% · {used:.1f}/140.4 GiB · {temperature}°C"
