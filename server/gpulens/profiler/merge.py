"""The ranks of a distributed job, merged into one `gpulens.profile/2.1` payload. Pure.

Each rank's payload is made where it ran (`child.py`, one per rank); this adds them up line
by line: a merged line's figures (hits, host time, each record kind) are the job's totals, and
its `ranks` list holds each rank's own figures, from which `spread` says how far apart the
ranks were (min / median / max, the slowest rank named) and the straggler hint is made.

A collective's GPU time on a rank includes the time that rank waited in it for the others:
the k-th collective of an operation (all-reduce, broadcast, ...) is the same collective on
every rank (NCCL runs them in the same order everywhere), it finishes at about the same time
on all of them, and the rank that arrived last spent the least time in it. So the time each
rank waited is its kernel's time less the shortest of the ranks' (`waited_s`).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from gpulens.profiler.collectives import collective_op
from gpulens.profiler.display import annotate, device_seconds
from gpulens.profiler.schema import COLLECTIVES, SCHEMA, SYNCS, PayloadLine, kind_counts

DIGITS = 9


class RankResult(TypedDict):
    """What one rank sent back: its payload and the collectives it ran, in start order
    (columns `line`, `start`, `ns`, `name`)."""

    rank: int
    payload: dict[str, Any]
    collectives: dict[str, list[Any]]


def _add(total: Any, value: Any) -> Any:
    """`value` added into `total`: numbers summed, dicts by key, `top` lists by name and
    `devices` lists by index; anything else keeps the first value seen."""
    if total is None:
        return _copy(value)
    if isinstance(total, bool) or isinstance(value, bool):
        return total
    if isinstance(total, int | float) and isinstance(value, int | float):
        summed = total + value
        return round(summed, DIGITS) if isinstance(summed, float) else summed
    if isinstance(total, dict) and isinstance(value, dict):
        for key, item in value.items():
            total[key] = _add(total.get(key), item)
        return total
    if isinstance(total, list) and isinstance(value, list):
        return _add_listed(total, value)
    return total


def _add_listed(total: list[Any], value: list[Any]) -> list[Any]:
    """`top` rows by `name`, `devices` rows by `index`; other lists are kept as they are."""
    for key in ("name", "index"):
        if all(isinstance(row, dict) and key in row for row in [*total, *value]):
            by_key = {row[key]: row for row in total}
            for row in value:
                if row[key] in by_key:
                    _add(by_key[row[key]], {k: v for k, v in row.items() if k != key})
                else:
                    by_key[row[key]] = _copy(row)
                    total.append(by_key[row[key]])
            if key == "name":  # the longest first, as a rank's own list
                total.sort(key=lambda row: -(row.get("gpu_s") or 0))
            return total
    return total


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def waited_by_line(results: Sequence[RankResult]) -> dict[int, dict[int, float]]:
    """rank -> line -> seconds the rank waited in its collectives for the other ranks."""
    by_op: dict[int, dict[str, list[tuple[int, int]]]] = {}
    for result in results:
        trace = result["collectives"]
        ops = by_op.setdefault(result["rank"], {})
        order = sorted(range(len(trace.get("start", []))), key=lambda i: trace["start"][i])
        for i in order:
            op = collective_op(str(trace["name"][i])) or str(trace["name"][i])
            ops.setdefault(op, []).append((int(trace["line"][i]), int(trace["ns"][i])))
    waited: dict[int, dict[int, float]] = {rank: {} for rank in by_op}
    for op in {op for ops in by_op.values() for op in ops}:
        ranks = [rank for rank in by_op if op in by_op[rank]]
        for k in range(max(len(by_op[rank][op]) for rank in ranks)):
            same = [(rank, *by_op[rank][op][k]) for rank in ranks if k < len(by_op[rank][op])]
            if len(same) < 2:
                continue
            shortest = min(ns for _, _, ns in same)
            for rank, line, ns in same:
                lines = waited[rank]
                lines[line] = lines.get(line, 0.0) + (ns - shortest) / 1e9
    return waited


def rank_figures(line: PayloadLine | None, rank: int, waited_s: float) -> dict[str, Any]:
    """One rank's figures on one line (zeros where the rank did not run it): runs, host time,
    the host's waits for the GPU, GPU time of its own work (collectives less their waiting)."""
    line = line or {}
    stall = float((line.get(SYNCS.key) or {}).get("stall_s") or 0)
    host = float(line.get("host_s") or 0)
    collectives = float((line.get(COLLECTIVES.key) or {}).get("gpu_s") or 0)
    return {
        "rank": rank,
        "hits": int(line.get("hits") or 0),
        "host_s": round(host, DIGITS),
        "stall_s": round(stall, DIGITS),
        # the host's own work on the line: its time less its waits for the GPU
        "busy_s": round(max(0.0, host - stall), DIGITS),
        "gpu_s": round(max(0.0, device_seconds(line) - waited_s), DIGITS),
        "collectives_s": round(collectives, DIGITS),
        "waited_s": round(waited_s, DIGITS),
    }


def spread(figures: Iterable[Mapping[str, Any]], key: str) -> dict[str, Any]:
    """min / median / max of `key` over the ranks, and the slowest rank (the lowest of
    those tied)."""
    values = [(float(f[key]), int(f["rank"])) for f in figures]
    slowest = max(values, key=lambda item: (item[0], -item[1]))
    return {
        "min_s": round(min(v for v, _ in values), DIGITS),
        "median_s": round(statistics.median(v for v, _ in values), DIGITS),
        "max_s": round(slowest[0], DIGITS),
        "slowest_rank": slowest[1],
    }


def merge_lines(results: Sequence[RankResult]) -> list[PayloadLine]:
    """The ranks' lines added up, each with its `ranks` figures and `spread` (by GPU time of
    the ranks' own work where the line made GPU work, else by the host's own time)."""
    waited = waited_by_line(results)
    by_rank = {
        r["rank"]: {line["line"]: line for line in r["payload"].get("lines") or []} for r in results
    }
    numbers = sorted({n for lines in by_rank.values() for n in lines})
    merged: list[PayloadLine] = []
    for number in numbers:
        total: PayloadLine = {"line": number}
        for rank in sorted(by_rank):
            line = by_rank[rank].get(number)
            if line is not None:
                _add(total, _figures_only(line))
        figures = [
            rank_figures(by_rank[rank].get(number), rank, waited[rank].get(number, 0.0))
            for rank in sorted(by_rank)
        ]
        spent = sum(f["waited_s"] for f in figures)
        if spent and isinstance(total.get(COLLECTIVES.key), dict):
            total[COLLECTIVES.key]["waited_s"] = round(spent, DIGITS)
        total["ranks"] = figures
        basis = "gpu" if any(f["gpu_s"] > 0 for f in figures) else "host"
        total["spread"] = {
            "basis": basis,
            **spread(figures, "gpu_s" if basis == "gpu" else "busy_s"),
        }
        merged.append(total)
    return merged


# what a rank's payload line holds that is words, not figures: made again after the merge
_WORDS = ("label", "hover", "heat", "hints")


def _figures_only(line: PayloadLine) -> PayloadLine:
    return {key: value for key, value in line.items() if key not in _WORDS and key != "line"}


def merge_peaks(results: Sequence[RankResult]) -> dict[str, list[dict[str, Any]]] | None:
    """Each rank's memory peaks, per view, each marked with its rank."""
    merged: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        for view, peaks in (result["payload"].get("peak") or {}).items():
            merged.setdefault(view, []).extend(
                {**peak, "rank": result["rank"]} for peak in peaks or []
            )
    return merged or None


def merge_busy(payloads: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The ranks' GPU busy time, summed, and their busy shares' mean (each rank its GPU)."""
    busy = [p["gpu_busy"] for p in payloads if isinstance(p.get("gpu_busy"), dict)]
    if not busy:
        return None
    return {
        "s": round(sum(float(b.get("s") or 0) for b in busy), DIGITS),
        "share": round(statistics.mean(float(b.get("share") or 0) for b in busy), 4),
    }


def merge_ranks(
    results: Sequence[RankResult],
    *,
    world_size: int,
    failures: Mapping[int, str],
    source: dict[str, Any],
    code: list[str],
    wall_s: float,
    warnings: Sequence[str] = (),
    time: str | None = None,
) -> dict[str, Any]:
    """One payload for the job: every line of every rank that reported, and, for the ranks
    that did not (`failures`: rank -> what happened, in words), why. The run's error is that
    of the rank that raised first (its peers' errors are then mostly about losing it: "Connection
    closed by peer"), the lowest rank's where the times are not known; it says which rank."""
    results = sorted(results, key=lambda r: r["rank"])
    payloads = [r["payload"] for r in results]
    error: dict[str, Any] | None = None
    raised = [
        (found.get("at", float("inf")), result["rank"], found)
        for result in results
        if (found := result["payload"].get("error"))
        and found.get("type") not in ("Interrupted", "KeyboardInterrupt")
    ]
    if raised:
        _, first, found = min(raised, key=lambda item: (item[0], item[1]))
        error = {**found, "rank": first}
        error["message"] = f"on rank {first}: {found.get('message', '')}"
    if error is None and failures:
        rank = min(failures)
        error = {"type": "RankExit", "message": failures[rank], "line": None, "rank": rank}
    if error is None:
        error = next((p["error"] for p in payloads if p.get("error")), None)
    gpus: dict[Any, dict[str, Any]] = {}
    for payload in payloads:
        for gpu in payload.get("gpus") or []:
            gpus.setdefault(gpu.get("index"), gpu)
    unattributed = kind_counts()
    for payload in payloads:
        _add(unattributed, payload.get("unattributed") or {})
    said = [list(dict.fromkeys(p.get("warnings") or [])) for p in payloads]
    everywhere = set.intersection(*map(set, said)) if said else set()
    rank_warnings = [*(w for w in said[0] if w in everywhere)] if said else []
    rank_warnings += [
        f"rank {r['rank']}: {warning}"
        for r, warnings_of_rank in zip(results, said, strict=True)
        for warning in warnings_of_rank
        if warning not in everywhere
    ]
    return annotate(
        {
            "schema": SCHEMA,
            "source": source,
            "backend": payloads[0].get("backend", "none") if payloads else "none",
            "gpus": [gpus[index] for index in sorted(gpus, key=lambda i: (i is None, i))],
            "wall_s": round(wall_s, 6),
            "warnings": [*warnings, *rank_warnings],
            "lines": merge_lines(results),
            "unattributed": unattributed,
            "error": error,
            "code": code,
            "timings": {f"rank{r['rank']}": r["payload"].get("timings") or {} for r in results},
            "time": time,
            "peak": merge_peaks(results),
            "gpu_busy": merge_busy(payloads),
            "ranks": {
                "world_size": world_size,
                "reported": [r["rank"] for r in results],
                "failed": [{"rank": rank, "message": failures[rank]} for rank in sorted(failures)],
                "wall_s": {str(r["rank"]): r["payload"].get("wall_s") for r in results},
            },
        }
    )
