"""Records + line events -> per-line costs. Pure: plain data in, plain data out, no GPU.

The join is the one measured to hold on the device machine: every GPU record (kernel, copy,
memset, synchronization) is joined by correlation id to the API call that made it, and that
call takes the line the *main* thread was executing at the call's start time, whatever
thread made the call. So the kernels that autograd launches from its own thread during
`loss.backward()` land on that line, and a call into a cell-defined function charges the
function's own lines while it runs and the caller's line again once it returns.

Inputs (all times in ns on one clock):
- ``events``: `timeline.LineEvents` columns, or a `timeline.Timeline` already walked (a long
  cell's, whose oldest segments may have been dropped to bound memory).
- ``records``: columns per record family (the families `schema.RECORD_KINDS` are tallied
  from), each a dict of equal-length lists:
  ``api`` (corr, start, end, tid), ``kernels`` (corr, start, end, device, name -> ``names``),
  ``memcpy`` (corr, start, end, device, bytes, copy_kind, src_kind, dst_kind),
  ``memset`` (corr, start, end, device, bytes), ``syncs`` (corr, start, end, type), and
  optionally ``main_tid``; ``placed`` (corr, start, line): calls already placed on their
  line while the cell ran, before the segments they fell in were dropped; ``by_stack``
  (corr, line): each call's line by its Python stack, for calls made before the segments
  kept (a backend that only reports after the cell); the memory families
  (``allocator``, ``allocator_before``, ``driver_memory``: see `memory`).

A synchronization record whose call has no API record is not counted anywhere: CUPTI writes
one for every `cudaEventQuery` (a poll that returns at once, which torch's allocator and DDP make
several times a step; measured on two H200s: every such record came from one), and the capture
does not record those calls (`capture.cupti_tables.CHATTY_API_NAMES`); each call that waits
(`…Synchronize`, `cudaStreamWaitEvent`, copies) keeps its API record. `polls` counts them.

Besides the records' tallies, each line gets its memory (`memory.attribute_memory`: None
where no memory was recorded) and its own time and the GPU's idle time within it
(`idle.idle_by_line`: None where the records carry no device times).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from gpulens.profiler import schema
from gpulens.profiler.idle import Idle, busy_intervals, idle_by_line
from gpulens.profiler.memory import MemoryAttribution, attribute_memory
from gpulens.profiler.schema import LineCost, kind_counts, new_line_cost
from gpulens.profiler.timeline import (
    LineEvents,
    Segments,
    Timeline,
    line_at,
    walk_events,
)


class Attribution(TypedDict):
    lines: list[LineCost]
    unattributed: dict[str, int]
    outside: dict[str, int]
    # of the unattributed: made before the segments kept, with no other way to place them
    dropped: dict[str, int]
    # calls placed by their Python stack because they came before the segments kept
    by_stack: int
    # synchronization records of calls with no API record: polls, not waits (see above)
    polls: int
    devices: list[int]
    start: int
    end: int
    memory: MemoryAttribution
    idle: Idle | None
    sampled: Sampled


class Sampled(TypedDict):
    """The lines of a Python-heavy stretch that ran unrecorded between recorded stretches
    (`gpulens.profiler.sampling`): how long, and the API calls made then (not placed)."""

    lines: list[int]
    quiet_ns: int
    calls: int


class CallLines(TypedDict):
    """Where each API call (by correlation id) was made."""

    lines: dict[int, int | None]
    outside: set[int]  # made before the cell began or after it ended
    dropped: set[int]  # made before the segments kept, and not placed otherwise
    by_stack: int


def walk_timeline(events: LineEvents) -> tuple[Segments, dict[int, int], dict[int, int]]:
    """Replays recorded events at once: (segments, hits per line, host ns per line)."""
    timeline = walk_events(events)
    return timeline["segments"], timeline["hits"], timeline["host"]


def line_of_calls(
    api: Mapping[str, Sequence[int]],
    segments: Segments,
    start: int,
    end: int,
    *,
    retained_from: int | None = None,
    placed: Mapping[str, Sequence[Any]] | None = None,
    by_stack: Mapping[str, Sequence[Any]] | None = None,
) -> CallLines:
    """The line of each API call: the main thread's line at the call's start time.

    A corr seen on several API records (a runtime call and the driver call under it) keeps
    its earliest start. A call made before `retained_from` (segments dropped) takes the
    line `placed` gives it, else the one `by_stack` gives, else stays unplaced.
    """
    first: dict[int, int] = {}
    for corr, begin in zip(api.get("corr", ()), api.get("start", ()), strict=True):
        if corr not in first or begin < first[corr]:
            first[corr] = begin
    kept_from = start if retained_from is None else retained_from
    early_lines: dict[int, int] = {}
    if placed:
        early_lines = dict(zip(placed["corr"], placed["line"], strict=True))
    stack_lines: dict[int, int | None] = {}
    if by_stack:
        stack_lines = dict(zip(by_stack["corr"], by_stack["line"], strict=True))
    found = CallLines(lines={}, outside=set(), dropped=set(), by_stack=0)
    lines = found["lines"]
    for corr, begin in first.items():
        if begin < start or begin > end:
            found["outside"].add(corr)
        elif begin >= kept_from:
            lines[corr] = line_at(segments, begin) or None
        elif corr in early_lines:
            lines[corr] = early_lines[corr] or None
        elif stack_lines.get(corr) is not None:
            lines[corr] = stack_lines[corr]
            found["by_stack"] += 1
        else:
            found["dropped"].add(corr)
    return found


def calls_within(api: Mapping[str, Sequence[Any]], stretches: Sequence[tuple[int, int]]) -> int:
    """How many API calls (by correlation id) began within one of `stretches` (sorted)."""
    if not stretches:
        return 0
    starts = [begin for begin, _ in stretches]
    found = set()
    for corr, begin in zip(api.get("corr", ()), api.get("start", ()), strict=True):
        i = bisect_right(starts, begin) - 1
        if i >= 0 and begin < stretches[i][1]:
            found.add(corr)
    return len(found)


def without_polls(
    syncs: Mapping[str, Sequence[Any]], called: set[int]
) -> tuple[dict[str, list[Any]], int]:
    """The synchronization records made by a recorded call, and how many were not (polls)."""
    keep = [i for i, corr in enumerate(syncs.get("corr", ())) if corr in called]
    if len(keep) == len(syncs.get("corr", ())):
        return {key: list(column) for key, column in syncs.items()}, 0
    return {key: [column[i] for i in keep] for key, column in syncs.items()}, len(
        syncs["corr"]
    ) - len(keep)


def attribute_records(events: LineEvents | Timeline, records: Mapping[str, Any]) -> Attribution:
    """Per-line costs of one profiled cell; see the module docstring for the inputs."""
    timeline = events if "segments" in events else walk_events(events)
    segments, hits, host = timeline["segments"], timeline["hits"], timeline["host"]
    start, end = timeline["start"], timeline["end"]
    api = records.get("api") or {}
    if "corr_line" in records:  # a backend that placed its records by Python stack
        calls = CallLines(
            lines=dict(records["corr_line"]), outside=set(), dropped=set(), by_stack=0
        )
    else:
        calls = line_of_calls(
            api,
            segments,
            start,
            end,
            retained_from=timeline.get("retained_from"),
            placed=records.get("placed"),
            by_stack=records.get("by_stack"),
        )
    corr_line, outside_corrs, dropped_corrs = calls["lines"], calls["outside"], calls["dropped"]
    costs: dict[int, LineCost] = {}

    def cost_of(line: int) -> LineCost:
        found = costs.get(line)
        if found is None:
            found = costs[line] = new_line_cost(line)
        return found

    for line, count in hits.items():
        cost_of(line)["hits"] = count
    quiet = timeline.get("quiet") or []
    for line in timeline.get("sampled") or []:
        cost_of(line)["sampled"] = True
    for line, ns in host.items():
        cost_of(line)["host_ns"] = ns

    unattributed, outside, dropped = kind_counts(), kind_counts(), kind_counts()
    devices: set[int] = set()

    def placer(key: str) -> schema.Place:
        """The line of each record of kind `key`, counting those without one."""

        def place(corr: int) -> LineCost | None:
            line = corr_line.get(corr)
            if line is None:
                if corr in outside_corrs:
                    outside[key] += 1
                else:
                    unattributed[key] += 1
                    if corr in dropped_corrs:
                        dropped[key] += 1
                return None
            return costs.get(line) or cost_of(line)

        return place

    names: Sequence[str] = records.get("names", ())
    families = dict(records)
    polls = 0
    if "corr_line" not in records and api.get("corr") and records.get("syncs"):
        called = set(corr_line) | outside_corrs | dropped_corrs
        families["syncs"], polls = without_polls(records["syncs"], called)
    for kind in schema.RECORD_KINDS:
        kind.tally(families.get(kind.family) or {}, placer(kind.key), devices, names)

    main_tid = records.get("main_tid")
    if main_tid is not None:
        for corr, tid in zip(api.get("corr", ()), api.get("tid", ()), strict=True):
            made_on = corr_line.get(corr)
            if tid != main_tid and made_on is not None:
                cost_of(made_on)["other_thread_calls"] += 1

    kept_from = timeline.get("retained_from", start)
    memory = attribute_memory(
        records,
        call_lines=corr_line,
        segments=segments,
        start=start,
        end=end,
        retained_from=kept_from,
    )
    for line, views in memory["lines"].items():
        cost_of(line)["memory"] = views
    busy = busy_intervals(records)
    idle = None if busy is None else idle_by_line(segments, busy, start, end, kept_from)
    for line, cost in costs.items():
        cost.setdefault("memory", {view: {"alloc": 0, "free": 0} for view in memory["views"]})
        cost["own_ns"] = None if idle is None else idle["own"].get(line, 0)
        cost["gpu_idle_ns"] = None if idle is None else idle["idle"].get(line, 0)

    sampled = Sampled(
        lines=list(timeline.get("sampled") or []),
        quiet_ns=sum(end - begin for begin, end in quiet),
        calls=calls_within(api, quiet),
    )
    return Attribution(
        lines=[costs[line] for line in sorted(costs)],
        unattributed=unattributed,
        outside=outside,
        dropped=dropped,
        by_stack=calls["by_stack"],
        polls=polls,
        devices=sorted(devices),
        start=start,
        end=end,
        memory=memory,
        idle=idle,
        sampled=sampled,
    )
