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
