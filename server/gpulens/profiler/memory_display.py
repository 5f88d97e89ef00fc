"""What people read of a profile's GPU memory: per line and the cell's peak. Pure.

A payload line's `memory` holds, per view recorded, the bytes the line allocated and freed
and their difference (`alloc`, `free`, `net`); the payload's `peak`, per view, each GPU's
peak and the line that reached it (`memory.Peak`). The label, the table and the header
show one view: torch's allocator (`allocated`) where it was recorded, else the driver's
(`reserved`); the hover and the notes show both.
"""

from __future__ import annotations

from typing import Any

from gpulens.profiler.schema import PayloadLine
from gpulens.profiler.units import memory_bytes

# (view, what it is in words, what a line's bytes are called there)
_VIEWS = {
    "allocated": ("torch's allocator", "allocated", "freed"),
    "reserved": ("the driver", "reserved", "released"),
}
PEAK_MARK = "▲"
LEGEND = (
    "mem: GPU memory the line allocated less what it freed (torch's allocator; reserved: the "
    f"driver's), {PEAK_MARK} peak: the most held at once, first reached on that line"
)


def shown_view(views: Any) -> str | None:
    """The view the label, the table and the header show, of those in `views`."""
    if not isinstance(views, dict):
        return None
    return next((view for view in _VIEWS if view in views), None)


def signed_bytes(size: int) -> str:
    """+1.1 GB, −64 MB, 0 B."""
    if size == 0:
        return "0 B"
    return f"{'+' if size > 0 else '−'}{memory_bytes(abs(size))}"


def peaks_by_line(payload: dict[str, Any]) -> dict[int, list[tuple[str, dict[str, Any]]]]:
    """line -> (view, peak) of each peak the line reached."""
    found: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for view, peaks in (payload.get("peak") or {}).items():
        for peak in peaks or []:
            if peak.get("line") is not None and peak.get("rise", 0) > 0:
                found.setdefault(peak["line"], []).append((view, peak))
    return found


def _peak_size(peak: dict[str, Any]) -> str:
    size = peak.get("bytes")
    return memory_bytes(size) if isinstance(size, int) else f"+{memory_bytes(peak.get('rise', 0))}"


def _on_device(peak: dict[str, Any], several: bool) -> str:
    """Where a peak was: named where the cell used several GPUs (or ranks)."""
    if peak.get("rank") is not None:
        return f" on rank {peak['rank']} (GPU {peak.get('device')})"
    return f" on GPU {peak.get('device')}" if several else ""


def label_parts(line: PayloadLine, peaks: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """ "+1.1 GB mem", "peak 1.1 GB": the line's net change, and the peak it reached."""
    memory = line.get("memory")
    view = shown_view(memory)
    if view is None or not isinstance(memory, dict):
        return []
    parts = []
    net = memory[view].get("net", 0)
    if net:
        parts.append(f"{signed_bytes(net)} {'mem' if view == 'allocated' else 'reserved'}")
    parts += [f"peak {_peak_size(peak)}" for shown, peak in peaks if shown == view]
    return parts


def hover_rows(
    line: PayloadLine, peaks: list[tuple[str, dict[str, Any]]], several_devices: bool
) -> list[str]:
    """Rows of the hover: each view's bytes allocated and freed on the line, and the peaks
    the line reached."""
    memory = line.get("memory")
    if not isinstance(memory, dict):
        return []
    rows = []
    for view, (source, made, gone) in _VIEWS.items():
        tally = memory.get(view)
        if not isinstance(tally, dict) or not (tally.get("alloc") or tally.get("free")):
            continue
        rows.append(
            f"GPU memory ({source}): {memory_bytes(tally.get('alloc', 0))} {made} · "
            f"{memory_bytes(tally.get('free', 0))} {gone} · net {signed_bytes(tally.get('net', 0))}"
        )
    for view, peak in peaks:
        source, made, _ = _VIEWS.get(view, (view, view, ""))
        size = peak.get("bytes")
        rise = peak.get("rise", 0)
        if not isinstance(size, int):
            held = f"{memory_bytes(rise)} {made} over the cell's start"
        elif rise < size:
            held = f"{memory_bytes(size)} {made}, {memory_bytes(rise)} over the cell's start"
        else:
            held = f"{memory_bytes(size)} {made}, all of it since the cell began"
        rows.append(
            f"{PEAK_MARK} reached the cell's peak{_on_device(peak, several_devices)}: "
            f"{held} ({source})"
        )
    return rows


def cell(line: PayloadLine, peaks: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Its rows of the table's GPU work cell: the label's parts, one a row ("+1.0 GiB mem",
    "▲ peak 1.0 GiB"), so the column stays as narrow as the GPU work's own rows."""
    return [
        f"{PEAK_MARK} {part}" if part.startswith("peak ") else part
        for part in label_parts(line, peaks)
    ]


def several_devices(payload: dict[str, Any]) -> bool:
    devices = {
        peak.get("device") for peaks in (payload.get("peak") or {}).values() for peak in peaks or []
    }
    return len(devices) > 1


def _top(payload: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The shown view's highest peak that a line reached."""
    peaks = payload.get("peak") or {}
    view = shown_view(peaks)
    if view is None:
        return None
    reached = [p for p in peaks[view] or [] if p.get("line") is not None and p.get("rise", 0) > 0]
    if not reached:
        return None
    return view, max(reached, key=lambda p: (p.get("bytes") or 0, p.get("rise", 0)))


def header_part(payload: dict[str, Any]) -> str | None:
    """ "peak 1.1 GB at line 4" (torch's allocator; the driver's rise where torch's is not
    recorded)."""
    top = _top(payload)
    if top is None:
        return None
    view, peak = top
    words = "peak" if view == "allocated" else "reserved peak"
    return f"{words} {_peak_size(peak)} at line {peak['line']}"


def notes(payload: dict[str, Any]) -> list[str]:
    """One note per view recorded: each GPU's peak, where it was reached, and how far above
    the cell's start it was."""
    out = []
    several = several_devices(payload)
    for view, peaks in (payload.get("peak") or {}).items():
        source, made, _ = _VIEWS.get(view, (view, view, ""))
        parts = []
        for peak in peaks or []:
            where = f" at line {peak['line']}" if peak.get("line") is not None else ""
            size = peak.get("bytes")
            rise = peak.get("rise", 0)
            if isinstance(size, int):
                text = f"peak {memory_bytes(size)} {made}{_on_device(peak, several)}{where}"
                if 0 < rise < size:
                    text += f", {memory_bytes(rise)} over the cell's start"
            else:
                text = (
                    f"{made} memory{_on_device(peak, several)} rose by at most "
                    f"{memory_bytes(rise)}{where}"
                )
            parts.append(text)
        if parts:
            out.append(f"GPU memory ({source}): " + "; ".join(parts))
    return out
