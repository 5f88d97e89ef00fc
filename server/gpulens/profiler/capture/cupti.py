"""CUPTI backend: activity records only, no Python callback per launch.

cupti-python enables the activity kinds and per-cbid API records and gives the clock
(`cupti.get_timestamp`, the records' own time base) and the numpy dtypes of the record
structs. It hands completed buffers over as one Python object per record (about 15 us
each, measured), so the two buffer callbacks are registered on the very same libcupti
through ctypes instead: a completed buffer is copied out as bytes, and decoded after the
cell in bulk with those dtypes. One activity-buffer owner per process: at the end every
kind is disabled, every cbid filter restored and the buffers flushed, so torch.profiler
(Kineto) can register its own callbacks afterwards.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import re
import struct
import threading
import time
from typing import Any

CUPTI_SUCCESS = 0
FLUSH_FORCED = 1
BUFFER_BYTES = 8 * 1024 * 1024
# idle buffers kept between profiles (CUPTI asks for one at a time per context)
IDLE_BUFFERS_KEPT = 4
# API calls that make or wait for GPU work; everything else (cudaGetDevice, cudaMalloc,
# cuCtxGetCurrent, ...) is not recorded, which cut API records 13x on a training loop.
API_NAMES = re.compile(r"Launch|Memcpy|Memset|Synchronize|WaitEvent|GraphLaunch", re.IGNORECASE)
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

        return load_nvidia_dynamic_lib("cupti").abs_path
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
        # a null buffer makes CUPTI drop records rather than fail; the count is reported
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
# whether the stride walk matched CUPTI's own record cursor (checked once per process)
_WALK_VERIFIED: list[bool] = []


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
        }
        self.dtypes = {
            "api": cupti.activity_api_dtype,
            "kernels": _latest_dtype(cupti, "kernel"),
            "memcpy": _latest_dtype(cupti, "memcpy"),
            "peer": _latest_dtype(cupti, "memcpy_pto_p"),
            "memset": _latest_dtype(cupti, "memset"),
            "syncs": _latest_dtype(cupti, "synchronization"),
        }
        self.family_of = {k: family for family, kinds in self.kinds.items() for k in kinds}
        self.sizes = {k: self.dtypes[family].itemsize for k, family in self.family_of.items()}
        self.copy_names = _enum_names(cupti.ActivityMemcpyKind, {"PTOP": "ptop"})
        self.memory_names = _enum_names(cupti.ActivityMemoryKind, {})
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
                if API_NAMES.search(member.name):
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

    def __init__(self) -> None:
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
        self.kinds = self.tables.kinds
        self.dtypes = self.tables.dtypes
        self._turned_off: list[int] = []
        self._zeroed_before: int | None = None
        self._enabled: list[int] = []
        self.main_tid = threading.get_native_id()

    # -- lifecycle -----------------------------------------------------------------------
    def begin(self) -> None:
        cupti = self.cupti
        self.sink.reserve(2)
        self._zeroed_before = self.sink.zeroed_buffers(self.tables.zeroed_attribute, 1)
        with self.sink.lock:
            self.sink.completed.clear()
            self.sink.collecting = True
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
            for kind in self.kinds[family]:
                cupti.activity_enable(kind)
                self._enabled.append(kind)
        # Records of the calls that neither make nor wait for GPU work are dropped in
        # decode_buffers; the frequent ones are not even recorded (turned off per cbid,
        # which works only with RUNTIME/DRIVER on: measured on the H200). Turning off all
        # ~1,000 cost 0.6 ms on each begin and as much to restore.
        self._turned_off = self.tables.set_api_calls(self.tables.turned_off, on=False)

    def finish(self) -> dict[str, Any]:
        """Waits for the cell's GPU work, flushes, releases CUPTI, decodes. Never raises."""
        cupti = self.cupti
        began = time.perf_counter()
        _synchronize_active_contexts(self.warnings)
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
        self.tables.set_api_calls(self._turned_off, on=True)
        self._turned_off = []
        if self._zeroed_before is not None:
            self.sink.zeroed_buffers(self.tables.zeroed_attribute, self._zeroed_before)
            self._zeroed_before = None
        with self.sink.lock:
            self.sink.collecting = False
            buffers, self.sink.completed = self.sink.completed, []
        released = time.perf_counter()
        records = decode_buffers(buffers, self)
        records["main_tid"] = self.main_tid
        decoded = time.perf_counter()
        records["_timings"] = {
            "flush_s": flushed - began,
            "release_s": released - flushed,
            "decode_s": decoded - released,
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
        return raw.split(b"\0", 1)[0].decode()
    except Exception:
        return f"GPU {index}"


# -- decoding ---------------------------------------------------------------------------------
_KIND = struct.Struct("<I")


def _walk_by_size(
    words: memoryview, begin: int, end: int, sizes: dict[int, int]
) -> list[tuple[int, int]] | None:
    """(kind, offset) of each record, stepping by struct size; None on an unknown kind.

    `words` is the blob as uint32: records start 8-byte aligned, their kind first."""
    found = []
    append = found.append
    get = sizes.get
    offset = begin
    while offset < end:
        kind = words[offset >> 2]
        size = get(kind)
        if size is None:
            return None
        append((kind, offset))
        offset += size
    return found if offset == end else None


def _walk_by_cupti(lib: ctypes.CDLL, blob: bytes, begin: int, end: int) -> list[tuple[int, int]]:
    """(kind, offset) of each record through cuptiActivityGetNextRecord (the reference walk)."""
    chunk = ctypes.create_string_buffer(blob[begin:end], end - begin)
    base = ctypes.addressof(chunk)
    cursor = ctypes.c_void_p()
    found = []
    while lib.cuptiActivityGetNextRecord(chunk, end - begin, ctypes.byref(cursor)) == CUPTI_SUCCESS:
        offset = cursor.value - base
        found.append((_KIND.unpack_from(blob, begin + offset)[0], begin + offset))
    return found


def decode_buffers(buffers: list[bytes], session: CuptiSession) -> dict[str, Any]:
    """Completed activity buffers -> plain columns per record family (see attribution)."""
    import numpy as np

    if not buffers:
        return {}
    tables = session.tables
    family_of, sizes = tables.family_of, tables.sizes
    widest = max(sizes.values())
    blob = b"".join(buffers) + bytes(widest + 8)  # padding: a gather never reads past the end
    words = memoryview(blob)[: len(blob) // 4 * 4].cast("I")
    offsets: dict[str, list[int]] = {family: [] for family in session.kinds}
    begin = 0
    for buffer in buffers:
        end = begin + len(buffer)
        verified = _WALK_VERIFIED[0] if _WALK_VERIFIED else None
        walk = _walk_by_size(words, begin, end, sizes) if verified is not False else None
        if walk is not None and verified is None:
            # once per process: the stride walk must match CUPTI's own cursor
            verified = walk == _walk_by_cupti(session.sink.lib, blob, begin, end)
            _WALK_VERIFIED.append(verified)
            if not verified:
                session.warnings.append(
                    "activity records are laid out differently from cupti-python's dtypes; "
                    "decoded with CUPTI's record cursor (slower)"
                )
                walk = None
        if walk is None:
            walk = _walk_by_cupti(session.sink.lib, blob, begin, end)
        for kind, offset in walk:
            family = family_of.get(kind)
            if family is not None:
                offsets[family].append(offset)
        begin = end
    words.release()
    raw = np.frombuffer(blob, dtype=np.uint8)

    def gather(family: str) -> Any:
        dtype = session.dtypes[family]
        if not offsets[family]:  # most cells have no memset, peer copy or sync at all
            return np.empty(0, dtype=dtype)
        where = np.asarray(offsets[family], dtype=np.int64)
        rows = raw[where[:, None] + np.arange(dtype.itemsize)]
        return np.ascontiguousarray(rows).view(dtype).reshape(-1)

    out: dict[str, Any] = {}
    api = gather("api")
    keys = api["kind"].astype(np.int64) << 32 | api["cbid"].astype(np.int64)
    seen = np.unique(keys).tolist()
    tables.learn(seen)
    kept = [key for key in seen if key in tables.selected]
    if len(kept) < len(seen):
        api = api[np.isin(keys, kept)]
    out["api"] = {
        "corr": api["correlation_id"].tolist(),
        "start": api["start"].tolist(),
        "end": api["end"].tolist(),
        "tid": api["thread_id"].tolist(),
    }
    kernels = gather("kernels")
    pointers, name_index = np.unique(kernels["name"], return_inverse=True)
    out["names"] = [_read_name(int(p)) for p in pointers.tolist()]
    out["kernels"] = {
        "corr": kernels["correlation_id"].tolist(),
        "start": kernels["start"].tolist(),
        "end": kernels["end"].tolist(),
        "device": kernels["device_id"].tolist(),
        "stream": kernels["stream_id"].tolist(),
        "name": name_index.reshape(-1).tolist(),
    }
    copy_names, memory_names = tables.copy_names, tables.memory_names
    memcpy, peer = gather("memcpy"), gather("peer")
    out["memcpy"] = {
        "corr": memcpy["correlation_id"].tolist() + peer["correlation_id"].tolist(),
        "start": memcpy["start"].tolist() + peer["start"].tolist(),
        "end": memcpy["end"].tolist() + peer["end"].tolist(),
        "device": memcpy["device_id"].tolist() + peer["device_id"].tolist(),
        "bytes": memcpy["bytes"].tolist() + peer["bytes"].tolist(),
        # a copy between two GPUs is a device-to-device copy, the payload's one direction
        "copy_kind": [copy_names.get(k, "other") for k in memcpy["copy_kind"].tolist()]
        + ["dtod"] * len(peer),
        "src_kind": [
            memory_names.get(k, "unknown")
            for k in memcpy["src_kind"].tolist() + peer["src_kind"].tolist()
        ],
        "dst_kind": [
            memory_names.get(k, "unknown")
            for k in memcpy["dst_kind"].tolist() + peer["dst_kind"].tolist()
        ],
    }
    memset = gather("memset")
    out["memset"] = {
        "corr": memset["correlation_id"].tolist(),
        "start": memset["start"].tolist(),
        "end": memset["end"].tolist(),
        "device": memset["device_id"].tolist(),
        "bytes": memset["bytes"].tolist(),
    }
    sync_names = tables.sync_names
    syncs = gather("syncs")
    out["syncs"] = {
        "corr": syncs["correlation_id"].tolist(),
        "start": syncs["start"].tolist(),
        "end": syncs["end"].tolist(),
        "type": [sync_names.get(k, "unknown") for k in syncs["type"].tolist()],
    }
    return out


def _enum_names(enum: Any, overrides: dict[str, str]) -> dict[int, str]:
    return {int(member): overrides.get(member.name, member.name.lower()) for member in enum}


def _read_name(pointer: int) -> str:
    if not pointer:
        return "?"
    try:
        return demangle(ctypes.string_at(pointer).decode(errors="replace"))
    except Exception:
        return "?"


@functools.lru_cache(maxsize=1)
def _demangler() -> Any:
    try:
        function = ctypes.CDLL("libstdc++.so.6").__cxa_demangle
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [
        ctypes.c_char_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_int),
    ]
    return function


@functools.lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """C++ kernel names as people read them (libstdc++'s demangler), else unchanged."""
    function = _demangler() if name.startswith("_Z") else None
    if function is None:
        return name
    status = ctypes.c_int()
    result = function(name.encode(), None, None, ctypes.byref(status))
    if status.value != 0 or not result:
        return name
    text = ctypes.string_at(result).decode(errors="replace")
    ctypes.CDLL(None).free(ctypes.c_void_p(result))
    return text
