"""The ``gpulens.status/1`` payload: built from readings by pure functions, formatted for people.

``build_status`` joins an NVML reading, the framework reports and ``CUDA_VISIBLE_DEVICES`` into
the payload every client shows; ``format_status_line`` (status bars) and
``format_status_table`` (``gpulens status``) are the one way to render it. ``StatusSource`` is
the edge that gathers live readings for the CLI, the language server and Jupyter;
``StatusPoller`` hands them on at an interval.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpulens.device.frameworks import (
    FrameworkProbeCache,
    FrameworkReport,
    interpreter_env_visible_devices,
)
from gpulens.device.nvml import NvmlMonitor, NvmlReading
from gpulens.device.recorded import backend_from_env

SCHEMA = "gpulens.status/1"
logger = logging.getLogger(__name__)
GIB = 1024**3

# Report keys that stay inside gpulens (diagnostics of the probe itself), not in the payload.
_PRIVATE_REPORT_KEYS = frozenset({"installed", "python", "python_version", "cuda_visible_devices"})


# --- CUDA_VISIBLE_DEVICES ---------------------------------------------------------------------


def cuda_ordinals(
    cuda_visible_devices: str | None, gpus: Sequence[Mapping[str, Any]]
) -> dict[int, int]:
    """Map NVML index -> CUDA ordinal for the GPUs that ``CUDA_VISIBLE_DEVICES`` lets through.

    Follows the CUDA runtime's rules: entries are indices or (prefixes of) ``GPU-``/``MIG-``
    UUIDs; the list stops at the first entry that names no GPU (so ``"-1"`` or ``""`` hides all);
    a GPU named twice makes the whole list invalid. Unset means every GPU, in NVML order.
    Indices are NVML's (PCI bus order), which matches CUDA when ``CUDA_DEVICE_ORDER=PCI_BUS_ID``
    or the GPUs are alike, as nvidia-smi assumes too.
    """
    indices = [int(gpu["index"]) for gpu in gpus]
    if cuda_visible_devices is None:
        return {index: ordinal for ordinal, index in enumerate(indices)}
    chosen: list[int] = []
    for raw in cuda_visible_devices.split(","):
        entry = raw.strip()
        match = _match_entry(entry, gpus)
        if match is None:
            break
        if match in chosen:
            return {}
        chosen.append(match)
    return {index: ordinal for ordinal, index in enumerate(chosen)}


def _match_entry(entry: str, gpus: Sequence[Mapping[str, Any]]) -> int | None:
    if not entry:
        return None
    if entry.isdigit():
        wanted = int(entry)
        return wanted if any(int(g["index"]) == wanted for g in gpus) else None
    lowered = entry.lower()
    if lowered.startswith(("gpu-", "mig-")):
        found = [
            int(g["index"])
            for g in gpus
            if str(g.get("uuid") or "").lower().startswith(lowered)
            or any(
                str(m.get("uuid") or "").lower().startswith(lowered)
                for m in g.get("mig_devices") or []
            )
        ]
        return found[0] if len(found) == 1 else None  # an ambiguous prefix names no GPU
    return None


# --- the payload ------------------------------------------------------------------------------


def _public_report(report: FrameworkReport) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in _PRIVATE_REPORT_KEYS}


def build_status(
    nvml: NvmlReading,
    frameworks: Mapping[str, FrameworkReport] | None,
    cuda_visible_devices: str | None,
    now: dt.datetime,
) -> dict[str, Any]:
    """The ``gpulens.status/1`` payload. Pure: everything it shows comes in as arguments.

    Frameworks that are not installed are left out; ``frameworks_state`` says whether the
    probe has answered yet (``pending`` while it runs).
    """
    ordinals = cuda_ordinals(cuda_visible_devices, nvml["gpus"])
    gpus: list[dict[str, Any]] = []
    for reading in nvml["gpus"]:
        gpu: dict[str, Any] = dict(reading)
        index = int(reading["index"])
        gpu["visible"] = index in ordinals
        gpu["cuda_device"] = f"cuda:{ordinals[index]}" if index in ordinals else None
        gpus.append(gpu)
    shown = {
        name: _public_report(report)
        for name, report in (frameworks or {}).items()
        if report.get("installed", True) and not name.startswith("_")
    }
    return {
        "schema": SCHEMA,
        "time": now.astimezone().isoformat(timespec="seconds"),
        "available": nvml["available"],
        "reason": nvml["reason"],
        "driver_version": nvml["driver_version"],
        "cuda_driver_version": nvml["cuda_driver_version"],
        "gpus": gpus,
        "cuda_visible_devices": cuda_visible_devices,
        "frameworks": shown,
        "frameworks_state": "pending" if frameworks is None else "ready",
    }


# --- formatting -------------------------------------------------------------------------------


def _gib(value: int | None) -> str:
    return "?" if value is None else f"{value / GIB:.1f}"


def _short_name(name: str | None) -> str:
    return (name or "GPU").removeprefix("NVIDIA ").strip()


def _framework_devices(status: Mapping[str, Any]) -> list[str]:
    seen: list[str] = []
    for report in status.get("frameworks", {}).values():
        for device in report.get("devices") or []:
            if not str(device).startswith("cpu") and device not in seen:
                seen.append(device)
    return seen


def format_status_line(status: Mapping[str, Any]) -> str:
    """One short line for a status bar, e.g. ``H200 37% · 12.3/139.8 GiB · 45°C · 72 W``."""
    if not status.get("available"):
        others = _framework_devices(status)
        if others:  # Apple mps, ROCm or TPUs: no NVML, yet a framework has a device
            return "GPU: " + ", ".join(others)
        return "CPU only"
    gpus = [g for g in status["gpus"] if g.get("visible", True)] or list(status["gpus"])
    if len(gpus) == 1:
        gpu = gpus[0]
        if gpu.get("error"):
            return f"{_short_name(gpu.get('name'))}: unavailable"
        parts = [
            f"{_short_name(gpu.get('name'))} {gpu.get('utilization_pct', '?')}%",
            f"{_gib(gpu.get('memory_used_bytes'))}/{_gib(gpu.get('memory_total_bytes'))} GiB",
        ]
        if gpu.get("temperature_c") is not None:
            parts.append(f"{gpu['temperature_c']}°C")
        if gpu.get("power_w") is not None:
            parts.append(f"{gpu['power_w']:.0f} W")
        return " · ".join(parts)
    cells = []
    for gpu in gpus:
        if gpu.get("error"):
            cells.append(f"{gpu['index']}: lost")
        else:
            cells.append(
                f"{gpu['index']}: {gpu.get('utilization_pct', '?')}% "
                f"{_gib(gpu.get('memory_used_bytes'))}G"
            )
    return f"{len(gpus)} GPUs · " + " · ".join(cells)


def format_status_tooltip(status: Mapping[str, Any]) -> str:
    """Why the line says what it says: the reason when there is no GPU, else the table."""
    if not status.get("available") and status.get("reason"):
        return str(status["reason"])
    return format_status_table(status)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _gpu_row(gpu: Mapping[str, Any], label: str) -> list[str]:
    if gpu.get("error"):
        return [label, _short_name(gpu.get("name")), "-", "-", "-", "-", "-", "lost"]
    power = "-"
    if gpu.get("power_w") is not None:
        limit = gpu.get("power_limit_w")
        power = f"{gpu['power_w']:.0f}" + (f" / {limit:.0f} W" if limit else " W")
    memory = f"{_gib(gpu.get('memory_used_bytes'))} / {_gib(gpu.get('memory_total_bytes'))} GiB"
    util = gpu.get("utilization_pct")
    temp = gpu.get("temperature_c")
    clock = gpu.get("sm_clock_mhz")
    visible = "yes" if gpu.get("visible", True) else "hidden"
    if gpu.get("cuda_device"):
        visible = str(gpu["cuda_device"])
    return [
        label,
        _short_name(gpu.get("name")),
        "-" if util is None else f"{util}%",
        memory,
        "-" if temp is None else f"{temp}°C",
        power,
        "-" if clock is None else f"{clock} MHz",
        visible,
    ]


def format_status_table(status: Mapping[str, Any]) -> str:
    """The human view of a status payload, as ``gpulens status`` prints it."""
    lines: list[str] = []
    if status.get("available"):
        lines.append(
            f"NVIDIA driver {status.get('driver_version') or '?'} · "
            f"CUDA {status.get('cuda_driver_version') or '?'} · "
            f"CUDA_VISIBLE_DEVICES={_cvd(status.get('cuda_visible_devices'))}"
        )
        rows = [["GPU", "Name", "Util", "Memory", "Temp", "Power", "SM clock", "Visible as"]]
        processes: list[str] = []
        for gpu in status["gpus"]:
            rows.append(_gpu_row(gpu, str(gpu["index"])))
            for mig in gpu.get("mig_devices") or []:
                rows.append(_gpu_row(mig, f" └ MIG {mig['index']}"))
            for process in gpu.get("processes") or []:
                processes.append(
                    f"  GPU {gpu['index']}  pid {process['pid']:<8} "
                    f"{(process.get('name') or '?'):<20} "
                    f"{_gib(process.get('used_memory_bytes'))} GiB"
                )
        lines.extend(_table(rows))
        for gpu in status["gpus"]:
            if gpu.get("error"):
                lines.append(f"GPU {gpu['index']}: {gpu['error']}")
            elif gpu.get("processes_error"):
                lines.append(f"GPU {gpu['index']}: {gpu['processes_error']}")
        lines.append("Processes:" if processes else "Processes: none")
        lines.extend(processes)
    else:
        lines.append(f"CPU only: {status.get('reason') or 'no GPU found.'}")
    frameworks = status.get("frameworks") or {}
    if status.get("frameworks_state") == "pending":
        lines.append("Frameworks: probing…")
    elif not frameworks:
        lines.append("Frameworks: none of torch, cupy, jax, numba, tensorflow is installed")
    else:
        lines.append("Frameworks:")
        rows = []
        for name, report in frameworks.items():
            if report.get("error"):
                rows.append([f"  {name}", report.get("version") or "?", "", report["error"]])
                continue
            devices = ", ".join(report.get("devices") or []) or "no GPU"
            build = report.get("build") or "?"
            runtime = report.get("cuda_runtime")
            detail = f"{build} build" + (f", CUDA {runtime}" if runtime else "")
            rows.append([f"  {name}", report.get("version") or "?", devices, detail])
        lines.extend(_table(rows))
    return "\n".join(lines)


def _cvd(value: str | None) -> str:
    return "(unset)" if value is None else repr(value)


# --- the live source ----------------------------------------------------------------------------


class StatusSource:
    """Gathers live readings into payloads: NVML on every call, frameworks from a cache.

    One instance per process: it owns the NVML session (initialised once) and the probe cache.
    """

    def __init__(
        self,
        monitor: NvmlMonitor | None = None,
        probes: FrameworkProbeCache | None = None,
    ) -> None:
        self.monitor = monitor if monitor is not None else NvmlMonitor(backend_from_env())
        self.probes = probes if probes is not None else FrameworkProbeCache()

    def snapshot(self, *, wait_for_frameworks: bool = False) -> dict[str, Any]:
        reports = self.probes.get(block=wait_for_frameworks)
        if reports is not None:
            visible = interpreter_env_visible_devices(reports)
        else:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return build_status(self.monitor.read(), reports, visible, dt.datetime.now(dt.UTC))

    def close(self) -> None:
        self.monitor.close()


_shared: list[StatusSource] = []
_shared_lock = threading.Lock()


def shared_source() -> StatusSource:
    """The process-wide source, so NVML is initialised once however many callers ask."""
    with _shared_lock:
        if not _shared:
            _shared.append(StatusSource())
        return _shared[0]


# --- polling ------------------------------------------------------------------------------------

DEFAULT_INTERVAL_S = 2.0
# Faster than this is noise for a status bar and only costs the user's CPU.
MIN_INTERVAL_S = 0.25


class StatusPoller:
    """Hands a payload of ``source`` to ``publish`` every ``interval_s``, and once more the
    moment the framework probe has answered (the first payloads say it is still running).

    For whatever pushes the status to a client: the language server's notifications, a
    Jupyter route that streams it. One daemon thread sleeps on an Event between reads (no busy
    loop); ``publish`` runs on that thread, so it should hand the payload on (to an event
    loop, with ``call_soon_threadsafe``) rather than block.
    """

    def __init__(
        self,
        source: StatusSource,
        publish: Callable[[dict[str, Any]], None],
        interval_s: float = DEFAULT_INTERVAL_S,
    ) -> None:
        self._source = source
        self._publish = publish
        self._interval_s = max(MIN_INTERVAL_S, interval_s)
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.published = 0

    @property
    def interval_s(self) -> float:
        return self._interval_s

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Publish now, then every interval; again as soon as the frameworks are probed."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="gpulens-status", daemon=True)
        self._thread.start()
        threading.Thread(
            target=self._publish_when_probed, name="gpulens-probe-wait", daemon=True
        ).start()

    def set_interval(self, interval_s: float) -> None:
        interval_s = max(MIN_INTERVAL_S, interval_s)
        if interval_s != self._interval_s:
            self._interval_s = interval_s
            self._wake.set()  # the new interval applies now, not after the old one runs out

    def poke(self) -> None:
        """Publish now."""
        self._wake.set()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()

    def _publish_when_probed(self) -> None:
        self._source.probes.get(block=True)
        if not self._stopped.is_set():
            self.poke()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._publish(self._source.snapshot())
                self.published += 1
            except Exception:  # a failed read must not end the status bar's updates
                logger.exception("gpulens status poll failed")
            self._wake.wait(self._interval_s)
            self._wake.clear()
