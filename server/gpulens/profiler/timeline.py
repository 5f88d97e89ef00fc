"""The line timeline of a profiled cell: which of its lines the main thread runs, and when.

Events are recorded only for the cell's own code objects (nested functions, lambdas,
comprehensions and class bodies included), stamped by the capture backend's clock so that
GPU records can be placed on them by time. Python >= 3.12 uses `sys.monitoring` local events
(no cost outside the cell's code); 3.11 falls back to `sys.settrace`, whose global hook runs
on every Python call of the thread and costs more (the payload says so).

Memory stays flat whatever the cell does: the callbacks walk each event as it comes
(`event_handlers`: what `TimelineWalker.feed` does with recorded events) into hits and host
time per line and the segments that say which line ran when; no event is kept, but the
first `RAW_EVENTS_KEPT` of a short cell, for test fixtures. The segments are what GPU
records are placed with, so they are kept, but at most `SEGMENTS_KEPT`: every
`RAW_EVENTS_KEPT` events (a fold), past that, the backend is asked to place the calls it
already has (`before_drop`) and the oldest half is dropped. An interrupted cell has nothing
left to walk before it can answer.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from array import array
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import CodeType
from typing import Any, NamedTuple, TypedDict, final

from gpulens.profiler import sampling
from gpulens.profiler.sampling import Sampling

LINE, START, RETURN = 0, 1, 2
# line number of a segment where the main thread ran none of the cell's lines
OUTSIDE = 0
# events between two folds, and the raw events a short cell keeps for test fixtures
RAW_EVENTS_KEPT = 65_536
# segments kept for placing GPU records by time (12 B each); past that the oldest half goes
SEGMENTS_KEPT = 1_000_000

# sys.monitoring tool ids a profiler may take, in order of preference (2 is PROFILER_ID).
_TOOL_IDS = (2, 3, 4)


@final  # so that `"segments" in events` tells it from a Timeline
class LineEvents(TypedDict):
    """Plain columns of line events; `code` indexes `codes` (qualified names, for reading)."""

    t: list[int]
    kind: list[int]
    code: list[int]
    line: list[int]
    codes: list[str]
    start: int
    end: int


class Segments(TypedDict):
    """Where the main thread was: `line[i]` from `t[i]` until `t[i + 1]` (OUTSIDE: none)."""

    t: Sequence[int]
    line: Sequence[int]


@final
class Timeline(TypedDict):
    """A walked timeline: per-line hits and host ns, and the segments kept.

    `retained_from`: segments before this time were dropped to bound memory (it is `start`
    when none were), so a GPU call made earlier cannot be placed from `segments`.
    `sampled`: the lines that ran unrecorded in `quiet` stretches (start, end): their hits
    count the runs recorded, their host time includes an estimate of the quiet stretches'
    (`gpulens.profiler.sampling`)."""

    segments: Segments
    hits: dict[int, int]
    host: dict[int, int]
    start: int
    end: int
    retained_from: int
    sampled: list[int]
    quiet: list[tuple[int, int]]


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


def line_at(segments: Segments, t: int) -> int:
    """The line the main thread was on at time `t` (OUTSIDE before the first segment)."""
    i = bisect_right(segments["t"], t) - 1
    return segments["line"][i] if i >= 0 else OUTSIDE


def place_calls(
    placed: dict[int, tuple[int, int]],
    calls: Iterable[tuple[int, int]],
    segments: Segments,
    retained_from: int,
) -> None:
    """Adds to `placed` (corr -> (start, line)) the line each call (corr, start) was made
    from, for calls made within the segments kept; a corr keeps its earliest start."""
    for corr, begin in calls:
        if begin < retained_from or (corr in placed and placed[corr][0] <= begin):
            continue
        placed[corr] = (begin, line_at(segments, begin))


def placed_columns(placed: dict[int, tuple[int, int]]) -> dict[str, list[int]]:
    """`placed` as the `placed` record columns attribution reads."""
    corrs = list(placed)
    return {
        "corr": corrs,
        "start": [placed[c][0] for c in corrs],
        "line": [placed[c][1] for c in corrs],
    }


class TimelineWalker:
    """Replays line events in order, batch after batch, with a frame stack.

    Host time is inclusive, as in line_profiler: a caller's line keeps running while a
    cell-defined function it called runs. A frame left by an exception sends no RETURN, so
    a LINE event of a frame lower on the stack pops the frames above it. Feeding the events
    in any number of batches gives the same result as feeding them at once.
    """

    def __init__(self, start: int, keep_segments: bool = True) -> None:
        self.start = start
        self.keep_segments = keep_segments
        self.hits: defaultdict[int, int] = defaultdict(int)
        self.host: defaultdict[int, int] = defaultdict(int)
        self.seg_t = array("q")
        self.seg_line = array("i")
        self.retained_from = start
        # each frame: [code index, current line or None, time that line began]
        self.stack: list[list[Any]] = []
        self._last = OUTSIDE  # the line of the newest segment
        self._last_t: int | None = None  # and its start
        self.sync: Callable[[], None] = lambda: None  # see `event_handlers`
        self.settle: Callable[[int], None] = lambda end: None  # ends a quiet stretch
        # sampled lines (runs left unrecorded, host time estimated) and the quiet stretches
        self.sampled: set[int] = set()
        self.quiet: list[tuple[int, int]] = []

    def feed(
        self, events: Iterable[tuple[int, int, Any, int]], index: dict[int, int] | None = None
    ) -> None:
        """Walks `events` (t, kind, code, line); with `index`, `code` is a code object
        mapped to its index by id."""
        # the hot loop of a long cell: one pass, locals only, the common case first
        stack, hits, host = self.stack, self.hits, self.host
        add_t, add_line = self.seg_t.append, self.seg_line.append
        seg_line, keep = self.seg_line, self.keep_segments
        last, last_t = self._last, self._last_t
        seen, code = None, -1
        is_line, is_start, is_return, outside = LINE, START, RETURN, OUTSIDE
        for now, kind, recorded, line in events:
            if index is None:
                code = recorded
            elif recorded is not seen:  # events mostly come from one code object in a row
                seen, code = recorded, index.get(id(recorded), -1)
            if kind == is_line:
                if not stack or stack[-1][0] != code:
                    if any(frame[0] == code for frame in stack):
                        while stack[-1][0] != code:
                            _charge(stack, stack.pop(), now, host)
                    else:  # a frame entered before recording began
                        stack.append([code, None, now])
                top = stack[-1]
                if top[1] is not None:
                    if len(stack) == 1:
                        host[top[1]] += now - top[2]
                    else:
                        _charge(stack, top, now, host)
                top[1] = current = line
                top[2] = now
                hits[line] += 1
            else:
                if kind == is_start:
                    stack.append([code, None, now])
                elif kind == is_return and any(frame[0] == code for frame in stack):
                    while stack:
                        frame = stack.pop()
                        _charge(stack, frame, now, host)
                        if frame[0] == code:
                            break
                current = outside
                for frame in reversed(stack):
                    if frame[1] is not None:
                        current = frame[1]
                        break
            if current != last:
                if keep:
                    if now == last_t:
                        seg_line[-1] = current
                    else:
                        add_t(now)
                        add_line(current)
                        last_t = now
                last = current
        self._last, self._last_t = last, last_t

    def pause(self, ns: int) -> None:
        """`ns` of the profiler's own work (a fold) are not charged to the running lines."""
        for frame in self.stack:
            frame[2] += ns

    def segments(self) -> Segments:
        return Segments(t=self.seg_t, line=self.seg_line)

    def drop_oldest(self, keep: int) -> None:
        """Keeps the newest `keep` segments; calls made before them can no longer be placed."""
        self.sync()
        extra = len(self.seg_t) - keep
        if extra <= 0:
            return
        del self.seg_t[:extra]
        del self.seg_line[:extra]
        self.retained_from = self.seg_t[0] if self.seg_t else self.start

    def finish(self, end: int) -> Timeline:
        """Charges the frames still open up to `end`; the walked timeline."""
        self.settle(end)
        self.sync()
        stack = self.stack
        for frame in reversed(stack):
            _charge(stack, frame, end, self.host)
        stack.clear()
        if self.keep_segments and self._last != OUTSIDE:
            self.seg_t.append(end)
            self.seg_line.append(OUTSIDE)
        self._last = OUTSIDE
        return Timeline(
            segments=self.segments(),
            hits=dict(self.hits),
            host=dict(self.host),
            start=self.start,
            end=end,
            retained_from=self.retained_from,
            sampled=sorted(self.sampled),
            quiet=list(self.quiet),
        )


Handler = Callable[..., Any]


class Handlers(NamedTuple):
    """What `event_handlers` gives."""

    line: Handler  # (code, line)
    start: Handler  # (code, …): a frame starts or resumes
    end: Handler  # (code, …): a frame returns or yields
    traced: Handler  # a `sys.settrace` local trace function doing all three
    stop_recording: Callable[[], None]  # no more raw events


def _ignored(*_: object) -> None:
    """No events before the recorder starts."""


def event_handlers(
    walker: TimelineWalker,
    clock: Callable[[], int],
    every: int,
    tick: Callable[[], None],
    *,
    raw: list[tuple[int, int, Any, int]] | None = None,
    thread: int | None = None,
    sampling: Sampling | None = None,
) -> Handlers:
    """Callbacks for (code, line), (code, …) at a frame's start and at its return, that walk
    each event as it comes (what `TimelineWalker.feed` does with a recorded one; the stack
    holds code objects here) and call ``tick`` every ``every`` events; the same as a
    `sys.settrace` local trace function. Nothing is kept per event (but in ``raw`` until
    `Handlers.stop_recording`, for a short cell's fixture): a Python-heavy cell's millions
    of events cost only their walk. Events of threads other than ``thread`` are left out.
    With ``sampling`` (sys.monitoring only), once ``raw`` is stopped, the lines of fast
    stretches go quiet (see `gpulens.profiler.sampling`)."""
    stack, hits, host = walker.stack, walker.hits, walker.host
    get_ident = threading.get_ident
    other = thread is not None
    add_t, add_line, seg_line = walker.seg_t.append, walker.seg_line.append, walker.seg_line
    keep = walker.keep_segments
    # the newest segment's line and start, and the events left before the next tick
    last, last_t, countdown = walker._last, walker._last_t, every
    # sampling: the recorded stretch (events left, whether all its events came from
    # `window_frame`, its slow runs by line, when it began and the hits then), and the quiet
    # one (its frame's code, its lines, when it began, how its time is shared out)
    samples = sampling is not None
    disable = sampling.disable if sampling is not None else None
    waker = sampling.waker if sampling is not None else None
    window = sampling.window if sampling is not None else 0
    restart_events = sampling.restart if sampling is not None else _ignored
    fast = sampling.fast if sampling is not None else 0
    window_left, pure, previous_now = window, True, 0
    slow: dict[int, int] = {}  # the stretch's slow runs, by line
    window_frame: list[Any] | None = None
    window_wall = 0.0
    base_hits: dict[int, int] = {}
    quiet, quiet_code, quiet_from = False, None, 0
    quiet_lines: set[int] = set()
    # per line of the quiet stretch: its share of the stretch's time (1.0: a frame below's)
    rates: list[tuple[int, float]] = []

    def entered(code: CodeType, now: int) -> list[Any]:
        """The frame of ``code`` on top of the stack: frames above it were left by an
        exception (no return event), one not on it was entered before recording began."""
        if any(frame[0] is code for frame in stack):
            while stack[-1][0] is not code:
                _charge(stack, stack.pop(), now, host)
        else:
            stack.append([code, None, now])
        return stack[-1]

    def on_line(code: CodeType, line: int) -> Any:
        # the hot path of a long cell: a line of the frame on top, the common case first
        nonlocal last, last_t, countdown, window_left, pure, previous_now
        if other and get_ident() != thread:
            return None
        if quiet:
            assert waker is not None
            if code is quiet_code and line in quiet_lines and not waker.woke:
                return disable
            now = clock()
            wake(now)
        else:
            now = clock()
        if raw is not None:
            raw.append((now, LINE, code, line))
        top = stack[-1] if stack else None
        if top is None or top[0] is not code:
            top = entered(code, now)
        previous = top[1]
        if previous is not None:
            if len(stack) == 1:
                host[previous] += now - top[2]
            else:
                _charge(stack, top, now, host)
        top[1] = line
        top[2] = now
        hits[line] += 1
        if line != last:
            if keep:
                if now == last_t:
                    seg_line[-1] = line
                else:
                    add_t(now)
                    add_line(line)
                    last_t = now
            last = line
        countdown -= 1
        if not countdown:
            countdown = every
            tick()
        if samples:
            if now - previous_now >= fast and previous is not None:
                slow[previous] = slow.get(previous, 0) + 1
            previous_now = now
            if top is not window_frame:
                pure = False
            window_left -= 1
            if not window_left and close_window(now) and line in quiet_lines:
                return disable
        return None

    def new_window(now: int) -> None:
        nonlocal window_left, pure, previous_now, window_frame, window_wall
        nonlocal base_hits
        window_left, pure, previous_now = window, True, now
        slow.clear()
        window_frame = stack[-1] if stack else None
        window_wall = time.perf_counter()
        base_hits = dict(hits)

    def close_window(now: int) -> bool:
        """At the end of a recorded stretch: whether its lines go quiet (a fast stretch of
        one frame, past the raw events), else a new stretch begins."""
        nonlocal quiet, quiet_code, quiet_from, quiet_lines, rates
        assert sampling is not None and waker is not None
        noisy = sum(slow.values()) * sampling.by_chance > window
        if raw is not None or not pure or noisy or not stack:
            new_window(now)
            return False
        top = stack[-1]
        for frame in stack:  # the open runs, up to now: the quiet stretch starts clean
            _charge(stack, frame, now, host)
            frame[2] = now
        lines = {line: count - base_hits.get(line, 0) for line, count in hits.items()}
        lines = {line: count for line, count in lines.items() if count > 0}
        # a line slow more often than by chance (the thread preempted) may make GPU calls: it
        # stays recorded, and its next run ends the quiet; there is no quiet where one runs
        # often, it would end at once
        loud = {
            line
            for line, count in slow.items()
            if count >= max(2, lines.get(line, 0) // sampling.by_chance)
        }
        # and a line that ran only now and then (a branch taken every thousand runs) costs
        # little recorded, and is where a rare GPU call would be: it stays recorded too
        loud |= {line for line, count in lines.items() if count * sampling.by_chance < window}
        if not set(lines) - loud or sum(lines.get(line, 0) for line in loud) * 64 > window:
            new_window(now)
            return False
        going = set(lines) - loud
        # the quiet time goes to the lines going quiet as their host time so far has (each run
        # recorded bore one event's cost, as in a cell recorded whole): one stretch alone
        # would split a loop's time by its own noise. A recorded line's run ends the quiet.
        own = {line: host.get(line, 0) for line in going}
        span = sum(own.values())
        if span <= 0:
            new_window(now)
            return False
        rates = [(line, own[line] / span) for line in going]
        # the frames below run one line each all along (inclusive host time)
        below: list[int] = []
        for frame in stack[:-1]:
            if frame[1] is not None and frame[1] not in below:
                below.append(frame[1])
        rates += [(line, 1.0) for line in below if line not in lines]
        quiet, quiet_code, quiet_from, quiet_lines = True, top[0], now, going
        moved(OUTSIDE, now)
        waker.arm(sampling.quiet_factor * (time.perf_counter() - window_wall))
        return True

    def wake(now: int, restart: bool = True) -> None:
        """Ends the quiet stretch: its time goes to its lines as their host time had been
        shared, and a recorded stretch begins, its lines' events on again (the waker's
        restart, or ours where another event ended the quiet first)."""
        nonlocal quiet
        assert waker is not None
        quiet = False
        if not waker.cancel() and restart:
            restart_events()
        span = now - quiet_from
        for line, share in rates:
            host[line] += round(share * span)
        walker.sampled.update(quiet_lines)
        for frame in stack:
            frame[2] = now
        walker.quiet.append((quiet_from, now))
        new_window(now)

    def settle(end: int) -> None:  # the cell is over: no more events to turn on
        if quiet:
            wake(end, restart=False)

    def innermost() -> int:
        for frame in reversed(stack):
            if frame[1] is not None:
                return int(frame[1])
        return OUTSIDE

    def moved(current: int, now: int) -> None:
        nonlocal last, last_t
        if current != last:
            if keep:
                if now == last_t:
                    seg_line[-1] = current
                else:
                    add_t(now)
                    add_line(current)
                    last_t = now
            last = current

    def on_start(code: CodeType, *_: object) -> None:
        nonlocal countdown, pure
        if other and get_ident() != thread:
            return
        now = clock()
        if quiet:
            wake(now)
        pure = False
        if raw is not None:
            raw.append((now, START, code, 0))
        stack.append([code, None, now])
        moved(innermost(), now)
        countdown -= 1
        if not countdown:
            countdown = every
            tick()

    def on_return(code: CodeType, *_: object) -> None:
        nonlocal pure
        if other and get_ident() != thread:
            return
        now = clock()
        if quiet:
            wake(now)
        pure = False
        if raw is not None:
            raw.append((now, RETURN, code, 0))
        if any(frame[0] is code for frame in stack):
            while stack:
                frame = stack.pop()
                _charge(stack, frame, now, host)
                if frame[0] is code:
                    break
        moved(innermost(), now)

    def traced(frame: Any, event: str, arg: object) -> Any:
        # `on_line` as a local trace function (3.11), its body repeated: a call more per
        # event would cost a fifth of the walk
        nonlocal last, last_t, countdown
        if event != "line":
            if event == "return":
                on_return(frame.f_code)
            return traced
        code, line = frame.f_code, frame.f_lineno
        now = clock()
        if raw is not None:
            raw.append((now, LINE, code, line))
        top = stack[-1] if stack else None
        if top is None or top[0] is not code:
            top = entered(code, now)
        previous = top[1]
        if previous is not None:
            if len(stack) == 1:
                host[previous] += now - top[2]
            else:
                _charge(stack, top, now, host)
        top[1] = line
        top[2] = now
        hits[line] += 1
        if line != last:
            if keep:
                if now == last_t:
                    seg_line[-1] = line
                else:
                    add_t(now)
                    add_line(line)
                    last_t = now
            last = line
        countdown -= 1
        if not countdown:
            countdown = every
            tick()
        return traced

    def stop_recording() -> None:
        nonlocal raw
        raw = None

    def synced() -> None:  # the walker's own record of the newest segment, for `finish`
        walker._last, walker._last_t = last, last_t

    walker.sync = synced
    walker.settle = settle
    return Handlers(on_line, on_start, on_return, traced, stop_recording)


def _charge(
    stack: list[list[Any]], frame: list[Any], now: int, host: defaultdict[int, int]
) -> None:
    """Host time of `frame`'s current line, unless a frame below it is on the same line (a
    comprehension's frame: the frame below already covers this time)."""
    line = frame[1]
    if line is None:
        return
    for other in stack:
        if other is frame:
            break
        if other[1] == line:
            return
    host[line] += now - frame[2]


def walk_events(events: LineEvents, keep_segments: bool = True) -> Timeline:
    """The timeline of recorded columns (a fixture's, or a short cell's), walked at once."""
    walker = TimelineWalker(events["start"], keep_segments)
    walker.feed(iter_events(events))
    return walker.finish(events["end"])


@contextmanager
def _interrupts_held(main_thread: bool) -> Iterator[None]:
    """A SIGINT that arrives inside is delivered on the way out: a fold stopped half way
    would lose or double events. Only the main thread can swap handlers; elsewhere and
    under a handler installed from C, the signal is left alone."""
    previous = signal.getsignal(signal.SIGINT) if main_thread else None
    if previous is None:
        yield
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda number, _frame: held.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)


class LineRecorder:
    """Records LINE/START/RETURN events of the given code objects on the calling thread.

    `keep_segments`: whether GPU records will be placed by time (a host-only run needs
    hits and host time alone). `before_drop(segments, retained_from)` runs before the
    oldest segments are dropped, so a backend can place the calls it has by then.
    """

    def __init__(
        self,
        code: CodeType,
        clock: Callable[[], int],
        *,
        keep_segments: bool = True,
        before_drop: Callable[[Segments, int], None] | None = None,
        sample: bool = True,
    ) -> None:
        self.codes = cell_code_objects(code)
        self.sample = sample
        self.clock = clock
        self.method = "sys.monitoring" if monitoring_available() else "sys.settrace"
        self.keep_segments = keep_segments
        self.before_drop = before_drop
        self.folds = 0
        self.fold_ns = 0
        self.drop_errors: list[str] = []
        # a short cell's events as they came, for a test fixture (None once it is not short)
        self._raw: list[tuple[int, int, Any, int]] | None = []
        self._index = {id(code): i for i, code in enumerate(self.codes)}
        self._handlers = Handlers(_ignored, _ignored, _ignored, _ignored, _ignored)
        self._thread: int | None = None  # the thread whose events are walked (monitoring)
        self._walker: TimelineWalker | None = None
        self._timeline: Timeline | None = None
        self._tool: int | None = None
        self._previous_trace: Any = None
        self._sampling: Sampling | None = None  # sys.monitoring: lines of fast stretches
        self._main_is_main = threading.current_thread() is threading.main_thread()
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
        self._walker = TimelineWalker(self.start_ns, self.keep_segments)
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

    # -- folding -------------------------------------------------------------------------
    def _fold(self) -> None:
        """Every RAW_EVENTS_KEPT events, inside an event callback on the main thread (so no
        event is walked meanwhile): a cell that long keeps no raw events (they are for the
        fixtures of short ones), and past SEGMENTS_KEPT segments the backend places the
        calls it has (`before_drop`) and the oldest half is dropped. Its own time is taken
        out of the running lines' host time."""
        began = self.clock()
        # the fold's wall time, reported: the session clock (CUPTI's) is for the timeline
        began_wall = time.perf_counter_ns()
        walker = self._walker
        assert walker is not None
        with _interrupts_held(self._main_is_main):
            if self._raw is not None:
                self._raw = None
                self._handlers.stop_recording()
            if len(walker.seg_t) > SEGMENTS_KEPT:
                if self.before_drop is not None:
                    try:
                        self.before_drop(walker.segments(), walker.retained_from)
                    except Exception as error:  # the cell runs on; the payload says what
                        self.drop_errors.append(f"{type(error).__name__}: {error}")
                walker.drop_oldest(SEGMENTS_KEPT // 2)
            walker.pause(self.clock() - began)
            self.folds += 1
            self.fold_ns += time.perf_counter_ns() - began_wall

    def _install(self) -> None:
        """The callbacks that walk the events from now on (recording them in `_raw` until
        the first fold)."""
        walker = self._walker
        assert walker is not None
        self._handlers = event_handlers(
            walker,
            self.clock,
            RAW_EVENTS_KEPT,
            self._fold,
            raw=self._raw,
            thread=self._thread,
            sampling=self._sampling,
        )

    # -- sys.monitoring (3.12+) ------------------------------------------------------------
    def _start_monitoring(self) -> None:
        mon = sys.monitoring  # type: ignore[attr-defined]  # 3.12+; mypy reads 3.11 stubs
        events = mon.events
        tool = next((i for i in _TOOL_IDS if mon.get_tool(i) is None), None)
        if tool is None:
            raise RuntimeError(
                "every sys.monitoring profiler slot is taken by another tool "
                f"({', '.join(str(mon.get_tool(i)) for i in _TOOL_IDS)}); stop it and retry"
            )
        mon.use_tool_id(tool, "gpulens")
        self._tool = tool
        # local events fire on any thread that runs the cell's code: only this one's count
        self._thread = threading.get_ident()
        if self.sample:
            self._sampling = sampling.settings(mon)
        self._install()
        handlers = self._handlers
        mon.register_callback(tool, events.LINE, handlers.line)
        mon.register_callback(tool, events.PY_START, handlers.start)
        mon.register_callback(tool, events.PY_RESUME, handlers.start)
        mon.register_callback(tool, events.PY_RETURN, handlers.end)
        mon.register_callback(tool, events.PY_YIELD, handlers.end)
        wanted = (
            events.LINE | events.PY_START | events.PY_RESUME | events.PY_RETURN | events.PY_YIELD
        )
        for code in self.codes:
            mon.set_local_events(tool, code, wanted)

    def _stop_monitoring(self) -> None:
        if self._sampling is not None:
            self._sampling.waker.close()
        if self._tool is None:
            return
        mon = sys.monitoring  # type: ignore[attr-defined]  # 3.12+; mypy reads 3.11 stubs
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
        self._install()  # (a trace function is per thread: no other thread's events come)
        start, traced = self._handlers.start, self._handlers.traced

        def global_hook(frame: Any, event: str, arg: object) -> Any:
            # Frames of other code are never traced line by line: returning None is the cost cap.
            if event == "call" and id(frame.f_code) in wanted:
                start(frame.f_code)
                return traced
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
    def timeline(self) -> Timeline:
        """The walked timeline (call after stop)."""
        if self._timeline is None:
            walker = self._walker or TimelineWalker(self.start_ns, self.keep_segments)
            self._timeline = walker.finish(self.end_ns or self.clock())
        return self._timeline

    def events(self) -> LineEvents | None:
        """The recorded events as columns, for a test fixture; None once any were folded."""
        if self.folds or self._raw is None:
            return None
        index = self._index
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
