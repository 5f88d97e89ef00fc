"""What people read of a profile payload, worded once for every client.

`annotate` writes into a payload everything an editor, a notebook or a terminal shows of it:
for each line its `label` (drawn after the line), `hover` (Markdown) and `heat` (0..1, the
line's GPU time over the hottest line's; host time when the cell used no GPU), and a
`display` block: the header, a one-line summary, the message for a run that did not end
well (and its level), the notes after the table, and the table itself (columns that are empty
for every line left out). The VS Code and JupyterLab clients draw these strings as they are;
the language server sends them as inlay hints and hovers; `report.render_text` and
`render_html` lay out the same table. Pure functions: a payload in, strings out.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from gpulens.profiler import idle_display, memory_display, schema
from gpulens.profiler.hints import idle_loop_hints, line_hints, pinned_bandwidth
from gpulens.profiler.rank_display import (
    rank_notes,
    rank_table,
    ranks_header,
    spread_cell,
    spread_label,
)
from gpulens.profiler.schema import KERNELS, SCHEMA, PayloadLine, plural
from gpulens.profiler.units import short_count, short_seconds

# a kernel name longer than this is cut in the hover: C++ template names run to kilobytes
KERNEL_NAME_CHARS = 80
# what changes Markdown's rendering, escaped in plain text shown as Markdown
_MARKDOWN_MARKS = "\\`*_[]<>|"
_MARKDOWN_ESCAPES = str.maketrans({char: "\\" + char for char in _MARKDOWN_MARKS})
_MARKDOWN_MARK = re.compile(f"[{re.escape(_MARKDOWN_MARKS)}]")
HEAT_DIGITS = 3
# what `annotate` writes into each line for an editor to draw at it (the line's `hints` are
# in its hover, and in the report's notes)
LINE_FIELDS = ("label", "hover", "heat")


@dataclass(frozen=True)
class LineContext:
    """What a line's words need to know of its cell: the memory peaks each line reached,
    whether the cell made timed GPU work, the host's time on the cell's lines, and each
    line's cost on the scale of the heat and the shares (GPU time where the cell made GPU
    work, else host time: `basis`)."""

    peaks: dict[int, list[tuple[str, dict[str, Any]]]] = field(default_factory=dict)
    several_devices: bool = False
    used_gpu: bool = False
    cell_s: float = 0.0
    basis: str = "host"
    costs: dict[int, float] = field(default_factory=dict)

    @classmethod
    def of(cls, payload: dict[str, Any]) -> LineContext:
        lines = payload.get("lines") or []
        gpu = {line["line"]: device_seconds(line) for line in lines}
        basis = "gpu" if any(seconds > 0 for seconds in gpu.values()) else "host"
        return cls(
            peaks=memory_display.peaks_by_line(payload),
            several_devices=memory_display.several_devices(payload),
            used_gpu=idle_display.used_gpu(payload),
            cell_s=idle_display.cell_time(lines),
            basis=basis,
            costs=gpu
            if basis == "gpu"
            else {line["line"]: float(line.get("host_s") or 0) for line in lines},
        )


# -- one line -----------------------------------------------------------------------------------
def device_seconds(line: PayloadLine) -> float:
    """GPU time of the line's own work: kernels, copies, memsets (not the host's waits)."""
    return sum(kind.device_s(line) for kind in schema.RECORD_KINDS)


def made_device_work(line: PayloadLine) -> bool:
    return any(kind.made_work(line) for kind in schema.RECORD_KINDS)


SAMPLED_HOVER = (
    "sampled: this line ran too often and too fast to record every run; past the cell's "
    "first line events, its runs were recorded in stretches, the count is of the runs "
    "recorded and the host time between them is estimated from them"
)


def runs(line: PayloadLine, word: str) -> str:
    """ "200 hits"; "59k+ hits" for a sampled line, whose count is of the runs recorded."""
    count = line.get("hits", 0)
    if line.get("sampled"):
        return f"{short_count(count)}+ {word}s"
    return plural(count, word)


def host_time(line: PayloadLine) -> str:
    """ "51 ms"; "≈51 ms" for a sampled line, whose host time is partly estimated."""
    figure = short_seconds(line.get("host_s", 0))
    return f"≈{figure}" if line.get("sampled") else figure


def line_label(line: PayloadLine, context: LineContext | None = None) -> str:
    """The text drawn after a profiled line.

    GPU work: "1.4k kernels · 8.7 ms GPU · ↑400 MB 62 ms · ⏸200 2.2 ms" (each kind's part,
    in `RECORD_KINDS` order). A line that made no GPU work shows its host figures:
    "200 hits · 51 ms host". Then its memory ("+1.1 GB mem · peak 1.1 GB") and, where the
    GPU sat idle most of a line that took a part of the cell, "GPU idle 94%".
    """
    context = context or LineContext()
    if not made_device_work(line):
        parts = [runs(line, "hit"), f"{host_time(line)} host"]
    else:
        parts = [part for kind in schema.RECORD_KINDS for part in kind.label(line)]
    parts += memory_display.label_parts(line, context.peaks.get(line.get("line", 0), []))
    idle = idle_display.label_part(line, context.cell_s) if context.used_gpu else None
    if idle:
        parts.append(idle)
    ranks = spread_label(line)  # a job of several ranks: how far apart they were
    return " · ".join([*parts, ranks] if ranks else parts)


def markdown_text(text: str) -> str:
    """Plain text safe inside Markdown, tables too (kernel names hold `*`, `_`, `<` and `|`);
    only what would change the rendering is escaped, so plain-text clients stay readable."""
    # most rows hold none of the marks: a search is 20x cheaper than translate's per-char walk
    return text.translate(_MARKDOWN_ESCAPES) if _MARKDOWN_MARK.search(text) else text


def _kernel_name(name: str) -> str:
    """A code span for a table cell: cut, and without the `|` that would split the cell."""
    if len(name) > KERNEL_NAME_CHARS:
        name = name[: KERNEL_NAME_CHARS - 1] + "…"
    return "`" + name.replace("`", "'").replace("|", "¦") + "`"


def line_hover(
    line: PayloadLine,
    backend: str | None = None,
    share: str | None = None,
    context: LineContext | None = None,
) -> str:
    """Markdown for the hover of a profiled line: runs and host time, each kind's figures,
    its memory and the GPU's idle time, the line's share of the cell, the top kernels in a
    table, then the line's hints."""
    context = context or LineContext()
    head = f"**gpulens profile** · line {line.get('line')}"
    if backend:
        head += f" · {markdown_text(backend)} backend"
    rows = [f"ran {runs(line, 'time')} · {host_time(line)} on the host"]
    if line.get("sampled"):
        rows.append(SAMPLED_HOVER)
    rows += [row for kind in schema.RECORD_KINDS for row in kind.hover(line)]
    rows += memory_display.hover_rows(
        line, context.peaks.get(line.get("line", 0), []), context.several_devices
    )
    idle = idle_display.hover_row(line) if context.used_gpu else None
    if idle:
        rows.append(idle)
    if share:
        rows.append(share)
    out = [head, ""] + [f"- {markdown_text(row)}" for row in rows]
    top = (line.get(KERNELS.key) or {}).get("top") or []
    if top:
        out += ["", "| top kernels | launches | GPU time |", "|---|---:|---:|"]
        out += [
            f"| {_kernel_name(k['name'])} | {short_count(k['count'])} | "
            f"{short_seconds(k['gpu_s'])} |"
            for k in top
        ]
    ranks = rank_table(line)
    if ranks:
        out += ["", *ranks]
    for hint in line.get("hints") or []:
        out += ["", f"💡 {markdown_text(hint['message'])}"]
    return "\n".join(out)


def line_heats(context: LineContext) -> dict[int, float]:
    """Each line's heat in [0, 1]: its cost over the costliest line's (the one scale every
    client tints by). The cost is GPU time when the cell used the GPU, else host time."""
    costs = context.costs
    top = max(costs.values(), default=0.0)
    return {n: round(cost / top, HEAT_DIGITS) if top > 0 else 0.0 for n, cost in costs.items()}


def _shares(context: LineContext) -> dict[int, str]:
    """Each line's share of the cell's cost, in words for its hover."""
    total = sum(context.costs.values())
    if total <= 0:
        return {}
    what = "GPU time" if context.basis == "gpu" else "time on the host"
    return {
        n: f"{cost / total:.0%} of the cell's {what}"
        for n, cost in context.costs.items()
        if cost > 0
    }


# -- the run --------------------------------------------------------------------------------------
def run_name(payload: dict[str, Any]) -> str:
    """What ran, in words: "cell 3 of train.py", "cell 4" (of a notebook), "the cell run
    as [9]" (a notebook cell known only by its execution count), "train.py"."""
    source = payload.get("source") or {}
    cell, count = source.get("cell"), source.get("execution_count")
    if source.get("path") is None:
        if cell is not None:
            return f"cell {cell}"
        return f"the cell run as [{count}]" if count is not None else "the cell"
    name = str(source["path"]).replace("\\", "/").rsplit("/", 1)[-1]
    if cell is None:
        return name
    return f"the code before the first cell of {name}" if cell == 0 else f"cell {cell} of {name}"


def run_message(payload: dict[str, Any]) -> str | None:
    """One sentence for the user when a profile did not run to the end (or ran nothing):
    what happened and what to do. None for a run that went well."""
    error = payload.get("error")
    where = run_name(payload)
    ran = bool(payload.get("lines"))
    shown = " The costs of the lines that ran are shown." if ran else ""
    if not error:
        if ran:
            return None
        return f"gpulens: {where} ran no code; put the cursor in a `# %%` cell with code."
    kind, message = error.get("type", "Error"), str(error.get("message", "")).rstrip(". ")
    at = f" at line {error['line']}" if error.get("line") else ""
    if kind == "Timeout":
        return f"gpulens: profiling {where} stopped: {message}.{shown}"
    if kind == "Cancelled":
        return f"gpulens: profiling {where} was cancelled.{shown}"
    if kind == "RankExit":
        return f"gpulens: profiling {where} stopped: {message}.{shown}"
    if kind in ("InterpreterError", "InterpreterExit", "SetupError", "RequestError"):
        return f"gpulens: {where} was not profiled: {message}."
    if kind == "SyntaxError":
        return f"gpulens: {where} has a syntax error ({message}); fix it and profile again."
    if "environment variable RANK expected" in message or "MASTER_ADDR expected" in message:
        return (
            f"gpulens: {where} raised {kind}{at}: {message}. It sets up a distributed job: "
            "profile it as one from a terminal, `gpulens profile --nproc-per-node N FILE`."
        )
    return f"gpulens: {where} raised {kind}{at}: {message}.{shown} Fix it and profile again."


def message_level(payload: dict[str, Any]) -> str | None:
    """How loud `run_message` is: "info" (cancelled), "warning" (a timeout, nothing ran) or
    "error"; None when there is no message."""
    if run_message(payload) is None:
        return None
    kind = (payload.get("error") or {}).get("type")
    if kind == "Cancelled":
        return "info"
    return "warning" if kind in (None, "Timeout") else "error"


def _gpu_names(payload: dict[str, Any]) -> str:
    names = [str(gpu.get("name") or "GPU") for gpu in payload.get("gpus") or []]
    if len(names) > 1 and len(set(names)) == 1:
        return f"{len(names)} × {names[0]}"
    return ", ".join(names)


def _gpu_total(payload: dict[str, Any], context: LineContext | None = None) -> float:
    if context is not None:
        return sum(context.costs.values()) if context.basis == "gpu" else 0.0
    return sum(device_seconds(line) for line in payload.get("lines") or [])


def _backend(payload: dict[str, Any]) -> str | None:
    backend = payload.get("backend")
    return None if backend in (None, "none") else f"{backend} backend"


def header(payload: dict[str, Any], context: LineContext | None = None) -> str:
    """The first line of the report: what ran, where, how long."""
    source = payload.get("source") or {}
    where = run_name(payload)
    if source.get("first_line") and source.get("last_line"):
        where += f" (lines {source['first_line']}–{source['last_line']})"
    parts = ["gpulens profile", where]
    backend = _backend(payload)
    if backend:
        gpus = _gpu_names(payload)
        parts.append(f"{backend} on {gpus}" if gpus else backend)
    ranks = ranks_header(payload)
    if ranks:
        parts.append(ranks)
    parts.append(f"{short_seconds(payload.get('wall_s') or 0)} wall")
    gpu = _gpu_total(payload, context)
    if gpu > 0:
        parts.append(f"{short_seconds(gpu)} on the GPU")
    for extra in (idle_display.header_part(payload), memory_display.header_part(payload)):
        if extra:
            parts.append(extra)
    return " · ".join(parts)


def summary(payload: dict[str, Any], context: LineContext | None = None) -> str:
    """One line for a status bar once a profile is in: "gpulens · cell 3 of train.py ·
    9.1 s wall · 25 ms on the GPU · cupti backend"."""
    parts = ["gpulens", run_name(payload), f"{short_seconds(payload.get('wall_s') or 0)} wall"]
    gpu = _gpu_total(payload, context)
    if gpu > 0:
        parts.append(f"{short_seconds(gpu)} on the GPU")
    backend = _backend(payload)
    if backend:
        parts.append(backend)
    return " · ".join(parts)


def recorded_label(payload: dict[str, Any]) -> str:
    """For a saved profile shown again: "recorded on NVIDIA H200, 2026-11-22"."""
    where = _gpu_names(payload) or "a machine without a GPU"
    label = f"recorded on {where}"
    when = payload.get("time")
    if isinstance(when, str):
        with contextlib.suppress(ValueError):
            label += f", {dt.datetime.fromisoformat(when).date().isoformat()}"
    return label


def notes(payload: dict[str, Any]) -> list[str]:
    """What follows the table: the hints by line, records no line took, how the cell stopped,
    and the run's warnings."""
    out = [
        f"line {line['line']}: {hint['message']}"
        for line in payload.get("lines") or []
        for hint in line.get("hints") or []
    ]
    lost = {key: count for key, count in (payload.get("unattributed") or {}).items() if count}
    if lost:
        out.append(
            "Not placed on any line: " + ", ".join(f"{short_count(v)} {k}" for k, v in lost.items())
        )
    out += memory_display.notes(payload)
    busy = idle_display.note(payload)
    if busy:
        out.append(busy)
    error = payload.get("error")
    if error:
        at = f" at line {error['line']}" if error.get("line") else ""
        out.append(f"The cell stopped{at}: {error['type']}: {error['message']}")
    out += rank_notes(payload)
    out += [f"note: {warning}" for warning in payload.get("warnings") or []]
    return out


# -- the table ----------------------------------------------------------------------------------
def _gpu_work(line: PayloadLine, context: LineContext) -> tuple[str, list[str]]:
    """The GPU work cell, a row per part: each kind's, then the line's memory, then the
    GPU's idle share where it sat idle most of the line; and the legends its parts need."""
    parts: list[str] = []
    legends: list[str] = []
    for kind in schema.RECORD_KINDS:
        rows = kind.cell(line)
        if rows:
            parts += rows
            legends.append(kind.legend)
    rows = memory_display.cell(line, context.peaks.get(line.get("line", 0), []))
    if rows:
        parts += rows
        legends.append(memory_display.LEGEND)
    idle = idle_display.label_part(line, context.cell_s) if context.used_gpu else None
    if idle:
        parts.append(idle)
        legends.append(idle_display.LEGEND)
    return "\n".join(parts), legends


# (title, alignment) of every column between Line and Source
_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Hits", "right"),
    ("Host", "right"),
    ("GPU work", "left"),
    ("Ranks", "left"),  # empty, so left out, but for a job of several ranks
)
# the legends under the table, in this order (a kind's own words need none: "")
_LEGENDS = (
    *(kind.legend for kind in schema.RECORD_KINDS),
    memory_display.LEGEND,
    idle_display.LEGEND,
)


def table(payload: dict[str, Any], context: LineContext | None = None) -> dict[str, Any]:
    """The per-line table: every line of the cell (or every profiled line when the payload
    carries no source), its runs, host time and GPU work, then its source. A column empty on
    every line is left out; GPU work of several kinds (or copies both ways) takes a row each
    under its line, so the source starts at the same column however much a line did."""
    by_line = {line["line"]: line for line in payload.get("lines") or []}
    first = (payload.get("source") or {}).get("first_line") or 1
    code = payload.get("code") or []
    if code:
        numbered = [(n, text.rstrip("\n")) for n, text in enumerate(code, start=first)]
    else:
        numbered = [(n, "") for n in sorted(by_line)]
    context = context or LineContext.of(payload)
    used: set[str] = set()
    profiled: dict[int, list[str]] = {}
    for n, line in by_line.items():
        work, legends = _gpu_work(line, context)
        used.update(legends)
        profiled[n] = [
            f"{line.get('hits', 0)}{'+' if line.get('sampled') else ''}",
            host_time(line),
            work,
            spread_cell(line),
        ]
    blank = [""] * len(_COLUMNS)
    cells = {n: profiled.get(n, blank) for n, _ in numbered}
    kept = [i for i in range(len(_COLUMNS)) if any(row[i] for row in cells.values())]
    heats = line_heats(context)
    return {
        "columns": [{"title": "Line", "align": "right"}]
        + [{"title": _COLUMNS[i][0], "align": _COLUMNS[i][1]} for i in kept]
        + [{"title": "Source", "align": "left"}],
        "rows": [
            {
                "line": n,
                "heat": heats.get(n, 0.0),
                "cells": [str(n)] + [cells[n][i] for i in kept] + [text],
            }
            for n, text in numbered
        ],
        "legend": " · ".join(legend for legend in _LEGENDS if legend and legend in used),
    }


# -- all of it ----------------------------------------------------------------------------------
def _from_v1(payload: dict[str, Any]) -> None:
    """A `gpulens.profile/1` payload (saved before display strings were added), read as /2.1:
    a notebook cell's `cell` was its execution count."""
    source = payload.get("source")
    if not str(payload.get("schema", "")).endswith("/1") or not isinstance(source, dict):
        return
    if source.get("path") is None and "execution_count" not in source:
        source["execution_count"] = source.pop("cell", None)
        source["cell"] = None


def annotate(payload: dict[str, Any], *, recorded: bool = False) -> dict[str, Any]:
    """Writes the display strings into `payload` (in place; returned for chaining) from its
    figures, replacing any there: per line `hints`, `label`, `hover`, `heat`; and `display`.
    Call it again after changing a payload (its error, its source). `recorded`: the payload
    is a saved one shown again, and says so."""
    _from_v1(payload)
    payload["schema"] = SCHEMA
    lines: list[PayloadLine] = payload.setdefault("lines", [])
    pinned = pinned_bandwidth(lines)
    context = LineContext.of(payload)
    heats = line_heats(context)
    shares = _shares(context)
    backend = payload.get("backend")
    loops = idle_loop_hints(payload)
    on_gpu = any((line.get("collectives") or {}).get("count") for line in lines)
    for line in lines:
        line["hints"] = line_hints(line, pinned, on_gpu)
        if line["line"] in loops:
            line["hints"].append(loops[line["line"]])
        line["label"] = line_label(line, context)
        line["hover"] = line_hover(line, backend, shares.get(line["line"]), context)
        line["heat"] = heats.get(line["line"], 0.0)
    payload["display"] = {
        "header": header(payload, context),
        "summary": summary(payload, context),
        "recorded": recorded_label(payload) if recorded else None,
        "message": run_message(payload),
        "level": message_level(payload),
        "notes": notes(payload),
        "table": table(payload, context),
    }
    return payload
