""" "Measure this fix" (`profiler.measure_fix`, `gpulens measure-fix`): the verdict and its words
from the runs' figures, and real runs of a cell both ways on this machine's host backend.

The real runs use a stand-in torch (`tests/fixtures/host_torch`) whose host reads wait as a
sync does, so a GPU001 fix changes what the host measures; `tests/gpu` runs the same on an
H200 with torch and CUPTI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpulens.analysis import Edit, Finding, Fix, Severity, Span, analyze
from gpulens.profiler.measure_fix import (
    MeasureRequestError,
    choose_fix,
    plan_measurement,
    record_changes,
    record_totals,
    summarize,
)
from gpulens.profiler.runner import run_profile

from .conftest import FIXTURES

REPO = Path(__file__).resolve().parents[3]
HOST_TORCH = REPO / "tests" / "fixtures" / "host_torch"
FIX_TITLE = "Accumulate `total` on the device, read it once after the loop"

TRAIN = """\
import torch

# %% setup
x = torch.ones(10, device="cuda")
{costs}
# %% the loop
total = 0.0
for step in range(100):
    total += (x * step).sum().item()
print(total)
"""
SYNC_LINE = 9  # 1-based


def plan_of(text: str = TRAIN.format(costs="")) -> Any:
    finding, fix = choose_fix(analyze(text).findings, SYNC_LINE, "GPU001")
    return plan_measurement("train.py", text, finding, fix)


def run(
    wall_s: float,
    *,
    profiled: float | None = None,
    syncs: int = 0,
    pageable: int = 0,
    pinned: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    """A run's payload, reduced to what the verdict reads: the cell's timed second run
    (`wall_s`), its profiled first run (`profiled`, default the same) and its records."""
    line = {
        "line": SYNC_LINE,
        "hits": 100,
        "syncs": {"count": syncs, "stall_s": 0.0},
        "kernels": {"count": 0},
        "transfers": {"htod": {"count": pageable + pinned, "pageable": pageable, "pinned": pinned}},
    }
    source = {"path": "train.py", "cell": 2, "first_line": 6}
    return {
        "wall_s": wall_s if profiled is None else profiled,
        "timed": {"wall_s": wall_s, "error": None},
        "backend": "cupti",
        "source": source,
        "lines": [line],
        **extra,
    }


# -- choosing and planning ----------------------------------------------------------------------


def test_the_plan_runs_the_cell_of_the_finding_with_its_first_safe_fix() -> None:
    plan = plan_of()
    assert (plan.cell, plan.line, plan.code, plan.fix_title) == (2, SYNC_LINE, "GPU001", FIX_TITLE)
    assert plan.text == TRAIN.format(costs="")
    assert "total += (x * step).sum().detach().double()" in plan.fixed_text
    assert plan.fixed_text.endswith("print(total)\n")
    # a file without cells is run whole
    flat = TRAIN.format(costs="").replace("# %% setup\n", "").replace("# %% the loop\n", "")
    finding, fix = choose_fix(analyze(flat).findings, SYNC_LINE - 2, "gpu001")
    assert plan_measurement("train.py", flat, finding, fix).cell is None


def test_a_request_without_a_fix_to_measure_says_why() -> None:
    findings = analyze(TRAIN.format(costs="")).findings
    with pytest.raises(MeasureRequestError, match=r"^line 3 has no GPU001 finding$"):
        choose_fix(findings, 3, "GPU001")
    with pytest.raises(
        MeasureRequestError, match=r"line 9 has no GPU004 finding \(it has GPU001\)"
    ):
        choose_fix(findings, SYNC_LINE, "GPU004")
    with pytest.raises(MeasureRequestError, match="has no fix 'Nope'"):
        choose_fix(findings, SYNC_LINE, "GPU001", "Nope")
    bare = [Finding("GPU001", Severity.WARNING, "m", Span(8, 4, 8, 10))]
    with pytest.raises(MeasureRequestError, match="has no fix to measure"):
        choose_fix(bare, SYNC_LINE, "GPU001")
    breaking = Fix("Break it", (Edit(Span(8, 4, 8, 4), "(("),))
    with pytest.raises(MeasureRequestError, match="cannot be applied"):
        plan_measurement("train.py", TRAIN.format(costs=""), bare[0], breaking)


# -- the verdict --------------------------------------------------------------------------------


def test_faster_when_the_rank_test_finds_the_fixed_runs_shorter_at_the_stated_level() -> None:
    plan = plan_of()
    before = [run(t, syncs=200) for t in (0.40, 0.42, 0.41, 0.43, 0.39)]
    # one fixed run is as slow as the runs as they were: the ranges overlap, yet 23.5 of the
    # 25 pairs favour the fix, which chance alone gives 3 times in 252
    after = [run(t, syncs=1) for t in (0.30, 0.31, 0.29, 0.40, 0.28)]
    result = summarize(plan, before, after)
    assert result["verdict"] == "faster" and result["apply"]
    assert result["test"] == {
        "name": "exact one-sided Mann–Whitney U",
        "alpha": 0.05,
        "u": 23.5,
        "p_faster": pytest.approx(3 / 252),
        "p_slower": pytest.approx(251 / 252),
    }
    assert result["speedup"] == pytest.approx(0.41 / 0.30, rel=1e-3)
    assert result["before"]["median_s"] == 0.41 and result["after"]["median_s"] == 0.30
    assert result["after"]["spread"] == pytest.approx(0.06 / 0.30)
    assert result["message"] == (
        f"gpulens: “{FIX_TITLE}” makes cell 2 of train.py 1.37× faster, beyond the noise: "
        "410 ms → 300 ms (medians), p = 0.012 over 5 runs each (noise: runs of 390 ms–430 ms "
        "as it is, ±5 %; 280 ms–400 ms fixed, ±20 %); records: syncs 200 → 1."
    )
    assert result["level"] == "info" and result["notes"] == []


def test_overlapping_runs_are_within_the_noise_and_the_p_value_says_how_far() -> None:
    plan = plan_of()
    before = [run(t, syncs=200) for t in (0.40, 0.42, 0.41)]
    overlapping = [run(t, syncs=1) for t in (0.39, 0.30, 0.42)]
    within = summarize(plan, before, overlapping)
    assert within["verdict"] == "within-noise" and within["level"] == "warning"
    assert within["test"]["p_faster"] == pytest.approx(0.25)
    assert within["message"] == (
        f"gpulens: “{FIX_TITLE}” does not make cell 2 of train.py faster beyond the noise: "
        "410 ms → 390 ms (medians), p = 0.25 over 3 runs each, above 0.05 (noise: runs of "
        "400 ms–420 ms as it is, ±2 %; 300 ms–420 ms fixed, ±15 %); records: syncs 200 → 1."
    )


def test_a_real_but_tiny_difference_is_not_called_faster() -> None:
    """Seen on an H100: a fix that saved 0.3 % of a 132 ms cell, every fixed run a little
    shorter, passed the rank test; a 1.00× speedup is not "faster"."""
    plan = plan_of()
    before = [run(t, syncs=10) for t in (0.1320, 0.1322, 0.1321, 0.1323, 0.1324)]
    after = [run(t, syncs=1) for t in (0.1316, 0.1317, 0.1318, 0.1315, 0.1319)]
    result = summarize(plan, before, after)
    assert result["test"]["p_faster"] <= 0.05  # the test alone would call it faster
    assert result["verdict"] == "within-noise" and result["level"] == "warning"
    assert result["message"].startswith(
        f"gpulens: “{FIX_TITLE}” changes cell 2 of train.py's time by <1 %, less than the 2 % "
        "worth calling faster or slower: 132 ms → 132 ms (medians), p = 0.004 over 5 runs each"
    )


def test_slower_is_the_same_test_the_other_way() -> None:
    plan = plan_of()
    before = [run(t, syncs=200) for t in (0.40, 0.42, 0.41, 0.43, 0.39)]
    slower = summarize(plan, before, [run(t) for t in (0.8, 0.81, 0.82, 0.5, 0.79)])
    assert slower["verdict"] == "slower"
    assert slower["test"]["p_slower"] == pytest.approx(1 / 252)
    assert slower["message"].startswith(
        f"gpulens: “{FIX_TITLE}” makes cell 2 of train.py slower (1.95× the time), beyond the "
        "noise: 410 ms → 800 ms (medians), p = 0.004 over 5 runs each (noise: "
    )
    assert slower["message"].endswith("; records: syncs 200 → 0.")


def test_two_runs_each_are_never_enough_and_the_result_says_so() -> None:
    before = [run(t, syncs=200) for t in (0.40, 0.42)]
    result = summarize(plan_of(), before, [run(t) for t in (0.10, 0.11)])
    assert result["verdict"] == "within-noise"
    assert result["test"]["p_faster"] == pytest.approx(1 / 6)
    assert result["notes"] == [
        "2 runs each cannot show a difference at p <= 0.05: measure 3 or more of each"
    ]


def test_the_times_compared_are_the_second_unprofiled_runs() -> None:
    # the profiled first runs (cold, under the profiler) say the opposite of the timed ones
    before = [run(t, profiled=0.2, syncs=200) for t in (0.40, 0.42, 0.41)]
    after = [run(t, profiled=0.5, syncs=1) for t in (0.20, 0.21, 0.19)]
    result = summarize(plan_of(), before, after)
    assert result["verdict"] == "faster", result["message"]
    assert result["before"]["wall_s"] == [0.40, 0.42, 0.41]
    assert result["before"]["profiled_wall_s"] == [0.2, 0.2, 0.2]
    assert result["after"]["median_s"] == 0.20


def test_the_records_that_changed_are_named_pageable_to_pinned_included() -> None:
    before = record_totals(run(1.0, syncs=400, pageable=400))
    after = record_totals(run(1.0, syncs=0, pinned=400))
    assert [change["text"] for change in record_changes(before, after)] == [
        "syncs 400 → 0",
        "copies from pageable memory 400 → 0",
        "copies from pinned memory 0 → 400",
    ]
    assert record_changes(before, before) == []
    # the demo's recorded H200 profile: its totals, read through the payload's own kinds
    demo = json.loads((FIXTURES / "demo_cell3_h200_payload.json").read_text())
    assert record_totals(demo) == {
        "syncs": 604,
        "htod": 404,
        "dtoh": 200,
        "pageable": 404,
        "pinned": 200,
        "kernels": 4000,
    }


def test_a_failed_or_stopped_run_is_said_and_nothing_is_offered() -> None:
    plan = plan_of()
    error = {
        "type": "AttributeError",
        "message": "'Tensor' object has no attribute 'double'",
        "line": 9,
    }
    broken = summarize(plan, [run(0.4)], [run(0.1, error=error)])
    assert broken["verdict"] == "failed" and not broken["apply"] and broken["level"] == "error"
    assert broken["message"] == (
        f"gpulens: “{FIX_TITLE}” breaks cell 2 of train.py: the cell with the fix stopped at "
        "line 9: AttributeError: 'Tensor' object has no attribute 'double'. Nothing was changed."
    )
    failed = summarize(
        plan, [run(0.4, error={"type": "NameError", "message": "x", "line": None})], []
    )
    assert failed["verdict"] == "failed"
    assert failed["message"] == (
        "gpulens: the fix was not measured: the cell as it is stopped: NameError: x."
    )
    again = run(0.1)
    again["timed"] = {"wall_s": None, "error": {"type": "NameError", "message": "y", "line": 9}}
    second = summarize(plan, [run(0.4)], [again])
    assert second["verdict"] == "failed" and not second["apply"]
    assert second["message"] == (
        f"gpulens: “{FIX_TITLE}” breaks cell 2 of train.py: the cell with the fix stopped when "
        "run a second time (each run profiles the cell, then times a second run of it) at "
        "line 9: NameError: y. Nothing was changed."
    )
    stopped = summarize(plan, [run(0.4)], [], stopped="SIGINT")
    assert stopped["verdict"] == "stopped"
    assert stopped["message"] == (
        "gpulens: measuring the fix was stopped (SIGINT) before every run ended."
    )


# -- real runs ----------------------------------------------------------------------------------


# a cell whose first run pays a one-off cost, as loading its kernels or making a library's
# handle would, and which counts its runs in the namespace they share
WARMING = """\
import time

# %% setup
runs = []

# %% the cell
if not runs:
    time.sleep(0.3)
runs.append(len(runs))
time.sleep(0.01)
assert len(runs) <= {fails_after}, "run again"
print(runs)
"""


def test_a_timed_run_is_the_cells_second_run_after_its_profiled_one(tmp_path: Path) -> None:
    path = tmp_path / "warming.py"
    path.write_text(WARMING.format(fails_after=2), encoding="utf-8")
    payload = run_profile(str(path), cell=2, backend="host", timed=True, timeout=60)
    assert payload["error"] is None, payload["error"]
    # the profiled run paid the one-off cost; the timed one, in the same namespace, did not
    assert payload["wall_s"] >= 0.3
    assert payload["timed"]["error"] is None
    assert 0.01 <= payload["timed"]["wall_s"] < 0.2
    assert "[0, 1]" in payload["output"]
    # without `timed`, a profile runs the cell once, as ever
    once = run_profile(str(path), cell=2, backend="host", timeout=60)
    assert "timed" not in once and "[0, 1]" not in once["output"]


def test_a_cell_that_fails_when_run_again_says_so(tmp_path: Path) -> None:
    path = tmp_path / "once.py"
    path.write_text(WARMING.format(fails_after=1), encoding="utf-8")
    payload = run_profile(str(path), cell=2, backend="host", timed=True, timeout=60)
    assert payload["error"] is None
    assert payload["timed"] == {
        "wall_s": None,
        "error": {"type": "AssertionError", "message": "run again", "line": 11},
    }
    # the first run failing, there is no second
    path.write_text(WARMING.format(fails_after=0), encoding="utf-8")
    payload = run_profile(str(path), cell=2, backend="host", timed=True, timeout=60)
    assert payload["error"]["type"] == "AssertionError" and payload["timed"] is None


def measure_fix(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(HOST_TORCH)}
    return subprocess.run(
        [sys.executable, "-m", "gpulens", "measure-fix", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_cli_measures_a_fix_that_removes_the_waits(tmp_path: Path) -> None:
    text = TRAIN.format(costs="")
    (tmp_path / "train.py").write_text(text, encoding="utf-8")
    done = measure_fix(tmp_path, "train.py", "--line", str(SYNC_LINE), "--rule", "GPU001")
    assert done.returncode == 0, done.stderr
    first, before, after, note = done.stdout.splitlines()
    assert first.startswith(f"gpulens: “{FIX_TITLE}” makes cell 2 of train.py ")
    assert "faster, beyond the noise" in first
    assert before.startswith("  as it is ") and len(before.split("  ")) >= 5
    assert after.startswith("  fixed ")
    assert note.startswith("note: the host backend records no GPU work")
    # the file was never written
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == text


def test_the_cli_says_when_a_fix_is_slower_and_when_it_breaks_the_cell(tmp_path: Path) -> None:
    slower = TRAIN.format(costs="torch.SYNC_S, torch.DETACH_S = 0.0, 0.002\n")
    (tmp_path / "slower.py").write_text(slower, encoding="utf-8")
    args = ["--line", str(SYNC_LINE + 1), "--rule", "GPU001", "--runs", "3", "--json"]
    done = measure_fix(tmp_path, "slower.py", *args)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["verdict"] == "slower", result["message"]
    assert result["before"]["runs"] == result["after"]["runs"] == 3
    assert result["fix"] == {"title": FIX_TITLE}

    broken = TRAIN.format(costs="del torch.Tensor.double\n")
    (tmp_path / "broken.py").write_text(broken, encoding="utf-8")
    done = measure_fix(tmp_path, "broken.py", "--line", str(SYNC_LINE + 1), "--rule", "GPU001")
    assert done.returncode == 1
    assert done.stdout.startswith(f"gpulens: “{FIX_TITLE}” breaks cell 2 of broken.py: ")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["missing.py", "--line", "1", "--rule", "GPU001"], "missing.py"),
        (["train.py", "--line", "3", "--rule", "GPU001"], "train.py: line 3 has no GPU001 finding"),
        (["train.py", "--line", "0", "--rule", "GPU001"], "expected a line number of 1 or more"),
        (["train.py", "--rule", "GPU001"], "the following arguments are required: --line"),
        (
            ["train.py", "--line", "9", "--rule", "GPU001", "--runs", "2"],
            "expected a number of runs of 3 or more, got 2",
        ),
    ],
    ids=["no-file", "no-finding", "bad-line", "no-line", "two-runs"],
)
def test_the_cli_refuses_a_request_it_cannot_measure_in_one_line(
    tmp_path: Path, args: list[str], error: str
) -> None:
    (tmp_path / "train.py").write_text(TRAIN.format(costs=""), encoding="utf-8")
    done = measure_fix(tmp_path, *args)
    assert done.returncode == 2
    assert error in done.stderr and done.stderr.count("\n") == 1
    assert done.stdout == ""
