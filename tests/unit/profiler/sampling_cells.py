"""Cells profiled for the sampling tests, run as a script by an interpreter with
`sys.monitoring` (Python 3.12+): `python sampling_cells.py NAME` prints the cell's payload
and its timeline's sampling figures as JSON. `gpulens` is imported from PYTHONPATH.

The backend is `cell_calls.CellCalls`: the cell's `launch()` is its "GPU call", one kernel
each, placed on the line timeline by time as CUPTI's records are.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from cell_calls import CellCalls  # beside this script

from gpulens.profiler import sampling
from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.capture import profile_code
from gpulens.profiler.report import build_payload

STEPS, EVERY = 1_200_000, 100_000

CELLS = {
    # a Python-heavy loop, and a branch taken now and then that makes a GPU call
    "loop": """\
total = 0
for i in range(steps):
    total += i
    if i % every == 0:
        launch()
""",
    # the GPU call made by a line that runs every time, fast
    "hot call": """\
total = 0
for i in range(steps):
    total += launch() if i % every == 0 else i
""",
}


def profiled(name: str, steps: int, sample: bool) -> dict[str, Any]:
    session = CellCalls(placing=True)
    code = compile(CELLS[name], "<cell>", "exec")
    namespace = {"steps": steps, "every": EVERY, "launch": session.launch}
    capture = profile_code(code, namespace, session, sample=sample)
    assert capture.error is None, capture.error
    payload = build_payload(
        attribute_records(capture.timeline, capture.records),
        source={"path": "<cell>", "first_line": 1},
        backend=capture.backend,
        warnings=capture.warnings,
        code=CELLS[name].splitlines(keepends=True),
    )
    return {
        "payload": payload,
        "sampled": capture.timeline["sampled"],
        "quiet": len(capture.timeline["quiet"]),
        "calls": len(session.calls),
        "total": namespace["total"],
    }


if __name__ == "__main__":
    cell, steps, sample = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "sample"
    # a loaded machine preempts the cell often enough that no stretch counts as steady, and
    # the loop is then recorded whole (as it should be); these cells check what sampling
    # does once it starts, so every run counts as fast
    sampling.FAST_NS = 10**12
    print(json.dumps(profiled(cell, steps, sample)))
