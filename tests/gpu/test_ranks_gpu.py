"""Ground truth for `gpulens profile --nproc-per-node 2`, on a machine with two GPUs.

A DDP step on a tiny model whose parameters fit one gradient bucket: each step all-reduces
every parameter's gradient once, so the backward line's count of all-reduce kernels is the
number of steps and their bytes the parameters' bytes per step, on each rank. Rank 1 sleeps
before each step: the report names it the straggler on that line, and rank 0 is the one that
waits in the all-reduce. With GPULENS_FIXTURE_DIR set, each rank's raw capture is saved there
(tests/unit/profiler/test_ranks_recorded.py replays it without GPUs).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gpulens.profiler.ranks import run_ranks
from gpulens.profiler.runner import plan_job


def _gpu_count() -> int:
    if importlib.util.find_spec("torch") is None or shutil.which("nvidia-smi") is None:
        return 0
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return sum(1 for row in listed.stdout.splitlines() if row.startswith("GPU "))


GPUS = _gpu_count()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(GPUS < 2, reason=f"needs 2 GPUs with torch; this machine has {GPUS}"),
]

STEPS = 20
SLEEP_S = 0.02
DDP_STEP = textwrap.dedent(
    f"""
    import os
    import time
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    ).cuda()
    PARAM_BYTES = sum(p.numel() * p.element_size() for p in model.parameters())
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank], bucket_cap_mb=1000)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    x = torch.randn(32, 64, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    loss = torch.nn.functional.cross_entropy(ddp(x), y)  # a first step: DDP's own setup
    loss.backward()
    torch.cuda.synchronize()
    # %%
    for step in range({STEPS}):
        if rank == 1:
            time.sleep({SLEEP_S})  # slow
        loss = torch.nn.functional.cross_entropy(ddp(x), y)  # forward
        loss.backward()  # backward
        opt.step()
        opt.zero_grad()
        total = loss.item()  # item
    torch.cuda.synchronize()
    """
).lstrip("\n")
# 64*128 + 128 + 128*10 + 10 float32 parameters
PARAM_BYTES = (64 * 128 + 128 + 128 * 10 + 10) * 4


def line_of(marker: str) -> int:
    return next(i for i, text in enumerate(DDP_STEP.splitlines(), 1) if marker in text)


def profiled_job(
    folder: Path,
    script_name: str,
    source: str,
    ranks: int,
    *,
    recorded: dict[str, Any] | None = None,
    timeout: float = 300,
) -> dict[str, Any]:
    """`source` saved as `folder/script_name`, its cell 1 run as `ranks` ranks. With
    `recorded` (the recording's name and the figures known by construction) and
    GPULENS_FIXTURE_DIR set, each rank's raw capture is saved there for the replay tests."""
    script = folder / script_name
    script.write_text(source, encoding="utf-8")
    job = plan_job(str(script), source, cell=1)
    job["keep_capture"] = recorded is not None
    payload = run_ranks(job, ranks, sys.executable, timeout, cwd=str(folder))
    print(payload.get("output", "")[-3000:])
    fixtures = os.environ.get("GPULENS_FIXTURE_DIR")
    if fixtures and recorded is not None:
        os.makedirs(fixtures, exist_ok=True)
        fixture = {
            "name": recorded["name"],
            "filename": str(script),
            "source": source,
            "cell": job["target"]["cell"],
            "first_line": job["target"]["first_line"],
            **{key: value for key, value in recorded.items() if key != "name"},
            "ranks": payload.get("rank_captures"),
        }
        path = Path(fixtures) / f"{recorded['name']}.json.gz"
        with gzip.open(path, "wt", encoding="utf-8") as out:
            json.dump(fixture, out, separators=(",", ":"))
    return payload


@pytest.fixture(scope="module")
def ddp_profile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    recorded = {"name": "ddp_two_ranks", "steps": STEPS, "param_bytes": PARAM_BYTES}
    return profiled_job(
        tmp_path_factory.mktemp("ddp"), "ddp_step.py", DDP_STEP, 2, recorded=recorded
    )


def test_both_ranks_report_on_two_gpus(ddp_profile: dict[str, Any]) -> None:
    assert ddp_profile["error"] is None, ddp_profile["error"]
    assert ddp_profile["ranks"]["reported"] == [0, 1]
    assert ddp_profile["backend"] == "cupti", ddp_profile["warnings"]
    assert {gpu["index"] for gpu in ddp_profile["gpus"]} == {0, 1}


def test_one_all_reduce_per_step_of_the_parameters_bytes(ddp_profile: dict[str, Any]) -> None:
    lines = {line["line"]: line for line in ddp_profile["lines"]}
    backward = lines[line_of("# backward")]
    collectives = backward["collectives"]
    assert collectives["count"] == 2 * STEPS  # 2 ranks
    assert all("AllReduce" in top["name"] for top in collectives["top"])
    assert collectives["bytes"] == 2 * STEPS * PARAM_BYTES
    assert ddp_profile["unattributed"]["collectives"] == 0
    for figures in backward["ranks"]:
        assert figures["hits"] == STEPS
    # no other line all-reduces (DDP's first steps also broadcast, from the forward line)
    reducing = [
        n
        for n, line in lines.items()
        if any("AllReduce" in top["name"] for top in (line.get("collectives") or {}).get("top", []))
    ]
    assert reducing == [line_of("# backward")]


def test_the_sleeping_rank_is_named_the_straggler(ddp_profile: dict[str, Any]) -> None:
    lines = {line["line"]: line for line in ddp_profile["lines"]}
    slow = lines[line_of("# slow")]
    hint = next(h for h in slow["hints"] if h["code"] == "straggler")
    assert hint["message"].startswith("rank 1 is the straggler")
    assert slow["spread"]["slowest_rank"] == 1
    assert "rank 1 slowest" in slow["label"]
    # rank 0 waits for it in the all-reduce, and that wait is not taken for work
    backward = lines[line_of("# backward")]
    waited = {f["rank"]: f["waited_s"] for f in backward["ranks"]}
    assert waited[0] > 0.5 * STEPS * SLEEP_S > waited[1]
    assert not any(h["code"] == "straggler" for h in backward["hints"])
    assert "waiting" in backward["label"]


FOUR_RANKS = textwrap.dedent(
    f"""
    import os
    import time
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group("gloo")
    x = torch.ones(4096, device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    # %%
    for step in range({STEPS}):
        if rank == 2:
            time.sleep({SLEEP_S})  # slow
        x.mul_(0.25)
        dist.all_reduce(x)  # reduce
        total = x.sum().item()  # item
    torch.cuda.synchronize()
    """
).lstrip("\n")


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Four ranks on two GPUs (two a GPU: NCCL refuses that, gloo does not)."""
    recorded = {"name": "four_ranks", "steps": STEPS}
    folder = tmp_path_factory.mktemp("four")
    return profiled_job(folder, "four_ranks.py", FOUR_RANKS, 4, recorded=recorded)


def four_line(marker: str) -> int:
    return next(i for i, text in enumerate(FOUR_RANKS.splitlines(), 1) if marker in text)


def test_four_ranks_each_report_every_step(four_ranks: dict[str, Any]) -> None:
    assert four_ranks["error"] is None, four_ranks["error"]
    assert four_ranks["ranks"]["reported"] == [0, 1, 2, 3]
    lines = {line["line"]: line for line in four_ranks["lines"]}
    item = lines[four_line("# item")]
    assert sorted(f["rank"] for f in item["ranks"]) == [0, 1, 2, 3]
    assert all(f["hits"] == STEPS for f in item["ranks"])
    assert item["hits"] == 4 * STEPS


def test_the_sleeping_rank_of_four_is_named(four_ranks: dict[str, Any]) -> None:
    lines = {line["line"]: line for line in four_ranks["lines"]}
    slow = lines[four_line("# slow")]
    assert slow["spread"]["slowest_rank"] == 2
    hint = next(h for h in slow["hints"] if h["code"] == "straggler")
    assert hint["message"].startswith("rank 2 is the straggler")
    # the other three wait for it in the all-reduce: each waits longer there than rank 2
    reduce = {f["rank"]: f for f in lines[four_line("# reduce")]["ranks"]}
    assert all(reduce[r]["host_s"] > reduce[2]["host_s"] for r in (0, 1, 3))


STUCK = textwrap.dedent(
    """
    import os
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    x = torch.ones(1024, device="cuda")
    dist.all_reduce(x)
    # %%
    for step in range(1000):
        if rank == 1 and step == 5:
            raise RuntimeError("rank 1 fails at step 5")  # fails
        dist.all_reduce(x)  # reduce
        total = x.sum().item()  # item
    """
).lstrip("\n")


def test_a_rank_left_in_a_collective_by_a_failed_one_still_reports(tmp_path: Path) -> None:
    """Rank 1 raises; rank 0 waits in an all-reduce it will never finish. Torch's launcher
    sends it SIGTERM; its lines are reported all the same, and why it was stopped."""
    payload = profiled_job(tmp_path, "stuck.py", STUCK, 2, timeout=120)
    assert payload["ranks"]["reported"] == [0, 1], payload["ranks"]
    assert "rank 1 fails at step 5" in payload["error"]["message"]
    item = next(
        line
        for line in payload["lines"]
        if line["line"] == next(i for i, t in enumerate(STUCK.splitlines(), 1) if "# item" in t)
    )
    hits = {f["rank"]: f["hits"] for f in item["ranks"]}
    assert hits[1] == 5 and hits[0] in (5, 6)  # rank 0 was in its sixth when stopped
    assert any("its process groups were aborted" in w for w in payload["warnings"])
