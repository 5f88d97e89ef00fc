"""Rule families, one module each; importing this package registers every rule."""

from gpulens.analysis.rules import (  # noqa: F401  (each module registers its rules)
    comparisons,
    data,
    devices,
    factories,
    forwards,
    loops,
    membership,
    precision,
    round_trips,
    sync,
    timing,
    transfers,
)
from gpulens.analysis.rules.registry import CHECKS, RULES, Rule

__all__ = ["CHECKS", "RULES", "Rule"]
