"""Device status against a real GPU (`pytest -m gpu`, on the device machine).

Skipped, with NVML's own reason, where no NVIDIA driver answers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpulens.device.frameworks import run_probe
from gpulens.device.nvml import NvmlMonitor

pytestmark = pytest.mark.gpu

GIB = 1024**3
SERVER = str(Path(__file__).resolve().parents[2] / "server")

_probe_monitor = NvmlMonitor()
_first = _probe_monitor.read()
_probe_monitor.close()
if not _first["available"]:
    pytest.skip(f"no GPU readable here: {_first['reason']}", allow_module_level=True)
GPU_COUNT = len(_first["gpus"])


@pytest.fixture
def monitor():
    monitor = NvmlMonitor()
    yield monitor
    monitor.close()


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU in this interpreter")
    return torch


def test_fields_are_in_plausible_ranges(monitor: NvmlMonitor) -> None:
    reading = monitor.read()
    assert re.fullmatch(r"\d{3}\.\d+(\.\d+)?", reading["driver_version"] or "")
    assert re.fullmatch(r"\d{2}\.\d", reading["cuda_driver_version"] or "")
    for gpu in reading["gpus"]:
        assert gpu.get("error") is None, gpu
        assert str(gpu["uuid"]).startswith("GPU-")
        assert gpu["name"]
        assert "NVIDIA" in gpu["name"]
        assert 0 <= gpu["utilization_pct"] <= 100
        assert 1 * GIB < gpu["memory_total_bytes"] < 1024 * GIB
        assert 0 <= gpu["memory_used_bytes"] <= gpu["memory_total_bytes"]
        assert 10 <= gpu["temperature_c"] <= 110
        assert 10 < gpu["power_limit_w"] <= 2000
        assert 0 < gpu["power_w"] <= gpu["power_limit_w"] * 1.3
        assert 100 <= gpu["sm_clock_mhz"] <= 4000
        assert isinstance(gpu["processes"], list)


def test_a_full_poll_costs_under_a_millisecond(monitor: NvmlMonitor) -> None:
    monitor.read()  # init and static fields are paid once, outside the poll
    samples = []
    for _ in range(50):
        start = time.perf_counter()
        monitor.read()
        samples.append(time.perf_counter() - start)
    samples.sort()
    assert samples[len(samples) // 2] < 0.001 * max(1, GPU_COUNT), samples[len(samples) // 2]


def test_own_process_appears_with_its_memory(monitor: NvmlMonitor) -> None:
    torch = _torch_cuda()
    block = torch.empty(GIB, dtype=torch.uint8, device="cuda:0")
    torch.cuda.synchronize()
    try:
        reading = monitor.read()
        # cuda:0 is the first visible GPU, which is NVML index 0 unless CUDA_VISIBLE_DEVICES says
        mine = [
            (gpu["index"], process)
            for gpu in reading["gpus"]
            for process in gpu["processes"] or []
            if process["pid"] == os.getpid()
        ]
        assert mine, f"pid {os.getpid()} not among {[g['processes'] for g in reading['gpus']]}"
        _, process = mine[0]
        assert process["used_memory_bytes"] >= GIB
        assert process["name"]
        assert "python" in process["name"].lower()
    finally:
        del block
        torch.cuda.empty_cache()


def test_utilization_rises_under_a_matmul_load(monitor: NvmlMonitor) -> None:
    torch = _torch_cuda()
    a = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            for _ in range(10):
                a @ a
            torch.cuda.synchronize()

    index = _visible_nvml_indices()[0]
    before = monitor.read()["gpus"][index]["utilization_pct"]
    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    try:
        peak = 0
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline:
            time.sleep(0.2)
            gpu = monitor.read()["gpus"][index]
            peak = max(peak, gpu["utilization_pct"])
    finally:
        stop.set()
        worker.join()
    assert peak >= 50, f"utilization peaked at {peak}% (before: {before}%)"
    assert peak > before


def _visible_nvml_indices() -> list[int]:
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return list(range(GPU_COUNT))
    return [int(v) for v in value.split(",") if v.strip().isdigit()]


def _status_json(env_update: dict[str, str]) -> dict:
    env = dict(os.environ, **env_update)
    env["PYTHONPATH"] = SERVER + os.pathsep + env.get("PYTHONPATH", "")
    completed = subprocess.run(
        [sys.executable, "-m", "gpulens", "status", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_frameworks_see_the_gpus_nvml_sees() -> None:
    report = run_probe("torch", sys.executable)
    if not report.get("installed"):
        pytest.skip("torch is not installed here")
    assert report["state"] == "ok", report
    assert report["cuda"] is True
    assert report["device_count"] == GPU_COUNT
    assert report["devices"][:GPU_COUNT] == [f"cuda:{i}" for i in range(GPU_COUNT)]
    assert report["build"] == "cuda"
    assert re.fullmatch(r"\d+\.\d+", report["cuda_runtime"])


def test_empty_cuda_visible_devices_hides_every_gpu() -> None:
    payload = _status_json({"CUDA_VISIBLE_DEVICES": ""})
    assert payload["cuda_visible_devices"] == ""
    assert len(payload["gpus"]) == GPU_COUNT  # hidden GPUs stay listed
    assert all(gpu["visible"] is False for gpu in payload["gpus"])
    torch = payload["frameworks"].get("torch")
    if torch:
        assert torch["device_count"] == 0


@pytest.mark.skipif(GPU_COUNT < 2, reason=f"needs 2 GPUs; this machine has {GPU_COUNT}")
def test_two_gpus_are_both_seen(monitor: NvmlMonitor) -> None:
    reading = monitor.read()
    assert len(reading["gpus"]) >= 2
    uuids = {gpu["uuid"] for gpu in reading["gpus"]}
    assert len(uuids) == len(reading["gpus"])
    assert [gpu["index"] for gpu in reading["gpus"]] == list(range(len(reading["gpus"])))


@pytest.mark.skipif(GPU_COUNT < 2, reason=f"needs 2 GPUs; this machine has {GPU_COUNT}")
def test_only_gpu_1_is_visible_under_cuda_visible_devices_1() -> None:
    payload = _status_json({"CUDA_VISIBLE_DEVICES": "1"})
    visible = [gpu["index"] for gpu in payload["gpus"] if gpu["visible"]]
    assert visible == [1]
    assert payload["gpus"][1]["cuda_device"] == "cuda:0"
    torch = payload["frameworks"].get("torch")
    if torch:
        assert torch["device_count"] == 1
