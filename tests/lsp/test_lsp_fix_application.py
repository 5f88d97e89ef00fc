"""The editor applies fixes as `gpulens check --fix` does: each whole or not at all, and never
one that leaves the file unparsable.

No real rule offers overlapping multi-edit fixes or a fix that breaks the file, so the CLI and
the server run with `injected_fixes/` on PYTHONPATH, which adds such findings on marked lines
(see there); the rest of the analysis is the real one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest_lsp
from lsp_helpers import (
    RecordingClient,
    apply_text_edits,
    code_actions,
    codes,
    edits_for,
    initialize_params,
    open_document,
    server_config,
    uri_in,
    wait_for_published,
)

INJECTED = str(Path(__file__).resolve().parent / "injected_fixes")
PYTHONPATH = os.pathsep.join(filter(None, [INJECTED, os.environ.get("PYTHONPATH")]))

# GPU901's fix renames OVERLAP_A and rewrites B_TARGET_X, over GPU902's fix of B_TARGET;
# GPU903's fix would make line 4 `c = def (:`; GPU001 is the real rule on the loop
MARKED = """\
import torch
a = OVERLAP_A
b = B_TARGET_X
c = BREAK_ME
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
"""
FIXED = """\
import torch
a = DONE_A
b = A_WAS_HERE
c = BREAK_ME
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().detach().double()
total = float(total)  # one sync, after the loop
"""


def fixed_by_the_cli(text: str, folder: Path) -> str:
    path = folder / "marked.py"
    path.write_text(text)
    subprocess.run(
        [sys.executable, "-m", "gpulens", "check", "--fix", str(path)],
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        capture_output=True,
        timeout=60,
        check=False,
    )
    return path.read_text()


@pytest_lsp.fixture(config=server_config(PYTHONPATH=PYTHONPATH))
async def injected(lsp_client: RecordingClient, tmp_path: Path):
    lsp_client.set_configuration({}, section="gpulens")
    await lsp_client.initialize_session(initialize_params(tmp_path))
    yield
    await lsp_client.shutdown_session()


async def test_fix_all_takes_each_fix_whole_as_check_fix_does(
    injected: RecordingClient, tmp_path: Path
) -> None:
    client = injected
    expected = fixed_by_the_cli(MARKED, tmp_path)
    assert expected == FIXED  # GPU901 whole, GPU902 left (its text is gone), GPU903 refused
    uri = uri_in(tmp_path, "in_editor.py")
    open_document(client, uri, MARKED)
    found = await wait_for_published(client, uri, lambda p: "GPU903" in codes(p))
    assert {"GPU001", "GPU901", "GPU902", "GPU903"} <= set(codes(found))
    (fix_all,) = await code_actions(client, uri, (0, 0), only=["source.fixAll.gpulens"])
    assert fix_all.edit is not None
    assert apply_text_edits(MARKED, edits_for(fix_all.edit, uri)) == expected


async def test_a_quick_fix_that_would_break_the_file_is_not_offered(
    injected: RecordingClient, tmp_path: Path
) -> None:
    client = injected
    uri = uri_in(tmp_path, "quick.py")
    open_document(client, uri, MARKED)
    await wait_for_published(client, uri, lambda p: "GPU903" in codes(p))
    titles = [a.title for a in await code_actions(client, uri, (3, 6))]
    assert "Suppress GPU903 on this line" in titles  # the finding is there
    assert "Fix C" not in titles
    # alone, each of the overlapping fixes applies whole
    assert "Fix A" in [a.title for a in await code_actions(client, uri, (1, 6))]
    assert "Fix B" in [a.title for a in await code_actions(client, uri, (2, 6))]
