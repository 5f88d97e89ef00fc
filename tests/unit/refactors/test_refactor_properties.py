"""For any line-range selection of the examples, a refactor offers nothing or a sound edit."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from refactor_checks import example, follow

from gpulens.analysis.edits import apply_edits
from gpulens.analysis.model import Edit, Span
from gpulens.analysis.refactors import refactors_for
from gpulens.analysis.refactors.move_to_device import move_to_device
from gpulens.analysis.refactors.numpy_to_cupy import port_numpy_to_cupy
from gpulens.analysis.refactors.sync_timer import insert_cupy_benchmark, insert_sync_timer

EXAMPLES = ["train", "bench", "pipeline"]
REFACTORS: dict[str, Callable[[str, Span | None], list[Edit]]] = {
    "move cuda": lambda t, s: move_to_device(t, s, "cuda"),
    "move cuda:1": lambda t, s: move_to_device(t, s, "cuda:1"),
    "move cpu": lambda t, s: move_to_device(t, s, "cpu"),
    "timer": insert_sync_timer,
    "timer perf_counter": lambda t, s: insert_sync_timer(t, s, clock="perf_counter"),
    "timer no warm-up": lambda t, s: insert_sync_timer(t, s, warmup=False),
    "cupy benchmark": insert_cupy_benchmark,
    "numpy to cupy": port_numpy_to_cupy,
}


@st.composite
def selections(draw: st.DrawFn, text: str) -> Span:
    lines = text.split("\n")
    first = draw(st.integers(0, len(lines) - 1))
    last = draw(st.integers(first, len(lines) - 1))
    column = draw(st.integers(0, len(lines[first])))
    end_column = draw(st.integers(0, len(lines[last])))
    if first == last and end_column < column:
        column, end_column = end_column, column
    return Span(first, column, last, end_column)


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("refactor", REFACTORS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_offers_nothing_or_a_sound_edit(name: str, refactor: str, data: st.DataObject) -> None:
    text = example(name)
    selection = data.draw(selections(text))
    apply = REFACTORS[refactor]
    edits = apply(text, selection)
    if not edits:
        return
    output = apply_edits(text, edits)
    ast.parse(output)
    assert apply(output, follow(selection, edits)) == [], output


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="import torchnumpy as\n\t ()=.:#'\"[]0123,", max_size=120))
def test_any_text_never_crashes(text: str) -> None:
    selection = Span(0, 0, text.count("\n"), 0)
    for apply in REFACTORS.values():
        edits = apply(text, selection)
        if edits:
            ast.parse(apply_edits(text, edits))


def test_menu_offers_each_refactor_that_applies() -> None:
    text = "import numpy as np\nimport torch\nx = torch.ones(2)\ny = np.zeros(2)\n"
    titles = [fix.title for fix in refactors_for(text, Span(2, 0, 4, 0), "cuda:1")]
    assert titles == [
        "Move to device (cuda:1)",
        "Insert synchronize-aware timer",
        "Port NumPy to CuPy",
    ]
    assert refactors_for("x = (\n", Span(0, 0, 1, 0)) == []


def test_large_file_is_refactored_whole() -> None:
    # speed is measured by benchmarks/lsp_latency.py (codeAction p95), not asserted here
    text = example("train")
    body = text.split("\n", 5)[5]
    large = text + "\n".join(body.replace("model", f"model{i}") for i in range(60))
    titles = [fix.title for fix in refactors_for(large, Span(0, 0, large.count("\n"), 0))]
    assert any(title.startswith("Move to device") for title in titles)
