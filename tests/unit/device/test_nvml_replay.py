"""The NVML reader, replaying answers recorded on a 2x H200 machine (scripts/record_nvml.py).

Failure modes NVML cannot be made to produce on demand (lost GPU, permission, mismatch) are
the recorded answers with one outcome changed, which is exactly what the driver would answer.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from gpulens.device import nvml
from gpulens.device.nvml import NvmlMonitor
from gpulens.device.recorded import (
    CallNotRecorded,
    RecordedBackend,
    load_recording,
    load_snapshot,
)

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "nvml" / "h200x2.json"
GIB = 1024**3


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def idle() -> dict[str, Any]:
    return load_snapshot(FIXTURE, "idle")


@pytest.fixture
def loaded() -> dict[str, Any]:
    return load_snapshot(FIXTURE, "loaded")


def test_replay_reads_every_gpu_with_units_converted(idle: dict[str, Any]) -> None:
    reading = NvmlMonitor(RecordedBackend(idle)).read()
    assert reading["available"] is True
    assert reading["reason"] is None
    assert reading["driver_version"] == idle["nvmlSystemGetDriverVersion -"]["value"]
    # 13000 from NVML is CUDA "13.0"
    assert reading["cuda_driver_version"] == "13.0"
    assert [g["index"] for g in reading["gpus"]] == [0, 1]
    for gpu in reading["gpus"]:
        i = gpu["index"]
        memory = idle[f"nvmlDeviceGetMemoryInfo {i}"]["value"]
        assert gpu["memory_used_bytes"] == memory["used"]
        assert gpu["memory_total_bytes"] == memory["total"]
        milliwatts = idle[f"nvmlDeviceGetPowerUsage {i}"]["value"]
        assert gpu["power_w"] == pytest.approx(milliwatts / 1000, abs=0.05)
        assert gpu["power_limit_w"] == 700.0
        assert gpu["uuid"] == idle[f"nvmlDeviceGetUUID {i}"]["value"]
        assert gpu["processes"] == []
        assert "mig_devices" not in gpu


def test_two_gpus_are_distinct(idle: dict[str, Any]) -> None:
    gpus = NvmlMonitor(RecordedBackend(idle)).read()["gpus"]
    assert len({g["uuid"] for g in gpus}) == 2


def test_process_list_names_and_memory(loaded: dict[str, Any]) -> None:
    reading = NvmlMonitor(RecordedBackend(loaded)).read()
    pid = load_recording(FIXTURE)["snapshots"][1]["load_pid"]
    for gpu in reading["gpus"]:
        assert gpu["utilization_pct"] >= 90
        (process,) = gpu["processes"]
        assert process["pid"] == pid
        # NVML answers the full path; the status bar wants the program's name
        assert process["name"] == "python3"
        assert process["used_memory_bytes"] >= GIB


def test_static_fields_are_read_once_and_no_slow_call_is_made(loaded: dict[str, Any]) -> None:
    backend = RecordedBackend(loaded)
    monitor = NvmlMonitor(backend)
    for _ in range(3):
        monitor.read()
    assert backend.made.count("init") == 1
    assert backend.made.count("nvmlSystemGetDriverVersion -") == 1
    assert backend.made.count("nvmlDeviceGetUUID 0") == 1
    assert backend.made.count("nvmlDeviceGetMemoryInfo 0") == 3
    # process names are cached per live pid
    assert sum(k.startswith("nvmlSystemGetProcessName") for k in backend.made) == 1
    assert not any("PcieThroughput" in key for key in backend.made)


def test_a_call_the_recording_lacks_fails_loudly(idle: dict[str, Any]) -> None:
    del idle["nvmlDeviceGetMemoryInfo 1"]
    with pytest.raises(CallNotRecorded):
        NvmlMonitor(RecordedBackend(idle)).read()


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (nvml.NVML_ERROR_LIBRARY_NOT_FOUND, "No NVIDIA driver found"),
        (nvml.NVML_ERROR_DRIVER_NOT_LOADED, "kernel module is not loaded"),
        (nvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "reboot"),
        (nvml.NVML_ERROR_NO_PERMISSION, "/dev/nvidia"),
        (nvml.PYNVML_MISSING, "pip install nvidia-ml-py"),
    ],
)
def test_library_failures_say_why_and_what_to_do(code: int, words: str) -> None:
    reading = NvmlMonitor(RecordedBackend({"init": {"error": code}})).read()
    assert reading["available"] is False
    assert reading["gpus"] == []
    assert words in reading["reason"]


def test_live_backend_without_driver_reports_no_driver() -> None:
    # This machine really has no NVIDIA driver (the GPU suite covers the other case).
    reading = NvmlMonitor().read()
    if reading["available"]:
        pytest.skip("this machine has a working NVIDIA driver")
    assert "NVIDIA driver" in reading["reason"] or "nvidia-ml-py" in reading["reason"]


def test_library_init_is_retried_only_after_the_backoff() -> None:
    clock = Clock()
    backend = RecordedBackend({"init": {"error": nvml.NVML_ERROR_DRIVER_NOT_LOADED}})
    monitor = NvmlMonitor(backend, retry_s=10, clock=clock)
    for _ in range(5):
        monitor.read()
    assert backend.made.count("init") == 1
    clock.now += 11
    monitor.read()
    assert backend.made.count("init") == 2


def test_a_lost_gpu_is_reported_and_comes_back(loaded: dict[str, Any]) -> None:
    clock = Clock()
    calls = copy.deepcopy(loaded)
    backend = RecordedBackend(calls)
    monitor = NvmlMonitor(backend, retry_s=5, clock=clock)
    assert monitor.read()["gpus"][1]["error"] is None

    calls["nvmlDeviceGetMemoryInfo 1"] = {"error": nvml.NVML_ERROR_GPU_IS_LOST}
    reading = monitor.read()
    assert reading["available"] is True  # the other GPU still works
    lost = reading["gpus"][1]
    assert "NVML_ERROR_GPU_IS_LOST" in lost["error"]
    assert lost["uuid"] == loaded["nvmlDeviceGetUUID 1"]["value"]  # still named
    assert lost["memory_used_bytes"] is None
    assert reading["gpus"][0]["error"] is None

    # Within the backoff the lost GPU is not asked again (a lost GPU can take long to answer).
    made = len(backend.made)
    monitor.read()
    asked = backend.made[made:]
    assert asked, "GPU 0 is still read"
    assert not [k for k in asked if k.split()[1] == "1" or k == "nvmlDeviceGetHandleByIndex - 1"]

    calls["nvmlDeviceGetMemoryInfo 1"] = loaded["nvmlDeviceGetMemoryInfo 1"]
    clock.now += 6
    back = monitor.read()["gpus"][1]
    assert back["error"] is None
    assert back["memory_used_bytes"] == loaded["nvmlDeviceGetMemoryInfo 1"]["value"]["used"]
    # the handle was looked up again: that is how a reset GPU is found
    assert backend.made.count("nvmlDeviceGetHandleByIndex - 1") == 2


def test_driver_gone_mid_session_turns_unavailable_then_recovers(idle: dict[str, Any]) -> None:
    clock = Clock()
    calls = copy.deepcopy(idle)
    backend = RecordedBackend(calls)
    monitor = NvmlMonitor(backend, retry_s=5, clock=clock)
    assert monitor.read()["available"]
    calls["nvmlDeviceGetMemoryInfo 0"] = {"error": nvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH}
    down = monitor.read()
    assert down["available"] is False
    assert "reboot" in down["reason"]
    calls["nvmlDeviceGetMemoryInfo 0"] = idle["nvmlDeviceGetMemoryInfo 0"]
    clock.now += 6
    assert monitor.read()["available"] is True
    assert backend.made.count("init") == 2


def test_unsupported_fields_read_as_none(idle: dict[str, Any]) -> None:
    idle["nvmlDeviceGetPowerUsage 0"] = {"error": nvml.NVML_ERROR_NOT_SUPPORTED}
    idle["nvmlDeviceGetTemperature 0 0"] = {"error": nvml.NVML_ERROR_NOT_SUPPORTED}
    gpu = NvmlMonitor(RecordedBackend(idle)).read()["gpus"][0]
    assert gpu["power_w"] is None
    assert gpu["temperature_c"] is None
    assert gpu["error"] is None
    assert gpu["memory_total_bytes"] > 0


def test_process_listing_refused_is_explained(idle: dict[str, Any]) -> None:
    idle["nvmlDeviceGetComputeRunningProcesses 1"] = {"error": nvml.NVML_ERROR_NO_PERMISSION}
    gpus = NvmlMonitor(RecordedBackend(idle)).read()["gpus"]
    assert gpus[1]["processes"] is None
    assert "permission" in gpus[1]["processes_error"]
    assert gpus[0]["processes"] == []


def test_mig_devices_are_listed_under_their_parent(idle: dict[str, Any]) -> None:
    # The recorded H200s run without MIG; enable it on GPU 0 with one instance in slot 0.
    idle["nvmlDeviceGetMigMode 0"] = {"value": [1, 1]}
    idle["nvmlDeviceGetMaxMigDeviceCount 0"] = {"value": 2}
    idle["nvmlDeviceGetMigDeviceHandleByIndex 0 0"] = {"value": "0/0"}
    idle["nvmlDeviceGetMigDeviceHandleByIndex 0 1"] = {"error": nvml.NVML_ERROR_NOT_FOUND}
    idle["nvmlDeviceGetUUID 0/0"] = {"value": "MIG-1234"}
    idle["nvmlDeviceGetName 0/0"] = {"value": "NVIDIA H200 MIG 1g.18gb"}
    idle["nvmlDeviceGetMemoryInfo 0/0"] = {"value": {"total": 18 * GIB, "used": GIB, "free": 0}}
    for function in ("nvmlDeviceGetUtilizationRates", "nvmlDeviceGetPowerUsage"):
        idle[f"{function} 0/0"] = {"error": nvml.NVML_ERROR_NOT_SUPPORTED}
    idle["nvmlDeviceGetTemperature 0/0 0"] = {"error": nvml.NVML_ERROR_NOT_SUPPORTED}
    idle["nvmlDeviceGetEnforcedPowerLimit 0/0"] = {"error": nvml.NVML_ERROR_NOT_SUPPORTED}
    idle["nvmlDeviceGetClockInfo 0/0 1"] = {"error": nvml.NVML_ERROR_NOT_SUPPORTED}
    idle["nvmlDeviceGetComputeRunningProcesses 0/0"] = {"value": []}
    gpus = NvmlMonitor(RecordedBackend(idle)).read()["gpus"]
    (mig,) = gpus[0]["mig_devices"]
    assert mig["uuid"] == "MIG-1234"
    assert mig["memory_total_bytes"] == 18 * GIB
    assert mig["utilization_pct"] is None
    assert "mig_devices" not in gpus[1]


@pytest.mark.parametrize("name", ["h200x1.json", "h200x2.json"])
@pytest.mark.parametrize("label", ["idle", "loaded"])
def test_every_recording_replays_to_what_the_machine_read(name: str, label: str) -> None:
    path = FIXTURE.with_name(name)
    snapshot = next(s for s in load_recording(path)["snapshots"] if s["label"] == label)
    backend = RecordedBackend(snapshot["calls"])
    reading = NvmlMonitor(backend).read()
    assert len(reading["gpus"]) == snapshot["calls"]["nvmlDeviceGetCount -"]["value"]
    # the reader asked for exactly what was recorded: no call left unused, none missing
    assert set(backend.made) == set(snapshot["calls"])
    on_machine = snapshot["reading"]["gpus"]
    for ours, theirs in zip(reading["gpus"], on_machine, strict=True):
        assert ours["utilization_pct"] == theirs["utilization_pct"]
        assert ours["processes"] == theirs["processes"]
