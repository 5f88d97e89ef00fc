"""Placeholder: "Port NumPy to CuPy" (being written)."""

from __future__ import annotations

from gpulens.analysis.model import Edit, Span


def port_numpy_to_cupy(text: str, selection: Span | None) -> list[Edit]:
    return []
