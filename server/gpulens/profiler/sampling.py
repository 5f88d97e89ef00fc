"""Sampled lines: what lets a Python-heavy cell run under the line timeline near its speed.

A line event costs a Python callback, ten times what a fast Python line costs itself, so a
tight loop of millions of runs ran 10-15x slower profiled. Past the first
`timeline.RAW_EVENTS_KEPT` line events of a cell (a short cell is always recorded whole),
the line handlers look at each stretch of `WINDOW` line events. Where all of them came from
one frame and at most one run in `BY_CHANCE` took `FAST_NS` or more (a thread preempted; a
CUDA call takes longer than the rest of such a line), the lines that ran often go quiet:
each returns `sys.monitoring.DISABLE` until the `Waker` restarts the events, `QUIET_FACTOR`
times the stretch's length later. Lines that ran now and then (a branch taken every
thousand runs) or were slow more often than by chance stay recorded, and any of their runs,
a call or a return ends the quiet at once: where a rare GPU call is, every run is recorded.

What the profile then says: a sampled line's hits are the runs recorded (shown with +), its
host time includes the quiet stretches' time split as its recorded host time was (shown
with ≈; each run recorded bore one event's cost, as in a cell recorded whole), and a GPU
call made while its line was quiet is counted and not placed on a line (the line timeline
holds no line there), never placed on a line it may not belong to.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# line events per recorded stretch, and the slowest line run that still counts as fast
WINDOW = 4096
FAST_NS = 5_000
# a stretch goes quiet with at most one slow run in this many (the thread preempted by the
# OS, a page fault), and a line of it that was slow that often stays recorded
BY_CHANCE = 16
# a quiet stretch lasts this many times the recorded one: about 5 % of a hot loop's runs
# are recorded, the rest estimated
QUIET_FACTOR = 19


@dataclass(frozen=True)
class Sampling:
    """What the line handlers sample with: the waker, `sys.monitoring.DISABLE` and
    `restart_events`, and the recorded stretch's length, speed bound (clock ticks, about ns),
    slow runs allowed and quiet factor."""

    waker: Waker
    disable: Any
    restart: Callable[[], Any]
    window: int
    fast: int
    by_chance: int
    quiet_factor: float


def settings(monitoring: Any) -> Sampling:
    """A recorder's sampling, with this module's bounds as they are now."""
    return Sampling(
        waker=Waker(),
        disable=monitoring.DISABLE,
        restart=monitoring.restart_events,
        window=WINDOW,
        fast=FAST_NS,
        by_chance=BY_CHANCE,
        quiet_factor=QUIET_FACTOR,
    )


class Waker:
    """A daemon thread that restarts the disabled events when a quiet stretch is up.

    `arm(delay_s)` (from an event callback) starts a quiet stretch; `woken()` says, in the
    next callback, that it is over. `sys.monitoring.restart_events` re-enables events every
    tool disabled; tools that still want them off disable them again on their next event."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._closed = False
        self.woke = False
        self._thread: threading.Thread | None = None

    def arm(self, delay_s: float) -> None:
        with self._cond:
            self.woke = False
            self._deadline = time.monotonic() + delay_s
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="gpulens-sampling", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def cancel(self) -> bool:
        """Ends the quiet stretch armed: whether the waker had already restarted the events
        (else the caller must, for the lines it disabled)."""
        with self._cond:
            self._deadline = None
            return self.woke

    def _run(self) -> None:
        restart = sys.monitoring.restart_events  # type: ignore[attr-defined]  # 3.12+
        with self._cond:
            while not self._closed:
                if self._deadline is None:
                    self._cond.wait()
                    continue
                left = self._deadline - time.monotonic()
                if left > 0:
                    self._cond.wait(left)
                    continue
                self._deadline = None
                self.woke = True
                restart()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
