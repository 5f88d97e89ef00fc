"""torch.profiler backend, for when cupti-python is missing.

Kineto's events carry a clock of their own, so GPU work is placed on lines by the Python
stack torch.profiler records with each op (`with_stack=True`), not by time: an op's
innermost frame in the cell's file names the line. Work launched where no Python stack
exists (the autograd engine's backward thread) stays unattributed, and copy sizes are not
reported; the payload's warnings say so.
"""

from __future__ import annotations

import re
import time
from typing import Any

_STACK_FRAME = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): ")
_SYNC_CALLS = {
    "cudaStreamSynchronize": "stream",
    "cudaDeviceSynchronize": "context",
    "cudaEventSynchronize": "event",
    "cuStreamSynchronize": "stream",
    "cuCtxSynchronize": "context",
    "cuEventSynchronize": "event",
}
# Kineto's own names for CUPTI synchronization records, on the device side
_DEVICE_SYNCS = {"Stream Sync": "stream", "Context Sync": "context", "Event Sync": "event"}
_MEMCPY = re.compile(
    r"^Memcpy (?P<dir>HtoD|DtoH|DtoD|HtoH|PtoP)(?: \((?P<src>\w+) -> (?P<dst>\w+)\))?"
)


class TorchUnavailable(RuntimeError):
    pass


class TorchSession:
    name = "torch"

    def __init__(self) -> None:
        try:
            import torch
        except ImportError as error:
            raise TorchUnavailable(f"torch failed to import ({error})") from error
        if not torch.cuda.is_available():
            raise TorchUnavailable("torch sees no CUDA device")
        self.torch = torch
        self.clock = time.perf_counter_ns
        self.warnings: list[str] = []
        self.filename = ""
        self._profile: Any = None

    def begin(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self._profile = profile(
            activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_stack=True
        )
        self._profile.__enter__()

    def finish(self) -> dict[str, Any]:
        began = time.perf_counter()
        if self._profile is None:
            return {}
        try:
            self.torch.cuda.synchronize()
        except Exception as error:
            self.warnings.append(f"torch.cuda.synchronize failed ({error})")
        self._profile.__exit__(None, None, None)
        events = self._profile.events()
        stopped = time.perf_counter()
        records = records_from_events(events, self.filename)
        records["_timings"] = {
            "flush_s": stopped - began,
            "decode_s": time.perf_counter() - stopped,
        }
        self.warnings.append(
            "torch.profiler backend: copy sizes are not reported, and work launched without a "
            "Python stack (autograd's backward thread) is counted as unattributed"
        )
        self._devices = sorted(set(records["kernels"]["device"]) | set(records["memcpy"]["device"]))
        return records

    def gpus(self) -> list[dict[str, Any]]:
        return [
            {"index": i, "name": self.torch.cuda.get_device_name(i)}
            for i in getattr(self, "_devices", [])
        ]


def _line_in(event: Any, filename: str) -> int | None:
    """Innermost stack frame in the cell's file, walking up to parents without a stack."""
    while event is not None:
        for frame in getattr(event, "stack", None) or ():
            match = _STACK_FRAME.match(frame)
            if match and match.group("file") == filename:
                return int(match.group("line"))
        event = getattr(event, "cpu_parent", None)
    return None


def records_from_events(events: Any, filename: str) -> dict[str, Any]:
    """torch.profiler FunctionEvents -> attribution columns, lines given per corr."""
    corr_line: dict[int, int | None] = {}
    kernels: dict[str, list[Any]] = {k: [] for k in ("corr", "start", "end", "device", "name")}
    memcpy: dict[str, list[Any]] = {
        k: []
        for k in ("corr", "start", "end", "device", "bytes", "copy_kind", "src_kind", "dst_kind")
    }
    memset: dict[str, list[Any]] = {k: [] for k in ("corr", "start", "end", "device", "bytes")}
    syncs: dict[str, list[Any]] = {k: [] for k in ("corr", "start", "end", "type")}
    names: list[str] = []
    name_index: dict[str, int] = {}
    # syncs as host-side runtime calls and as device-side sync records (which of the two
    # appears depends on the torch version): the larger set is kept
    host_syncs: list[tuple[int | None, int, str]] = []
    device_syncs: list[tuple[int | None, int, str]] = []
    corr = 0

    def add(family: dict[str, list[Any]], line: int | None, **values: Any) -> None:
        nonlocal corr
        corr += 1
        corr_line[corr] = line
        family["corr"].append(corr)
        family["start"].append(0)
        for key, value in values.items():
            family[key].append(value)

    for event in events:
        if not str(getattr(event, "device_type", "")).endswith("CPU"):
            continue
        line = _line_in(event, filename)
        sync_type = _SYNC_CALLS.get(event.name)
        if sync_type:
            span = int((event.time_range.end - event.time_range.start) * 1000)
            host_syncs.append((line, span, sync_type))
        for kernel in getattr(event, "kernels", ()) or ():
            duration = int(getattr(kernel, "duration", 0) * 1000)
            device = int(getattr(kernel, "device", 0) or 0)
            copy = _MEMCPY.match(kernel.name)
            if kernel.name in _DEVICE_SYNCS:
                device_syncs.append((line, duration, _DEVICE_SYNCS[kernel.name]))
            elif copy:
                add(
                    memcpy,
                    line,
                    end=duration,
                    device=device,
                    bytes=0,
                    copy_kind=copy.group("dir").lower(),
                    src_kind=(copy.group("src") or "unknown").lower(),
                    dst_kind=(copy.group("dst") or "unknown").lower(),
                )
            elif kernel.name.startswith("Memset"):
                add(memset, line, end=duration, device=device, bytes=0)
            else:
                index = name_index.setdefault(kernel.name, len(names))
                if index == len(names):
                    names.append(kernel.name)
                add(kernels, line, end=duration, device=device, name=index)
    for line, span, sync_type in max(host_syncs, device_syncs, key=len):
        add(syncs, line, end=span, type=sync_type)
    return {
        "corr_line": corr_line,
        "kernels": kernels,
        "names": names,
        "memcpy": memcpy,
        "memset": memset,
        "syncs": syncs,
    }
