"""Smoke test, run as ``python -c <this file's text> [torch|cupy]`` in the user's interpreter.

Standalone like ``_probe.py`` (no gpulens import, Python 3.8 syntax). Times ``x * x`` on 10M
float32 elements on the CPU and on GPU 0 (warm-up first, synchronised, CUDA events), and
host->device / device->host copies from pageable and from pinned memory. Prints one line
``GPULENS_SMOKE <json>``.
"""

# Python 3.8 syntax on purpose: this runs in whatever interpreter the user has (signatures'
# annotations are quoted, as 3.8 would evaluate them; a local's annotation is never evaluated).
# ruff: noqa: UP031

import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

MARKER = "GPULENS_SMOKE "
ELEMENTS = 10000000
COPY_BYTES = 256 * 1024 * 1024
REPEATS = 10


def _median_ms(samples: "list[float]") -> "float":
    return round(statistics.median(samples) * 1000.0, 4)


def cpu_square(make: "Callable[[], Any]", square: "Callable[[Any], Any]") -> "float":
    x = make()
    for _ in range(2):  # warm-up: first touch of the pages, thread pools
        square(x)
    samples: list[float] = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        square(x)
        samples.append(time.perf_counter() - start)
    return _median_ms(samples)


def with_torch() -> "dict[str, Any]":
    import torch

    result: dict[str, Any] = {"framework": "torch", "version": torch.__version__}
    result["cpu_ms"] = cpu_square(lambda: torch.rand(ELEMENTS), lambda x: x * x)
    if not torch.cuda.is_available():
        result["gpu_error"] = "torch sees no GPU"
        return result
    device = torch.device("cuda:0")
    result["device"] = torch.cuda.get_device_name(0)
    x = torch.rand(ELEMENTS, device=device)
    for _ in range(3):  # warm-up: context, kernel load, allocator
        x * x
    torch.cuda.synchronize()
    samples: list[float] = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        x * x
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1000.0)
    result["gpu_ms"] = _median_ms(samples)

    count = COPY_BYTES // 4
    pageable = torch.empty(count, dtype=torch.float32)
    pageable.fill_(1.0)  # touch the pages so the first copy does not pay for page faults
    pinned = torch.empty(count, dtype=torch.float32, pin_memory=True)
    pinned.fill_(1.0)
    on_device = torch.empty(count, dtype=torch.float32, device=device)

    def copy_gbps(dst: "Any", src: "Any") -> "float":
        dst.copy_(src)
        torch.cuda.synchronize()
        times: list[float] = []
        for _ in range(5):
            start = time.perf_counter()
            dst.copy_(src)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        return round(COPY_BYTES / statistics.median(times) / 1e9, 2)

    result["h2d_pageable_gbps"] = copy_gbps(on_device, pageable)
    result["h2d_pinned_gbps"] = copy_gbps(on_device, pinned)
    result["d2h_pageable_gbps"] = copy_gbps(pageable, on_device)
    result["d2h_pinned_gbps"] = copy_gbps(pinned, on_device)
    return result


def with_cupy() -> "dict[str, Any]":
    import cupy
    import cupyx
    import numpy

    result: dict[str, Any] = {"framework": "cupy", "version": cupy.__version__}
    result["cpu_ms"] = cpu_square(
        lambda: numpy.random.rand(ELEMENTS).astype(numpy.float32), lambda x: x * x
    )
    x = cupy.random.rand(ELEMENTS, dtype=cupy.float32)
    for _ in range(3):
        x * x
    cupy.cuda.Device(0).synchronize()
    samples: list[float] = []
    for _ in range(REPEATS):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        x * x
        end.record()
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end) / 1000.0)
    result["gpu_ms"] = _median_ms(samples)
    result["device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()

    count = COPY_BYTES // 4
    pageable = numpy.ones(count, dtype=numpy.float32)
    pinned = cupyx.empty_pinned(count, dtype=numpy.float32)
    pinned[...] = 1.0
    on_device = cupy.empty(count, dtype=cupy.float32)

    def copy_gbps(copy: "Callable[[], Any]") -> "float":
        copy()
        cupy.cuda.Device(0).synchronize()
        times: list[float] = []
        for _ in range(5):
            start = time.perf_counter()
            copy()
            cupy.cuda.Device(0).synchronize()
            times.append(time.perf_counter() - start)
        return round(COPY_BYTES / statistics.median(times) / 1e9, 2)

    result["h2d_pageable_gbps"] = copy_gbps(lambda: on_device.set(pageable))
    result["h2d_pinned_gbps"] = copy_gbps(lambda: on_device.set(pinned))
    result["d2h_pageable_gbps"] = copy_gbps(lambda: on_device.get(out=pageable))
    result["d2h_pinned_gbps"] = copy_gbps(lambda: on_device.get(out=pinned))
    return result


def main(argv: "list[str]") -> None:
    runners: dict[str, Callable[[], dict[str, Any]]] = {"torch": with_torch, "cupy": with_cupy}
    framework = argv[0] if argv else "torch"
    try:
        result = runners[framework]()
    except Exception as error:
        result = {"framework": framework, "error": "%s: %s" % (type(error).__name__, error)}
    result["elements"] = ELEMENTS
    result["copy_bytes"] = COPY_BYTES
    sys.stdout.write("\n" + MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
