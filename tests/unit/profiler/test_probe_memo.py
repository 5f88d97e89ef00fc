"""`ProbeMemo`: the probes of a profiled document's versions answer as a `GpuProbe` of each
whole text does, reading the document's analysis instead of parsing the text again, and
probe again only the lines whose block or context changed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpulens.analysis import DEFAULT_CONFIG
from gpulens.analysis.assumed import GpuProbe, counts
from gpulens.analysis.config import Config
from gpulens.analysis.incremental import DocumentAnalyzer
from gpulens.analysis.source import split_lines
from gpulens.profiler.probe_memo import ProbeMemo, parsed_text

TEXT = """\
import torch

device = torch.device("cuda")


def train(model, loader):
    total = 0.0
    for inputs in loader:
        total += model(inputs).sum().item()
    return total


def evaluate(model, data):
    scores = model(data)
    return scores.max()


# %%
total = 0.0
for step in range(steps):
    total += (x * step).sum().item()  # item
    print(float(x.mean()), step)
"""
CODES = ("GPU001",)


def replaced(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)

    return edit


# each edit applies to the text before it
EDITS: list[tuple[str, Callable[[str], str]]] = [
    ("a keystroke into a function", replaced("scores = model", "scores2 = model")),
    ("one that breaks it", replaced("scores2 = model(data)", "scores2 = model(data")),
    ("mended again", replaced("scores2 = model(data", "scores = model(data)")),
    ("a line added above the cell", replaced("def evaluate", "# evaluation\ndef evaluate")),
    ("an edit in the cell", replaced("    print(float", "    y = 1\n    print(float")),
    ("a module statement added", replaced("device = ", "x = torch.ones(3)\ndevice = ")),
    ("cupy imported in a function", replaced("    scores", "    import cupy\n    scores")),
    ("the cupy import gone", replaced("    import cupy\n", "")),
    ("cupy alone", replaced("import torch\n", "import cupy as cp\n")),
    ("torch again", replaced("import cupy as cp\n", "import torch\n")),
    ("the cell's loop changed", replaced("range(steps)", "range(steps * 2)")),
    ("a line removed at the top", replaced("import torch\n\n", "import torch\n")),
]


def probed_lines(text: str) -> list[int]:
    return [n for n, line in enumerate(split_lines(text)) if "item()" in line or "float(" in line]


def test_every_version_is_probed_as_a_probe_of_its_whole_text_would() -> None:
    analyzer, memo, text = DocumentAnalyzer(), ProbeMemo(), TEXT
    answered = 0
    for name, edit in [("the first text", lambda t: t), *EDITS]:
        text = edit(text)
        analyzer.analyze(text, DEFAULT_CONFIG)
        parsed = parsed_text(text, analyzer)
        assert parsed is not None, name
        assert parsed.lines == split_lines(text), name
        probe = memo.probe(parsed, DEFAULT_CONFIG)
        whole = GpuProbe(text)
        for line in probed_lines(text):
            expected = whole.findings(line, CODES, DEFAULT_CONFIG)
            assert probe.findings(line, CODES, DEFAULT_CONFIG) == expected, (name, line)
            answered += bool(expected)
    assert answered  # some versions have the fix to offer


def test_a_keystroke_into_another_function_probes_nothing_again() -> None:
    analyzer, memo = DocumentAnalyzer(), ProbeMemo()
    lines = probed_lines(TEXT)

    def probe_all(text: str) -> list[object]:
        analyzer.analyze(text, DEFAULT_CONFIG)
        parsed = parsed_text(text, analyzer)
        assert parsed is not None and parsed.parses
        probe = memo.probe(parsed, DEFAULT_CONFIG)
        return [probe.findings(line, CODES, DEFAULT_CONFIG) for line in lines]

    first = probe_all(TEXT)
    before = counts.copy()
    assert probe_all(TEXT.replace("scores = model", "scores2 = model")) == first
    assert counts == before  # nothing parsed, nothing analysed
    # an edit of the cell probes its lines again, not the function's
    edited = TEXT.replace("(x * step)", "(x * (step + 1))")
    probe_all(edited)
    assert counts["lines_analysed"] - before["lines_analysed"] == len(lines) - 1
    assert counts["texts_parsed"] == before["texts_parsed"]


def test_another_configuration_is_probed_again() -> None:
    analyzer, memo = DocumentAnalyzer(), ProbeMemo()
    line = probed_lines(TEXT)[1]
    quiet = Config(ignore=frozenset({"GPU001"}))
    for config in (DEFAULT_CONFIG, quiet, DEFAULT_CONFIG):
        analyzer.analyze(TEXT, config)
        parsed = parsed_text(TEXT, analyzer)
        assert parsed is not None
        found = memo.probe(parsed, config).findings(line, CODES, config)
        assert found == GpuProbe(TEXT).findings(line, CODES, config)
        assert bool(found) == (config is DEFAULT_CONFIG)


def test_a_text_the_analysis_did_not_read_last_is_not_answered_from_it() -> None:
    analyzer = DocumentAnalyzer()
    analyzer.analyze(TEXT, DEFAULT_CONFIG)
    assert parsed_text(TEXT + "x = 1\n", analyzer) is None
    broken = TEXT.replace("scores = model(data)", "scores = model(data")
    analyzer.analyze(broken, DEFAULT_CONFIG)
    parsed = parsed_text(broken, analyzer)
    assert parsed is not None and not parsed.parses
    line = probed_lines(broken)[1]
    assert ProbeMemo().probe(parsed, DEFAULT_CONFIG).findings(line, CODES, DEFAULT_CONFIG) == []
    assert GpuProbe(broken).findings(line, CODES, DEFAULT_CONFIG) == []


@pytest.mark.parametrize("line", [0, 2, 8])
def test_lines_outside_the_cell_are_probed_as_the_whole_text_would(line: int) -> None:
    analyzer = DocumentAnalyzer()
    analyzer.analyze(TEXT, DEFAULT_CONFIG)
    parsed = parsed_text(TEXT, analyzer)
    assert parsed is not None
    found = ProbeMemo().probe(parsed, DEFAULT_CONFIG).findings(line, CODES, DEFAULT_CONFIG)
    assert found == GpuProbe(TEXT).findings(line, CODES, DEFAULT_CONFIG)
