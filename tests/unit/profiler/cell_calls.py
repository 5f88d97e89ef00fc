"""A test backend whose "GPU calls" the profiled cell makes itself: for the bounded-timeline
tests and the sampling cells (which a bare 3.12+ interpreter runs, so: gpulens and the
standard library only)."""

from __future__ import annotations

import sys
import time
from typing import Any

from gpulens.profiler.timeline import Segments, place_calls, placed_columns


class CellCalls:
    """A test backend: the cell's `launch()` is its "GPU call", one kernel each, stamped by the
    backend's clock. Calls are handed over at `place_calls` (as CUPTI hands over completed
    buffers) or only at the end (as torch.profiler does), as chosen."""

    name = "cell-calls"

    def __init__(self, *, placing: bool, stack_line: bool = False) -> None:
        self.clock = time.perf_counter_ns
        self.warnings: list[str] = []
        self.calls: list[tuple[int, int]] = []
        self.stack_lines: dict[int, int] = {}
        self.retained_from: int | None = None
        self.placed: dict[int, tuple[int, int]] = {}
        self.placings = 0
        self._handed = 0
        self._stack_line = stack_line
        if placing:
            self.place_calls = self._place_calls

    def launch(self) -> int:
        """One call; 0, so a cell may use it in a sum."""
        corr = len(self.calls) + 1
        self.calls.append((corr, self.clock()))
        if self._stack_line:
            self.stack_lines[corr] = sys._getframe(1).f_lineno
        return 0

    def _place_calls(self, segments: Segments, retained_from: int) -> None:
        self.placings += 1
        place_calls(self.placed, self.calls[self._handed :], segments, retained_from)
        self._handed = len(self.calls)

    def begin(self) -> None:
        pass

    def finish(self) -> dict[str, Any]:
        corrs = [corr for corr, _ in self.calls]
        starts = [start for _, start in self.calls]
        records: dict[str, Any] = {
            "api": {"corr": corrs, "start": starts, "end": starts, "tid": [1] * len(corrs)},
            "kernels": {
                "corr": corrs,
                "start": [0] * len(corrs),
                "end": [1000] * len(corrs),
                "device": [0] * len(corrs),
                "name": [0] * len(corrs),
            },
            "names": ["k"],
        }
        if self.placed:
            records["placed"] = placed_columns(self.placed)
        early = [c for c, s in self.calls if self.retained_from and s < self.retained_from]
        if self.stack_lines and early:
            records["by_stack"] = {"corr": early, "line": [self.stack_lines[c] for c in early]}
        return records

    def gpus(self) -> list[dict[str, Any]]:
        return []
