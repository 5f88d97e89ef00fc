"""The merge of rank payloads: a rank that sent nothing, a rank that raised, the spread."""

from __future__ import annotations

from typing import Any

from gpulens.profiler.display import annotate
from gpulens.profiler.merge import RankResult, merge_ranks, spread, waited_by_line
from gpulens.profiler.report import render_text

EMPTY = {"start": [], "ns": [], "name": [], "line": []}


def rank(
    number: int, lines: list[dict[str, Any]], error: dict[str, Any] | None = None
) -> RankResult:
    payload = annotate(
        {
            "schema": "gpulens.profile/2",
            "backend": "host",
            "lines": lines,
            "error": error,
            "warnings": [],
            "wall_s": 1.0,
            "source": {"path": "t.py", "first_line": 1},
        }
    )
    return RankResult(rank=number, payload=payload, collectives=EMPTY)


def merge(results: list[RankResult], failures: dict[int, str] | None = None) -> dict[str, Any]:
    return merge_ranks(
        results,
        world_size=2,
        failures=failures or {},
        source={"path": "t.py", "first_line": 1},
        code=["x = 1", "y = 2"],
        wall_s=1.0,
    )


def test_a_rank_that_sent_nothing_is_named_and_the_others_lines_are_shown() -> None:
    payload = merge(
        [rank(0, [{"line": 2, "hits": 3, "host_s": 0.5}])], {1: "it was killed by signal SIGKILL"}
    )
    assert payload["error"]["type"] == "RankExit" and payload["error"]["rank"] == 1
    assert payload["display"]["message"].startswith(
        "gpulens: profiling t.py stopped: it was killed"
    )
    assert "The costs of the lines that ran are shown." in payload["display"]["message"]
    assert "rank 1 sent no profile: it was killed by signal SIGKILL" in payload["display"]["notes"]
    assert [line["hits"] for line in payload["lines"]] == [3]
    assert "1 of 2 ranks reported" in payload["display"]["header"]


def test_a_rank_that_raised_gives_the_error_with_its_rank() -> None:
    error = {"type": "ZeroDivisionError", "message": "division by zero", "line": 2}
    payload = merge([rank(0, [{"line": 1, "hits": 1, "host_s": 0.1}]), rank(1, [], error)])
    assert payload["error"]["message"] == "on rank 1: division by zero"
    assert "raised ZeroDivisionError at line 2: on rank 1" in payload["display"]["message"]


def test_the_rank_that_raised_first_names_the_error_not_the_peer_that_lost_it() -> None:
    """Gloo's all-reduce on rank 0 fails when rank 1, which raised, closes its connection
    (seen on an H100 with `gpulens profile --nproc-per-node 2`): the cause is rank 1's."""
    cause = {"type": "RuntimeError", "message": "rank 1 fails at step 5", "line": 3, "at": 10.0}
    lost = {
        "type": "DistBackendError",
        "message": "[gloo/transport/tcp/pair.cc:547] Connection closed by peer",
        "line": 4,
        "at": 10.02,
    }
    payload = merge([rank(0, [], lost), rank(1, [], cause)])
    assert payload["error"]["rank"] == 1
    assert payload["error"]["message"] == "on rank 1: rank 1 fails at step 5"
    # without the times (a payload from before they were kept), the lowest rank's
    del cause["at"], lost["at"]
    assert merge([rank(0, [], lost), rank(1, [], cause)])["error"]["rank"] == 0


def test_lines_add_up_and_each_rank_keeps_its_figures() -> None:
    a = rank(0, [{"line": 1, "hits": 5, "host_s": 0.010, "syncs": {"count": 5, "stall_s": 0.008}}])
    b = rank(1, [{"line": 1, "hits": 5, "host_s": 0.030}])
    payload = merge([a, b])
    line = payload["lines"][0]
    assert (line["hits"], line["host_s"]) == (10, 0.04)
    busy = {f["rank"]: f["busy_s"] for f in line["ranks"]}
    assert busy == {0: 0.002, 1: 0.03}  # rank 0's waits for the GPU are not its work
    assert line["spread"] == {
        "basis": "host",
        "min_s": 0.002,
        "median_s": 0.016,
        "max_s": 0.03,
        "slowest_rank": 1,
    }
    assert [h["code"] for h in line["hints"]] == ["straggler"]
    assert "Ranks" in render_text(payload)


def test_spread_names_the_lowest_of_tied_ranks() -> None:
    figures = [{"rank": 2, "t": 1.0}, {"rank": 0, "t": 1.0}, {"rank": 1, "t": 0.5}]
    assert spread(figures, "t") == {"min_s": 0.5, "median_s": 1.0, "max_s": 1.0, "slowest_rank": 0}


def test_the_k_th_collective_is_matched_across_ranks() -> None:
    def trace(ns: list[int]) -> dict[str, list[Any]]:
        names = ["ncclDevKernel_AllReduce_Sum_f32_RING_LL"] * len(ns)
        return {"start": list(range(len(ns))), "ns": ns, "name": names, "line": [4] * len(ns)}

    results = [
        RankResult(rank=0, payload={}, collectives=trace([5_000_000, 1_000])),
        RankResult(rank=1, payload={}, collectives=trace([1_000, 3_000_000])),
    ]
    waited = waited_by_line(results)
    assert waited[0][4] == (5_000_000 - 1_000) / 1e9
    assert waited[1][4] == (3_000_000 - 1_000) / 1e9


def test_a_distributed_cell_run_as_one_process_is_pointed_at_the_ranks_option() -> None:
    error = {
        "type": "ValueError",
        "message": "Error initializing torch.distributed using env:// rendezvous: "
        "environment variable RANK expected, but not set",
        "line": 7,
    }
    payload = annotate({"source": {"path": "train.py", "cell": 2}, "lines": [], "error": error})
    assert payload["display"]["message"].endswith(
        "profile it as one from a terminal, `gpulens profile --nproc-per-node N FILE`."
    )
