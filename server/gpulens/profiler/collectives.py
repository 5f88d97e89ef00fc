"""NCCL collectives: which kernels are theirs, and how many bytes each moved.

CUPTI records a collective as a kernel (`ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)`) with
no size. torch's flight recorder (`TORCH_FR_BUFFER_SIZE`, turned on in each rank of a
`--nproc-per-node` profile) keeps one entry per collective a process group issued, with its
tensors' sizes and types. Each of the cell's entries is matched to the NCCL kernel of the same
operation in issue order (the k-th all-reduce entry to the k-th all-reduce kernel): where the
counts of an operation differ, its kernels stay unsized rather than wrongly sized.
"""

from __future__ import annotations

import functools
import os
import pickle
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

# NCCL >= 2.19 names its kernels ncclDevKernel_<Op>_..., older releases ncclKernel_<Op>_...
_NCCL_KERNEL = re.compile(r"^(?:void )?(?:_Z\d+)?nccl(?:Dev)?Kernel_(?P<op>[A-Za-z]+)")
# the flight recorder's ring of entries, when the user has not sized it
FLIGHT_RECORDER_ENTRIES = "20000"
_BUFFER_VARIABLES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
# bytes per element of the flight recorder's dtype names
DTYPE_BYTES = {
    "Double": 8,
    "Long": 8,
    "ComplexFloat": 8,
    "ComplexDouble": 16,
    "Float": 4,
    "Int": 4,
    "Half": 2,
    "BFloat16": 2,
    "Short": 2,
    "UInt16": 2,
    "Char": 1,
    "Byte": 1,
    "Bool": 1,
}


def collective_op(name: str) -> str | None:
    """ "AllReduce" for an NCCL all-reduce kernel's name; None for any other kernel."""
    match = _NCCL_KERNEL.match(name)
    return match.group("op") if match else None


@functools.lru_cache(maxsize=8)
def _collective_names(names: tuple[str, ...]) -> dict[int, str]:
    found = {}
    for index, name in enumerate(names):
        if collective_op(name) is not None:
            found[index] = name.split("(", 1)[0].removeprefix("void ")
    return found


def collective_names(names: Sequence[str]) -> dict[int, str]:
    """Index -> short name (no argument list) of the NCCL kernels among a capture's names."""
    return _collective_names(tuple(names))


def _entry_op(profiling_name: str) -> str:
    """The kernel operation of a flight recorder entry: "nccl:all_reduce_barrier" -> "allreduce"."""
    name = profiling_name.split(":", 1)[-1].replace("_", "").lower()
    for op in ("allreduce", "allgather", "reducescatter", "broadcast", "reduce"):
        if name.startswith(op):
            return op
    return (
        "sendrecv" if name.startswith(("send", "recv", "alltoall", "gather", "scatter")) else name
    )


def entry_bytes(entry: Mapping[str, Any]) -> int | None:
    """Bytes of the tensors this rank gave the collective (its inputs); None if unknown."""
    total = 0
    sizes_of, dtypes = entry.get("input_sizes") or [], entry.get("input_dtypes") or []
    if len(sizes_of) != len(dtypes):
        return None
    for sizes, dtype in zip(sizes_of, dtypes, strict=True):
        width = DTYPE_BYTES.get(dtype)
        if width is None:
            return None
        count = 1
        for size in sizes:
            count *= int(size)
        total += count * width
    return total


def size_collectives(
    records: dict[str, Any], entries: Sequence[Mapping[str, Any]], start: int, end: int
) -> list[str]:
    """Adds a `bytes` column to the capture's kernel records: each NCCL kernel's bytes, from
    the flight recorder entries made between `start` and `end` (the cell, on the records'
    clock, CLOCK_REALTIME as the recorder's); -1 for kernels without a size. Returns the
    warnings for operations that could not be matched."""
    kernels = records.get("kernels") or {}
    names = records.get("names") or []
    collectives = collective_names(names)
    count = len(kernels.get("corr", ()))
    sizes = [-1] * count
    if not collectives:
        return []
    issued: dict[str, list[int]] = {}
    for i, name in enumerate(kernels["name"]):
        if name in collectives:
            op = (collective_op(names[name]) or "").lower()
            issued.setdefault(op, []).append(i)
    logged: dict[str, list[int | None]] = {}
    for entry in sorted(entries, key=lambda e: e.get("record_id", 0)):
        if entry.get("pg_id") is None or not start <= int(entry.get("time_created_ns", -1)) <= end:
            continue
        logged.setdefault(_entry_op(str(entry.get("profiling_name", ""))), []).append(
            entry_bytes(entry)
        )
    warnings = []
    for op, indexes in issued.items():
        indexes.sort(key=lambda i: kernels["start"][i])
        found = logged.get(op, [])
        if len(found) != len(indexes):
            warnings.append(
                f"NCCL {op} kernels left unsized: {len(indexes)} ran but torch's flight "
                f"recorder logged {len(found)} in the cell"
            )
            continue
        for i, size in zip(indexes, found, strict=True):
            sizes[i] = -1 if size is None else size
    kernels["bytes"] = sizes
    return warnings


def turn_on_flight_recorder() -> None:
    """Before user code: torch's flight recorder logs each collective (unless sized already)."""
    if not any(os.environ.get(name) for name in _BUFFER_VARIABLES):
        os.environ["TORCH_FR_BUFFER_SIZE"] = FLIGHT_RECORDER_ENTRIES


def flight_recorder_entries() -> list[dict[str, Any]] | None:
    """The flight recorder's entries of this process, or None where there is none (torch not
    loaded, no NCCL process group, a torch without the recorder)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    c10d = getattr(getattr(torch, "_C", None), "_distributed_c10d", None)
    dump = getattr(c10d, "_dump_nccl_trace", None)
    if dump is None:
        return None
    try:
        trace = pickle.loads(dump(includeCollectives=True, includeStackTraces=False))
    except Exception:
        return None
    entries = trace.get("entries") if isinstance(trace, dict) else None
    return [entry for entry in entries or [] if isinstance(entry, dict)]
