"""The `gpulens` settings section, declared once: each setting's name, JSON type, default and
description. The server reads the section by these names (`gpulens.lsp.settings`), and the
JupyterLab-LSP spec offers them as its settings schema (`gpulens.jupyter.lsp_spec`).

Imports nothing of pygls: the Jupyter server reads it at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpulens.device.intervals import DEFAULT_INTERVAL_S as DEFAULT_STATUS_INTERVAL_S
from gpulens.device.intervals import MIN_INTERVAL_S as MIN_STATUS_INTERVAL_S
from gpulens.profiler.timeouts import DEFAULT_TIMEOUT_S

SECTION = "gpulens"
# the GPU memory views a profile records (`profiler.capture.MEMORY_CHOICES`, which the server
# does not import at start; a unit test keeps the two equal)
PROFILE_MEMORY_VIEWS = ("reserved", "all", "off")
# most processes `gpulens.profile.ranks` may start on one machine
MAX_RANKS = 64

_SEVERITIES = ["error", "warning", "info", "hint"]


@dataclass(frozen=True, slots=True)
class Setting:
    name: str  # within the section, dotted: "rules.ignore"
    schema: dict[str, Any]  # its JSON schema (type and constraints)
    default: Any
    description: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "device",
        {"type": ["string", "null"]},
        None,
        "Device the quick-fixes and refactors write, e.g. cuda, cuda:1, cpu or mps. "
        "Unset: `device` of [tool.gpulens] in pyproject.toml, else cuda.",
    ),
    Setting(
        "statusIntervalSeconds",
        {"type": "number", "minimum": MIN_STATUS_INTERVAL_S},
        DEFAULT_STATUS_INTERVAL_S,
        "How often the language server sends the GPU status (gpulens/status), in seconds.",
    ),
    Setting(
        "rules.select",
        {"type": ["array", "null"], "items": {"type": "string"}},
        None,
        'Only these rule codes or prefixes, e.g. ["GPU001", "GPU00"]. '
        "Unset: [tool.gpulens] of pyproject.toml, else every rule.",
    ),
    Setting(
        "rules.ignore",
        {"type": ["array", "null"], "items": {"type": "string"}},
        None,
        "Rule codes or prefixes to leave out. Unset: [tool.gpulens] of pyproject.toml.",
    ),
    Setting(
        "rules.severity",
        {"type": "object", "additionalProperties": {"type": "string", "enum": _SEVERITIES}},
        {},
        'Severity per rule code, e.g. {"GPU007": "hint"}; over [tool.gpulens] of pyproject.toml.',
    ),
    Setting(
        "profile.python",
        {"type": ["string", "null"]},
        None,
        "Interpreter that runs profiled cells (the one with torch or CuPy). Unset: the "
        "language server's. It runs only when you profile, or for the status probes when "
        "the client says the folder is trusted.",
    ),
    Setting(
        "profile.timeoutSeconds",
        {"type": "number", "exclusiveMinimum": 0},
        DEFAULT_TIMEOUT_S,
        "Stop a profiled cell after this many seconds (the lines that ran are still shown).",
    ),
    Setting(
        "profile.ranks",
        {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_RANKS},
        None,
        "Processes a profiled cell runs as when it (or a cell above it) calls "
        "init_process_group: the ranks of one torchrun job, profiled each and merged. "
        "Unset: one per GPU the server sees.",
    ),
    Setting(
        "profile.memory",
        {"type": "string", "enum": list(PROFILE_MEMORY_VIEWS)},
        "reserved",
        "GPU memory per line: \"reserved\", the driver's view (CUPTI's memory records, any "
        'framework); "all", torch\'s caching allocator as well (what tensors hold; it costs '
        'more on a cell of many small launches); "off".',
    ),
)


def settings_schema() -> dict[str, Any]:
    """JSON schema of the section, its properties named in full ("gpulens.rules.ignore")."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "gpulens",
        "type": "object",
        "properties": {
            f"{SECTION}.{setting.name}": {
                **setting.schema,
                "default": setting.default,
                "description": setting.description,
            }
            for setting in SETTINGS
        },
    }
