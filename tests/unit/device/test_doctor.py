"""`diagnose`: the report of a real 2x H200 machine, and that report with one thing broken.

The base facts are `gpulens doctor --json` as it ran on the device machine; each test changes
the one fact a user would have wrong and checks the finding and its fix.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gpulens.device.doctor import (
    diagnose,
    format_doctor_report,
    parse_cpuinfo,
    parse_meminfo_total,
)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "nvml" / "doctor-h200x2.json"


@pytest.fixture
def facts() -> dict[str, Any]:
    data = json.loads(FIXTURE.read_text())
    data.pop("findings")
    return copy.deepcopy(data)


def codes(findings: list[dict[str, Any]]) -> list[str]:
    return [f["code"] for f in findings]


def test_healthy_machine_gets_only_advice(facts: dict[str, Any]) -> None:
    findings = diagnose(facts)
    assert all(f["severity"] == "info" for f in findings), findings
    # CuPy 14.2 ships CUDA 13.2 on a CUDA 13.0 driver; pinned copies were ~9x pageable ones
    assert sorted(codes(findings)) == ["driver-older-minor", "pin-memory"]


def test_cpu_only_torch_next_to_a_gpu(facts: dict[str, Any]) -> None:
    facts["status"]["frameworks"]["torch"].update(
        version="2.5.1+cpu", build="cpu", cuda=False, device_count=0, devices=[], cuda_runtime=None
    )
    (finding,) = [f for f in diagnose(facts) if f["code"] == "cpu-only-build"]
    assert finding["severity"] == "error"
    assert finding["message"].startswith("torch 2.5.1+cpu is a CPU-only build")
    assert "install the CUDA build" in finding["message"]
    assert "cu130" in finding["message"]  # matches the driver's CUDA 13.0


def test_driver_older_than_the_build_needs(facts: dict[str, Any]) -> None:
    facts["status"]["driver_version"] = "525.60.13"
    facts["status"]["cuda_driver_version"] = "12.0"
    facts["status"]["frameworks"]["torch"].update(cuda=False, device_count=0, devices=[])
    findings = [f for f in diagnose(facts) if f["code"] == "driver-too-old"]
    torch = next(f for f in findings if f["message"].startswith("torch"))
    assert torch["severity"] == "error"
    assert "525.60.13" in torch["message"]
    assert "580.65.06" in torch["message"]
    # no second, vaguer finding for the same cause
    assert "framework-sees-no-gpu" not in codes(diagnose(facts))


def test_every_gpu_hidden_by_cuda_visible_devices(facts: dict[str, Any]) -> None:
    facts["status"]["cuda_visible_devices"] = ""
    for gpu in facts["status"]["gpus"]:
        gpu["visible"] = False
    for report in facts["status"]["frameworks"].values():
        report.update(cuda=False, device_count=0, devices=[])
    hidden = [f for f in diagnose(facts) if f["code"] == "all-gpus-hidden"]
    assert len(hidden) == 4  # torch, cupy, jax, numba
    assert "CUDA_VISIBLE_DEVICES=''" in hidden[0]["message"]


def test_framework_that_crashed_on_import(facts: dict[str, Any]) -> None:
    message = "Importing jax in /usr/bin/python3 crashed the interpreter (SIGSEGV): run ..."
    facts["status"]["frameworks"]["jax"] = {"state": "crashed", "error": message}
    assert {"severity": "error", "code": "jax-crashed", "message": message} in diagnose(facts)


def test_gpu_without_kernels_in_the_build(facts: dict[str, Any]) -> None:
    facts["status"]["frameworks"]["torch"]["arch_list"] = ["sm_50", "sm_60", "sm_70"]
    (finding,) = [f for f in diagnose(facts) if f["code"] == "arch-not-in-build"]
    assert "sm_90" in finding["message"]


def test_no_driver_is_a_warning_not_an_error(facts: dict[str, Any]) -> None:
    facts["status"].update(
        available=False,
        reason="No NVIDIA driver found (libnvidia-ml.so.1 could not be loaded): install it.",
        gpus=[],
        frameworks={},
    )
    facts["smoke"] = {"skipped": "no framework with CUDA sees a GPU"}
    findings = diagnose(facts)
    assert findings[0] == {
        "severity": "warning",
        "code": "no-gpu",
        "message": facts["status"]["reason"],
    }
    assert not [f for f in findings if f["severity"] == "error"]


def test_slow_gpu_and_lost_gpu(facts: dict[str, Any]) -> None:
    facts["smoke"]["gpu_ms"] = facts["smoke"]["cpu_ms"] * 2
    facts["status"]["gpus"][1]["error"] = "GPU 1 stopped responding (NVML_ERROR_GPU_IS_LOST): ..."
    found = codes(diagnose(facts))
    assert "gpu-slower-than-cpu" in found
    assert "gpu-error" in found


def test_report_text_shows_smoke_figures_and_findings(facts: dict[str, Any]) -> None:
    text = format_doctor_report(facts, diagnose(facts))
    assert "x * x, 10M float32   CPU 3.949 ms · GPU 0.033 ms (119x faster)" in text
    assert "pageable 5.9 GB/s · pinned 51.1 GB/s" in text
    assert "not installed: tensorflow" in text
    assert "Findings:" in text


def test_cpu_and_memory_parsing() -> None:
    assert parse_cpuinfo("processor\t: 0\nmodel name\t: AMD EPYC 9654\n") == "AMD EPYC 9654"
    assert parse_cpuinfo("Hardware\t: BCM2835\n") == "BCM2835"
    assert parse_cpuinfo("") is None
    assert parse_meminfo_total("MemTotal:       16384 kB\nMemFree: 1 kB\n") == 16384 * 1024


def test_smoke_test_with_a_missing_interpreter_says_so() -> None:
    from gpulens.device.smoke import run_smoke_test

    result = run_smoke_test("/nonexistent/bin/python3", "torch")
    assert result["framework"] == "torch"
    assert "/nonexistent/bin/python3 could not be started" in result["error"]
