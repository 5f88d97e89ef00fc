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
- ``records``: columns per record family, each a dict of equal-length lists:
  ``api`` (corr, start, end, tid), ``kernels`` (corr, start, end, device, name -> ``names``),
  ``memcpy`` (corr, start, end, device, bytes, copy_kind, src_kind, dst_kind),
  ``memset`` (corr, start, end, device, bytes), ``syncs`` (corr, start, end, type), and
  optionally ``main_tid``; ``placed`` (corr, start, line): calls already placed on their
  line while the cell ran, before the segments they fell in were dropped; ``by_stack``
  (corr, line): each call's line by its Python stack, for calls made before the segments
  kept (a backend that only reports after the cell).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from gpulens.profiler.timeline import (
    LineEvents,
    Segments,
    Timeline,
    line_at,
    walk_events,
)

# copy directions always present in a line's transfers, in display order
DIRECTIONS = ("htod", "dtoh", "dtod")
# synchronization types where the host thread waits (a stream-wait-event does not)
BLOCKING_SYNCS = frozenset({"context", "stream", "event"})


class LineCost(TypedDict):
    line: int
    hits: int
    host_ns: int
    kernels: dict[str, Any]
    transfers: dict[str, dict[str, int]]
    pageable: dict[str, int]
    pinned: dict[str, int]
    memsets: dict[str, int]
    syncs: dict[str, int]
    devices: dict[int, dict[str, int]]
    other_thread_calls: int


class Attribution(TypedDict):
    lines: list[LineCost]
    unattributed: dict[str, int]
    outside: dict[str, int]
    # of the unattributed: made before the segments kept, with no other way to place them
    dropped: dict[str, int]
    # calls placed by their Python stack because they came before the segments kept
    by_stack: int
    devices: list[int]
    start: int
    end: int


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


def _new_line(line: int) -> LineCost:
    return LineCost(
        line=line,
        hits=0,
        host_ns=0,
        kernels={"count": 0, "ns": 0, "by_name": {}},
        transfers={
            d: {"count": 0, "bytes": 0, "ns": 0, "pageable": 0, "pinned": 0} for d in DIRECTIONS
        },
        # pageable copies' own bytes and time, for the bandwidth a pinned-memory hint quotes
        pageable={"bytes": 0, "ns": 0},
        pinned={"bytes": 0, "ns": 0},
        memsets={"count": 0, "bytes": 0, "ns": 0},
        syncs={"count": 0, "stall_ns": 0},
        devices={},
        other_thread_calls=0,
    )


def _device(cost: LineCost, device: int) -> dict[str, int]:
    found = cost["devices"].get(device)
    if found is None:
        found = cost["devices"][device] = {
            "kernels": 0,
            "kernel_ns": 0,
            "transfers": 0,
            "transfer_bytes": 0,
            "transfer_ns": 0,
        }
    return found


def _column(family: Mapping[str, Sequence[Any]] | None, name: str) -> Sequence[Any]:
    return family.get(name, ()) if family else ()


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


def attribute_records(events: LineEvents | Timeline, records: Mapping[str, Any]) -> Attribution:
    """Per-line costs of one profiled cell; see the module docstring for the inputs."""
    timeline = events if "segments" in events else walk_events(events)  # type: ignore[arg-type]
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
            found = costs[line] = _new_line(line)
        return found

    for line, count in hits.items():
        cost_of(line)["hits"] = count
    for line, ns in host.items():
        cost_of(line)["host_ns"] = ns

    unattributed = {"kernels": 0, "transfers": 0, "memsets": 0, "syncs": 0}
    outside = {"kernels": 0, "transfers": 0, "memsets": 0, "syncs": 0}
    dropped = {"kernels": 0, "transfers": 0, "memsets": 0, "syncs": 0}
    devices: set[int] = set()

    def place(corr: int, family: str) -> LineCost | None:
        line = corr_line.get(corr)
        if line is None:
            if corr in outside_corrs:
                outside[family] += 1
            else:
                unattributed[family] += 1
                if corr in dropped_corrs:
                    dropped[family] += 1
            return None
        return cost_of(line)

    kernels = records.get("kernels")
    names: Sequence[str] = records.get("names", ())
    for corr, begin, finish, device, name in zip(
        _column(kernels, "corr"),
        _column(kernels, "start"),
        _column(kernels, "end"),
        _column(kernels, "device"),
        _column(kernels, "name"),
        strict=True,
    ):
        devices.add(device)
        cost = place(corr, "kernels")
        if cost is None:
            continue
        ns = finish - begin
        block = cost["kernels"]
        block["count"] += 1
        block["ns"] += ns
        label = names[name] if 0 <= name < len(names) else "?"
        tally = block["by_name"].setdefault(label, [0, 0])
        tally[0] += 1
        tally[1] += ns
        per_device = _device(cost, device)
        per_device["kernels"] += 1
        per_device["kernel_ns"] += ns

    memcpy = records.get("memcpy")
    for corr, begin, finish, device, size, copy_kind, src, dst in zip(
        _column(memcpy, "corr"),
        _column(memcpy, "start"),
        _column(memcpy, "end"),
        _column(memcpy, "device"),
        _column(memcpy, "bytes"),
        _column(memcpy, "copy_kind"),
        _column(memcpy, "src_kind"),
        _column(memcpy, "dst_kind"),
        strict=True,
    ):
        devices.add(device)
        cost = place(corr, "transfers")
        if cost is None:
            continue
        direction = cost["transfers"].setdefault(
            copy_kind, {"count": 0, "bytes": 0, "ns": 0, "pageable": 0, "pinned": 0}
        )
        direction["count"] += 1
        direction["bytes"] += size
        direction["ns"] += finish - begin
        host_side = src if copy_kind == "htod" else dst if copy_kind == "dtoh" else None
        if host_side in {"pageable", "pinned"}:
            direction[host_side] += 1
            cost[host_side]["bytes"] += size
            cost[host_side]["ns"] += finish - begin
        per_device = _device(cost, device)
        per_device["transfers"] += 1
        per_device["transfer_bytes"] += size
        per_device["transfer_ns"] += finish - begin

    memset = records.get("memset")
    for corr, begin, finish, device, size in zip(
        _column(memset, "corr"),
        _column(memset, "start"),
        _column(memset, "end"),
        _column(memset, "device"),
        _column(memset, "bytes"),
        strict=True,
    ):
        devices.add(device)
        cost = place(corr, "memsets")
        if cost is None:
            continue
        cost["memsets"]["count"] += 1
        cost["memsets"]["bytes"] += size
        cost["memsets"]["ns"] += finish - begin

    syncs = records.get("syncs")
    for corr, begin, finish, sync_type in zip(
        _column(syncs, "corr"),
        _column(syncs, "start"),
        _column(syncs, "end"),
        _column(syncs, "type"),
        strict=True,
    ):
        if sync_type not in BLOCKING_SYNCS:
            continue
        cost = place(corr, "syncs")
        if cost is None:
            continue
        cost["syncs"]["count"] += 1
        cost["syncs"]["stall_ns"] += finish - begin

    main_tid = records.get("main_tid")
    if main_tid is not None:
        for corr, tid in zip(api.get("corr", ()), api.get("tid", ()), strict=True):
            line = corr_line.get(corr)
            if tid != main_tid and line is not None:
                cost_of(line)["other_thread_calls"] += 1

    return Attribution(
        lines=[costs[line] for line in sorted(costs)],
        unattributed=unattributed,
        outside=outside,
        dropped=dropped,
        by_stack=calls["by_stack"],
        devices=sorted(devices),
        start=start,
        end=end,
    )
