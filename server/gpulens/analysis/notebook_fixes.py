"""Fix all in a notebook: the first safe fix of every finding in every code cell, applied
round after round (a fix can enable another) until the cells stop changing."""

from __future__ import annotations

from collections.abc import Sequence

from gpulens.analysis.config import DEFAULT_CONFIG, Config
from gpulens.analysis.edits import apply_edits, fix_all_edits
from gpulens.analysis.incremental import DocumentAnalyzer
from gpulens.analysis.notebook import analyze_cells

# five rounds settle every case we know, and bound the cost of a pathological one
MAX_ROUNDS = 5


def fix_all_cells(
    cells: Sequence[str], config: Config = DEFAULT_CONFIG, rounds: int = MAX_ROUNDS
) -> list[str]:
    """The cells with every safe fix applied. A round that would leave the notebook's code
    unparseable (where it parsed before) is not kept: the cells stay as the last good round."""
    texts = list(cells)
    analyzer = DocumentAnalyzer()  # each round's program differs from the last in a few lines
    analyses = analyze_cells(texts, config, analyzer)
    parsed = all(a.syntax_problem is None for a in analyses)
    for _ in range(rounds):
        fixed = [
            apply_edits(text, fix_all_edits(analysis.findings))
            for text, analysis in zip(texts, analyses, strict=True)
        ]
        if fixed == texts:
            break
        next_analyses = analyze_cells(fixed, config, analyzer)
        if parsed and any(a.syntax_problem is not None for a in next_analyses):
            break
        texts, analyses = fixed, next_analyses
    return texts
