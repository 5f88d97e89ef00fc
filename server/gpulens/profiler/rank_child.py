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

A rank waiting in a collective for a rank that is gone never returns to Python, so the signal's
KeyboardInterrupt never comes (measured on two H200s: the survivor sat in `.item()` behind a
stuck all-reduce until torch's launcher killed it 30 s later, its lines lost). Python still
writes each signal's number to its wakeup fd at once, and the waiting thread has let go of the
GIL: `watch_stops` reads the fd on a thread of its own and, if the cell has not ended
`ABORT_AFTER_S` after a stop, aborts the rank's process groups (torch's NCCL communicators), so
the wait returns, the interrupt lands, and the lines that ran are written.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
from typing import Any

from gpulens.profiler.child import restore_environment, run_job, take_streams, watch_runner

# errors of a rank that was stopped from outside rather than failing on its own
STOPPED = ("Interrupted", "KeyboardInterrupt")
# how long after a stop signal a rank still in its cell is taken to be stuck in a collective
ABORT_AFTER_S = 1.0
ABORTED = (
    "this rank was stopped while it waited for the GPU (a collective whose other ranks had "
    "gone, most likely): its process groups were aborted so that its lines could be reported"
)


def abort_collectives(notes: list[str]) -> None:
    """Aborts this process's torch.distributed process groups, which returns a host thread
    waiting on one of their collectives, and says so in `notes` (first: the main thread may
    write the rank's result the moment the wait returns); nothing where there are none."""
    dist = sys.modules.get("torch.distributed")  # never imported here: only if the job did
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return
        abort = getattr(dist.distributed_c10d, "_abort_process_group", None)
        if abort is None:
            return
        notes.append(ABORTED)
        abort()
    except Exception as error:
        if notes and notes[-1] == ABORTED:
            notes.pop()
        notes.append(f"this rank could not be freed from its wait for the GPU ({error})")


_WAKEUP: list[socket.socket] = []


def watch_stops(done: threading.Event, notes: list[str]) -> None:
    """On SIGTERM or SIGINT while the cell runs: aborts the process groups if the rank has not
    finished `ABORT_AFTER_S` later (see the module docstring)."""
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    # kept for the life of the process: a collected socket closes its fd, whose number the
    # next open file takes, and the signals' bytes would be written into that file
    _WAKEUP.append(writer)
    stops = {int(signal.SIGTERM), int(signal.SIGINT)}

    def watch() -> None:
        while True:
            try:
                got = reader.recv(64)
            except OSError:
                return
            if not got:
                return
            if stops.isdisjoint(got):
                continue
            if not done.wait(ABORT_AFTER_S):
                abort_collectives(notes)
            return

    threading.Thread(target=watch, name="gpulens-stops", daemon=True).start()


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
    done, notes = threading.Event(), list[str]()
    watch_stops(done, notes)
    os.chdir(job["cwd"])  # the launcher ran in the private folder; the script runs here
    result = run_rank(job, rank)
    done.set()
    result["payload"]["warnings"].extend(notes)
    sys.stdout.flush()
    sys.stderr.flush()
    write_result(folder, rank, result)
    error = result["payload"].get("error")
    return 1 if error and error.get("type") not in STOPPED else 0
