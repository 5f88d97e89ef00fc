"""Runs a script (or one of its cells) as N ranks of a distributed job, each profiled.

`run_ranks` starts torch's own launcher (`python -P -m gpulens.profiler.launch FOLDER`, which
runs `torch.distributed.run --standalone`: a rendezvous on a free local port) in its own
process group, with FOLDER, a private temporary folder, as its working directory. Each rank is
the profiled child of a single-process run (`child.py`, through `rank_child.py`), started with
`-P`; it changes to the user's folder only to run the user's code. The job and each rank's
profile pass through FOLDER; nothing is written in the user's folder, and FOLDER is removed
when the run ends, whatever ended it.

Stopping: a stop request or the timeout sends SIGINT to the launcher, which forwards it to
every rank (the lines that ran are still written), and INTERRUPT_GRACE_S later the launcher's
group is killed. Then the launcher's standard input, a pipe each rank inherited, is closed: a
rank still alive sees it end and kills its own process group (torch starts each rank in a
session of its own). If the runner's process dies first, even by SIGKILL, the pipe closes the
same way.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from gpulens.analysis.source import source_lines
from gpulens.profiler.cells import last_line_of
from gpulens.profiler.merge import RankResult, merge_ranks
from gpulens.profiler.report import failed_payload
from gpulens.profiler.runner import (
    _DRAIN_S,
    _POLL_S,
    INTERRUPT_GRACE_S,
    OutputTail,
    StopRequest,
    _bootstrap_environment,
    _has_exited,
    _kill_group,
    _pump,
    _signal_group,
    _start_thread,
    interpreter_failed,
)
from gpulens.profiler.timeouts import DEFAULT_TIMEOUT_S

_RANK_FILE = re.compile(r"^rank-(\d+)\.json$")
# how long a removal of the run's folder is retried while ranks that were killed let go of it
_REMOVE_FOR_S = 2.0
NEEDS_TORCH = (
    "the ranks of a distributed job are launched with torch.distributed.run: install torch "
    "in that interpreter, or point gpulens.profile.python (--python) at one that has it"
)


def _write_json(path: str, value: Any) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(value, handle)


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _remove(folder: str) -> None:
    """Removes the run's folder; a rank killed a moment ago may still be letting go of it."""
    deadline = time.monotonic() + _REMOVE_FOR_S
    while True:
        try:
            shutil.rmtree(folder)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() >= deadline:
                shutil.rmtree(folder, ignore_errors=True)
                return
            time.sleep(0.05)


def run_ranks(
    job: dict[str, Any],
    nproc_per_node: int,
    python: str,
    timeout: float | None = None,
    *,
    cwd: str | None = None,
    on_output: Callable[[bytes], None] | None = None,
    stop: StopRequest | None = None,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> dict[str, Any]:
    """Runs a planned job (see `runner.plan_job`) as `nproc_per_node` ranks; always returns
    the merged payload (`merge.merge_ranks`). Options as for `runner.run_job`."""
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    target = job["target"]
    source = {
        "path": job["path"],
        "cell": target["cell"],
        "first_line": target["first_line"],
        "last_line": last_line_of(target["first_line"], target["source"]),
    }
    code = source_lines(target["source"])
    env, saved = _bootstrap_environment()
    folder = tempfile.mkdtemp(prefix="gpulens-ranks-")  # mode 0700: this user's alone
    started = time.monotonic()
    try:
        _write_json(
            os.path.join(folder, "job.json"),
            {**job, "environment": saved, "cwd": os.path.abspath(cwd or os.getcwd())},
        )
        _write_json(
            os.path.join(folder, "launch.json"),
            {"nproc_per_node": nproc_per_node, "python": python},
        )
        try:
            process = subprocess.Popen(
                [python, "-P", "-m", "gpulens.profiler.launch", folder],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=folder,
                env=env,
                start_new_session=True,
            )
        except OSError as error:
            return interpreter_failed(source, python, error, code)
        output = OutputTail(on_output)
        stopped_by = _supervise(process, output, started + timeout, stop, on_start)
        elapsed = time.monotonic() - started
        return _collect(
            folder,
            nproc_per_node,
            source=source,
            code=code,
            tail=output.text(),
            elapsed=elapsed,
            stopped_by=stopped_by,
            timeout=timeout,
            status=process.returncode,
        )
    finally:
        _remove(folder)


def _supervise(
    process: subprocess.Popen[bytes],
    output: OutputTail,
    deadline: float,
    stop: StopRequest | None,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None,
) -> str | None:
    """Waits for the launcher, stopping it on request or at the deadline; what stopped it."""
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    done = [threading.Event(), threading.Event()]
    stopped_by: str | None = None
    try:
        if on_start is not None:
            on_start(process)
        _start_thread(_pump, process.stdout, output.add, done[0])
        _start_thread(_pump, process.stderr, output.add, done[1])
        interrupted_at: float | None = None
        while not _has_exited(process):
            now = time.monotonic()
            if interrupted_at is None:
                if stop is not None and stop.count:
                    stopped_by = stop.reason
                elif now >= deadline:
                    stopped_by = "timeout"
                if stopped_by is not None:
                    _signal_group(process, 2)  # SIGINT: torch forwards it to every rank
                    interrupted_at = now
            elif now - interrupted_at >= INTERRUPT_GRACE_S or (stop is not None and stop.count > 1):
                _kill_group(process)
            time.sleep(_POLL_S)
    finally:
        _kill_group(process)
        process.wait()
        with contextlib.suppress(OSError):
            process.stdin.close()  # every rank still alive sees it end and ends its group
    for event in done:
        event.wait(_DRAIN_S)
    return stopped_by


def _collect(
    folder: str,
    size: int,
    *,
    source: dict[str, Any],
    code: list[str],
    tail: str,
    elapsed: float,
    stopped_by: str | None,
    timeout: float,
    status: int | None,
) -> dict[str, Any]:
    """The merged payload from what the ranks and the launcher left in `folder`."""
    launched = _read_json(os.path.join(folder, "launch-result.json")) or {}
    results: list[RankResult] = []
    for name in sorted(os.listdir(folder)):
        match = _RANK_FILE.match(name)
        found = _read_json(os.path.join(folder, name)) if match else None
        if isinstance(found, dict) and isinstance(found.get("payload"), dict):
            results.append(found)  # type: ignore[arg-type]
    if not results and launched.get("error"):
        return failed_payload(
            source,
            f"{launched['error']}; {NEEDS_TORCH}",
            "InterpreterError",
            code=code,
            output=tail,
            wall_s=elapsed,
        )
    if not results and "Unknown option: -P" in tail:
        message = "the interpreter is older than Python 3.11, which gpulens profile needs"
        return failed_payload(source, message, "InterpreterExit", code=code, output=tail)
    reported = {result["rank"] for result in results}
    failures = {
        int(rank): message
        for rank, message in (launched.get("failures") or {}).items()
        if int(rank) not in reported
    }
    for rank in range(size):
        if rank not in reported and rank not in failures:
            failures[rank] = (
                "it was stopped before it could write its profile"
                if stopped_by is not None
                else f"it wrote no profile (the launcher exited with status {status})"
            )
    payload = merge_ranks(
        results,
        world_size=size,
        failures=failures,
        source=source,
        code=code,
        wall_s=max((float(r["payload"].get("wall_s") or 0) for r in results), default=elapsed),
        time=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    if stopped_by is not None:
        if stopped_by == "timeout":
            message = (
                f"the job ran past the {timeout:g} s timeout and was stopped; raise --timeout "
                "(gpulens.profile.timeoutSeconds) or profile fewer steps"
            )
            kind = "Timeout"
        else:
            message = f"the profile was stopped by {stopped_by} before the job finished"
            kind = "Interrupted"
        line = (payload.get("error") or {}).get("line")
        payload["error"] = {"type": kind, "message": message, "line": line}
        payload["warnings"].append("lines after the interruption did not run; figures are partial")
    payload["output"] = tail
    captures = {str(r["rank"]): r.get("capture") for r in results if r.get("capture")}
    if captures:  # asked for by the job, to record a test fixture
        payload["rank_captures"] = captures
    if payload.get("lines") == [] and not results:
        payload["error"] = payload.get("error") or {
            "type": "InterpreterExit",
            "message": f"no rank wrote a profile; output ends: {tail.strip()[-300:] or '(none)'}",
            "line": None,
        }
    return payload
