"""Runs a script or one of its `# %%` cells in a subprocess of a given interpreter.

The subprocess (`gpulens.profiler.child`) gets gpulens on its path, so the user's
interpreter needs only its own packages. Whatever the cell does, the caller gets a
`gpulens.profile/1` payload: on a timeout the child is interrupted (SIGINT, so the lines
that ran are still reported), then killed with its process group if it does not stop.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpulens.analysis.encoding import SourceDecodeError, decode_source
from gpulens.analysis.source import source_lines
from gpulens.profiler.cells import Cell, cell_at_line, cell_by_number, last_line_of, split_cells
from gpulens.profiler.report import failed_payload

DEFAULT_TIMEOUT_S = 600.0
# after the SIGINT at the timeout, how long the child may take to write what it has
INTERRUPT_GRACE_S = 5.0
OUTPUT_TAIL = 4000


class ProfileRequestError(ValueError):
    """The request cannot be run (no such cell, unreadable file); the message says why."""


def _server_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def plan_job(
    path: str,
    text: str,
    *,
    cell: int | None = None,
    line: int | None = None,
    args: Sequence[str] = (),
    backend: str = "auto",
) -> dict[str, Any]:
    """The child's job: setup chunks (preamble, cells before) and the target chunk."""
    if cell is None and line is None:
        return {
            "path": path,
            "args": list(args),
            "backend": backend,
            "setup": [],
            "target": {"cell": None, "first_line": 1, "source": text},
        }
    cells = split_cells(text)
    chosen: Cell | None
    if cell is not None:
        chosen = cell_by_number(cells, cell)
        if chosen is None:
            numbered = len(cells) - 1
            raise ProfileRequestError(
                f"{path} has no cell {cell}: it has {numbered} `# %%` cell"
                f"{'' if numbered == 1 else 's'} (numbered from 1; 0 is the code before the first)"
            )
    else:
        assert line is not None
        chosen = cell_at_line(cells, line)
        if chosen is None:
            raise ProfileRequestError(f"{path} has no line {line}")
    setup = [
        {"first_line": c.first_line, "source": c.source}
        for c in cells
        if c.index < chosen.index and not c.markdown and c.source.strip()
    ]
    return {
        "path": path,
        "args": list(args),
        "backend": backend,
        "setup": setup,
        "target": {"cell": chosen.index, "first_line": chosen.first_line, "source": chosen.source},
    }


def _tail(data: bytes) -> str:
    text = data.decode(errors="replace")
    return text[-OUTPUT_TAIL:]


def run_job(
    job: dict[str, Any],
    python: str | None = None,
    timeout: float | None = None,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> dict[str, Any]:
    """Runs a planned job in a subprocess; always returns a payload.

    ``on_start`` receives the subprocess (the leader of its own process group) as soon as
    it runs, so a caller can interrupt or kill it from another thread."""
    python = python or sys.executable
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    source = {
        "path": job["path"],
        "cell": job["target"]["cell"],
        "first_line": job["target"]["first_line"],
        "last_line": last_line_of(job["target"]["first_line"], job["target"]["source"]),
    }
    code = source_lines(job["target"]["source"])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_server_root(), env.get("PYTHONPATH")]))
    env.setdefault("PYTHONUNBUFFERED", "1")
    with tempfile.TemporaryDirectory(prefix="gpulens-profile-") as tmp:
        job_path, out_path = os.path.join(tmp, "job.json"), os.path.join(tmp, "out.json")
        with open(job_path, "w", encoding="utf-8") as handle:
            json.dump(job, handle)
        started = time.perf_counter()
        try:
            process = subprocess.Popen(
                [python, "-m", "gpulens.profiler.child", job_path, out_path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # its own group: a timeout kills its workers too
            )
        except OSError as error:
            return failed_payload(
                source,
                f"could not start the interpreter {python!r}: {error.strerror or error}; "
                "point --python (or gpulens.profile.python) at a Python with your packages",
                "InterpreterError",
                code=code,
            )
        if on_start is not None:
            on_start(process)
        timed_out = False
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            process.send_signal(signal.SIGINT)
            try:
                output, _ = process.communicate(timeout=INTERRUPT_GRACE_S)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                output, _ = process.communicate()
        elapsed = time.perf_counter() - started
        payload: dict[str, Any] | None = None
        if os.path.exists(out_path):
            with open(out_path, encoding="utf-8") as handle:
                payload = json.load(handle)
    tail = _tail(output or b"")
    if timed_out:
        message = (
            f"the cell ran past the {timeout:g} s timeout and was stopped; raise --timeout "
            "(gpulens.profile.timeoutSeconds) or profile fewer steps"
        )
        if payload is None:
            return failed_payload(
                source, message, "Timeout", code=code, output=tail, wall_s=elapsed
            )
        line = (payload.get("error") or {}).get("line")
        payload["error"] = {"type": "Timeout", "message": message, "line": line}
        payload["warnings"].append("lines after the interruption did not run; figures are partial")
    elif payload is None:
        code_value = process.returncode
        if code_value is not None and code_value < 0:
            what = f"was killed by signal {signal.Signals(-code_value).name}"
        else:
            what = f"exited with status {code_value} (os._exit or a crash)"
        return failed_payload(
            source,
            f"the interpreter {what} before the profile could be written; output ends: "
            f"{tail.strip()[-300:] or '(none)'}",
            "InterpreterExit",
            code=code,
            output=tail,
            wall_s=elapsed,
        )
    payload["output"] = tail
    return payload


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def run_profile(
    path: str,
    *,
    text: str | None = None,
    cell: int | None = None,
    line: int | None = None,
    python: str | None = None,
    timeout: float | None = None,
    args: Sequence[str] = (),
    backend: str = "auto",
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> dict[str, Any]:
    """Profiles `path` (or the cell `cell` / the cell holding `line`) in a subprocess.

    `text` is the file's content when the caller has it (an editor's unsaved buffer).
    Raises ProfileRequestError for a request that cannot run; otherwise returns a payload.
    """
    if text is None:
        try:  # read as `gpulens check` reads it: a declared coding is honoured
            text = decode_source(Path(path).read_bytes(), path).text
        except OSError as error:
            raise ProfileRequestError(f"cannot read {path}: {error.strerror or error}") from error
        except SourceDecodeError as error:
            raise ProfileRequestError(str(error)) from None
    job = plan_job(os.path.abspath(path), text, cell=cell, line=line, args=args, backend=backend)
    job["path"] = os.path.abspath(path)
    payload = run_job(job, python=python, timeout=timeout, on_start=on_start)
    payload["source"]["path"] = path
    return payload


def profile_cell(
    path: str, text: str, line: int, python: str | None, timeout: float | None
) -> dict[str, Any]:
    """For the language server: profile the `# %%` cell holding 1-based `line` of `text`."""
    return run_profile(path, text=text, line=line, python=python, timeout=timeout)
