"""Placeholder: "Move to device…" (being written)."""

from __future__ import annotations

from gpulens.analysis.model import Edit, Span


def move_to_device(text: str, selection: Span | None, device: str = "cuda") -> list[Edit]:
    return []
