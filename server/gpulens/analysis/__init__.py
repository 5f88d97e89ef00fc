"""Pure analysis of Python source for GPU performance pitfalls. Knows nothing of LSP or editors."""

from gpulens.analysis.config import DEFAULT_CONFIG, Config, ConfigError, load_config
from gpulens.analysis.engine import Analysis, analyze
from gpulens.analysis.model import Edit, Finding, Fix, Position, Severity, Span
from gpulens.analysis.notebook import analyze_cells

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
