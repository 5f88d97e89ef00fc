"""The words of a profile of several ranks (`gpulens profile --nproc-per-node N`): a line's
rank spread in its label and table, its per-rank table in the hover, and what happened to the
ranks that did not report. Pure; `display` calls these for payloads that carry ranks."""

from __future__ import annotations

from typing import Any

from gpulens.profiler.schema import PayloadLine
from gpulens.profiler.units import short_count, short_seconds

_BASIS_WORDS = {"gpu": "GPU time of its own work", "host": "time on the host"}
# a line whose every rank took less than this shows no spread in its label and table cell
SPREAD_SHOWN_S = 1e-3


def _range(spread: dict[str, Any]) -> str:
    low, high = short_seconds(spread.get("min_s", 0)), short_seconds(spread.get("max_s", 0))
    return high if low == high else f"{low}–{high}"


def spread_label(line: PayloadLine) -> str | None:
    """ "ranks 7.0 µs–250 ms (rank 1 slowest)": the label's part for a line of several ranks."""
    spread = line.get("spread")
    if not isinstance(spread, dict) or len(line.get("ranks") or []) < 2:
        return None
    if (spread.get("max_s") or 0) < SPREAD_SHOWN_S:
        return None
    return f"ranks {_range(spread)} (rank {spread.get('slowest_rank')} slowest)"


def spread_cell(line: PayloadLine) -> str:
    """The table's Ranks cell: "7.0 µs–250 ms r1"."""
    spread = line.get("spread")
    if not isinstance(spread, dict) or len(line.get("ranks") or []) < 2:
        return ""
    if (spread.get("max_s") or 0) < SPREAD_SHOWN_S:
        return ""
    return f"{_range(spread)} r{spread.get('slowest_rank')}"


def rank_table(line: PayloadLine) -> list[str]:
    """Markdown rows of the hover: each rank's runs, host time, waits and GPU time."""
    figures = line.get("ranks") or []
    if len(figures) < 2:
        return []
    spread = line.get("spread") or {}
    basis = _BASIS_WORDS.get(str(spread.get("basis")), "time")
    out = [
        f"ranks by {basis}: min {short_seconds(spread.get('min_s', 0))} · median "
        f"{short_seconds(spread.get('median_s', 0))} · max {short_seconds(spread.get('max_s', 0))}"
        f" (rank {spread.get('slowest_rank')})",
        "",
        "| rank | runs | host | host waiting for GPU | GPU, own work | ⇄ waiting |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for f in figures:
        out.append(
            f"| {f.get('rank')} | {short_count(int(f.get('hits') or 0))} | "
            f"{short_seconds(f.get('host_s') or 0)} | {short_seconds(f.get('stall_s') or 0)} | "
            f"{short_seconds(f.get('gpu_s') or 0)} | {short_seconds(f.get('waited_s') or 0)} |"
        )
    return out


def ranks_header(payload: dict[str, Any]) -> str | None:
    """ "2 ranks" (or "2 of 4 ranks reported") for the report's first line."""
    ranks = payload.get("ranks")
    if not isinstance(ranks, dict):
        return None
    size = int(ranks.get("world_size") or 0)
    reported = len(ranks.get("reported") or [])
    if reported == size:
        return f"{size} ranks"
    return f"{reported} of {size} ranks reported"


def rank_notes(payload: dict[str, Any]) -> list[str]:
    """One note per rank that sent no profile: which, and why."""
    ranks = payload.get("ranks")
    if not isinstance(ranks, dict):
        return []
    return [
        f"rank {failed.get('rank')} sent no profile: {failed.get('message')}"
        for failed in ranks.get("failed") or []
    ]
