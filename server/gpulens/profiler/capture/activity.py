"""Decoding CUPTI activity buffers in bulk, with cupti-python's numpy dtypes of the records.

A completed buffer is a run of records, each starting with its kind; stepping by the size
of each kind's struct finds them all (checked once per process against CUPTI's own record
cursor), then each family is gathered into one numpy array and turned into plain columns.
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from gpulens.profiler.capture.libcupti import CUPTI_SUCCESS
from gpulens.profiler.capture.memory import driver_memory_columns

if TYPE_CHECKING:
    from gpulens.profiler.capture.cupti import CuptiSession

# whether the stride walk matched CUPTI's own record cursor (checked once per process)
_WALK_VERIFIED: list[bool] = []
_KIND = struct.Struct("<I")
# below this many values a Python set finds the distinct ones faster than numpy's unique
# (20 values: 7 µs against 120; 40,000: 7.7 ms against 1.7)
FEW_RECORDS = 512


def _walk_by_size(
    words: memoryview, begin: int, end: int, sizes: dict[int, int]
) -> list[tuple[int, int]] | None:
    """(kind, offset) of each record, stepping by struct size; None on an unknown kind.

    `words` is the blob as uint32: records start 8-byte aligned, their kind first."""
    found: list[tuple[int, int]] = []
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
    found: list[tuple[int, int]] = []
    while lib.cuptiActivityGetNextRecord(chunk, end - begin, ctypes.byref(cursor)) == CUPTI_SUCCESS:
        if cursor.value is None:  # CUPTI_SUCCESS always sets it; a null would end the walk
            break
        offset = cursor.value - base
        found.append((_KIND.unpack_from(blob, begin + offset)[0], begin + offset))
    return found


def _gatherer(
    buffers: list[bytes], session: CuptiSession, families: Collection[str]
) -> Callable[[str], Any]:
    """Finds the records of `families` in the buffers; returns family -> numpy records."""
    import numpy as np

    tables = session.tables
    family_of, sizes = tables.family_of, tables.sizes
    widest = max(sizes.values())
    blob = b"".join(buffers) + bytes(widest + 8)  # padding: a gather never reads past the end
    words = memoryview(blob)[: len(blob) // 4 * 4].cast("I")
    offsets: dict[str, list[int]] = {family: [] for family in tables.kinds}
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
            if family is not None and family in families:
                offsets[family].append(offset)
        begin = end
    words.release()
    raw = np.frombuffer(blob, dtype=np.uint8)

    def gather(family: str) -> Any:
        dtype = tables.dtypes[family]
        if not offsets[family]:  # most cells have no memset, peer copy or sync at all
            return np.empty(0, dtype=dtype)
        where = np.asarray(offsets[family], dtype=np.int64)
        rows = raw[where[:, None] + np.arange(dtype.itemsize)]
        return np.ascontiguousarray(rows).view(dtype).reshape(-1)

    return gather


def _distinct(values: Any) -> list[int]:
    """The distinct values of a numpy column, in order."""
    import numpy as np

    if len(values) < FEW_RECORDS:
        return sorted(set(values.tolist()))
    found: list[int] = np.unique(values).tolist()
    return found


def _indexed(values: Any) -> tuple[list[int], list[int]]:
    """The distinct values of a numpy column, in order, and each value's index among them."""
    import numpy as np

    if len(values) < FEW_RECORDS:
        distinct = sorted(set(values.tolist()))
        where = {value: i for i, value in enumerate(distinct)}
        return distinct, [where[value] for value in values.tolist()]
    found, index = np.unique(values, return_inverse=True)
    return found.tolist(), index.reshape(-1).tolist()


def _api_columns(api: Any, tables: Any) -> dict[str, list[int]]:
    """The API records of the calls that make or wait for GPU work, as columns."""
    import numpy as np

    keys = api["kind"].astype(np.int64) << 32 | api["cbid"].astype(np.int64)
    seen = _distinct(keys)
    tables.learn(seen)
    kept = [key for key in seen if key in tables.selected]
    if len(kept) < len(seen):
        api = api[np.isin(keys, kept)]
    return {
        "corr": api["correlation_id"].tolist(),
        "start": api["start"].tolist(),
        "end": api["end"].tolist(),
        "tid": api["thread_id"].tolist(),
    }


def decode_api_calls(buffers: list[bytes], session: CuptiSession) -> dict[str, list[int]]:
    """The API call records alone (corr, start, end, tid): what placing calls on lines needs."""
    if not buffers:
        return {"corr": [], "start": [], "end": [], "tid": []}
    return _api_columns(_gatherer(buffers, session, ("api",))("api"), session.tables)


def decode_buffers(buffers: list[bytes], session: CuptiSession) -> dict[str, Any]:
    """Completed activity buffers -> plain columns per record family (see attribution)."""

    if not buffers:
        return {}
    tables = session.tables
    gather = _gatherer(buffers, session, tables.kinds)

    out: dict[str, Any] = {"api": _api_columns(gather("api"), tables)}
    kernels = gather("kernels")
    pointers, name_index = _indexed(kernels["name"])
    out["names"] = [_read_name(p) for p in pointers]
    out["kernels"] = {
        "corr": kernels["correlation_id"].tolist(),
        "start": kernels["start"].tolist(),
        "end": kernels["end"].tolist(),
        "device": kernels["device_id"].tolist(),
        "stream": kernels["stream_id"].tolist(),
        "name": name_index,
    }
    copy_names, memory_names = tables.copy_names, tables.memory_names
    memcpy, peer = gather("memcpy"), gather("peer")

    def copies(field: str) -> list[Any]:
        return [*memcpy[field].tolist(), *peer[field].tolist()]

    out["memcpy"] = {
        "corr": copies("correlation_id"),
        "start": copies("start"),
        "end": copies("end"),
        "device": copies("device_id"),
        "bytes": copies("bytes"),
        # a copy between two GPUs is a device-to-device copy, the payload's one direction
        "copy_kind": [copy_names.get(k, "other") for k in memcpy["copy_kind"].tolist()]
        + ["dtod"] * len(peer),
        "src_kind": [memory_names.get(k, "unknown") for k in copies("src_kind")],
        "dst_kind": [memory_names.get(k, "unknown") for k in copies("dst_kind")],
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
    memory = gather("memory")
    if len(memory):
        fields = (
            "correlation_id",
            "timestamp",
            "bytes",
            "device_id",
            "memory_kind",
            "memory_operation_type",
        )
        out["driver_memory"] = driver_memory_columns(
            {field: memory[field].tolist() for field in fields},
            tables.memory_names,
            tables.memory_signs,
        )
    return out


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
