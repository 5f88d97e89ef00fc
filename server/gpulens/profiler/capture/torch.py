"""torch.profiler backend, for when cupti-python is missing.

torch.profiler stamps its events in Unix-time nanoseconds (CLOCK_REALTIME, what
`time.time_ns` reads), given relative to the start of its trace. The line timeline is
stamped with the same clock, so each op that launched GPU work, and each synchronize, is
placed on the line the main thread was running when it began: the same join by time as the
CUPTI backend, which also places the work autograd launches from its own thread. A marker
op recorded between two reads of our clock checks that the clocks agree; where they do not
(another torch), the marker gives the offset. Without the marker, work is placed by the
Python stack torch.profiler records (`with_stack=True`) and work launched without one stays
unattributed. Kineto's events carry no copy sizes.
"""

from __future__ import annotations

import re
import time
from typing import Any, TypedDict

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

    def __init__(self) -> None:
        try:
            import torch
        except ImportError as error:
            raise TorchUnavailable(f"torch failed to import ({error})") from error
        if not torch.cuda.is_available():
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

    def begin(self) -> None:
        from torch.profiler import ProfilerActivity, profile, record_function

        self._profile = profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True
        )
        self._profile.__enter__()
        before = self.clock()
        with record_function(MARKER):
            pass
        self._mark = ClockMark(before=before, after=self.clock(), trace_start=None)

    def finish(self) -> dict[str, Any]:
        began = time.perf_counter()
        if self._profile is None:
            return {}
        try:
            self.torch.cuda.synchronize()
        except Exception as error:
            self.warnings.append(f"torch.cuda.synchronize failed ({error})")
        self._profile.__exit__(None, None, None)
        if self._mark is not None:
            self._mark["trace_start"] = _trace_start_ns(self._profile)
        calls = host_calls(self._profile.events())
        stopped = time.perf_counter()
        records = records_from_calls(calls, self.filename, self._mark, self.retained_from)
        # the inputs as plain data, for a bug report or a test fixture
        records["torch_calls"], records["clock_mark"] = calls, self._mark
        records["_timings"] = {
            "flush_s": stopped - began,
            "decode_s": time.perf_counter() - stopped,
        }
        if "corr_line" in records:
            self.warnings.append(
                "torch.profiler backend: its clock could not be matched to the cell's, so "
                "work was placed by Python stack; work launched without one (autograd's "
                "backward thread) is counted as unattributed"
            )
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
) -> dict[str, Any]:
    """Host calls -> attribution columns: joined by time (`api` columns on our clock) when
    the marker is found, else by stack (`corr_line`). Calls made before `retained_from`
    (the line timeline kept only later segments) also get their line by stack (`by_stack`)."""
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
    corr = 0

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

    for call in calls:
        if call["name"] == MARKER or call["name"] in _OVERHEADS:
            continue
        sync_type = _SYNC_CALLS.get(call["name"])
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
