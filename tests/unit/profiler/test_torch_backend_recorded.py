"""The torch.profiler backend on events recorded on the device machine (H200, torch 2.11).

Each fixture holds the host calls torch.profiler reported (`torch_calls`, as plain data), our
clock around the marker op (`clock_mark`) and the line events; the records are rebuilt here
by the backend's own join, so a change to it is tested against what torch really reports.
"""

from __future__ import annotations

from typing import Any

from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.capture.torch import MARKER, clock_offset, records_from_calls
from gpulens.profiler.report import build_payload

from .conftest import load_fixture

NOTHING = {"kernels": 0, "collectives": 0, "transfers": 0, "syncs": 0, "memsets": 0}


def replay(
    name: str, *, clock: bool = True
) -> tuple[dict[str, Any], dict[int, dict[str, Any]], list[str]]:
    fixture = load_fixture(name)
    raw = fixture["records"]
    records = records_from_calls(
        raw["torch_calls"], fixture["filename"], raw["clock_mark"] if clock else None
    )
    attributed = attribute_records(fixture["events"], records)
    source = fixture["source"].splitlines()
    payload = build_payload(
        attributed, source={"path": name, "first_line": 1}, backend="torch", code=source
    )
    return payload, {line["line"]: line for line in payload["lines"]}, source


def line_with(source: list[str], marker: str) -> int:
    return next(i for i, text in enumerate(source, 1) if marker in text)


def test_the_traces_own_start_puts_the_marker_between_our_clock_reads() -> None:
    raw = load_fixture("item_sync_torch")["records"]
    marker = next(call for call in raw["torch_calls"] if call["name"] == MARKER)
    mark = raw["clock_mark"]
    assert clock_offset(marker, mark) == mark["trace_start"]
    # a trace start on another clock is not trusted: the marker's midpoint is used instead
    skewed = {**mark, "trace_start": mark["trace_start"] - 3_600_000_000_000}
    offset = clock_offset(marker, skewed)
    assert mark["before"] <= offset + marker["start"] <= mark["after"]


def test_item_syncs_and_copies_land_on_their_line_by_time() -> None:
    payload, lines, source = replay("item_sync_torch")
    line = lines[line_with(source, "# item")]
    assert line["hits"] == 50
    assert line["syncs"]["count"] == 50
    assert line["transfers"]["dtoh"]["count"] == 50
    # mul and sum; CUPTI's overhead events that repeat a launch's kernel are not counted
    assert line["kernels"]["count"] == 100
    assert [h["code"] for h in line["hints"]] == ["GPU001"]
    assert payload["unattributed"] == NOTHING


def test_backward_kernels_from_the_autograd_thread_land_on_the_backward_line() -> None:
    payload, lines, source = replay("train_step_torch")
    assert payload["unattributed"] == NOTHING
    backward = lines[line_with(source, "# backward")]
    assert backward["kernels"]["count"] > 0
    assert backward["kernels"]["count"] % 20 == 0
    assert backward["other_thread_calls"] > 0
    forward = lines[line_with(source, "# forward")]
    assert forward["kernels"]["count"] % 20 == 0
    assert forward["other_thread_calls"] == 0
    item = lines[line_with(source, "loss.item()")]
    assert (item["syncs"]["count"], item["transfers"]["dtoh"]["count"]) == (20, 20)


def test_without_the_clock_only_python_stacks_place_work() -> None:
    fixture = load_fixture("train_step_torch")
    calls = fixture["records"]["torch_calls"]
    records = records_from_calls(calls, fixture["filename"], None)
    built = sum(len(records[family]["corr"]) for family in ("kernels", "memcpy", "memset", "syncs"))
    payload, _, _ = replay("train_step_torch", clock=False)
    # torch 2.11 gave none of these ops a Python stack (with_stack=True, on the H200): the
    # join by time is what places them; without it they are all counted as unattributed
    assert not any(call["stack"] for call in calls)
    assert "api" not in records and len(records["corr_line"]) == built
    assert sum(payload["unattributed"].values()) == built > 0
    assert all(line["kernels"]["count"] == 0 for line in payload["lines"])


def test_a_trace_ended_mid_cell_places_its_calls_before_their_segments_are_dropped() -> None:
    """A long cell: torch.profiler's trace is ended when the line timeline drops its oldest
    segments, its calls placed on their lines then, and a new trace begins. Replayed on the
    recorded training steps cut in two at the midpoint: the same per-line costs as one trace,
    with no segment before the cut left to place the first trace's calls by."""
    from bisect import bisect_right

    from gpulens.profiler.capture.torch import merge_parts
    from gpulens.profiler.timeline import (
        OUTSIDE,
        Segments,
        line_at,
        place_calls,
        placed_columns,
        walk_events,
    )

    fixture = load_fixture("train_step_torch")
    raw = fixture["records"]
    calls, mark = raw["torch_calls"], raw["clock_mark"]
    whole = attribute_records(
        fixture["events"], records_from_calls(calls, fixture["filename"], mark)
    )
    marker = next(call for call in calls if call["name"] == MARKER)
    offset = clock_offset(marker, mark)
    ordered = sorted(calls, key=lambda call: call["start"])
    cut = ordered[len(ordered) // 2]["start"]
    first = [call for call in calls if call["start"] < cut]
    second = [call for call in calls if call["start"] >= cut]
    # each trace has its marker (the second one's comes when it begins)
    second.insert(0, {**marker, "start": cut, "end": cut})
    mark_two = {**mark, "trace_start": None, "before": cut + offset, "after": cut + offset}

    timeline = walk_events(fixture["events"])
    part_one = records_from_calls(first, fixture["filename"], mark)
    placed: dict[int, tuple[int, int]] = {}
    api = part_one["api"]
    place_calls(placed, zip(api["corr"], api["start"], strict=True), timeline["segments"], 0)
    corr_count = sum(len(part_one[f]["corr"]) for f in ("kernels", "memcpy", "memset", "syncs"))
    part_two = records_from_calls(second, fixture["filename"], mark_two, corr_base=corr_count)
    records = merge_parts([part_one, part_two])
    records["placed"] = placed_columns(placed)

    # the segments before the one running at the cut are gone (as when the timeline drops
    # its oldest half at the cut): only `placed` can put most of the first trace's calls
    segments = timeline["segments"]
    first_kept = bisect_right(segments["t"], cut + offset) - 1
    kept = Segments(t=segments["t"][first_kept:], line=segments["line"][first_kept:])
    dropped = {**timeline, "segments": kept, "retained_from": kept["t"][0]}
    early = [s for s in api["start"] if s < kept["t"][0]]
    assert len(early) > len(api["start"]) // 2
    assert {line_at(kept, s) for s in early} == {OUTSIDE}
    split = attribute_records(dropped, records)

    def costs(result: Any) -> dict[int, tuple[int, int, int, int]]:
        return {
            line["line"]: (
                line["kernels"]["count"],
                sum(d["count"] for d in line["transfers"].values()),
                line["syncs"]["count"],
                line["other_thread_calls"],
            )
            for line in result["lines"]
        }

    assert split["unattributed"] == whole["unattributed"] == NOTHING
    assert costs(split) == costs(whole)
    assert sum(k for k, *_ in costs(whole).values()) > 0
