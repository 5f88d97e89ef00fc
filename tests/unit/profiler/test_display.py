"""What people read of a profile payload: the one heat scale, the words of a run, the text
report in 100 columns, saved profiles shown again, and a record kind added in one place.

The GPU payloads are built from captures recorded on an H200 (tests/fixtures/profiler)
through the real attribution and payload builder, as `gpulens profile` and `%%gpulens`
build them.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gpulens.profiler import recorded, schema
from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.display import annotate, device_seconds, markdown_text
from gpulens.profiler.report import TEXT_WIDTH, build_payload, failed_payload, render_text
from gpulens.profiler.schema import RECORD_KINDS, SCHEMA, RecordKind

from .conftest import FIXTURES, load_fixture

CAPTURES = sorted(path.name.removesuffix(".json.gz") for path in FIXTURES.glob("*.json.gz"))
SAVED = sorted(FIXTURES.glob("*.json"))
# the source column starts at or before this column, leaving 40 of 100 to the code
SOURCE_STARTS_BY = TEXT_WIDTH - 40


def script_payload(name: str) -> dict[str, Any]:
    return recorded.replay(load_fixture(name), name)


def saved(path: Path) -> dict[str, Any]:
    return annotate(json.loads(path.read_text()), recorded=True)


def every_payload() -> list[tuple[str, dict[str, Any]]]:
    return [(name, script_payload(name)) for name in CAPTURES] + [
        (path.name, saved(path)) for path in SAVED
    ]


# -- heat: one scale ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", CAPTURES)
def test_heat_is_gpu_time_over_the_hottest_lines(name: str) -> None:
    lines = script_payload(name)["lines"]
    costs = {line["line"]: device_seconds(line) for line in lines}
    top = max(costs.values())
    assert top > 0
    for line in lines:
        assert line["heat"] == pytest.approx(costs[line["line"]] / top, abs=1e-3)
    assert max(line["heat"] for line in lines) == 1.0


def test_a_cell_without_gpu_work_is_heated_by_host_time() -> None:
    lines = [{"line": 1, "hits": 1, "host_s": 0.5}, {"line": 2, "hits": 9, "host_s": 0.125}]
    payload = annotate({"source": {"path": "a.py"}, "lines": lines})
    assert [line["heat"] for line in payload["lines"]] == [1.0, 0.25]
    assert "80% of the cell's time on the host" in payload["lines"][0]["hover"]


def test_every_line_carries_label_hover_and_heat() -> None:
    for name, payload in every_payload():
        assert payload["schema"] == SCHEMA, name
        for line in payload["lines"]:
            assert line["label"] and line["hover"].startswith("**gpulens profile**"), name
            assert 0 <= line["heat"] <= 1, name


# -- the run, in words ----------------------------------------------------------------------------
def test_a_notebook_cell_is_named_by_its_place_or_by_its_run() -> None:
    source = {"path": None, "first_line": 2, "last_line": 4}
    placed = failed_payload({**source, "cell": 4, "execution_count": 9}, "boom", "ValueError")
    assert placed["display"]["header"].startswith("gpulens profile · cell 4 (lines 2–4)")
    counted = failed_payload({**source, "cell": None, "execution_count": 9}, "boom", "ValueError")
    assert "the cell run as [9]" in counted["display"]["header"]
    assert counted["display"]["message"].startswith("gpulens: the cell run as [9] raised")


def test_a_notebook_payload_saved_before_2_named_its_run_count_as_the_cell() -> None:
    recorded = json.loads((FIXTURES / "pitfalls_cell3_h200.profile.json").read_text())
    assert recorded["schema"] == "gpulens.profile/1" and recorded["source"]["cell"] == 5
    payload = annotate(recorded)
    assert payload["source"]["cell"] is None and payload["source"]["execution_count"] == 5
    assert payload["display"]["summary"].startswith("gpulens · the cell run as [5] · ")


def test_messages_say_how_loud_they_are() -> None:
    source = {"path": "/w/train.py", "cell": 2, "first_line": 8}
    levels = {
        kind: failed_payload(source, "x", kind)["display"]["level"]
        for kind in ("Cancelled", "Timeout", "RequestError", "ZeroDivisionError")
    }
    assert levels == {
        "Cancelled": "info",
        "Timeout": "warning",
        "RequestError": "error",
        "ZeroDivisionError": "error",
    }
    assert script_payload("train_step")["display"]["level"] is None


def test_a_saved_profile_says_where_and_when_it_was_recorded() -> None:
    payload = saved(FIXTURES / "demo_cell3_h200_payload.json")
    assert payload["display"]["recorded"] == "recorded on NVIDIA H200, 2026-11-22"
    assert script_payload("train_step")["display"]["recorded"] is None


# -- the text report in 100 columns ---------------------------------------------------------------
def source_column(report: list[str]) -> int:
    header = next(row for row in report if row.startswith("Line "))
    return header.index("Source")


@pytest.mark.parametrize(("name", "payload"), every_payload(), ids=lambda value: str(value)[:40])
def test_the_report_is_readable_in_100_columns(name: str, payload: dict[str, Any]) -> None:
    report = render_text(payload).splitlines()
    start = source_column(report)
    assert start <= SOURCE_STARTS_BY, (name, start)
    table = payload["display"]["table"]
    code = {row["line"]: row["cells"][-1] for row in table["rows"]}
    for row in report:
        number = row[:4].strip()
        # a table row may run past 100 only with its own source text, which starts in place
        if number.isdigit() and code.get(int(number)):
            assert row[start:] == code[int(number)], row
        else:
            assert len(row) <= TEXT_WIDTH, row
    # no column is empty on every line
    for i, column in enumerate(table["columns"][1:-1], start=1):
        assert any(row["cells"][i] for row in table["rows"]), (name, column)


def test_the_widest_figures_of_every_column_leave_the_source_in_place() -> None:
    """A line run a million times, with the widest GPU work parts, a memory change that
    reached the peak and its idle share: the source still starts by column 60 (memory and
    idle take rows of the GPU work cell, not columns of their own)."""
    line = {
        "line": 1,
        "hits": 1_000_000,
        "host_s": 0.125,
        "kernels": {"count": 1400, "gpu_s": 0.0087, "top": []},
        "memsets": {"count": 1400, "bytes": 4096, "s": 0.0087},
        "memory": {"allocated": {"alloc": 2**34, "free": 0, "net": 2**34}},
        "own_s": 0.125,
        "gpu_idle_s": 0.125,
    }
    payload = annotate(
        {
            "source": {"path": "a.py"},
            "lines": [line],
            "code": ["y = x * 2"],
            "peak": {"allocated": [{"device": 0, "bytes": 2**34, "rise": 2**34, "line": 1}]},
            "gpu_busy": {"s": 0.0087, "share": 0.07},
        }
    )
    (row,) = payload["display"]["table"]["rows"]
    assert row["cells"][3].split("\n") == [
        "1.4k kernels 8.7 ms",
        "1.4k memsets 8.7 ms",
        "+16 GiB mem",
        "▲ peak 16 GiB",
        "GPU idle 100%",
    ]
    report = render_text(payload).splitlines()
    assert source_column(report) <= SOURCE_STARTS_BY


def test_a_host_run_shows_no_gpu_column() -> None:
    lines = [{"line": 1, "hits": 3, "host_s": 0.5}]
    payload = annotate({"source": {"path": "a.py"}, "lines": lines, "code": ["x = 1"]})
    titles = [column["title"] for column in payload["display"]["table"]["columns"]]
    assert titles == ["Line", "Hits", "Host", "Source"]
    assert render_text(payload).splitlines()[2].split() == titles


def test_gpu_work_of_several_kinds_takes_a_row_each_under_its_line() -> None:
    payload = script_payload("item_sync_cupti")
    report = render_text(payload).splitlines()
    start = source_column(report)
    row = next(r for r in payload["display"]["table"]["rows"] if "# item" in r["cells"][-1])
    parts = row["cells"][3].split("\n")
    # kernels, copies, waits, and the GPU idle most of the line
    assert [part.split()[0][0] for part in parts] == ["1", "↓", "⏸", "G"]
    at = next(i for i, text in enumerate(report) if text[start:] == row["cells"][-1])
    for depth, part in enumerate(parts):
        assert part in report[at + depth][:start]
        assert depth == 0 or report[at + depth][start:] == ""


# -- gpulens profile --replay ----------------------------------------------------------------------
def replay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpulens", "profile", "--replay", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_replay_shows_a_saved_gpu_profile_labelled_as_recorded() -> None:
    done = replay(str(FIXTURES / "demo_cell3_h200_payload.json"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("gpulens profile · cell 3 of profile_demo.py (lines 25–43)")
    assert "recorded on NVIDIA H200, 2026-11-22" in lines[:3]
    assert any(row.endswith("loss.backward()") and "2.4k kernels" in row for row in lines)


def test_replay_as_json_is_a_payload_of_today(tmp_path: Path) -> None:
    out = tmp_path / "saved.json"
    saved_file = FIXTURES / "pitfalls_cell3_h200.profile.json"
    done = replay(str(saved_file), "--format", "json", "-o", str(out))
    assert done.returncode == 0, done.stderr
    payload = json.loads(out.read_text())
    assert payload["schema"] == SCHEMA and payload["display"]["recorded"].startswith("recorded on")


def test_replay_refuses_what_it_cannot_show_in_one_line(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not json")
    status = tmp_path / "status.json"
    status.write_text(json.dumps({"schema": "gpulens.status/2"}))
    for args in ([str(text)], [str(status)], [str(tmp_path)], [str(text), "--cell", "2"]):
        done = replay(*args)
        assert done.returncode == 2, args
        assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("gpulens profile: error: "), done.stderr


# -- a record kind is one class -----------------------------------------------------------------
class GraphLaunches(RecordKind):
    """A kind the schema does not have: CUDA graph launches, from a `graphs` family."""

    key = "graphs"
    family = "graphs"
    columns: ClassVar[tuple[str, ...]] = ("corr", "start", "end")
    legend = ""

    def empty(self) -> dict[str, Any]:
        return {"count": 0, "ns": 0}

    def tally(
        self,
        family: schema.Family,
        place: schema.Place,
        devices: set[int],
        names: Sequence[str],
    ) -> None:
        for corr, begin, finish in schema.rows(family, self.columns):
            cost = place(corr)
            if cost is not None:
                cost[self.key]["count"] += 1
                cost[self.key]["ns"] += finish - begin

    def payload(self, cost: schema.LineCost) -> dict[str, Any]:
        block = cost[self.key]
        return {self.key: {"count": block["count"], "s": schema.seconds(block["ns"])}}

    def made_work(self, line: schema.PayloadLine) -> bool:
        return bool(line.get(self.key, {}).get("count"))

    def device_s(self, line: schema.PayloadLine) -> float:
        return float(line.get(self.key, {}).get("s", 0))

    def label(self, line: schema.PayloadLine) -> list[str]:
        count = line.get(self.key, {}).get("count")
        return [schema.plural(count, "graph")] if count else []

    def hover(self, line: schema.PayloadLine) -> list[str]:
        return [f"{line[self.key]['count']} graph launches"] if self.made_work(line) else []

    def cell(self, line: schema.PayloadLine) -> list[str]:
        return self.label(line)


def test_a_new_record_kind_is_one_class(monkeypatch: pytest.MonkeyPatch) -> None:
    with gzip.open(FIXTURES / "train_step.json.gz", "rt", encoding="utf-8") as handle:
        capture = json.load(handle)
    records = capture["records"]
    api = records["api"]
    # three graph launches, made by the calls of the first kernels (so on their lines)
    records["graphs"] = {
        "corr": records["kernels"]["corr"][:3],
        "start": [0, 0, 0],
        "end": [10**6] * 3,
    }
    records["graphs"]["corr"].append(-1)  # and one no call made: unattributed
    for column in ("start", "end"):
        records["graphs"][column].append(0)
    monkeypatch.setattr(schema, "RECORD_KINDS", (*RECORD_KINDS, GraphLaunches()))
    payload = build_payload(
        attribute_records(capture["events"], records),
        source={"path": "train.py", "first_line": 1},
        backend="cupti",
        code=capture["source"].splitlines(),
    )
    assert api  # the joins ran on the recorded calls
    graphed = [line for line in payload["lines"] if line.get("graphs", {}).get("count")]
    assert sum(line["graphs"]["count"] for line in graphed) == 3
    assert payload["unattributed"]["graphs"] == 1
    line = graphed[0]
    assert "graph" in line["label"] and "graph launches" in line["hover"]
    gpu_work = [row["cells"][3] for row in payload["display"]["table"]["rows"]]
    assert any("graph" in cell for cell in gpu_work)
    assert "1 graphs" in " ".join(payload["display"]["notes"])


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("3 launches · 1.2 ms", "3 launches · 1.2 ms"),
        ("void gemm<float>(*)", "void gemm\\<float\\>(\\*)"),
        ("a_b|c", "a\\_b\\|c"),
        ("[x] `y` \\", "\\[x\\] \\`y\\` \\\\"),
        *((f"x{mark} y", f"x\\{mark} y") for mark in "\\`*_[]<>|"),
    ],
)
def test_markdown_text_escapes_each_mark_and_nothing_else(text: str, shown: str) -> None:
    assert markdown_text(text) == shown
