from __future__ import annotations

from gpulens.profiler.hints import line_hints
from gpulens.profiler.report import build_payload, render_html, render_text
from gpulens.profiler.schema import SCHEMA

from .test_attribution_recorded import replay


def test_payload_schema_and_per_device_field_only_for_several_gpus() -> None:
    payload, lines, _ = replay("train_step")
    assert payload["schema"] == SCHEMA
    assert set(payload["unattributed"]) >= {"kernels", "transfers", "syncs"}
    line = next(iter(lines.values()))
    assert set(line) >= {
        "line",
        "hits",
        "host_s",
        "kernels",
        "transfers",
        "memsets",
        "syncs",
        "hints",
    }
    assert set(line["transfers"]) >= {"htod", "dtoh", "dtod"}
    assert all("devices" not in line for line in payload["lines"])  # one GPU, device 0


def test_text_and_html_show_every_line_and_hints() -> None:
    payload, _, source = replay("item_sync_cupti")
    text = render_text(payload)
    assert all(code.strip() in text for code in source)
    assert "GPU001" in text
    page = render_html(payload, page=True)
    assert page.startswith("<!DOCTYPE html>") and "GPU001" in page and "&lt;" not in source[0]


def test_no_hint_for_small_pageable_copies() -> None:
    line = {
        "hits": 1,
        "transfers": {"htod": {"count": 100, "bytes": 409600, "pageable": 100}},
        "pageable": {"bytes": 409600, "s": 0.001},
        "kernels": {"count": 0},
        "syncs": {"count": 0},
    }
    assert line_hints(line, None) == []


def test_empty_attribution_builds_a_payload() -> None:
    empty = {
        "lines": [],
        "unattributed": {"kernels": 0, "transfers": 0, "memsets": 0, "syncs": 0},
        "outside": {},
        "devices": [],
        "start": 0,
        "end": 10,
    }
    payload = build_payload(empty, source={"path": "x.py"}, backend="host")  # type: ignore[arg-type]
    assert payload["lines"] == [] and payload["wall_s"] == 0
    assert "gpulens profile" in render_text(payload)


def test_syncs_made_by_pageable_copies_point_at_pinned_memory_not_gpu001() -> None:
    line = {
        "hits": 200,
        "transfers": {"htod": {"count": 400, "bytes": 400 * 4096, "pageable": 400}},
        "pageable": {"bytes": 400 * 4096, "s": 0.004},
        "kernels": {"count": 0},
        "syncs": {"count": 400, "stall_s": 0.005},
    }
    assert [hint["code"] for hint in line_hints(line, None)] == ["pinned-memory"]
    line["transfers"]["htod"]["pageable"] = 0
    assert [hint["code"] for hint in line_hints(line, None)] == ["GPU001"]


def test_a_sync_hint_says_how_often_the_line_waited_per_run() -> None:
    """A DDP forward line waited 164 times in 40 runs: "once per run" would be false, and
    so would advice about one loss it does not read."""
    line = {"hits": 40, "kernels": {"count": 0}, "syncs": {"count": 164, "stall_s": 0.0008}}
    (hint,) = line_hints(line, None)
    assert "4.1 times per run on average" in hint["message"]
    assert "once per run" not in hint["message"] and "loss" not in hint["message"]
    line["syncs"]["count"] = 40
    assert "once per run" in line_hints(line, None)[0]["message"]
    line["syncs"]["count"] = 37
    assert "on most of its runs" in line_hints(line, None)[0]["message"]


def test_the_gloo_caveat_of_a_host_time_straggler_only_where_collectives_ran_on_the_cpu() -> None:
    line = {
        "hits": 40,
        "kernels": {"count": 0},
        "spread": {"slowest_rank": 1, "median_s": 0.2, "max_s": 0.4, "basis": "host"},
        "ranks": [{"rank": 0, "hits": 20}, {"rank": 1, "hits": 20}],
    }
    (on_cpu,) = line_hints(line, None)
    assert "as gloo's are" in on_cpu["message"]
    (on_gpu,) = line_hints(line, None, gpu_collectives=True)
    assert (
        on_gpu["message"].startswith("rank 1 is the straggler") and "gloo" not in on_gpu["message"]
    )
