"""`gpulens.notebook-actions/1`: what JupyterLab is answered equals what the language server
offers a notebook client (a real `gpulens serve` through pytest-lsp), edit for edit; and its
offsets are UTF-16, as the lab counts them."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from offset_edits import apply_action, apply_offset_edits, utf16_offset

from gpulens.analysis import analyze_cells
from gpulens.jupyter.handlers import NotebookAnalyzers, ProjectConfigs, answer_request
from gpulens.jupyter.notebook_actions import (
    CellText,
    RequestError,
    parse_request,
    replacement_edits,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lsp"))
from lsp_helpers import (
    RecordingClient,
    apply_text_edits,
    code_actions,
    codes,
    edits_for,
    initialize_params,
    server_config,
    text_in,
    wait_for_published,
)
from test_lsp_notebooks import Notebook

SETUP_CELL = 'import torch\nx = torch.randn(10, device="cuda")  # 🚀 on the GPU\n'
LOOP_CELL = "total = 0.0  # 🔥\nfor i in range(100):\n    total += (x * i).sum().item()\n"
MOVE_CELL = "import torch\nw = torch.randn(64, 64)  # 🧮\nlayer = torch.nn.Linear(64, 8)\n"
TIMED_CELL = (
    "import torch\nx = torch.randn(256, 256, device='cuda')\n"
    "for _ in range(10):\n    y = x @ x  # ⏱\n"
)


@pytest_lsp.fixture(config=server_config(), scope="module")
async def lsp(lsp_client: RecordingClient, tmp_path_factory: pytest.TempPathFactory):
    lsp_client.set_configuration({}, section="gpulens")
    root = tmp_path_factory.mktemp("lab-parity")
    lsp_client.initialize_result = await lsp_client.initialize_session(initialize_params(root))
    yield
    await lsp_client.shutdown_session()


def lab_answer(cells: list[str], **fields: Any) -> dict[str, Any]:
    return answer_request(json.dumps({"cells": cells, **fields}).encode(), ProjectConfigs(None))


@pytest.mark.asyncio(loop_scope="module")
async def test_a_quick_fix_is_the_language_servers_quick_fix(lsp: RecordingClient) -> None:
    cells = [SETUP_CELL, LOOP_CELL]
    notebook = Notebook(lsp, [("code", text) for text in cells])
    notebook.open()
    uri = notebook.cell_uri(1)
    published = await wait_for_published(lsp, uri, lambda p: "GPU001" in codes(p))
    (diagnostic,) = [d for d in published.diagnostics if d.code == "GPU001"]
    start = (diagnostic.range.start.line, diagnostic.range.start.character)
    offered = [
        action
        for action in await code_actions(lsp, uri, start, only=["quickfix"])
        if action.edit is not None and not action.title.startswith("Suppress")
    ]
    (finding,) = [f for f in lab_answer(cells)["cells"][1]["findings"] if f["code"] == "GPU001"]
    assert [fix["title"] for fix in finding["fixes"]] == [action.title for action in offered]
    for fix, action in zip(finding["fixes"], offered, strict=True):
        assert action.edit is not None
        by_lsp = [SETUP_CELL, apply_text_edits(LOOP_CELL, edits_for(action.edit, uri))]
        assert apply_action(cells, fix) == by_lsp
        assert fix["preferred"] == bool(action.is_preferred)
    # the lab marks the text the diagnostic's range covers
    units = LOOP_CELL.encode("utf-16-le")
    marked = units[2 * finding["from"] : 2 * finding["to"]].decode("utf-16-le")
    assert marked == text_in(LOOP_CELL, diagnostic.range)
    notebook.close()


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(
    ("cell", "kind", "title"),
    [
        (MOVE_CELL, "move_to_device", "Move to device (cuda)"),
        (TIMED_CELL, "insert_sync_timer", "Insert synchronize-aware timer"),
    ],
)
async def test_a_refactor_is_the_language_servers_refactor(
    lsp: RecordingClient, cell: str, kind: str, title: str
) -> None:
    cells = [LOOP_CELL, cell]
    notebook = Notebook(lsp, [("code", text) for text in cells])
    notebook.open()
    uri = notebook.cell_uri(1)
    await wait_for_published(lsp, uri)
    last = cell.rstrip("\n").split("\n")
    # the whole cell selected; LSP counts the last line's characters in UTF-16
    end = (len(last) - 1, len(last[-1].encode("utf-16-le")) // 2)
    actions = await code_actions(lsp, uri, (1, 0), end=end, only=["refactor"])
    (action,) = [a for a in actions if a.title == title]
    assert action.edit is not None
    by_lsp = apply_text_edits(cell, edits_for(action.edit, uri))
    line_ends = utf16_offset(cell, len(cell.rstrip("\n")))
    selection = {"cell": 1, "from": utf16_offset(cell, cell.index("\n") + 1), "to": line_ends}
    answer = lab_answer(cells, selection=selection, refactor=kind)["refactor"]
    assert answer["title"] == title
    assert apply_action(cells, answer) == [LOOP_CELL, by_lsp]
    notebook.close()


# -- the wire's positions ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    ["", "x = 1", "a = '🧮'\nb = 2\n", "🚀🚀\n\n🔥x\n", "tab\there\r\nnext 𝔘 line\n"],
)
def test_offsets_and_positions_agree_with_utf16(text: str) -> None:
    cell = CellText(text)
    lines = text.splitlines(keepends=True) or [""]
    if text.endswith("\n"):
        lines.append("")  # the empty line after the last line break
    for number, line in enumerate(lines):
        for column in range(len(line.rstrip("\r\n")) + 1):
            index = sum(len(earlier) for earlier in lines[:number]) + column
            offset = cell.offset(number, column)
            assert offset == utf16_offset(text, index)
            assert cell.position(offset) == (number, column)


def test_an_offset_inside_a_surrogate_pair_means_the_character_it_splits() -> None:
    cell = CellText("a🚀b\n🔥")
    assert [cell.position(offset) for offset in range(8)] == [
        (0, 0),
        (0, 1),
        (0, 1),  # between the two halves of 🚀
        (0, 2),
        (0, 3),
        (1, 0),
        (1, 0),  # inside 🔥
        (1, 1),
    ]
    assert cell.position(99) == (1, 1)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb\nc\n", "x\na\nb\nc\ny\n"),
        ("🧮 = 1\nb\n", "🧮 = 1\nb\nc"),
        ("only", ""),
        ("", "new\n"),
        ("a\nb\nc\nd\n", "a\nc\nd\nd\n"),
    ],
)
def test_replacement_edits_turn_the_text_into_the_result(before: str, after: str) -> None:
    edits = replacement_edits(before, after)
    assert apply_offset_edits(before, edits) == after
    starts = [edit["from"] for edit in edits]
    assert starts == sorted(starts)
    assert all(a["to"] <= b["from"] for a, b in itertools.pairwise(edits))


def test_a_finding_in_a_later_cell_sees_names_from_earlier_ones() -> None:
    answer = lab_answer([SETUP_CELL, LOOP_CELL])
    assert [len(cell["findings"]) for cell in answer["cells"]] == [
        len(analysis.findings) for analysis in analyze_cells([SETUP_CELL, LOOP_CELL])
    ]
    alone = lab_answer([LOOP_CELL])
    assert "GPU001" not in {f["code"] for f in alone["cells"][0]["findings"]}


@pytest.mark.parametrize(
    "body",
    [
        {"cells": ["x"], "selection": {"cell": 0, "from": 2, "to": 1}},
        {"cells": ["x"], "selection": {"cell": 0, "from": 0, "to": 9}},
        {"cells": ["x"], "selection": {"cell": 0, "from": True, "to": 1}},
        {"cells": ["x"], "refactor": "move_to_device"},
        {"cells": ["x"], "path": 3},
        {"cells": ["x" * 2_000_001]},
    ],
)
def test_a_malformed_request_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(RequestError):
        parse_request(json.dumps(body).encode())


def test_a_request_names_no_folder_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "inner").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "escape").symlink_to(tmp_path / "outside")
    configs = ProjectConfigs(str(root))
    assert configs.folder_of("inner/nb.ipynb") == str((root / "inner").resolve())
    assert configs.folder_of("/nb.ipynb") == str(root.resolve())
    for path in ("../nb.ipynb", "inner/../../nb.ipynb", "escape/nb.ipynb", "a\0b/nb.ipynb"):
        with pytest.raises(RequestError):
            configs.folder_of(path)


def test_an_answer_reusing_earlier_analyses_is_the_fresh_answer() -> None:
    """The route keeps each notebook's analyzer between requests: what it answers must not
    depend on what it was asked before."""
    analyzers = NotebookAnalyzers(size=1)
    versions = [
        [SETUP_CELL, LOOP_CELL],
        [SETUP_CELL.replace('device="cuda"', ""), LOOP_CELL],  # x now on the host: no GPU001
        [SETUP_CELL, LOOP_CELL + "y = x.sum().item()\n"],
        [MOVE_CELL, TIMED_CELL],
    ]
    for path in ("a.ipynb", "b.ipynb", "a.ipynb"):
        for cells in versions:
            body = json.dumps({"cells": cells, "path": path, "fix_all": True}).encode()
            kept = answer_request(body, ProjectConfigs(None), analyzers)
            assert kept == answer_request(body, ProjectConfigs(None))
