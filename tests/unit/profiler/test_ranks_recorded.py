"""The merge of a two-rank DDP job recorded on two H200s (tests/gpu/test_ranks_gpu.py records
it): each rank's capture is attributed and sized here as in its rank, then merged.

Known by construction (the script's source, in the fixture): 20 steps, one gradient bucket,
so one all-reduce of the parameters' 38,440 bytes per step and rank on the backward line;
rank 1 sleeps 20 ms before each step, so it is the straggler of the sleep line and rank 0
waits for it in the all-reduce.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.collectives import size_collectives
from gpulens.profiler.recorded import replay_job
from gpulens.profiler.report import build_payload, render_text

from .conftest import load_fixture


@pytest.fixture(scope="module")
def ddp() -> dict[str, Any]:
    return load_fixture("ddp_two_ranks")


def line_with(fixture: dict[str, Any], payload: dict[str, Any], marker: str) -> dict[str, Any]:
    number = next(i for i, text in enumerate(fixture["source"].splitlines(), 1) if marker in text)
    return next(line for line in payload["lines"] if line["line"] == number)


def test_one_all_reduce_of_the_parameters_per_step_and_rank(ddp: dict[str, Any]) -> None:
    payload = replay_job(ddp)
    backward = line_with(ddp, payload, "# backward")["collectives"]
    assert backward["count"] == 2 * ddp["steps"]
    assert backward["bytes"] == 2 * ddp["steps"] * ddp["param_bytes"]
    assert all(top["name"].startswith("ncclDevKernel_AllReduce") for top in backward["top"])
    assert payload["unattributed"]["collectives"] == 0
    assert not [w for w in payload["warnings"] if "unsized" in w]
    # the collectives are not also counted as compute kernels
    kernels = line_with(ddp, payload, "# backward")["kernels"]
    assert not any("nccl" in top["name"] for top in kernels["top"])


def test_the_sleeping_rank_is_the_straggler_and_rank_0_waits(ddp: dict[str, Any]) -> None:
    payload = replay_job(ddp)
    slow = line_with(ddp, payload, "# slow")
    hints = [h for h in slow["hints"] if h["code"] == "straggler"]
    assert len(hints) == 1 and hints[0]["message"].startswith("rank 1 is the straggler")
    # NCCL ran the collectives on the GPU: the caveat about gloo's CPU collectives is not said
    assert "gloo" not in hints[0]["message"]
    backward = line_with(ddp, payload, "# backward")
    waited = {f["rank"]: f["waited_s"] for f in backward["ranks"]}
    assert waited[0] > 0.5 * ddp["steps"] * 0.02 > waited[1]
    assert backward["collectives"]["waited_s"] == pytest.approx(waited[0] + waited[1])
    # waiting is not work: no line but the sleep names a straggler
    named = [
        line["line"]
        for line in payload["lines"]
        if any(h["code"] == "straggler" for h in line["hints"])
    ]
    assert named == [slow["line"]]


def test_labels_hover_and_table_show_the_ranks(ddp: dict[str, Any]) -> None:
    payload = replay_job(ddp)
    slow = line_with(ddp, payload, "# slow")
    assert slow["label"].endswith("(rank 1 slowest)")
    assert "| 0 | 0 |" in slow["hover"] and "| 1 | 20 |" in slow["hover"]  # rank 0 never sleeps
    backward = line_with(ddp, payload, "# backward")
    assert "⇄40 1.5 MB" in backward["label"] and "waiting)" in backward["label"]
    text = render_text(payload)
    assert " · 2 ranks · " in text.splitlines()[0]
    header = next(row for row in text.splitlines() if row.startswith("Line"))
    assert "Ranks" in header and header.index("Ranks") < header.index("Source")
    assert "line " + str(slow["line"]) + ": rank 1 is the straggler" in text


def test_collectives_the_flight_recorder_did_not_log_stay_unsized(ddp: dict[str, Any]) -> None:
    capture = ddp["ranks"]["0"]
    records = copy.deepcopy(capture["records"])
    entries = [e for e in capture["flight_recorder"] if e["profiling_name"] != "nccl:all_reduce"]
    events = capture["events"]
    warnings = size_collectives(records, entries[:], events["start"], events["end"])
    assert any("allreduce kernels left unsized" in w for w in warnings)
    attributed = attribute_records(events, records)
    payload = build_payload(attributed, source={"path": "x.py", "first_line": 1}, backend="cupti")
    sized = [line["collectives"] for line in payload["lines"] if "collectives" in line]
    assert any(block["bytes"] is None for block in sized)  # unknown, not 0


def test_event_queries_are_polls_not_syncs(ddp: dict[str, Any]) -> None:
    """DDP and torch's allocator poll events (cudaEventQuery) several times a step; CUPTI
    writes a synchronization record for each, whose call the capture does not record. They
    are neither syncs of a line nor syncs placed on no line."""
    payload = replay_job(ddp)
    assert payload["unattributed"]["syncs"] == 0
    assert "Not placed on any line" not in render_text(payload)
    for capture in ddp["ranks"].values():
        records = capture["records"]
        called = set(records["api"]["corr"])
        waits = [
            corr
            for corr, kind in zip(records["syncs"]["corr"], records["syncs"]["type"], strict=True)
            if corr in called and kind != "wait"
        ]
        attributed = attribute_records(capture["events"], records)
        assert attributed["polls"] == len(records["syncs"]["corr"]) - len(
            [corr for corr in records["syncs"]["corr"] if corr in called]
        )
        assert attributed["polls"] > 5 * ddp["steps"]  # several a step
        placed = sum(line["syncs"]["count"] for line in attributed["lines"])
        assert placed + attributed["outside"]["syncs"] == len(waits)


def test_the_idle_loop_hint_names_the_straggler_sleep_not_launches(ddp: dict[str, Any]) -> None:
    payload = replay_job(ddp)
    loop = line_with(ddp, payload, "for step")
    (hint,) = [h for h in loop["hints"] if h["code"] == "gpu-idle"]
    slow = line_with(ddp, payload, "# slow")
    assert f"most of it while line {slow['line']} ran" in hint["message"]
    assert "launch-bound" not in hint["message"]


def test_four_ranks_on_two_gpus_merge_with_the_median_of_four() -> None:
    """Four ranks (two a GPU, gloo) of 20 steps; rank 2 sleeps 20 ms a step."""
    four = load_fixture("four_ranks")
    payload = replay_job(four)
    assert payload["ranks"]["reported"] == [0, 1, 2, 3]
    item = line_with(four, payload, "# item")
    assert [(f["rank"], f["hits"]) for f in item["ranks"]] == [(r, four["steps"]) for r in range(4)]
    slow = line_with(four, payload, "# slow")
    assert slow["spread"]["slowest_rank"] == 2 and slow["spread"]["median_s"] == 0
    (hint,) = [h for h in slow["hints"] if h["code"] == "straggler"]
    assert hint["message"].startswith("rank 2 is the straggler")
    assert "median of the 4 ranks" in hint["message"]
    # gloo ran the collectives on the CPU: the caveat is said
    assert "gloo" in hint["message"]
    # the three others wait for rank 2 in gloo's all-reduce, on the host
    reduce = {f["rank"]: f for f in line_with(four, payload, "# reduce")["ranks"]}
    assert all(reduce[r]["host_s"] > reduce[2]["host_s"] + 0.1 for r in (0, 1, 3))
