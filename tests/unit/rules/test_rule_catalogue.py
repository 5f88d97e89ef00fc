"""Every rule in the catalogue is explained and exercised: its doc (the hover, and `gpulens
check --explain`) shows bad and good code, and some file under cases/ expects it on a line
(`# expect: GPU012` or `# hint: GPU012`), so test_cases.py checks where it fires and that its
fixes keep the file valid. A new rule without them fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulens.analysis.rules import RULES

CASES_DIR = Path(__file__).parent / "cases"
ANNOTATION = re.compile(r"#\s*(?:expect|hint):\s*(GPU\d{3}(?:\s*,\s*GPU\d{3})*)")


def expected_codes() -> set[str]:
    codes: set[str] = set()
    for path in CASES_DIR.glob("**/*.py"):
        for match in ANNOTATION.finditer(path.read_text()):
            codes |= {code.strip() for code in match.group(1).split(",")}
    return codes


@pytest.mark.parametrize("code", sorted(RULES))
def test_each_rule_has_a_case_that_expects_it(code: str) -> None:
    assert code in expected_codes(), f"no file under {CASES_DIR} expects {code}"


@pytest.mark.parametrize("code", sorted(RULES))
def test_each_rule_explains_itself_with_bad_and_good_code(code: str) -> None:
    doc = RULES[code].doc
    assert "**Bad:**" in doc and "**Good:**" in doc
    assert RULES[code].summary and RULES[code].name


@pytest.mark.parametrize("code", sorted(RULES))
def test_each_rule_keeps_its_code_spans_on_one_line(code: str) -> None:
    """The hover's plain text (for clients that ask for it) drops the marks line by line: a
    `code span` wrapped across lines would show its backticks."""
    in_fence = False
    for line in RULES[code].doc.split("\n"):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if not in_fence:
            assert line.count("`") % 2 == 0, f"{code}: a code span wraps at {line!r}"
