"""Host backend: per-line hits and host time only, for machines with no GPU to record."""

from __future__ import annotations

import time
from typing import Any


class HostSession:
    """No GPU records: the line timeline alone, on the host's monotonic clock."""

    name = "host"
    keeps_segments = False  # no record is placed by time: hits and host time suffice

    def __init__(self) -> None:
        self.clock = time.perf_counter_ns
        self.warnings: list[str] = []

    def begin(self) -> None:
        """Nothing to enable."""

    def finish(self) -> dict[str, Any]:
        return {}

    def gpus(self) -> list[dict[str, Any]]:
        return []
