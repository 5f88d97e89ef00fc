"""Fix all in a notebook: the code cells as `gpulens check --fix` and the language server's
fix-all leave them (`edits.fix_until_stable`, with the cells analysed as one program)."""

from __future__ import annotations

from collections.abc import Sequence

from gpulens.analysis.config import DEFAULT_CONFIG, Config
from gpulens.analysis.edits import fix_until_stable
from gpulens.analysis.engine import Analysis
from gpulens.analysis.incremental import DocumentAnalyzer
from gpulens.analysis.notebook import analyze_cells


def fix_all_cells(cells: Sequence[str], config: Config = DEFAULT_CONFIG) -> list[str]:
    """The cells with the first safe fix of every finding applied, each fix whole or not at
    all and never one that leaves a cell unparsable, round after round until nothing
    changes."""
    analyzer = DocumentAnalyzer()  # each round's program differs from the last in a few lines

    def analyze(texts: Sequence[str]) -> list[Analysis]:
        return analyze_cells(list(texts), config, analyzer)

    return list(fix_until_stable(cells, analyze(cells), analyze, cells=True).texts)
