"""A Python-heavy cell under the profiler: its time over the plain cell's, in one process.

    python benchmarks/profiler_loop.py [--iterations 1500000] [--reps 5] [--compare SERVER_DIR]

The cell is a loop of 1.5M iterations of one statement (3M line events) and no GPU work.
Each rep runs it plainly and profiled, side by side: with the host backend (hits and host
time per line), and with a backend that also keeps the line segments GPU records are placed
with by time (what the cupti and torch backends keep). The ratios are medians over the reps
of each profiled run over the plain run beside it; the target is <= 3x with the host backend
on Python 3.12 (`sys.monitoring`). The hits of the loop's lines are checked exact.

`--compare SERVER_DIR` measures another gpulens (e.g. `git archive <rev> server | tar -x -C
/tmp/before`, then `--compare /tmp/before/server`) in the same run, alternated.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from versions import alternated, run_json, versions

RUN = """\
import json, sys, time
from gpulens.profiler.capture import profile_code
from gpulens.profiler.capture.host import HostSession

class KeepsSegments(HostSession):
    name = "segments"
    keeps_segments = True

iterations = int(sys.argv[1])
source = "total = 0\\nfor i in range(steps):\\n    total += i\\n"
code = compile(source, "<loop>", "exec")
figures = {}
began = time.perf_counter()
exec(code, {"steps": iterations})
figures["plain"] = time.perf_counter() - began
for name, session in (("host", HostSession), ("segments", KeepsSegments)):
    began = time.perf_counter()
    capture = profile_code(code, {"steps": iterations}, session())
    figures[name] = time.perf_counter() - began
    hits = capture.timeline["hits"]
    assert hits[3] == iterations and hits[2] == iterations + 1, hits
print(json.dumps(figures))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1_500_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--compare", metavar="SERVER_DIR", help="also measure this gpulens")
    options = parser.parse_args()
    compared = versions(options.compare)
    runs = alternated(
        options.reps,
        compared,
        lambda server: run_json(RUN, [str(options.iterations)], server, timeout=900),
    )
    method = "sys.monitoring" if sys.version_info >= (3, 12) else "sys.settrace"
    print(
        f"Python {sys.version.split()[0]} ({method}), {options.iterations:,} iterations "
        f"({2 * options.iterations + 1:,} line events), {options.reps} reps"
    )
    for label, _ in compared:
        reps = runs[label]
        plain = statistics.median(r["plain"] for r in reps)
        print(f"{label}: plain {plain:.3f} s")
        for name, what in (("host", "host backend"), ("segments", "segments kept")):
            profiled = statistics.median(r[name] for r in reps)
            ratio = statistics.median(r[name] / r["plain"] for r in reps)
            target = "  (target <= 3x on 3.12)" if name == "host" else ""
            print(f"  {what:<14} {profiled:7.3f} s = {ratio:5.2f}x the plain loop{target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
