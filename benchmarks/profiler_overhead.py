"""Profiler overhead on the device machine, one run, ratios against the plain cell.

Cells: launch-bound (784-512-10 MLP, batch 256, SGD, `.item()` per step; 200 and 2,000
steps) and compute-bound (20 bf16 8192^3 matmuls). Each runs plain, under gpulens
(cupti backend) and under torch.profiler(with_stack=True) aggregated per line; "end to end"
runs from the start of the profile to the per-line result, "running" is the cell alone.
Ratios are medians over pairs of runs side by side (each profiled run over the plain run
next to it).
Targets (DESIGN.md): launch-bound <= 1.3x end to end and <= 1.15x running; compute-bound
<= 1.05x end to end; decode + attribution <= 50 ms per 10k records.

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


def with_gpulens(code: Any, namespace: dict[str, Any], backend: str = "cupti") -> dict[str, float]:
    start = time.perf_counter()
    capture = profile_code(code, namespace, backend)
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
        "decode_attr_s": capture.timings.get("decode_s", 0) + (end - decoded),
        "attr_s": end - decoded,
        "flush_s": capture.timings.get("flush_s", 0),
    }


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def measure(label: str, source: str, namespace: dict[str, Any], reps: int, torch_reps: int) -> None:
    code = compile(source, f"<bench-{label}>", "exec")
    exec(code, namespace)  # warm: kernels loaded, allocator primed
    base: list[dict[str, float]] = []
    lens: list[dict[str, float]] = []
    for _ in range(reps):  # interleaved, so clock drift hits both alike
        base.append(plain(code, namespace))
        lens.append(with_gpulens(code, namespace))
    kineto = []
    for _ in range(torch_reps):
        kineto.append(with_gpulens(code, namespace, "torch"))
        base.append(plain(code, namespace))
    p = median(base, "e2e")
    print(f"\n== {label}: plain {p * 1e3:.1f} ms (median of {len(base)})")
    for name, runs in (("gpulens", lens), ("torch.profiler", kineto)):
        # each profiled run over the plain run beside it: the GPU's clocks and the machine's
        # load drift over a run, and a pair sees the same drift
        pairs = base[:reps] if runs is lens else base[reps:]
        e2e = statistics.median(r["e2e"] / b["e2e"] for r, b in zip(runs, pairs, strict=True))
        run = statistics.median(r["run"] / b["e2e"] for r, b in zip(runs, pairs, strict=True))
        print(
            f"  {name:<15} end to end {median(runs, 'e2e') * 1e3:9.1f} ms = {e2e:5.2f}x   "
            f"running {median(runs, 'run') * 1e3:9.1f} ms = {run:5.2f}x"
        )
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
        "\ntargets: launch-bound <= 1.3x end to end, <= 1.15x running; "
        "compute-bound <= 1.05x; <= 50 ms/10k"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
