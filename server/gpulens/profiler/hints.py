"""Hints that turn a line's numbers into an action. Pure: one payload line in, hints out."""

from __future__ import annotations

import ast
from typing import Any

from gpulens.profiler.schema import (
    COLLECTIVES,
    KERNELS,
    MEMSETS,
    RECORD_KINDS,
    SYNCS,
    TRANSFERS,
)
from gpulens.profiler.units import short_bytes, short_seconds

# a pageable copy at least this large is worth pinning (below it, launch latency dominates)
PAGEABLE_HINT_BYTES = 1 << 20
# "many tiny kernels": at least this many on the line, averaging at most this long, and
# either several per run of the line (fuse them) or a line run very often (batch the runs)
TINY_KERNEL_COUNT = 100
TINY_KERNEL_S = 20e-6
TINY_KERNELS_PER_RUN = 4
TINY_KERNEL_RUNS = 500
# "syncs every iteration": a line run at least this often that syncs on most runs
SYNC_LOOP_HITS = 5
SYNC_LOOP_SHARE = 0.9
# a straggler: the slowest rank over this many times the ranks' median on a line it ran
# more than once (a step of a loop), by at least STRAGGLER_MIN_S
STRAGGLER_RATIO = 1.3
STRAGGLER_MIN_S = 1e-3
# "the GPU sat idle in this loop": a loop that made GPU work, took at least this share of
# the time the host spent in the cell's lines (and at least IDLE_LOOP_MIN_S), during which
# the GPU had no work at least IDLE_LOOP_SHARE of the time
IDLE_LOOP_SHARE = 0.5
IDLE_LOOP_CELL_SHARE = 0.1
IDLE_LOOP_MIN_S = 1e-3
# a line whose host time per GPU operation it made (kernel, copy, memset, collective) is at
# most this is launching work: the GPU's idle time within it is launch overhead. Beyond it the
# host was busy with its own work (Python, a sleep, I/O, a collective run on the CPU). A
# launch-bound training step takes some 30-130 µs of host time per launch (H200 recordings).
LAUNCHING_S_PER_OP = 1e-3
_STRAGGLER_BASIS = {
    "gpu": "of GPU work (collectives less their waiting)",
    "host": "on the host (less its waits for the GPU)",
}


def line_hints(
    line: dict[str, Any], pinned_gbps: float | None, gpu_collectives: bool = False
) -> list[dict[str, str]]:
    """Hints for one payload line; `pinned_gbps`: pinned copies' bandwidth
    measured elsewhere in the same cell, quoted when known; `gpu_collectives`: the job's
    collectives ran on the GPU (NCCL), not on the CPU (gloo)."""
    found: list[dict[str, str]] = []
    pageable = line.get("pageable") or {}
    copies = sum(block.get("pageable", 0) for block in line.get(TRANSFERS.key, {}).values())
    if copies and pageable.get("bytes", 0) / copies >= PAGEABLE_HINT_BYTES and pageable.get("s"):
        gbps = pageable["bytes"] / pageable["s"] / 1e9
        message = (
            f"{copies} pageable cop{'y' if copies == 1 else 'ies'} of "
            f"{short_bytes(pageable['bytes'] / copies)} ran at {gbps:.1f} GB/s: copy from pinned "
            "memory (tensor.pin_memory(), DataLoader(pin_memory=True)) and pass "
            "non_blocking=True to overlap the copy with compute"
        )
        if pinned_gbps:
            message += f"; pinned copies in this cell ran at {pinned_gbps:.1f} GB/s"
        found.append({"code": "pinned-memory", "message": message})
    kernels = line.get(KERNELS.key, {})
    count = kernels.get("count", 0)
    per_hit = count / max(line.get("hits", 1), 1)
    if (
        count >= TINY_KERNEL_COUNT
        and kernels.get("gpu_s", 0) / count <= TINY_KERNEL_S
        and (per_hit >= TINY_KERNELS_PER_RUN or line.get("hits", 0) >= TINY_KERNEL_RUNS)
    ):
        found.append(
            {
                "code": "fuse-kernels",
                "message": (
                    f"{count} kernels averaging {short_seconds(kernels['gpu_s'] / count)} "
                    f"({per_hit:.0f} per run of the line): launch overhead dominates; fuse them "
                    "(torch.compile, CUDA graphs, a CuPy ElementwiseKernel) or batch the work "
                    "into fewer, larger launches"
                ),
            }
        )
    syncs = line.get(SYNCS.key, {})
    hits = line.get("hits", 0)
    waits = syncs.get("count", 0)
    if hits >= SYNC_LOOP_HITS and waits >= SYNC_LOOP_SHARE * hits:
        stalled = f"{short_seconds(syncs.get('stall_s', 0))} stalled"
        if copies >= waits:  # the waits are the pageable copies' own
            if not any(hint["code"] == "pinned-memory" for hint in found):
                found.append(
                    {
                        "code": "pinned-memory",
                        "message": (
                            f"each of the {copies} pageable copies makes the host wait for the "
                            f"GPU ({stalled}): copy from pinned memory (tensor.pin_memory(), "
                            "DataLoader(pin_memory=True)) with non_blocking=True"
                        ),
                    }
                )
        else:
            found.append(
                {
                    "code": "GPU001",
                    "message": (
                        f"the host waits for the GPU {waits} times on this line ({stalled}), "
                        f"{per_run(waits, hits)}: it reads a GPU value to the host (`.item()`, "
                        "`.cpu()`, `print`, an `if` on a tensor) or calls code that does; keep "
                        "the value on the device and read it once after the loop (GPU001)"
                    ),
                }
            )
    straggler = straggler_hint(line, gpu_collectives)
    if straggler is not None:
        found.append(straggler)
    return found


def per_run(count: int, runs: int) -> str:
    """How often a line did something, said truly: "once per run" only where it did so about
    once each time it ran (a DDP forward line waits some 4 times per run, not once)."""
    ratio = count / max(runs, 1)
    if ratio < 0.95:
        return "on most of its runs"
    if ratio <= 1.05:
        return "once per run"
    return f"{ratio:.1f} times per run on average"


def straggler_hint(line: dict[str, Any], gpu_collectives: bool = False) -> dict[str, str] | None:
    """A line of a job of several ranks where one rank takes much longer than the others:
    they wait for it at their next collective. None for any other line. Where the job's
    collectives run on the CPU (gloo), a host-time straggler may be the rank that waited in
    one: the message says so, and only then."""
    spread, figures = line.get("spread"), line.get("ranks") or []
    if not isinstance(spread, dict) or len(figures) < 2:
        return None
    slowest, median, most = spread.get("slowest_rank"), spread.get("median_s"), spread.get("max_s")
    if not isinstance(median, int | float) or not isinstance(most, int | float):
        return None
    runs = next((f.get("hits", 0) for f in figures if f.get("rank") == slowest), 0)
    if runs < 2 or most - median < STRAGGLER_MIN_S or most <= STRAGGLER_RATIO * median:
        return None
    times = f"{most / median:.1f}×" if median > 0 else "far more than"
    basis = _STRAGGLER_BASIS.get(str(spread.get("basis")), "")
    return {
        "code": "straggler",
        "message": (
            f"rank {slowest} is the straggler on this line: {short_seconds(most)} {basis}, "
            f"{times} the median of the {len(figures)} ranks ({short_seconds(median)}); the "
            "others wait for it at their next collective: even out the work or the data "
            "each rank gets here"
            + (
                " (where this line is itself a collective run on the CPU, as gloo's are, the "
                "rank named waited in it for the others instead)"
                if spread.get("basis") == "host" and not gpu_collectives
                else ""
            )
        ),
    }


def pinned_bandwidth(lines: list[dict[str, Any]]) -> float | None:
    """GB/s of all pinned host<->device copies of the cell, or None if it made none."""
    size = sum((line.get("pinned") or {}).get("bytes", 0) for line in lines)
    seconds = sum((line.get("pinned") or {}).get("s", 0) for line in lines)
    return size / seconds / 1e9 if size and seconds else None


def loop_spans(code: list[str], first_line: int) -> list[tuple[int, int]]:
    """(first, last) line of each `for` and `while` loop of the profiled code, numbered as
    the payload numbers its lines; none where the code does not parse."""
    try:
        tree = ast.parse("\n".join(code))
    except (SyntaxError, ValueError):
        return []
    shift = first_line - 1
    return [
        (node.lineno + shift, (node.end_lineno or node.lineno) + shift)
        for node in ast.walk(tree)
        if isinstance(node, ast.For | ast.AsyncFor | ast.While)
    ]


def gpu_operations(line: dict[str, Any]) -> int:
    """How many kernels, copies, memsets and collectives the line made."""
    count = sum(
        int((line.get(key) or {}).get("count") or 0)
        for key in (KERNELS.key, COLLECTIVES.key, MEMSETS.key)
    )
    copies = line.get(TRANSFERS.key) or {}
    return count + sum(int(block.get("count") or 0) for block in copies.values())


def _launching(line: dict[str, Any]) -> bool:
    operations = gpu_operations(line)
    return operations > 0 and float(line["own_s"]) <= LAUNCHING_S_PER_OP * operations


def idle_loop_hints(payload: dict[str, Any]) -> dict[int, dict[str, str]]:
    """Per loop where the GPU sat idle most of the time the host spent in it (the GPU
    waiting for Python), a hint on the loop's first line: launch-bound where the idle time
    fell in lines that were launching GPU work, else the line whose own host work left the
    GPU idle longest. Where loops nest and several qualify, the innermost: it is where the
    time goes."""
    lines = [line for line in payload.get("lines") or [] if line.get("own_s") is not None]
    total = sum(float(line["own_s"]) for line in lines)
    if total <= 0:
        return {}
    source = payload.get("source") or {}
    spans = loop_spans(payload.get("code") or [], int(source.get("first_line") or 1))
    found: dict[tuple[int, int], tuple[float, float, list[dict[str, Any]]]] = {}
    for first, last in spans:
        inside = [line for line in lines if first <= line["line"] <= last]
        own = sum(float(line["own_s"]) for line in inside)
        idle = sum(float(line.get("gpu_idle_s") or 0) for line in inside)
        made_work = any(kind.made_work(line) for line in inside for kind in RECORD_KINDS)
        if (
            made_work
            and own >= max(IDLE_LOOP_MIN_S, IDLE_LOOP_CELL_SHARE * total)
            and idle >= IDLE_LOOP_SHARE * own
        ):
            found[(first, last)] = (idle, own, inside)
    hints = {}
    for (first, last), (idle, own, inside) in found.items():
        if any(a >= first and b <= last and (a, b) != (first, last) for a, b in found):
            continue  # a loop inside it qualifies too
        share = (
            f"the GPU was idle {idle / own:.0%} of this loop "
            f"({short_seconds(idle)} of {short_seconds(own)})"
        )
        launching = sum(float(line.get("gpu_idle_s") or 0) for line in inside if _launching(line))
        if launching >= IDLE_LOOP_SHARE * own:
            advice = "launch-bound; CUDA graphs, torch.compile or a larger batch help"
        else:
            busiest = max(
                (line for line in inside if not _launching(line)),
                key=lambda line: float(line.get("gpu_idle_s") or 0),
            )
            advice = (
                f"most of it while line {busiest['line']} ran "
                f"({short_seconds(float(busiest.get('gpu_idle_s') or 0))} idle), working on "
                "the host rather than launching GPU work: overlap that work with the GPU's or "
                "move it out of the loop (DataLoader workers, prefetching)"
            )
        hints[first] = {"code": "gpu-idle", "message": f"{share}: {advice}"}
    return hints
