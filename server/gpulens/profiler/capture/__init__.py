"""Capture: run a cell's code object under one backend, return its line events and records.

Backends, best first: ``cupti`` (CUPTI activity records through cupti-python, joined to the
line timeline by time), ``torch`` (torch.profiler, joined by time too), ``host`` (hits
and host time only). ``auto`` takes the best one this process can use and says in
``warnings`` why a better one was passed over. Nothing heavy is imported at module level.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Protocol

from gpulens.profiler.capture.clock import (
    ClockScale,
    rescale_events,
    rescale_records,
    rescale_timeline,
    scale_between,
)
from gpulens.profiler.capture.clock import read as read_clock
from gpulens.profiler.timeline import LineEvents, LineRecorder, Timeline

BACKENDS = ("auto", "cupti", "torch", "host")
# GPU memory per line, in the views a profile records: "reserved", the driver's (CUPTI's
# memory records: any framework, the cupti backend) is recorded by default; "all" adds torch's
# caching allocator's ("allocated", from its history: a few µs per allocation while the cell
# runs and as much again to read and place, more than the launch-bound overhead target leaves,
# see benchmarks/profiler_overhead.py and the README); "off" records none
# (`gpulens profile --memory all|off`, `%%gpulens --memory ...`)
MEMORY_CHOICES = ("off", "reserved", "all")
MEMORY_BY_DEFAULT = "reserved"
SETTRACE_WARNING = (
    "Python {version} has no sys.monitoring: lines were traced with sys.settrace, which "
    "runs a hook on every Python call of the main thread and slows call-heavy cells "
    "(Python 3.12+ records lines at a fraction of that cost)"
)


class Session(Protocol):
    """A capture backend. Optional attributes the capture looks for: `keeps_segments`
    (False: no record is placed by time, the line timeline needs no segments),
    `place_calls(segments, retained_from)` (place the calls recorded so far before old
    segments are dropped), `retained_from` (set before `finish`: calls made earlier than
    this cannot be placed by time), `ticks_per_ns` (set before `finish`: the rate `clock`
    ran at, measured over the cell) and `filename` (the cell's file name).

    `clock` stamps the line events and every record `finish` returns (their `start` and
    `end` columns); the capture moves them all onto Unix nanoseconds where it does not run
    at one tick per nanosecond (`capture.clock`)."""

    name: str
    clock: Any
    warnings: list[str]

    def begin(self) -> None: ...
    def finish(self) -> dict[str, Any]: ...
    def gpus(self) -> list[dict[str, Any]]: ...


@dataclass
class Capture:
    backend: str
    timeline: Timeline
    records: dict[str, Any]
    gpus: list[dict[str, Any]]
    warnings: list[str]
    error: dict[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    # the exception the cell raised, for callers that re-raise it (never serialized)
    exception: BaseException | None = None
    recorder: LineRecorder | None = field(default=None, repr=False)
    # the backend's clock onto Unix ns, where it did not run in nanoseconds
    scale: ClockScale | None = None

    def line_events(self) -> LineEvents | None:
        """The raw line events (on the records' clock), for a test fixture; None for a cell
        long enough that they were folded into the timeline as it ran."""
        events = self.recorder.events() if self.recorder is not None else None
        if events is None or self.scale is None:
            return events
        return rescale_events(events, self.scale)


def cupti_holder() -> str | None:
    """Who else holds CUPTI's activity buffers in this process, in words, or None."""
    if os.environ.get("NSYS_PROFILING_SESSION_ID") or os.environ.get("CUDA_INJECTION64_PATH"):
        return "an Nsight tool (nsys/ncu) is attached to this process"
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch._C._autograd._profiler_enabled():
                return "torch.profiler (Kineto) is recording in this process"
        except (AttributeError, RuntimeError):
            pass
    return None


def open_session(
    requested: str = "auto", memory: str = MEMORY_BY_DEFAULT
) -> tuple[Session, list[str]]:
    """The session of the best usable backend, and why better ones were passed over;
    `memory`: the GPU memory views it records too (one of `MEMORY_CHOICES`)."""
    if requested not in BACKENDS:
        raise ValueError(f"unknown backend {requested!r}; choose one of {', '.join(BACKENDS)}")
    if memory not in MEMORY_CHOICES:
        raise ValueError(
            f"unknown memory views {memory!r}; choose one of {', '.join(MEMORY_CHOICES)}"
        )
    warnings: list[str] = []
    holder = cupti_holder()
    if requested in ("auto", "cupti"):
        if holder:
            warnings.append(
                f"CUPTI is held: {holder}; per-line GPU records fell back to host timings"
            )
            requested = "host"
        elif importlib.util.find_spec("cupti") is None:
            if requested == "cupti":
                warnings.append("cupti-python is not installed (pip install 'gpulens[cupti]')")
        else:
            from gpulens.profiler.capture.cupti import CuptiSession, CuptiUnavailable

            try:
                return CuptiSession(memory=memory), warnings
            except CuptiUnavailable as error:
                warnings.append(f"CUPTI backend unavailable: {error}")
        if requested == "auto":
            requested = "torch"
    if requested == "torch":
        if holder:
            warnings.append(f"torch.profiler backend skipped: {holder}")
        elif importlib.util.find_spec("torch") is None:
            warnings.append("no GPU backend: neither cupti-python nor torch is installed")
        else:
            from gpulens.profiler.capture.torch import TorchSession, TorchUnavailable

            try:
                session = TorchSession(memory=memory)
                warnings.append(
                    "torch.profiler backend: copy sizes are not reported; install "
                    "cupti-python (gpulens[cupti]) for them and for cheaper capture"
                )
                return session, warnings
            except TorchUnavailable as error:
                warnings.append(f"torch.profiler backend unavailable: {error}")
    from gpulens.profiler.capture.host import HostSession

    return HostSession(), warnings


def preload(requested: str = "auto") -> None:
    """Loads what a first profile loads on its way, without starting any capture: the
    modules of the capture, attribution and payload, and the backend's library and tables
    (CUPTI's activity kinds and record layouts, NumPy). Run on a thread before the user asks
    for a profile (`%load_ext gpulens`, the child's setup code): a first profile then costs
    what a second one does. Never raises: the profile itself reports what fails."""
    try:
        import gpulens.profiler.attribution
        import gpulens.profiler.display
        import gpulens.profiler.report  # noqa: F401
        from gpulens.profiler.capture.host import HostSession  # noqa: F401

        wanted = requested in ("auto", "cupti") and cupti_holder() is None
        if wanted and importlib.util.find_spec("cupti") is not None:
            from gpulens.profiler.capture.cupti import CuptiSession

            CuptiSession.prepare()
    except Exception:
        pass  # the profile that follows says what went wrong


# preloads started and not yet waited for
_PRELOADING: list[threading.Thread] = []
# the longest a profile waits for a preload (one that hangs is the profile's to report)
PRELOAD_WAIT_S = 30.0


def preloading(requested: str = "auto") -> threading.Thread:
    """`preload` on a daemon thread, started."""
    thread = threading.Thread(
        target=preload, args=(requested,), name="gpulens-preload", daemon=True
    )
    thread.start()
    _PRELOADING.append(thread)
    return thread


def preloaded(timeout: float | None = PRELOAD_WAIT_S) -> None:
    """Waits for the preloads still running. A profile started right after `%load_ext` (an
    editor's "profile cell", a notebook's "Run all") needs what they load; loading it beside
    them instead, the two threads take turns at the GIL and the profile waits a switch
    interval (5 ms) at each of its C calls: 12-18 ms of a first profile, on an H100.
    `timeout` None: as long as they take."""
    while _PRELOADING:
        _PRELOADING.pop().join(timeout)


def describe_error(error: BaseException, filename: str) -> dict[str, Any]:
    """Type, message and the cell line (innermost frame in `filename`) of an exception."""
    line = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    kind = type(error).__name__
    message = str(error)
    if isinstance(error, SystemExit):
        message = f"the cell called sys.exit({error.code!r})"
    elif isinstance(error, KeyboardInterrupt) and not message:
        message = "interrupted"
    elif "out of memory" in message.lower():
        kind = kind if "OutOfMemory" in kind else f"{kind} (GPU out of memory)"
    return {
        "type": kind,
        "message": message.strip().splitlines()[0] if message else "",
        "line": line,
    }


def profile_code(
    code: CodeType,
    namespace: dict[str, Any],
    backend: str | Session = "auto",
    after_cell: Callable[[], None] | None = None,
    *,
    memory: str = MEMORY_BY_DEFAULT,
    sample: bool = True,
) -> Capture:
    """Runs `code` in `namespace` under a backend (a name, or a session to use as it is;
    `memory`: the GPU memory views a named one records too, one of `MEMORY_CHOICES`);
    the cell's exception, if any, is caught and described in `Capture.error` (and kept in
    `Capture.exception`). The backend and the line hooks are always released, also on
    KeyboardInterrupt. `after_cell` runs as soon as the cell's code is done (the child stops
    listening to SIGINT there). `sample`: past its first events, a Python-heavy stretch's
    lines may be sampled (`gpulens.profiler.sampling`); False records every run."""
    if isinstance(backend, str):
        session, warnings = open_session(backend, memory)
    else:
        session, warnings = backend, []
    recorder = LineRecorder(
        code,
        session.clock,
        keep_segments=getattr(session, "keeps_segments", True),
        before_drop=getattr(session, "place_calls", None),
        sample=sample,
    )
    if hasattr(session, "filename"):  # backends that place records by stack frame
        session.filename = code.co_filename
    if recorder.method == "sys.settrace":
        warnings.append(SETTRACE_WARNING.format(version=sys.version.split()[0]))
    error: dict[str, Any] | None = None
    raised: BaseException | None = None
    records: dict[str, Any] = {}
    scale: ClockScale | None = None
    began = time.perf_counter()
    started = ran = began
    first = read_clock(session.clock)
    try:
        session.begin()
        started = time.perf_counter()
        try:
            recorder.start()
            exec(code, namespace)
        except BaseException as exc:  # the cell's own failure is part of the result
            raised = exc
            error = describe_error(exc, code.co_filename)
            # when, on the host's clock: of the ranks of a job that failed, the first to fail
            # names the cause (the others' errors are often its peers losing it)
            error["at"] = time.time()
        finally:
            if after_cell is not None:
                after_cell()
            recorder.stop()
            ran = time.perf_counter()
    finally:
        try:
            timeline = recorder.timeline()
            if hasattr(session, "retained_from"):
                session.retained_from = timeline["retained_from"]
            scale = scale_between(first, read_clock(session.clock))
            if hasattr(session, "ticks_per_ns") and scale is not None:
                session.ticks_per_ns = scale.ticks_per_ns
        finally:
            records = session.finish()
    if scale is not None:
        timeline = rescale_timeline(timeline, scale)
        rescale_records(records, scale)
    finished = time.perf_counter()
    warnings.extend(session.warnings)
    warnings.extend(
        f"placing GPU calls before old line segments were dropped failed ({problem})"
        for problem in dict.fromkeys(recorder.drop_errors)
    )
    # begin: enabling the backend; cell: the cell alone, less the folds of its line
    # timeline (fold_s, when it had any); finish: flush, release, decode
    timings = {
        "begin_s": started - began,
        "cell_s": max(0.0, ran - started - recorder.fold_ns / 1e9),
        "run_s": ran - began,
        "finish_s": finished - ran,
    }
    if recorder.folds:
        timings["folds"] = recorder.folds
        timings["fold_s"] = recorder.fold_ns / 1e9
    timings.update(records.pop("_timings", {}))
    if scale is not None:
        timings["clock_ticks_per_ns"] = scale.ticks_per_ns
    return Capture(
        backend=session.name,
        timeline=timeline,
        records=records,
        gpus=session.gpus(),
        warnings=warnings,
        error=error,
        timings=timings,
        exception=raised,
        recorder=recorder,
        scale=scale,
    )
