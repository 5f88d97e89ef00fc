"""The ``gpulens.status/2`` payload: built from readings by pure functions.

``build_status`` joins an NVML reading, the framework reports and ``CUDA_VISIBLE_DEVICES`` into
the payload every client shows, with its words and figures already written in its ``display``
block (`gpulens.device.display`): the clients draw those and format nothing. ``StatusSource``
is the edge that gathers live readings for the CLI, the language server and Jupyter;
``StatusPoller`` hands them on at an interval.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpulens.device.display import status_display
from gpulens.device.frameworks import (
    FrameworkProbeCache,
    FrameworkReport,
    interpreter_env_visible_devices,
)
from gpulens.device.intervals import DEFAULT_INTERVAL_S, MIN_INTERVAL_S
from gpulens.device.nvml import NvmlMonitor, NvmlReading
from gpulens.device.recorded import backend_from_env

SCHEMA = "gpulens.status/2"
logger = logging.getLogger(__name__)

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
    """The ``gpulens.status/2`` payload. Pure: everything it shows comes in as arguments.

    Frameworks that are not installed are left out; ``frameworks_state`` says whether the
    probe has answered yet (``pending`` while it runs); ``display`` holds what people read.
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
    payload: dict[str, Any] = {
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
    payload["display"] = status_display(payload)
    return payload


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
