"""GPU memory and GPU idle time on the ground-truth cells, replayed from captures recorded on
the device machine (tests/gpu/test_profiler_gpu.py holds the cells and records them with
GPULENS_FIXTURE_DIR set). What each must show is known from its source:

- memory_lines (cupti) and memory_lines_torch: `torch.empty(2**28)` is +1 GiB allocated on
  its line, `del x` -1 GiB; with the cache emptied first the driver hands out that GiB on
  the first line and takes it back on `empty_cache` (CUPTI's view, cupti backend only)
- memory_peak_loop: 256 MiB kept (zeroed), then 512 MiB, 1 GiB, 1.5 GiB made and dropped in a loop:
  the peak is 1.75 GiB over the cell's start, on the loop's `big` line
- idle_sleep_loop: a tiny kernel then 5 ms of sleep, 20 times: the GPU idle nearly all the
  loop, and the loop's hint says so
- idle_compute_bound: 20 queued 8192^3 matmuls: the GPU busy nearly all the cell
- clock_after_torch_profiler: recorded after torch.profiler ran in the process (CUPTI then
  stamps with the CPU's cycle counter): a 50 ms nap reads 50 ms and the GPU idles through it,
  the fill kernel before it is busy time on its own line, the GiB is on its lines
"""

from __future__ import annotations

from typing import Any

import pytest

from gpulens.profiler import recorded

from .conftest import load_fixture

GiB = 2**30


def replayed(name: str) -> tuple[dict[str, Any], dict[int, dict[str, Any]], list[str]]:
    fixture = load_fixture(name)
    payload = recorded.replay(fixture, name)
    return (
        payload,
        {line["line"]: line for line in payload["lines"]},
        fixture["source"].splitlines(),
    )


def line_with(source: list[str], marker: str) -> int:
    return next(i for i, text in enumerate(source, 1) if marker in text)


@pytest.mark.parametrize("name", ["memory_lines", "memory_lines_torch"])
def test_a_gib_is_allocated_on_its_line_and_freed_on_the_del(name: str) -> None:
    payload, lines, source = replayed(name)
    alloc = lines[line_with(source, "# alloc")]
    free = lines[line_with(source, "# free")]
    assert alloc["memory"]["allocated"] == {"alloc": GiB, "free": 0, "net": GiB}
    assert free["memory"]["allocated"] == {"alloc": 0, "free": GiB, "net": -GiB}
    assert "+1.0 GiB mem · peak " in alloc["label"]
    assert "−1.0 GiB mem" in free["label"]
    peaks = payload["peak"]["allocated"]
    assert [(p["line"], p["rise"]) for p in peaks] == [(line_with(source, "# alloc"), GiB)]


def test_the_driver_hands_out_the_gib_and_takes_it_back_on_empty_cache() -> None:
    _, lines, source = replayed("memory_lines")
    assert lines[line_with(source, "# alloc")]["memory"]["reserved"]["net"] == GiB
    assert lines[line_with(source, "# free")]["memory"]["reserved"]["net"] == 0
    assert lines[line_with(source, "# release")]["memory"]["reserved"] == {
        "alloc": 0,
        "free": GiB,
        "net": -GiB,
    }


def test_the_peak_of_a_loop_is_on_the_line_that_reached_it() -> None:
    payload, lines, source = replayed("memory_peak_loop")
    (peak,) = payload["peak"]["allocated"]
    assert peak["line"] == line_with(source, "# big")
    assert peak["rise"] == 2**28 + 3 * 2**29
    assert lines[peak["line"]]["memory"]["allocated"]["alloc"] == 6 * 2**29


def test_tiny_kernels_between_sleeps_leave_the_gpu_idle_and_the_loop_says_so() -> None:
    payload, lines, source = replayed("idle_sleep_loop")
    sleep = lines[line_with(source, "# sleep")]
    assert sleep["gpu_idle_s"] >= 0.99 * sleep["own_s"] > 0
    assert payload["gpu_busy"]["share"] < 0.01
    loop = lines[line_with(source, "for step")]
    (hint,) = [h for h in loop["hints"] if h["code"] == "gpu-idle"]
    # the host slept, it did not launch: the hint names the sleep, and says nothing of launches
    assert f"most of it while line {sleep['line']} ran" in hint["message"]
    assert "launch-bound" not in hint["message"]


def test_a_compute_bound_loop_leaves_the_gpu_idle_only_before_and_after_its_work() -> None:
    """The GPU idles from the cell's start to the first matmul (the first launch) and from
    the last one's end to the cell's end; between them, never more than its own gaps from one
    kernel to the next (a few µs each, 20 of them)."""
    payload, lines, _ = replayed("idle_compute_bound")
    fixture = load_fixture("idle_compute_bound")
    records, events = fixture["records"], fixture["events"]
    work = [
        (begin, end)
        for family in ("kernels", "memset", "memcpy")
        for begin, end in zip(records[family]["start"], records[family]["end"], strict=True)
    ]
    # the cell's lines ran from its first line event to its last event (its return)
    first_line = min(t for t, kind in zip(events["t"], events["kind"], strict=True) if kind == 0)
    before = (min(begin for begin, _ in work) - first_line) / 1e9
    after = (events["t"][-1] - max(end for _, end in work)) / 1e9
    idle = sum(line["gpu_idle_s"] for line in lines.values())
    assert payload["gpu_busy"]["share"] >= 0.95
    assert before + after - 1e-6 <= idle <= before + after + 20 * 10e-6
    assert not any(h["code"] == "gpu-idle" for line in lines.values() for h in line["hints"])


def test_a_capture_made_after_torch_profiler_reads_in_seconds() -> None:
    _, lines, source = replayed("clock_after_torch_profiler")
    nap = lines[line_with(source, "# nap")]
    assert 0.05 <= nap["host_s"] < 0.07
    assert 0.05 <= nap["gpu_idle_s"] <= nap["own_s"] < 0.07
    fill = lines[line_with(source, "# fill")]
    assert fill["own_s"] - fill["gpu_idle_s"] >= 0.99 * fill["kernels"]["gpu_s"] > 0
    assert lines[line_with(source, "# alloc")]["memory"]["allocated"]["net"] == GiB
    assert lines[line_with(source, "# free")]["memory"]["allocated"]["net"] == -GiB
    assert lines[line_with(source, "# alloc")]["memory"]["reserved"]["net"] == GiB
