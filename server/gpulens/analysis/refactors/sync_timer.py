"""Placeholder: "Insert synchronize-aware timer" (being written)."""

from __future__ import annotations

from gpulens.analysis.model import Edit, Span


def insert_sync_timer(text: str, selection: Span, warmup: bool = True) -> list[Edit]:
    return []
