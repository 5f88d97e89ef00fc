"""Ground-truth cells for the profiler, run on the device machine (`pytest -m gpu`).

Each cell's answer is known from its source: the test counts what the code must do (N
copies of B bytes, one sync per `.item()`) and checks the per-line payload against it.
With GPULENS_FIXTURE_DIR set, each capture's raw records and line events are saved there
(the CI attribution tests replay them).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import tempfile
import textwrap
from typing import Any

import pytest

from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.capture import profile_code
from gpulens.profiler.report import build_payload
from gpulens.profiler.units import memory_bytes

HAS_GPU = importlib.util.find_spec("torch") is not None and shutil.which("nvidia-smi") is not None
HAS_CUPTI = importlib.util.find_spec("cupti") is not None
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not HAS_GPU, reason="needs torch and an NVIDIA GPU (device machine)"),
]
needs_cupti = pytest.mark.skipif(not HAS_CUPTI, reason="needs cupti-python (gpulens[cupti])")
UNIX_2020_NS = 1_577_836_800 * 10**9


@pytest.fixture(scope="module")
def torch() -> Any:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    torch.ones(1, device="cuda").sum().item()  # context and allocator warm
    return torch


def profile(
    name: str,
    source: str,
    namespace: dict[str, Any],
    backend: str = "cupti",
    *,
    memory: str = "all",
    sample: bool = True,
) -> tuple[Any, dict[str, Any], dict[int, dict[str, Any]]]:
    """Profiles `source` (lines numbered from 1) in `namespace`, with both views of GPU
    memory unless `memory` says otherwise, a Python-heavy stretch's lines sampled unless
    `sample` is False; (capture, payload, by line)."""
    source = textwrap.dedent(source).strip("\n") + "\n"
    # a real file, as the CLI gives: torch.profiler keeps no stack frames of "<...>" code
    filename = os.path.join(tempfile.gettempdir(), f"gpulens_test_{name}.py")
    with open(filename, "w", encoding="utf-8") as handle:
        handle.write(source)
    code = compile(source, filename, "exec")
    capture = profile_code(code, namespace, backend, memory=memory, sample=sample)
    attributed = attribute_records(capture.timeline, capture.records)
    payload = build_payload(
        attributed,
        source={"path": filename, "cell": None, "first_line": 1},
        backend=capture.backend,
        gpus=capture.gpus,
        warnings=capture.warnings,
        error=capture.error,
        code=source.splitlines(),
        timings=capture.timings,
    )
    folder = os.environ.get("GPULENS_FIXTURE_DIR")
    events = capture.line_events()  # None for a cell long enough to fold its timeline
    # a fixture is a GPU backend's capture (the host backend's has no records to replay, and
    # its line events stay on perf_counter's nanoseconds: nothing is placed by time)
    if folder and events is not None and capture.backend != "host":
        # on Unix nanoseconds whatever clock the backend ran on (CUPTI's is the CPU's cycle
        # counter once torch.profiler ran in this process)
        assert events["start"] > UNIX_2020_NS, (name, events["start"], capture.timings)
        os.makedirs(folder, exist_ok=True)
        fixture = {
            "name": name,
            "filename": filename,
            "source": source,
            "backend": capture.backend,
            "events": events,
            "records": capture.records,
            "gpus": capture.gpus,
            "error": capture.error,
        }
        with gzip.open(os.path.join(folder, f"{name}.json.gz"), "wt", encoding="utf-8") as out:
            json.dump(fixture, out, separators=(",", ":"))
    print(
        f"\n[{name}] backend={capture.backend} timings={capture.timings} "
        f"warnings={capture.warnings}"
    )
    return capture, payload, {line["line"]: line for line in payload["lines"]}


def line_of(source: str, marker: str) -> int:
    lines = textwrap.dedent(source).strip("\n").splitlines()
    return next(i for i, text in enumerate(lines, 1) if marker in text)


@needs_cupti
def test_cupti_records_decode_with_cupti_python_dtypes(torch: Any) -> None:
    from cupti import cupti

    from gpulens.profiler.capture import cupti_tables, libcupti

    for name in ("activity_api_dtype", "activity_memcpy6_dtype", "activity_synchronization2_dtype"):
        print(name, getattr(cupti, name).names)
    print("kernel dtype", cupti_tables._latest_dtype(cupti, "kernel").names)
    capture, _, _ = profile("decode", "y = torch.ones(8, device='cuda') * 2\n", {"torch": torch})
    assert capture.backend == "cupti", capture.warnings
    assert not any("laid out differently" in w for w in capture.warnings)
    print("libcupti", libcupti.loaded_path())


FRESH_PROFILE = """
import json, sys, time
import torch
x = torch.ones(1000, device="cuda")
torch.cuda.synchronize()
from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.capture import profile_code
from gpulens.profiler.report import build_payload
source = "for _ in range(50):\\n    y = (x * 2).sum().item()\\n"
code = compile(source, "/tmp/gpulens_fresh_cell.py", "exec")
began = time.perf_counter()
capture = profile_code(code, {"x": x}, "cupti")
took = time.perf_counter() - began
payload = build_payload(
    attribute_records(capture.timeline, capture.records),
    source={"path": "cell", "cell": None, "first_line": 1},
    backend=capture.backend,
    warnings=capture.warnings,
)
line = next(line for line in payload["lines"] if line["line"] == 2)
print(json.dumps({
    "backend": capture.backend,
    "warnings": capture.warnings,
    "imported": sorted(m for m in ("cupti.cupti", "cuda.bindings.driver") if m in sys.modules),
    "hits": line["hits"],
    "kernels": line["kernels"]["count"],
    "syncs": line["syncs"]["count"],
    "dtoh": line["transfers"]["dtoh"]["count"],
    "took_ms": round(took * 1000, 1),
}))
"""


@needs_cupti
def test_a_fresh_process_profiles_with_the_tables_kept_and_no_cupti_python_import(
    tmp_path: Any,
) -> None:
    """The first profile in a fresh process learns CUPTI's tables from cupti-python and
    keeps them in the user's cache; the next fresh process reads them from there and
    imports neither cupti-python nor cuda-bindings, its lines on Unix time and CUPTI's
    records on theirs: every launch, copy and sync of the loop on its line, as before."""
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", FRESH_PROFILE],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=240,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(runs[-1])
    learnt, kept = runs
    assert os.listdir(tmp_path / "cache" / "gpulens")
    assert "cupti.cupti" in learnt["imported"]
    assert kept["imported"] == []
    for run in runs:
        assert run["backend"] == "cupti", run["warnings"]
        assert (run["hits"], run["kernels"], run["syncs"], run["dtoh"]) == (50, 100, 50, 50)


def test_distinct_values_and_their_indexes_agree_on_either_side_of_numpys_unique() -> None:
    """Kernel names and API calls are found distinct by a Python set in a small buffer and by
    numpy's unique in a large one: both must give the same answer."""
    np = pytest.importorskip("numpy")
    from gpulens.profiler.capture.activity import FEW_RECORDS, _distinct, _indexed

    pointers = [0x7F00_0000_1000 + 64 * (i * 7 % 13) for i in range(2 * FEW_RECORDS)]
    for count in (3, FEW_RECORDS - 1, FEW_RECORDS, 2 * FEW_RECORDS):
        column = np.asarray(pointers[:count], dtype=np.uint64)
        distinct, index = _indexed(column)
        assert distinct == sorted(set(pointers[:count])) == _distinct(column)
        assert [distinct[i] for i in index] == pointers[:count]


SMALL_COPIES = """
out = [h.to("cuda") for h in host]  # copies
torch.cuda.synchronize()
"""


@needs_cupti
def test_small_pageable_copies_on_one_line(torch: Any) -> None:
    n, floats = 100, 1024
    host = [torch.ones(floats) for _ in range(n)]
    _, payload, lines = profile("small_copies", SMALL_COPIES, {"torch": torch, "host": host})
    htod = lines[line_of(SMALL_COPIES, "# copies")]["transfers"]["htod"]
    assert htod["count"] == n
    assert htod["bytes"] == n * floats * 4
    assert htod["pageable"] == n
    assert payload["unattributed"]["transfers"] == 0


@needs_cupti
def test_a_profile_after_the_backend_was_loaded_ahead_records_as_any(torch: Any) -> None:
    """`%load_ext gpulens` loads CUPTI's library, tables and buffers on a thread before any
    profile (`capture.preload`): nothing is enabled then, and the profile that follows
    records every copy on its line."""
    from gpulens.profiler.capture import preloading

    preloading("cupti").join()
    n, floats = 20, 256
    host = [torch.ones(floats) for _ in range(n)]
    capture, payload, lines = profile(
        "preloaded", SMALL_COPIES, {"torch": torch, "host": host}, "cupti"
    )
    assert capture.backend == "cupti", capture.warnings
    htod = lines[line_of(SMALL_COPIES, "# copies")]["transfers"]["htod"]
    assert (htod["count"], htod["bytes"]) == (n, n * floats * 4)
    assert payload["unattributed"]["transfers"] == 0


BIG_COPIES = """
d_big = big.to("cuda")  # pageable
d_pin = pinned.to("cuda", non_blocking=True)  # pinned
back = d_big.cpu()  # d2h
torch.cuda.synchronize()
"""


@needs_cupti
def test_large_pageable_pinned_and_d2h_copies(torch: Any) -> None:
    big = torch.empty(100_000_000, dtype=torch.float32)
    pinned = torch.empty(10_000_000, dtype=torch.float32).pin_memory()
    _, _, lines = profile("big_copies", BIG_COPIES, {"torch": torch, "big": big, "pinned": pinned})
    pageable = lines[line_of(BIG_COPIES, "# pageable")]
    assert pageable["transfers"]["htod"]["bytes"] == 400_000_000
    assert pageable["transfers"]["htod"]["pageable"] == pageable["transfers"]["htod"]["count"]
    assert any(h["code"] == "pinned-memory" for h in pageable["hints"])
    pin = lines[line_of(BIG_COPIES, "# pinned")]["transfers"]["htod"]
    assert (pin["count"], pin["bytes"], pin["pinned"], pin["pageable"]) == (1, 40_000_000, 1, 0)
    d2h = lines[line_of(BIG_COPIES, "# d2h")]["transfers"]["dtoh"]
    assert d2h["bytes"] == 400_000_000
    assert d2h["count"] >= 1


ITEM_LOOP = """
total = 0.0
for step in range(steps):
    total += (x * step).sum().item()  # item
"""


@needs_cupti
@pytest.mark.parametrize("backend", ["cupti", "torch"])
def test_item_every_step_is_one_sync_and_one_small_d2h(torch: Any, backend: str) -> None:
    steps = 50
    namespace = {"torch": torch, "x": torch.ones(1000, device="cuda"), "steps": steps}
    capture, _, lines = profile(f"item_sync_{backend}", ITEM_LOOP, namespace, backend)
    assert capture.backend == backend, capture.warnings
    line = lines[line_of(ITEM_LOOP, "# item")]
    assert line["hits"] == steps
    assert line["syncs"]["count"] == steps
    assert line["transfers"]["dtoh"]["count"] == steps
    if backend == "cupti":
        assert line["transfers"]["dtoh"]["bytes"] == 4 * steps
    assert line["kernels"]["count"] == 2 * steps  # mul and sum
    assert any(h["code"] == "GPU001" for h in line["hints"])


TRAIN = """
for step in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(data), target)  # forward
    loss.backward()  # backward
    opt.step()
    loss.item()
"""


@needs_cupti
@pytest.mark.parametrize("backend", ["cupti", "torch"])
def test_backward_on_the_autograd_thread_lands_on_its_line(torch: Any, backend: str) -> None:
    steps = 20
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).cuda()
    namespace = {
        "steps": steps,
        "model": model,
        "opt": torch.optim.SGD(model.parameters(), lr=0.01),
        "F": torch.nn.functional,
        "data": torch.randn(256, 784, device="cuda"),
        "target": torch.randint(0, 10, (256,), device="cuda"),
    }
    exec(compile(TRAIN.replace("steps)", "2)"), "<warmup>", "exec"), namespace)
    name = "train_step" if backend == "cupti" else f"train_step_{backend}"
    capture, payload, lines = profile(name, TRAIN, namespace, backend)
    assert capture.backend == backend, capture.warnings
    assert payload["unattributed"] == {
        "kernels": 0,
        "collectives": 0,
        "transfers": 0,
        "syncs": 0,
        "memsets": 0,
    }
    backward = lines[line_of(TRAIN, "# backward")]
    assert backward["kernels"]["count"] > 0
    assert backward["kernels"]["count"] % steps == 0
    assert backward["other_thread_calls"] > 0  # autograd's device thread launched them
    assert lines[line_of(TRAIN, "# forward")]["kernels"]["count"] % steps == 0
    assert lines[line_of(TRAIN, "loss.item()")]["syncs"]["count"] == steps


CUPY = """
for i in range(10):
    b = double(a)  # launch
cp.cuda.Device().synchronize()
"""


@needs_cupti
def test_cupy_elementwise_kernels(torch: Any) -> None:
    cp = pytest.importorskip("cupy")
    double = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * 2", "gpulens_double")
    a = cp.arange(1_000_000, dtype=cp.float32)
    double(a)  # compile and load outside the profile
    _, _, lines = profile("cupy_elementwise", CUPY, {"cp": cp, "double": double, "a": a})
    kernels = lines[line_of(CUPY, "# launch")]["kernels"]
    assert kernels["count"] == 10
    assert "gpulens_double" in kernels["top"][0]["name"]


NUMBA = """
for _ in range(5):
    add_one[4, 256](d)  # launch
cuda.synchronize()
"""


@needs_cupti
def test_numba_cuda_jit_kernel(torch: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("numba")
    import numpy as np

    if not hasattr(np, "row_stack"):
        # numba-cuda 0.30.4 still calls np.row_stack, which NumPy 2.5 removed (its alias
        # np.vstack remains); seen on the device machine
        monkeypatch.setattr(np, "row_stack", np.vstack, raising=False)
    from numba import cuda

    @cuda.jit
    def add_one(x: Any) -> None:
        i = cuda.grid(1)
        if i < x.size:
            x[i] += 1

    d = cuda.to_device(np.zeros(1000, np.float32))
    try:
        add_one[4, 256](d)  # compile outside the profile
    except AttributeError as error:  # numba-cuda built against an older NumPy
        pytest.skip(f"numba-cuda cannot compile a kernel with this NumPy: {error}")
    cuda.synchronize()
    _, _, lines = profile("numba_kernel", NUMBA, {"cuda": cuda, "add_one": add_one, "d": d})
    kernels = lines[line_of(NUMBA, "# launch")]["kernels"]
    assert kernels["count"] == 5
    assert "add_one" in kernels["top"][0]["name"]
    assert d.copy_to_host()[0] == 6


NESTED = """
def step(x):
    y = x * 2  # mul
    return y.sum()  # sum
for _ in range(7):
    s = step(x)  # call
    z = x + 1  # add
"""


@needs_cupti
def test_nested_function_lines_and_return_to_caller(torch: Any) -> None:
    _, _, lines = profile("nested_function", NESTED, {"x": torch.ones(1000, device="cuda")})
    assert lines[line_of(NESTED, "# mul")]["kernels"]["count"] == 7
    assert lines[line_of(NESTED, "# sum")]["kernels"]["count"] == 7
    assert lines[line_of(NESTED, "# add")]["kernels"]["count"] == 7
    assert lines[line_of(NESTED, "# call")]["kernels"]["count"] == 0
    assert lines[line_of(NESTED, "# call")]["hits"] == 7


OOM = """
y = x + 1  # before
huge = torch.empty(10**14, dtype=torch.uint8, device="cuda")  # oom
z = x + 2  # after
"""


@needs_cupti
def test_cuda_oom_mid_cell_is_reported_and_the_process_stays_usable(torch: Any) -> None:
    capture, _payload, lines = profile(
        "oom", OOM, {"torch": torch, "x": torch.ones(10, device="cuda")}
    )
    assert capture.error is not None
    assert "OutOfMemory" in capture.error["type"]
    assert capture.error["line"] == line_of(OOM, "# oom")
    assert lines[line_of(OOM, "# before")]["kernels"]["count"] == 1
    assert line_of(OOM, "# after") not in lines
    assert torch.ones(3, device="cuda").sum().item() == 3
    again, _, _ = profile("after_oom", "w = torch.ones(4, device='cuda') * 3\n", {"torch": torch})
    assert again.backend == "cupti" and again.error is None


TWO_GPUS = """
a = torch.full((1_000_000,), 2.0, device="cuda:0") * 3  # gpu0
b = torch.full((1_000_000,), 5.0, device="cuda:1") * 7  # gpu1
c = a.to("cuda:1")  # peer
"""


@needs_cupti
def test_two_gpus_have_per_device_figures(torch: Any) -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs; this machine has {torch.cuda.device_count()}")
    for device in (0, 1):
        torch.ones(1, device=f"cuda:{device}").sum().item()  # contexts up before the profile
    namespace = {"torch": torch}
    _capture, payload, lines = profile("two_gpus", TWO_GPUS, namespace)
    assert sorted(gpu["index"] for gpu in payload["gpus"]) == [0, 1]
    # the last line's copy may still run when the cell ends: the profile waits for both GPUs
    assert namespace["c"].device.index == 1 and float(namespace["c"][0]) == 6.0
    on_zero = lines[line_of(TWO_GPUS, "# gpu0")]
    on_one = lines[line_of(TWO_GPUS, "# gpu1")]
    # torch.full is one fill kernel, `*` one multiply kernel, each on its own GPU
    assert on_zero["kernels"]["count"] == 2
    # per-device figures are given where a line ran on a GPU other than 0
    assert "devices" not in on_zero
    assert [(d["index"], d["kernels"]) for d in on_one["devices"]] == [(1, 2)]
    peer = lines[line_of(TWO_GPUS, "# peer")]
    copied = sum(t["bytes"] for t in peer["transfers"].values())
    assert peer["transfers"]["dtod"]["count"] >= 1, peer["transfers"]
    assert copied == 4_000_000, peer["transfers"]
    assert payload["unattributed"] == {
        "kernels": 0,
        "collectives": 0,
        "transfers": 0,
        "syncs": 0,
        "memsets": 0,
    }


@needs_cupti
def test_torch_profiler_works_after_a_gpulens_profile(torch: Any) -> None:
    profile("before_torch_profiler", "y = torch.ones(64, device='cuda') + 1\n", {"torch": torch})
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    a = torch.randn(512, 512, device="cuda")
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        (a @ a).sum().item()
    device_events = [e for e in prof.events() if str(e.device_type).endswith("CUDA")]
    assert device_events, "torch.profiler recorded no GPU activity after gpulens"
    # and gpulens again, after torch.profiler
    capture, _, lines = profile(
        "after_torch_profiler", "y = torch.ones(64, device='cuda') + 1\n", {"torch": torch}
    )
    assert capture.backend == "cupti"
    assert lines[1]["kernels"]["count"] == 2


CLOCKED = """
x = torch.empty(2**28, device="cuda")  # alloc
x.fill_(1.0); torch.cuda.synchronize()  # fill
time.sleep(0.05)  # nap
del x  # free
"""


@needs_cupti
def test_after_torch_profiler_lines_still_read_in_seconds_and_memory_on_its_line(
    torch: Any,
) -> None:
    """torch.profiler gives CUPTI the CPU's cycle counter as its clock for the rest of the
    process (Kineto's timestamp callback): a later profile measures the rate and reports
    seconds (a 50 ms nap is 50 ms, not 105), places torch's allocator history, which is
    in Unix time, on the right lines, and measures the GPU's idle time on the one clock: the
    fill kernel is busy time on its line, the nap after it is idle. (A cell that makes no GPU
    work has no idle time to give: the GPU's idle time is only said of a cell that used it.)"""
    import time

    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        torch.ones(8, device="cuda").sum().item()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    namespace = {"torch": torch, "time": time}
    capture, payload, lines = profile("clock_after_torch_profiler", CLOCKED, namespace)
    assert capture.backend == "cupti", capture.warnings
    # CUPTI's records were on Kineto's clock and were moved onto the lines' Unix time
    print("records' ticks per ns:", capture.timings.get("records_ticks_per_ns"))
    assert abs(capture.timings["records_ticks_per_ns"] - 1.0) > 0.01
    nap = lines[line_of(CLOCKED, "# nap")]
    assert 0.05 <= nap["host_s"] < 0.07
    assert 0.05 <= nap["gpu_idle_s"] <= nap["own_s"] < 0.07
    assert 0.05 <= payload["wall_s"] < 0.1
    fill = lines[line_of(CLOCKED, "# fill")]
    assert fill["kernels"]["count"] == 1
    # the kernel ran within its line (the line waits for it): the GPU's busy time there
    assert fill["own_s"] - fill["gpu_idle_s"] >= 0.99 * fill["kernels"]["gpu_s"] > 0
    alloc = lines[line_of(CLOCKED, "# alloc")]["memory"]
    free = lines[line_of(CLOCKED, "# free")]["memory"]
    assert alloc["allocated"] == {"alloc": GiB, "free": 0, "net": GiB}
    assert alloc["reserved"] == {"alloc": GiB, "free": 0, "net": GiB}
    assert free["allocated"] == {"alloc": 0, "free": GiB, "net": -GiB}
    zero = {"alloc": 0, "free": 0, "net": 0}
    assert nap["memory"] == {"allocated": zero, "reserved": zero}
    assert fill["memory"] == {"allocated": zero, "reserved": zero}


def test_gpulens_falls_back_while_torch_profiler_holds_cupti(torch: Any) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        capture, _, _ = profile(
            "held", "y = torch.ones(8, device='cuda') + 1\n", {"torch": torch}, "auto"
        )
    assert capture.backend == "host"
    assert any("torch.profiler" in w for w in capture.warnings)


@needs_cupti
def test_cli_profiles_the_demo_cell_with_cupti(tmp_path: Any) -> None:
    import subprocess
    import sys

    out = tmp_path / "demo.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpulens",
            "profile",
            "examples/profile_demo.py",
            "--cell",
            "3",
            "--format",
            "json",
            "-o",
            str(out),
            "--timeout",
            "120",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(out.read_text())
    assert payload["backend"] == "cupti", payload["warnings"]
    first = payload["source"]["first_line"]
    item = next(
        line for line in payload["lines"] if ".item()" in payload["code"][line["line"] - first]
    )
    assert item["hits"] == 200  # STEPS in the demo
    assert item["syncs"]["count"] == item["hits"]
    assert payload["unattributed"]["kernels"] == 0


LONG_LOOP = """
total = 0
for i in range(steps):
    total += i
    if i % every == 0:
        y = x * 2  # launch
torch.cuda.synchronize()
"""


@needs_cupti
@pytest.mark.parametrize("backend", ["cupti", "torch"])
def test_a_long_python_loop_keeps_memory_flat_and_its_launches_on_their_line(
    torch: Any, backend: str
) -> None:
    """3M line events with a launch every 100k iterations, every run recorded: the line
    timeline is folded dozens of times and its oldest segments dropped (after CUPTI's
    completed buffers are placed); every kernel still lands on the launching line, and
    memory stays flat."""
    import resource

    steps, every = 1_500_000, 100_000
    namespace = {"torch": torch, "x": torch.ones(1000, device="cuda"), "steps": steps}
    namespace["every"] = every
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    capture, payload, lines = profile(
        f"long_loop_{backend}", LONG_LOOP, namespace, backend, sample=False
    )
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(f"[long_loop_{backend}] peak grew {grew_mb:.1f} MB")
    assert capture.backend == backend, capture.warnings
    assert capture.timings["folds"] > 10
    assert capture.timeline["retained_from"] > capture.timeline["start"]  # segments dropped
    launch = lines[line_of(LONG_LOOP, "# launch")]
    assert launch["hits"] == steps // every
    assert launch["kernels"]["count"] == steps // every
    assert sum(line["kernels"]["count"] for line in payload["lines"]) == steps // every
    assert payload["unattributed"]["kernels"] == 0
    assert lines[line_of(LONG_LOOP, "total += i")]["hits"] == steps
    assert grew_mb <= 50


@needs_cupti
@pytest.mark.parametrize("backend", ["cupti", "torch"])
def test_a_sampled_python_loop_keeps_its_launches_exact(torch: Any, backend: str) -> None:
    """The same loop with its fast lines sampled (`gpulens.profiler.sampling`): the branch
    taken every 100k iterations stays recorded whole, so its runs and every kernel it
    launched are exact and placed on it; the loop's own lines show the runs recorded."""
    steps, every = 1_500_000, 100_000
    namespace = {"torch": torch, "x": torch.ones(1000, device="cuda"), "steps": steps}
    namespace["every"] = every
    capture, payload, lines = profile(f"sampled_loop_{backend}", LONG_LOOP, namespace, backend)
    assert capture.backend == backend, capture.warnings
    loop = [line_of(LONG_LOOP, text) for text in ("for i in", "total += i", "if i % every")]
    assert capture.timeline["sampled"] == loop
    launch = lines[line_of(LONG_LOOP, "# launch")]
    assert launch["hits"] == steps // every and "sampled" not in launch
    assert launch["kernels"]["count"] == steps // every
    assert sum(line["kernels"]["count"] for line in payload["lines"]) == steps // every
    assert payload["unattributed"]["kernels"] == 0
    body = lines[line_of(LONG_LOOP, "total += i")]
    assert 0 < body["hits"] < steps
    assert launch["host_s"] * 10 < body["host_s"]  # the loop's time stays on the loop
    (note,) = [w for w in payload["warnings"] if "ran too often and too fast" in w]
    assert "not placed" not in note


# -- GPU memory per line, and the GPU's idle time -------------------------------------------------
MEMORY = """
x = torch.empty(2**28, device="cuda")  # alloc
x.fill_(1.0)  # fill
del x  # free
torch.cuda.empty_cache()  # release
"""
GiB = 2**30


def requested_bytes(torch: Any) -> int:
    """Bytes torch's allocator holds for tensors now, as requested (what the history counts)."""
    return int(torch.cuda.memory_stats()["requested_bytes.all.current"])


@needs_cupti
@pytest.mark.parametrize("backend", ["cupti", "torch"])
def test_a_gib_allocated_and_freed_on_their_lines(torch: Any, backend: str) -> None:
    """2**28 floats are 1 GiB for torch's allocator on the line that makes them and -1 GiB on
    the `del`; with the cache emptied first, the driver hands out that GiB on the first line
    and takes it back on `empty_cache` (CUPTI's memory records: the cupti backend only)."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    name = "memory_lines" if backend == "cupti" else f"memory_lines_{backend}"
    capture, payload, lines = profile(name, MEMORY, {"torch": torch}, backend)
    assert capture.backend == backend, capture.warnings
    alloc = lines[line_of(MEMORY, "# alloc")]["memory"]
    free = lines[line_of(MEMORY, "# free")]["memory"]
    fill = lines[line_of(MEMORY, "# fill")]["memory"]
    assert alloc["allocated"] == {"alloc": GiB, "free": 0, "net": GiB}
    assert free["allocated"] == {"alloc": 0, "free": GiB, "net": -GiB}
    assert fill["allocated"] == {"alloc": 0, "free": 0, "net": 0}
    assert "+1.0 GiB mem" in lines[line_of(MEMORY, "# alloc")]["label"]
    assert "−1.0 GiB mem" in lines[line_of(MEMORY, "# free")]["label"]
    peak = payload["peak"]["allocated"]
    assert [(p["line"], p["rise"]) for p in peak] == [(line_of(MEMORY, "# alloc"), GiB)]
    if backend == "cupti":
        release = lines[line_of(MEMORY, "# release")]["memory"]
        assert alloc["reserved"] == {"alloc": GiB, "free": 0, "net": GiB}
        assert free["reserved"] == {"alloc": 0, "free": 0, "net": 0}  # torch keeps it cached
        assert release["reserved"] == {"alloc": 0, "free": GiB, "net": -GiB}
    else:
        assert "reserved" not in alloc  # torch.profiler gives no driver view
    assert not any("memory record" in w for w in payload["warnings"]), payload["warnings"]


PEAK = """
keep = torch.zeros(2**26, device="cuda")  # keep
for i in range(3):
    big = torch.empty(2**27 * (i + 1), device="cuda")  # big
    del big  # drop
"""


@needs_cupti
def test_the_peak_inside_a_loop_is_named_on_its_line_with_its_bytes(torch: Any) -> None:
    """256 MiB kept (zeroed: GPU work, so its recording has a heat scale), then 512 MiB,
    1 GiB and 1.5 GiB made and dropped in turn: the peak is what was held before the cell
    + 256 MiB + 1.5 GiB, reached on the `big` line."""
    torch.cuda.synchronize()
    before = requested_bytes(torch)
    _, payload, lines = profile("memory_peak_loop", PEAK, {"torch": torch})
    peak = payload["peak"]["allocated"]
    assert len(peak) == 1
    assert peak[0]["line"] == line_of(PEAK, "# big")
    assert peak[0]["bytes"] == before + 2**28 + 3 * 2**29
    assert peak[0]["rise"] == 2**28 + 3 * 2**29
    big = lines[line_of(PEAK, "# big")]["memory"]["allocated"]
    assert big == {"alloc": 6 * 2**29, "free": 0, "net": 6 * 2**29}
    assert lines[line_of(PEAK, "# drop")]["memory"]["allocated"]["net"] == -6 * 2**29
    assert f"peak {memory_bytes(peak[0]['bytes'])}" in lines[line_of(PEAK, "# big")]["label"]
    table = payload["display"]["table"]
    column = [c["title"] for c in table["columns"]].index("GPU work")
    marked = [row["line"] for row in table["rows"] if "▲ peak" in row["cells"][column]]
    assert marked == [line_of(PEAK, "# big")]
    assert f"at line {line_of(PEAK, '# big')}" in payload["display"]["header"]


IDLE = """
for step in range(steps):
    y = x * 2  # tiny
    time.sleep(0.005)  # sleep
torch.cuda.synchronize()
"""


@needs_cupti
def test_a_loop_of_tiny_kernels_and_sleeps_leaves_the_gpu_idle(torch: Any) -> None:
    """20 kernels of a few µs, 5 ms of sleep after each: the GPU sits idle nearly all of
    the loop, and the loop's line says so."""
    import time

    namespace = {"torch": torch, "time": time, "x": torch.ones(1000, device="cuda"), "steps": 20}
    exec("y = x * 2", namespace)  # the kernel loaded before the profile
    _, payload, lines = profile("idle_sleep_loop", IDLE, namespace)
    sleep = lines[line_of(IDLE, "# sleep")]
    assert sleep["own_s"] >= 20 * 0.005
    assert sleep["gpu_idle_s"] >= 0.99 * sleep["own_s"]
    assert payload["gpu_busy"]["share"] < 0.01
    loop = lines[line_of(IDLE, "for step")]
    hint = next(h for h in loop["hints"] if h["code"] == "gpu-idle")
    assert hint["message"].split(" of this loop")[0] in (
        "the GPU was idle 99%",
        "the GPU was idle 100%",
    )
    assert "GPU idle 99%" in sleep["label"] or "GPU idle 100%" in sleep["label"]


BUSY = """
for _ in range(20):
    c = a @ b  # matmul
torch.cuda.synchronize()  # wait
"""


def idle_outside_the_work(capture: Any) -> tuple[float, float]:
    """(s from the cell's first line to its first GPU work, s from its last work to the end
    of its last line): the GPU's idle time when it never waits between the two."""
    records, segments = capture.records, capture.timeline["segments"]
    work = [
        (begin, end)
        for family in ("kernels", "memset", "memcpy")
        for begin, end in zip(records[family]["start"], records[family]["end"], strict=True)
    ]
    on_lines = [i for i, line in enumerate(segments["line"]) if line]
    first, last = segments["t"][on_lines[0]], segments["t"][on_lines[-1] + 1]
    return (min(b for b, _ in work) - first) / 1e9, (last - max(e for _, e in work)) / 1e9


@needs_cupti
def test_a_compute_bound_loop_keeps_the_gpu_busy(torch: Any) -> None:
    """20 bf16 8192^3 matmuls (about 1.4 ms each on an H200) queued at once: the host waits
    while the GPU works, and the GPU is idle only before the first one starts (the first
    launch: ~0.6 ms, a fixed cost whatever the cell's length) and after the last one ends;
    between them only the GPU's own gaps from one kernel to the next (a few µs each)."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    namespace = {"a": a, "b": a.clone(), "torch": torch}
    exec("c = a @ b; torch.cuda.synchronize()", namespace)  # cuBLAS warm
    capture, payload, lines = profile("idle_compute_bound", BUSY, namespace)
    assert payload["gpu_busy"]["share"] >= 0.95
    idle = sum(line["gpu_idle_s"] for line in payload["lines"])
    before, after = idle_outside_the_work(capture)
    print(
        f"idle {idle * 1e3:.3f} ms: before the first kernel {before * 1e3:.3f} ms, "
        f"after the last {after * 1e3:.3f} ms"
    )
    assert before + after - 1e-6 <= idle <= before + after + 20 * 10e-6
    assert before < 0.002
    wait = lines[line_of(BUSY, "# wait")]
    assert wait["gpu_idle_s"] <= 0.01 * wait["own_s"]
    assert not any(h["code"] == "gpu-idle" for line in payload["lines"] for h in line["hints"])


def profile_cli(tmp_path: Any, source: str, *flags: str) -> dict[str, Any]:
    """`gpulens profile FILE --format json` of `source`, in a subprocess as a user runs it."""
    import subprocess
    import sys

    script = tmp_path / "memory_cli.py"
    script.write_text(textwrap.dedent(source))
    out = tmp_path / "payload.json"
    command = [sys.executable, "-m", "gpulens", "profile", str(script), "--format", "json"]
    done = subprocess.run(
        [*command, "-o", str(out), "--timeout", "120", *flags],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    payload: dict[str, Any] = json.loads(out.read_text())
    return payload


def memory_of(payload: dict[str, Any], marker: str) -> Any:
    first = payload["source"]["first_line"]
    return next(
        line["memory"]
        for line in payload["lines"]
        if marker in payload["code"][line["line"] - first]
    )


@needs_cupti
def test_memory_per_line_through_the_cli_and_its_switch(tmp_path: Any) -> None:
    """By default the driver's view only; `--memory all` adds torch's allocator view (torch
    set up in the cell before: both; torch imported but CUDA not used yet: torch's view
    starts when CUDA does; torch imported by the profiled code itself: the driver's view,
    and a note saying why torch's is missing); `--no-memory`: none."""
    cells = """
    import torch
    {setup}
    # %%
    y = torch.empty(2**20, device="cuda")  # alloc
    """
    ready = cells.format(setup="torch.ones(1, device='cuda')")
    default = profile_cli(tmp_path, ready, "--cell", "1")
    assert default["backend"] == "cupti", default["warnings"]
    assert list(memory_of(default, "# alloc")) == ["reserved"]
    both = profile_cli(tmp_path, ready, "--cell", "1", "--memory", "all")
    assert memory_of(both, "# alloc")["allocated"]["net"] == 4 * 2**20
    assert "reserved" in memory_of(both, "# alloc")
    lazy = profile_cli(tmp_path, cells.format(setup=""), "--cell", "1", "--memory", "all")
    assert memory_of(lazy, "# alloc")["allocated"]["net"] == 4 * 2**20
    off = profile_cli(tmp_path, cells.format(setup=""), "--cell", "1", "--no-memory")
    assert memory_of(off, "# alloc") is None and off["peak"] is None
    whole = profile_cli(tmp_path, cells.format(setup=""), "--memory", "all")
    assert "allocated" not in memory_of(whole, "# alloc")
    assert any("torch's allocator view" in w for w in whole["warnings"]), whole["warnings"]
