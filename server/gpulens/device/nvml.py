"""GPU readings from NVML (nvidia-ml-py), behind a backend small enough to record and replay.

Every NVML call this module makes goes through ``NvmlBackend.call(function, device, *args)`` and
answers plain JSON data (or raises ``NvmlCallError``). The live backend talks to ``pynvml``; the
recorded backend (``gpulens.device.recorded``) replays a JSON fixture through the very same
reading code, so tests exercise the real logic without a GPU.

Cost: one poll makes about 10 calls per GPU at 2-10 us each. Nothing slow is called here
(``nvmlDeviceGetPcieThroughput`` takes ~21 ms: never add it to the poll).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypedDict

# NVML return codes we act on (values from nvml.h; duplicated so that this module imports
# without pynvml and the recorded backend needs no NVML at all).
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_POWER = 8
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_IRQ_ISSUE = 11
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_UNKNOWN = 999
# Not an NVML code: the Python binding itself is missing from gpulens's environment.
PYNVML_MISSING = -1

NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_DEVICE_MIG_ENABLE = 1

# Errors after which the library itself must be initialised again (driver unloaded or
# replaced under us); a lost GPU only needs its own handle looked up again.
_LIBRARY_GONE = frozenset(
    {NVML_ERROR_UNINITIALIZED, NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_LIB_RM_VERSION_MISMATCH}
)
# Errors that mean "this GPU cannot be read now" rather than "this field does not exist".
_DEVICE_DOWN = frozenset(
    {
        NVML_ERROR_GPU_IS_LOST,
        NVML_ERROR_RESET_REQUIRED,
        NVML_ERROR_IRQ_ISSUE,
        NVML_ERROR_INSUFFICIENT_POWER,
        NVML_ERROR_TIMEOUT,
    }
)


class NvmlCallError(Exception):
    """An NVML call failed with ``code`` (an ``NVML_ERROR_*`` value)."""

    def __init__(self, code: int, function: str = "") -> None:
        super().__init__(f"{function or 'NVML'} failed with NVML error {code}")
        self.code = code
        self.function = function


class NvmlBackend(Protocol):
    """The NVML calls the reader needs, answering plain JSON-able data.

    ``device`` is an address such as ``"0"`` (GPU 0) or ``"0/2"`` (MIG device 2 of GPU 0), as
    returned by the ``nvmlDeviceGetHandleByIndex`` / ``nvmlDeviceGetMigDeviceHandleByIndex``
    calls; handles never leave the backend.
    """

    def init(self) -> None: ...

    def shutdown(self) -> None: ...

    def call(self, function: str, device: str | None = None, *args: int) -> Any: ...


def call_key(function: str, device: str | None, args: tuple[int, ...]) -> str:
    """The key a recording stores one call under: ``"fn device arg..."`` (``-`` for no device)."""
    return " ".join([function, device if device is not None else "-", *map(str, args)])


# --- the live backend -------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Turn pynvml answers (ctypes structs, bytes, friendly objects) into JSON data."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    fields = getattr(value, "_fields_", None)
    if fields is not None:  # a ctypes structure
        return {name: _plain(getattr(value, name)) for name, *_ in fields}
    if hasattr(value, "__dict__"):  # pynvml's "friendly object" for process infos
        return {key: _plain(item) for key, item in vars(value).items() if not key.startswith("_")}
    return str(value)


class PynvmlBackend:
    """NVML through nvidia-ml-py, imported on first use so that gpulens starts without it."""

    def __init__(self) -> None:
        self._pynvml: Any = None
        self._handles: dict[str, Any] = {}

    def init(self) -> None:
        try:
            import pynvml
        except ImportError as error:
            raise NvmlCallError(PYNVML_MISSING, "import pynvml") from error
        self._pynvml = pynvml
        self._handles.clear()
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as error:
            raise NvmlCallError(int(error.value), "nvmlInit") from error

    def shutdown(self) -> None:
        self._handles.clear()
        if self._pynvml is None:
            return
        with contextlib.suppress(self._pynvml.NVMLError):  # nothing left to release
            self._pynvml.nvmlShutdown()

    def call(self, function: str, device: str | None = None, *args: int) -> Any:
        pynvml = self._pynvml
        if pynvml is None:
            raise NvmlCallError(NVML_ERROR_UNINITIALIZED, function)
        try:
            if function == "nvmlDeviceGetHandleByIndex":
                address = str(args[0])
                self._handles[address] = pynvml.nvmlDeviceGetHandleByIndex(args[0])
                return address
            if function == "nvmlDeviceGetMigDeviceHandleByIndex":
                assert device is not None
                address = f"{device}/{args[0]}"
                parent = self._handles[device]
                self._handles[address] = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(parent, args[0])
                return address
            fn = getattr(pynvml, function)
            if device is None:
                return _plain(fn(*args))
            return _plain(fn(self._handles[device], *args))
        except pynvml.NVMLError as error:
            if int(error.value) in _DEVICE_DOWN and device is not None:
                self._handles.pop(device, None)
            raise NvmlCallError(int(error.value), function) from error
        except KeyError as error:  # no handle: the device was lost and not yet found again
            raise NvmlCallError(NVML_ERROR_GPU_IS_LOST, function) from error


# --- readings -------------------------------------------------------------------------------


class ProcessReading(TypedDict):
    pid: int
    name: str | None
    used_memory_bytes: int | None


class GpuReading(TypedDict, total=False):
    index: int
    uuid: str | None
    name: str | None
    utilization_pct: int | None
    memory_used_bytes: int | None
    memory_total_bytes: int | None
    temperature_c: int | None
    power_w: float | None
    power_limit_w: float | None
    sm_clock_mhz: int | None
    processes: list[ProcessReading] | None
    processes_error: str | None
    mig_devices: list[GpuReading]
    error: str | None


class NvmlReading(TypedDict):
    available: bool
    reason: str | None
    driver_version: str | None
    cuda_driver_version: str | None
    gpus: list[GpuReading]


def describe_library_error(code: int) -> str:
    """Why NVML as a whole is unusable, and what to do about it, in one sentence."""
    if code == PYNVML_MISSING:
        return (
            "The NVML binding is not installed in gpulens's environment, so GPUs cannot be read: "
            "run `pip install nvidia-ml-py` there."
        )
    if code == NVML_ERROR_LIBRARY_NOT_FOUND:
        return (
            "No NVIDIA driver found (libnvidia-ml.so.1 could not be loaded): install the NVIDIA "
            "driver, or start the container with GPU access (e.g. `docker run --gpus all`)."
        )
    if code == NVML_ERROR_DRIVER_NOT_LOADED:
        return (
            "The NVIDIA driver is installed but its kernel module is not loaded: "
            "reboot, or load it with `sudo modprobe nvidia`."
        )
    if code == NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return (
            "The NVIDIA driver library and kernel module have different versions "
            "(usually after a driver update without a reboot): reboot the machine."
        )
    if code == NVML_ERROR_NO_PERMISSION:
        return (
            "NVML was refused access to the GPU: make sure your user can open /dev/nvidia* "
            "(e.g. add it to the `video` group) or that the container was started with GPU access."
        )
    if code == NVML_ERROR_FUNCTION_NOT_FOUND:
        return (
            "The NVIDIA driver is older than this NVML binding expects: "
            "update the driver, or install an older nvidia-ml-py."
        )
    return f"NVML failed (error {code}): run `nvidia-smi` to see whether the driver works."


def describe_device_error(index: int, code: int) -> str:
    """Why one GPU cannot be read, and what to do about it, in one sentence."""
    if code == NVML_ERROR_GPU_IS_LOST:
        return (
            f"GPU {index} stopped responding (NVML_ERROR_GPU_IS_LOST): look for Xid errors "
            "in `dmesg`; a GPU reset (`nvidia-smi -r`) or a reboot brings it back, "
            "and gpulens keeps checking."
        )
    if code == NVML_ERROR_RESET_REQUIRED:
        return (
            f"GPU {index} needs a reset before it can be used again: "
            f"run `nvidia-smi -r -i {index}`."
        )
    if code == NVML_ERROR_NO_PERMISSION:
        return f"No permission to read GPU {index}: check access to /dev/nvidia{index}."
    if code == NVML_ERROR_INSUFFICIENT_POWER:
        return f"GPU {index} reports insufficient external power: check its power cables."
    return f"GPU {index} could not be read (NVML error {code}): run `nvidia-smi -i {index}`."


def format_cuda_version(value: int | None) -> str | None:
    """NVML's ``13000`` -> ``"13.0"``; ``12040`` -> ``"12.4"``."""
    if not value:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def _optional(backend: NvmlBackend, function: str, device: str, *args: int) -> Any:
    """A field that some GPUs do not support (MIG slices, older boards) reads as ``None``."""
    try:
        return backend.call(function, device, *args)
    except NvmlCallError as error:
        if error.code in _DEVICE_DOWN or error.code in _LIBRARY_GONE:
            raise
        return None


def _milliwatts(value: Any) -> float | None:
    return None if value is None else round(value / 1000.0, 1)


def read_processes(
    backend: NvmlBackend, device: str, process_name: Callable[[int], str | None]
) -> list[ProcessReading]:
    raw = backend.call("nvmlDeviceGetComputeRunningProcesses", device)
    processes: list[ProcessReading] = []
    for item in raw or []:
        pid = int(item["pid"])
        used = item.get("usedGpuMemory")
        processes.append({"pid": pid, "name": process_name(pid), "used_memory_bytes": used})
    return processes


def _read_device_fields(
    backend: NvmlBackend, device: str, process_name: Callable[[int], str | None]
) -> GpuReading:
    memory = _optional(backend, "nvmlDeviceGetMemoryInfo", device)
    utilization = _optional(backend, "nvmlDeviceGetUtilizationRates", device)
    reading: GpuReading = {
        "utilization_pct": None if utilization is None else utilization["gpu"],
        "memory_used_bytes": None if memory is None else memory["used"],
        "memory_total_bytes": None if memory is None else memory["total"],
        "temperature_c": _optional(
            backend, "nvmlDeviceGetTemperature", device, NVML_TEMPERATURE_GPU
        ),
        "power_w": _milliwatts(_optional(backend, "nvmlDeviceGetPowerUsage", device)),
        "power_limit_w": _milliwatts(_optional(backend, "nvmlDeviceGetEnforcedPowerLimit", device)),
        "sm_clock_mhz": _optional(backend, "nvmlDeviceGetClockInfo", device, NVML_CLOCK_SM),
        "processes": None,
        "processes_error": None,
    }
    try:
        reading["processes"] = read_processes(backend, device, process_name)
    except NvmlCallError as error:
        if error.code in _DEVICE_DOWN or error.code in _LIBRARY_GONE:
            raise
        if error.code == NVML_ERROR_NO_PERMISSION:
            reading["processes_error"] = (
                "No permission to list GPU processes: run as a user allowed to see them, "
                "or start the container with `--pid=host`."
            )
        elif error.code != NVML_ERROR_NOT_SUPPORTED:
            reading["processes_error"] = f"Listing GPU processes failed (NVML error {error.code})."
    return reading


class _StaticInfo(TypedDict):
    driver_version: str | None
    cuda_driver_version: str | None
    count: int


def _blank_gpu(index: int, uuid: str | None, name: str | None, error: str) -> GpuReading:
    return {
        "index": index,
        "uuid": uuid,
        "name": name,
        "utilization_pct": None,
        "memory_used_bytes": None,
        "memory_total_bytes": None,
        "temperature_c": None,
        "power_w": None,
        "power_limit_w": None,
        "sm_clock_mhz": None,
        "processes": None,
        "error": error,
    }


def _proc_comm(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


class NvmlMonitor:
    """Reads every GPU on demand; initialises NVML once and recovers from failures.

    Thread-safe (one lock: a poll takes microseconds). Failures never raise: they come back as
    ``available: false`` or a per-GPU ``error`` with a reason. After the library fails it is
    retried at most every ``retry_s``; a lost GPU has its handle looked up again every
    ``retry_s`` so it reappears once it is back.
    """

    def __init__(
        self,
        backend: NvmlBackend | None = None,
        *,
        retry_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._backend: NvmlBackend = backend if backend is not None else PynvmlBackend()
        self._retry_s = retry_s
        self._clock = clock
        self._lock = threading.Lock()
        self._static: _StaticInfo | None = None
        self._failure: str | None = None
        self._next_init = 0.0
        self._addresses: dict[int, str] = {}
        self._identity: dict[int, tuple[str | None, str | None]] = {}
        self._lost_until: dict[int, float] = {}
        self._lost_reason: dict[int, str] = {}
        self._names: dict[int, str | None] = {}

    # -- lifecycle --

    def close(self) -> None:
        with self._lock:
            if self._static is not None:
                self._backend.shutdown()
            self._static = None

    def _initialise(self) -> None:
        backend = self._backend
        try:
            backend.init()
        except NvmlCallError as error:
            self._failure = describe_library_error(error.code)
            self._next_init = self._clock() + self._retry_s
            return
        try:
            driver = backend.call("nvmlSystemGetDriverVersion")
            try:
                cuda = format_cuda_version(backend.call("nvmlSystemGetCudaDriverVersion_v2"))
            except NvmlCallError:
                cuda = None
            count = int(backend.call("nvmlDeviceGetCount"))
        except NvmlCallError as error:
            backend.shutdown()
            self._failure = describe_library_error(error.code)
            self._next_init = self._clock() + self._retry_s
            return
        self._static = {"driver_version": driver, "cuda_driver_version": cuda, "count": count}
        self._failure = None
        self._addresses.clear()
        self._identity.clear()
        self._lost_until.clear()
        self._lost_reason.clear()

    def _library_gone(self, code: int) -> None:
        self._backend.shutdown()
        self._static = None
        self._failure = describe_library_error(code)
        self._next_init = self._clock() + self._retry_s

    # -- reading --

    def read(self) -> NvmlReading:
        with self._lock:
            if self._static is None and self._clock() >= self._next_init:
                self._initialise()
            static = self._static
            if static is None:
                return self._failure_reading()
            gpus: list[GpuReading] = []
            try:
                for index in range(static["count"]):
                    gpus.append(self._read_gpu(index))
            except NvmlCallError as error:  # raised only for library-wide failures
                self._library_gone(error.code)
                return self._failure_reading()
            live = {p["pid"] for g in gpus for p in (g.get("processes") or [])}
            for pid in list(self._names):
                if pid not in live:
                    del self._names[pid]  # pids are reused: forget names of ended processes
            reason = None
            available = bool(gpus)
            if not gpus:
                reason = (
                    "The NVIDIA driver is loaded but reports no GPU: check `nvidia-smi`, and "
                    "that the container or VM was given the GPU."
                )
            return {
                "available": available,
                "reason": reason,
                "driver_version": static["driver_version"],
                "cuda_driver_version": static["cuda_driver_version"],
                "gpus": gpus,
            }

    def _failure_reading(self) -> NvmlReading:
        return {
            "available": False,
            "reason": self._failure,
            "driver_version": None,
            "cuda_driver_version": None,
            "gpus": [],
        }

    def _process_name(self, pid: int) -> str | None:
        if pid not in self._names:
            name: str | None
            try:
                name = self._backend.call("nvmlSystemGetProcessName", None, pid)
            except NvmlCallError:
                name = None
            self._names[pid] = os.path.basename(name) if name else _proc_comm(pid)
        return self._names[pid]

    def _read_gpu(self, index: int) -> GpuReading:
        backend = self._backend
        uuid, name = self._identity.get(index, (None, None))
        if index in self._lost_until and self._clock() < self._lost_until[index]:
            return _blank_gpu(index, uuid, name, self._lost_reason[index])
        try:
            address = self._addresses.get(index)
            if address is None:
                address = backend.call("nvmlDeviceGetHandleByIndex", None, index)
                self._addresses[index] = address
                uuid = backend.call("nvmlDeviceGetUUID", address)
                name = backend.call("nvmlDeviceGetName", address)
                self._identity[index] = (uuid, name)
            fields = _read_device_fields(backend, address, self._process_name)
            migs = self._read_mig_devices(address)
        except NvmlCallError as error:
            if error.code in _LIBRARY_GONE:
                raise
            # Look the handle up again later: that is how a GPU that comes back is found.
            self._addresses.pop(index, None)
            reason = describe_device_error(index, error.code)
            self._lost_until[index] = self._clock() + self._retry_s
            self._lost_reason[index] = reason
            return _blank_gpu(index, uuid, name, reason)
        self._lost_until.pop(index, None)
        self._lost_reason.pop(index, None)
        reading: GpuReading = {"index": index, "uuid": uuid, "name": name, **fields, "error": None}
        if migs:
            reading["mig_devices"] = migs
        return reading

    def _read_mig_devices(self, address: str) -> list[GpuReading]:
        backend = self._backend
        mode = _optional(backend, "nvmlDeviceGetMigMode", address)
        if not mode or mode[0] != NVML_DEVICE_MIG_ENABLE:
            return []
        slots = int(_optional(backend, "nvmlDeviceGetMaxMigDeviceCount", address) or 0)
        migs: list[GpuReading] = []
        for slot in range(slots):
            try:
                mig = backend.call("nvmlDeviceGetMigDeviceHandleByIndex", address, slot)
            except NvmlCallError as error:
                if error.code in (NVML_ERROR_NOT_FOUND, NVML_ERROR_NOT_SUPPORTED):
                    continue  # an empty slot: no instance was created there
                raise
            fields = _read_device_fields(backend, mig, self._process_name)
            migs.append(
                {
                    "index": slot,
                    "uuid": _optional(backend, "nvmlDeviceGetUUID", mig),
                    "name": _optional(backend, "nvmlDeviceGetName", mig),
                    **fields,
                    "error": None,
                }
            )
        return migs
