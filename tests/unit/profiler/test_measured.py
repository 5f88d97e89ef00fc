"""A profile merged into the findings (`profiler.measured`), on captures recorded on an H200,
and the analysis's fix for a sync the profile found (`analysis.assumed`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpulens.analysis import DEFAULT_CONFIG, Finding, Severity, Span, analyze
from gpulens.analysis.assumed import findings_if_on_gpu
from gpulens.analysis.edits import apply_fixes
from gpulens.analysis.source import split_lines
from gpulens.profiler.measured import (
    ORIGIN_ANALYSIS,
    ORIGIN_PROFILE,
    Merged,
    merge_measured,
    place_lines,
    place_profile,
)
from gpulens.profiler.recorded import replay

from .conftest import FIXTURES, load_fixture

REPO = Path(__file__).resolve().parents[3]
DEMO = (REPO / "examples" / "profile_demo.py").read_text(encoding="utf-8")


def demo_profile() -> dict[str, Any]:
    """Cell 3 of examples/profile_demo.py on an H200: 9.1 s, nearly all of it importing torch
    and starting CUDA."""
    return json.loads((FIXTURES / "demo_cell3_h200_payload.json").read_text())


def recorded(name: str) -> tuple[str, dict[str, Any]]:
    captured = load_fixture(name)
    return captured["source"], replay(captured, name)


def merged(text: str, payload: dict[str, Any], findings: list[Finding] | None = None, **kw: Any):
    placed = place_profile(payload, split_lines(text))
    config = kw.pop("config", DEFAULT_CONFIG)
    found = analyze(text, config).findings if findings is None else findings
    return merge_measured(found, placed, text, config, **kw)


def line_of(text: str, code: str) -> int:
    return [line.rstrip("\n") for line in split_lines(text)].index(code)


# -- placing ------------------------------------------------------------------------------------


def test_a_profile_lands_on_its_lines_by_their_text() -> None:
    payload = demo_profile()
    lines = split_lines(DEMO)
    placed = place_lines(payload, lines)
    assert {n + 1: figures["line"] for n, figures in placed.items()} == {
        line["line"]: line["line"] for line in payload["lines"]
    }
    # lines added above move it; an edited line loses its figures, its neighbours keep theirs
    sync = line_of(DEMO, "    total += loss.item()")
    edited = ["# one\n", "# two\n", *lines]
    edited[sync + 2] = "    total += loss.item()  # edited\n"
    moved = place_lines(payload, edited)
    assert sync + 2 not in moved
    assert moved[sync + 1]["line"] == sync  # opt.step(), one line above the sync
    assert len(moved) == len(placed) - 1


def test_a_profile_without_its_source_is_taken_at_its_line_numbers() -> None:
    payload = demo_profile()
    del payload["code"]
    placed = place_lines(payload, split_lines(DEMO))
    assert sorted(placed) == sorted(line["line"] - 1 for line in payload["lines"])


def test_a_host_profile_measures_no_gpu_work_so_it_is_not_merged() -> None:
    payload = demo_profile()
    payload["backend"] = "host"
    assert place_profile(payload, split_lines(DEMO)) == {}
    assert place_lines(payload, split_lines(DEMO))  # the hints still draw its lines


# -- merging ------------------------------------------------------------------------------------


def test_a_negligible_measured_cost_turns_the_warning_into_a_hint_that_says_so() -> None:
    static = next(f for f in analyze(DEMO).findings if f.code == "GPU001")
    assert static.severity == "warning"
    found = {(m.finding.code, m.origin): m for m in merged(DEMO, demo_profile())}
    hint = found["GPU001", ORIGIN_ANALYSIS]
    assert hint.measured and hint.finding.severity == "hint"
    assert hint.finding.span == static.span and hint.finding.fixes == static.fixes
    assert hint.finding.message == (
        "Measured negligible in the last profile: 200 syncs, 1.5 ms stalled; the line ran 200 "
        "times and took 9.1 ms, under 0.1 % of the cell's 9.1 s. " + static.message
    )


def test_a_cost_that_matters_is_quoted_and_the_warning_stays() -> None:
    source, payload = recorded("small_copies")
    (static,) = analyze(source).findings
    (found,) = merged(source, payload)
    assert found.origin == ORIGIN_ANALYSIS and found.finding.severity == "warning"
    assert found.finding.message == (
        static.message + " Measured in the last profile: 100 copies to the GPU (410 KB, 92 µs), "
        "100 from pageable memory; the line ran once and took 16 ms, 99 % of the cell's 16 ms."
    )


def test_a_line_that_ran_without_the_work_its_finding_warns_of_is_a_hint() -> None:
    # the demo's profile as it would read had `loss` been a host value: no sync, no copy
    payload = demo_profile()
    sync = line_of(DEMO, "    total += loss.item()") + 1
    line = next(line for line in payload["lines"] if line["line"] == sync)
    line["syncs"] = {"count": 0, "stall_s": 0.0}
    line["transfers"]["dtoh"].update(count=0, bytes=0, s=0.0, pinned=0)
    (found,) = [m for m in merged(DEMO, payload) if m.finding.code == "GPU001"]
    assert found.finding.severity == "hint"
    assert found.finding.message.startswith(
        "The last profile ran this line 200 times and measured no wait for the GPU on it (the "
        "line ran 200 times and took 9.1 ms, under 0.1 % of the cell's 9.1 s): the value may "
        "not be on the GPU where it ran."
    )


def test_the_profile_finds_the_sync_the_analysis_missed_with_its_fix() -> None:
    source, payload = recorded("item_sync_cupti")
    text = "import torch\n" + source
    assert analyze(text).findings == []
    (found,) = merged(text, payload)
    assert found.origin == ORIGIN_PROFILE and found.finding.code == "GPU001"
    assert found.finding.severity == "warning"
    line = line_of(text, "    total += (x * step).sum().item()  # item")
    span = found.finding.span
    assert split_lines(text)[line][span.column : span.end_column] == "(x * step).sum().item()"
    (fix,) = found.finding.fixes
    assert apply_fixes(text, [fix]).text == (
        text.replace("(x * step).sum().item()", "(x * step).sum().detach().double()")
        + "total = float(total)  # one sync, after the loop\n"
    )
    # a script that imports no GPU framework gets the finding, without a fix to guess
    (bare,) = merged(source, payload)
    assert bare.origin == ORIGIN_PROFILE and bare.finding.fixes == ()


def test_the_profile_finds_pageable_copies_and_small_copies_in_a_loop() -> None:
    source, payload = recorded("big_copies")
    found = merged(source, payload, findings=[])
    assert [(m.finding.code, m.finding.span.line, m.origin) for m in found] == [
        ("GPU005", 0, ORIGIN_PROFILE),
        ("GPU005", 2, ORIGIN_PROFILE),
    ]
    assert found[0].finding.message.startswith(
        "Measured in the last profile: 1 pageable copy of 400 MB ran at 3.0 GB/s: copy from "
        "pinned memory"
    )
    source, payload = recorded("small_copies")
    (small,) = merged(source, payload, findings=[])
    assert small.finding.code == "GPU002" and small.finding.severity == "warning"
    assert small.finding.message == (
        "Measured in the last profile: 100 copies to the GPU of 4.1 KB each on this line "
        "(92 µs), at least one per run: each pays a copy's fixed cost. Stack the pieces on the "
        "host and copy once, or make them on the GPU; the line ran once and took 16 ms, 99 % "
        "of the cell's 16 ms."
    )
    span = small.finding.span
    assert split_lines(source)[0][span.column : span.end_column] == (
        'out = [h.to("cuda") for h in host]  # copies'
    )


def test_the_rule_selection_and_suppressions_apply_to_the_profile_s_findings() -> None:
    source, payload = recorded("train_step")
    text = "import torch\n" + source
    assert [m.finding.code for m in merged(text, payload)] == ["GPU001"]
    quiet = text.replace("    loss.item()", "    loss.item()  # gpulens: ignore[GPU001]")
    assert merged(quiet, payload) == []
    ignored = DEFAULT_CONFIG.merged(ignore=frozenset({"GPU001"}))
    assert merged(text, payload, config=ignored) == []
    hint = DEFAULT_CONFIG.merged(severity={"GPU001": "info"})
    assert [m.finding.severity for m in merged(text, payload, config=hint)] == ["info"]


def test_without_measurements_the_findings_are_the_analysis_s() -> None:
    findings = analyze(DEMO).findings
    assert merge_measured(findings, {}, DEMO, DEFAULT_CONFIG) == [
        Merged(f, ORIGIN_ANALYSIS, False) for f in findings
    ]


def test_a_rule_whose_cost_lands_elsewhere_is_left_as_it_is() -> None:
    # a clock read (GPU004) on a profiled line: the line's figures say nothing of what the
    # rule warns of (how the time is measured), so it is left as the analysis made it
    step = line_of(DEMO, "    opt.step()")
    clock = Finding("GPU004", Severity.WARNING, "a clock read", Span(step, 4, step, 14))
    found = merged(DEMO, demo_profile(), findings=[clock])
    assert [m for m in found if m.origin == ORIGIN_ANALYSIS] == [
        Merged(clock, ORIGIN_ANALYSIS, False)
    ]


# -- the analysis's fix, once the value is known on the GPU --------------------------------------


@pytest.mark.parametrize(
    ("header", "line", "expected"),
    [
        (
            "import torch\n",
            "    total += (x * step).sum().item()",
            "(x * step).sum().detach().double()",
        ),
        ("import cupy as cp\n", "    total += float(x.sum())", 'x.sum().astype("float64")'),
        ("import torch\n", "    y = 1; total += x.item()  # é", "x.detach().double()"),
    ],
    ids=["torch", "cupy", "second-statement"],
)
def test_the_fix_the_analysis_would_offer_on_a_gpu_value(
    header: str, line: str, expected: str
) -> None:
    text = f"{header}total = 0.0\nfor step in range(10):\n{line}\n"
    (found,) = findings_if_on_gpu(text, 3, ("GPU001",), DEFAULT_CONFIG)
    assert found.code == "GPU001" and found.severity == "warning"
    (fix,) = found.fixes
    fixed = apply_fixes(text, [fix]).text
    assert expected in fixed.splitlines()[3]
    assert (
        fixed.splitlines()[3].startswith("    ")
        and "cuda()" not in fixed
        and "asarray" not in fixed
    )


@pytest.mark.parametrize(
    "text",
    [
        "total = 0.0\nfor s in range(3):\n    total += x.item()\n",  # no framework imported
        "import torch\nimport cupy\nfor s in range(3):\n    total += x.item()\n",  # both
        "import torch\nfor s in range(3):\n    if x.item() > 0:\n        break\n",  # compound
    ],
    ids=["no-framework", "two-frameworks", "compound-statement"],
)
def test_no_fix_is_guessed_where_the_framework_or_the_statement_is_unclear(text: str) -> None:
    line = next(i for i, row in enumerate(text.splitlines()) if ".item()" in row)
    assert findings_if_on_gpu(text, line, ("GPU001",), DEFAULT_CONFIG) == []


def test_a_notebook_s_imports_may_come_from_another_cell() -> None:
    cell = "total = 0.0\nfor s in range(3):\n    total += x.item()\n"
    assert findings_if_on_gpu(cell, 2, ("GPU001",), DEFAULT_CONFIG) == []
    (found,) = findings_if_on_gpu(cell, 2, ("GPU001",), DEFAULT_CONFIG, program="import torch\n")
    assert found.fixes


def test_findings_handed_in_any_order_come_out_in_the_order_of_the_text() -> None:
    found = analyze(DEMO).findings
    forward = merged(DEMO, demo_profile(), found)
    backward = merged(DEMO, demo_profile(), list(reversed(found)))
    assert [(m.finding, m.origin) for m in backward] == [(m.finding, m.origin) for m in forward]
    places = [(m.finding.span.line, m.finding.span.column, m.finding.code) for m in forward]
    assert places == sorted(places) and any(m.from_profile for m in forward)
