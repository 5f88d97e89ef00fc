""" "Measure this fix": a cell run as it is and with one fix applied, several times each, each
run in a fresh subprocess; wall times compared with an exact rank test, and the records that
changed (syncs 200 → 1, copies to the GPU 100 → 1, pageable → pinned).

The fixed text exists only in memory: it goes to the runner as the text to run (earlier cells
as setup, as `gpulens profile --cell` runs them), so the file is never written. Each run's
process runs the cell twice (`child.time_again`): under the profiler first, which gives the
records and warms what a first run pays once (kernels loaded, library handles made, the GPU's
clocks up), then unprofiled, timed from its first line until its GPU work is done. Only that
second time is compared: it holds what the fix can change and none of the process's start,
the setup, the first run's one-off costs or the profiler's per-launch costs, which would
weigh on the version that launches more.

The runs alternate (as is, fixed, as is, ...) so that a machine warming up or slowing down
weighs on both alike. The fix counts as faster when the exact one-sided Mann–Whitney test
(`rank_test`) finds the fixed runs shorter at p <= ALPHA and the medians differ by at least
MIN_EFFECT, as slower in the opposite case; otherwise the difference is within the noise, or
real but too small to matter (an H100 found 132 ms → 132 ms "faster" at p = 0.036), and the
result says which. The noise is stated as
the runs' spread: their range, and its half over the median (±).

`plan_measurement` and `summarize` are pure; `run_measurement` starts the subprocesses
(`runner.run_profile`). The result is a `gpulens.measure-fix/1` payload whose `message` is
the one sentence the editors show as it is, and `render_text` what the terminal shows.
"""

from __future__ import annotations

import statistics
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from gpulens.analysis.edits import apply_fixes, first_safe_fix
from gpulens.analysis.model import Finding, Fix
from gpulens.profiler.cells import cell_at_line, split_cells
from gpulens.profiler.display import run_name
from gpulens.profiler.rank_test import rank_test
from gpulens.profiler.runner import StopRequest, _kill_group, run_profile
from gpulens.profiler.schema import KERNELS, SYNCS, TRANSFERS
from gpulens.profiler.units import short_count, short_seconds

SCHEMA = "gpulens.measure-fix/1"
DEFAULT_RUNS = 5
# with 3 runs each, only a complete separation gives p <= ALPHA (1 / 20); fewer can never
MIN_RUNS = 3
# the one-sided level at which the fix is called faster (or slower)
ALPHA = 0.05
# and the least change of the median time that is called faster (or slower) at all
MIN_EFFECT = 0.02
TEST_NAME = "exact one-sided Mann–Whitney U"
VERDICTS = ("faster", "slower", "within-noise", "failed", "stopped", "refused")


class MeasureRequestError(ValueError):
    """The fix cannot be measured (no such finding, no fix, a fix that breaks the file); the
    message says why in one sentence."""


@dataclass(frozen=True, slots=True)
class FixPlan:
    """What to run: the text as it is and as the fix makes it, and which cell of them."""

    path: str
    text: str
    fixed_text: str
    cell: int | None  # the `# %%` cell to profile (0: the code before the first); None: the file
    line: int  # 1-based line of the finding
    code: str
    fix_title: str


# -- choosing the fix ----------------------------------------------------------------------------
def choose_fix(
    findings: Sequence[Finding], line: int, code: str, title: str | None = None
) -> tuple[Finding, Fix]:
    """The finding of rule `code` on 1-based `line` and its fix (the one titled `title`, else
    the first safe one, else the first); MeasureRequestError says what is missing."""
    code = code.strip().upper()
    here = [f for f in findings if f.code == code and f.span.line <= line - 1 <= f.span.end_line]
    if not here:
        found = sorted({f.code for f in findings if f.span.line <= line - 1 <= f.span.end_line})
        others = f" (it has {', '.join(found)})" if found else ""
        raise MeasureRequestError(f"line {line} has no {code} finding{others}")
    for finding in here:
        if title is not None:
            chosen = next((fix for fix in finding.fixes if fix.title == title), None)
        else:
            chosen = first_safe_fix(finding) or next(iter(finding.fixes), None)
        if chosen is not None:
            return finding, chosen
    if title is not None:
        raise MeasureRequestError(f"the {code} finding on line {line} has no fix {title!r}")
    raise MeasureRequestError(f"the {code} finding on line {line} has no fix to measure")


def plan_measurement(path: str, text: str, finding: Finding, fix: Fix) -> FixPlan:
    """The runs for `fix` of `finding` in `text`: the `# %%` cell holding the finding (the
    whole file where there are no cells). Raises MeasureRequestError for a fix that cannot
    be applied whole or that moves the cells."""
    applied = apply_fixes(text, [fix])
    if not applied.applied:
        raise MeasureRequestError(
            f"the fix “{fix.title}” cannot be applied to the text as it is (it would leave "
            "it unparsable or overlaps itself)"
        )
    cells = split_cells(text)
    line = finding.span.line + 1
    cell: int | None = None
    if len(cells) > 1:
        found = cell_at_line(cells, line)
        if found is None:
            raise MeasureRequestError(f"{path} has no line {line}")
        cell = found.index
        if len(split_cells(applied.text)) != len(cells):
            raise MeasureRequestError(
                f"the fix “{fix.title}” adds or removes a `# %%` cell marker, so the cell "
                "cannot be run both ways"
            )
    return FixPlan(path, text, applied.text, cell, line, finding.code, fix.title)


# -- running -------------------------------------------------------------------------------------
def run_measurement(
    plan: FixPlan,
    *,
    runs: int = DEFAULT_RUNS,
    python: str | None = None,
    timeout: float | None = None,
    backend: str = "auto",
    cwd: str | None = None,
    stop: StopRequest | None = None,
    on_start: Callable[[subprocess.Popen[bytes]], None] | None = None,
    on_run: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Runs the cell as it is and fixed, `runs` times each, alternating, each in a fresh
    subprocess; the `gpulens.measure-fix/1` result. Stops early when a run fails (the result
    says which and why) or `stop` is requested. `on_run(done, total)` follows the runs."""
    runs = max(MIN_RUNS, runs)
    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    total = 2 * runs
    for index in range(total):
        if stop is not None and stop.count:
            break
        side, text = (before, plan.text) if index % 2 == 0 else (after, plan.fixed_text)
        payload = run_profile(
            plan.path,
            text=text,
            cell=plan.cell,
            python=python,
            timeout=timeout,
            backend=backend,
            cwd=cwd,
            stop=stop,
            on_start=on_start,
            timed=True,
        )
        side.append(payload)
        if on_run is not None:
            on_run(index + 1, total)
        if _run_error(payload) is not None:
            break
    stopped = stop.reason if stop is not None and stop.count else None
    return summarize(plan, before, after, stopped=stopped)


# -- the result ----------------------------------------------------------------------------------
def record_totals(payload: Mapping[str, Any]) -> dict[str, int]:
    """The cell's records, summed over its lines: syncs, copies each way, copies from
    pageable and from pinned memory, kernels."""
    totals = {"syncs": 0, "htod": 0, "dtoh": 0, "pageable": 0, "pinned": 0, "kernels": 0}
    for line in payload.get("lines") or []:
        totals["syncs"] += int((line.get(SYNCS.key) or {}).get("count") or 0)
        totals["kernels"] += int((line.get(KERNELS.key) or {}).get("count") or 0)
        for key, block in (line.get(TRANSFERS.key) or {}).items():
            if key in ("htod", "dtoh"):
                totals[key] += int(block.get("count") or 0)
            totals["pageable"] += int(block.get("pageable") or 0)
            totals["pinned"] += int(block.get("pinned") or 0)
    return totals


# what each total is called where it changed, in the order they are listed
_RECORD_WORDS = (
    ("syncs", "syncs"),
    ("htod", "copies to the GPU"),
    ("dtoh", "copies to the host"),
    ("pageable", "copies from pageable memory"),
    ("pinned", "copies from pinned memory"),
    ("kernels", "kernels"),
)


def record_changes(before: Mapping[str, int], after: Mapping[str, int]) -> list[dict[str, Any]]:
    """The totals that differ, each with its words: "syncs 200 → 1"."""
    return [
        {
            "record": key,
            "before": before[key],
            "after": after[key],
            "text": f"{words} {short_count(before[key])} → {short_count(after[key])}",
        }
        for key, words in _RECORD_WORDS
        if before.get(key, 0) != after.get(key, 0)
    ]


def timed_wall(payload: Mapping[str, Any]) -> float | None:
    """The run's timed second run of the cell, in seconds (None where it has none)."""
    timed = payload.get("timed") or {}
    wall = timed.get("wall_s")
    return None if wall is None else float(wall)


def _run_error(payload: Mapping[str, Any]) -> tuple[dict[str, Any], bool] | None:
    """How a run failed, and whether it was in the cell's second (timed) run; None: it did not."""
    if payload.get("error"):
        return dict(payload["error"]), False
    timed = payload.get("timed") or {}
    if timed.get("error"):
        return dict(timed["error"]), True
    if "timed" in payload and timed_wall(payload) is None:
        return {"type": "Error", "message": "the timed run left no time", "line": None}, True
    return None


def _side(payloads: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ok = [p for p in payloads if _run_error(p) is None]
    walls = [_wall(p) for p in ok]
    side: dict[str, Any] = {
        "runs": len(walls),
        "wall_s": walls,
        # the profiled first runs' cell times, for the record: not compared (module docstring)
        "profiled_wall_s": [float(p.get("wall_s") or 0) for p in ok],
    }
    if walls:
        median = statistics.median(walls)
        side.update(
            median_s=median,
            min_s=min(walls),
            max_s=max(walls),
            spread=(max(walls) - min(walls)) / 2 / median if median > 0 else 0.0,
        )
    side["records"] = record_totals(_median_run(ok)) if ok else None
    return side


def _wall(payload: Mapping[str, Any]) -> float:
    """The time compared: the timed run's where there is one (a payload without, from an
    older child or a test, gives its profiled cell time)."""
    wall = timed_wall(payload)
    return float(payload.get("wall_s") or 0) if wall is None else wall


def _median_run(payloads: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    ordered = sorted(payloads, key=_wall)
    return ordered[(len(ordered) - 1) // 2]


def _range(side: Mapping[str, Any]) -> str:
    low, high = short_seconds(side["min_s"]), short_seconds(side["max_s"])
    return low if low == high else f"{low}–{high}"


def _percent(share: float) -> str:
    return f"{share * 100:.0f} %" if share >= 0.01 else "<1 %"


def p_text(p: float) -> str:
    """A p-value as the message gives it: "0.004", "0.027", "0.21", "< 0.001"."""
    if p < 0.001:
        return "< 0.001"
    return f"= {p:.1g}" if p < 0.01 else f"= {p:.2g}"


def _failure(payloads: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], bool] | None:
    return next((found for p in payloads if (found := _run_error(p)) is not None), None)


def _failure_words(failure: tuple[dict[str, Any], bool], how: str) -> str:
    error, second = failure
    at = f" at line {error['line']}" if error.get("line") else ""
    message = str(error.get("message") or "").rstrip(". ")
    when = (
        " when run a second time (each run profiles the cell, then times a second run of it)"
        if second
        else ""
    )
    return f"the cell {how} stopped{when}{at}: {error.get('type', 'Error')}: {message}"


def _counts(before: int, after: int) -> str:
    return f"{before} runs each" if before == after else f"{before} and {after} runs"


def summarize(
    plan: FixPlan,
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
    *,
    stopped: str | None = None,
) -> dict[str, Any]:
    """The result of the runs: each side's wall times (median, range, spread), the rank
    test and its verdict, the records that changed, and the words for it."""
    sides = {"before": _side(before), "after": _side(after)}
    first = next(iter([*before, *after]), {})
    name = run_name(dict(first)) if first else plan.path
    backend = str(first.get("backend") or "none")
    failed_before, failed_after = _failure(before), _failure(after)
    changes: list[dict[str, Any]] = []
    speedup: float | None = None
    test: dict[str, Any] | None = None
    notes: list[str] = []
    if stopped is not None:
        verdict = "stopped"
        message = f"gpulens: measuring the fix was stopped ({stopped}) before every run ended."
    elif failed_before is not None:
        verdict = "failed"
        message = f"gpulens: the fix was not measured: {_failure_words(failed_before, 'as it is')}."
    elif failed_after is not None:
        verdict = "failed"
        message = (
            f"gpulens: “{plan.fix_title}” breaks {name}: "
            f"{_failure_words(failed_after, 'with the fix')}. Nothing was changed."
        )
    elif not sides["before"]["runs"] or not sides["after"]["runs"]:
        verdict = "stopped"
        message = "gpulens: measuring the fix was stopped before a run of each version ended."
    else:
        b, a = sides["before"], sides["after"]
        speedup = b["median_s"] / a["median_s"] if a["median_s"] > 0 else None
        changes = record_changes(b["records"], a["records"])
        ranks = rank_test(b["wall_s"], a["wall_s"])
        test = {
            "name": TEST_NAME,
            "alpha": ALPHA,
            "u": ranks.u,
            "p_faster": ranks.p_greater,
            "p_slower": ranks.p_less,
        }
        change = a["median_s"] / b["median_s"] - 1 if b["median_s"] > 0 else 0.0
        small = abs(change) < MIN_EFFECT
        if ranks.p_greater <= ALPHA:
            verdict, p = ("within-noise" if small else "faster"), ranks.p_greater
        elif ranks.p_less <= ALPHA:
            verdict, p = ("within-noise" if small else "slower"), ranks.p_less
        else:
            verdict, p, small = "within-noise", ranks.p_greater, False
        times = (
            f"{short_seconds(b['median_s'])} → {short_seconds(a['median_s'])} (medians), "
            f"p {p_text(p)} over {_counts(b['runs'], a['runs'])}"
        )
        noise = (
            f"noise: runs of {_range(b)} as it is, ±{_percent(b['spread'])}; "
            f"{_range(a)} fixed, ±{_percent(a['spread'])}"
        )
        if verdict == "faster":
            ratio = f"{speedup:.2f}× faster" if speedup else "faster"
            lead = f"“{plan.fix_title}” makes {name} {ratio}, beyond the noise: {times} ({noise})"
        elif verdict == "slower":
            ratio = f" ({a['median_s'] / b['median_s']:.2f}× the time)" if b["median_s"] else ""
            lead = (
                f"“{plan.fix_title}” makes {name} slower{ratio}, beyond the noise: "
                f"{times} ({noise})"
            )
        elif small:
            lead = (
                f"“{plan.fix_title}” changes {name}'s time by {_percent(abs(change))}, less "
                f"than the {_percent(MIN_EFFECT)} worth calling faster or slower: {times} "
                f"({noise})"
            )
        else:
            lead = (
                f"“{plan.fix_title}” does not make {name} faster beyond the noise: {times}, "
                f"above {ALPHA:g} ({noise})"
            )
        records = (
            "; records: " + ", ".join(change["text"] for change in changes)
            if changes
            else "; no GPU record changed"
            if backend != "host"
            else ""
        )
        message = f"gpulens: {lead}{records}."
        if ranks.p_floor > ALPHA:
            notes.append(
                f"{_counts(b['runs'], a['runs'])} cannot show a difference at p <= {ALPHA:g}: "
                f"measure {MIN_RUNS} or more of each"
            )
        if backend == "host":
            notes.append(
                "the host backend records no GPU work: only the times are compared "
                "(install cupti-python or torch for the records)"
            )
    return {
        "schema": SCHEMA,
        "source": {"path": plan.path, "cell": plan.cell, "line": plan.line, "rule": plan.code},
        "fix": {"title": plan.fix_title},
        "backend": backend,
        "verdict": verdict,
        "speedup": None if speedup is None else round(speedup, 4),
        "test": test,
        "before": sides["before"],
        "after": sides["after"],
        "changes": changes,
        "notes": notes,
        "message": message,
        "level": {"faster": "info", "failed": "error"}.get(verdict, "warning"),
        "apply": verdict != "failed",
    }


def refused(path: str, line: int, code: str, reason: str) -> dict[str, Any]:
    """The result of a request that ran nothing: `reason` says why, in a sentence."""
    empty = {"runs": 0, "wall_s": [], "profiled_wall_s": [], "records": None}
    return {
        "schema": SCHEMA,
        "source": {"path": path, "cell": None, "line": line, "rule": code},
        "fix": None,
        "backend": "none",
        "verdict": "refused",
        "speedup": None,
        "test": None,
        "before": dict(empty),
        "after": dict(empty),
        "changes": [],
        "notes": [],
        "message": f"gpulens: the fix was not measured: {reason.rstrip('.')}.",
        "level": "error",
        "apply": False,
    }


class BackgroundMeasurement:
    """`run_measurement` on a daemon thread, for a caller whose event loop must stay free.

    ``future`` settles with the result; ``done`` counts the runs that ended. ``interrupt()``
    stops after interrupting the run going on (its figures are left out); ``kill()`` also
    kills its process group at once.
    """

    def __init__(self, plan: FixPlan, **options: Any) -> None:
        """``options``: those of `run_measurement`, but for ``stop``, ``on_start`` and
        ``on_run``."""
        self.future: Future[dict[str, Any]] = Future()
        self.done = 0
        self.total = 2 * max(MIN_RUNS, int(options.get("runs") or DEFAULT_RUNS))
        self._stop = StopRequest()
        self._process: subprocess.Popen[bytes] | None = None
        self._plan, self._options = plan, options
        threading.Thread(target=self._run, name="gpulens-measure", daemon=True).start()

    def interrupt(self, reason: str = "a cancel") -> None:
        self._stop.request(reason)

    def kill(self, reason: str = "a cancel") -> None:
        self._stop.request(reason)
        self._stop.request(reason)  # a second request kills the run (`StopRequest`)
        if self._process is not None:
            _kill_group(self._process)

    def _started(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    def _ran(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def _run(self) -> None:
        self.future.set_running_or_notify_cancel()
        try:
            result = run_measurement(
                self._plan,
                stop=self._stop,
                on_start=self._started,
                on_run=self._ran,
                **self._options,
            )
        except BaseException as error:
            self.future.set_exception(error)
            return
        self.future.set_result(result)


def render_text(result: Mapping[str, Any]) -> str:
    """What `gpulens measure-fix` prints: the sentence, each run's time, the notes."""
    out = [str(result["message"])]
    for key, words in (("before", "as it is"), ("after", "fixed")):
        side = result[key]
        if side["wall_s"]:
            out.append(f"  {words:9} " + "  ".join(short_seconds(wall) for wall in side["wall_s"]))
    out += [f"note: {note}" for note in result.get("notes") or []]
    return "\n".join(out) + "\n"
