"""The profiled process: `python -P -m gpulens.profiler.child`, started by the runner.

Talks to the runner over its three standard streams, so nothing touches the disk:
- stdin carries the job, one JSON line; the runner then keeps it open without writing, so
  its end (EOF) means the runner is gone, killed or not: the child then kills its own
  process group (itself and whatever the cell started) at once. fd 0 is then /dev/null,
  as for a script run with no input.
- stdout carries the payload, one JSON line at the end; fd 1 is pointed at stderr before
  any user code runs, so what the cell prints joins its errors in the runner's output.

Runs the setup chunks (preamble, earlier cells) plainly, then profiles the target chunk,
each compiled with the file's name and real line numbers, in one `__main__` namespace. A
timed job (`"timed": true`, "Measure this fix") then runs the target once more, unprofiled,
and adds its wall time to the payload as `timed` (`time_again`).
Writes the payload whatever the cell does: raises, calls sys.exit, or is interrupted by the
runner's SIGINT. Only os._exit and crashes leave no payload, and the runner reports those.
Imports nothing but the standard library and gpulens.profiler, so any interpreter with the
user's packages can run it. `-P` keeps the working directory off sys.path while gpulens
loads (found through the PYTHONPATH the runner sets); the user's script then gets what
`python script.py` gives it: its own folder first on sys.path, and PYTHONPATH as it was.
"""

from __future__ import annotations

import builtins
import datetime as dt
import gc
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from gpulens.analysis.source import source_lines


def compile_chunk(source: str, path: str, first_line: int) -> Any:
    """Compiled with blank lines ahead, so tracebacks and events carry the file's lines."""
    return compile("\n" * (first_line - 1) + source, path, "exec")


def run_job(
    job: dict[str, Any],
    *,
    on_capture: Callable[[Any], None] | None = None,
    on_attributed: Callable[[Any], None] | None = None,
    quiet_signals: tuple[int, ...] = (signal.SIGINT,),
) -> dict[str, Any]:
    """Runs the job's setup chunks, then its target under a capture backend; its payload.

    ``on_capture`` sees the capture before attribution (a rank adds its collectives' sizes),
    ``on_attributed`` the attribution; ``quiet_signals`` are ignored once the cell is done,
    so a late stop cannot cut the payload short."""
    from gpulens.profiler.attribution import attribute_records
    from gpulens.profiler.capture import (
        MEMORY_BY_DEFAULT,
        describe_error,
        preloaded,
        preloading,
        profile_code,
    )
    from gpulens.profiler.cells import last_line_of
    from gpulens.profiler.report import build_payload, failed_payload

    path = job["path"]
    target = job["target"]
    source_info = {
        "path": path,
        "cell": target.get("cell"),
        "first_line": target["first_line"],
        "last_line": last_line_of(target["first_line"], target["source"]),
    }
    code_lines = source_lines(target["source"])
    sys.argv = [path, *job.get("args", [])]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": path, "__builtins__": builtins}
    # the profiler's modules and backend load while the setup code runs (it imports the
    # user's libraries, seconds), not after it, ahead of the profiled cell
    if job.get("setup"):
        preloading(job.get("backend", "auto"))
    for chunk in job.get("setup", []):
        try:
            exec(compile_chunk(chunk["source"], path, chunk["first_line"]), namespace)
        except BaseException as error:
            detail = describe_error(error, path)
            at = f" at line {detail['line']}" if detail["line"] else ""
            reason = f"{detail['type']}: {detail['message']}"
            return failed_payload(
                source_info,
                f"the code before the profiled cell failed{at}: {reason}",
                "SetupError",
                code=code_lines,
            )
    try:
        code = compile_chunk(target["source"], path, target["first_line"])
    except SyntaxError as error:
        return failed_payload(
            source_info, f"line {error.lineno}: {error.msg}", "SyntaxError", code=code_lines
        )
    preloaded(timeout=None)  # nothing of the profiler's runs beside the profiled cell
    timed = bool(job.get("timed"))
    started = time.perf_counter()
    # once the cell is done, a late SIGINT must not stop the payload being written (a timed
    # run stops listening after its second run instead)
    capture = profile_code(
        code,
        namespace,
        job.get("backend", "auto"),
        after_cell=None if timed else lambda: _ignore(quiet_signals),
        memory=job.get("memory", MEMORY_BY_DEFAULT),
        sample=job.get("sample", True) is not False,
    )
    wall = time.perf_counter() - started
    second: dict[str, Any] | None = None
    if timed:
        second = time_again(code, namespace) if capture.error is None else None
        _ignore(quiet_signals)
    if on_capture is not None:
        on_capture(capture)
    attributing = time.perf_counter()
    attributed = attribute_records(capture.timeline, capture.records)
    if on_attributed is not None:
        on_attributed(attributed)
    timings: dict[str, float | None] = dict(capture.timings)
    timings["attribute_s"] = time.perf_counter() - attributing
    timings["peak_rss_bytes"] = peak_rss_bytes()
    payload = build_payload(
        attributed,
        source=source_info,
        backend=capture.backend,
        gpus=capture.gpus,
        warnings=capture.warnings,
        wall_s=timings.get("cell_s", wall),
        error=capture.error,
        code=code_lines,
        timings=timings,
        time=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    if timed:
        payload["timed"] = second
    return payload


def time_again(code: Any, namespace: dict[str, Any]) -> dict[str, Any]:
    """The cell run once more, unprofiled: `{"wall_s", "error"}`, the wall time from its first
    line until the GPU work it queued is done (`error`: how the run failed, else None).

    The profiled run before it is its warm-up: the kernels the cell launches are loaded, the
    libraries' handles and the allocator's pool made, the GPU's clocks up, so this run holds
    only what the cell itself costs, without the profiler's per-launch costs either."""
    from gpulens.profiler.capture import describe_error
    from gpulens.profiler.gpu_sync import synchronize_gpus

    synchronize_gpus()  # nothing of the profiled run is still queued
    gc.collect()  # the profile's garbage is not collected inside the timed span
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a stop interrupts this run
    started = time.perf_counter()
    try:
        exec(code, namespace)
        synchronize_gpus()
    except BaseException as error:
        return {"wall_s": None, "error": describe_error(error, code.co_filename)}
    return {"wall_s": time.perf_counter() - started, "error": None}


def _ignore(numbers: tuple[int, ...]) -> None:
    for number in numbers:
        signal.signal(number, signal.SIG_IGN)


def peak_rss_bytes() -> int | None:
    """This process's peak resident memory so far, where the platform says."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # macOS counts bytes, Linux KiB


def read_job(fd: int) -> dict[str, Any]:
    """The job: the first line the runner writes (more may follow only as EOF)."""
    data = bytearray()
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise SystemExit("gpulens: the runner closed the job stream before sending a job")
        data += chunk
    job: dict[str, Any] = json.loads(data)
    return job


def watch_runner(fd: int) -> None:
    """Waits for the runner's end of `fd` to close, then ends this process group."""
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass
    kill_own_group()


def kill_own_group() -> None:
    if hasattr(os, "killpg") and os.getpgrp() == os.getpid():
        os.killpg(0, signal.SIGKILL)  # the runner made this process a group leader
    os._exit(1)


def take_streams() -> tuple[int, int]:
    """(job stream, payload stream), private from here on; fds 0 and 1 go to the user."""
    job_fd, payload_fd = os.dup(0), os.dup(1)  # not inherited by what the cell starts
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return job_fd, payload_fd


def restore_environment(saved: dict[str, str | None]) -> None:
    """The variables the runner set for this bootstrap, back to the user's values."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def main() -> int:
    job_fd, payload_fd = take_streams()
    job = read_job(job_fd)
    threading.Thread(
        target=watch_runner, args=(job_fd,), name="gpulens-runner", daemon=True
    ).start()
    restore_environment(job.get("environment", {}))
    payload = run_job(job)
    sys.stdout.flush()
    sys.stderr.flush()
    data = json.dumps(payload).encode() + b"\n"  # one line: JSON escapes every newline
    view = memoryview(data)
    while view:
        view = view[os.write(payload_fd, view) :]
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rank-job"]:  # one rank of `gpulens profile --nproc-per-node N`
        from gpulens.profiler.rank_child import main as rank_main

        status = rank_main(sys.argv[2])
    else:
        status = main()
    # Skip interpreter teardown: threads the cell left running must not hold the run open.
    os._exit(status)
