"""Record GPU memory records as CUPTI and torch give them, around statements of known size.

On a machine with a GPU, torch and cupti-python:

    python scripts/record_memory_probe.py OUT.json

runs a few statements whose allocations are known by construction (a 1 GiB `torch.empty`,
a 4 MB `torch.ones`, `del` of the first, three 64 MiB matmuls in a loop, `empty_cache`),
with Unix-time marks between them, under CUPTI's memory records (MEMORY2, taken through
cupti-python's per-record callback: every field as it comes) and torch's allocator history
(without stack frames, as the profiler records it). It writes the marks, both clocks read
together at the start, the records, the history, and the layout of CUPTI's record struct.
`tests/unit/profiler/test_memory_recorded.py` replays the file
(tests/fixtures/profiler/raw/memory_probe_h200.json.gz) through the profiler's memory
attribution.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def _fields(record: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in dir(record):
        if name.startswith("_"):
            continue
        try:
            value = getattr(record, name)
        except Exception as error:
            value = repr(error)
        if callable(value):
            continue
        try:
            json.dumps(value)
            found[name] = value
        except TypeError:
            found[name] = repr(value)
    return found


def main(out: str) -> int:
    import torch
    from cupti import cupti

    records: list[dict[str, Any]] = []

    def requested() -> tuple[int, int]:
        return 8 * 1024 * 1024, 0

    def completed(activities: Any) -> None:
        records.extend(_fields(activity) for activity in activities)

    cupti.activity_register_callbacks(requested, completed)
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    result: dict[str, Any] = {
        "dtype_names": [name for name in dir(cupti) if "memory" in name.lower()],
        "kinds": [name for name in dir(cupti.ActivityKind) if "MEM" in name],
    }
    cupti.activity_enable(cupti.ActivityKind.MEMORY2)
    torch.cuda.memory._record_memory_history(
        enabled="all", context=None, stacks="python", max_entries=100_000
    )
    t0_ns, c0 = time.time_ns(), cupti.get_timestamp()
    marks = {"before_empty": time.time_ns()}
    x = torch.empty(2**28, device="cuda")  # 1 GiB
    marks["after_empty"] = time.time_ns()
    y = torch.ones(1000, 1000, device="cuda")  # 4 MB, kept
    marks["after_ones"] = time.time_ns()
    del x
    marks["after_del"] = time.time_ns()
    for _ in range(3):
        z = torch.randn(4096, 4096, device="cuda") @ torch.randn(4096, 4096, device="cuda")
        del z
    marks["after_loop"] = time.time_ns()
    torch.cuda.empty_cache()
    marks["after_empty_cache"] = time.time_ns()
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    cupti.activity_flush_all(1)
    del y
    result.update(
        t0_ns=t0_ns,
        c0=c0,
        marks=marks,
        cupti_records=records,
        torch_traces=snapshot["device_traces"],
        segments_n=len(snapshot["segments"]),
        memory4_dtype=str(getattr(cupti, "activity_memory4_dtype", None)),
    )
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1, default=repr)
    print(f"{out}: {len(records)} CUPTI records, {len(snapshot['device_traces'][0])} torch events")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/record_memory_probe.py OUT.json")
    raise SystemExit(main(sys.argv[1]))
