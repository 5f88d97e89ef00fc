"""What people read of the GPU's idle time in a profile: per line and the cell's share. Pure.

A payload line's `gpu_idle_s` is how long the GPU had no work while the host ran that line
itself (its `own_s`); the payload's `gpu_busy` is the GPU's busy time over the cell and its
share of the cell's time. Both are None where the capture recorded no device times.
"""

from __future__ import annotations

from typing import Any

from gpulens.profiler.schema import PayloadLine
from gpulens.profiler.units import short_seconds

# a line's idle share is shown (its label, its row in the table) where its own time is at
# least this share of the cell's (the rest is too short to read) and the GPU sat idle at
# least IDLE_LABEL_SHARE of it; the hover always has it
IDLE_SHOWN_SHARE = 0.01
IDLE_LABEL_SHARE = 0.5
LEGEND = "GPU idle: the share of the line's own time the GPU had no work"


def used_gpu(payload: dict[str, Any]) -> bool:
    """Whether the cell made timed GPU work: only then is idle time worth a word."""
    busy = payload.get("gpu_busy")
    return isinstance(busy, dict) and (busy.get("s") or 0) > 0


def cell_time(lines: list[PayloadLine]) -> float:
    """The time the host spent on the cell's lines: the sum of their own times."""
    return sum(float(line.get("own_s") or 0) for line in lines)


def idle_share(line: PayloadLine) -> float | None:
    own, idle = line.get("own_s"), line.get("gpu_idle_s")
    if not isinstance(own, int | float) or not isinstance(idle, int | float) or own <= 0:
        return None
    return min(1.0, max(0.0, idle / own))


def label_part(line: PayloadLine, total: float) -> str | None:
    """ "GPU idle 94%" where the GPU sat idle most of a line that took a part of the cell:
    the label's part and the line's row in the table."""
    share = idle_share(line)
    if share is None or total <= 0 or float(line.get("own_s") or 0) < IDLE_SHOWN_SHARE * total:
        return None
    return f"GPU idle {share:.0%}" if share >= IDLE_LABEL_SHARE else None


def hover_row(line: PayloadLine) -> str | None:
    share = idle_share(line)
    if share is None:
        return None
    return (
        f"the GPU was idle {short_seconds(line.get('gpu_idle_s') or 0)} of the "
        f"{short_seconds(line.get('own_s') or 0)} the host spent on this line itself "
        f"({share:.0%})"
    )


def header_part(payload: dict[str, Any]) -> str | None:
    """ "GPU busy 6%"."""
    if not used_gpu(payload):
        return None
    return f"GPU busy {payload['gpu_busy'].get('share', 0):.0%}"


def note(payload: dict[str, Any]) -> str | None:
    if not used_gpu(payload):
        return None
    busy = payload["gpu_busy"]
    return (
        f"The GPU was busy {busy.get('share', 0):.0%} of the cell's time "
        f"({short_seconds(busy.get('s', 0))}); a line's idle time is the part of its own "
        "time the GPU had no work, waiting for Python"
    )
