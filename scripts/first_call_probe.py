"""Where a profile's fixed cost goes on a short cell: the first CUDA call, and enabling CUPTI.

On a machine with a GPU, torch and cupti-python:

    python scripts/first_call_probe.py [--reps 9] [-o OUT.json]

runs the compute-bound cell of benchmarks/profiler_overhead.py (20 bf16 8192^3 matmuls)
plain and under the cupti backend, side by side, in a few variants of how the session
begins, and prints for each (medians, ms): begin, the cell's extra time over the plain run
beside it, the first recorded CUDA call's duration and name, the median of the others, and
the finish. Variants:

- ``default``: as `gpulens profile` runs it.
- ``overhead``: CUPTI's own overhead records (ActivityKind.OVERHEAD) on too: which of them
  (instrumentation, buffer request, lazy loading, ...) fall in the first call, and how long.
- ``prime sync``: the session, once begun, waits for the GPU (cuCtxSynchronize, a recorded
  call) before the cell: does a lazy setup land there instead of in the cell's first call?
- ``prime launch``: the same with a one-element kernel launched and waited for.
- ``no call filter``: the frequent calls left recorded (no per-cbid filter to apply).
- ``memory off``: without CUPTI's memory records.

Then the cost of each step of `CuptiSession.begin` alone (each kind enabled, the thread id
type, the callbacks registered, the call filter) and of each of `finish` (an unforced flush
before the forced one, the kinds disabled, the filter undone). The numbers decide
whether the first call's cost can be moved out of the cell, or avoided.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

CELL = """
for _ in range(20):
    c = a @ b
torch.cuda.synchronize()
"""


def _api_names(cupti: Any) -> dict[int, str]:
    names = {}
    for kind, enum in (
        (int(cupti.ActivityKind.RUNTIME), cupti.runtime_api_trace_cbid),
        (int(cupti.ActivityKind.DRIVER), cupti.driver_api_trace_cbid),
    ):
        for member in enum:
            names[kind << 32 | int(member)] = member.name
    return names


class Probe:
    """The cupti backend with hooks: extra kinds, a primer after begin, no call filter."""

    def __init__(self, torch: Any) -> None:
        from cupti import cupti

        from gpulens.profiler.capture import activity
        from gpulens.profiler.capture import cupti as backend

        self.torch, self.cupti, self.activity, self.backend = torch, cupti, activity, backend
        self.names = _api_names(cupti)
        self.overhead_kind = int(cupti.ActivityKind.OVERHEAD)
        self.overhead_names = {int(m): m.name for m in cupti.ActivityOverheadKind}
        self.object_names = {int(m): m.name for m in cupti.ActivityObjectKind}
        self.raw: list[list[bytes]] = []
        original = backend.decode_buffers

        def keeping(buffers: list[bytes], session: Any) -> dict[str, Any]:
            self.raw.append(list(buffers))
            return original(buffers, session)

        backend.decode_buffers = keeping

    def tables(self) -> Any:
        return self.backend._tables(self.cupti)

    def add_overhead_family(self) -> None:
        tables = self.tables()
        if "overhead" in tables.kinds:
            return
        dtype = self.activity_dtype("overhead")
        tables.kinds["overhead"] = (self.overhead_kind,)
        tables.dtypes["overhead"] = dtype
        tables.family_of[self.overhead_kind] = "overhead"
        tables.sizes[self.overhead_kind] = dtype.itemsize

    def activity_dtype(self, stem: str) -> Any:
        return self.backend._latest_dtype(self.cupti, stem)

    def session(self, variant: str) -> Any:
        from gpulens.profiler.capture.cupti import CuptiSession

        probe = self
        memory = "off" if variant == "memory off" else "reserved"

        class Session(CuptiSession):
            def begin(self) -> None:
                saved = None
                if variant == "no call filter":
                    saved, self.tables.turned_off = self.tables.turned_off, []
                try:
                    super().begin()
                finally:
                    if saved is not None:
                        self.tables.turned_off = saved
                if variant == "overhead":
                    probe.cupti.activity_enable(probe.overhead_kind)
                    self._enabled.append(probe.overhead_kind)
                elif variant == "prime sync":
                    from cuda.bindings import driver as cu

                    cu.cuCtxSynchronize()
                elif variant == "prime launch":
                    probe.torch.zeros(1, device="cuda")
                    probe.torch.cuda.synchronize()

        return Session(memory=memory)

    def first_calls(self, records: dict[str, Any], start: int) -> tuple[float, float, str]:
        """(first call ms, median of the others ms, the first call's name) of the calls made
        from the cell's start on."""
        api = records.get("api") or {}
        calls = sorted(
            (begin, end, corr)
            for corr, begin, end in zip(api["corr"], api["start"], api["end"], strict=True)
            if begin >= start
        )
        if not calls:
            return 0.0, 0.0, "-"
        durations = [(end - begin) / 1e6 for begin, end, _ in calls]
        return durations[0], statistics.median(durations[1:] or [0.0]), self._call_name(calls[0])

    def _call_name(self, call: tuple[int, int, int]) -> str:
        buffers = self.raw[-1] if self.raw else []
        if not buffers:
            return "?"
        api = self.activity._gatherer(buffers, _Holder(self.tables()), ("api",))("api")
        for row in api:
            if int(row["correlation_id"]) == call[2]:
                key = int(row["kind"]) << 32 | int(row["cbid"])
                return self.names.get(key, str(key))
        return "?"

    def overhead(self, start: int, first_end: int) -> list[dict[str, Any]]:
        buffers = self.raw[-1] if self.raw else []
        if not buffers or "overhead" not in self.tables().kinds:
            return []
        rows = self.activity._gatherer(buffers, _Holder(self.tables()), ("overhead",))("overhead")
        return [
            {
                "kind": self.overhead_names.get(int(row["overhead_kind"]), "?"),
                "object": self.object_names.get(int(row["object_kind"]), "?"),
                "ms": (int(row["end"]) - int(row["start"])) / 1e6,
                "in_first_call": int(row["start"]) <= first_end,
                "from_cell_start_ms": (int(row["start"]) - start) / 1e6,
            }
            for row in rows
        ]


class _Holder:
    """What `activity._gatherer` reads of a session."""

    def __init__(self, tables: Any) -> None:
        from gpulens.profiler.capture.cupti import _SINKS

        self.tables = tables
        self.warnings: list[str] = []
        self.sink = _SINKS[0] if _SINKS else None


def run_variant(probe: Probe, variant: str, code: Any, namespace: dict[str, Any]) -> dict[str, Any]:
    from gpulens.profiler.capture import profile_code

    began = time.perf_counter()
    exec(code, namespace)
    plain = time.perf_counter() - began
    capture = profile_code(code, namespace, probe.session(variant))
    if capture.error or capture.backend != "cupti":
        raise RuntimeError(f"{variant}: {capture.error} {capture.warnings}")
    timings = capture.timings
    start = capture.timeline["start"]
    first, others, name = probe.first_calls(capture.records, start)
    api = capture.records.get("api") or {}
    made = sorted((s, e) for s, e in zip(api["start"], api["end"], strict=True) if s >= start)
    first_end = made[0][1] if made else 0
    return {
        "begin_ms": timings["begin_s"] * 1e3,
        "extra_ms": (timings["cell_s"] - plain) * 1e3,
        "first_ms": first,
        "others_ms": others,
        "first_name": name,
        "finish_ms": timings["finish_s"] * 1e3,
        "overhead": probe.overhead(start, first_end) if variant == "overhead" else [],
    }


def begin_steps(probe: Probe) -> dict[str, float]:
    """Each step of beginning and finishing a session alone, in ms (one session each)."""
    cupti, tables = probe.cupti, probe.tables()
    session = probe.session("default")
    steps: dict[str, float] = {}

    def timed(name: str, action: Any) -> None:
        began = time.perf_counter()
        action()
        steps[name] = steps.get(name, 0.0) + (time.perf_counter() - began) * 1e3

    session.sink.reserve(2)
    zeroed_before: list[int | None] = []
    timed(
        "zeroed buffers flag",
        lambda: zeroed_before.append(session.sink.zeroed_buffers(tables.zeroed_attribute, 1)),
    )
    import ctypes

    timed(
        "register callbacks",
        lambda: session.sink.lib.cuptiActivityRegisterCallbacks(
            ctypes.cast(session.sink.request, ctypes.c_void_p),
            ctypes.cast(session.sink.complete, ctypes.c_void_p),
        ),
    )
    timed(
        "thread id type",
        lambda: cupti.set_thread_id_type(cupti.ActivityThreadIdType.SYSTEM),
    )
    enabled = []
    for family in ("api", "kernels", "memcpy", "peer", "memset", "syncs", "memory"):
        for kind in tables.kinds[family]:
            timed(f"enable {family} ({kind})", lambda kind=kind: cupti.activity_enable(kind))
            enabled.append(kind)
    turned: list[int] = []
    timed("call filter", lambda: turned.extend(tables.set_api_calls(tables.turned_off, on=False)))

    def launch() -> None:
        probe.torch.zeros(1, device="cuda")

    timed("first launch", launch)
    timed("synchronize", probe.torch.cuda.synchronize)
    # after a synchronize every record is complete: does the unforced flush hand them all
    # over at less cost than the forced one `finish` makes?
    timed("flush completed", lambda: cupti.activity_flush_all(0))
    timed("flush forced after it", lambda: cupti.activity_flush_all(1))
    for kind in enabled:
        timed("disable kinds", lambda kind=kind: cupti.activity_disable(kind))
    timed("call filter off", lambda: tables.set_api_calls(turned, on=True))
    if zeroed_before and zeroed_before[0] is not None:
        session.sink.zeroed_buffers(tables.zeroed_attribute, zeroed_before[0])
    with session.sink.lock:
        session.sink.collecting = False
        session.sink.completed.clear()
    steps["call filter cbids"] = float(len(turned))
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("-o", "--out", default=None)
    options = parser.parse_args()
    import torch

    probe = Probe(torch)
    probe.add_overhead_family()
    namespace = {
        "torch": torch,
        "a": torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16),
        "b": torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16),
    }
    code = compile(CELL, "<first-call-probe>", "exec")
    exec(code, namespace)  # warm
    variants = ("default", "overhead", "prime sync", "prime launch", "no call filter", "memory off")
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for _ in range(options.reps):
        for variant in variants:
            try:
                runs[variant].append(run_variant(probe, variant, code, namespace))
            except Exception as error:  # a variant that fails is said, the others go on
                print(f"{variant}: {type(error).__name__}: {error}")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    print(f"{'variant':<16} begin   extra   first  others  finish  first call")
    for variant, found in runs.items():
        if not found:
            continue

        def med(key: str, found: list[dict[str, Any]] = found) -> float:
            return statistics.median(run[key] for run in found)

        names = sorted({run["first_name"] for run in found})
        print(
            f"{variant:<16} {med('begin_ms'):5.2f} {med('extra_ms'):+6.2f} {med('first_ms'):7.3f} "
            f"{med('others_ms'):7.3f} {med('finish_ms'):7.2f}  {', '.join(names)}"
        )
    for run in runs["overhead"][:3]:
        print("overhead records:", run["overhead"])
    steps = begin_steps(probe)
    print("steps (ms):", ", ".join(f"{name} {ms:.3f}" for name, ms in steps.items()))
    if options.out:
        Path(options.out).write_text(json.dumps({"runs": runs, "steps": steps}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
