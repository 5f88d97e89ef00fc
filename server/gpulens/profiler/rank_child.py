"""One rank of `gpulens profile --nproc-per-node N`: `python -P -u -m gpulens.profiler.child
--rank-job FOLDER`, started by torch's launcher (`gpulens.profiler.launch`).

It runs the job in FOLDER/job.json as the single-process child does (same capture backend,
same payload), in the folder the user ran from, and writes what the merge needs to
FOLDER/rank-<RANK>.json: its payload and each NCCL collective it ran (line, start, time).
Before user code it turns on torch's flight recorder, whose entries give each collective's
bytes. Standard input is the runner's pipe, inherited through the launcher: its end means
the runner is gone, and this rank then kills its own process group (torch made it the leader
of one). SIGTERM, which torch's launcher sends the other ranks when one fails, and SIGINT,
which it forwards when the runner stops the job, interrupt the cell like Ctrl-C: the lines
that ran are still written. The exit status is 1 when the cell raised, as for `python
script.py`, so that torch's launcher stops the other ranks rather than leave them waiting in
a collective for this one.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any

from gpulens.profiler.child import restore_environment, run_job, take_streams, watch_runner

# errors of a rank that was stopped from outside rather than failing on its own
STOPPED = ("Interrupted", "KeyboardInterrupt")


def collectives_of(lines: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Each NCCL collective of the attribution's lines, in start order, as columns."""
    found = sorted(
        (begin, ns, name, cost["line"])
        for cost in lines
        for begin, ns, name in cost.get("collectives", {}).get("sequence", [])
    )
    return {
        "start": [row[0] for row in found],
        "ns": [row[1] for row in found],
        "name": [row[2] for row in found],
        "line": [row[3] for row in found],
    }


def _interrupt(number: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"stopped by {signal.Signals(number).name}")


def run_rank(job: dict[str, Any], rank: int) -> dict[str, Any]:
    """The rank's result: its payload, its collectives, and (for a test fixture, when the
    job asks) its raw capture."""
    from gpulens.profiler.collectives import (
        flight_recorder_entries,
        size_collectives,
        turn_on_flight_recorder,
    )

    turn_on_flight_recorder()
    result: dict[str, Any] = {"rank": rank}
    warnings: list[str] = []

    def on_capture(capture: Any) -> None:
        entries = flight_recorder_entries()
        if entries is not None and capture.records.get("kernels"):
            timeline = capture.timeline
            warnings.extend(
                size_collectives(capture.records, entries, timeline["start"], timeline["end"])
            )
        if job.get("keep_capture"):
            result["capture"] = {
                "backend": capture.backend,
                "events": capture.line_events(),
                "records": capture.records,
                "flight_recorder": entries,
                "gpus": capture.gpus,
                "error": capture.error,
            }

    def on_attributed(attributed: Any) -> None:
        result["collectives"] = collectives_of(attributed["lines"])

    payload = run_job(
        job,
        on_capture=on_capture,
        on_attributed=on_attributed,
        quiet_signals=(signal.SIGINT, signal.SIGTERM),
    )
    payload["warnings"].extend(warnings)
    result["payload"] = payload
    result.setdefault("collectives", {"start": [], "ns": [], "name": [], "line": []})
    return result


def write_result(folder: str, rank: int, result: dict[str, Any]) -> None:
    """Written whole or not at all: the runner reads only complete results."""
    path = os.path.join(folder, f"rank-{rank}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(result, handle, default=str)
    os.replace(path + ".tmp", path)


def main(folder: str) -> int:
    watch_fd, payload_fd = take_streams()
    os.close(payload_fd)  # the profile goes to FOLDER; fd 1 now joins stderr
    threading.Thread(
        target=watch_runner, args=(watch_fd,), name="gpulens-runner", daemon=True
    ).start()
    with open(os.path.join(folder, "job.json"), encoding="utf-8") as handle:
        job = json.load(handle)
    restore_environment(job.get("environment", {}))
    rank = int(os.environ.get("RANK", "0"))
    signal.signal(signal.SIGTERM, _interrupt)
    os.chdir(job["cwd"])  # the launcher ran in the private folder; the script runs here
    result = run_rank(job, rank)
    sys.stdout.flush()
    sys.stderr.flush()
    write_result(folder, rank, result)
    error = result["payload"].get("error")
    return 1 if error and error.get("type") not in STOPPED else 0
