"""Document -> findings: parse once (tolerantly), walk once, dispatch to the rules."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpulens.analysis.config import DEFAULT_CONFIG, Config, is_suppressed, suppressions
from gpulens.analysis.model import Finding
from gpulens.analysis.source import SourceText, SyntaxProblem, parse_tolerant


@dataclass(frozen=True, slots=True)
class Analysis:
    findings: list[Finding]
    # set when the text does not parse; the findings then cover the parts that do
    syntax_problem: SyntaxProblem | None = None
    notes: list[str] = field(default_factory=list)


def analyze(text: str, config: Config = DEFAULT_CONFIG) -> Analysis:
    """Find GPU pitfalls in ``text``. Never raises for any string."""
    source = SourceText(text)
    tree, problem = parse_tolerant(text)
    from gpulens.analysis.walker import walk_module

    findings, notes = walk_module(tree, source, config)
    table = suppressions(source.lines)
    kept = [f for f in findings if config.enabled(f.code) and not is_suppressed(f, table)]
    kept = [
        f if config.severity_of(f.code, f.severity) == f.severity else _with_severity(f, config)
        for f in kept
    ]
    kept.sort(key=lambda f: (f.span.start, f.code))
    return Analysis(kept, problem, notes)


def _with_severity(finding: Finding, config: Config) -> Finding:
    from dataclasses import replace

    return replace(finding, severity=config.severity_of(finding.code, finding.severity))
