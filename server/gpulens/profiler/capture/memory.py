"""GPU memory records: torch's caching allocator history, and CUPTI's memory records.

Two views of the same memory, each a record family of signed byte changes on the session's
clock (`start`, `bytes`: + allocated, - freed, `device`):

- ``allocator``: what torch's caching allocator hands to tensors (the bytes
  `torch.cuda.memory_allocated` counts, as requested), from its own history
  (`torch.cuda.memory._record_memory_history`, recorded without stack frames: a Python stack
  per allocation costs about 2 µs, a launch-bound training step makes dozens). The history
  stamps each event in microseconds of Unix time (CLOCK_REALTIME, torch's calibrated cycle
  counter), so each is placed at the middle of its microsecond: half a microsecond at most
  from the truth, where the gap between a line's start and its first allocation is several.
  ``allocator_before`` holds, per device, the bytes allocated before the first event kept.
- ``driver_memory``: what the driver handed out (cudaMalloc/cudaFree and their kin, for any
  framework: torch's reserved segments, CuPy's pool, cuBLAS workspaces), from CUPTI's
  memory records (decoded in `activity`), each with the correlation id of the call that
  made it.

The history is process-wide: one that the user (or another tool) already records is left
as it is and not read, since turning it off would lose theirs.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpulens.profiler.capture.clock import Reading, read, unix_to_clock

# the allocator's history keeps the newest events up to this many (a ring): about 100 B
# each; a launch-bound training step makes about 40, so 5,000 steps fit
HISTORY_ENTRIES = 200_000
# events we do not read, left out of the history where torch can (2.6+): fewer to record
_SKIPPED = ["free_completed", "segment_alloc", "segment_free", "segment_map", "segment_unmap"]
_SIGNS = {"alloc": 1, "free_requested": -1}
HISTORY_HELD = (
    "torch's allocator history was already recording in this process (another tool, or "
    "torch.cuda.memory._record_memory_history): left as it was, so memory per line shows "
    "the driver's view only"
)
HISTORY_FULL = (
    "torch's allocator history kept only the newest {entries} allocations and frees: those "
    "of the cell's first lines are not shown"
)
NO_HISTORY = (
    "torch's allocator view of memory needs torch imported before the profiled code runs "
    "(a setup cell, or a cell before): this profile shows the driver's view only"
)


def allocator_columns(
    traces: Iterable[Iterable[Mapping[str, Any]]],
    to_clock: Callable[[int], int],
    since: int | None = None,
) -> dict[str, list[int]]:
    """Allocations and frees of torch's history (`_snapshot()["device_traces"]`, one list per
    device) as the ``allocator`` family: each at the middle of its microsecond, on the clock
    `to_clock` turns Unix nanoseconds into; those before `since` (that clock: left from an
    earlier recording) left out."""
    columns: dict[str, list[int]] = {"start": [], "bytes": [], "device": []}
    for device, trace in enumerate(traces):
        for entry in trace:
            sign = _SIGNS.get(entry.get("action", ""))
            if sign is None:
                continue
            start = to_clock(int(entry["time_us"]) * 1000 + 500)
            if since is not None and start < since:
                continue
            columns["start"].append(start)
            columns["bytes"].append(sign * int(entry["size"]))
            columns["device"].append(device)
    return columns


def driver_memory_columns(
    records: Mapping[str, Iterable[Any]],
    memory_names: Mapping[int, str],
    signs: Mapping[int, int],
) -> dict[str, list[int]]:
    """CUPTI's memory records (columns of its record struct: `correlation_id`, `timestamp`,
    `bytes`, `device_id`, `memory_kind`, `memory_operation_type`) as the ``driver_memory``
    family: device memory only (a module's static globals, pinned host memory are not the
    GPU memory a line allocated), + for an allocation, - for a release."""
    columns: dict[str, list[int]] = {"corr": [], "start": [], "bytes": [], "device": []}
    rows = zip(
        records["correlation_id"],
        records["timestamp"],
        records["bytes"],
        records["device_id"],
        records["memory_kind"],
        records["memory_operation_type"],
        strict=True,
    )
    for corr, stamp, size, device, kind, operation in rows:
        sign = signs.get(int(operation))
        if sign is None or memory_names.get(int(kind)) != "device":
            continue
        columns["corr"].append(int(corr))
        columns["start"].append(int(stamp))
        columns["bytes"].append(sign * int(size))
        columns["device"].append(int(device))
    return columns


def operation_signs(names: Mapping[int, str]) -> dict[int, int]:
    """CUPTI's memory operation types (by their enum names) as + (allocation) or - (release)."""
    signs = {}
    for value, name in names.items():
        if "alloc" in name.lower():
            signs[value] = 1
        elif "release" in name.lower() or "free" in name.lower():
            signs[value] = -1
    return signs


def bytes_before(
    allocator: Mapping[str, list[int]], allocated_now: Mapping[int, int]
) -> dict[str, list[int]]:
    """Per device, the bytes allocated before the first event kept: what is allocated now
    less every change since (right also when the history dropped its oldest events)."""
    change: dict[int, int] = {}
    for size, device in zip(allocator["bytes"], allocator["device"], strict=True):
        change[device] = change.get(device, 0) + size
    devices = sorted(change)
    return {
        "device": devices,
        "bytes": [allocated_now.get(device, 0) - change[device] for device in devices],
    }


class AllocatorHistory:
    """torch's allocator history over one profile, on the session's clock (`clock`)."""

    def __init__(self, clock: Callable[[], int], warnings: list[str]) -> None:
        self.clock = clock
        self.warnings = warnings
        self._torch: Any = None
        self._began: Reading | None = None
        self._waited = False  # torch was not imported when the profile began
        self._armed = False  # a start is queued until torch initializes CUDA

    def begin(self) -> None:
        """Starts recording where torch has used CUDA and nobody else records; where torch
        is imported but has not used CUDA yet, once it does (torch runs the calls queued by
        `torch.cuda._lazy_call` when it initializes CUDA)."""
        torch = sys.modules.get("torch")
        if torch is None:
            self._waited = True
        elif _cuda_ready(torch):
            self._start(torch)
        else:
            self._armed = True
            try:
                torch.cuda._lazy_call(lambda: self._start_queued(torch))
            except (AttributeError, RuntimeError, TypeError):
                self._armed, self._waited = False, True

    def _start_queued(self, torch: Any) -> None:
        """Run by torch as it initializes CUDA: must not raise (torch would fail the cell's
        first CUDA call), and does nothing once the profile is over."""
        if not self._armed:
            return
        try:
            self._start(torch)
        except Exception as error:
            self.warnings.append(f"torch's allocator history could not start ({error})")

    def _start(self, torch: Any) -> None:
        self._armed = False
        try:
            if torch._C._cuda_isHistoryEnabled():
                self.warnings.append(HISTORY_HELD)
                return
        except (AttributeError, RuntimeError):
            return
        # the session's clock against Unix time (the history's), read together
        self._began = read(self.clock)
        try:
            _record(torch, enabled="all")
        except (RuntimeError, TypeError, ValueError) as error:
            self.warnings.append(f"torch's allocator history could not start ({error})")
            return
        self._torch = torch

    def finish(self, ticks_per_ns: float = 1.0) -> dict[str, Any]:
        """The ``allocator`` and ``allocator_before`` families, on the session's clock (which
        runs `ticks_per_ns`); stops recording. Never raises: what went wrong is a warning."""
        torch, self._torch = self._torch, None
        self._armed = False  # a start still queued in torch does nothing from here on
        if torch is None:
            if self._waited and _cuda_ready(sys.modules.get("torch")):  # the cell began CUDA
                self.warnings.append(NO_HISTORY)
            return {}
        try:
            try:
                traces = torch.cuda.memory._snapshot()["device_traces"]
                allocated = {
                    device: _requested_bytes(torch, device) for device in range(len(traces))
                }
            finally:
                _record(torch, enabled=None)
        except Exception as error:
            self.warnings.append(f"torch's allocator history could not be read ({error})")
            return {}
        if any(len(trace) >= HISTORY_ENTRIES for trace in traces):
            self.warnings.append(HISTORY_FULL.format(entries=f"{HISTORY_ENTRIES:,}"))
        began = self._began
        assert began is not None
        to_clock = unix_to_clock(began, ticks_per_ns)
        columns = allocator_columns(traces, to_clock, since=began.tick)
        return {"allocator": columns, "allocator_before": bytes_before(columns, allocated)}


def _cuda_ready(torch: Any) -> bool:
    try:
        return bool(torch is not None and torch.cuda.is_initialized())
    except (AttributeError, RuntimeError):
        return False


def _record(torch: Any, enabled: str | None) -> None:
    """Turns the history on (no stack frames, the events we read) or off."""
    record = torch.cuda.memory._record_memory_history
    if enabled is None:
        record(enabled=None)
        return
    options: dict[str, Any] = {"context": None, "stacks": "python", "max_entries": HISTORY_ENTRIES}
    known = _parameters(record)
    if "clear_history" in known:
        options["clear_history"] = True
    if "skip_actions" in known:
        options["skip_actions"] = _SKIPPED
    try:
        record(enabled=enabled, **options)
    except (TypeError, RuntimeError, ValueError):  # a torch that knows fewer actions to skip
        options.pop("skip_actions", None)
        record(enabled=enabled, **options)


@functools.lru_cache(maxsize=4)
def _parameters(function: Any) -> frozenset[str]:
    """The names `function` takes (read once: inspecting a signature costs ~50 µs)."""
    try:
        return frozenset(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return frozenset()


def _requested_bytes(torch: Any, device: int) -> int:
    """Bytes allocated to tensors on `device`, as requested (what the history's sizes are),
    from the allocator's nested statistics (the flat `memory_stats` sorts ~150 keys)."""
    stats = torch.cuda.memory.memory_stats_as_nested_dict(device)
    count = stats.get("requested_bytes") or stats.get("allocated_bytes") or {}
    return int(count.get("all", {}).get("current", 0))
