"""The analyzer on broken, huge, deep and hostile input: findings for what parses, never a raise."""

from __future__ import annotations

import string
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulens.analysis import analyze
from gpulens.analysis.source import parse_tolerant

CASES = Path(__file__).parent / "rules" / "cases"
LOOP = """import torch
x = torch.randn(10, device="cuda")
for i in range(10):
    print(x.sum().item())
"""


def codes(text: str) -> list[tuple[int, str]]:
    return [(f.span.line, f.code) for f in analyze(text).findings]


def test_half_typed_statement_keeps_the_rest() -> None:
    text = LOOP + "y = torch.zeros(3).to(\n"
    analysis = analyze(text)
    assert analysis.syntax_problem is not None
    assert (3, "GPU001") in [(f.span.line, f.code) for f in analysis.findings]


def test_broken_block_header_mid_file() -> None:
    text = "import torch\nx = torch.randn(3, device='cuda')\nfor i in range(3)\n    pass\n" + LOOP
    assert (7, "GPU001") in codes(text)


def test_error_inside_the_loop_keeps_its_other_lines() -> None:
    text = LOOP.replace("    print(x.sum().item())", "    y = = 2\n    print(x.sum().item())")
    assert (4, "GPU001") in codes(text)


def test_unclosed_bracket_at_the_end() -> None:
    assert (3, "GPU001") in codes(LOOP + "foo(1, [2,\n")


def test_five_megabyte_file() -> None:
    block = (CASES / "gpu001_training_loop.py").read_text()
    text = block * (5_000_000 // len(block) + 1)
    assert len(text) >= 5_000_000
    findings = analyze(text).findings
    assert sum(f.code == "GPU001" for f in findings) > 1000


def test_deeply_nested_expression() -> None:
    text = LOOP + "z = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    analyze(text)  # too deep for the parser: reported, no raise


def test_long_operator_chain() -> None:
    text = LOOP + "z = " + " + ".join(["x"] * 20000) + "\n"
    analysis = analyze(text)
    assert (3, "GPU001") in [(f.span.line, f.code) for f in analysis.findings]


def test_deeply_nested_blocks() -> None:
    text = (
        "".join("    " * depth + f"if a{depth}:\n" for depth in range(150))
        + "    " * 150
        + "pass\n"
    )
    analyze(text)


def test_surrogates_and_nul_bytes() -> None:
    analyze("x = '\udcff'\n\x00\n")
    _tree, problem = parse_tolerant("\x00")
    assert problem is not None


def test_non_ascii_columns_are_code_points() -> None:
    text = LOOP.replace("print(x.sum().item())", "é = 'ü'; print(x.sum().item())")
    finding = next(f for f in analyze(text).findings if f.code == "GPU001")
    line = text.splitlines()[finding.span.line]
    assert line[finding.span.column : finding.span.end_column] == "x.sum().item()"


EXAMPLES = [p.read_text() for p in sorted(CASES.glob("*.py"))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    example=st.sampled_from(EXAMPLES),
    cut=st.floats(0, 1),
    length=st.integers(0, 40),
    insert=st.text(alphabet=string.printable + "éü\u2028", max_size=20),
)
def test_random_edits_never_raise(example: str, cut: float, length: int, insert: str) -> None:
    at = int(len(example) * cut)
    text = example[:at] + insert + example[at + length :]
    analysis = analyze(text)
    lines = text.splitlines() or [""]
    for finding in analysis.findings:
        assert 0 <= finding.span.line <= finding.span.end_line
        assert finding.span.line < len(lines) + 1


def test_form_feed_and_unicode_separators_do_not_shift_positions() -> None:
    text = LOOP.replace("for i", "\x0c\nx2 = '\u2028'\nfor i")
    finding = next(f for f in analyze(text).findings if f.code == "GPU001")
    line = text.split("\n")[finding.span.line]
    assert line[finding.span.column : finding.span.end_column] == "x.sum().item()"
