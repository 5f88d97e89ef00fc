"""Memory and interrupt latency of a long, Python-heavy profiled cell.

The line timeline is bounded (folded into per-line figures as the cell runs, segments
capped), so a profiled loop of 3M iterations (6M line events) must cost <= 50 MB more than
the same loop run plainly, and an interrupted tight loop must answer within 1 s.

- memory, end to end: `gpulens profile` of the loop vs `python loop.py`, each the peak
  resident memory of the largest process of the run (the CLI or its child);
- memory with segments kept: the same loop profiled in one process by a backend that keeps
  the segments GPU records are placed with (the cupti and torch backends keep them; the
  host backend needs none), against the loop run plainly in a process with the same imports;
- interrupt: a tight loop runs under `gpulens profile` for --spin seconds, then the CLI gets
  SIGINT; the time until it has written the report and exited.

    python benchmarks/profiler_memory.py [--iterations 3000000] [--spin 8] [--reps 3]
                                         [--backend host]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "server"
LOOP = """\
import sys
total = 0
for i in range(int(sys.argv[1])):
    total += i
"""
SPINNER = """\
import os, pathlib, sys
pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))
total = 0
while True:
    total += 1
"""
# the loop in one process: plainly, or profiled by a backend that keeps its segments
IN_PROCESS = """\
import resource, sys, time
from gpulens.profiler.capture import profile_code
from gpulens.profiler import timeline

class KeepsSegments:
    name = "segments"
    clock = staticmethod(time.perf_counter_ns)
    warnings = []
    def begin(self): pass
    def finish(self): return {}
    def gpus(self): return []

path, mode, iterations = sys.argv[1:]
code = compile(open(path).read(), path, "exec")
sys.argv = [path, iterations]
if mode == "plain":
    exec(code, {"__name__": "__main__"})
    segments = 0
else:
    capture = profile_code(code, {"__name__": "__main__"}, KeepsSegments())
    segments = len(capture.timeline["segments"]["t"])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, segments)
"""
MEASURE = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def peak_kb(command: list[str], cwd: Path) -> int:
    """The largest peak resident memory among `command` and the processes it waited for."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *command],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}")
    return int(done.stdout.split()[-1])


def gpulens(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpulens", *args]


def memory_end_to_end(folder: Path, iterations: int, backend: str) -> dict[str, float]:
    script = folder / "loop.py"
    script.write_text(LOOP)
    out = folder / "report.json"
    began = time.perf_counter()
    plain = peak_kb([sys.executable, str(script), str(iterations)], folder)
    plain_s = time.perf_counter() - began
    began = time.perf_counter()
    command = gpulens("profile", str(script), "--backend", backend, "--format", "json")
    profiled = peak_kb([*command, "-o", str(out), "--", str(iterations)], folder)
    profiled_s = time.perf_counter() - began
    payload = json.loads(out.read_text())
    hits = {line["line"]: line["hits"] for line in payload["lines"]}
    if hits.get(4) != iterations:
        raise SystemExit(f"wrong hits on the loop body: {hits.get(4)} for {iterations}")
    timings = payload["timings"]
    return {
        "plain_mb": plain / 1024,
        "profiled_mb": profiled / 1024,
        "child_mb": (timings.get("peak_rss_bytes") or 0) / 2**20,
        "extra_mb": (profiled - plain) / 1024,
        "events": sum(hits.values()),
        "folds": timings.get("folds", 0),
        "plain_s": plain_s,
        "profiled_s": profiled_s,
        "backend": payload["backend"],
    }


def memory_with_segments(folder: Path, iterations: int) -> dict[str, float]:
    script = folder / "loop.py"
    script.write_text(LOOP)
    paths = [str(SERVER), os.environ.get("PYTHONPATH")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    figures = {}
    for mode in ("plain", "profiled"):
        done = subprocess.run(
            [sys.executable, "-c", IN_PROCESS, str(script), mode, str(iterations)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        peak, segments = done.stdout.split()
        figures[f"{mode}_mb"] = int(peak) / 1024
        figures["segments"] = int(segments)
    figures["extra_mb"] = figures["profiled_mb"] - figures["plain_mb"]
    return figures


def interrupt_latency(folder: Path, spin_s: float, backend: str) -> float:
    script = folder / "spin.py"
    script.write_text(SPINNER)
    pid_file = folder / "spin.pid"
    pid_file.unlink(missing_ok=True)
    out = folder / "spin.json"
    command = gpulens("profile", str(script), "--backend", backend, "--format", "json")
    cli = subprocess.Popen(
        [*command, "-o", str(out), "--", str(pid_file)], cwd=folder, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().isdigit()):
        if time.monotonic() > deadline or cli.poll() is not None:
            cli.kill()
            raise SystemExit("the spinning script did not start")
        time.sleep(0.01)
    time.sleep(spin_s)
    interrupted = time.perf_counter()
    cli.send_signal(signal.SIGINT)
    cli.wait(timeout=300)
    answered = time.perf_counter() - interrupted
    payload = json.loads(out.read_text())
    if payload["error"]["type"] != "Interrupted" or not payload["lines"]:
        raise SystemExit(f"the interrupted run reported {payload['error']}")
    return answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=3_000_000)
    parser.add_argument("--spin", type=float, default=8.0, help="seconds before the SIGINT")
    parser.add_argument("--reps", type=int, default=3, help="interrupts to time")
    parser.add_argument("--backend", default="host", help="the CLI's --backend")
    options = parser.parse_args()
    print(
        f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{'sys.monitoring' if sys.version_info >= (3, 12) else 'sys.settrace'}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run = memory_end_to_end(folder, options.iterations, options.backend)
        print(
            f"memory, {options.iterations:,} iterations ({run['events']:,} line events, "
            f"{run['backend']} backend, {run['folds']} folds): plain {run['plain_mb']:.1f} MB, "
            f"profiled {run['profiled_mb']:.1f} MB (child {run['child_mb']:.1f} MB): "
            f"+{run['extra_mb']:.1f} MB (target <= 50); {run['plain_s']:.1f} s plain, "
            f"{run['profiled_s']:.1f} s profiled"
        )
        kept = memory_with_segments(folder, options.iterations)
        print(
            f"memory with the segments GPU backends keep ({kept['segments']:,} kept): plain "
            f"{kept['plain_mb']:.1f} MB, profiled {kept['profiled_mb']:.1f} MB: "
            f"+{kept['extra_mb']:.1f} MB (target <= 50)"
        )
        latencies = [
            interrupt_latency(folder, options.spin, options.backend) for _ in range(options.reps)
        ]
        print(
            f"interrupt after a {options.spin:g} s tight loop, {options.reps} runs: median "
            f"{statistics.median(latencies):.2f} s, max {max(latencies):.2f} s (target <= 1 s)"
        )


if __name__ == "__main__":
    main()
