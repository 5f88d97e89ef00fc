"""The rule catalogue and the dispatch table the walker uses."""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpulens.analysis.model import Severity

if TYPE_CHECKING:
    from gpulens.analysis.context import Context


@dataclass(frozen=True, slots=True)
class Rule:
    """One stable code. ``doc`` is Markdown: what happens on the GPU, then **Bad:** and
    **Good:** examples; it is the hover text and `gpulens check --explain CODE`."""

    code: str
    name: str
    severity: Severity
    summary: str
    doc: str


RULES: dict[str, Rule] = {}
Check = Callable[[Any, "Context"], None]
CHECKS: defaultdict[type[ast.AST], list[Check]] = defaultdict(list)


def rule(code: str, name: str, severity: Severity, summary: str, doc: str) -> Rule:
    if code in RULES:
        raise ValueError(f"rule {code} is defined twice")
    RULES[code] = Rule(code, name, severity, summary, doc.strip())
    return RULES[code]


def checks(*node_types: type[ast.AST]) -> Callable[[Check], Check]:
    """Register a check for the node types it names in its signature's first argument."""

    def register(function: Check) -> Check:
        for node_type in node_types:
            CHECKS[node_type].append(function)
        return function

    return register
