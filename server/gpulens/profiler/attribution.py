"""Records + line events -> per-line costs. Pure: plain data in, plain data out, no GPU.

The join is the one measured to hold on the device machine: every GPU record (kernel, copy,
memset, synchronization) is joined by correlation id to the API call that made it, and that
call takes the line the *main* thread was executing at the call's start time, whatever
thread made the call. So the kernels that autograd launches from its own thread during
`loss.backward()` land on that line, and a call into a cell-defined function charges the
function's own lines while it runs and the caller's line again once it returns.

Inputs (all times in ns on one clock):
- ``events``: `timeline.LineEvents` columns.
- ``records``: columns per record family, each a dict of equal-length lists:
  ``api`` (corr, start, end, tid), ``kernels`` (corr, start, end, device, name -> ``names``),
  ``memcpy`` (corr, start, end, device, bytes, copy_kind, src_kind, dst_kind),
  ``memset`` (corr, start, end, device, bytes), ``syncs`` (corr, start, end, type), and
  optionally ``main_tid``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from gpulens.profiler.timeline import LINE, RETURN, START, LineEvents

# copy directions always present in a line's transfers, in display order
DIRECTIONS = ("htod", "dtoh", "dtod")
# synchronization types where the host thread waits (a stream-wait-event does not)
BLOCKING_SYNCS = frozenset({"context", "stream", "event"})


class Segments(TypedDict):
    """Where the main thread was: `line[i]` from `t[i]` until `t[i + 1]` (None: outside)."""

    t: list[int]
    line: list[int | None]


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
    devices: list[int]
    start: int
    end: int


def walk_timeline(events: LineEvents) -> tuple[Segments, dict[int, int], dict[int, int]]:
    """Replays the events with a frame stack: (segments, hits per line, host ns per line).

    Host time is inclusive, as in line_profiler: a caller's line keeps running while a
    cell-defined function it called runs. A frame left by an exception sends no RETURN, so
    a LINE event of a frame lower on the stack pops the frames above it.
    """
    seg_t: list[int] = []
    seg_line: list[int | None] = []
    hits: dict[int, int] = {}
    host: dict[int, int] = {}
    # each frame: [code index, current line or None, time that line began]
    stack: list[list[Any]] = []

    def charge(frame: list[Any], now: int) -> None:
        line = frame[1]
        if line is None:
            return
        # a frame below on the same line (a comprehension's frame) already covers this time
        for other in stack:
            if other is frame:
                break
            if other[1] == line:
                return
        host[line] = host.get(line, 0) + now - frame[2]

    def current() -> int | None:
        for frame in reversed(stack):
            if frame[1] is not None:
                return frame[1]
        return None

    def mark(now: int) -> None:
        line = current()
        if not seg_line or seg_line[-1] != line:
            if seg_t and seg_t[-1] == now:
                seg_line[-1] = line
            else:
                seg_t.append(now)
                seg_line.append(line)

    for now, kind, code, line in zip(
        events["t"], events["kind"], events["code"], events["line"], strict=True
    ):
        if kind == START:
            stack.append([code, None, now])
        elif kind == LINE:
            if not stack or stack[-1][0] != code:
                if any(frame[0] == code for frame in stack):
                    while stack[-1][0] != code:
                        charge(stack.pop(), now)
                else:  # a frame entered before recording began
                    stack.append([code, None, now])
            top = stack[-1]
            charge(top, now)
            top[1], top[2] = line, now
            hits[line] = hits.get(line, 0) + 1
        elif kind == RETURN and any(frame[0] == code for frame in stack):
            while stack:
                frame = stack.pop()
                charge(frame, now)
                if frame[0] == code:
                    break
        mark(now)
    end = events["end"]
    for frame in reversed(stack):
        charge(frame, end)
    if seg_line and seg_line[-1] is not None:
        seg_t.append(end)
        seg_line.append(None)
    return Segments(t=seg_t, line=seg_line), hits, host


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
    api: Mapping[str, Sequence[int]], segments: Segments, start: int, end: int
) -> tuple[dict[int, int | None], set[int]]:
    """corr -> line of the API call made at that time; and the corrs made outside the cell.

    A corr seen on several API records (a runtime call and the driver call under it) keeps
    its earliest start.
    """
    first: dict[int, int] = {}
    for corr, begin in zip(api.get("corr", ()), api.get("start", ()), strict=True):
        if corr not in first or begin < first[corr]:
            first[corr] = begin
    seg_t, seg_line = segments["t"], segments["line"]
    lines: dict[int, int | None] = {}
    outside: set[int] = set()
    for corr, begin in first.items():
        if begin < start or begin > end:
            outside.add(corr)
            continue
        i = bisect_right(seg_t, begin) - 1
        lines[corr] = seg_line[i] if i >= 0 else None
    return lines, outside


def attribute_records(events: LineEvents, records: Mapping[str, Any]) -> Attribution:
    """Per-line costs of one profiled cell; see the module docstring for the inputs."""
    segments, hits, host = walk_timeline(events)
    start, end = events["start"], events["end"]
    api = records.get("api") or {}
    if "corr_line" in records:  # a backend that placed its records by Python stack
        corr_line, outside_corrs = dict(records["corr_line"]), set()
    else:
        corr_line, outside_corrs = line_of_calls(api, segments, start, end)
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
    devices: set[int] = set()

    def place(corr: int, family: str) -> LineCost | None:
        line = corr_line.get(corr)
        if line is None:
            if corr in outside_corrs:
                outside[family] += 1
            else:
                unattributed[family] += 1
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
        devices=sorted(devices),
        start=start,
        end=end,
    )
