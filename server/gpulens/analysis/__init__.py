"""Pure analysis of Python source for GPU performance pitfalls. Knows nothing of LSP or editors.

The names below load on first use: the language server imports a few light modules of this
package (`source`, `model`) before it answers `initialize`, and the walk and its rules only
when the first document is analysed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpulens.analysis.config import DEFAULT_CONFIG, Config, ConfigError, load_config
    from gpulens.analysis.engine import Analysis, analyze
    from gpulens.analysis.model import Edit, Finding, Fix, Position, Severity, Span
    from gpulens.analysis.notebook import analyze_cells

_HOMES = {
    "DEFAULT_CONFIG": "config",
    "Config": "config",
    "ConfigError": "config",
    "load_config": "config",
    "Analysis": "engine",
    "analyze": "engine",
    "Edit": "model",
    "Finding": "model",
    "Fix": "model",
    "Position": "model",
    "Severity": "model",
    "Span": "model",
    "analyze_cells": "notebook",
}

__all__ = [
    "DEFAULT_CONFIG",
    "Analysis",
    "Config",
    "ConfigError",
    "Edit",
    "Finding",
    "Fix",
    "Position",
    "Severity",
    "Span",
    "analyze",
    "analyze_cells",
    "load_config",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gpulens.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"gpulens.analysis.{home}"), name)
    globals()[name] = value
    return value
