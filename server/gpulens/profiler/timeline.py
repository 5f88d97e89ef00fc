"""The line timeline of a profiled cell: which of its lines the main thread runs, and when.

Events are recorded only for the cell's own code objects (nested functions, lambdas,
comprehensions and class bodies included), stamped by the capture backend's clock so that
GPU records can be placed on them by time. Python >= 3.12 uses `sys.monitoring` local events
(no cost outside the cell's code); 3.11 falls back to `sys.settrace`, whose global hook runs
on every Python call of the thread and costs more (the payload says so).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from types import CodeType
from typing import Any, TypedDict

LINE, START, RETURN = 0, 1, 2

# sys.monitoring tool ids a profiler may take, in order of preference (2 is PROFILER_ID).
_TOOL_IDS = (2, 3, 4)


class LineEvents(TypedDict):
    """Plain columns of line events; `code` indexes `codes` (qualified names, for reading)."""

    t: list[int]
    kind: list[int]
    code: list[int]
    line: list[int]
    codes: list[str]
    start: int
    end: int


def cell_code_objects(code: CodeType) -> list[CodeType]:
    """`code` and every code object nested in it, depth first."""
    found: list[CodeType] = []
    stack = [code]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(const for const in current.co_consts if isinstance(const, CodeType))
    return found


def monitoring_available() -> bool:
    return hasattr(sys, "monitoring")


class LineRecorder:
    """Records LINE/START/RETURN events of the given code objects on the calling thread."""

    def __init__(self, code: CodeType, clock: Callable[[], int]) -> None:
        self.codes = cell_code_objects(code)
        self.clock = clock
        self.method = "sys.monitoring" if monitoring_available() else "sys.settrace"
        self._raw: list[tuple[int, int, Any, int]] = []
        self._tool: int | None = None
        self._previous_trace: Any = None
        self.start_ns = 0
        self.end_ns = 0

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> LineRecorder:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.start_ns = self.clock()
        if self.method == "sys.monitoring":
            self._start_monitoring()
        else:
            self._start_settrace()

    def stop(self) -> None:
        """Idempotent: frees the tool id / trace hook even after a failed start."""
        if self.method == "sys.monitoring":
            self._stop_monitoring()
        else:
            self._stop_settrace()
        if not self.end_ns:
            self.end_ns = self.clock()

    # -- sys.monitoring (3.12+) ------------------------------------------------------------
    def _start_monitoring(self) -> None:
        mon = sys.monitoring  # type: ignore[attr-defined]
        events = mon.events
        tool = next((i for i in _TOOL_IDS if mon.get_tool(i) is None), None)
        if tool is None:
            raise RuntimeError(
                "every sys.monitoring profiler slot is taken by another tool "
                f"({', '.join(str(mon.get_tool(i)) for i in _TOOL_IDS)}); stop it and retry"
            )
        mon.use_tool_id(tool, "gpulens")
        self._tool = tool
        append, clock = self._raw.append, self.clock
        main = threading.get_ident()
        get_ident = threading.get_ident

        # One tuple per event; code objects are mapped to indexes after the run.
        def on_line(code: CodeType, line: int) -> None:
            if get_ident() == main:
                append((clock(), LINE, code, line))

        def on_start(code: CodeType, offset: int) -> None:
            if get_ident() == main:
                append((clock(), START, code, 0))

        def on_return(code: CodeType, offset: int, value: object) -> None:
            if get_ident() == main:
                append((clock(), RETURN, code, 0))

        mon.register_callback(tool, events.LINE, on_line)
        mon.register_callback(tool, events.PY_START, on_start)
        mon.register_callback(tool, events.PY_RESUME, on_start)
        mon.register_callback(tool, events.PY_RETURN, on_return)
        mon.register_callback(tool, events.PY_YIELD, on_return)
        wanted = (
            events.LINE | events.PY_START | events.PY_RESUME | events.PY_RETURN | events.PY_YIELD
        )
        for code in self.codes:
            mon.set_local_events(tool, code, wanted)

    def _stop_monitoring(self) -> None:
        if self._tool is None:
            return
        mon = sys.monitoring  # type: ignore[attr-defined]
        events = mon.events
        tool, self._tool = self._tool, None
        self.end_ns = self.clock()
        # 3.12's free_tool_id leaves events and callbacks behind: clear them first.
        for code in self.codes:
            mon.set_local_events(tool, code, 0)
        for event in (
            events.LINE,
            events.PY_START,
            events.PY_RESUME,
            events.PY_RETURN,
            events.PY_YIELD,
        ):
            mon.register_callback(tool, event, None)
        mon.free_tool_id(tool)

    # -- sys.settrace (3.11) -------------------------------------------------------------
    def _start_settrace(self) -> None:
        wanted = {id(code) for code in self.codes}
        append, clock = self._raw.append, self.clock

        def local(frame: Any, event: str, arg: object) -> Any:
            if event == "line":
                append((clock(), LINE, frame.f_code, frame.f_lineno))
            elif event == "return":
                append((clock(), RETURN, frame.f_code, 0))
            return local

        def global_hook(frame: Any, event: str, arg: object) -> Any:
            # Frames of other code are never traced line by line: returning None is the cost cap.
            if event == "call" and id(frame.f_code) in wanted:
                append((clock(), START, frame.f_code, 0))
                return local
            return None

        self._previous_trace = sys.gettrace()
        sys.settrace(global_hook)
        self._tracing = True

    def _stop_settrace(self) -> None:
        if getattr(self, "_tracing", False):
            self.end_ns = self.clock()
            sys.settrace(self._previous_trace)
            self._tracing = False

    # -- result --------------------------------------------------------------------------
    def events(self) -> LineEvents:
        index = {id(code): i for i, code in enumerate(self.codes)}
        t, kind, code, line = [], [], [], []
        for stamp, event, obj, number in self._raw:
            t.append(stamp)
            kind.append(event)
            code.append(index.get(id(obj), -1))
            line.append(number)
        return LineEvents(
            t=t,
            kind=kind,
            code=code,
            line=line,
            codes=[
                f"{c.co_qualname if hasattr(c, 'co_qualname') else c.co_name}" for c in self.codes
            ],
            start=self.start_ns,
            end=self.end_ns or self.clock(),
        )


def iter_events(events: LineEvents) -> Iterator[tuple[int, int, int, int]]:
    return zip(events["t"], events["kind"], events["code"], events["line"], strict=True)
