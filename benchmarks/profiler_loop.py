"""A Python-heavy cell under the profiler: its time over the plain cell's, in one process.

    python benchmarks/profiler_loop.py [--iterations 1500000] [--reps 5] [--compare SERVER_DIR]

The cell is a loop of 1.5M iterations of one statement (3M line events) and no GPU work.
Each rep runs it plainly and profiled, side by side: with the host backend (hits and host
time per line), with a backend that also keeps the line segments GPU records are placed
with by time (what the cupti and torch backends keep), and with the host backend recording
every run (`sample=False`). The ratios are medians over the reps of each profiled run over
the plain run beside it; the target is <= 3x with the host backend on Python 3.12
(`sys.monitoring`, where the loop's lines are sampled past the cell's first 65,536 line
events: `gpulens.profiler.sampling`). Checked each run: the hits recorded whole are exact,
sampled ones never more than the loop ran; printed: the host time the profile gives the
loop's lines against the plain loop's time.

`--compare SERVER_DIR` measures another gpulens (e.g. `git archive <rev> server | tar -x -C
/tmp/before`, then `--compare /tmp/before/server`) in the same run, alternated.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from versions import alternated, run_json, versions

RUN = """\
import inspect, json, sys, time
from gpulens.profiler.capture import profile_code
from gpulens.profiler.capture.host import HostSession

class KeepsSegments(HostSession):
    name = "segments"
    keeps_segments = True

iterations = int(sys.argv[1])
source = "total = 0\\nfor i in range(steps):\\n    total += i\\n"
code = compile(source, "<loop>", "exec")
samples = "sample" in inspect.signature(profile_code).parameters  # a gpulens without: all whole
figures = {}
began = time.perf_counter()
exec(code, {"steps": iterations})
figures["plain"] = time.perf_counter() - began
runs = [
    ("host", HostSession, True),
    ("segments", KeepsSegments, True),
    ("whole", HostSession, False),
]
try:  # on a GPU machine with cupti-python: the backend itself
    from gpulens.profiler.capture.cupti import CuptiSession

    CuptiSession()  # raises where libcupti cannot load
    runs.append(("cupti", CuptiSession, True))
except Exception:
    pass
for name, session, sample in runs:
    options = {"sample": sample} if samples else {}
    began = time.perf_counter()
    capture = profile_code(code, {"steps": iterations}, session(), **options)
    figures[name] = time.perf_counter() - began
    hits, sampled = capture.timeline["hits"], capture.timeline.get("sampled") or []
    if sampled:
        assert 0 < hits[3] <= iterations and 0 < hits[2] <= iterations + 1, hits
    else:
        assert hits[3] == iterations and hits[2] == iterations + 1, hits
    figures[name + "_host"] = (capture.timeline["host"][2] + capture.timeline["host"][3]) / 1e9
    figures[name + "_sampled"] = bool(sampled)
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
        for name, what in (
            ("host", "host backend"),
            ("segments", "segments kept"),
            ("whole", "every run"),
            ("cupti", "cupti backend"),
        ):
            if name not in reps[0]:
                continue
            profiled = statistics.median(r[name] for r in reps)
            ratio = statistics.median(r[name] / r["plain"] for r in reps)
            host = statistics.median(r[name + "_host"] for r in reps)
            sampled = sum(bool(r[name + "_sampled"]) for r in reps)
            target = "  (target <= 3x on 3.12)" if name == "host" else ""
            print(
                f"  {what:<14} {profiled:7.3f} s = {ratio:5.2f}x the plain loop{target}; "
                f"the loop's lines {host:.3f} s host, sampled in {sampled} of {len(reps)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
