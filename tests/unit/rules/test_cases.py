"""Each file under cases/ marks the lines where findings must start: `# expect: GPU001`
(a warning or info), `# hint: GPU001` (a finding the analysis is not sure is worth fixing, at
hint severity), and lines that must carry none of some codes: `# must not: GPU001, GPU006`
(a false alarm the analysis once raised there), and findings whose fixes change what the
program does, so that "Fix all" must leave them alone: `# quick-fix only: GPU003`.

Every other line must have none. Fixes are applied one at a time and must keep the file
valid Python, make their finding go away, and be idempotent through fix-all.

A folder under cases/projects/ is one package: its files are checked together, as
`gpulens check` checks the files it is given, each knowing what the others pass its
functions (`analysis.project`); each file's annotations are matched as above.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from gpulens.analysis import DEFAULT_CONFIG, Analysis, Severity, analyze
from gpulens.analysis.edits import apply_edits, fix_all_edits
from gpulens.analysis.project import ProjectView, module_name, settle

CASES_DIR = Path(__file__).parent / "cases"
PROJECTS_DIR = CASES_DIR / "projects"
PROJECTS = sorted(p for p in PROJECTS_DIR.iterdir() if p.is_dir())
CASES = sorted(p for p in CASES_DIR.glob("**/*.py") if PROJECTS_DIR not in p.parents)
CODES = r"(?P<codes>GPU\d{3}(?:\s*,\s*GPU\d{3})*)"
EXPECT = re.compile(r"#\s*expect:\s*" + CODES)
HINT = re.compile(r"#\s*hint:\s*" + CODES)
MUST_NOT = re.compile(r"#\s*must not:\s*" + CODES)
QUICK_FIX_ONLY = re.compile(r"#\s*quick-fix only:\s*" + CODES)


def expected(text: str) -> Counter[tuple[int, str, bool]]:
    """(line, code, whether a hint) of each finding the annotations ask for."""
    found: Counter[tuple[int, str, bool]] = Counter()
    for number, line in enumerate(text.splitlines()):
        for pattern, hint in ((EXPECT, False), (HINT, True)):
            match = pattern.search(line)
            if match:
                for code in match.group("codes").split(","):
                    found[(number, code.strip(), hint)] += 1
    return found


def forbidden(text: str) -> set[tuple[int, str]]:
    """(line, code) pairs a `# must not:` comment rules out."""
    found: set[tuple[int, str]] = set()
    for number, line in enumerate(text.splitlines()):
        match = MUST_NOT.search(line)
        if match:
            found |= {(number, code.strip()) for code in match.group("codes").split(",")}
    return found


def test_annotations_do_not_contradict_each_other() -> None:
    for path in CASES:
        text = path.read_text()
        both = {(line, code) for line, code, _ in expected(text)} & forbidden(text)
        assert not both, f"{path.name}: a line both expects and forbids {sorted(both)}"


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_findings_match_annotations(path: Path) -> None:
    text = path.read_text()
    # checked as the project would check it: a file under cases/tests/ is a test file
    config = DEFAULT_CONFIG.for_file(path.relative_to(CASES_DIR))
    assert_annotations_match(path, text, analyze(text, config))


def project_analyses(folder: Path) -> dict[Path, Analysis]:
    """Each file of a case project, analysed with what the others pass its functions."""
    files = sorted(folder.glob("**/*.py"))
    texts = {str(p): p.read_text() for p in files}

    def walk(batch: list[tuple[str, ProjectView]]) -> list[Analysis]:
        return [analyze(texts[path], DEFAULT_CONFIG, project=view) for path, view in batch]

    modules = {str(p): module_name(p) for p in files}
    _, analyses = settle(modules, walk, lambda a: a.calls, lambda a: a.returns)
    return {Path(path): analysis for path, analysis in analyses.items()}


@pytest.mark.parametrize("folder", PROJECTS, ids=lambda p: p.name)
def test_project_findings_match_annotations(folder: Path) -> None:
    analyses = project_analyses(folder)
    assert analyses
    for path, analysis in analyses.items():
        assert_annotations_match(path, path.read_text(), analysis)


def assert_annotations_match(path: Path, text: str, analysis: Analysis) -> None:
    actual = Counter((f.span.line, f.code, f.severity is Severity.HINT) for f in analysis.findings)
    missing = expected(text) - actual
    extra = actual - expected(text)
    lines = text.splitlines()

    def kind(hint: bool) -> str:
        return " (hint)" if hint else ""

    report = [
        f"missing {code}{kind(hint)} at {line + 1}: {lines[line].strip()}"
        for line, code, hint in missing
    ]
    report += [
        f"{'forbidden' if (line, code) in forbidden(text) else 'unexpected'} {code}{kind(hint)} "
        f"at {line + 1}: {lines[line].strip()}"
        for line, code, hint in extra
    ]
    assert not report, f"{path.name}:\n" + "\n".join(report)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_fixes_that_change_behaviour_are_quick_fixes_only(path: Path) -> None:
    text = path.read_text()
    findings = analyze(text).findings
    for number, line in enumerate(text.splitlines()):
        match = QUICK_FIX_ONLY.search(line)
        if match is None:
            continue
        for code in (c.strip() for c in match.group("codes").split(",")):
            here = [f for f in findings if f.span.line == number and f.code == code]
            assert here, f"no {code} at {number + 1} to check the fixes of"
            for finding in here:
                assert finding.fixes, f"{code} at {number + 1} offers no fix at all"
                safe = [f.title for f in finding.fixes if f.safe]
                assert not safe, f"{code} at {number + 1}: {safe} would run in Fix all"


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
