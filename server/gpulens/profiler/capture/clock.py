"""Clocks: a backend's onto Unix time, and CUPTI's records onto the lines'.

A backend stamps its line events with its `clock`; where that clock ran at another rate
than Unix nanoseconds, it is read against `time.time_ns` before the cell and after it and
every time of the capture is moved onto Unix nanoseconds after the cell (`scale_between`:
durations in seconds, torch's allocator history and NCCL's flight recorder, both in Unix
time, need it).

The CUPTI backend stamps lines with `time.time_ns` itself. CUPTI's records carry its own
clock: Unix time in nanoseconds (CLOCK_REALTIME) until torch.profiler first runs in the
process; Kineto then registers its own timestamp source with CUPTI (by default the CPU's
cycle counter, about 2.1 ticks per nanosecond on the H200 host) for the life of the process.
CUPTI's clock is read against Unix time as the cell begins and as it ends (`onto_unix`): the
records stay as they are where it is Unix time, and are moved onto it where it is not.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from gpulens.profiler.timeline import LineEvents, Segments, Timeline

# a clock within 1% of one tick per nanosecond is a nanosecond clock (NTP slews Unix time by
# 0.05% at most; a cycle counter runs at 1 GHz or more, and 1 GHz is nanoseconds too)
NS_TOLERANCE = 0.01
# a clock read within this of Unix time is Unix time: CUPTI's default clock read against it
# was 36 ns off (the reads themselves span 300-600 ns), steady over seconds, on an H100
SAME_CLOCK_NS = 2_000
# a record family's columns that hold times on the session clock
TIME_COLUMNS = ("start", "end")


class Reading(NamedTuple):
    """The session clock and Unix time (ns), read together."""

    tick: int
    unix: int


class ClockScale(NamedTuple):
    """Maps the session clock onto Unix nanoseconds: `unix + (t - tick) / ticks_per_ns`."""

    tick: int
    unix: int
    ticks_per_ns: float

    def to_ns(self, t: int) -> int:
        return self.unix + round((t - self.tick) / self.ticks_per_ns)

    def all_to_ns(self, ticks: Iterable[int]) -> list[int]:
        """`to_ns` of each (a busy cell has 100k records: no call per time)."""
        unix, tick, per_tick = self.unix, self.tick, 1.0 / self.ticks_per_ns
        return [unix + round((t - tick) * per_tick) for t in ticks]

    def each_to_ns(self, ticks: Iterable[int]) -> Iterator[int]:
        """`to_ns` of each, one at a time (for a packed array)."""
        unix, tick, per_tick = self.unix, self.tick, 1.0 / self.ticks_per_ns
        return (unix + round((t - tick) * per_tick) for t in ticks)

    def span_ns(self, ticks: int) -> int:
        return round(ticks / self.ticks_per_ns)


def read(clock: Callable[[], int], tries: int = 3) -> Reading:
    """The session clock between two reads of Unix time, of `tries` the tightest."""
    best: tuple[int, int, int] | None = None
    for _ in range(tries):
        before = time.time_ns()
        tick = clock()
        after = time.time_ns()
        if best is None or after - before < best[0]:
            best = (after - before, tick, (before + after) // 2)
    assert best is not None
    return Reading(tick=best[1], unix=best[2])


def ticks_per_ns(first: Reading, last: Reading) -> float:
    """The session clock's ticks per nanosecond between two readings; exactly 1.0 for a
    nanosecond clock (or readings too close together to tell)."""
    elapsed = last.unix - first.unix
    if elapsed <= 0:
        return 1.0
    rate = (last.tick - first.tick) / elapsed
    return 1.0 if abs(rate - 1.0) <= NS_TOLERANCE else rate


def onto_unix(first: Reading, last: Reading) -> ClockScale | None:
    """The map of another clock's times onto Unix ns, from two readings of both; None where
    that clock is Unix time itself (both readings within `SAME_CLOCK_NS`). Its rate is the
    one measured, not rounded: a clock a few ppm off Unix time (another time base) would
    drift by a millisecond over a long cell, and placing records on lines needs less."""
    if max(abs(first.tick - first.unix), abs(last.tick - last.unix)) <= SAME_CLOCK_NS:
        return None
    elapsed = last.unix - first.unix
    rate = (last.tick - first.tick) / elapsed if elapsed > 0 else 1.0
    return ClockScale(tick=first.tick, unix=first.unix, ticks_per_ns=rate or 1.0)


def scale_between(first: Reading, last: Reading) -> ClockScale | None:
    """The map of a clock that is not in nanoseconds onto Unix ns; None for one that is."""
    rate = ticks_per_ns(first, last)
    if rate == 1.0:
        return None
    return ClockScale(tick=first.tick, unix=first.unix, ticks_per_ns=rate)


def rescale_records(records: dict[str, Any], scale: ClockScale) -> None:
    """Every record family's times (its `TIME_COLUMNS`) onto Unix ns, in place."""
    for family in records.values():
        if not isinstance(family, dict):
            continue
        for column in TIME_COLUMNS:
            values = family.get(column)
            if isinstance(values, list):
                family[column] = scale.all_to_ns(values)


def rescale_timeline(timeline: Timeline, scale: ClockScale) -> Timeline:
    """A walked timeline's times and host durations on Unix ns. The segments' times stay a
    packed array (8 B each): a long cell keeps up to a million of them, which as a list of
    Python ints would hold some 40 MB more."""
    to_ns = scale.to_ns
    segments = timeline["segments"]
    return Timeline(
        segments=Segments(t=array("q", scale.each_to_ns(segments["t"])), line=segments["line"]),
        hits=timeline["hits"],
        host={line: scale.span_ns(ns) for line, ns in timeline["host"].items()},
        start=to_ns(timeline["start"]),
        end=to_ns(timeline["end"]),
        retained_from=to_ns(timeline["retained_from"]),
        sampled=timeline["sampled"],
        quiet=[(to_ns(begin), to_ns(end)) for begin, end in timeline["quiet"]],
    )


def rescale_events(events: LineEvents, scale: ClockScale) -> LineEvents:
    """Raw line events (a fixture's) on Unix ns."""
    to_ns = scale.to_ns
    return LineEvents(
        t=scale.all_to_ns(events["t"]),
        kind=events["kind"],
        code=events["code"],
        line=events["line"],
        codes=events["codes"],
        start=to_ns(events["start"]),
        end=to_ns(events["end"]),
    )


def unix_to_clock(began: Reading, rate: float) -> Callable[[int], int]:
    """Unix ns onto a session clock read at `began` that runs `rate` ticks per ns."""
    if rate == 1.0:
        offset = began.tick - began.unix
        return lambda ns: ns + offset
    return lambda ns: began.tick + round((ns - began.unix) * rate)
