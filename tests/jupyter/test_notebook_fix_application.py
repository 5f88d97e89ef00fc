"""JupyterLab applies fixes as `gpulens check --fix` and the language server do: each fix
whole or not at all, and never one that leaves a cell unparsable.

No real rule offers overlapping multi-edit fixes or a fix that breaks the code, so the
jupyter server and the CLI run with `tests/lsp/injected_fixes/` on PYTHONPATH, which adds
such findings on marked lines (see there); the rest of the analysis is the real one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from offset_edits import apply_action
from running_jupyter import Server, running_server

pytest.importorskip("jupyter_server")

INJECTED = str(Path(__file__).resolve().parents[1] / "lsp" / "injected_fixes")
PYTHONPATH = os.pathsep.join(filter(None, [INJECTED, os.environ.get("PYTHONPATH")]))

# GPU901's fix renames OVERLAP_A and rewrites B_TARGET_X, over GPU902's fix of B_TARGET;
# GPU903's fix would make `c = def (:`; GPU001 is the real rule on the loop
CELLS = [
    "import torch\na = OVERLAP_A\nb = B_TARGET_X\n",
    "c = BREAK_ME\n",
    'x = torch.randn(10, device="cuda")\ntotal = 0.0\nfor i in range(100):\n'
    "    total += (x * i).sum().item()\n",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("jupyter-injected")
    with running_server(home, {"PYTHONPATH": PYTHONPATH}) as running:
        yield running


def fixed_by_the_cli(cells: list[str], folder: Path) -> list[str]:
    notebook = {
        "cells": [
            {"cell_type": "code", "source": cell, "metadata": {}, "outputs": []} for cell in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = folder / "marked.ipynb"
    path.write_text(json.dumps(notebook))
    subprocess.run(
        [sys.executable, "-m", "gpulens", "check", "--fix", str(path)],
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        capture_output=True,
        timeout=60,
        check=False,
    )
    sources = [cell["source"] for cell in json.loads(path.read_text())["cells"]]
    return ["".join(s) if isinstance(s, list) else s for s in sources]


def test_fix_all_in_notebook_takes_each_fix_whole_as_check_fix_does(
    server: Server, tmp_path: Path
) -> None:
    expected = fixed_by_the_cli(CELLS, tmp_path)
    # GPU901 whole (GPU902's text is gone), GPU903 refused, GPU001 fixed
    assert expected[0] == "import torch\na = DONE_A\nb = A_WAS_HERE\n"
    assert expected[1] == CELLS[1]
    assert ".detach()" in expected[2]
    reply = server.analyze({"cells": CELLS, "fix_all": True}, token=server.token)
    assert reply.status_code == 200, reply.text
    codes = {f["code"] for cell in reply.json()["cells"] for f in cell["findings"]}
    assert {"GPU001", "GPU901", "GPU902", "GPU903"} <= codes
    assert apply_action(CELLS, reply.json()["fix_all"]) == expected


def test_a_fix_that_would_break_the_cell_is_not_offered(server: Server) -> None:
    answer = server.analyze({"cells": CELLS}, token=server.token).json()
    (broken,) = [f for f in answer["cells"][1]["findings"] if f["code"] == "GPU903"]
    assert broken["fixes"] == []
    # alone, each of the overlapping fixes applies whole
    by_code = {f["code"]: f for f in answer["cells"][0]["findings"]}
    (fix_a,) = by_code["GPU901"]["fixes"]
    assert apply_action(CELLS, fix_a)[0] == "import torch\na = DONE_A\nb = A_WAS_HERE\n"
    (fix_b,) = by_code["GPU902"]["fixes"]
    assert apply_action(CELLS, fix_b)[0] == "import torch\na = OVERLAP_A\nb = B_WAS_HERE_X\n"
