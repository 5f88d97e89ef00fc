"""The text editors draw beside a profiled line, its hover, and the message of a stopped run.

The GPU cases replay captures recorded on an H200 (tests/fixtures/profiler) through the real
attribution and payload builder, so the drawn figures are those a user would see.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.display import line_hover, line_label, run_message
from gpulens.profiler.report import build_payload, failed_payload
from gpulens.profiler.units import short_bytes, short_count, short_seconds

from .conftest import load_fixture


def recorded(name: str) -> dict[int, dict[str, Any]]:
    """The payload lines of a recorded capture, keyed by line, found by their `# marker`."""
    fixture = load_fixture(name)
    payload = build_payload(
        attribute_records(fixture["events"], fixture["records"]),
        source={"path": f"{name}.py", "first_line": 1},
        backend=fixture["backend"],
    )
    return {line["line"]: line for line in payload["lines"]}


def marked(name: str, marker: str) -> dict[str, Any]:
    source = load_fixture(name)["source"].splitlines()
    number = next(i for i, text in enumerate(source, 1) if marker in text)
    return recorded(name)[number]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 ms"),
        (2.2e-6, "2.2 µs"),
        (0.0087, "8.7 ms"),
        (0.062, "62 ms"),
        (0.9996, "1.0 s"),  # not "1000 ms"
        (75.0, "75 s"),
    ],
)
def test_seconds_keep_two_figures(seconds: float, text: str) -> None:
    assert short_seconds(seconds) == text


@pytest.mark.parametrize(
    ("count", "text"),
    [(1, "1"), (999, "999"), (1000, "1k"), (1400, "1.4k"), (12_345, "12k"), (999_600, "1M")],
)
def test_counts_are_short(count: int, text: str) -> None:
    assert short_count(count) == text


def test_bytes_use_decimal_units() -> None:
    assert [short_bytes(n) for n in (4, 4096, 400e6, 1.2e9)] == [
        "4 B",
        "4.1 KB",
        "400 MB",
        "1.2 GB",
    ]


def test_the_issue_example_line() -> None:
    line = {
        "line": 9,
        "hits": 200,
        "host_s": 0.051,
        "kernels": {"count": 1400, "gpu_s": 0.0087, "top": []},
        "transfers": {
            "htod": {"count": 1, "bytes": 400_000_000, "s": 0.062, "pageable": 1},
            "dtoh": {"count": 0, "bytes": 0, "s": 0.0, "pageable": 0},
        },
        "memsets": {"count": 0, "bytes": 0, "s": 0},
        "syncs": {"count": 200, "stall_s": 0.0022},
    }
    assert line_label(line) == "1.4k kernels · 8.7 ms GPU · ↑400 MB 62 ms · ⏸200 2.2 ms"


def test_a_line_without_gpu_work_shows_host_figures() -> None:
    line = {"line": 4, "hits": 200, "host_s": 0.051, "kernels": {"count": 0}, "transfers": {}}
    assert line_label(line) == "200 hits · 51 ms host"
    assert line_label({**line, "hits": 1}) == "1 hit · 51 ms host"


def test_recorded_item_loop_draws_kernels_copies_and_syncs() -> None:
    # 50 steps of `total += (x * step).sum().item()`: 2 kernels, one 4-byte D2H and one sync each
    line = marked("item_sync_cupti", "# item")
    text = line_label(line)
    parts = text.split(" · ")
    assert parts[0] == "100 kernels"
    assert parts[1].endswith(" GPU") and parts[1] != "0 ms GPU"
    assert parts[2].startswith("↓200 B ")
    assert parts[3].startswith("⏸50 ")
    assert len(parts) == 4


def test_recorded_big_copies_draw_direction_and_size() -> None:
    assert line_label(marked("big_copies", "# pageable")).startswith("↑400 MB ")
    assert line_label(marked("big_copies", "# pinned")).startswith("↑40 MB ")
    assert line_label(marked("big_copies", "# d2h")).startswith("↓400 MB ")


def test_recorded_train_step_hover_lists_top_kernels_and_hints() -> None:
    line = marked("train_step", "# backward")
    details = line_hover(line, "cupti")
    assert details.startswith(f"**gpulens profile** · line {line['line']} · cupti backend")
    assert f"- {line['kernels']['count']} kernels · " in details
    assert "| top kernels | launches | GPU time |" in details
    # every top kernel has its row, its name in a code span that cannot split the table
    rows = [row for row in details.splitlines() if row.startswith("| `")]
    assert len(rows) == len(line["kernels"]["top"]) > 0
    assert all(row.count("|") == 4 for row in rows)
    assert "💡" in details and "launch overhead dominates" in details


def test_recorded_item_hover_has_copies_syncs_and_the_gpu001_hint() -> None:
    details = line_hover(marked("item_sync_cupti", "# item"))
    assert "- ↓ device→host: 50 copies · 200 B · " in details
    assert "- ⏸ the host waited for the GPU 50 times · " in details
    assert "(GPU001)" in details


def test_pageable_copy_hover_says_so() -> None:
    details = line_hover(marked("big_copies", "# pageable"))
    assert "1 from pageable memory" in details and "GB/s" in details


def test_messages_say_what_happened_and_what_to_do() -> None:
    source = {"path": "/w/train.py", "cell": 2, "first_line": 4}
    ok = {"source": source, "lines": [{"line": 5}], "error": None}
    assert run_message(ok) is None
    raised = {
        **ok,
        "error": {"type": "ZeroDivisionError", "message": "division by zero", "line": 7},
    }
    assert run_message(raised) == (
        "gpulens: cell 2 of train.py raised ZeroDivisionError at line 7: division by zero. "
        "The costs of the lines that ran are shown. Fix it and profile again."
    )
    timeout = {**ok, "error": {"type": "Timeout", "message": "ran past the 2 s timeout"}}
    assert "stopped: ran past the 2 s timeout." in str(run_message(timeout))
    missing = failed_payload(
        source, "could not start the interpreter '/no/python'", "InterpreterError"
    )
    assert run_message(missing) == (
        "gpulens: cell 2 of train.py was not profiled: could not start the interpreter "
        "'/no/python'."
    )
    empty = {"source": {**source, "cell": 0}, "lines": [], "error": None}
    assert "the code before the first cell of train.py ran no code" in str(run_message(empty))
