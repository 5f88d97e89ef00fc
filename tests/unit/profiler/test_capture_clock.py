"""A backend clock that is not in nanoseconds: CUPTI's, once torch.profiler has run in the
process (Kineto gives CUPTI the CPU's cycle counter, about 2.1 ticks per ns on the H200
host, and it stays). The capture measures the rate over the cell and reports seconds and
Unix nanoseconds whatever the clock: a line that slept 50 ms reads 50 ms, not 105.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import pytest

from gpulens.profiler import timeline
from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.capture import profile_code
from gpulens.profiler.capture.clock import (
    ClockScale,
    Reading,
    onto_unix,
    read,
    scale_between,
    ticks_per_ns,
    unix_to_clock,
)
from gpulens.profiler.report import build_payload

TICKS_PER_NS = 2.1
NAP_S = 0.05


def cycle_counter() -> int:
    """A clock of 2.1 ticks per ns that started long ago, as a CPU's cycle counter."""
    return time.perf_counter_ns() * 21 // 10 + 7_000_000_000


class CycleCounterSession:
    """A test backend on the cycle counter: the cell's `work(seconds)` is a launch and a
    "kernel" that runs while the host waits for it, each stamped by that clock, as CUPTI
    stamps them."""

    name = "cycles"

    def __init__(self) -> None:
        self.clock = cycle_counter
        self.warnings: list[str] = []
        self.ticks_per_ns = 1.0
        self.launches: list[tuple[int, int, int, int]] = []

    def work(self, seconds: float) -> None:
        launched = self.clock()
        begin = self.clock()
        time.sleep(seconds)
        self.launches.append((len(self.launches) + 1, launched, begin, self.clock()))

    def begin(self) -> None:
        """Nothing to enable."""

    def finish(self) -> dict[str, Any]:
        corrs = [corr for corr, _, _, _ in self.launches]
        return {
            "api": {
                "corr": corrs,
                "start": [launched for _, launched, _, _ in self.launches],
                "end": [begin for _, _, begin, _ in self.launches],
                "tid": [0] * len(corrs),
            },
            "kernels": {
                "corr": corrs,
                "start": [begin for _, _, begin, _ in self.launches],
                "end": [end for _, _, _, end in self.launches],
                "device": [0] * len(corrs),
                "name": [0] * len(corrs),
            },
            "names": ["work"],
        }

    def gpus(self) -> list[dict[str, Any]]:
        return [{"index": 0, "name": "cycles"}]


CELL = """\
session.work(nap)  # busy
time.sleep(nap)  # idle
"""


def test_a_cell_on_a_cycle_counter_clock_reads_in_seconds() -> None:
    session = CycleCounterSession()
    code = compile(CELL, "cycles_cell.py", "exec")
    capture = profile_code(code, {"session": session, "time": time, "nap": NAP_S}, session)
    assert 2.0 < capture.timings["clock_ticks_per_ns"] < 2.2
    payload = build_payload(
        attribute_records(capture.timeline, capture.records),
        source={"path": "cycles_cell.py", "cell": None, "first_line": 1},
        backend=capture.backend,
        code=CELL.splitlines(),
    )
    busy, idle = payload["lines"]
    # a nap is at least its length and, on a loaded machine, not much more
    assert NAP_S <= busy["kernels"]["gpu_s"] < 1.5 * NAP_S
    assert NAP_S <= busy["host_s"] < 1.5 * NAP_S
    assert NAP_S <= idle["own_s"] < 1.5 * NAP_S
    assert idle["gpu_idle_s"] == idle["own_s"]
    assert busy["gpu_idle_s"] < 0.1 * NAP_S
    assert 2 * NAP_S <= payload["wall_s"] < 3 * NAP_S
    # the records and the line events (a fixture's) are on Unix nanoseconds
    assert abs(capture.records["kernels"]["start"][0] - time.time_ns()) < 10**9
    events = capture.line_events()
    assert events is not None
    assert abs(events["start"] - capture.timeline["start"]) < 1000
    assert 2 * NAP_S <= (events["end"] - events["start"]) / 1e9 < 3 * NAP_S


def test_a_nanosecond_clock_is_left_as_it_is() -> None:
    """CUPTI's own clock is Unix ns: no rescaling (NTP's slewing is not a rate)."""
    first = Reading(tick=1_000, unix=5_000)
    assert ticks_per_ns(first, Reading(tick=1_000 + 10_003_000, unix=5_000 + 10_000_000)) == 1.0
    assert scale_between(first, Reading(tick=1_000 + 9_996_000, unix=5_000 + 10_000_000)) is None
    assert ticks_per_ns(first, first) == 1.0  # too close to tell


def test_unix_time_onto_a_cycle_counter_and_back_is_unchanged() -> None:
    """torch's allocator history (Unix ns) placed on the session's clock, then the whole
    capture moved onto Unix ns: each event keeps its time, to the nanosecond."""
    began = read(cycle_counter)
    later = Reading(tick=began.tick + 21_000_000, unix=began.unix + 10_000_000)
    scale = scale_between(began, later)
    assert scale == ClockScale(tick=began.tick, unix=began.unix, ticks_per_ns=2.1)
    to_clock = unix_to_clock(began, scale.ticks_per_ns)
    for unix in (began.unix, began.unix + 123_456, began.unix + 9_876_543_210):
        assert abs(scale.to_ns(to_clock(unix)) - unix) <= 1
    same = unix_to_clock(Reading(tick=10, unix=4), 1.0)
    assert same(100) == 106


LONG_CELL = """\
total = 0
for i in range(steps):
    total += i
    if i % every == 0:
        session.work(0)  # launch
tracemalloc.start()  # the capture's finish and the attribution are measured
"""


def test_a_long_cell_on_a_cycle_counter_keeps_memory_flat_through_the_idle_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Moving the line segments onto nanoseconds and measuring the GPU's idle time in each
    walk every segment kept, up to a million in a long cell: neither may hold a Python int
    per segment (40 B and more each, over 80 MB for a million; the segments moved onto
    nanoseconds take 8 B each)."""
    monkeypatch.setattr(timeline, "RAW_EVENTS_KEPT", 10_000, raising=False)
    session = CycleCounterSession()
    steps, every = 30_000, 3_000
    namespace = {"session": session, "steps": steps, "every": every, "tracemalloc": tracemalloc}
    try:
        code = compile(LONG_CELL, "long_cell.py", "exec")
        capture = profile_code(code, namespace, session, sample=False)  # every segment
        attribution = attribute_records(capture.timeline, capture.records)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    segments = len(capture.timeline["segments"]["t"])
    assert segments > 3 * steps  # `for`, `total += i` and `if`, every iteration
    assert 2.0 < capture.timings["clock_ticks_per_ns"] < 2.2
    lines = {cost["line"]: cost for cost in attribution["lines"]}
    assert lines[5]["kernels"]["count"] == steps // every
    assert lines[3]["gpu_idle_ns"] is not None and lines[3]["gpu_idle_ns"] > 0
    assert peak < 16 * segments + 2**20, f"{peak / segments:.0f} B per segment"


def test_records_on_unix_time_are_left_as_they_are() -> None:
    """CUPTI's default clock is Unix time: readings a few hundred ns apart map nothing."""
    first = Reading(tick=1_795_524_579_738_200_000, unix=1_795_524_579_738_200_036)
    last = Reading(tick=first.tick + 3_000_000_250, unix=first.unix + 3_000_000_000)
    assert onto_unix(first, last) is None


def test_records_on_another_clock_land_on_unix_time_between_and_past_the_readings() -> None:
    """After torch.profiler, CUPTI stamps with a cycle counter (2.1 ticks/ns), and a clock of
    Unix rate with another origin, a few ppm fast, drifts: each is moved onto Unix time by
    the two readings, to the nanosecond, over a 10 s cell (a rounded rate would be 50 us off)."""
    for rate, origin in ((2.1, 79_254_630_820), (1.000005, 52_000_000_000)):
        first = Reading(tick=origin, unix=1_795_524_579_000_000_000)
        last = Reading(tick=origin + round(10e9 * rate), unix=first.unix + 10**10)
        scale = onto_unix(first, last)
        assert scale is not None
        for offset_ns in (0, 1_234_567, 5 * 10**9, 10**10, 11 * 10**9):
            tick = origin + round(offset_ns * rate)
            assert abs(scale.to_ns(tick) - (first.unix + offset_ns)) <= 1
