"""Fault injection for `test_lsp_fix_application.py`, loaded at start-up by any Python that
finds this folder on PYTHONPATH (the CLI and the language server the test starts).

No real rule offers two safe fixes that overlap with more than one edit, or a fix that
breaks the file (tests/unit/rules check that), so the walk is wrapped to add three such
findings on marked lines: GPU901 (two edits, the second inside GPU902's), GPU902, and
GPU903, whose fix would leave the file unparsable.
"""

from __future__ import annotations

from typing import Any


def _inject() -> None:
    from gpulens.analysis import walker
    from gpulens.analysis.model import Edit, Finding, Fix, Severity, Span

    real_walk = walker.walk_module

    def found(lines: list[str], token: str) -> Span | None:
        for number, line in enumerate(lines):
            column = line.find(token)
            if column >= 0:
                return Span(number, column, number, column + len(token))
        return None

    def walk_module(tree: Any, source: Any, *args: Any, **kwargs: Any) -> Any:
        findings, notes, *project = real_walk(tree, source, *args, **kwargs)
        lines = [line.rstrip("\r\n") for line in source.lines]
        a, b, c = found(lines, "OVERLAP_A"), found(lines, "B_TARGET"), found(lines, "BREAK_ME")
        wide = found(lines, "B_TARGET_X")
        extra = []
        if a is not None and wide is not None:
            fix = Fix("Fix A", (Edit(a, "DONE_A"), Edit(wide, "A_WAS_HERE")))
            extra.append(Finding("GPU901", Severity.WARNING, "A", a, (fix,)))
        if b is not None:
            fix = Fix("Fix B", (Edit(b, "B_WAS_HERE"),))
            extra.append(Finding("GPU902", Severity.WARNING, "B", b, (fix,)))
        if c is not None:
            fix = Fix("Fix C", (Edit(c, "def (:"),))
            extra.append(Finding("GPU903", Severity.WARNING, "C", c, (fix,)))
        return ([*findings, *extra], notes, *project)

    walker.walk_module = walk_module


_inject()
