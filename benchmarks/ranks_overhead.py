"""Overhead of `gpulens profile --nproc-per-node N` against plain torchrun, end to end.

The launch-bound cell of `profiler_overhead.py` (784-512-10 MLP, batch 256, SGD, `.item()`
per step), trained with DDP on every rank, launched the same way twice per pair: by
`python -m torch.distributed.run --standalone --nproc-per-node N` (plain), and by
`gpulens profile --nproc-per-node N --format json` (profiled, every rank captured with the
default backend, the ranks' profiles merged). End to end: from starting the command to its
exit, report written. In the loop: each rank times its own training loop (synchronized before
and after) and the slowest rank's time is the job's, which leaves out what end to end is mostly
made of on a few hundred steps (torchrun's start, NCCL's set-up, the interpreters' exit).
Ratios are medians over pairs run side by side.
Target (DESIGN.md, per rank as on one GPU): <= 1.3x end to end.

    python benchmarks/ranks_overhead.py [--nproc 2] [--steps 200] [--reps 5]   (device machine)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER = str(Path(__file__).resolve().parents[1] / "server")
SCRIPT = """
import os
import time
import torch
import torch.distributed as dist
import torch.nn.functional as F

rank = int(os.environ["RANK"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
model = torch.nn.parallel.DistributedDataParallel(model.cuda(), device_ids=[rank])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(256, 784, device="cuda")
target = torch.randint(0, 10, (256,), device="cuda")
torch.cuda.synchronize()
began = time.perf_counter()
for step in range({steps}):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(data), target)
    loss.backward()
    opt.step()
    loss.item()
torch.cuda.synchronize()
with open(os.path.join(os.environ["LOOP_TIMES"], f"{{rank}}.txt"), "w") as out:
    out.write(str(time.perf_counter() - began))
dist.destroy_process_group()
"""


def timed(command: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """(end to end, the slowest rank's loop) in seconds."""
    loops = env["LOOP_TIMES"]
    for name in os.listdir(loops):
        os.remove(os.path.join(loops, name))
    began = time.perf_counter()
    subprocess.run(
        command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    took = time.perf_counter() - began
    return took, max(float(Path(loops, name).read_text()) for name in os.listdir(loops))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SERVER, env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as folder:
        env["LOOP_TIMES"] = os.path.join(folder, "loops")
        os.mkdir(env["LOOP_TIMES"])
        script = os.path.join(folder, "train_ddp.py")
        Path(script).write_text(SCRIPT.format(steps=args.steps), encoding="utf-8")
        n = f"--nproc-per-node={args.nproc}"
        plain = [sys.executable, "-P", "-m", "torch.distributed.run", "--standalone", n, script]
        profiled = [sys.executable, "-P", "-m", "gpulens", "profile", n, script, "--format", "json"]
        profiled += ["-o", os.path.join(folder, "profile.json")]
        timed(plain, folder, env)  # warm: first NCCL and CUDA start, page cache
        plains, profiles = [], []
        for _ in range(args.reps):
            plains.append(timed(plain, folder, env))
            profiles.append(timed(profiled, folder, env))
    for what, index in (("end to end", 0), ("in the loop (slowest rank)", 1)):
        plain_s = statistics.median(p[index] for p in plains)
        profiled_s = statistics.median(p[index] for p in profiles)
        ratios = [b[index] / a[index] for a, b in zip(plains, profiles, strict=True)]
        print(
            f"{args.nproc} ranks, {args.steps} steps, {what}: plain torchrun {plain_s:.3f} s, "
            f"gpulens profile {profiled_s:.3f} s (medians of {args.reps}); "
            f"{statistics.median(ratios):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in ratios)}); "
            "target <= 1.3x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
