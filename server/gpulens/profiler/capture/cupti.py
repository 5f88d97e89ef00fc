"""CUPTI backend: activity records only, no Python callback per launch.

Every call into CUPTI while a cell runs goes through ctypes on libcupti (`libcupti`), and
what the capture must know of CUPTI (record kinds and layouts, which API calls to keep)
comes from tables learnt once from cupti-python and kept in the user's cache
(`cupti_tables`): a first profile in a fresh kernel then imports neither cupti-python
(60-70 ms) nor cuda-bindings. Completed buffers are handed over by two ctypes callbacks
(cupti-python's own hand one Python object per record, about 15 us each, measured), copied
out as bytes and decoded after the cell in bulk (`activity`). One activity-buffer owner per
process: at the end every kind is disabled, every cbid filter restored and the buffers
flushed, so torch.profiler (Kineto) can register its own callbacks afterwards.

Lines are stamped with `time.time_ns`; CUPTI stamps its records with the same clock, Unix
time (checked at each profile: CUPTI's clock read against Unix time at the start and the
end, 36 ns apart on an H100), unless torch.profiler has given it another source, and then
its records are moved onto Unix time by those two readings (`clock.onto_unix`).
"""

from __future__ import annotations

import ctypes
import threading
import time
from typing import Any

from gpulens.profiler.capture import cupti_tables
from gpulens.profiler.capture.activity import decode_api_calls, decode_buffers
from gpulens.profiler.capture.clock import ClockScale, Reading, onto_unix, rescale_records
from gpulens.profiler.capture.cuda_driver import device_name, synchronize_active_contexts
from gpulens.profiler.capture.cupti_tables import Tables, TablesUnavailable
from gpulens.profiler.capture.libcupti import (
    CUPTI_SUCCESS,
    CuptiUnavailable,
    Libcupti,
    loaded_path,
    open_library,
)
from gpulens.profiler.capture.memory import AllocatorHistory
from gpulens.profiler.timeline import Segments, place_calls, placed_columns

__all__ = ["CuptiSession", "CuptiUnavailable"]

FLUSH_FORCED = 1
# mid-cell: the buffers whose records are all complete, full or not (a forced flush would
# also hand over a kernel still running, its record incomplete)
FLUSH_COMPLETED = 0
BUFFER_BYTES = 8 * 1024 * 1024
# idle buffers kept between profiles (CUPTI asks for one at a time per context)
IDLE_BUFFERS_KEPT = 4

_REQUEST = ctypes.CFUNCTYPE(
    None,
    ctypes.POINTER(ctypes.c_void_p),
    ctypes.POINTER(ctypes.c_size_t),
    ctypes.POINTER(ctypes.c_size_t),
)
_COMPLETE = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t
)


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
# the tables of this process's cupti-python build (one object: `learn` grows it) and its
# libcupti, once opened
_OPENED: list[tuple[Tables, Libcupti]] = []
_OPENING = threading.Lock()


def _learn_tables(key: str) -> Tables:
    """The tables read from cupti-python itself (its import: 60-70 ms), kept for next time."""
    try:
        from cupti import cupti
    except ImportError as error:  # pragma: no cover - depends on the machine
        raise CuptiUnavailable(f"cupti-python failed to import ({error})") from error
    try:
        cupti.get_timestamp()  # loads libcupti; fails cleanly without a driver
    except Exception as error:
        raise CuptiUnavailable(f"libcupti did not load ({error})") from error
    path = loaded_path()
    if path is None:
        raise CuptiUnavailable("could not find the libcupti that cupti-python loaded")
    try:
        tables = cupti_tables.from_cupti(cupti, path)
    except TablesUnavailable as error:
        raise CuptiUnavailable(str(error)) from error
    cupti_tables.write_cached(key, tables)
    return tables


def _open() -> tuple[Tables, Libcupti]:
    """This process's tables and libcupti (and its one buffer sink): from the user's cache
    where they are kept for the cupti-python installed, else learnt from it; found once per
    process (a library loaded stays loaded: a cupti-python upgraded meanwhile is the next
    process's)."""
    with _OPENING:  # the preload thread may be opening them right now
        if not _OPENED:
            _OPENED.append(_open_now())
        if not _SINKS:
            _SINKS.append(_BufferSink(_OPENED[0][1].lib))
        return _OPENED[0]


def _open_now() -> tuple[Tables, Libcupti]:
    key = cupti_tables.build_key()
    if key is None:
        raise CuptiUnavailable("cupti-python is not installed (pip install 'gpulens[cupti]')")
    tables = cupti_tables.read_cached(key)
    loaded = loaded_path()
    if tables is None or (loaded is not None and loaded != tables.libcupti):
        # none kept, or kept for another libcupti than the one this process runs: learn anew
        # (from the one cupti-python loads, which is then this process's)
        tables = _learn_tables(key)
    return tables, open_library(tables.libcupti)


class CuptiSession:
    name = "cupti"

    def __init__(self, memory: str = "reserved") -> None:
        """`memory`: the GPU memory views recorded too: "reserved" (CUPTI's memory
        records), "all" (and torch's allocator history, where torch runs) or "off"."""
        self.tables, self.libcupti = _open()
        self.warnings: list[str] = []
        self.sink = _SINKS[0]
        self.clock = time.time_ns
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
        # set before finish: the line clock's rate (Unix ns: always 1.0)
        self.ticks_per_ns = 1.0
        # CUPTI's clock against Unix time, read as the cell began
        self._first: Reading | None = None
        self._begin_timings: dict[str, float] = {}

    @staticmethod
    def prepare() -> None:
        """What a session's first profile would load, loaded now (see `capture.preload`):
        libcupti, its tables (learnt from cupti-python where the user's cache lacks them),
        the buffer sink, NumPy for the decode. Enables nothing: no record is made until
        `begin`."""
        session = CuptiSession()
        session.sink.reserve(2)
        import numpy  # noqa: F401  (the decode's)

    # -- lifecycle -----------------------------------------------------------------------
    def begin(self) -> None:
        libcupti, tables = self.libcupti, self.tables
        began = time.perf_counter()
        self.sink.reserve(2)
        self._zeroed_before = self.sink.zeroed_buffers(tables.zeroed_attribute, 1)
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
        if not libcupti.set_thread_id_type(tables.thread_id_system):
            self.warnings.append("CUPTI thread ids are not system ids: thread counts may be off")
        for family in ("api", "kernels", "memcpy", "peer", "memset", "syncs"):
            for kind in tables.kinds[family]:
                libcupti.enable(kind)
                self._enabled.append(kind)
        self._memory_on = False
        if self.driver_memory:
            for kind in tables.kinds["memory"]:
                try:
                    libcupti.enable(kind)
                except CuptiUnavailable as error:
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
        self._turned_off = self._set_api_calls(tables.turned_off, on=False)
        filtered = time.perf_counter()
        self._first = libcupti.reading()
        self._begin_timings = {
            "enable_s": enabled - began,
            "history_begin_s": history - enabled,
            "api_filter_s": filtered - history,
        }

    def _set_api_calls(self, keys: list[int], on: bool) -> list[int]:
        """Records the API calls of `keys` (kind << 32 | cbid), or not; the keys it could set."""
        runtime, set_call = self.tables.runtime_kind, self.libcupti.set_api_call
        return [key for key in keys if set_call(key >> 32 == runtime, key & 0xFFFFFFFF, on)]

    def _records_scale(self) -> ClockScale | None:
        """CUPTI's clock onto Unix ns, from now and the cell's start; None: it is Unix time."""
        if self._first is None:
            return None
        return onto_unix(self._first, self.libcupti.reading())

    def place_calls(self, segments: Segments, retained_from: int) -> None:
        """Before the line timeline drops its oldest segments: hands over the buffers CUPTI
        has completed and places each API call they hold on the line it was made from.

        The main thread is inside the recorder, so its own calls have all returned; a call
        still running on another thread is placed at a later fold, while its start is still
        among the segments kept."""
        self.libcupti.flush(FLUSH_COMPLETED)
        with self.sink.lock:
            fresh = self.sink.completed[self._buffers_placed :]
            self._buffers_placed = len(self.sink.completed)
        api = decode_api_calls(fresh, self)
        scale = self._records_scale()
        starts = api["start"] if scale is None else scale.all_to_ns(api["start"])
        calls = zip(api["corr"], starts, strict=True)
        place_calls(self._placed, calls, segments, retained_from)

    def finish(self) -> dict[str, Any]:
        """Waits for the cell's GPU work, flushes, releases CUPTI, decodes. Never raises."""
        libcupti = self.libcupti
        began = time.perf_counter()
        synchronize_active_contexts(self.warnings)
        synced = time.perf_counter()
        scale = self._records_scale()
        try:
            libcupti.flush(FLUSH_FORCED)
        except CuptiUnavailable as error:
            self.warnings.append(f"CUPTI flush failed ({error}): some records may be missing")
        flushed = time.perf_counter()
        for kind in self._enabled:
            libcupti.disable(kind)
        self._enabled.clear()
        # CUPTI's defaults (every call recorded) back for the next owner, e.g. torch.profiler
        restoring = time.perf_counter()
        self._set_api_calls(self._turned_off, on=True)
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
        if scale is not None:
            rescale_records(records, scale)
        records["main_tid"] = self.main_tid
        if self._memory_on:  # recorded, so a cell that allocated nothing says so
            records.setdefault(
                "driver_memory", {"corr": [], "start": [], "bytes": [], "device": []}
            )
        if self._placed:  # placed on Unix time already
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
        if scale is not None:
            records["_timings"]["records_ticks_per_ns"] = scale.ticks_per_ns
        self._devices = sorted(
            set(records.get("kernels", {}).get("device", []))
            | set(records.get("memcpy", {}).get("device", []))
        )
        return records

    def gpus(self) -> list[dict[str, Any]]:
        return [
            {"index": index, "name": device_name(index)} for index in getattr(self, "_devices", [])
        ]
