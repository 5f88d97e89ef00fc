"""Profiler overhead on the device machine, one run, ratios against the plain cell.

Cells: launch-bound (784-512-10 MLP, batch 256, SGD, `.item()` per step; 200 and 2,000
steps) and compute-bound (20 bf16 8192^3 matmuls). Each runs plain, under gpulens
(cupti backend) with GPU memory recorded (torch's allocator history and CUPTI's memory
records: the default) and without (`memory=False`), and under torch.profiler aggregated per
line; "end to end" runs from the start of the profile to the per-line result (the GPU idle
time per line included), "running" is the cell alone. Ratios are medians over runs side by
side (each profiled run over the plain run next to it).
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
    code: Any, namespace: dict[str, Any], backend: str = "cupti", memory: bool = True
) -> dict[str, float]:
    start = time.perf_counter()
    capture = profile_code(code, namespace, backend, memory=memory)
    decoded = time.perf_counter()
    attributed = attribute_records(capture.timeline, capture.records)
    build_payload(attributed, source={"path": "bench"}, backend=capture.backend)
    end = time.perf_counter()
    records = sum(
        len(capture.records.get(family, {}).get("corr", ()))
        for family in ("api", "kernels", "memcpy", "memset", "syncs")
    )
    if capture.backend != backend or capture.error:
        raise RuntimeError(f"profile failed: {capture.backend} {capture.error} {capture.warnings}")
    return {
        "e2e": end - start,
        "run": capture.timings["cell_s"],
        "begin_s": capture.timings["begin_s"],
        "records": records,
        "memory_records": len(capture.records.get("allocator", {}).get("start", ()))
        + len(capture.records.get("driver_memory", {}).get("start", ())),
        "decode_attr_s": capture.timings.get("decode_s", 0) + (end - decoded),
        "attr_s": end - decoded,
        "flush_s": capture.timings.get("flush_s", 0),
        "memory_s": capture.timings.get("memory_s", 0),
        "memory_idle_attr_s": memory_idle_seconds(capture),
    }


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


def measure(label: str, source: str, namespace: dict[str, Any], reps: int, torch_reps: int) -> None:
    code = compile(source, f"<bench-{label}>", "exec")
    exec(code, namespace)  # warm: kernels loaded, allocator primed
    base: list[dict[str, float]] = []
    runs: dict[str, list[dict[str, float]]] = {"gpulens": [], "gpulens, no memory": []}
    pairs: dict[str, list[dict[str, float]]] = {"gpulens": [], "gpulens, no memory": []}
    for _ in range(reps):  # interleaved, so clock drift hits each alike
        for name, memory in (("gpulens", True), ("gpulens, no memory", False)):
            plain_run = plain(code, namespace)
            base.append(plain_run)
            pairs[name].append(plain_run)
            runs[name].append(with_gpulens(code, namespace, memory=memory))
    runs["torch.profiler"], pairs["torch.profiler"] = [], []
    for _ in range(torch_reps):
        runs["torch.profiler"].append(with_gpulens(code, namespace, "torch"))
        pairs["torch.profiler"].append(plain(code, namespace))
        base.append(pairs["torch.profiler"][-1])
    p = median(base, "e2e")
    print(f"\n== {label}: plain {p * 1e3:.1f} ms (median of {len(base)})")
    for name, profiled in runs.items():
        # each profiled run over the plain run beside it: the GPU's clocks and the machine's
        # load drift over a run, and a pair sees the same drift
        beside = pairs[name]
        e2e = statistics.median(r["e2e"] / b["e2e"] for r, b in zip(profiled, beside, strict=True))
        run = statistics.median(r["run"] / b["e2e"] for r, b in zip(profiled, beside, strict=True))
        print(
            f"  {name:<20} end to end {median(profiled, 'e2e') * 1e3:9.1f} ms = {e2e:5.2f}x   "
            f"running {median(profiled, 'run') * 1e3:9.1f} ms = {run:5.2f}x"
        )
    lens = runs["gpulens"]
    records = median(lens, "records")
    decode_attr = median(lens, "decode_attr_s")
    # per 10k records only where there are enough of them for a rate, not a fixed cost
    rate = f" = {decode_attr / records * 1e7:.1f} ms/10k" if records >= 1000 else ""
    print(
        f"  gpulens records {records:.0f}; flush {median(lens, 'flush_s') * 1e3:.1f} ms; "
        f"decode+attribution {decode_attr * 1e3:.1f} ms{rate} "
        f"(attribution alone {median(lens, 'attr_s') * 1e3:.1f} ms); "
        f"begin {median(lens, 'begin_s') * 1e3:.1f} ms"
    )
    print(
        f"  memory: {median(lens, 'memory_records'):.0f} records, reading torch's history "
        f"{median(lens, 'memory_s') * 1e3:.1f} ms; memory and idle attribution "
        f"{median(lens, 'memory_idle_attr_s') * 1e3:.1f} ms"
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
    measure(
        "launch-bound 200 steps",
        LAUNCH_BOUND,
        launch_namespace(torch, 200),
        options.reps,
        options.torch_reps,
    )
    measure(
        "launch-bound 2000 steps",
        LAUNCH_BOUND,
        launch_namespace(torch, 2000),
        options.reps,
        options.torch_reps,
    )
    measure(
        "compute-bound 20 bf16 8192^3",
        COMPUTE_BOUND,
        compute_namespace(torch),
        options.reps,
        options.torch_reps,
    )
    print(
        "\ntargets (gpulens, memory and idle on): launch-bound <= 1.3x end to end, "
        "<= 1.15x running; compute-bound <= 1.05x; <= 50 ms/10k"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
