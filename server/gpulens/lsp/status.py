"""Placeholder for the `gpulens/status` notification and request (device status issue)."""

from __future__ import annotations

from typing import Any


def register(server: Any) -> None:
    """Attach status polling and the `gpulens/status` request to ``server``."""
