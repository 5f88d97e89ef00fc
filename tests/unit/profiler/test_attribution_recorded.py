"""Attribution on captures recorded on the device machine (H200, cupti backend).

The expected figures come from each cell's source (tests/gpu/test_profiler_gpu.py holds the
same cells): N copies of B bytes, one sync per `.item()`, one kernel per elementwise op.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.report import build_payload

from .conftest import load_fixture


def replay(name: str) -> tuple[dict[str, Any], dict[int, dict[str, Any]], list[str]]:
    fixture = load_fixture(name)
    attributed = attribute_records(fixture["events"], fixture["records"])
    source = fixture["source"].splitlines()
    payload = build_payload(
        attributed, source={"path": name, "first_line": 1}, backend=fixture["backend"], code=source
    )
    return payload, {line["line"]: line for line in payload["lines"]}, source


def line_with(source: list[str], marker: str) -> int:
    return next(i for i, text in enumerate(source, 1) if marker in text)


def test_hundred_small_pageable_copies_land_on_their_line() -> None:
    payload, lines, source = replay("small_copies")
    htod = lines[line_with(source, "# copies")]["transfers"]["htod"]
    assert (htod["count"], htod["bytes"], htod["pageable"]) == (100, 100 * 4096, 100)
    assert payload["unattributed"]["transfers"] == 0


def test_large_pageable_pinned_and_device_to_host_copies() -> None:
    _, lines, source = replay("big_copies")
    pageable = lines[line_with(source, "# pageable")]
    assert pageable["transfers"]["htod"]["bytes"] == 400_000_000
    assert pageable["transfers"]["htod"]["pageable"] == pageable["transfers"]["htod"]["count"]
    hint = next(h for h in pageable["hints"] if h["code"] == "pinned-memory")
    assert "GB/s" in hint["message"] and "pinned copies in this cell ran at" in hint["message"]
    pinned = lines[line_with(source, "# pinned")]["transfers"]["htod"]
    assert (pinned["count"], pinned["bytes"], pinned["pinned"]) == (1, 40_000_000, 1)
    assert not lines[line_with(source, "# pinned")]["hints"]
    assert lines[line_with(source, "# d2h")]["transfers"]["dtoh"]["bytes"] == 400_000_000


def test_item_every_step_is_one_sync_one_d2h_and_a_gpu001_hint() -> None:
    _, lines, source = replay("item_sync_cupti")
    line = lines[line_with(source, "# item")]
    assert line["hits"] == 50
    assert line["syncs"]["count"] == 50
    assert (line["transfers"]["dtoh"]["count"], line["transfers"]["dtoh"]["bytes"]) == (50, 200)
    assert line["kernels"]["count"] == 100
    assert [h["code"] for h in line["hints"]] == ["GPU001"]
    assert line["syncs"]["stall_s"] > 0


def test_backward_kernels_from_the_autograd_thread_land_on_the_backward_line() -> None:
    payload, lines, source = replay("train_step")
    assert payload["unattributed"] == {
        "kernels": 0,
        "collectives": 0,
        "transfers": 0,
        "syncs": 0,
        "memsets": 0,
    }
    backward = lines[line_with(source, "# backward")]
    assert backward["kernels"]["count"] > 0
    assert backward["kernels"]["count"] % 20 == 0
    assert backward["other_thread_calls"] > 0
    assert lines[line_with(source, "# forward")]["other_thread_calls"] == 0
    assert lines[line_with(source, "loss.item()")]["syncs"]["count"] == 20
    total = sum(line["kernels"]["count"] for line in payload["lines"])
    assert total == len(load_fixture("train_step")["records"]["kernels"]["corr"])


def test_cupy_elementwise_kernel_by_name() -> None:
    _, lines, source = replay("cupy_elementwise")
    kernels = lines[line_with(source, "# launch")]["kernels"]
    assert kernels["count"] == 10
    assert "gpulens_double" in kernels["top"][0]["name"]


def test_nested_function_lines_then_back_to_the_caller() -> None:
    _, lines, source = replay("nested_function")
    for marker in ("# mul", "# sum", "# add"):
        assert lines[line_with(source, marker)]["kernels"]["count"] == 7, marker
    call = lines[line_with(source, "# call")]
    assert (call["hits"], call["kernels"]["count"]) == (7, 0)
    # host time is inclusive: the call line covers the function's own lines
    inner = sum(lines[line_with(source, m)]["host_s"] for m in ("# mul", "# sum"))
    assert call["host_s"] >= inner


def test_oom_cell_reports_the_lines_that_ran() -> None:
    fixture = load_fixture("oom")
    _, lines, source = replay("oom")
    assert lines[line_with(source, "# before")]["kernels"]["count"] == 1
    assert line_with(source, "# after") not in lines
    assert fixture["error"]["line"] == line_with(source, "# oom")
    assert "OutOfMemory" in fixture["error"]["type"]


def test_numba_kernel_launches_by_name() -> None:
    _, lines, source = replay("numba_kernel")
    kernels = lines[line_with(source, "# launch")]["kernels"]
    assert kernels["count"] == 5
    assert "add_one" in kernels["top"][0]["name"]


def test_two_gpus_per_device_figures_and_the_peer_copy() -> None:
    payload, lines, source = replay("two_gpus")
    assert payload["unattributed"] == {
        "kernels": 0,
        "collectives": 0,
        "transfers": 0,
        "syncs": 0,
        "memsets": 0,
    }
    assert "devices" not in lines[line_with(source, "# gpu0")]  # all of it on GPU 0
    assert lines[line_with(source, "# gpu0")]["kernels"]["count"] == 2
    on_one = lines[line_with(source, "# gpu1")]["devices"]
    assert [(d["index"], d["kernels"]) for d in on_one] == [(1, 2)]
    # a copy between the two GPUs comes as CUPTI's peer-copy record: one 4 MB device copy
    peer = lines[line_with(source, "# peer")]["transfers"]["dtod"]
    assert (peer["count"], peer["bytes"]) == (1, 4_000_000)


# -- the GPU's idle time, on the same recorded captures -------------------------------------------
CUPTI_CAPTURES = ["small_copies", "big_copies", "item_sync_cupti", "train_step", "nested_function"]


@pytest.mark.parametrize("name", CUPTI_CAPTURES)
def test_each_lines_idle_time_is_part_of_its_own_time(name: str) -> None:
    fixture = load_fixture(name)
    attributed = attribute_records(fixture["events"], fixture["records"])
    idle = attributed["idle"]
    assert idle is not None
    span = attributed["end"] - attributed["start"]
    assert sum(idle["own"].values()) <= span
    assert 0 < idle["busy_ns"] <= span
    for cost in attributed["lines"]:
        assert 0 <= cost["gpu_idle_ns"] <= cost["own_ns"] <= cost["host_ns"]


def test_a_line_whose_copy_runs_while_it_waits_leaves_the_gpu_busy() -> None:
    # each pageable copy runs while its line waits for it: the GPU is busy nearly all of it
    payload, lines, source = replay("big_copies")
    for marker in ("# pageable", "# d2h"):
        line = lines[line_with(source, marker)]
        assert line["gpu_idle_s"] <= 0.1 * line["own_s"], marker
    assert payload["gpu_busy"]["share"] > 0.9


def test_a_launch_bound_training_loop_gets_the_idle_hint_on_its_for_line() -> None:
    payload, lines, source = replay("train_step")
    loop = lines[line_with(source, "for step")]
    (hint,) = [h for h in loop["hints"] if h["code"] == "gpu-idle"]
    assert "launch-bound; CUDA graphs, torch.compile or a larger batch help" in hint["message"]
    assert payload["gpu_busy"]["share"] < 0.2  # 3.8 ms of GPU work in a 63 ms cell
    assert f"line {loop['line']}: the GPU was idle" in " ".join(payload["display"]["notes"])


def test_torch_profiler_records_give_no_idle_time() -> None:
    # its kernels carry durations only: no idle time rather than a wrong one
    payload, lines, _ = replay("train_step_torch")
    assert payload["gpu_busy"] is None
    assert all(line["gpu_idle_s"] is None and line["own_s"] is None for line in lines.values())
    titles = [column["title"] for column in payload["display"]["table"]["columns"]]
    assert "Idle" not in titles
    assert all("idle" not in line["label"] for line in lines.values())
