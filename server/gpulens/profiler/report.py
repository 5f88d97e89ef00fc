"""The `gpulens.profile/2.1` payload, and its text and HTML renderings. Pure functions.

The payload's figures come from the attribution, one block per record kind
(`schema.RECORD_KINDS`); its words (labels, hovers, heat, the table) from
`display.annotate`, which every payload made here goes through.
"""

from __future__ import annotations

import copy
import html
import textwrap
from collections.abc import Mapping
from typing import Any

from gpulens.profiler import schema
from gpulens.profiler.attribution import Attribution, Sampled
from gpulens.profiler.display import annotate
from gpulens.profiler.schema import SCHEMA, LineCost, kind_counts, seconds
from gpulens.profiler.timeline import RAW_EVENTS_KEPT
from gpulens.profiler.units import short_count, short_seconds

# the text report is laid out for a terminal this wide: the source starts well inside it
TEXT_WIDTH = 100
_GAP = "  "


def _line_payload(cost: LineCost) -> dict[str, Any]:
    line: dict[str, Any] = {
        "line": cost["line"],
        "hits": cost["hits"],
        "host_s": seconds(cost["host_ns"]),
    }
    if cost.get("sampled"):
        line["sampled"] = True
    for kind in schema.RECORD_KINDS:
        line.update(kind.payload(cost))
    line["other_thread_calls"] = cost["other_thread_calls"]
    views = cost.get("memory") or {}
    line["memory"] = (
        {
            view: {
                "alloc": tally["alloc"],
                "free": tally["free"],
                "net": tally["alloc"] - tally["free"],
            }
            for view, tally in views.items()
        }
        if views
        else None
    )
    idle_ns, own_ns = cost.get("gpu_idle_ns"), cost.get("own_ns")
    line["gpu_idle_s"] = None if idle_ns is None else seconds(idle_ns)
    line["own_s"] = None if own_ns is None else seconds(own_ns)
    if len(cost["devices"]) > 1 or any(device != 0 for device in cost["devices"]):
        line["devices"] = [
            {
                "index": device,
                "kernels": figures["kernels"],
                "gpu_s": seconds(figures["kernel_ns"]),
                "transfers": figures["transfers"],
                "transfer_bytes": figures["transfer_bytes"],
                "transfer_s": seconds(figures["transfer_ns"]),
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
    timings: Mapping[str, float | None] | None = None,
    time: str | None = None,
) -> dict[str, Any]:
    """The profile payload; `code` holds the profiled lines' text, for the renderers;
    `time` when the run ended (ISO 8601), for a saved profile shown again."""
    lines = [_line_payload(cost) for cost in attribution["lines"]]
    warnings = list(warnings or []) + _timeline_warnings(attribution)
    return annotate(
        {
            "schema": SCHEMA,
            "source": source,
            "backend": backend,
            "gpus": gpus or [],
            "wall_s": round(
                wall_s
                if wall_s is not None
                else seconds(attribution["end"] - attribution["start"]),
                6,
            ),
            "warnings": warnings,
            "lines": lines,
            "unattributed": {
                kind.key: attribution["unattributed"].get(kind.key, 0)
                for kind in schema.RECORD_KINDS
            },
            "error": error,
            "code": code or [],
            "timings": dict(timings or {}),
            "time": time,
            "peak": _peak_payload(attribution),
            "gpu_busy": _busy_payload(attribution),
        }
    )


def _peak_payload(attribution: Attribution) -> dict[str, Any] | None:
    """Per memory view recorded, each GPU's peak (see `memory.Peak`); None: none recorded."""
    memory = attribution.get("memory")
    if not memory or not memory["views"]:
        return None
    return {
        view: [dict(peak) for peak in memory["peaks"].get(view, [])] for view in memory["views"]
    }


def _busy_payload(attribution: Attribution) -> dict[str, Any] | None:
    """The GPU's busy time over the cell and its share of the cell's time; None where the
    records carry no device times."""
    idle = attribution.get("idle")
    if not idle:
        return None
    share = idle["busy_ns"] / idle["span_ns"] if idle["span_ns"] else 0.0
    return {"s": seconds(idle["busy_ns"]), "share": round(min(1.0, share), 4)}


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
    memory = attribution.get("memory")
    unplaced = sum((memory or {}).get("unplaced", {}).values())
    if unplaced:
        found.append(
            f"{short_count(unplaced)} GPU memory record{'' if unplaced == 1 else 's'} could not "
            "be placed on a line (made while the main thread ran none of the cell's lines, or "
            "early in a long cell, from a stretch of its line timeline dropped)"
        )
    idle = attribution.get("idle")
    if idle and idle["measured_from"] > attribution["start"]:
        covered = seconds(attribution["end"] - idle["measured_from"])
        found.append(
            f"GPU idle time per line covers the last {short_seconds(covered)} of this long "
            "cell: the line timeline before it was dropped to keep memory flat"
        )
    sampled = attribution.get("sampled")
    if sampled and sampled["lines"]:
        found.append(sampled_note(sampled, attribution["end"] - attribution["start"]))
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


def sampled_note(sampled: Sampled, span_ns: int) -> str:
    """What sampling a Python-heavy stretch did to the figures (`gpulens.profiler.sampling`)."""
    lines = sampled["lines"]
    named = (
        f"line {lines[0]}"
        if len(lines) == 1
        else "lines " + ", ".join(map(str, lines[:-1])) + f" and {lines[-1]}"
    )
    share = sampled["quiet_ns"] / span_ns if span_ns > 0 else 0.0
    note = (
        f"{named[0].upper()}{named[1:]} ran too often and too fast to record every run: past "
        f"the cell's first {RAW_EVENTS_KEPT:,} line events, "
        f"{short_seconds(seconds(sampled['quiet_ns']))} ({share:.0%} of the cell) ran "
        "unrecorded between recorded stretches; their hits count the runs recorded (shown "
        "with +) and their host time there is estimated from them (shown with ≈)"
    )
    calls = sampled["calls"]
    if calls:
        note += (
            f"; {short_count(calls)} GPU call{' was' if calls == 1 else 's were'} made "
            "while they ran unrecorded: not placed on a line"
        )
    return note


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
        "unattributed": kind_counts(),
        "error": {"type": error_type, "message": message, "line": None},
        "code": extra.pop("code", []),
        "peak": None,
        "gpu_busy": None,
    }
    payload.update(extra)
    return annotate(payload)


# -- text ---------------------------------------------------------------------------------------
def _shown(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload's display block, made on a copy when the payload has none."""
    display = payload.get("display")
    if isinstance(display, dict):
        return display
    made: dict[str, Any] = annotate(copy.deepcopy(payload))["display"]
    return made


def _wrapped(text: str, width: int, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False) or [""]


def _wrapped_parts(text: str, width: int, indent: str = "  ", sep: str = " · ") -> list[str]:
    """`text` wrapped between its " · "-separated parts where it can be."""
    out: list[str] = []
    for part in text.split(sep):
        if out and len(out[-1]) + len(sep) + len(part) <= width:
            out[-1] += sep + part
        else:
            out += _wrapped(indent + part if out else part, width, indent)
    return out


def _text_rows(table: dict[str, Any]) -> list[str]:
    """The table as text: columns as wide as their widest cell, a cell of several parts on
    rows of its own under its line, the source last and unpadded."""
    columns = table["columns"]
    figures = len(columns) - 1  # every column but Source
    widths = [len(column["title"]) for column in columns[:figures]]
    for row in table["rows"]:
        for i, cell in enumerate(row["cells"][:figures]):
            widths[i] = max(widths[i], *(len(part) for part in cell.split("\n")))

    def lay_out(cells: list[str]) -> str:
        padded = [
            cell.rjust(width) if column["align"] == "right" else cell.ljust(width)
            for cell, width, column in zip(cells[:figures], widths, columns, strict=False)
        ]
        return (_GAP.join(padded) + _GAP + cells[figures]).rstrip()

    head = lay_out([column["title"] for column in columns])
    out = [head, "=" * len(head)]
    for row in table["rows"]:
        parts = [cell.split("\n") for cell in row["cells"]]
        for depth in range(max(len(part) for part in parts)):
            out.append(lay_out([part[depth] if depth < len(part) else "" for part in parts]))
    return out


def render_text(payload: dict[str, Any], width: int = TEXT_WIDTH) -> str:
    """A line_profiler-style table: every line of the cell, its costs, then hints and notes;
    laid out for `width` columns (the source column starts well inside them)."""
    shown = _shown(payload)
    out = _wrapped_parts(shown["header"], width)
    if shown.get("recorded"):
        out += _wrapped(shown["recorded"], width)
    out += ["", *_text_rows(shown["table"])]
    if shown["table"].get("legend"):
        out += _wrapped(shown["table"]["legend"], width)
    if shown["notes"]:
        out.append("")
        for note in shown["notes"]:
            out += _wrapped(note, width)
    return "\n".join(out) + "\n"


# -- html ---------------------------------------------------------------------------------------
# colours from the page (a notebook's theme, dark or light); the heat tint is the editors'
_STYLE = """
.gpulens-profile{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.gpulens-profile table{border-collapse:collapse}
.gpulens-profile th{border-bottom:1px solid currentColor;padding:2px 8px}
.gpulens-profile td{padding:1px 8px;white-space:pre;vertical-align:top}
.gpulens-profile .right{text-align:right}
.gpulens-profile .left{text-align:left}
.gpulens-profile .note{opacity:.8}
.gpulens-profile .error{color:#d32f2f}
"""


def _heat_style(heat: float) -> str:
    return f' style="background:rgba(255,140,0,{0.06 + 0.3 * heat:.3f})"' if heat > 0 else ""


def render_html(payload: dict[str, Any], page: bool = False) -> str:
    """An HTML table of the profile; `page=True` gives a self-contained document."""
    esc = html.escape
    shown = _shown(payload)
    table = shown["table"]
    aligns = [column["align"] for column in table["columns"]]
    header = "".join(
        f'<th class="{column["align"]}">{esc(column["title"])}</th>' for column in table["columns"]
    )
    rows = "".join(
        f"<tr{_heat_style(row['heat'])}>"
        + "".join(
            f'<td class="{align}">{esc(cell)}</td>'
            for cell, align in zip(row["cells"], aligns, strict=False)
        )
        + "</tr>"
        for row in table["rows"]
    )
    lines = [f"<div><b>{esc(shown['header'])}</b></div>"]
    if shown.get("recorded"):
        lines.append(f"<div>{esc(shown['recorded'])}</div>")
    after = []
    if table.get("legend"):
        after.append(f'<div class="note">{esc(table["legend"])}</div>')
    after += [f'<div class="note">{esc(note)}</div>' for note in shown["notes"]]
    if shown.get("message") and shown.get("level") == "error":
        after.insert(0, f'<div class="error">{esc(shown["message"])}</div>')
    body = (
        f'<div class="gpulens-profile"><style>{_STYLE}</style>{"".join(lines)}'
        f"<table><thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table>"
        f"{''.join(after)}</div>"
    )
    if not page:
        return body
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>gpulens profile</title></head>'
        f"<body>{body}</body></html>\n"
    )
