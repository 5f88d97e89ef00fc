"""Rule families, one module each; importing this package registers every rule."""

from gpulens.analysis.rules import sync  # noqa: F401
from gpulens.analysis.rules.registry import CHECKS, RULES, Rule

__all__ = ["CHECKS", "RULES", "Rule"]
