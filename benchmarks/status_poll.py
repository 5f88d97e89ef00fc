"""What a status refresh costs, against the tools people use today, in the same run.

python benchmarks/status_poll.py refresh [--rounds 200]
    one full gpulens refresh of every GPU (target <= 1 ms) vs `nvidia-smi --query-gpu`
    and `gpustat --json` (if installed) per refresh, with ratios.

python benchmarks/status_poll.py lsp-idle [--seconds 60] [--interval 1]
    the language server's own CPU time while idle with status polling
    (target <= 0.5 % of one core), read from /proc/<pid>/stat.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

NVIDIA_SMI_QUERY = (
    "index,uuid,name,utilization.gpu,memory.used,memory.total,temperature.gpu,"
    "power.draw,power.limit,clocks.sm"
)


def _timed(fn, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def _describe(name: str, samples: list[float]) -> dict[str, Any]:
    ordered = sorted(samples)
    return {
        "name": name,
        "rounds": len(samples),
        "median_ms": round(statistics.median(ordered) * 1000, 4),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 4),
    }


def bench_refresh(rounds: int, tool_rounds: int) -> dict[str, Any]:
    from gpulens.device.nvml import NvmlMonitor, PynvmlBackend
    from gpulens.device.recorded import RecordingBackend

    # Count the calls of one refresh with a recording wrapper, but time a plain monitor:
    # the wrapper's bookkeeping is not part of what the server pays.
    counting = RecordingBackend(PynvmlBackend())
    counter = NvmlMonitor(counting)
    counter.read()
    counting.calls.clear()
    counter.read()
    counter.close()
    monitor = NvmlMonitor(PynvmlBackend())
    start = time.perf_counter()
    first = monitor.read()
    init_ms = (time.perf_counter() - start) * 1000
    if not first["available"]:
        return {"error": first["reason"]}
    ours = _describe("gpulens NvmlMonitor.read (all GPUs)", _timed(monitor.read, rounds))
    results: dict[str, Any] = {
        "gpus": len(first["gpus"]),
        "nvml_calls_per_refresh": len(counting.calls),
        "first_read_with_init_ms": round(init_ms, 3),
        "gpulens": ours,
    }
    monitor.close()
    if shutil.which("nvidia-smi"):
        command = ["nvidia-smi", f"--query-gpu={NVIDIA_SMI_QUERY}", "--format=csv"]
        results["nvidia_smi"] = _describe(
            "nvidia-smi --query-gpu --format=csv",
            _timed(lambda: subprocess.run(command, capture_output=True, check=True), tool_rounds),
        )
    if shutil.which("gpustat"):
        results["gpustat"] = _describe(
            "gpustat --json",
            _timed(
                lambda: subprocess.run(["gpustat", "--json"], capture_output=True, check=True),
                tool_rounds,
            ),
        )
    for tool in ("nvidia_smi", "gpustat"):
        if tool in results:
            results[f"{tool}_over_gpulens"] = round(
                results[tool]["median_ms"] / ours["median_ms"], 1
            )
    return results


# --- the language server's idle CPU -------------------------------------------------------------


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _reader(stream, counts: dict[str, int]) -> None:
    """Drain the server's stdout (a full pipe would stall it) and count status notifications."""
    while True:
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            chunk = stream.read(1)
            if not chunk:
                return
            header += chunk
        length = int(
            next(
                line.split(b":")[1]
                for line in header.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        body = json.loads(stream.read(length))
        if body.get("method") == "gpulens/status":
            counts["status"] += 1
            counts["last_state"] = body["params"].get("frameworks_state")  # type: ignore[assignment]


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """(own user+system, waited-for children's) CPU seconds of ``pid``, from /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    own = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    children = (int(fields[13]) + int(fields[14])) / tick  # cutime, cstime
    return own, children


def bench_lsp_idle(seconds: float, interval: float, settle: float) -> dict[str, Any]:
    module = ["gpulens", "serve"]
    env = dict(os.environ)
    env["PYTHONPATH"] = (
        str(Path(__file__).resolve().parents[1] / "server") + os.pathsep + env.get("PYTHONPATH", "")
    )
    server = subprocess.Popen(
        [sys.executable, "-m", *module], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
    )
    assert server.stdin is not None
    assert server.stdout is not None
    counts: dict[str, int] = {"status": 0}
    threading.Thread(target=_reader, args=(server.stdout, counts), daemon=True).start()

    def send(message: dict[str, Any]) -> None:
        server.stdin.write(_frame({"jsonrpc": "2.0", **message}))  # type: ignore[union-attr]
        server.stdin.flush()  # type: ignore[union-attr]

    send(
        {
            "id": 1,
            "method": "initialize",
            "params": {"processId": os.getpid(), "rootUri": None, "capabilities": {}},
        }
    )
    send({"method": "initialized", "params": {}})
    send(
        {
            "method": "workspace/didChangeConfiguration",
            "params": {"settings": {"gpulens": {"statusIntervalSeconds": interval}}},
        }
    )
    # start-up and the one framework probe are not idle time: wait for the probe's result
    # (a loaded machine can take longer than any fixed settle time), then settle
    deadline = time.monotonic() + 60
    while counts.get("last_state") != "ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(settle)
    own0, kids0 = _cpu_seconds(server.pid)
    seen0 = counts["status"]
    wall0 = time.monotonic()
    time.sleep(seconds)
    own1, kids1 = _cpu_seconds(server.pid)
    wall = time.monotonic() - wall0
    notifications = counts["status"] - seen0
    send({"id": 2, "method": "shutdown", "params": None})
    send({"method": "exit", "params": None})
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
    return {
        "server": " ".join(module),
        "interval_s": interval,
        "window_s": round(wall, 2),
        "notifications": notifications,
        "cpu_s": round(own1 - own0, 3),
        "cpu_pct_of_core": round(100 * (own1 - own0) / wall, 3),
        "children_cpu_s_in_window": round(kids1 - kids0, 3),  # >0 would mean a re-probe
        "target_pct": 0.5,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    refresh = sub.add_parser("refresh")
    refresh.add_argument("--rounds", type=int, default=500)
    refresh.add_argument("--tool-rounds", type=int, default=20)
    idle = sub.add_parser("lsp-idle")
    idle.add_argument("--seconds", type=float, default=60.0)
    idle.add_argument("--interval", type=float, default=1.0)
    idle.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    args = parser.parse_args()
    if args.mode == "refresh":
        result = bench_refresh(args.rounds, args.tool_rounds)
    else:
        result = bench_lsp_idle(args.seconds, args.interval, args.settle)
    if args.json:
        print(json.dumps(result))
        return 0
    for key, value in result.items():
        print(f"{key:32} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
