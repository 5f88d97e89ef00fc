"""When the GPU had no work while the host ran each line. Pure: records and segments in.

The GPU is busy while any kernel, copy or memset of the cell runs on any of its GPUs (their
own start and end times, on the line timeline's clock); idle otherwise. A line's own time is
the time the main thread spent on it and not in a cell line it called (the segments the
line timeline keeps, the ones records are placed with), and its idle time is the part of
that the GPU sat idle: the GPU waiting for Python. A backend that records no device times
(torch.profiler's records carry durations only: their starts are 0) gives no idle time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypedDict

from gpulens.profiler.timeline import OUTSIDE, Segments

# the record families whose records are GPU work with their own start and end
BUSY_FAMILIES = ("kernels", "memcpy", "memset")


class Idle(TypedDict):
    own: dict[int, int]  # line -> ns the main thread spent on the line itself
    idle: dict[int, int]  # line -> ns of that the GPU had no work
    busy_ns: int  # the GPU's busy time between the cell's start and end
    span_ns: int  # the cell's start to end
    measured_from: int  # per line figures cover the segments kept, from here on


def busy_intervals(records: Mapping[str, Any]) -> list[tuple[int, int]] | None:
    """The times some GPU work ran, merged and in order; None where the records carry no
    device times (or there was no GPU work to time)."""
    spans: list[tuple[int, int]] = []
    for family in BUSY_FAMILIES:
        columns = records.get(family) or {}
        for begin, finish in zip(columns.get("start", ()), columns.get("end", ()), strict=True):
            if begin > 0 and finish > begin:
                spans.append((begin, finish))
    if not spans:
        return None
    spans.sort()
    merged = [spans[0]]
    for begin, finish in spans[1:]:
        last_begin, last_end = merged[-1]
        if begin <= last_end:
            if finish > last_end:
                merged[-1] = (last_begin, finish)
        else:
            merged.append((begin, finish))
    return merged


def busy_until(points: Iterable[int], busy: Sequence[tuple[int, int]]) -> Iterator[int]:
    """For each of `points` (in order), the GPU's busy time before it: yielded one by one, so
    a long cell's million segment edges are never held as a list of ints."""
    done = 0  # busy time of the intervals that ended before the current point
    j, count = 0, len(busy)
    for point in points:
        while j < count and busy[j][1] <= point:
            done += busy[j][1] - busy[j][0]
            j += 1
        yield done + (max(0, point - busy[j][0]) if j < count else 0)


def idle_by_line(
    segments: Segments, busy: Sequence[tuple[int, int]], start: int, end: int, kept_from: int
) -> Idle:
    """Each line's own time and the GPU's idle time within it, and the cell's busy time.
    One pass over the segments, holding nothing per segment."""
    times, lines = segments["t"], segments["line"]
    own: dict[int, int] = {}
    idle: dict[int, int] = {}
    line, began, busy_then = OUTSIDE, 0, 0  # the segment before the current edge
    for t, busy_now, next_line in zip(times, busy_until(times, busy), lines, strict=True):
        if line != OUTSIDE:
            length = t - began
            own[line] = own.get(line, 0) + length
            idle[line] = idle.get(line, 0) + length - (busy_now - busy_then)
        line, began, busy_then = next_line, t, busy_now
    before_start, before_end = busy_until([start, end], busy)
    return Idle(
        own=own,
        idle=idle,
        busy_ns=before_end - before_start,
        span_ns=max(0, end - start),
        measured_from=kept_from,
    )
