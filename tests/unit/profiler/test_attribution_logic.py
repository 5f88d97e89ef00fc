"""Attribution rules on small hand-made timelines (the join itself is replayed on real
captures in test_attribution_recorded.py)."""

from __future__ import annotations

from gpulens.profiler.attribution import attribute_records, walk_timeline
from gpulens.profiler.timeline import LINE, RETURN, START, walk_events

MAIN, FUNC = 0, 1


def events(rows: list[tuple[int, int, int, int]], end: int) -> dict:
    return {
        "t": [r[0] for r in rows],
        "kind": [r[1] for r in rows],
        "code": [r[2] for r in rows],
        "line": [r[3] for r in rows],
        "codes": ["<module>", "f"],
        "start": 0,
        "end": end,
    }


# main: line 5 calls f (lines 2-3), returns, then line 6
TIMELINE = events(
    [
        (0, START, MAIN, 0),
        (10, LINE, MAIN, 5),
        (20, START, FUNC, 0),
        (21, LINE, FUNC, 2),
        (30, LINE, FUNC, 3),
        (40, RETURN, FUNC, 0),
        (50, LINE, MAIN, 6),
        (60, RETURN, MAIN, 0),
    ],
    end=70,
)


def api(*calls: tuple[int, int]) -> dict:
    return {
        "corr": [c for c, _ in calls],
        "start": [t for _, t in calls],
        "end": [t + 1 for _, t in calls],
        "tid": [1] * len(calls),
    }


def kernels(*rows: tuple[int, int]) -> dict:
    return {
        "corr": [c for c, _ in rows],
        "start": [100] * len(rows),
        "end": [110] * len(rows),
        "device": [d for _, d in rows],
        "name": [0] * len(rows),
    }


def test_calls_land_on_the_function_line_then_back_on_the_caller() -> None:
    records = {
        "api": api((1, 15), (2, 25), (3, 35), (4, 45), (5, 55)),
        "kernels": kernels((1, 0), (2, 0), (3, 0), (4, 0), (5, 0)),
        "names": ["k"],
    }
    result = attribute_records(TIMELINE, records)
    counts = {line["line"]: line["kernels"]["count"] for line in result["lines"]}
    assert counts == {5: 2, 2: 1, 3: 1, 6: 1}  # 45: f returned, back on line 5


def test_host_time_is_inclusive_and_hits_count_line_events() -> None:
    _, hits, host = walk_timeline(TIMELINE)
    assert hits == {5: 1, 2: 1, 3: 1, 6: 1}
    assert host[5] == 40 and host[2] == 9 and host[3] == 10 and host[6] == 10


def test_records_without_a_call_are_unattributed_and_calls_outside_the_cell_dropped() -> None:
    records = {
        "api": api((1, 15), (2, 500)),
        "kernels": kernels((1, 0), (2, 0), (3, 0)),
        "names": ["k"],
    }
    result = attribute_records(TIMELINE, records)
    assert result["unattributed"]["kernels"] == 1  # corr 3: no API record
    assert result["outside"]["kernels"] == 1  # corr 2: called after the cell ended


def test_frames_left_by_an_exception_are_popped_by_the_callers_next_line() -> None:
    unwound = events(
        [
            (0, START, MAIN, 0),
            (10, LINE, MAIN, 5),
            (20, START, FUNC, 0),
            (21, LINE, FUNC, 2),  # f raises: no RETURN
            (30, LINE, MAIN, 7),  # the caller's except clause
        ],
        end=40,
    )
    records = {"api": api((1, 35)), "kernels": kernels((1, 0)), "names": ["k"]}
    result = attribute_records(unwound, records)
    assert [line["line"] for line in result["lines"] if line["kernels"]["count"]] == [7]


def test_per_device_figures_when_several_gpus_ran() -> None:
    records = {"api": api((1, 15), (2, 16)), "kernels": kernels((1, 0), (2, 1)), "names": ["k"]}
    result = attribute_records(TIMELINE, records)
    line5 = next(line for line in result["lines"] if line["line"] == 5)
    assert sorted(line5["devices"]) == [0, 1]
    assert line5["devices"][1]["kernels"] == 1
    assert result["devices"] == [0, 1]


# -- memory and idle time on the same timeline ----------------------------------------------------
# segments: line 5 [10, 21), line 2 [21, 30), line 3 [30, 40), line 5 [40, 50), line 6 [50, 60)


def test_idle_time_is_each_lines_own_time_less_the_gpus_busy_time_in_it() -> None:
    # two kernels on two GPUs, overlapping: the GPU is busy from 12 to 25
    records = {
        "api": api((1, 11), (2, 13)),
        "kernels": {
            "corr": [1, 2],
            "start": [12, 14],
            "end": [15, 25],
            "device": [0, 1],
            "name": [0, 0],
        },
        "names": ["k"],
    }
    result = attribute_records(TIMELINE, records)
    own = {line["line"]: line["own_ns"] for line in result["lines"]}
    idle = {line["line"]: line["gpu_idle_ns"] for line in result["lines"]}
    assert own == {2: 9, 3: 10, 5: 21, 6: 10}
    assert idle == {2: 5, 3: 10, 5: 12, 6: 10}
    assert result["idle"] is not None and result["idle"]["busy_ns"] == 13


def test_records_without_device_times_give_no_idle_time() -> None:
    # torch.profiler's kernels: a duration from 0
    records = {"api": api((1, 11)), "kernels": kernels((1, 0)), "names": ["k"]}
    records["kernels"]["start"], records["kernels"]["end"] = [0], [10]
    result = attribute_records(TIMELINE, records)
    assert result["idle"] is None
    assert all(line["gpu_idle_ns"] is None for line in result["lines"])


def test_a_memory_record_takes_its_calls_line_where_the_call_spans_it_else_its_time() -> None:
    timeline = walk_events(TIMELINE)
    timeline["retained_from"] = 30  # segments before 30 dropped, as in a long cell
    records = {
        "api": api((1, 15), (7, 44)),
        # call 1 was placed on its line before its segment was dropped
        "placed": {"corr": [1], "start": [15], "line": [5]},
        "driver_memory": {
            "corr": [1, 0, 1, 7, 0],
            "start": [15, 16, 35, 44, 55],
            "bytes": [100, 50, 30, -100, 5],
            "device": [0, 0, 0, 0, 0],
        },
    }
    result = attribute_records(timeline, records)
    memory = {line["line"]: line["memory"]["reserved"] for line in result["lines"]}
    # 15: call 1's own record, on its line; 16: no call, made before the segments kept:
    # unplaced; 35: names call 1 but long after it (a stale id): placed by its time; 44:
    # call 7's; 55: by time
    assert memory[5] == {"alloc": 100, "free": 100}
    assert memory[3] == {"alloc": 30, "free": 0}
    assert memory[6] == {"alloc": 5, "free": 0}
    assert memory[2] == {"alloc": 0, "free": 0}
    assert result["memory"]["unplaced"] == {"reserved": 1}
    # 100, 150, 180 (the peak, on line 3), 80, 85; what was held before is not known
    assert result["memory"]["peaks"] == {
        "reserved": [{"device": 0, "bytes": None, "rise": 180, "line": 3}]
    }
