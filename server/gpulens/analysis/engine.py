"""Document -> findings: parse block by block (tolerantly), walk once, dispatch to the rules."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpulens.analysis.config import DEFAULT_CONFIG, Config, is_suppressed, suppressions
from gpulens.analysis.model import Finding
from gpulens.analysis.source import SourceText, SyntaxProblem

if TYPE_CHECKING:
    import ast

    from gpulens.analysis.incremental import BlockParser, FunctionMemo
    from gpulens.analysis.project import ProjectCall, ProjectReturn, ProjectView
    from gpulens.analysis.regions import Trace


@dataclass(frozen=True, slots=True)
class Analysis:
    findings: list[Finding]
    # set when the text does not parse; the findings then cover the parts that do
    syntax_problem: SyntaxProblem | None = None
    notes: list[str] = field(default_factory=list)
    # the calls the file makes into the other modules of its project (`ProjectView.record`)
    calls: tuple[ProjectCall, ...] = ()
    # what its functions return, as the other modules read it (`ProjectView.record`)
    returns: tuple[ProjectReturn, ...] = ()


@contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """A parse makes millions of nodes; each full collection rescans them all, which made a
    5 MB file take 3× longer than 5 × 1 MB. The tree holds no cycles worth collecting.

    ``freeze``: what is alive at the end is kept out of every later collection
    (`gc.freeze`): a 2 MB document's trees and function results are millions of objects,
    and each collection of the oldest generation read them all again (seconds, every few
    keystrokes). They are freed as usual when no longer referenced: nothing of a walk
    is left in a cycle (`walker.release`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if freeze:
                gc.freeze()
            gc.enable()


def analyze(
    text: str,
    config: Config = DEFAULT_CONFIG,
    *,
    blocks: BlockParser | None = None,
    memo: FunctionMemo | None = None,
    project: ProjectView | None = None,
) -> Analysis:
    """Find GPU pitfalls in ``text``. Never raises for any string.

    ``blocks`` and ``memo`` carry what earlier versions of the same document computed
    (`DocumentAnalyzer` holds them); the result is the same with or without them.
    ``project``: the file's module, and what the project's other modules pass its
    functions (`project.ProjectIndex`).
    """
    from gpulens.analysis.incremental import BlockParser

    with collector_paused():
        parser = blocks or BlockParser()
        tree, problem, repaired = parser.parse(text)
        source = SourceText(text, parser.lines)
        return walk_parsed(tree, problem, repaired, source, config, memo=memo, project=project)


def walk_parsed(
    tree: ast.Module,
    problem: SyntaxProblem | None,
    repaired: frozenset[int],
    source: SourceText,
    config: Config,
    *,
    memo: FunctionMemo | None = None,
    trace: Trace | None = None,
    project: ProjectView | None = None,
) -> Analysis:
    """`analyze` of a text parsed already (``trace``: see `regions`)."""
    from gpulens.analysis.walker import walk_module

    findings, notes, calls, returns = walk_module(
        tree, source, config, memo, repaired, trace=trace, project=project
    )
    return Analysis(shown(findings, source, config), problem, notes, calls, returns)


def shown(findings: list[Finding], source: SourceText, config: Config) -> list[Finding]:
    """The findings the configuration keeps, at its severities, not suppressed by a
    comment, in the order of the text."""
    # a file without the word has no suppression comment: no need to read every line
    table = suppressions(source.lines) if "gpulens" in source.text else {}
    kept = [f for f in findings if config.enabled(f.code) and not is_suppressed(f, table)]
    kept = [
        f if config.severity_of(f.code, f.severity) == f.severity else _with_severity(f, config)
        for f in kept
    ]
    kept.sort(key=lambda f: (f.span.line, f.span.column, f.code))
    return kept


def _with_severity(finding: Finding, config: Config) -> Finding:
    return replace(finding, severity=config.severity_of(finding.code, finding.severity))
