"""The `gpulens.profile/1` payload, and its text and HTML renderings. Pure functions."""

from __future__ import annotations

import html
from typing import Any

from gpulens.profiler.attribution import Attribution
from gpulens.profiler.hints import line_hints, pinned_bandwidth
from gpulens.profiler.units import short_bytes, short_count, short_seconds

SCHEMA = "gpulens.profile/1"
TOP_KERNELS = 5


def _s(ns: int) -> float:
    return round(ns / 1e9, 9)


def _line_payload(cost: dict[str, Any]) -> dict[str, Any]:
    by_name = sorted(cost["kernels"]["by_name"].items(), key=lambda item: -item[1][1])
    line = {
        "line": cost["line"],
        "hits": cost["hits"],
        "host_s": _s(cost["host_ns"]),
        "kernels": {
            "count": cost["kernels"]["count"],
            "gpu_s": _s(cost["kernels"]["ns"]),
            "top": [
                {"name": name, "count": count, "gpu_s": _s(ns)}
                for name, (count, ns) in by_name[:TOP_KERNELS]
            ],
        },
        "transfers": {
            direction: {
                "count": block["count"],
                "bytes": block["bytes"],
                "s": _s(block["ns"]),
                "pageable": block["pageable"],
                "pinned": block["pinned"],
            }
            for direction, block in cost["transfers"].items()
        },
        "memsets": {
            "count": cost["memsets"]["count"],
            "bytes": cost["memsets"]["bytes"],
            "s": _s(cost["memsets"]["ns"]),
        },
        "syncs": {"count": cost["syncs"]["count"], "stall_s": _s(cost["syncs"]["stall_ns"])},
        "pageable": {"bytes": cost["pageable"]["bytes"], "s": _s(cost["pageable"]["ns"])},
        "pinned": {"bytes": cost["pinned"]["bytes"], "s": _s(cost["pinned"]["ns"])},
        "other_thread_calls": cost["other_thread_calls"],
    }
    if len(cost["devices"]) > 1 or any(device != 0 for device in cost["devices"]):
        line["devices"] = [
            {
                "index": device,
                "kernels": figures["kernels"],
                "gpu_s": _s(figures["kernel_ns"]),
                "transfers": figures["transfers"],
                "transfer_bytes": figures["transfer_bytes"],
                "transfer_s": _s(figures["transfer_ns"]),
            }
            for device, figures in sorted(cost["devices"].items())
        ]
    return line


def build_payload(
    attribution: Attribution,
    *,
    source: dict[str, Any],
    backend: str,
    gpus: list[dict[str, Any]] | None = None,
    warnings: list[str] | None = None,
    wall_s: float | None = None,
    error: dict[str, Any] | None = None,
    code: list[str] | None = None,
    timings: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The profile payload; `code` holds the profiled lines' text, for the renderers."""
    lines = [_line_payload(cost) for cost in attribution["lines"]]  # type: ignore[arg-type]
    pinned = pinned_bandwidth(lines)
    for line in lines:
        line["hints"] = line_hints(line, pinned)
    warnings = list(warnings or []) + _timeline_warnings(attribution)
    return {
        "schema": SCHEMA,
        "source": source,
        "backend": backend,
        "gpus": gpus or [],
        "wall_s": round(
            wall_s if wall_s is not None else _s(attribution["end"] - attribution["start"]), 6
        ),
        "warnings": warnings,
        "lines": lines,
        "unattributed": {
            "kernels": attribution["unattributed"]["kernels"],
            "transfers": attribution["unattributed"]["transfers"],
            "syncs": attribution["unattributed"]["syncs"],
            "memsets": attribution["unattributed"]["memsets"],
        },
        "error": error,
        "code": code or [],
        "timings": timings or {},
    }


def _timeline_warnings(attribution: Attribution) -> list[str]:
    """What a long cell's bounded line timeline cost the join by time, if anything."""
    found = []
    dropped = sum(attribution.get("dropped", {}).values())
    if dropped:
        found.append(
            f"{short_count(dropped)} GPU record{'' if dropped == 1 else 's'} could not be "
            "placed on a line (counted as unattributed): the call was made early in a long "
            "cell, from a stretch of its line timeline dropped to keep memory flat"
        )
    by_stack = attribution.get("by_stack", 0)
    if by_stack:
        calls = "GPU call was" if by_stack == 1 else "GPU calls were"
        found.append(
            f"{short_count(by_stack)} {calls} placed by Python stack: made early in this long "
            "cell, before the stretch of line timeline kept, and torch.profiler reports only "
            "after the cell; work launched from other threads there (autograd's backward) "
            "is unattributed"
        )
    return found


def failed_payload(
    source: dict[str, Any], message: str, error_type: str, **extra: Any
) -> dict[str, Any]:
    """A payload for a run that produced no profile (killed, crashed, never started)."""
    payload = {
        "schema": SCHEMA,
        "source": source,
        "backend": "none",
        "gpus": [],
        "wall_s": extra.pop("wall_s", 0.0),
        "warnings": extra.pop("warnings", []),
        "lines": [],
        "unattributed": {"kernels": 0, "transfers": 0, "syncs": 0, "memsets": 0},
        "error": {"type": error_type, "message": message, "line": None},
        "code": extra.pop("code", []),
    }
    payload.update(extra)
    return payload


# -- text ---------------------------------------------------------------------------------------
def _size(n: float) -> str:
    for unit in ("B", "K", "M", "G"):
        if n < 1000 or unit == "G":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1000
    return f"{n:.1f}G"


def _transfers_cell(line: dict[str, Any]) -> str:
    parts = []
    for direction, block in line.get("transfers", {}).items():
        if not block.get("count"):
            continue
        label = {"htod": "H2D", "dtoh": "D2H", "dtod": "D2D"}.get(direction, direction.upper())
        kind = ""
        if block.get("pageable"):
            kind = (
                " pageable"
                if block["pageable"] == block["count"]
                else f" {block['pageable']} pageable"
            )
        parts.append(
            f"{label} {block['count']}x {_size(block['bytes'])} {block['s'] * 1e3:.2f}ms{kind}"
        )
    return "; ".join(parts)


def _location(payload: dict[str, Any]) -> str:
    source = payload.get("source", {})
    where = source.get("path") or "<cell>"
    if source.get("cell") is not None:
        where += f" cell {source['cell']}"
    if source.get("first_line") and source.get("last_line"):
        where += f" (lines {source['first_line']}-{source['last_line']})"
    return where


def _ms(seconds: float, count: int) -> str:
    return f"{seconds * 1e3:.2f}" if count else ""


def _source_rows(payload: dict[str, Any]) -> list[tuple[int, str, dict[str, Any] | None]]:
    """(line number, source text, the line's costs or None) for every line of the cell, or
    for the profiled lines alone when the payload carries no source."""
    by_line = {line["line"]: line for line in payload.get("lines", [])}
    first = payload.get("source", {}).get("first_line") or 1
    code = payload.get("code") or []
    if not code:
        return [(number, "", by_line[number]) for number in sorted(by_line)]
    return [
        (number, text.rstrip("\n"), by_line.get(number))
        for number, text in enumerate(code, start=first)
    ]


def render_text(payload: dict[str, Any]) -> str:
    """A line_profiler-style table: every line of the cell, its costs, then hints."""
    out = [
        f"gpulens profile: {_location(payload)}  backend={payload.get('backend')}  "
        f"wall {payload.get('wall_s', 0):.3f} s"
    ]
    for gpu in payload.get("gpus", []):
        out.append(f"GPU {gpu['index']}: {gpu['name']}")
    header = (
        f"{'Line':>6} {'Hits':>7} {'Host ms':>9} {'Kernels':>8} {'GPU ms':>9} "
        f"{'Syncs':>6} {'Stall ms':>9}  {'Copies':<34} Source"
    )
    out += ["", header, "=" * len(header)]
    for number, text, line in _source_rows(payload):
        if line is None:
            out.append(
                f"{number:>6} {'':>7} {'':>9} {'':>8} {'':>9} {'':>6} {'':>9}  {'':<34} {text}"
            )
            continue
        kernels, syncs = line["kernels"], line["syncs"]
        gpu_ms = _ms(kernels["gpu_s"], kernels["count"])
        stall_ms = _ms(syncs["stall_s"], syncs["count"])
        out.append(
            f"{number:>6} {line['hits']:>7} {line['host_s'] * 1e3:>9.2f} "
            f"{kernels['count'] or '':>8} {gpu_ms:>9} {syncs['count'] or '':>6} {stall_ms:>9}  "
            f"{_transfers_cell(line):<34} {text}"
        )
    hints = [
        (line["line"], hint) for line in payload.get("lines", []) for hint in line.get("hints", [])
    ]
    if hints:
        out += ["", "Hints:"]
        out += [f"  line {number}: {hint['message']}" for number, hint in hints]
    lost = payload.get("unattributed", {})
    if any(lost.values()):
        out += ["", "Unattributed: " + ", ".join(f"{v} {k}" for k, v in lost.items() if v)]
    error = payload.get("error")
    if error:
        at = f" at line {error['line']}" if error.get("line") else ""
        out += ["", f"The cell stopped{at}: {error['type']}: {error['message']}"]
    for warning in payload.get("warnings", []):
        out.append(f"note: {warning}")
    return "\n".join(out) + "\n"


# -- html ---------------------------------------------------------------------------------------
_STYLE = """
.gpulens-profile{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:#222}
.gpulens-profile table{border-collapse:collapse}
.gpulens-profile th{text-align:right;border-bottom:1px solid #999;padding:2px 8px;
  background:#f3f3f3}
.gpulens-profile td{text-align:right;padding:1px 8px;white-space:nowrap}
.gpulens-profile td.src{text-align:left;white-space:pre}
.gpulens-profile td.copies{text-align:left}
.gpulens-profile tr.hot td{background:#fff3e0}
.gpulens-profile .hint{color:#8a4b00}
.gpulens-profile .error{color:#b00020}
.gpulens-profile .note{color:#666}
"""


def render_html(payload: dict[str, Any], page: bool = False) -> str:
    """An HTML table of the profile; `page=True` gives a self-contained document."""
    esc = html.escape
    rows = []
    gpu_total = sum(line["kernels"]["gpu_s"] for line in payload.get("lines", [])) or 0
    for number, text, line in _source_rows(payload):
        if line is None:
            rows.append(
                f'<tr><td>{number}</td><td colspan="7"></td><td class="src">{esc(text)}</td></tr>'
            )
            continue
        hot = gpu_total and line["kernels"]["gpu_s"] >= 0.2 * gpu_total
        kernels, syncs = line["kernels"], line["syncs"]
        title = esc(
            "\n".join(
                f"{k['count']}x {k['gpu_s'] * 1e3:.3f} ms {k['name']}" for k in kernels["top"]
            )
        )
        rows.append(
            f"<tr{' class=hot' if hot else ''}><td>{number}</td><td>{line['hits']}</td>"
            f"<td>{line['host_s'] * 1e3:.2f}</td>"
            f'<td title="{title}">{kernels["count"] or ""}</td>'
            f"<td>{_ms(kernels['gpu_s'], kernels['count'])}</td>"
            f"<td>{syncs['count'] or ''}</td>"
            f"<td>{_ms(syncs['stall_s'], syncs['count'])}</td>"
            f'<td class="copies">{esc(_transfers_cell(line))}</td>'
            f'<td class="src">{esc(text)}</td></tr>'
        )
        for hint in line.get("hints", []):
            rows.append(
                f'<tr><td></td><td colspan="8" class="hint" style="text-align:left">'
                f"&#9656; {esc(hint['message'])}</td></tr>"
            )
    gpus = ", ".join(f"GPU {g['index']}: {esc(g['name'])}" for g in payload.get("gpus", []))
    notes = [f'<div class="note">note: {esc(w)}</div>' for w in payload.get("warnings", [])]
    error = payload.get("error")
    if error:
        at = f" at line {error['line']}" if error.get("line") else ""
        stopped = f"The cell stopped{at}: {error['type']}: {error['message']}"
        notes.insert(0, f'<div class="error">{esc(stopped)}</div>')
    lost = payload.get("unattributed", {})
    if any(lost.values()):
        notes.append(
            '<div class="note">unattributed: '
            + esc(", ".join(f"{v} {k}" for k, v in lost.items() if v))
            + "</div>"
        )
    backend = esc(str(payload.get("backend")))
    wall = f"{payload.get('wall_s', 0):.3f}"
    heads = ("Line", "Hits", "Host ms", "Kernels", "GPU ms", "Syncs", "Stall ms", "Copies")
    header = "".join(f"<th>{h}</th>" for h in heads) + "<th style='text-align:left'>Source</th>"
    body = (
        f'<div class="gpulens-profile"><style>{_STYLE}</style>'
        f"<div><b>gpulens profile</b> {esc(_location(payload))} &middot; backend {backend}"
        f" &middot; wall {wall} s{' &middot; ' + gpus if gpus else ''}</div>"
        f"<table><thead><tr>{header}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{''.join(notes)}</div>"
    )
    if not page:
        return body
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>gpulens profile</title></head>'
        f"<body>{body}</body></html>\n"
    )


# -- one line, for editors ----------------------------------------------------------------------
# What an editor draws after a profiled line (`format_line_costs`), shows on hover
# (`format_line_details`) and says when a run stops (`format_run_message`). The language server
# sends these strings as they are; the VS Code and JupyterLab clients draw payloads of the
# `%%gpulens` magic themselves and mirror these rules.

_ARROWS = {"htod": "↑", "dtoh": "↓", "dtod": "↔"}
_DIRECTIONS = {"htod": "host→device", "dtoh": "device→host", "dtod": "device→device"}
# a kernel name longer than this is cut in the hover: C++ template names run to kilobytes
KERNEL_NAME_CHARS = 80


def _plural(count: int, word: str) -> str:
    return f"{short_count(count)} {word}{'' if count == 1 else 's'}"


def _made_device_work(line: dict[str, Any]) -> bool:
    transfers = line.get("transfers") or {}
    return bool(
        (line.get("kernels") or {}).get("count")
        or any(block.get("count") for block in transfers.values())
        or (line.get("memsets") or {}).get("count")
        or (line.get("syncs") or {}).get("count")
    )


def format_line_costs(line: dict[str, Any]) -> str:
    """The text drawn after a profiled line, from one `lines[]` entry of the payload.

    GPU work: "1.4k kernels · 8.7 ms GPU · ↑400 MB 62 ms · ⏸200 2.2 ms" (kernels and their GPU
    time, copies by direction ↑ host→device, ↓ device→host, ↔ device→device with bytes and
    time, memsets, then host waits on the GPU: count and stall). A line that made no GPU work
    shows its host figures: "200 hits · 51 ms host".
    """
    if not _made_device_work(line):
        return (
            f"{_plural(line.get('hits', 0), 'hit')} · {short_seconds(line.get('host_s', 0))} host"
        )
    parts: list[str] = []
    kernels = line.get("kernels") or {}
    if kernels.get("count"):
        parts.append(_plural(kernels["count"], "kernel"))
        parts.append(f"{short_seconds(kernels.get('gpu_s', 0))} GPU")
    for direction, block in (line.get("transfers") or {}).items():
        if block.get("count"):
            arrow = _ARROWS.get(direction, direction)
            parts.append(f"{arrow}{short_bytes(block.get('bytes', 0))} {short_seconds(block['s'])}")
    memsets = line.get("memsets") or {}
    if memsets.get("count"):
        parts.append(f"{_plural(memsets['count'], 'memset')} {short_seconds(memsets['s'])}")
    syncs = line.get("syncs") or {}
    if syncs.get("count"):
        parts.append(f"⏸{short_count(syncs['count'])} {short_seconds(syncs.get('stall_s', 0))}")
    return " · ".join(parts)


def _markdown_text(text: str) -> str:
    """Plain text safe inside Markdown, tables too (kernel names hold `*`, `_`, `<` and `|`);
    only what would change the rendering is escaped, so plain-text clients stay readable."""
    return "".join(f"\\{char}" if char in "\\`*_[]<>|" else char for char in text)


def _kernel_name(name: str) -> str:
    """A code span for a table cell: cut, and without the `|` that would split the cell."""
    if len(name) > KERNEL_NAME_CHARS:
        name = name[: KERNEL_NAME_CHARS - 1] + "…"
    return "`" + name.replace("`", "'").replace("|", "¦") + "`"


def format_line_details(line: dict[str, Any], backend: str | None = None) -> str:
    """Markdown for the hover of a profiled line: runs and host time, kernels (the top ones in
    a table), copies, memsets, syncs, then the line's hints (the payload's `hints`)."""
    hits, host_s = line.get("hits", 0), line.get("host_s", 0)
    head = f"**gpulens profile** · line {line.get('line')}"
    if backend:
        head += f" · {_markdown_text(backend)} backend"
    out = [head, "", f"- ran {_plural(hits, 'time')} · {short_seconds(host_s)} on the host"]
    kernels = line.get("kernels") or {}
    if kernels.get("count"):
        out.append(
            f"- {_plural(kernels['count'], 'kernel')} · "
            f"{short_seconds(kernels.get('gpu_s', 0))} on the GPU"
        )
    for direction, block in (line.get("transfers") or {}).items():
        if not block.get("count"):
            continue
        size, seconds = block.get("bytes", 0), block.get("s", 0)
        text = (
            f"- {_ARROWS.get(direction, '')} {_DIRECTIONS.get(direction, direction)}: "
            f"{block['count']} cop{'y' if block['count'] == 1 else 'ies'} · "
            f"{short_bytes(size)} · {short_seconds(seconds)}"
        )
        if size and seconds > 0:
            text += f" · {size / seconds / 1e9:.1f} GB/s"
        if block.get("pageable"):
            text += f" · {block['pageable']} from pageable memory"
        out.append(text)
    memsets = line.get("memsets") or {}
    if memsets.get("count"):
        out.append(
            f"- {_plural(memsets['count'], 'memset')} · {short_bytes(memsets.get('bytes', 0))} · "
            f"{short_seconds(memsets.get('s', 0))}"
        )
    syncs = line.get("syncs") or {}
    if syncs.get("count"):
        out.append(
            f"- ⏸ the host waited for the GPU {_plural(syncs['count'], 'time')} · "
            f"{short_seconds(syncs.get('stall_s', 0))} stalled"
        )
    top = kernels.get("top") or []
    if top:
        out += ["", "| top kernels | launches | GPU time |", "|---|---:|---:|"]
        out += [
            f"| {_kernel_name(k['name'])} | {short_count(k['count'])} | "
            f"{short_seconds(k['gpu_s'])} |"
            for k in top
        ]
    hints = line.get("hints") or []
    for hint in hints:
        out += ["", f"💡 {_markdown_text(hint['message'])}"]
    return "\n".join(out)


def _run_name(payload: dict[str, Any]) -> str:
    source = payload.get("source") or {}
    name = str(source.get("path") or "the file").replace("\\", "/").rsplit("/", 1)[-1]
    cell = source.get("cell")
    if cell is None:
        return name
    return f"the code before the first cell of {name}" if cell == 0 else f"cell {cell} of {name}"


def format_run_message(payload: dict[str, Any]) -> str | None:
    """One sentence for the user when a profile did not run to the end (or ran nothing):
    what happened and what to do. None for a run that went well."""
    error = payload.get("error")
    where = _run_name(payload)
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
    if kind in ("InterpreterError", "InterpreterExit", "SetupError", "RequestError"):
        return f"gpulens: {where} was not profiled: {message}."
    if kind == "SyntaxError":
        return f"gpulens: {where} has a syntax error ({message}); fix it and profile again."
    return f"gpulens: {where} raised {kind}{at}: {message}.{shown} Fix it and profile again."
