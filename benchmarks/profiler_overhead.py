"""Profiler overhead on the device machine, one run, ratios against the plain cell.

Cells: launch-bound (784-512-10 MLP, batch 256, SGD, `.item()` per step; 200 and 2,000
steps) and compute-bound (20 bf16 8192^3 matmuls). Each runs plain, under gpulens (cupti
backend) with each choice of GPU memory views (`memory="reserved"`, the driver's: the
default; "all", with torch's allocator history too; "off"), the GPU's idle time per line
always on, and under torch.profiler aggregated per line; "end to end" runs from the start of
the profile to the per-line result and its display strings, "running" is the cell alone.
Ratios are medians over runs side by side (each profiled run over the plain run next to
it). Each gpulens line is followed by where its time went (medians, ms): begin (enabling
CUPTI's kinds, torch's history, turning chatty calls off), the cell's own extra time, the
finish (waiting for the GPU, CUPTI's flush, releasing CUPTI, decoding, reading torch's
history), then attribution and the payload. torch.profiler runs last: it gives CUPTI the
CPU's cycle counter as its clock for the rest of the process, so gpulens runs once more
after it ("after torch.profiler": its times are moved onto nanoseconds).
Targets (DESIGN.md): launch-bound <= 1.3x end to end and <= 1.15x running; compute-bound
<= 1.05x end to end, with memory and idle time on; decode + attribution <= 50 ms per 10k
records.

    python benchmarks/profiler_overhead.py [--reps 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.capture import profile_code
from gpulens.profiler.idle import busy_intervals, idle_by_line
from gpulens.profiler.memory import attribute_memory
from gpulens.profiler.report import build_payload

LAUNCH_BOUND = """
for step in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(data), target)
    loss.backward()
    opt.step()
    loss.item()
torch.cuda.synchronize()
"""
COMPUTE_BOUND = """
for _ in range(20):
    c = a @ b
torch.cuda.synchronize()
"""


def launch_namespace(torch: Any, steps: int) -> dict[str, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).cuda()
    return {
        "torch": torch,
        "steps": steps,
        "model": model,
        "opt": torch.optim.SGD(model.parameters(), lr=0.01),
        "F": torch.nn.functional,
        "data": torch.randn(256, 784, device="cuda"),
        "target": torch.randint(0, 10, (256,), device="cuda"),
    }


def compute_namespace(torch: Any) -> dict[str, Any]:
    return {
        "torch": torch,
        "a": torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16),
        "b": torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16),
    }


def plain(code: Any, namespace: dict[str, Any]) -> dict[str, float]:
    start = time.perf_counter()
    exec(code, namespace)
    elapsed = time.perf_counter() - start
    return {"e2e": elapsed, "run": elapsed}


def with_gpulens(
    code: Any, namespace: dict[str, Any], backend: str = "cupti", memory: str = "reserved"
) -> dict[str, float]:
    start = time.perf_counter()
    capture = profile_code(code, namespace, backend, memory=memory)
    captured = time.perf_counter()
    attributed = attribute_records(capture.timeline, capture.records)
    placed = time.perf_counter()
    build_payload(attributed, source={"path": "bench"}, backend=capture.backend)
    end = time.perf_counter()
    records = sum(
        len(capture.records.get(family, {}).get("corr", ()))
        for family in ("api", "kernels", "memcpy", "memset", "syncs")
    )
    if capture.backend != backend or capture.error:
        raise RuntimeError(f"profile failed: {capture.backend} {capture.error} {capture.warnings}")
    timings = capture.timings
    first_call, later_calls = api_call_costs(capture.records.get("api") or {})
    return {
        "e2e": end - start,
        "run": timings["cell_s"],
        "records": records,
        "memory_records": len(capture.records.get("allocator", {}).get("start", ()))
        + len(capture.records.get("driver_memory", {}).get("start", ())),
        "decode_attr_s": timings.get("decode_s", 0) + (placed - captured),
        "begin_s": timings["begin_s"],
        "finish_s": timings["finish_s"],
        "attr_s": placed - captured,
        "payload_s": end - placed,
        "first_call_s": first_call,
        "later_call_s": later_calls,
        "memory_idle_attr_s": memory_idle_seconds(capture),
        **{key: float(timings.get(key, 0)) for key in PHASES},
    }


# the capture's own timings (seconds) printed beside each gpulens line
PHASES = (
    "enable_s",
    "history_begin_s",
    "api_filter_s",
    "sync_s",
    "flush_s",
    "release_s",
    "api_restore_s",
    "decode_s",
    "memory_s",
)


def api_call_costs(api: dict[str, list[int]]) -> tuple[float, float]:
    """(s, s): the cell's first CUDA call (made or waited for GPU work), and the median of
    the others: a first call far slower is a cost of enabling CUPTI, paid in the cell."""
    calls = sorted(zip(api.get("start", ()), api.get("end", ()), strict=True))
    if len(calls) < 2:
        return 0.0, 0.0
    durations = [(end - begin) / 1e9 for begin, end in calls]
    return durations[0], statistics.median(durations[1:])


def memory_idle_seconds(capture: Any) -> float:
    """The attribution's own time for memory and idle time, run again on the same records."""
    timeline, records = capture.timeline, capture.records
    began = time.perf_counter()
    busy = busy_intervals(records)
    if busy is not None:
        idle_by_line(
            timeline["segments"], busy, timeline["start"], timeline["end"], timeline["start"]
        )
    attribute_memory(
        records,
        call_lines={},
        segments=timeline["segments"],
        start=timeline["start"],
        end=timeline["end"],
        retained_from=timeline["retained_from"],
    )
    return time.perf_counter() - began


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


# (name, memory views) of the gpulens runs, the default first
CONFIGS = (
    ("gpulens", "reserved"),
    ("gpulens, memory all", "all"),
    ("gpulens, memory off", "off"),
)
AFTER_TORCH = "gpulens after torch.profiler"


class Cell:
    """One benchmark cell: its runs, plain and profiled, side by side."""

    def __init__(self, label: str, source: str, namespace: dict[str, Any]) -> None:
        self.label = label
        self.code = compile(source, f"<bench-{label}>", "exec")
        self.namespace = namespace
        exec(self.code, namespace)  # warm: kernels loaded, allocator primed
        self.base: list[dict[str, float]] = []
        self.runs: dict[str, list[dict[str, float]]] = {}
        self.pairs: dict[str, list[dict[str, float]]] = {}

    def run(self, name: str, reps: int, backend: str = "cupti", memory: str = "reserved") -> None:
        for _ in range(reps):
            plain_run = plain(self.code, self.namespace)
            self.base.append(plain_run)
            self.pairs.setdefault(name, []).append(plain_run)
            profiled = with_gpulens(self.code, self.namespace, backend, memory=memory)
            self.runs.setdefault(name, []).append(profiled)

    def report(self) -> None:
        p = median(self.base, "e2e")
        print(f"\n== {self.label}: plain {p * 1e3:.1f} ms (median of {len(self.base)})")
        for name, profiled in self.runs.items():
            # each profiled run over the plain run beside it: the GPU's clocks and the
            # machine's load drift over a run, and a pair sees the same drift
            beside = self.pairs[name]
            pairs = list(zip(profiled, beside, strict=True))
            e2e = statistics.median(r["e2e"] / b["e2e"] for r, b in pairs)
            run = statistics.median(r["run"] / b["e2e"] for r, b in pairs)
            print(
                f"  {name:<30} end to end {median(profiled, 'e2e') * 1e3:9.1f} ms = "
                f"{e2e:5.2f}x   running {median(profiled, 'run') * 1e3:9.1f} ms = {run:5.2f}x"
            )
            if name != "torch.profiler":
                extra = statistics.median(r["run"] - b["e2e"] for r, b in pairs)
                self.breakdown(profiled, extra)
        lens = self.runs["gpulens"]
        records = median(lens, "records")
        decode_attr = median(lens, "decode_attr_s")
        # per 10k records only where there are enough of them for a rate, not a fixed cost
        rate = f" = {decode_attr / records * 1e7:.1f} ms/10k" if records >= 1000 else ""
        print(
            f"  gpulens records {records:.0f}; decode+attribution {decode_attr * 1e3:.1f} ms{rate}"
        )
        everything = self.runs["gpulens, memory all"]
        print(
            f"  memory all: {median(everything, 'memory_records'):.0f} memory records, reading "
            f"torch's history {median(everything, 'memory_s') * 1e3:.1f} ms; memory and idle "
            f"attribution {median(everything, 'memory_idle_attr_s') * 1e3:.1f} ms"
        )

    @staticmethod
    def breakdown(runs: list[dict[str, float]], extra: float) -> None:
        def ms(key: str) -> str:
            return f"{median(runs, key) * 1e3:.2f}"

        print(
            f"    begin {ms('begin_s')} (kinds {ms('enable_s')}, history {ms('history_begin_s')}, "
            f"call filter {ms('api_filter_s')}); cell {extra * 1e3:+.2f} (first CUDA call "
            f"{ms('first_call_s')}, others {ms('later_call_s')}); finish {ms('finish_s')} "
            f"(sync {ms('sync_s')}, sync+flush {ms('flush_s')}, release {ms('release_s')} of "
            f"which calls back on {ms('api_restore_s')}, decode {ms('decode_s')}, history "
            f"{ms('memory_s')}); attribution {ms('attr_s')}; payload {ms('payload_s')}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--torch-reps", type=int, default=1)
    options = parser.parse_args()
    import torch

    print(
        f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
        f"Python {sys.version.split()[0]}"
    )
    cells = [
        Cell("launch-bound 200 steps", LAUNCH_BOUND, launch_namespace(torch, 200)),
        Cell("launch-bound 2000 steps", LAUNCH_BOUND, launch_namespace(torch, 2000)),
        Cell("compute-bound 20 bf16 8192^3", COMPUTE_BOUND, compute_namespace(torch)),
    ]
    for cell in cells:
        for _ in range(options.reps):  # interleaved, so drift hits each alike
            for name, memory in CONFIGS:
                cell.run(name, 1, memory=memory)
    # torch.profiler last: CUPTI keeps its clock (the CPU's cycle counter) from then on
    for cell in cells:
        cell.run("torch.profiler", options.torch_reps, backend="torch")
        cell.run(AFTER_TORCH, max(3, options.torch_reps))
    for cell in cells:
        cell.report()
    print(
        "\ntargets (gpulens, its default memory view and idle time on): launch-bound <= 1.3x "
        "end to end, <= 1.15x running; compute-bound <= 1.05x; <= 50 ms/10k"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
