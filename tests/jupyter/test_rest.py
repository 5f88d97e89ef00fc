"""`GET /gpulens/status`, `/gpulens/doctor` and `POST /gpulens/analyze` on a real
`jupyter server`, behind its token.

The extension is enabled the way an installed wheel enables it (`running_jupyter.py`), so
these tests also prove the shipped config file works.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from offset_edits import apply_action, utf16_offset
from running_jupyter import SHIPPED_CONFIG, Server, running_server

from gpulens.analysis import analyze_cells
from gpulens.analysis.config import load_config
from gpulens.analysis.edits import apply_edits
from gpulens.analysis.model import Span
from gpulens.analysis.notebook_fixes import fix_all_cells
from gpulens.analysis.refactors import refactor

requests = pytest.importorskip("requests")
pytest.importorskip("jupyter_server")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("jupyter")) as running:
        yield running


def test_shipped_config_enables_an_extension_that_exists() -> None:
    enabled = json.loads(SHIPPED_CONFIG.read_text())["ServerApp"]["jpserver_extensions"]
    assert enabled == {"gpulens.jupyter": True}
    import gpulens.jupyter as extension

    points = extension._jupyter_server_extension_points()
    assert points == [{"module": "gpulens.jupyter"}]
    assert callable(extension._load_jupyter_server_extension)


@pytest.mark.parametrize("path", ["/gpulens/status", "/gpulens/doctor"])
def test_routes_refuse_requests_without_a_token(server: Server, path: str) -> None:
    assert server.get(path).status_code == 403
    assert server.get(path, token="not-the-token").status_code == 403


def test_status_answers_the_payload_with_the_token(server: Server) -> None:
    reply = server.get("/gpulens/status", token=server.token)
    assert reply.status_code == 200
    assert reply.headers["Content-Type"].startswith("application/json")
    payload = reply.json()
    assert payload["schema"] == "gpulens.status/2"
    assert payload["frameworks_state"] == "ready"
    if not payload["available"]:  # this machine has no driver: the reason must say so
        assert "NVIDIA driver" in payload["reason"]


def test_doctor_answers_findings_with_the_token(server: Server) -> None:
    reply = server.get("/gpulens/doctor", token=server.token, smoke="0")
    assert reply.status_code == 200
    report = reply.json()
    assert report["schema"] == "gpulens.doctor/1"
    assert report["smoke"] is None
    assert report["status"]["schema"] == "gpulens.status/2"
    codes = {finding["code"] for finding in report["findings"]}
    if not report["status"]["available"]:
        assert "no-gpu" in codes


# -- POST /gpulens/analyze ----------------------------------------------------------------------
SETUP_CELL = 'import torch\nx = torch.randn(10, device="cuda")\n'
# the emoji counts 2 in UTF-16 and 1 in Python: offsets after it are where they differ
LOOP_CELL = "total = 0.0  # 🔥 hot loop\nfor i in range(100):\n    total += (x * i).sum().item()\n"
MOVE_CELL = "import torch\nw = torch.randn(64, 64)  # weights 🧮\nlayer = torch.nn.Linear(64, 8)\n"


def test_analyze_refuses_requests_without_a_token(server: Server) -> None:
    body = {"cells": [SETUP_CELL, LOOP_CELL]}
    assert server.analyze(body).status_code == 403
    assert server.analyze(body, token="not-the-token").status_code == 403


def test_analyze_from_a_browser_needs_the_xsrf_header(server: Server) -> None:
    session = server.browser_session()
    url = f"{server.url}/gpulens/analyze"
    body = {"cells": [SETUP_CELL, LOOP_CELL]}
    refused = session.post(url, json=body, timeout=60)
    assert refused.status_code == 403
    assert "_xsrf" in refused.json()["message"]
    xsrf = {"X-XSRFToken": session.cookies["_xsrf"]}
    assert session.post(url, json=body, headers=xsrf, timeout=60).status_code == 200


def test_analyze_answers_the_findings_and_fixes_analyze_cells_gives(server: Server) -> None:
    cells = [SETUP_CELL, LOOP_CELL]
    reply = server.analyze({"cells": cells}, token=server.token)
    assert reply.status_code == 200
    assert reply.headers["Content-Type"].startswith("application/json")
    answer = reply.json()
    assert answer["schema"] == "gpulens.notebook-actions/1"
    expected = analyze_cells(cells)
    assert [len(cell["findings"]) for cell in answer["cells"]] == [
        len(analysis.findings) for analysis in expected
    ]
    (finding,) = [f for f in answer["cells"][1]["findings"] if f["code"] == "GPU001"]
    (wanted,) = [f for f in expected[1].findings if f.code == "GPU001"]
    assert finding["message"] == wanted.message
    assert wanted.message in finding["hover"]
    # the span, in UTF-16 offsets: it covers the same text
    lines = LOOP_CELL.split("\n")
    start = sum(len(line) + 1 for line in lines[: wanted.span.line]) + wanted.span.column
    end = sum(len(line) + 1 for line in lines[: wanted.span.end_line]) + wanted.span.end_column
    assert (finding["from"], finding["to"]) == (
        utf16_offset(LOOP_CELL, start),
        utf16_offset(LOOP_CELL, end),
    )
    assert [(f["title"], f["safe"]) for f in finding["fixes"]] == [
        (fix.title, fix.safe) for fix in wanted.fixes
    ]
    assert finding["fixes"][0]["label"] == f"gpulens: {wanted.fixes[0].title}"
    for sent, fix in zip(finding["fixes"], wanted.fixes, strict=True):
        assert apply_action(cells, sent) == [SETUP_CELL, apply_edits(LOOP_CELL, fix.edits)]
    # "Fix all in notebook" is offered, and computed when asked for
    assert answer["fix_all"] == {"label": "gpulens: Fix all in notebook", "cells": None}
    fixed = server.analyze({"cells": cells, "fix_all": True}, token=server.token).json()
    after = apply_action(cells, fixed["fix_all"])
    assert after == fix_all_cells(cells)
    assert after[1] != LOOP_CELL
    assert "GPU001" not in {f.code for a in analyze_cells(after) for f in a.findings}


def test_analyze_answers_a_refactor_with_the_edits_of_the_refactor(server: Server) -> None:
    cells = [LOOP_CELL, MOVE_CELL]
    selection = {"cell": 1, "from": 0, "to": utf16_offset(MOVE_CELL, len(MOVE_CELL))}
    body = {"cells": cells, "selection": selection, "refactor": "move_to_device"}
    body["device"] = "cuda:1"
    answer = server.analyze(body, token=server.token).json()
    moved = answer["refactor"]
    fix = refactor("move_to_device", MOVE_CELL, Span(0, 0, 3, 0), "cuda:1")
    assert fix is not None
    assert moved["title"] == fix.title == "Move to device (cuda:1)"
    assert moved["message"] is None
    assert apply_action(cells, moved) == [LOOP_CELL, apply_edits(MOVE_CELL, fix.edits)]
    assert '"cuda:1"' in apply_action(cells, moved)[1]
    labels = [entry["label"] for entry in answer["refactors"]]
    assert labels == [
        "gpulens: Move to device…",
        "gpulens: Insert synchronize-aware timer",
        "gpulens: Port NumPy to CuPy",
    ]
    # nothing to port: no edit, and a sentence that says so
    body = {**body, "refactor": "port_numpy_to_cupy"}
    nothing = server.analyze(body, token=server.token).json()["refactor"]
    assert nothing["cells"] == []
    assert "nothing in the selection" in nothing["message"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (json.dumps({"cells": "x = 1"}).encode(), '"cells"'),
        (json.dumps({"cells": ["x = 1"], "device": "gpu0"}).encode(), "not a device"),
        (json.dumps({"cells": ["x = 1"], "refactor": "rm_rf"}).encode(), '"refactor"'),
        (
            json.dumps({"cells": ["x"], "selection": {"cell": 3, "from": 0, "to": 0}}).encode(),
            '"selection"',
        ),
        (json.dumps({"cells": ["x"], "path": "../../etc/passwd"}).encode(), "not inside"),
    ],
)
def test_analyze_refuses_a_bad_body_in_one_line(server: Server, body: bytes, reason: str) -> None:
    reply = server.analyze(body, token=server.token)
    assert reply.status_code == 400
    message = reply.json()["message"]
    assert reason in message and "\n" not in message


def test_analyze_refuses_a_huge_body_with_413(server: Server) -> None:
    huge = json.dumps({"cells": ["x = 1\n" * 1_500_000]}).encode()
    assert len(huge) > 8_000_000
    reply = server.analyze(huge, token=server.token)
    assert reply.status_code == 413
    assert "too large" in reply.json()["message"]
    # and the server goes on answering
    assert server.analyze({"cells": ["x = 1"]}, token=server.token).status_code == 200


def test_analyze_reads_tool_gpulens_inside_the_root_only(server: Server) -> None:
    project = server.root / "project"
    (project / "notebooks").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.gpulens]\ndevice = "cuda:2"\n')
    # above the served folder: never read, even for a notebook at the root
    (server.root.parent / "pyproject.toml").write_text('[tool.gpulens]\nignore = ["GPU001"]\n')
    cells = [SETUP_CELL, LOOP_CELL]

    def answer(path: str) -> dict[str, Any]:
        reply = server.analyze({"cells": cells, "path": path}, token=server.token)
        assert reply.status_code == 200, reply.text
        return reply.json()

    inside = answer("project/notebooks/train.ipynb")
    assert inside["device"] == "cuda:2"
    assert inside["device"] == load_config(project / "notebooks", within=server.root).device
    at_root = answer("train.ipynb")
    assert at_root["device"] == "cuda"
    assert "GPU001" in {f["code"] for f in at_root["cells"][1]["findings"]}
    # a broken table is reported in a line and the defaults apply
    (project / "pyproject.toml").write_text("[tool.gpulens]\nselect = 3\n")
    broken = server.analyze(
        {"cells": cells, "path": "project/other.ipynb"}, token=server.token
    ).json()
    assert broken["problem"] and "defaults apply" in broken["problem"]
    assert broken["device"] == "cuda"
