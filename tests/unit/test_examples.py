"""The examples the demo shows: each pitfall file finds what it is there to show, and its
fixed twin finds nothing (the guard against false alarms on idiomatic code)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from gpulens.analysis import analyze, analyze_cells

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "train_pitfalls.py",
            {"GPU001": 1, "GPU003": 1, "GPU004": 1, "GPU005": 2, "GPU006": 2, "GPU007": 1},
        ),
        ("cupy_pitfalls.py", {"GPU004": 1, "GPU008": 1, "GPU009": 1}),
    ],
)
def test_pitfall_example_shows_its_pitfalls(name: str, expected: dict[str, int]) -> None:
    findings = analyze((EXAMPLES / name).read_text()).findings
    assert Counter(f.code for f in findings) == expected


@pytest.mark.parametrize("name", ["train_fixed.py", "cupy_fixed.py"])
def test_fixed_example_is_clean(name: str) -> None:
    assert analyze((EXAMPLES / name).read_text()).findings == []


def test_notebook_example_cells() -> None:
    notebook = json.loads((EXAMPLES / "pitfalls.ipynb").read_text())
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    codes = [sorted(f.code for f in result.findings) for result in analyze_cells(cells)]
    assert codes[0] == []
    assert "GPU001" in codes[2] and "GPU004" in codes[3]
