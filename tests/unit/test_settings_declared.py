"""The VS Code client declares every setting the server reads, with the server's bounds:
a setting missing from package.json cannot be set in the Settings UI, and one with other
bounds is accepted there and refused by the server."""

from __future__ import annotations

import json
from pathlib import Path

from gpulens.lsp.schema import SECTION, SETTINGS

PACKAGE = Path(__file__).resolve().parents[2] / "extension" / "package.json"


def declared() -> dict[str, dict[str, object]]:
    contributed = json.loads(PACKAGE.read_text(encoding="utf-8"))["contributes"]["configuration"]
    sections = contributed if isinstance(contributed, list) else [contributed]
    return {name: spec for section in sections for name, spec in section["properties"].items()}


def test_every_server_setting_is_declared_with_its_bounds() -> None:
    properties = declared()
    for setting in SETTINGS:
        name = f"{SECTION}.{setting.name}"
        assert name in properties, f"{name} is read by the server but not in package.json"
        for bound in ("minimum", "maximum", "exclusiveMinimum", "enum"):
            if bound in setting.schema:
                assert properties[name].get(bound) == setting.schema[bound], (name, bound)


def test_the_memory_setting_offers_what_the_profiler_records() -> None:
    from gpulens.lsp.schema import PROFILE_MEMORY_VIEWS
    from gpulens.profiler.capture import MEMORY_BY_DEFAULT, MEMORY_CHOICES

    assert set(PROFILE_MEMORY_VIEWS) == set(MEMORY_CHOICES)
    memory = next(s for s in SETTINGS if s.name == "profile.memory")
    assert memory.default == MEMORY_BY_DEFAULT
