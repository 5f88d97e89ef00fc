"""The editors' "Profile cell" on a cell set up as a distributed job, on GPUs: the language
server finds `init_process_group` in the cells, starts one rank per visible GPU through
torch's launcher and answers with the merged payload (run with `pytest -m gpu tests/lsp`)."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import RecordingClient, open_document, uri_in
from lsprotocol import types
from test_lsp_profiling import CONFIG, profiling_params


def _gpu_count() -> int:
    if importlib.util.find_spec("torch") is None or shutil.which("nvidia-smi") is None:
        return 0
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return sum(1 for row in listed.stdout.splitlines() if row.startswith("GPU "))


GPUS = _gpu_count()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(GPUS < 1, reason="needs an NVIDIA GPU and torch"),
]

STEPS = 10
DDP = textwrap.dedent(
    f"""
    import os
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    model = torch.nn.Linear(64, 10).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    x = torch.randn(32, 64, device="cuda")
    ddp(x).sum().backward()
    # %%
    for step in range({STEPS}):
        loss = ddp(x).sum()
        loss.backward()
        total = loss.item()
    torch.cuda.synchronize()
    """
).lstrip("\n")


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: RecordingClient, tmp_path: Path):
    """A client that answers the refreshes a profile sends (inlay hints, code lenses)."""
    lsp_client.set_configuration({"profile": {"timeoutSeconds": 240}}, section="gpulens")
    lsp_client.initialize_result = await lsp_client.initialize_session(profiling_params(tmp_path))
    yield
    await lsp_client.shutdown_session()


async def test_profile_cell_runs_one_rank_per_gpu_and_merges_them(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path, "ddp.py")
    open_document(client, uri, DDP)
    loop_line = DDP.splitlines().index(f"for step in range({STEPS}):")  # 0-based
    payload: dict[str, Any] = await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="gpulens.profileCell", arguments=[{"uri": uri, "line": loop_line}]
            )
        ),
        300,
    )
    assert payload["error"] is None, payload["error"]
    assert payload["ranks"]["world_size"] == GPUS
    assert payload["ranks"]["reported"] == list(range(GPUS))
    lines = {entry["line"]: entry for entry in payload["lines"]}
    item = lines[loop_line + 4]  # `total = loss.item()`, 1-based
    assert item["hits"] == STEPS * GPUS
    assert item["syncs"]["count"] == STEPS * GPUS
