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
# API calls that make or wait for GPU work; everything else (cudaGetDevice, cudaMalloc,
# cuCtxGetCurrent, ...) is not recorded, which cut API records 13x on a training loop.
API_NAMES = re.compile(r"Launch|Memcpy|Memset|Synchronize|WaitEvent|GraphLaunch", re.IGNORECASE)

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
    """Process-wide buffer callbacks (kept alive forever: CUPTI may call them at any time)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        self.lock = threading.Lock()
        self.live: dict[int, ctypes.Array[ctypes.c_char]] = {}
        self.completed: list[bytes] = []
        self.collecting = False
        self.request = _REQUEST(self._on_request)
        self.complete = _COMPLETE(self._on_complete)

    def _on_request(self, buffer: Any, size: Any, max_records: Any) -> None:
        block = ctypes.create_string_buffer(BUFFER_BYTES)  # malloc'd: 16-byte aligned
        address = ctypes.addressof(block)
        with self.lock:
            self.live[address] = block
        buffer[0] = address
        size[0] = BUFFER_BYTES
        max_records[0] = 0

    def _on_complete(self, context: Any, stream: int, buffer: int, size: int, valid: int) -> None:
        with self.lock:
            block = self.live.pop(buffer, None)
            if block is not None and valid and self.collecting:
                self.completed.append(ctypes.string_at(buffer, valid))


# the one buffer sink of the process (CUPTI keeps calling what was registered)
_SINKS: list[_BufferSink] = []
# whether the stride walk matched CUPTI's own record cursor (checked once per process)
_WALK_VERIFIED: list[bool] = []
# (domain, cbid) of the API calls not recorded, computed once per process
_FILTERED_CBIDS: list[tuple[str, int]] = []
_SELECTED_CBIDS: list[tuple[str, int]] = []


class _CbidRestore:
    """Turns filtered cbids back on in a background thread (see CuptiSession.finish)."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None

    def start(self, cupti: Any, cbids: list[tuple[str, int]]) -> None:
        def restore() -> None:
            for domain, cbid in cbids:
                setter = (
                    cupti.activity_enable_runtime_api
                    if domain == "runtime"
                    else cupti.activity_enable_driver_api
                )
                with contextlib.suppress(Exception):
                    setter(cbid, 1)

        self.join()
        self.thread = threading.Thread(target=restore, name="gpulens-cupti-restore", daemon=True)
        self.thread.start()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()
            self.thread = None


_RESTORING = _CbidRestore()


def wait_for_release() -> None:
    """Blocks until CUPTI is back to its defaults (for callers handing it to another tool)."""
    _RESTORING.join()


def _configure(lib: ctypes.CDLL) -> None:
    lib.cuptiActivityRegisterCallbacks.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.cuptiActivityRegisterCallbacks.restype = ctypes.c_int
    lib.cuptiActivityGetNextRecord.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_void_p),
    ]
    lib.cuptiActivityGetNextRecord.restype = ctypes.c_int


def _latest_dtype(module: Any, stem: str) -> Any:
    """cupti-python's dtype of the newest version of a record struct, e.g. activity_kernel10."""
    pattern = re.compile(rf"^activity_{stem}(\d*)_dtype$")
    found = [(int(m.group(1) or 0), name) for name in dir(module) if (m := pattern.match(name))]
    if not found:
        raise CuptiUnavailable(f"cupti-python has no activity_{stem}*_dtype")
    return getattr(module, max(found)[1])


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
        path = _libcupti_path()
        if path is None:
            raise CuptiUnavailable("could not find the libcupti that cupti-python loaded")
        if not _SINKS:
            lib = ctypes.CDLL(path)
            _configure(lib)
            _SINKS.append(_BufferSink(lib))
        self.sink = _SINKS[0]
        self.clock = cupti.get_timestamp
        kind = cupti.ActivityKind
        self.kinds = {
            "api": (int(kind.RUNTIME), int(kind.DRIVER)),
            "kernels": (int(kind.CONCURRENT_KERNEL),),
            "memcpy": (int(kind.MEMCPY),),
            "memset": (int(kind.MEMSET),),
            "syncs": (int(kind.SYNCHRONIZATION),),
        }
        self.dtypes = {
            "api": cupti.activity_api_dtype,
            "kernels": _latest_dtype(cupti, "kernel"),
            "memcpy": _latest_dtype(cupti, "memcpy"),
            "memset": _latest_dtype(cupti, "memset"),
            "syncs": _latest_dtype(cupti, "synchronization"),
        }
        self._filtered: list[tuple[str, int]] = []

        self._enabled: list[int] = []
        self.main_tid = threading.get_native_id()

    # -- lifecycle -----------------------------------------------------------------------
    def begin(self) -> None:
        cupti = self.cupti
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
        for family in ("api", "kernels", "memcpy", "memset", "syncs"):
            for kind in self.kinds[family]:
                cupti.activity_enable(kind)
                self._enabled.append(kind)
        self._filter_api_records()

    def _filter_api_records(self) -> None:
        """Keep API records of the calls that make or wait for GPU work only."""
        cupti = self.cupti
        if not _FILTERED_CBIDS:
            for domain, enum in (
                ("runtime", cupti.runtime_api_trace_cbid),
                ("driver", cupti.driver_api_trace_cbid),
            ):
                for member in enum:
                    if member.name.startswith(("INVALID", "SIZE", "FORCE_INT")):
                        continue
                    chosen = _SELECTED_CBIDS if API_NAMES.search(member.name) else _FILTERED_CBIDS
                    chosen.append((domain, int(member)))
        setters = {
            "runtime": cupti.activity_enable_runtime_api,
            "driver": cupti.activity_enable_driver_api,
        }
        # The kinds must be on and the others turned off: turning on the chosen cbids alone,
        # with RUNTIME/DRIVER off, gave no API record at all (measured on the H200).
        _RESTORING.join()
        for domain, cbid in _FILTERED_CBIDS:
            try:
                setters[domain](cbid, 0)
            except Exception:
                continue
            self._filtered.append((domain, cbid))

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
        # Restoring CUPTI's default (every cbid on) for the next owner takes ~1 ms of
        # calls: done off the path to the result; the next begin() waits for it.
        _RESTORING.start(cupti, self._filtered)
        self._filtered = []
        with contextlib.suppress(Exception):
            cupti.activity_flush_all(FLUSH_FORCED)
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
    family_of = {kind: family for family, kinds in session.kinds.items() for kind in kinds}
    sizes = {kind: session.dtypes[family].itemsize for kind, family in family_of.items()}
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
        where = np.asarray(offsets[family], dtype=np.int64)
        rows = raw[where[:, None] + np.arange(dtype.itemsize)]
        return np.ascontiguousarray(rows).view(dtype).reshape(-1)

    cupti = session.cupti
    out: dict[str, Any] = {}
    api = gather("api")
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
    copy_names = _enum_names(cupti.ActivityMemcpyKind, {"PTOP": "ptop"})
    memory_names = _enum_names(cupti.ActivityMemoryKind, {})
    memcpy = gather("memcpy")
    out["memcpy"] = {
        "corr": memcpy["correlation_id"].tolist(),
        "start": memcpy["start"].tolist(),
        "end": memcpy["end"].tolist(),
        "device": memcpy["device_id"].tolist(),
        "bytes": memcpy["bytes"].tolist(),
        "copy_kind": [copy_names.get(k, "other") for k in memcpy["copy_kind"].tolist()],
        "src_kind": [memory_names.get(k, "unknown") for k in memcpy["src_kind"].tolist()],
        "dst_kind": [memory_names.get(k, "unknown") for k in memcpy["dst_kind"].tolist()],
    }
    memset = gather("memset")
    out["memset"] = {
        "corr": memset["correlation_id"].tolist(),
        "start": memset["start"].tolist(),
        "end": memset["end"].tolist(),
        "device": memset["device_id"].tolist(),
        "bytes": memset["bytes"].tolist(),
    }
    sync_names = {
        int(cupti.ActivitySynchronizationType.CONTEXT_SYNCHRONIZE): "context",
        int(cupti.ActivitySynchronizationType.STREAM_SYNCHRONIZE): "stream",
        int(cupti.ActivitySynchronizationType.EVENT_SYNCHRONIZE): "event",
        int(cupti.ActivitySynchronizationType.STREAM_WAIT_EVENT): "wait",
    }
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
