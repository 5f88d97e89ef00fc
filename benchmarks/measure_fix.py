""" "Measure this fix" on the device machine: the example training cell (examples/overlap_demo.py)
and a compute-bound cell, each measured as it is and with its GPU001 fix, as the editor's code
action and `gpulens measure-fix` measure them. Prints each result's sentence (medians, p-value,
the runs' spread, the records that changed), then where the noise went: the times compared
(each run's second, unprofiled run of the cell) beside the profiled first runs of the same
processes (what was compared before), and GPU 0's SM clock and power while the runs went on.

Targets: on the training cell the sync count drops and the fix is faster at p <= 0.05, with the
compared runs' spread within ±5 % (the profiled first runs spread ±15 % on the H200); on the
compute-bound cell, where the one wait per step costs next to nothing, the fix is not called
faster.

    python benchmarks/measure_fix.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TRAINING = REPO / "examples" / "overlap_demo.py"
COMPUTE_BOUND = """\
import torch

# %% setup
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
a @ a
torch.cuda.synchronize()

# %% each step eight long matmuls, one read of the result
total = 0.0
for step in range(10):
    b = a
    for _ in range(8):
        b = (b @ a) * 0.011
    total += b.float().mean().item()
print(total)
"""
SPREAD_TARGET = 0.05
CLOCK_EVERY_S = 0.1


class ClockSampler:
    """GPU 0's SM clock and power, read through gpulens's NVML monitor every CLOCK_EVERY_S
    on a thread of this process (not of the measured runs) until `stop`."""

    def __init__(self) -> None:
        from gpulens.device.nvml import NvmlMonitor

        self.samples: list[tuple[int, float]] = []  # (SM clock MHz, power W)
        self._monitor = NvmlMonitor()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(CLOCK_EVERY_S):
            gpus = self._monitor.read()["gpus"]
            if gpus and gpus[0]["sm_clock_mhz"] is not None:
                self.samples.append((int(gpus[0]["sm_clock_mhz"]), float(gpus[0]["power_w"] or 0)))

    def stop(self) -> list[tuple[int, float]]:
        self._done.set()
        self._thread.join()
        self._monitor.close()
        return self.samples


def sync_line(text: str) -> int:
    return next(
        n
        for n, line in enumerate(text.splitlines(), 1)
        if ".item()" in line and not line.lstrip().startswith("#")
    )


def measure(path: Path, runs: int) -> tuple[dict[str, Any], list[tuple[int, float]]]:
    """The measure-fix result, and the (SM clock, power) samples taken meanwhile."""
    line = sync_line(path.read_text(encoding="utf-8"))
    command = [sys.executable, "-m", "gpulens", "measure-fix", str(path), "--line", str(line)]
    sampler = ClockSampler()
    try:
        done = subprocess.run(
            [*command, "--rule", "GPU001", "--runs", str(runs), "--json"],
            capture_output=True,
            text=True,
            check=False,
            cwd=REPO,
        )
    finally:
        samples = sampler.stop()
    if done.returncode != 0:
        raise SystemExit(f"measure-fix failed on {path}: {done.stdout}{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result, samples


def spread(times: Sequence[float]) -> float:
    """Half the range over the median, as measure-fix states the noise."""
    return (max(times) - min(times)) / 2 / statistics.median(times) if times else 0.0


def seconds(times: Sequence[float]) -> str:
    return " ".join(f"{t:.4f}" for t in times)


def report(name: str, result: dict[str, Any], clocks: list[tuple[int, float]]) -> bool:
    """Prints one cell's figures; whether its target was met."""
    before, after, test = result["before"], result["after"], result["test"] or {}
    print(f"{name}: {result['verdict']}, {result['backend']} backend")
    print(f"  {result['message']}")
    print(f"  compared (second run, unprofiled), s: as it is {seconds(before['wall_s'])}")
    print(f"                                       fixed     {seconds(after['wall_s'])}")
    print(
        f"  spread ±{spread(before['wall_s']):.1%} / ±{spread(after['wall_s']):.1%}; "
        f"p faster {test.get('p_faster', float('nan')):.4f}, "
        f"p slower {test.get('p_slower', float('nan')):.4f}"
    )
    profiled_before, profiled_after = before["profiled_wall_s"], after["profiled_wall_s"]
    print(f"  profiled first runs, s: as it is {seconds(profiled_before)}")
    print(f"                          fixed     {seconds(profiled_after)}")
    print(f"  spread ±{spread(profiled_before):.1%} / ±{spread(profiled_after):.1%}")
    if clocks:
        sm, power = [clock for clock, _ in clocks], [watts for _, watts in clocks]
        print(
            f"  GPU 0 over {len(sm)} samples ({CLOCK_EVERY_S:g} s apart): SM clock median "
            f"{statistics.median(sm):.0f} MHz, {min(sm)}–{max(sm)} MHz; power "
            f"{min(power):.0f}–{max(power):.0f} W"
        )
    else:
        print("  GPU 0's clock: no NVML reading")
    if name == "training cell":
        met = (
            result["verdict"] == "faster"
            and max(spread(before["wall_s"]), spread(after["wall_s"])) <= SPREAD_TARGET
        )
        print(f"  target (faster at p <= 0.05, spread within ±5 %): {'met' if met else 'NOT met'}")
    else:
        met = result["verdict"] != "faster"
        print(f"  target (not called faster): {'met' if met else 'NOT met'}")
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each version")
    args = parser.parse_args()
    met = True
    with tempfile.TemporaryDirectory() as folder:
        compute = Path(folder) / "matmuls.py"
        compute.write_text(COMPUTE_BOUND, encoding="utf-8")
        for name, path in (("training cell", TRAINING), ("compute-bound cell", compute)):
            result, clocks = measure(path, args.runs)
            met = report(name, result, clocks) and met
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
