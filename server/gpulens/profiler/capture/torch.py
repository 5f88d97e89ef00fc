"""torch.profiler backend, for when cupti-python is missing.

torch.profiler stamps its events in Unix-time nanoseconds (CLOCK_REALTIME, what
`time.time_ns` reads), given relative to the start of its trace. The line timeline is
stamped with the same clock, so each op that launched GPU work, and each synchronize, is
placed on the line the main thread was running when it began: the same join by time as the
CUPTI backend, which also places the work autograd launches from its own thread. A marker
op recorded between two reads of our clock checks that the clocks agree; where they do not
(another torch), the marker gives the offset. Without the marker, work is placed by the
Python stack an event carries, where it carries one (traces are taken without `with_stack`,
whose tracer costs more than it gives: torch 2.11 put no stack on these ops), and is counted
as unattributed otherwise. Kineto's events carry no copy sizes.

torch.profiler hands its events over only when its trace ends. In a long cell the line
timeline drops its oldest segments to bound memory; before it does, the running trace is
ended, its calls are placed on their lines while those segments still exist, and a new trace
(with its own clock marker) begins: each trace is one *part* of the cell's records.
"""

from __future__ import annotations

import re
import time
from typing import Any, TypedDict

from gpulens.profiler.capture.memory import AllocatorHistory
from gpulens.profiler.schema import RECORD_FAMILIES
from gpulens.profiler.timeline import Segments, place_calls, placed_columns

_STACK_FRAME = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): ")
_SYNC_CALLS = {
    "cudaStreamSynchronize": "stream",
    "cudaDeviceSynchronize": "context",
    "cudaEventSynchronize": "event",
    "cuStreamSynchronize": "stream",
    "cuCtxSynchronize": "context",
    "cuEventSynchronize": "event",
}
# Kineto's own names for CUPTI synchronization records, on the device side
_DEVICE_SYNCS = {"Stream Sync": "stream", "Context Sync": "context", "Event Sync": "event"}
_MEMCPY = re.compile(
    r"^Memcpy (?P<dir>HtoD|DtoH|DtoD|HtoH|PtoP)(?: \((?P<src>\w+) -> (?P<dst>\w+)\))?"
)
MARKER = "gpulens::clock"
# CUPTI's overhead records, which Kineto shows as CPU events holding the kernel of the
# launch they delayed (a second copy of it: seen with "Activity Buffer Request")
_OVERHEADS = frozenset(
    {
        "Activity Buffer Request",
        "Buffer Flush",
        "Command Buffer Full",
        "Driver Compiler",
        "Instrumentation",
        "Lazy Function Loading",
        "Resource",
        "Runtime Triggered Module Loading",
        "UVM Activity Init",
        "Unknown",
    }
)


MARKER_MISSING = (
    "torch.profiler backend: its clock could not be matched to the cell's, so work was "
    "placed by Python stack; work launched without one (autograd's backward thread) is "
    "counted as unattributed"
)


class TorchUnavailable(RuntimeError):
    pass


class DeviceWork(TypedDict):
    name: str
    ns: int
    device: int


class HostCall(TypedDict):
    """One CPU event of torch.profiler, as plain data (what a fixture stores)."""

    name: str
    start: int  # ns since the trace began
    end: int
    thread: int
    stack: list[str]  # its own Python stack, else its nearest parent's
    work: list[DeviceWork]  # the GPU work it launched


class ClockMark(TypedDict):
    """Our clock read just before and just after the marker op; the trace's start."""

    before: int
    after: int
    trace_start: int | None


class TorchSession:
    name = "torch"

    def __init__(self, memory: str = "reserved") -> None:
        """`memory`: the GPU memory views recorded too; torch.profiler gives no driver's
        view, so only "all" records one (torch's allocator history)."""
        try:
            import torch
        except ImportError as error:
            raise TorchUnavailable(f"torch failed to import ({error})") from error
        cuda = getattr(torch, "cuda", None)  # a file named torch.py, or a build without it
        if cuda is None:
            where = getattr(torch, "__file__", None) or "an unknown place"
            raise TorchUnavailable(f"the torch imported from {where} has no CUDA support")
        if not cuda.is_available():
            raise TorchUnavailable("torch sees no CUDA device")
        self.torch = torch
        self.clock = time.time_ns  # torch.profiler's clock (an NTP step mid-cell would skew)
        self.warnings: list[str] = []
        self.filename = ""
        # set before finish: calls made earlier fell in line segments dropped to bound
        # memory, and are placed by their Python stack instead
        self.retained_from: int | None = None
        self._profile: Any = None
        self._mark: ClockMark | None = None
        # the records of traces ended mid-cell, their calls already placed on their lines
        self._parts: list[dict[str, Any]] = []
        self._placed: dict[int, tuple[int, int]] = {}
        self._drained_s = 0.0
        self._own_sync: tuple[int, int] | None = None
        self._history = AllocatorHistory(self.clock, self.warnings) if memory == "all" else None
        self.ticks_per_ns = 1.0  # set before finish (Unix ns: always 1.0)

    def begin(self) -> None:
        self._parts, self._placed, self._drained_s = [], {}, 0.0
        self._start_trace()
        if self._history is not None:
            self._history.begin()

    def _start_trace(self) -> None:
        from torch.profiler import ProfilerActivity, profile, record_function

        # no with_stack: its Python tracer records every call the cell makes (200+ MB over a
        # long Python loop) and torch 2.11 attaches none of those stacks to the ops we read
        self._profile = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        self._profile.__enter__()
        before = self.clock()
        with record_function(MARKER):
            pass
        self._mark = ClockMark(before=before, after=self.clock(), trace_start=None)

    def _end_trace(self) -> list[HostCall]:
        """Ends the running trace (its GPU work done) and returns its calls."""
        before = self.clock()
        try:
            self.torch.cuda.synchronize()
        except Exception as error:
            self.warnings.append(f"torch.cuda.synchronize failed ({error})")
        # our own wait, not the cell's: the records leave it out (mid-cell it falls on a line)
        self._own_sync = (before, self.clock())
        self._profile.__exit__(None, None, None)
        if self._mark is not None:
            self._mark["trace_start"] = _trace_start_ns(self._profile)
        return host_calls(self._profile.events())

    def _next_corr(self) -> int:
        return sum(_corr_count(part) for part in self._parts)

    def place_calls(self, segments: Segments, retained_from: int) -> None:
        """Before the line timeline drops its oldest segments: ends the running trace, places
        each of its calls on the line it was made from, and starts the next trace."""
        began = time.perf_counter()
        calls, mark = self._end_trace(), self._mark
        part = records_from_calls(
            calls, self.filename, mark, corr_base=self._next_corr(), own_sync=self._own_sync
        )
        if "api" in part:
            api = part["api"]
            starts = zip(api["corr"], api["start"], strict=True)
            place_calls(self._placed, starts, segments, retained_from)
        else:  # no marker in this trace: its calls keep the line their stack gives
            self.warnings.append(MARKER_MISSING)
        self._parts.append(part)
        self._start_trace()
        self._drained_s += time.perf_counter() - began

    def finish(self) -> dict[str, Any]:
        began = time.perf_counter()
        if self._profile is None:
            return {}
        calls = self._end_trace()
        stopped = time.perf_counter()
        last = records_from_calls(
            calls,
            self.filename,
            self._mark,
            self.retained_from,
            corr_base=self._next_corr(),
            own_sync=self._own_sync,
        )
        if self._parts:
            records = merge_parts([*self._parts, last])
            if self._placed:
                records["placed"] = placed_columns(self._placed)
        else:
            records = last
            # the inputs as plain data, for a bug report or a test fixture
            records["torch_calls"], records["clock_mark"] = calls, self._mark
        decoded = time.perf_counter()
        if self._history is not None:
            records.update(self._history.finish(self.ticks_per_ns))
        records["_timings"] = {
            "flush_s": stopped - began + self._drained_s,
            "decode_s": decoded - stopped,
            "memory_s": time.perf_counter() - decoded,
        }
        if "corr_line" in records or any("corr_line" in part for part in self._parts):
            self.warnings.append(MARKER_MISSING)
        self._devices = sorted(set(records["kernels"]["device"]) | set(records["memcpy"]["device"]))
        return records

    def gpus(self) -> list[dict[str, Any]]:
        return [
            {"index": i, "name": self.torch.cuda.get_device_name(i)}
            for i in getattr(self, "_devices", [])
        ]


def _trace_start_ns(profile: Any) -> int | None:
    """When torch.profiler's trace began (event times are relative to it), if it says."""
    try:
        results = profile.profiler.kineto_results
    except AttributeError:
        return None
    for method, scale in (("trace_start_ns", 1), ("trace_start_us", 1000)):
        try:
            return int(getattr(results, method)()) * scale
        except (AttributeError, RuntimeError, TypeError):
            continue
    return None


def clock_offset(marker: HostCall, mark: ClockMark) -> int:
    """What to add to a trace-relative time to get our clock's time.

    The trace's own start, when the marker then falls between our two clock reads (a
    millisecond of slack: recording the first op can take that long); else the offset
    that puts the marker's midpoint on the midpoint of the reads."""
    slack = 1_000_000
    start = mark.get("trace_start")
    if start is not None and abs(start + marker["start"] - mark["before"]) <= slack + (
        mark["after"] - mark["before"]
    ):
        return start
    return (mark["before"] + mark["after"]) // 2 - (marker["start"] + marker["end"]) // 2


def host_calls(events: Any) -> list[HostCall]:
    """The CPU events that launched GPU work, synchronized, or mark the clock, as plain data."""
    calls: list[HostCall] = []
    for event in events:
        if not str(getattr(event, "device_type", "")).endswith("CPU"):
            continue
        kernels = getattr(event, "kernels", None) or ()
        if not kernels and event.name not in _SYNC_CALLS and event.name != MARKER:
            continue
        calls.append(
            HostCall(
                name=event.name,
                start=round(event.time_range.start * 1000),
                end=round(event.time_range.end * 1000),
                thread=int(getattr(event, "thread", 0) or 0),
                stack=_stack_of(event),
                work=[
                    DeviceWork(
                        name=kernel.name,
                        ns=round(getattr(kernel, "duration", 0) * 1000),
                        device=int(getattr(kernel, "device", 0) or 0),
                    )
                    for kernel in kernels
                ],
            )
        )
    return calls


def _stack_of(event: Any) -> list[str]:
    while event is not None:
        stack = getattr(event, "stack", None)
        if stack:
            return list(stack)
        event = getattr(event, "cpu_parent", None)
    return []


def _line_in(stack: list[str], filename: str) -> int | None:
    """Innermost frame of the stack in the cell's file."""
    for frame in stack:
        match = _STACK_FRAME.match(frame)
        if match and match.group("file") == filename:
            return int(match.group("line"))
    return None


def records_from_calls(
    calls: list[HostCall],
    filename: str,
    mark: ClockMark | None,
    retained_from: int | None = None,
    *,
    corr_base: int = 0,
    own_sync: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Host calls -> attribution columns: joined by time (`api` columns on our clock) when
    the marker is found, else by stack (`corr_line`). Calls made before `retained_from`
    (the line timeline kept only later segments) also get their line by stack (`by_stack`).
    Correlation ids are numbered from `corr_base + 1` (one trace of several). Syncs that
    began within `own_sync` (our clock) are the backend's own wait before ending the trace."""
    marker = next((call for call in calls if call["name"] == MARKER), None)
    by_time, offset, main_thread = False, 0, 0
    if marker is not None and mark is not None:
        offset = clock_offset(marker, mark)
        by_time, main_thread = True, marker["thread"]
    api: dict[str, list[int]] = {"corr": [], "start": [], "end": [], "tid": []}
    corr_line: dict[int, int | None] = {}
    by_stack: dict[str, list[Any]] = {"corr": [], "line": []}
    kernels: dict[str, list[Any]] = {k: [] for k in ("corr", "start", "end", "device", "name")}
    memcpy: dict[str, list[Any]] = {
        k: []
        for k in ("corr", "start", "end", "device", "bytes", "copy_kind", "src_kind", "dst_kind")
    }
    memset: dict[str, list[Any]] = {k: [] for k in ("corr", "start", "end", "device", "bytes")}
    syncs: dict[str, list[Any]] = {k: [] for k in ("corr", "start", "end", "type")}
    names: list[str] = []
    name_index: dict[str, int] = {}
    # syncs as host-side runtime calls and as device-side sync records (which of the two
    # appears depends on the torch version): the larger set is kept
    host_syncs: list[tuple[HostCall, int, str]] = []
    device_syncs: list[tuple[HostCall, int, str]] = []
    corr = corr_base

    def add(family: dict[str, list[Any]], call: HostCall, ns: int, **values: Any) -> None:
        nonlocal corr
        corr += 1
        if by_time:
            api["corr"].append(corr)
            api["start"].append(call["start"] + offset)
            api["end"].append(call["end"] + offset)
            api["tid"].append(call["thread"])
            if retained_from is not None and call["start"] + offset < retained_from:
                by_stack["corr"].append(corr)
                by_stack["line"].append(_line_in(call["stack"], filename))
        else:
            corr_line[corr] = _line_in(call["stack"], filename)
        family["corr"].append(corr)
        family["start"].append(0)
        family["end"].append(ns)
        for key, value in values.items():
            family[key].append(value)

    def ours(call: HostCall) -> bool:
        if own_sync is None or not by_time:
            return False
        begin = call["start"] + offset
        return own_sync[0] <= begin <= own_sync[1]

    for call in calls:
        if call["name"] == MARKER or call["name"] in _OVERHEADS:
            continue
        sync_type = _SYNC_CALLS.get(call["name"])
        if ours(call) and (sync_type or any(w["name"] in _DEVICE_SYNCS for w in call["work"])):
            continue
        if sync_type:
            host_syncs.append((call, call["end"] - call["start"], sync_type))
        for work in call["work"]:
            copy = _MEMCPY.match(work["name"])
            if work["name"] in _DEVICE_SYNCS:
                device_syncs.append((call, work["ns"], _DEVICE_SYNCS[work["name"]]))
            elif copy:
                add(
                    memcpy,
                    call,
                    work["ns"],
                    device=work["device"],
                    bytes=0,
                    copy_kind=copy.group("dir").lower(),
                    src_kind=(copy.group("src") or "unknown").lower(),
                    dst_kind=(copy.group("dst") or "unknown").lower(),
                )
            elif work["name"].startswith("Memset"):
                add(memset, call, work["ns"], device=work["device"], bytes=0)
            else:
                index = name_index.setdefault(work["name"], len(names))
                if index == len(names):
                    names.append(work["name"])
                add(kernels, call, work["ns"], device=work["device"], name=index)
    for call, ns, sync_type in max(host_syncs, device_syncs, key=len):
        add(syncs, call, ns, type=sync_type)
    records: dict[str, Any] = {
        "kernels": kernels,
        "names": names,
        "memcpy": memcpy,
        "memset": memset,
        "syncs": syncs,
    }
    if by_time:
        records["api"] = api
        records["main_tid"] = main_thread
        if by_stack["corr"]:
            records["by_stack"] = by_stack
    else:
        records["corr_line"] = corr_line
    return records


_FAMILIES = RECORD_FAMILIES


def _corr_count(part: dict[str, Any]) -> int:
    return sum(len(part[family]["corr"]) for family in _FAMILIES)


def merge_parts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The records of several consecutive traces (corrs already distinct) as one set: their
    columns end to end, kernel names indexed anew. A part placed by stack (no marker in its
    trace) adds its `corr_line` to `by_stack`, which attribution reads for early calls."""
    merged: dict[str, Any] = {family: {} for family in _FAMILIES}
    merged["names"] = []
    name_index: dict[str, int] = {}
    api: dict[str, list[int]] = {"corr": [], "start": [], "end": [], "tid": []}
    by_stack: dict[str, list[Any]] = {"corr": [], "line": []}
    for part in parts:
        names = part["names"]
        for family in _FAMILIES:
            columns = merged[family]
            for key, values in part[family].items():
                if family == "kernels" and key == "name":
                    renamed = [name_index.setdefault(names[i], len(name_index)) for i in values]
                    columns.setdefault(key, []).extend(renamed)
                else:
                    columns.setdefault(key, []).extend(values)
        if "api" in part:
            for key, column in api.items():
                column.extend(part["api"][key])
            merged.setdefault("main_tid", part["main_tid"])
        for corr, line in part.get("corr_line", {}).items():
            by_stack["corr"].append(corr)
            by_stack["line"].append(line)
        for key, column in by_stack.items():
            column.extend(part.get("by_stack", {}).get(key, []))
    merged["names"] = list(name_index)
    merged["api"] = api
    if by_stack["corr"]:
        merged["by_stack"] = by_stack
    return merged
