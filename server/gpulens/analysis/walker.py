"""Placeholder walker: replaced by the real flow walk."""

from __future__ import annotations

import ast

from gpulens.analysis.config import Config
from gpulens.analysis.model import Finding
from gpulens.analysis.source import SourceText


def walk_module(tree: ast.Module, source: SourceText, config: Config) -> tuple[list[Finding], list[str]]:
    return [], []
