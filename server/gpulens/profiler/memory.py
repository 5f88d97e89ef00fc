"""GPU memory per line, and the cell's peak, from the capture's memory records. Pure.

Two views, each from its own record family (`capture.memory` makes them): ``allocated``,
what torch's caching allocator handed to tensors (``allocator``: each event placed by
time, with the bytes allocated before the first one in ``allocator_before``), and
``reserved``, what the driver handed out to any framework (``driver_memory``: each record
joined by correlation id to the call that made it where that call's record spans it, else
placed by time). Columns: ``start`` (ns, the line timeline's clock), ``bytes`` (+ allocated,
- freed), ``device``, and ``corr`` where the record has one.

Per line and view: the bytes allocated and freed there. Per view and device: the peak
(the most held at once while the cell ran: absolute where the bytes held before are known,
and its rise over the cell's start), and the line whose allocation reached it first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from gpulens.profiler.timeline import OUTSIDE, Segments


@dataclass(frozen=True)
class MemoryView:
    key: str  # in a payload line's `memory` and in the cell's `peak`
    family: str  # the record family it is read from
    before: str | None  # the family of the bytes held before its first record, if known


ALLOCATED = MemoryView("allocated", "allocator", "allocator_before")
RESERVED = MemoryView("reserved", "driver_memory", None)
VIEWS = (ALLOCATED, RESERVED)


class Peak(TypedDict):
    device: int
    bytes: int | None  # held at the peak; None where what was held before is unknown
    rise: int  # the peak less what was held when the cell began
    line: int | None  # the line whose allocation reached it first; None: held at the start


class MemoryAttribution(TypedDict):
    # line -> view -> {"alloc": bytes allocated, "free": bytes freed}
    lines: dict[int, dict[str, dict[str, int]]]
    views: list[str]  # the views the capture recorded
    peaks: dict[str, list[Peak]]  # view -> one per device, by device
    unplaced: dict[str, int]  # view -> records made in the cell but on no line


def _call_spans(api: Mapping[str, Sequence[int]], wanted: set[int]) -> dict[int, tuple[int, int]]:
    """(earliest start, latest end) of the API records of each wanted correlation id."""
    spans: dict[int, tuple[int, int]] = {}
    if not wanted:  # most cells allocate nothing from the driver: no pass over every call
        return spans
    rows = zip(api.get("corr", ()), api.get("start", ()), api.get("end", ()), strict=True)
    for corr, begin, finish in rows:
        if corr in wanted:
            low, high = spans.get(corr, (begin, finish))
            spans[corr] = (min(low, begin), max(high, finish))
    return spans


def attribute_memory(
    records: Mapping[str, Any],
    *,
    call_lines: Mapping[int, int | None],
    segments: Segments,
    start: int,
    end: int,
    retained_from: int,
) -> MemoryAttribution:
    """Each memory record on its line (the line of the call that made it, where it names
    one, else the main thread's line at its time), and each view's peak per device.
    `call_lines`: the line of each API call, by correlation id (`attribution.line_of_calls`).
    """
    found = MemoryAttribution(lines={}, views=[], peaks={}, unplaced={})
    for view in VIEWS:
        family = records.get(view.family)
        if family is None:
            continue
        found["views"].append(view.key)
        starts: Sequence[int] = family.get("start", ())
        sizes: Sequence[int] = family.get("bytes", ())
        devices: Sequence[int] = family.get("device", ())
        corrs: Sequence[int] = family.get("corr") or [0] * len(starts)
        spans = _call_spans(records.get("api") or {}, {c for c in corrs if c})
        # in time order: the segments are walked once, and the peaks need that order
        order = sorted(range(len(starts)), key=starts.__getitem__)
        times, on_line = segments["t"], segments["line"]
        passed = 0  # segments that began at or before the current record
        lines: list[int | None] = [None] * len(starts)
        unplaced = 0
        for i in order:
            corr, at = corrs[i], starts[i]
            inside = start <= at <= end
            span = spans.get(corr)
            # a record and the call it names agree when the record's time falls within the
            # call (CUPTI stamps an allocation inside it); else the id is not that call's
            if span is not None and span[0] <= at <= span[1]:
                line = call_lines.get(corr) if inside else None
            elif inside and at >= retained_from:
                while passed < len(times) and times[passed] <= at:
                    passed += 1
                line = (on_line[passed - 1] if passed else OUTSIDE) or None
            else:
                line = None
            if inside and line is None:
                unplaced += 1
            lines[i] = line
            if line is not None:
                tally = (
                    found["lines"]
                    .setdefault(line, {})
                    .setdefault(view.key, {"alloc": 0, "free": 0})
                )
                tally["alloc" if sizes[i] > 0 else "free"] += abs(sizes[i])
        found["unplaced"][view.key] = unplaced
        held_before: dict[int, int] | None = None
        if view.before is not None:
            before = records.get(view.before) or {}
            held_before = dict(zip(before.get("device", ()), before.get("bytes", ()), strict=True))
        found["peaks"][view.key] = _peaks(
            order, starts, sizes, devices, lines, held_before=held_before, start=start, end=end
        )
    # a line that touched one view holds the others' zeros: each view reads the same
    for views in found["lines"].values():
        for key in found["views"]:
            views.setdefault(key, {"alloc": 0, "free": 0})
    return found


def _peaks(
    order: Sequence[int],
    starts: Sequence[int],
    sizes: Sequence[int],
    devices: Sequence[int],
    lines: Sequence[int | None],
    *,
    held_before: Mapping[int, int] | None,
    start: int,
    end: int,
) -> list[Peak]:
    """Per device: the most held at once between `start` and `end`, and the line whose
    record reached it first (records before `start` only set what was held then); `order`:
    the records' indexes in time order."""
    known = held_before is not None
    held: dict[int, int] = dict(held_before or {})
    at_start: dict[int, int] = {}
    top: dict[int, tuple[int, int | None]] = {}
    for i in order:
        at, device = starts[i], devices[i]
        if at > end:
            break
        if at >= start and device not in at_start:
            at_start[device] = held.get(device, 0)
            top[device] = (at_start[device], None)
        held[device] = held.get(device, 0) + sizes[i]
        if device in top and held[device] > top[device][0]:
            top[device] = (held[device], lines[i])
    return [
        Peak(
            device=device,
            bytes=top[device][0] if known else None,
            rise=top[device][0] - at_start[device],
            line=top[device][1],
        )
        for device in sorted(top)
    ]
