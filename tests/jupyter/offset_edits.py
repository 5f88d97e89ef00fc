"""Applying `gpulens.notebook-actions/1` edits the way the lab client does: offsets in UTF-16
code units (as JavaScript counts), each cell's edits from the last to the first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def apply_offset_edits(text: str, edits: Sequence[Mapping[str, Any]]) -> str:
    units = text.encode("utf-16-le")
    for edit in sorted(edits, key=lambda e: e["from"], reverse=True):
        insert = edit["insert"].encode("utf-16-le")
        units = units[: 2 * edit["from"]] + insert + units[2 * edit["to"] :]
    return units.decode("utf-16-le")


def apply_action(cells: Sequence[str], action: Mapping[str, Any]) -> list[str]:
    """The cells after an action (a fix, fix-all or a refactor) of the answer."""
    after = list(cells)
    for change in action["cells"]:
        after[change["cell"]] = apply_offset_edits(after[change["cell"]], change["edits"])
    return after


def utf16_offset(text: str, index: int) -> int:
    """The UTF-16 offset of the code point at ``index``."""
    return len(text[:index].encode("utf-16-le")) // 2
