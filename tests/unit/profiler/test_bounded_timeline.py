"""The line timeline of a long cell stays small: events are folded into per-line figures as
the cell runs, and old segments are dropped once the calls made in them are placed.

Whatever the folding and dropping, the figures must be the ones an unbounded timeline gives:
replayed on the recorded GPU captures, and on real cells with a test backend whose "GPU
calls" are made by the cell itself.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpulens.profiler import timeline
from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.capture import profile_code
from gpulens.profiler.report import build_payload
from gpulens.profiler.timeline import (
    LINE,
    RETURN,
    START,
    Segments,
    TimelineWalker,
    iter_events,
    place_calls,
    placed_columns,
    walk_events,
)

from .cell_calls import CellCalls
from .conftest import FIXTURES, load_fixture

RECORDED = sorted(
    path.name.removesuffix(".json.gz")
    for path in FIXTURES.glob("*.json.gz")
    if "events" in load_fixture(path.name.removesuffix(".json.gz"))
)


def walk_in_batches(events: dict[str, Any], size: int) -> dict[str, Any]:
    rows = list(iter_events(events))
    walker = TimelineWalker(events["start"])
    for at in range(0, len(rows), size):
        walker.feed(rows[at : at + size])
    return walker.finish(events["end"])


# --- the walk ------------------------------------------------------------------------------------

event_rows = st.lists(
    st.tuples(
        st.integers(1, 50),  # time step
        st.sampled_from([LINE, LINE, LINE, START, RETURN]),
        st.integers(0, 2),  # code object
        st.integers(1, 6),  # line
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(rows=event_rows, size=st.integers(1, 9))
def test_walking_in_batches_gives_what_walking_at_once_gives(rows: list, size: int) -> None:
    t, stamped = 0, []
    for step, kind, code, line in rows:
        t += step
        stamped.append((t, kind, code, line if kind == LINE else 0))
    events = {
        "t": [r[0] for r in stamped],
        "kind": [r[1] for r in stamped],
        "code": [r[2] for r in stamped],
        "line": [r[3] for r in stamped],
        "codes": ["<module>", "f", "g"],
        "start": 0,
        "end": t + 7,
    }
    whole, batched = walk_events(events), walk_in_batches(events, size)
    assert batched["hits"] == whole["hits"]
    assert batched["host"] == whole["host"]
    assert list(batched["segments"]["t"]) == list(whole["segments"]["t"])
    assert list(batched["segments"]["line"]) == list(whole["segments"]["line"])


@settings(max_examples=300, deadline=None)
@given(
    rows=event_rows,
    every=st.integers(1, 9),
    keep=st.booleans(),
    traced=st.booleans(),
)
def test_walking_each_event_as_it_comes_gives_what_walking_the_record_gives(
    rows: list, every: int, keep: bool, traced: bool
) -> None:
    """The recorder walks each event in its callback (`event_handlers`: `sys.monitoring`'s
    callbacks, or a `sys.settrace` local trace function); the figures must be those of the
    recorded events walked afterwards, whatever the order of starts, returns (some never
    sent: a frame left by an exception) and lines."""
    codes = [compile("0", name, "eval") for name in ("<module>", "f", "g")]
    t, stamped = 0, []
    for step, kind, code, line in rows:
        t += step
        stamped.append((t, kind, code, line if kind == LINE else 0))
    now = [0]
    ticks = [0]
    walker = TimelineWalker(0, keep)
    handlers = timeline.event_handlers(
        walker, lambda: now[0], every, lambda: ticks.__setitem__(0, ticks[0] + 1)
    )
    for stamp, kind, code, line in stamped:
        now[0] = stamp
        if kind == START:
            handlers.start(codes[code], 0)
        elif traced:  # what a frame's local trace function is handed
            frame = SimpleNamespace(f_code=codes[code], f_lineno=line)
            handlers.traced(frame, "line" if kind == LINE else "return", None)
        elif kind == LINE:
            handlers.line(codes[code], line)
        else:
            handlers.end(codes[code], 0, None)
    live = walker.finish(t + 7)
    events = {
        "t": [r[0] for r in stamped],
        "kind": [r[1] for r in stamped],
        "code": [r[2] for r in stamped],
        "line": [r[3] for r in stamped],
        "codes": ["<module>", "f", "g"],
        "start": 0,
        "end": t + 7,
    }
    recorded = walk_events(events, keep_segments=keep)
    assert live["hits"] == recorded["hits"]
    assert live["host"] == recorded["host"]
    assert list(live["segments"]["t"]) == list(recorded["segments"]["t"])
    assert list(live["segments"]["line"]) == list(recorded["segments"]["line"])
    assert ticks[0] == sum(kind != RETURN for _, kind, _, _ in stamped) // every


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_captures_with_old_segments_dropped_attribute_exactly(name: str) -> None:
    """Replays each GPU capture as a long cell would see it: the events come in batches, the
    calls made so far are placed at each batch's end (as CUPTI hands over its buffers), and
    all segments but the last one are dropped. Every record lands where it did unbounded."""
    fixture = load_fixture(name)
    events, records = fixture["events"], fixture["records"]
    if "api" not in records:
        pytest.skip("placed by stack, not by time")
    expected = attribute_records(events, records)
    rows = list(iter_events(events))
    calls = sorted(zip(records["api"]["start"], records["api"]["corr"], strict=True))
    walker = TimelineWalker(events["start"])
    placed: dict[int, tuple[int, int]] = {}
    drops = 0
    for at in range(0, len(rows), 2):
        batch = rows[at : at + 2]
        walker.feed(batch)
        made = [(corr, start) for start, corr in calls if start <= batch[-1][0]]
        place_calls(placed, made, walker.segments(), walker.retained_from)
        if len(walker.seg_t) > 1:
            walker.drop_oldest(1)
            drops += 1
    bounded = walker.finish(events["end"])
    assert drops and bounded["retained_from"] > bounded["start"]
    got = attribute_records(bounded, {**records, "placed": placed_columns(placed)})
    # the lines' own time and GPU idle time are measured over the segments kept only; torch's
    # allocator events carry no call to join (they are placed by time, read after the cell),
    # so those made in the segments dropped are counted as unplaced, never put on a line
    timed = ("own_ns", "gpu_idle_ns", "memory")
    assert [{k: v for k, v in line.items() if k not in timed} for line in got["lines"]] == [
        {k: v for k, v in line.items() if k not in timed} for line in expected["lines"]
    ]
    by_time = records.get("allocator", {}).get("start", [])
    early = sum(events["start"] <= t < bounded["retained_from"] for t in by_time)
    for view in expected["memory"]["views"]:
        gone = early if view == "allocated" else 0
        assert got["memory"]["unplaced"][view] == expected["memory"]["unplaced"][view] + gone
        for line, want in zip(got["lines"], expected["lines"], strict=True):
            if want["memory"] is not None and not gone:
                assert line["memory"][view] == want["memory"][view]
    if expected["idle"] is not None:
        assert got["idle"] is not None
        assert got["idle"]["measured_from"] == bounded["retained_from"]
        assert sum(got["idle"]["own"].values()) < sum(expected["idle"]["own"].values())
    assert got["unattributed"] == expected["unattributed"]
    assert sum(got["dropped"].values()) == 0


# --- real cells ----------------------------------------------------------------------------------


LONG_CELL = """\
total = 0
for i in range(steps):
    total += i
    if i % every == 0:
        launch()  # in the loop
launch()  # at the end
"""
STEPS, EVERY = 30_000, 3_000


def run_cell(
    session: Any, source: str = LONG_CELL, sample: bool = False, **names: Any
) -> tuple[Any, dict[str, Any], dict[int, dict[str, Any]]]:
    """The cell under `session`, every run recorded unless `sample`."""
    code = compile(source, "<long cell>", "exec")
    namespace = {"steps": STEPS, "every": EVERY, "launch": session.launch, **names}
    capture = profile_code(code, namespace, session, sample=sample)
    payload = build_payload(
        attribute_records(capture.timeline, capture.records),
        source={"path": "<long cell>", "first_line": 1},
        backend=capture.backend,
        warnings=capture.warnings,
        error=capture.error,
        timings=capture.timings,
    )
    return capture, payload, {line["line"]: line for line in payload["lines"]}


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline, "RAW_EVENTS_KEPT", 500, raising=False)
    monkeypatch.setattr(timeline, "SEGMENTS_KEPT", 2_000, raising=False)


def test_a_long_cell_keeps_exact_hits_and_places_every_call_after_dropping_segments(
    small_budget: None,
) -> None:
    session = CellCalls(placing=True)
    capture, payload, lines = run_cell(session)
    assert capture.recorder is not None and capture.recorder.folds > 100
    assert session.placings > 5
    assert capture.timeline["retained_from"] > capture.timeline["start"]
    assert lines[2]["hits"] == STEPS + 1 and lines[3]["hits"] == STEPS
    assert lines[5]["hits"] == STEPS // EVERY
    assert lines[5]["kernels"]["count"] == STEPS // EVERY  # every call on its line
    assert lines[6]["kernels"]["count"] == 1
    assert sum(line["kernels"]["count"] for line in payload["lines"]) == STEPS // EVERY + 1
    assert payload["unattributed"]["kernels"] == 0
    assert capture.line_events() is None  # folded: nothing raw kept for a fixture
    assert capture.timings["folds"] == capture.recorder.folds
    assert 0 <= capture.timings["cell_s"] < capture.timings["run_s"]


def test_calls_reported_only_after_the_cell_fall_back_to_their_stack(small_budget: None) -> None:
    session = CellCalls(placing=False, stack_line=True)
    _, payload, lines = run_cell(session)
    assert lines[5]["kernels"]["count"] == STEPS // EVERY
    assert lines[6]["kernels"]["count"] == 1
    assert payload["unattributed"]["kernels"] == 0
    (warning,) = [w for w in payload["warnings"] if "placed by Python stack" in w]
    assert warning.startswith(f"{STEPS // EVERY} GPU calls were placed by Python stack")


def test_calls_that_cannot_be_placed_are_counted_and_said(small_budget: None) -> None:
    session = CellCalls(placing=False)
    _, payload, lines = run_cell(session)
    # the loop's calls came before the segments kept; the last one is among them
    assert payload["unattributed"]["kernels"] == STEPS // EVERY
    assert lines[5]["kernels"]["count"] == 0
    assert lines[6]["kernels"]["count"] == 1
    (warning,) = [w for w in payload["warnings"] if "could not be placed" in w]
    assert warning.startswith(f"{STEPS // EVERY} GPU records could not be placed")


def test_a_host_only_run_keeps_no_segments(small_budget: None) -> None:
    from gpulens.profiler.capture.host import HostSession

    session = HostSession()
    session.launch = lambda: None  # type: ignore[attr-defined]
    capture, _, lines = run_cell(session)
    assert len(capture.timeline["segments"]["t"]) == 0
    assert lines[3]["hits"] == STEPS


def test_memory_of_a_long_cell_does_not_grow_with_its_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """100k iterations, 200k line events: over 20 MB if every event were kept."""
    from gpulens.profiler.capture.host import HostSession

    monkeypatch.setattr(timeline, "RAW_EVENTS_KEPT", 10_000, raising=False)
    source = "t = 0\nfor i in range(100_000):\n    t += i\n"
    tracemalloc.start()
    try:
        capture = profile_code(compile(source, "<loop>", "exec"), {}, HostSession())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert capture.timeline["hits"][3] == 100_000
    assert peak < 5 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"


def test_an_interrupt_during_a_fold_lands_after_it_and_the_figures_hold(
    small_budget: None,
) -> None:
    """SIGINT while the timeline folds: the fold finishes (no event lost or walked twice),
    then the cell is interrupted where it stands."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals need the main thread")
    session = CellCalls(placing=True)
    original = session._place_calls

    def interrupting(segments: Segments, retained_from: int) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)  # the signal arrives while the fold goes on
        original(segments, retained_from)

    session.place_calls = interrupting
    source = "total = 0\nwhile True:\n    total += 1\n"
    capture, payload, lines = run_cell(session, source)
    assert payload["error"]["type"] == "KeyboardInterrupt"
    assert payload["error"]["line"] in (2, 3)
    assert abs(lines[2]["hits"] - lines[3]["hits"]) <= 1
    assert capture.recorder is not None and session.placings == 1


def test_small_cells_still_give_their_raw_events_for_fixtures(tmp_path: Path) -> None:
    from gpulens.profiler.capture.host import HostSession

    capture = profile_code(compile("a = 1\nb = 2\n", "<small>", "exec"), {}, HostSession())
    events = capture.line_events()
    assert events is not None and events["line"].count(2) == 1
    assert walk_events(events)["hits"] == capture.timeline["hits"]
