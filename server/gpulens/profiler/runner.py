"""Runs a script or one of its `# %%` cells in a subprocess of a given interpreter.

The subprocess (`gpulens.profiler.child`, see there for the wire) gets gpulens on its path,
so the user's interpreter needs only its own packages. It starts with a safe import path
(`-P`: nothing is imported from the working directory) in its own process group, and gets
its job and gives back its payload through pipes: nothing is written to disk.

Whatever the cell does, the caller gets a `gpulens.profile/2.1` payload. On a timeout or a
stop request (`StopRequest`: the CLI forwards SIGINT, SIGTERM and SIGHUP there; the language
server interrupts or kills a `BackgroundProfile`) the child is interrupted (SIGINT, so the
lines that ran are still reported), then killed with its process group if it does not stop
within INTERRUPT_GRACE_S. When the runner returns, for any reason,
nothing of the run is left: the group is killed (workers the cell left behind included).
If the runner's process dies first, even by SIGKILL, the child sees its job stream close
and kills its own group. The child's output is read as it comes: the last OUTPUT_TAIL
characters are kept, and each chunk can be handed on as it arrives (`on_output`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

from gpulens.analysis.encoding import SourceDecodeError, decode_source
from gpulens.analysis.source import source_lines
from gpulens.profiler.capture import MEMORY_BY_DEFAULT
from gpulens.profiler.cells import Cell, cell_at_line, cell_by_number, last_line_of, split_cells
from gpulens.profiler.display import annotate
from gpulens.profiler.report import failed_payload
from gpulens.profiler.timeouts import DEFAULT_TIMEOUT_S

# after the SIGINT (timeout or stop request), how long the child may take to write what it has
INTERRUPT_GRACE_S = 3.0
OUTPUT_TAIL = 4000
_READ_BYTES = 1 << 16
# how often the runner looks at the child, its deadline and stop requests
_POLL_S = 0.02
# once the child is done, how long its output (held open by a process that left the
# group) may take to reach its end
_DRAIN_S = 1.0
# the variables the runner sets for the child's bootstrap, given back to the user's code
_BOOTSTRAP_VARIABLES = ("PYTHONPATH",)


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
    memory: str = MEMORY_BY_DEFAULT,
    sample: bool = True,
) -> dict[str, Any]:
    """The child's job: setup chunks (preamble, cells before) and the target chunk;
    `memory`: the GPU memory views the profile records (`capture.MEMORY_CHOICES`);
    `sample`: a Python-heavy loop's lines may be sampled (False: every run recorded)."""
    if cell is None and line is None:
        return {
            "path": path,
            "args": list(args),
            "backend": backend,
            "memory": memory,
            "sample": sample,
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
        "memory": memory,
        "sample": sample,
        "setup": setup,
        "target": {"cell": chosen.index, "first_line": chosen.first_line, "source": chosen.source},
    }


class OutputTail:
    """The end of the child's output, kept as it arrives, whatever the output's size."""

    def __init__(self, forward: Callable[[bytes], None] | None = None) -> None:
        self._forward = forward
        self._data = bytearray()
        self._keep = OUTPUT_TAIL * 4  # bytes enough for OUTPUT_TAIL characters of UTF-8
        self._lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        if self._forward is not None:
            try:
                self._forward(chunk)
            except Exception:  # a closed terminal must not stop the run
                self._forward = None
        with self._lock:
            self._data += chunk
            if len(self._data) > 2 * self._keep:  # trimmed now and then: linear overall
                del self._data[: -self._keep]

    def text(self) -> str:
        with self._lock:
            data = bytes(self._data[-self._keep :])
        return data.decode(errors="replace")[-OUTPUT_TAIL:]


class _PayloadLine:
    """The child's payload: one JSON line on its stdout. `ready` is set once the line is
    complete; `ended` also when the stream ended without it."""

    def __init__(self) -> None:
        self._data = bytearray()
        self.ready = threading.Event()
        self.ended = threading.Event()

    def add(self, chunk: bytes) -> None:
        if not self.ready.is_set():
            self._data += chunk
            if b"\n" in chunk:
                self.ready.set()
                self.ended.set()

    def value(self) -> dict[str, Any] | None:
        if b"\n" not in self._data:
            return None
        try:
            payload = json.loads(self._data.split(b"\n", 1)[0])
        except ValueError:
            return None
        return payload if isinstance(payload, dict) else None


class StopRequest:
    """A stop asked from outside the run (a signal to the CLI), from any thread or a signal
    handler: the first request interrupts the cell (SIGINT: the lines that ran are still
    reported); a second one, or INTERRUPT_GRACE_S without an answer, kills it."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.count = 0

    def request(self, reason: str) -> None:
        self.reason = self.reason or reason
        self.count += 1


@contextlib.contextmanager
def stop_on_signals(stop: StopRequest) -> Any:
    """While inside, SIGINT, SIGTERM and SIGHUP to this process ask `stop` to stop the run
    (the child runs in a process group of its own, so a terminal's Ctrl-C reaches only us).
    Only the main thread can take signals; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    wanted = [signal.SIGINT, signal.SIGTERM]
    if hasattr(signal, "SIGHUP"):
        wanted.append(signal.SIGHUP)
    previous = {number: signal.getsignal(number) for number in wanted}
    for number in wanted:
        signal.signal(number, lambda n, _frame: stop.request(signal.Signals(n).name))
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def _pump(stream: IO[bytes], sink: Callable[[bytes], None], done: threading.Event) -> None:
    try:
        while chunk := os.read(stream.fileno(), _READ_BYTES):
            sink(chunk)
    except (OSError, ValueError):  # closed under us at the end of the run
        pass
    finally:
        done.set()


def _send_job(stream: IO[bytes], job: dict[str, Any]) -> None:
    """Writes the job line and leaves the stream open: its end tells the child we are gone."""
    try:
        stream.write(json.dumps(job).encode() + b"\n")
        stream.flush()
    except (OSError, ValueError):  # the child died before reading it: its exit says why
        pass


def _start_thread(target: Callable[..., None], *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, name="gpulens-runner", daemon=True)
    thread.start()
    return thread


def _has_exited(process: subprocess.Popen[bytes]) -> bool:
    """Whether the child has exited, leaving it unreaped where the platform allows, so its
    process group id cannot be taken by a new process before the group is killed."""
    if process.returncode is not None:
        return True
    if hasattr(os, "waitid") and hasattr(os, "WNOWAIT"):
        try:
            flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
            return os.waitid(os.P_PID, process.pid, flags) is not None
        except ChildProcessError:  # reaped elsewhere (Popen.poll from another thread)
            pass
    return process.poll() is not None


def _signal_group(process: subprocess.Popen[bytes], number: int) -> None:
    if process.returncode is not None:
        return  # reaped: its group id may belong to someone else by now
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, number)
    elif number != signal.SIGINT:
        with contextlib.suppress(OSError):
            process.kill()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    _signal_group(process, getattr(signal, "SIGKILL", signal.SIGTERM))


def _bootstrap_environment() -> tuple[dict[str, str], dict[str, str | None]]:
    """The child's environment, and the user's values of what it changes (for the child to
    put back before user code runs: subprocesses of the cell see the user's environment)."""
    env = dict(os.environ)
    saved = {name: env.get(name) for name in _BOOTSTRAP_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_server_root(), env.get("PYTHONPATH")]))
    return env, saved


def interpreter_failed(
    source: dict[str, Any], python: str, error: OSError, code: list[str]
) -> dict[str, Any]:
    """The payload of a run whose interpreter could not be started."""
    return failed_payload(
        source,
        f"could not start the interpreter {python!r}: {error.strerror or error}; "
        "point --python (or gpulens.profile.python) at a Python with your packages",
        "InterpreterError",
        code=code,
    )


def run_job(
    job: dict[str, Any],
    python: str | None = None,
    timeout: float | None = None,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
    *,
    cwd: str | None = None,
    on_output: Callable[[bytes], None] | None = None,
    stop: StopRequest | None = None,
) -> dict[str, Any]:
    """Runs a planned job in a subprocess; always returns a payload.

    ``on_start`` receives the subprocess (the leader of its own process group) as soon as
    it runs, so a caller can interrupt or kill it from another thread. ``cwd``: the child's
    working directory (default: ours). ``on_output`` gets the child's output as it comes.
    ``stop``: interrupts the run when requested (see `StopRequest`)."""
    python = python or sys.executable
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    source = {
        "path": job["path"],
        "cell": job["target"]["cell"],
        "first_line": job["target"]["first_line"],
        "last_line": last_line_of(job["target"]["first_line"], job["target"]["source"]),
    }
    code = source_lines(job["target"]["source"])
    env, saved = _bootstrap_environment()
    job = {**job, "environment": saved}
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            # -P: the working directory never shadows gpulens or the standard library;
            # -u: the cell's output arrives as it is printed
            [python, "-P", "-u", "-m", "gpulens.profiler.child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,  # its own group: a stop kills its workers too
        )
    except OSError as error:
        return interpreter_failed(source, python, error, code)
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    output, payload = OutputTail(on_output), _PayloadLine()
    output_done = threading.Event()
    stopped_by: str | None = None
    try:
        if on_start is not None:
            on_start(process)
        _start_thread(_send_job, process.stdin, job)
        _start_thread(_pump, process.stderr, output.add, output_done)
        _start_thread(_pump, process.stdout, payload.add, payload.ended)
        deadline = started + timeout
        interrupted_at: float | None = None
        while not payload.ready.is_set() and not _has_exited(process):
            now = time.monotonic()
            if interrupted_at is None:
                if stop is not None and stop.count:
                    stopped_by = stop.reason
                elif now >= deadline:
                    stopped_by = "timeout"
                if stopped_by is not None:
                    _signal_group(process, signal.SIGINT)
                    interrupted_at = now
            elif now - interrupted_at >= INTERRUPT_GRACE_S or (stop is not None and stop.count > 1):
                _kill_group(process)
            payload.ready.wait(_POLL_S)
    finally:
        _kill_group(process)  # the child itself is done by now: this ends what it left
        process.wait()
        with contextlib.suppress(OSError):
            process.stdin.close()
    payload.ended.wait(_DRAIN_S)
    output_done.wait(_DRAIN_S)
    return _outcome(
        payload.value(),
        process,
        source=source,
        code=code,
        tail=output.text(),
        elapsed=time.monotonic() - started,
        stopped_by=stopped_by,
        timeout=timeout,
    )


def _outcome(
    payload: dict[str, Any] | None,
    process: subprocess.Popen[bytes],
    *,
    source: dict[str, Any],
    code: list[str],
    tail: str,
    elapsed: float,
    stopped_by: str | None,
    timeout: float,
) -> dict[str, Any]:
    """The payload the caller gets, with what stopped the run (if anything) said in it."""
    if stopped_by is not None:
        if stopped_by == "timeout":
            message = (
                f"the cell ran past the {timeout:g} s timeout and was stopped; raise --timeout "
                "(gpulens.profile.timeoutSeconds) or profile fewer steps"
            )
            kind = "Timeout"
        else:
            message = f"the profile was stopped by {stopped_by} before the cell finished"
            kind = "Interrupted"
        if payload is None:
            return failed_payload(source, message, kind, code=code, output=tail, wall_s=elapsed)
        line = (payload.get("error") or {}).get("line")
        payload["error"] = {"type": kind, "message": message, "line": line}
        payload["warnings"].append("lines after the interruption did not run; figures are partial")
    elif payload is None:
        status = process.returncode
        if status is not None and status < 0:
            what = f"was killed by signal {signal.Signals(-status).name}"
        elif "Unknown option: -P" in tail:
            what = "is older than Python 3.11, which gpulens profile needs"
        else:
            what = f"exited with status {status} (os._exit or a crash)"
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
    cwd: str | None = None,
    on_output: Callable[[bytes], None] | None = None,
    stop: StopRequest | None = None,
    nproc_per_node: int | None = None,
    memory: str = MEMORY_BY_DEFAULT,
    timed: bool = False,
    sample: bool = True,
) -> dict[str, Any]:
    """Profiles `path` (or the cell `cell` / the cell holding `line`) in a subprocess;
    `memory`: the GPU memory views it records (`capture.MEMORY_CHOICES`); `sample`: False
    records every run of a Python-heavy loop's lines (see `profile_code`); `timed`: the cell
    then runs once more, unprofiled, its wall time in the payload's `timed` (see
    `child.time_again`).

    `text` is the file's content when the caller has it (an editor's unsaved buffer);
    `cwd` the working directory to run it in (default: ours); `on_output` and `stop` as for
    `run_job`. `nproc_per_node`: run it as that many ranks of a distributed job, through
    torch's launcher (`gpulens.profiler.ranks`), and merge their profiles. Raises
    ProfileRequestError for a request that cannot run; otherwise returns a payload.
    """
    if cwd is not None and not os.path.isdir(cwd):
        raise ProfileRequestError(f"cannot run {path} in {cwd}: no such folder")
    if text is None:
        try:  # read as `gpulens check` reads it: a declared coding is honoured
            text = decode_source(Path(path).read_bytes(), path).text
        except OSError as error:
            raise ProfileRequestError(f"cannot read {path}: {error.strerror or error}") from error
        except SourceDecodeError as error:
            raise ProfileRequestError(str(error)) from None
    job = plan_job(
        os.path.abspath(path),
        text,
        cell=cell,
        line=line,
        args=args,
        backend=backend,
        memory=memory,
        sample=sample,
    )
    job["path"] = os.path.abspath(path)
    if timed:
        job["timed"] = True
    if nproc_per_node is not None:
        from gpulens.profiler.ranks import run_ranks

        payload = run_ranks(
            job,
            nproc_per_node,
            python or sys.executable,
            timeout,
            cwd=cwd,
            on_output=on_output,
            stop=stop,
            on_start=on_start,
        )
    else:
        payload = run_job(job, python, timeout, on_start, cwd=cwd, on_output=on_output, stop=stop)
    payload["source"]["path"] = path
    return annotate(payload)  # its words follow what stopped the run, and the path as given


class BackgroundProfile:
    """`run_profile` on a daemon thread, for a caller whose event loop must stay free.

    ``future`` settles with the payload (a request that cannot run gives a payload that says
    why). ``interrupt()`` stops the cell where it is (SIGINT: the lines that ran are still
    reported) and kills it if it has not stopped INTERRUPT_GRACE_S later; ``kill()`` ends it
    and its process group at once. Interpreter exit does not wait for the thread: the
    subprocess then sees its job stream close and ends its own group.
    """

    def __init__(self, path: str, **options: Any) -> None:
        """``options``: those of `run_profile`, but for ``on_start`` and ``stop``."""
        self.future: Future[dict[str, Any]] = Future()
        self._stop = StopRequest()
        self._process: subprocess.Popen[bytes] | None = None
        self._path = path
        self._options = options
        threading.Thread(target=self._run, name="gpulens-profile", daemon=True).start()

    def interrupt(self, reason: str = "a cancel") -> None:
        self._stop.request(reason)

    def kill(self, reason: str = "a cancel") -> None:
        self._stop.request(reason)
        self._stop.request(reason)  # a second request kills (`StopRequest`)
        process = self._process
        if process is not None:
            _kill_group(process)  # now, not at the runner's next look: we may be exiting

    def _started(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        if self._stop.count > 1:
            _kill_group(process)

    def _run(self) -> None:
        self.future.set_running_or_notify_cancel()
        try:
            payload = run_profile(
                self._path, on_start=self._started, stop=self._stop, **self._options
            )
        except ProfileRequestError as error:
            line = self._options.get("line")
            source = {"path": self._path, "cell": self._options.get("cell"), "first_line": line}
            payload = failed_payload(source, str(error), "RequestError")
        except BaseException as error:
            self.future.set_exception(error)
            return
        self.future.set_result(payload)
