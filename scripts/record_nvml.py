"""Record what NVML answers on this machine, for the recorded backend to replay in tests.

    PYTHONPATH=server python scripts/record_nvml.py --out tests/fixtures/nvml/h200x1.json

Every call ``gpulens.device.nvml`` makes is recorded (through ``RecordingBackend``) under the key
the replay looks up, so tests run the same reading code as this machine did. Snapshots:

- ``idle``: as found;
- ``loaded``: while a child process holds 1 GiB on every GPU and runs matmuls (torch), so the
  process list and utilization are not empty.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from gpulens.device.nvml import NvmlMonitor, PynvmlBackend
from gpulens.device.recorded import RECORDING_SCHEMA, RecordingBackend

LOAD_SCRIPT = """
import sys, time, torch
tensors = []
for i in range(torch.cuda.device_count()):
    tensors.append(torch.empty(1 << 30, dtype=torch.uint8, device=f"cuda:{i}"))
    a = torch.randn(8192, 8192, device=f"cuda:{i}", dtype=torch.bfloat16)
    tensors.append(a)
torch.cuda.synchronize()
print("ready", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for i in range(torch.cuda.device_count()):
        a = tensors[2 * i + 1]
        for _ in range(20):
            a @ a
    torch.cuda.synchronize()
"""


def record_snapshot(label: str) -> dict[str, Any]:
    recording = RecordingBackend(PynvmlBackend())
    monitor = NvmlMonitor(recording)
    started = time.perf_counter()
    reading = monitor.read()
    first_s = time.perf_counter() - started
    monitor.close()
    return {
        "label": label,
        "first_read_s": round(first_s, 6),  # includes nvmlInit
        "reading": reading,  # what the reader made of it, for eyes; tests rebuild it
        "calls": recording.calls,
    }


def record_loaded(seconds: float) -> dict[str, Any] | None:
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", LOAD_SCRIPT, str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
        )
    except OSError:
        return None
    assert child.stdout is not None
    line = child.stdout.readline()
    if line.strip() != "ready":
        child.wait()
        return None
    time.sleep(min(2.0, seconds / 2))  # utilization is averaged over the last sample period
    snapshot = record_snapshot("loaded")
    snapshot["load_pid"] = child.pid
    child.wait()
    return snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--load-seconds", type=float, default=6.0)
    args = parser.parse_args()
    snapshots = [record_snapshot("idle")]
    loaded = record_loaded(args.load_seconds)
    if loaded is not None:
        snapshots.append(loaded)
    recording = {
        "schema": RECORDING_SCHEMA,
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "snapshots": snapshots,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(recording, indent=1) + "\n", encoding="utf-8")
    gpus = snapshots[0]["reading"]["gpus"]
    print(f"recorded {len(snapshots)} snapshot(s) of {len(gpus)} GPU(s) into {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
