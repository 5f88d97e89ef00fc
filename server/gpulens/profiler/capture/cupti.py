"""CUPTI backend: activity records only, no Python callback per launch.

cupti-python enables the activity kinds and per-cbid API records and gives the clock
(`cupti.get_timestamp`, the records' own time base) and the numpy dtypes of the record
structs. It hands completed buffers over as one Python object per record (about 15 us
each, measured), so the two buffer callbacks are registered on the very same libcupti
through ctypes instead: a completed buffer is copied out as bytes, and decoded after the
cell in bulk with those dtypes (`activity`). One activity-buffer owner per process: at the end every
kind is disabled, every cbid filter restored and the buffers flushed, so torch.profiler
(Kineto) can register its own callbacks afterwards.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import re
import threading
import time
from typing import Any

from gpulens.profiler.capture.activity import CUPTI_SUCCESS, decode_api_calls, decode_buffers
from gpulens.profiler.capture.memory import AllocatorHistory, operation_signs
from gpulens.profiler.timeline import Segments, place_calls, placed_columns

FLUSH_FORCED = 1
# mid-cell: the buffers whose records are all complete, full or not (a forced flush would
# also hand over a kernel still running, its record incomplete)
FLUSH_COMPLETED = 0
BUFFER_BYTES = 8 * 1024 * 1024
# idle buffers kept between profiles (CUPTI asks for one at a time per context)
IDLE_BUFFERS_KEPT = 4
# API calls that make or wait for GPU work: the only API records kept. Keeping the others
# (cudaGetDevice, cudaMalloc, cuCtxGetCurrent, ...) made 13x the records on a training loop.
API_NAMES = re.compile(r"Launch|Memcpy|Memset|Synchronize|WaitEvent|GraphLaunch", re.IGNORECASE)
# and the calls that allocate or free GPU memory (rare: allocators cache), so CUPTI's memory
# records join the line of the call that made them by its correlation id
MEMORY_API_NAMES = re.compile(r"Malloc|MemAlloc|MemCreate|Free|MemRelease|MemMap|MemUnmap")
# Of the others, those made around nearly every launch (a 50-step training loop made 8,556
# cudaGetDevice, 2,350 cuDevicePrimaryCtxGetState and 700 cuKernelGetName calls for 1,000
# launches, on the H200) are not recorded at all; rarer ones are recorded, then dropped.
CHATTY_API_NAMES = re.compile(
    r"cudaGetDevice|cudaSetDevice|cudaGetLastError|cudaPeekAtLastError|cudaDeviceGetAttribute"
    r"|cudaStreamIsCapturing|cudaStreamGetCaptureInfo|cudaPointerGetAttributes"
    r"|cudaFuncGetAttributes|cudaEventRecord|cudaEventQuery|cudaStreamQuery"
    r"|cuDevicePrimaryCtxGetState|cuCtxGetCurrent|cuCtxSetCurrent|cuCtxGetDevice"
    r"|cuKernelGet|cuFuncGetAttribute|cuOccupancy|cuPointerGetAttribute|cuStreamGetCaptureInfo"
    r"|cuStreamIsCapturing|cuDeviceGet|cuGetProcAddress|cuLibraryGetKernel|cuModuleGetFunction"
)

_REQUEST = ctypes.CFUNCTYPE(
    None,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.POINTER(ctypes.c_size_t),
    ctypes.POINTER(ctypes.c_size_t),
)
_COMPLETE = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t
)


class CuptiUnavailable(RuntimeError):
    """CUPTI cannot be used in this process; the message says why."""


def _libcupti_path() -> str | None:
    """The libcupti cupti-python loaded (same file, so ctypes shares its one instance)."""
    try:
        with open("/proc/self/maps") as maps:
            for row in maps:
                if "libcupti.so" in row:
                    return row.split(None, 5)[-1].strip()
    except OSError:
        pass
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        path: str = load_nvidia_dynamic_lib("cupti").abs_path
        return path
    except Exception:
        return None


class _BufferSink:
    """Process-wide buffer callbacks (kept alive forever: CUPTI may call them at any time).

    By default CUPTI zeroes each buffer it is handed, on the thread that made the record:
    ~0.5 ms per 8 MB buffer inside the cell, on the first launch after `begin` (measured on
    the H200). So buffers come zeroed from here (`ZEROED_OUT_ACTIVITY_BUFFER`): calloc'd once,
    reused across profiles, and only the bytes CUPTI wrote are cleared after it hands one back.
    """

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.lock = threading.Lock()
        self.live: set[int] = set()
        self.idle: list[int] = []
        self.completed: list[bytes] = []
        self.collecting = False
        libc = ctypes.CDLL(None)
        self._calloc = libc.calloc
        self._calloc.restype = ctypes.c_void_p
        self._calloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
        self._free = libc.free
        self._free.argtypes = [ctypes.c_void_p]
        self.request = _REQUEST(self._on_request)
        self.complete = _COMPLETE(self._on_complete)

    def reserve(self, count: int) -> None:
        """Keeps `count` idle buffers ready, so no allocation happens while a cell runs."""
        with self.lock:
            while len(self.idle) < count:
                address = self._calloc(1, BUFFER_BYTES)  # 16-byte aligned; CUPTI needs 8
                if not address:
                    return
                self.idle.append(address)

    def zeroed_buffers(self, attribute: int, value: int | None) -> int | None:
        """Sets CUPTI's "buffers come zeroed" flag (None: leaves it); returns the old value."""
        old, size = ctypes.c_uint8(), ctypes.c_size_t(1)
        if self.lib.cuptiActivityGetAttribute(attribute, size, ctypes.byref(old)) != 0:
            return None
        if value is not None:
            new, size = ctypes.c_uint8(value), ctypes.c_size_t(1)
            if self.lib.cuptiActivitySetAttribute(attribute, size, ctypes.byref(new)) != 0:
                return None
        return old.value

    def _on_request(self, buffer: Any, size: Any, max_records: Any) -> None:
        with self.lock:
            address = self.idle.pop() if self.idle else self._calloc(1, BUFFER_BYTES)
            if address:
                self.live.add(address)
        # a null buffer (out of memory) makes CUPTI drop records rather than fail
        buffer[0] = address or None
        size[0] = BUFFER_BYTES if address else 0
        max_records[0] = 0

    def _on_complete(self, context: Any, stream: int, buffer: int, size: int, valid: int) -> None:
        with self.lock:
            if buffer not in self.live:
                return
            self.live.discard(buffer)
            if valid and self.collecting:
                self.completed.append(ctypes.string_at(buffer, valid))
            if len(self.idle) < IDLE_BUFFERS_KEPT:
                ctypes.memset(buffer, 0, valid)  # zeroed for its next use
                self.idle.append(buffer)
            else:
                self._free(buffer)


# the one buffer sink of the process (CUPTI keeps calling what was registered)
_SINKS: list[_BufferSink] = []


def _configure(lib: ctypes.CDLL) -> None:
    lib.cuptiActivityRegisterCallbacks.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.cuptiActivityRegisterCallbacks.restype = ctypes.c_int
    lib.cuptiActivityGetNextRecord.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_void_p),
    ]
    lib.cuptiActivityGetNextRecord.restype = ctypes.c_int
    for name in ("cuptiActivityGetAttribute", "cuptiActivitySetAttribute"):
        function = getattr(lib, name)
        function.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p]
        function.restype = ctypes.c_int


def _latest_dtype(module: Any, stem: str) -> Any:
    """cupti-python's dtype of the newest version of a record struct, e.g. activity_kernel10."""
    pattern = re.compile(rf"^activity_{stem}(\d*)_dtype$")
    found = [(int(m.group(1) or 0), name) for name in dir(module) if (m := pattern.match(name))]
    if not found:
        raise CuptiUnavailable(f"cupti-python has no activity_{stem}*_dtype")
    return getattr(module, max(found)[1])


def _enum_names(enum: Any, overrides: dict[str, str]) -> dict[int, str]:
    return {int(member): overrides.get(member.name, member.name.lower()) for member in enum}


class _Tables:
    """What a process needs to know about its cupti-python once: kinds, dtypes, API calls."""

    def __init__(self, cupti: Any) -> None:
        kind = cupti.ActivityKind
        self.kinds = {
            "api": (int(kind.RUNTIME), int(kind.DRIVER)),
            "kernels": (int(kind.CONCURRENT_KERNEL),),
            "memcpy": (int(kind.MEMCPY),),
            # copies between two GPUs come as their own record kind (CUpti_ActivityMemcpyPtoP)
            "peer": (int(kind.MEMCPY2),),
            "memset": (int(kind.MEMSET),),
            "syncs": (int(kind.SYNCHRONIZATION),),
            # device memory allocated and released (CUpti_ActivityMemory4)
            "memory": (int(kind.MEMORY2),),
        }
        self.dtypes = {
            "api": cupti.activity_api_dtype,
            "kernels": _latest_dtype(cupti, "kernel"),
            "memcpy": _latest_dtype(cupti, "memcpy"),
            "peer": _latest_dtype(cupti, "memcpy_pto_p"),
            "memset": _latest_dtype(cupti, "memset"),
            "syncs": _latest_dtype(cupti, "synchronization"),
            "memory": _latest_dtype(cupti, "memory"),
        }
        self.family_of = {k: family for family, kinds in self.kinds.items() for k in kinds}
        self.sizes = {k: self.dtypes[family].itemsize for k, family in self.family_of.items()}
        self.copy_names = _enum_names(cupti.ActivityMemcpyKind, {"PTOP": "ptop"})
        self.memory_names = _enum_names(cupti.ActivityMemoryKind, {})
        self.memory_signs = operation_signs(_enum_names(cupti.ActivityMemoryOperationType, {}))
        self.zeroed_attribute = int(cupti.ActivityAttribute.ATTR_ZEROED_OUT_BUFFER)
        sync = cupti.ActivitySynchronizationType
        self.sync_names = {
            int(sync.CONTEXT_SYNCHRONIZE): "context",
            int(sync.STREAM_SYNCHRONIZE): "stream",
            int(sync.EVENT_SYNCHRONIZE): "event",
            int(sync.STREAM_WAIT_EVENT): "wait",
        }
        # API calls by key (activity kind << 32 | cbid): which are kept, which to turn off
        self.setters = {
            int(kind.RUNTIME): cupti.activity_enable_runtime_api,
            int(kind.DRIVER): cupti.activity_enable_driver_api,
        }
        self.selected: set[int] = set()
        self.turned_off: list[int] = []
        for api_kind, enum in (
            (int(kind.RUNTIME), cupti.runtime_api_trace_cbid),
            (int(kind.DRIVER), cupti.driver_api_trace_cbid),
        ):
            for member in enum:
                key = api_kind << 32 | int(member)
                if API_NAMES.search(member.name) or MEMORY_API_NAMES.search(member.name):
                    self.selected.add(key)
                elif CHATTY_API_NAMES.match(member.name):
                    self.turned_off.append(key)

    def learn(self, keys: Any) -> None:
        """Turns off, from the next profile on, unselected calls that showed up in this one."""
        known = set(self.turned_off)
        self.turned_off.extend(k for k in keys if k not in self.selected and k not in known)

    def set_api_calls(self, keys: list[int], on: bool) -> list[int]:
        """Turns the API records of `keys` on or off; returns the keys it could set."""
        done = []
        for key in keys:
            try:
                self.setters[key >> 32](key & 0xFFFFFFFF, int(on))
            except Exception:
                continue
            done.append(key)
        return done


@functools.lru_cache(maxsize=1)
def _tables(cupti: Any) -> _Tables:
    return _Tables(cupti)


class CuptiSession:
    name = "cupti"

    def __init__(self, memory: str = "reserved") -> None:
        """`memory`: the GPU memory views recorded too: "reserved" (CUPTI's memory
        records), "all" (and torch's allocator history, where torch runs) or "off"."""
        try:
            from cupti import cupti
        except ImportError as error:  # pragma: no cover - depends on the machine
            raise CuptiUnavailable(f"cupti-python failed to import ({error})") from error
        self.cupti = cupti
        self.warnings: list[str] = []
        try:
            cupti.get_timestamp()  # loads libcupti; fails cleanly without a driver
        except Exception as error:
            raise CuptiUnavailable(f"libcupti did not load ({error})") from error
        if not _SINKS:
            path = _libcupti_path()
            if path is None:
                raise CuptiUnavailable("could not find the libcupti that cupti-python loaded")
            lib = ctypes.CDLL(path)
            _configure(lib)
            _SINKS.append(_BufferSink(lib))
        self.sink = _SINKS[0]
        self.clock = cupti.get_timestamp
        self.tables = _tables(cupti)
        self._turned_off: list[int] = []
        self._zeroed_before: int | None = None
        self._enabled: list[int] = []
        self.main_tid = threading.get_native_id()
        # calls placed on their line while the cell ran, before their segments were dropped
        self._placed: dict[int, tuple[int, int]] = {}
        self._buffers_placed = 0
        self.driver_memory = memory != "off"
        self._memory_on = False  # CUPTI's memory records enabled in this profile
        self._history = AllocatorHistory(self.clock, self.warnings) if memory == "all" else None
        # set before finish: the clock's rate (not 1.0 once torch.profiler has given CUPTI
        # its own timestamps: `capture.clock`)
        self.ticks_per_ns = 1.0
        self._begin_timings: dict[str, float] = {}

    @staticmethod
    def prepare() -> None:
        """What a session's first profile would load, loaded now (see `capture.preload`):
        cupti-python and libcupti, the buffer sink, the activity tables, NumPy for the
        decode. Enables nothing: no record is made until `begin`."""
        session = CuptiSession()
        session.sink.reserve(2)
        import numpy  # noqa: F401  (the decode's)

    # -- lifecycle -----------------------------------------------------------------------
    def begin(self) -> None:
        cupti = self.cupti
        began = time.perf_counter()
        self.sink.reserve(2)
        self._zeroed_before = self.sink.zeroed_buffers(self.tables.zeroed_attribute, 1)
        with self.sink.lock:
            self.sink.completed.clear()
            self.sink.collecting = True
        self._placed.clear()
        self._buffers_placed = 0
        rc = self.sink.lib.cuptiActivityRegisterCallbacks(
            ctypes.cast(self.sink.request, ctypes.c_void_p),
            ctypes.cast(self.sink.complete, ctypes.c_void_p),
        )
        if rc != CUPTI_SUCCESS:
            self.sink.collecting = False
            raise CuptiUnavailable(
                f"cuptiActivityRegisterCallbacks returned {rc}: another tool holds CUPTI"
            )
        try:
            cupti.set_thread_id_type(cupti.ActivityThreadIdType.SYSTEM)
        except Exception:
            self.warnings.append("CUPTI thread ids are not system ids: thread counts may be off")
        for family in ("api", "kernels", "memcpy", "peer", "memset", "syncs"):
            for kind in self.tables.kinds[family]:
                cupti.activity_enable(kind)
                self._enabled.append(kind)
        self._memory_on = False
        if self.driver_memory:
            for kind in self.tables.kinds["memory"]:
                try:
                    cupti.activity_enable(kind)
                except Exception as error:
                    self.warnings.append(f"CUPTI's memory records are unavailable ({error})")
                    continue
                self._enabled.append(kind)
                self._memory_on = True
        enabled = time.perf_counter()
        if self._history is not None:
            self._history.begin()
        history = time.perf_counter()
        # Records of the calls that neither make nor wait for GPU work are dropped in
        # decode_buffers; the frequent ones are not even recorded (turned off per cbid,
        # which works only with RUNTIME/DRIVER on: measured on the H200). Turning off all
        # ~1,000 cost 0.6 ms on each begin and as much to restore.
        self._turned_off = self.tables.set_api_calls(self.tables.turned_off, on=False)
        self._begin_timings = {
            "enable_s": enabled - began,
            "history_begin_s": history - enabled,
            "api_filter_s": time.perf_counter() - history,
        }

    def place_calls(self, segments: Segments, retained_from: int) -> None:
        """Before the line timeline drops its oldest segments: hands over the buffers CUPTI
        has completed and places each API call they hold on the line it was made from.

        The main thread is inside the recorder, so its own calls have all returned; a call
        still running on another thread is placed at a later fold, while its start is still
        among the segments kept."""
        self.cupti.activity_flush_all(FLUSH_COMPLETED)
        with self.sink.lock:
            fresh = self.sink.completed[self._buffers_placed :]
            self._buffers_placed = len(self.sink.completed)
        api = decode_api_calls(fresh, self)
        calls = zip(api["corr"], api["start"], strict=True)
        place_calls(self._placed, calls, segments, retained_from)

    def finish(self) -> dict[str, Any]:
        """Waits for the cell's GPU work, flushes, releases CUPTI, decodes. Never raises."""
        cupti = self.cupti
        began = time.perf_counter()
        _synchronize_active_contexts(self.warnings)
        synced = time.perf_counter()
        try:
            cupti.activity_flush_all(FLUSH_FORCED)
        except Exception as error:
            self.warnings.append(f"CUPTI flush failed ({error}): some records may be missing")
        flushed = time.perf_counter()
        for kind in self._enabled:
            with contextlib.suppress(Exception):
                cupti.activity_disable(kind)
        self._enabled.clear()
        # CUPTI's defaults (every call recorded) back for the next owner, e.g. torch.profiler
        restoring = time.perf_counter()
        self.tables.set_api_calls(self._turned_off, on=True)
        self._turned_off = []
        restored = time.perf_counter()
        if self._zeroed_before is not None:
            self.sink.zeroed_buffers(self.tables.zeroed_attribute, self._zeroed_before)
            self._zeroed_before = None
        with self.sink.lock:
            self.sink.collecting = False
            buffers, self.sink.completed = self.sink.completed, []
        released = time.perf_counter()
        records = decode_buffers(buffers, self)
        records["main_tid"] = self.main_tid
        if self._memory_on:  # recorded, so a cell that allocated nothing says so
            records.setdefault(
                "driver_memory", {"corr": [], "start": [], "bytes": [], "device": []}
            )
        if self._placed:
            records["placed"] = placed_columns(self._placed)
        decoded = time.perf_counter()
        if self._history is not None:
            records.update(self._history.finish(self.ticks_per_ns))
        read = time.perf_counter()
        records["_timings"] = {
            **self._begin_timings,
            "sync_s": synced - began,
            "flush_s": flushed - began,
            "release_s": released - flushed,
            "api_restore_s": restored - restoring,
            "decode_s": decoded - released,
            "memory_s": read - decoded,
            "buffers": len(buffers),
            "buffer_bytes": sum(len(b) for b in buffers),
        }
        self._devices = sorted(
            set(records.get("kernels", {}).get("device", []))
            | set(records.get("memcpy", {}).get("device", []))
        )
        return records

    def gpus(self) -> list[dict[str, Any]]:
        return [
            {"index": index, "name": _device_name(index)} for index in getattr(self, "_devices", [])
        ]


def _synchronize_active_contexts(warnings: list[str]) -> None:
    """Waits for every primary context in use, so its records are complete before the flush."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        warnings.append("cuda-bindings missing: records of unfinished GPU work may be cut")
        return
    err, count = cu.cuDeviceGetCount()
    if err != cu.CUresult.CUDA_SUCCESS:
        return  # CUDA never initialized in this process: nothing ran on a GPU
    for ordinal in range(count):
        err, device = cu.cuDeviceGet(ordinal)
        err, _flags, active = cu.cuDevicePrimaryCtxGetState(device)
        if err != cu.CUresult.CUDA_SUCCESS or not active:
            continue
        err, context = cu.cuDevicePrimaryCtxRetain(device)
        if err != cu.CUresult.CUDA_SUCCESS:
            continue
        try:
            cu.cuCtxPushCurrent(context)
            err = cu.cuCtxSynchronize()[0]
            if err != cu.CUresult.CUDA_SUCCESS:
                warnings.append(f"GPU {ordinal} reported {err.name} while finishing its work")
            cu.cuCtxPopCurrent()
        finally:
            cu.cuDevicePrimaryCtxRelease(device)


@functools.lru_cache(maxsize=64)
def _device_name(index: int) -> str:
    try:
        from cuda.bindings import driver as cu

        _err, device = cu.cuDeviceGet(index)
        _err, raw = cu.cuDeviceGetName(256, device)
        name: str = raw.split(b"\0", 1)[0].decode()
        return name
    except Exception:
        return f"GPU {index}"
