"""`gpulens.profile.memory` chooses the GPU memory views an editor's "Profile cell" records:
"all" adds torch's caching allocator to the driver's view, "off" records none (run with
`pytest -m gpu tests/lsp`)."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import RecordingClient, open_document, uri_in
from lsprotocol import types
from test_lsp_profiling import CONFIG, profiling_params, settings_changed

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        importlib.util.find_spec("torch") is None or shutil.which("nvidia-smi") is None,
        reason="needs an NVIDIA GPU and torch",
    ),
]

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


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: RecordingClient, tmp_path: Path):
    lsp_client.set_configuration({"profile": {"timeoutSeconds": 240}}, section="gpulens")
    lsp_client.initialize_result = await lsp_client.initialize_session(profiling_params(tmp_path))
    yield
    await lsp_client.shutdown_session()


async def profiled_views(client: RecordingClient, tmp_path: Path, memory: str) -> set[str]:
    await settings_changed(client, {"profile": {"timeoutSeconds": 240, "memory": memory}})
    uri = uri_in(tmp_path, f"memory_{memory}.py")
    open_document(client, uri, CELLS)
    line = CELLS.splitlines().index('x = torch.empty(2**28, device="cuda")  # alloc')
    payload: dict[str, Any] = await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="gpulens.profileCell", arguments=[{"uri": uri, "line": line}]
            )
        ),
        300,
    )
    assert payload["error"] is None, payload["error"]
    alloc = next(entry for entry in payload["lines"] if entry["line"] == line + 1)
    return set(alloc.get("memory") or {})


async def test_the_memory_setting_chooses_the_views_recorded(
    client: RecordingClient, tmp_path: Path
) -> None:
    assert await profiled_views(client, tmp_path, "reserved") == {"reserved"}
    assert await profiled_views(client, tmp_path, "all") == {"allocated", "reserved"}
    assert await profiled_views(client, tmp_path, "off") == set()
