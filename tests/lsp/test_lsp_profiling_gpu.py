"""The editors' "Profile cell" on GPUs, through a real LSP client (run with `pytest -m gpu
tests/lsp`): on a cell set up as a distributed job the language server finds
`init_process_group` in the cells, starts one rank per visible GPU through torch's launcher
and answers with the merged payload; `gpulens.profile.memory` chooses the GPU memory views
recorded ("all" adds torch's caching allocator to the driver's view, "off" records none)."""

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
from test_lsp_profiling import CONFIG, profiling_params, settings_changed


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


async def profile_cell(client: RecordingClient, uri: str, line: int) -> dict[str, Any]:
    """The payload "Profile cell" answers for the cell holding `line` (0-based)."""
    payload: dict[str, Any] = await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="gpulens.profileCell", arguments=[{"uri": uri, "line": line}]
            )
        ),
        300,
    )
    return payload


async def test_profile_cell_runs_one_rank_per_gpu_and_merges_them(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path, "ddp.py")
    open_document(client, uri, DDP)
    loop_line = DDP.splitlines().index(f"for step in range({STEPS}):")  # 0-based
    payload = await profile_cell(client, uri, loop_line)
    assert payload["error"] is None, payload["error"]
    assert payload["ranks"]["world_size"] == GPUS
    assert payload["ranks"]["reported"] == list(range(GPUS))
    lines = {entry["line"]: entry for entry in payload["lines"]}
    item = lines[loop_line + 4]  # `total = loss.item()`, 1-based
    assert item["hits"] == STEPS * GPUS
    assert item["syncs"]["count"] == STEPS * GPUS


CELLS = textwrap.dedent(
    """
    import torch
    torch.zeros(1, device="cuda")
    # %%
    x = torch.empty(2**28, device="cuda")  # alloc
    del x
    torch.cuda.synchronize()
    """
).lstrip("\n")


async def profiled_views(client: RecordingClient, tmp_path: Path, memory: str) -> set[str]:
    await settings_changed(client, {"profile": {"timeoutSeconds": 240, "memory": memory}})
    uri = uri_in(tmp_path, f"memory_{memory}.py")
    open_document(client, uri, CELLS)
    line = CELLS.splitlines().index('x = torch.empty(2**28, device="cuda")  # alloc')
    payload = await profile_cell(client, uri, line)
    assert payload["error"] is None, payload["error"]
    alloc = next(entry for entry in payload["lines"] if entry["line"] == line + 1)
    return set(alloc.get("memory") or {})


async def test_the_memory_setting_chooses_the_views_recorded(
    client: RecordingClient, tmp_path: Path
) -> None:
    assert await profiled_views(client, tmp_path, "reserved") == {"reserved"}
    assert await profiled_views(client, tmp_path, "all") == {"allocated", "reserved"}
    assert await profiled_views(client, tmp_path, "off") == set()
