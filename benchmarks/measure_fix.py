""" "Measure this fix" on the device machine: the example training cell (examples/overlap_demo.py)
and a compute-bound cell, each measured as it is and with its GPU001 fix, as the editor's code
action and `gpulens measure-fix` measure them. Prints each result's sentence: the medians, the
runs' ranges (the noise), the verdict and the records that changed.

Targets: on the training cell the sync count drops and the fix is faster beyond the
noise; on the compute-bound cell, where the one wait per step costs next to nothing, the result
says the fix is not faster.

    python benchmarks/measure_fix.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
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


def sync_line(text: str) -> int:
    return next(
        n
        for n, line in enumerate(text.splitlines(), 1)
        if ".item()" in line and not line.lstrip().startswith("#")
    )


def measure(path: Path, runs: int) -> dict[str, Any]:
    line = sync_line(path.read_text(encoding="utf-8"))
    command = [sys.executable, "-m", "gpulens", "measure-fix", str(path), "--line", str(line)]
    done = subprocess.run(
        [*command, "--rule", "GPU001", "--runs", str(runs), "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    if done.returncode != 0:
        raise SystemExit(f"measure-fix failed on {path}: {done.stdout}{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each version")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        compute = Path(folder) / "matmuls.py"
        compute.write_text(COMPUTE_BOUND, encoding="utf-8")
        for name, path in (("training cell", TRAINING), ("compute-bound cell", compute)):
            result = measure(path, args.runs)
            before, after = result["before"], result["after"]
            print(f"{name}: {result['verdict']}, {result['backend']} backend")
            print(f"  {result['message']}")
            print(f"  as it is (s): {' '.join(f'{t:.4f}' for t in before['wall_s'])}")
            print(f"  fixed (s):    {' '.join(f'{t:.4f}' for t in after['wall_s'])}")


if __name__ == "__main__":
    main()
