"""Each file under cases/ marks the lines where findings must start: `# expect: GPU001`.

Every other line must have none. Fixes are applied one at a time and must keep the file
valid Python, make their finding go away, and be idempotent through fix-all.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from gpulens.analysis import analyze
from gpulens.analysis.edits import apply_edits, fix_all_edits

CASES = sorted((Path(__file__).parent / "cases").glob("*.py"))
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>GPU\d{3}(?:\s*,\s*GPU\d{3})*)")


def expected(text: str) -> Counter[tuple[int, str]]:
    found: Counter[tuple[int, str]] = Counter()
    for number, line in enumerate(text.splitlines()):
        match = EXPECT.search(line)
        if match:
            for code in match.group("codes").split(","):
                found[(number, code.strip())] += 1
    return found


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_findings_match_annotations(path: Path) -> None:
    text = path.read_text()
    actual = Counter((f.span.line, f.code) for f in analyze(text).findings)
    missing = expected(text) - actual
    extra = actual - expected(text)
    lines = text.splitlines()
    report = [f"missing {code} at {line + 1}: {lines[line].strip()}" for line, code in missing]
    report += [f"unexpected {code} at {line + 1}: {lines[line].strip()}" for line, code in extra]
    assert not report, "\n".join(report)


FIXABLE = [
    (path, index)
    for path in CASES
    for index, finding in enumerate(analyze(path.read_text()).findings)
    if finding.fixes
]


@pytest.mark.parametrize(("path", "index"), FIXABLE, ids=[f"{p.stem}-{i}" for p, i in FIXABLE])
def test_each_fix_parses_and_removes_its_finding(path: Path, index: int) -> None:
    text = path.read_text()
    finding = analyze(text).findings[index]
    for fix in finding.fixes:
        fixed = apply_edits(text, fix.edits)
        ast.parse(fixed)
        assert fixed != text
        before = sum(f.code == finding.code for f in analyze(text).findings)
        after = sum(f.code == finding.code for f in analyze(fixed).findings)
        assert after < before, f"{fix.title!r} left {finding.code} in place:\n{fixed}"


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_fix_all_is_idempotent(path: Path) -> None:
    text = path.read_text()
    for _ in range(10):
        edits = fix_all_edits(analyze(text).findings)
        if not edits:
            break
        fixed = apply_edits(text, edits)
        ast.parse(fixed)
        if fixed == text:
            break
        text = fixed
    assert (
        not fix_all_edits(analyze(text).findings)
        or apply_edits(text, fix_all_edits(analyze(text).findings)) == text
    )
