"""Rule families, one module each; importing this package registers every rule."""

from gpulens.analysis.rules import (  # noqa: F401  (each module registers its rules)
    comparisons,
    data,
    devices,
    factories,
    forwards,
    helper_syncs,
    host_indexes,
    loops,
    membership,
    precision,
    round_trips,
    sizes,
    sync,
    timing,
    transfers,
)
from gpulens.analysis.rules.registry import CHECKS, RULES, Rule

__all__ = ["CHECKS", "RULES", "Rule"]
