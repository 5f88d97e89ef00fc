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

NOTHING = {"kernels": 0, "transfers": 0, "syncs": 0, "memsets": 0}


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
