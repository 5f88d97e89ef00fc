"""Incremental analysis gives exactly what a fresh analysis gives, version after version."""

from __future__ import annotations

import ast
import string
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulens.analysis import DEFAULT_CONFIG, Config, analyze
from gpulens.analysis.incremental import BlockParser, DocumentAnalyzer, block_starts
from gpulens.analysis.source import split_lines

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    p.read_text()
    for p in [
        *sorted((ROOT / "tests/unit/rules/cases").glob("*.py")),
        ROOT / "examples/train_pitfalls.py",
        ROOT / "examples/train_fixed.py",
    ]
]


def test_blocks_keep_decorators_else_and_brackets_with_their_statement() -> None:
    text = (
        "import torch\n@decorator\n\n@other\ndef f():\n    pass\nif a:\n    pass\nelse:\n"
        "    pass\nx = f(\n    1,\n)\n# comment\ny = 2\n"
    )
    lines = split_lines(text)
    assert [lines[i].strip() for i in block_starts(lines)] == [
        "import torch",
        "@decorator",
        "if a:",
        "x = f(",
        "y = 2",
    ]


def test_an_unchanged_block_is_not_parsed_again() -> None:
    parser = BlockParser()
    first, _ = parser.parse("a = 1\ndef f():\n    return 2\n")
    second, _ = parser.parse("a = 10\n\ndef f():\n    return 2\n")
    assert first.body[1] is second.body[1]  # the same tree, moved one line down
    assert second.body[1].lineno == 3


def test_a_string_with_lines_at_column_zero_is_one_block() -> None:
    text = 'import torch\ns = """\nx = 1\n  y\n"""\nz = 2\n'
    tree, problem = BlockParser().parse(text)
    assert problem is None
    assert [type(n).__name__ for n in tree.body] == ["Import", "Assign", "Assign"]


def test_a_wrong_split_is_merged_back() -> None:
    text = "x = f(\n1,\n)\ny = 2\n"
    tree, problem = BlockParser().parse(text)
    assert problem is None and [n.lineno for n in tree.body] == [1, 4]


def test_a_syntax_error_costs_only_its_block() -> None:
    text = "import torch\ndef broken(:\n    pass\nx = torch.randn(3, device='cuda')\n"
    tree, problem = BlockParser().parse(text)
    assert problem is not None and problem.line == 1
    assert isinstance(tree.body[0], ast.Import)
    assert tree.body[-1].lineno == 4


def test_cached_function_moves_with_its_findings() -> None:
    source = (ROOT / "tests/unit/rules/cases/gpu001_training_loop.py").read_text()
    analyzer = DocumentAnalyzer()
    analyzer.analyze(source, DEFAULT_CONFIG)
    moved = "# a new first line\n\n" + source
    assert analyzer.analyze(moved, DEFAULT_CONFIG) == analyze(moved)
    assert analyzer.memo.results  # function results were kept and reused


def test_configuration_change_is_honoured() -> None:
    source = SOURCES[0]
    analyzer = DocumentAnalyzer()
    analyzer.analyze(source, DEFAULT_CONFIG)
    quiet = Config(ignore=frozenset({"GPU001"}))
    assert analyzer.analyze(source, quiet) == analyze(source, quiet)


edits = st.lists(
    st.tuples(
        st.floats(0, 1),
        st.integers(0, 30),
        st.sampled_from(
            [
                "",
                "\n",
                "    ",
                ".item()",
                "x = 1\n",
                "def g(x):\n",
                "import cupy as cp\n",
                ":",
                "(",
                '"""',
            ]
        ),
        st.text(alphabet=string.ascii_letters + " \n()._=:", max_size=8),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.sampled_from(SOURCES), steps=edits)
def test_every_version_matches_a_fresh_analysis(
    source: str, steps: list[tuple[float, int, str, str]]
) -> None:
    analyzer = DocumentAnalyzer()
    text = source
    assert analyzer.analyze(text, DEFAULT_CONFIG) == analyze(text)
    for where, length, snippet, noise in steps:
        at = int(len(text) * where)
        text = text[:at] + snippet + noise + text[at + length :]
        assert analyzer.analyze(text, DEFAULT_CONFIG) == analyze(text), text
