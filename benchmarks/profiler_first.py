"""What the first profile in a fresh kernel costs over the second, and over the plain cell.

    .venv/bin/python benchmarks/profiler_first.py [--runs 7] [--backend host|cupti|torch]
                                                  [--cold] [--compare SERVER_DIR]

Each run is a fresh interpreter holding an IPython shell, as a fresh Jupyter kernel does: it
runs a small cell plainly, loads the extension (`%load_ext gpulens`) and, a moment later (a
person reads the cell before profiling it), profiles the cell with `%%gpulens`, then again.
Each profile is timed as the magic runs it (the cell, capture, attribution, the payload and
its text and HTML); its fixed cost is its time less the plain cell's. The medians over the
runs, first and second, and their difference: the target is a first profile at most 30 ms
over the plain cell. `--cold` leaves out the pause after loading the extension. A
first run, not counted, learns CUPTI's tables into a cache of the benchmark's own, as the
first profile on a machine does (printed apart: "the machine's first profile ever").

The cupti backend needs the device machine (`--backend cupti`); here the host backend
measures the same path without a GPU. `--setup CODE` runs a first cell before the rest, as
a GPU notebook's imports do (`'import torch'`: NumPy comes with it, which cupti-python
imports too). Run from a source checkout, compile it first (`python -m compileall -q
server`), as an installed wheel is. `--compare SERVER_DIR` measures another gpulens (an
older one: `git archive <rev> server | tar -x -C /tmp/before`) in the same run, alternated.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

from versions import alternated, run_json, versions

# one run, in a fresh interpreter: prints the seconds of the plain cell and of each profile
RUN = """\
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell

backend, pause, setup = sys.argv[1], float(sys.argv[2]), sys.argv[3]
shell = InteractiveShell.instance()
if setup:
    shell.run_cell(setup)  # the notebook's first cell
cell = "total = sum(range(200_000))\\nlabel = f'{total:,}'\\n"
shell.run_cell(cell)  # the interpreter's own first run of it
began = time.perf_counter()
shell.run_cell(cell)
plain = time.perf_counter() - began
began = time.perf_counter()
shell.run_line_magic("load_ext", "gpulens")
load_ext = time.perf_counter() - began
time.sleep(pause)
from gpulens.magic import bundle, profile_cell_in_kernel
figures = {"plain": plain, "load_ext": load_ext}
for run in ("first", "second"):
    began = time.perf_counter()
    payload, _ = profile_cell_in_kernel(shell, cell, backend)
    bundle(payload)
    figures[run] = time.perf_counter() - began
    assert payload["backend"] == backend, payload["warnings"]
print(json.dumps(figures))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--backend", default="host")
    parser.add_argument("--cold", action="store_true", help="profile right after %%load_ext")
    parser.add_argument("--compare", metavar="SERVER_DIR", help="also measure this gpulens")
    parser.add_argument(
        "--setup",
        default="",
        metavar="CODE",
        help="a first cell run before the rest, e.g. 'import torch' (a GPU notebook's imports)",
    )
    options = parser.parse_args()
    pause = 0.0 if options.cold else 1.0
    compared = versions(options.compare)
    # a cache of CUPTI's tables of this benchmark's own: the first run learns them from
    # cupti-python (as the first profile on a machine does), the measured runs read them
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="gpulens-first-")
    learnt = {
        label: run_json(RUN, [options.backend, str(pause), options.setup], server, timeout=300)
        for label, server in compared
    }
    runs = alternated(
        options.runs,
        compared,
        lambda server: run_json(
            RUN, [options.backend, str(pause), options.setup], server, timeout=300
        ),
    )
    print(
        f"Python {sys.version.split()[0]}, {options.backend} backend, {options.runs} fresh "
        f"kernels, {'no pause' if options.cold else f'{pause:g} s'} after %load_ext"
        + (f", first cell: {options.setup!r}" if options.setup else "")
    )
    for label, _ in compared:
        done = runs[label]
        plain = statistics.median(run["plain"] for run in done)
        first = statistics.median(run["first"] - run["plain"] for run in done)
        second = statistics.median(run["second"] - run["plain"] for run in done)
        print(f"{label}: plain cell {plain * 1e3:.1f} ms")
        print(f"  first profile over the plain cell  {first * 1e3:7.1f} ms   (target <= 30 ms)")
        print(f"  second profile over the plain cell {second * 1e3:7.1f} ms")
        print(f"  first over second                  {(first - second) * 1e3:7.1f} ms")
        if "load_ext" in done[0]:  # an editor's "profile cell" runs it right before
            loading = statistics.median(run["load_ext"] for run in done)
            print(f"  %load_ext gpulens before it        {loading * 1e3:7.1f} ms")
        ever = learnt[label]["first"] - learnt[label]["plain"]
        print(f"  the machine's first profile ever   {ever * 1e3:7.1f} ms   (one run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
