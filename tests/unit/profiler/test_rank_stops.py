"""A rank's stop watcher (`rank_child.watch_stops`), in a real process sent real signals.

Aborting torch's process groups needs torch and NCCL (tests/gpu/test_ranks_gpu.py checks it on
two GPUs); here the abort is replaced by a recorder, and what is checked is the path to it:
the signal's wakeup byte reaches the watcher (never a file), the watcher waits its grace,
and it stays quiet when the rank finishes in time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = textwrap.dedent(
    """
    import gc, json, os, signal, sys, threading, time
    from gpulens.profiler import rank_child

    calls = []
    rank_child.abort_collectives = lambda notes: calls.append(time.monotonic())
    signal.signal(signal.SIGTERM, lambda number, frame: None)
    done, notes = threading.Event(), []
    rank_child.watch_stops(done, notes)
    gc.collect()
    path, finish_in_time = sys.argv[1], sys.argv[2] == "yes"
    with open(path, "w") as handle:  # takes the lowest free fd
        sent = time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)
        if finish_in_time:
            done.set()
        time.sleep(rank_child.ABORT_AFTER_S + 0.5)
        handle.write("ok")
    print(json.dumps([t - sent for t in calls]))
    """
)


def run(tmp_path: Path, finish_in_time: bool) -> tuple[list[float], str]:
    out = tmp_path / "user-file.txt"
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(out), "yes" if finish_in_time else "no"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(done.stdout), out.read_text()


def test_a_stop_while_the_cell_runs_reaches_the_abort_after_the_grace(tmp_path: Path) -> None:
    calls, written = run(tmp_path, finish_in_time=False)
    assert written == "ok"  # the signal's byte went to the watcher, not into a file
    assert len(calls) == 1 and calls[0] >= 1.0  # ABORT_AFTER_S


def test_a_rank_that_finishes_in_time_is_not_aborted(tmp_path: Path) -> None:
    calls, written = run(tmp_path, finish_in_time=True)
    assert (calls, written) == ([], "ok")
