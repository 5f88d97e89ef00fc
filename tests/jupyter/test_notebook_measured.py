"""A cell's last profile, sent with the notebook to `POST /gpulens/analyze`, merged into its
findings as the language server merges one: through a real jupyter server, with a profile of the
example notebook's training cell recorded on an H200 (`%%gpulens` in a real kernel)."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from running_jupyter import Server, running_server

from gpulens.profiler.recorded import replay

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "profiler"
NOTEBOOK = REPO / "examples" / "pitfalls.ipynb"
SYNC = "    losses.append(loss.item())"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("jupyter")) as running:
        yield running


def code_cells() -> list[str]:
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def training_profile() -> dict[str, Any]:
    """The notebook's training loop under `%%gpulens` on an H200 (its source is in `code`)."""
    return json.loads((FIXTURES / "pitfalls_cell3_h200.profile.json").read_text())


def analyzed(server: Server, cells: list[str], profiles: list[Any] | None) -> list[list[dict]]:
    body: dict[str, Any] = {"cells": cells}
    if profiles is not None:
        body["profiles"] = profiles
    reply = server.analyze(body, token=server.token)
    assert reply.status_code == 200, reply.text
    return [cell["findings"] for cell in reply.json()["cells"]]


def test_a_profiled_cell_s_finding_carries_the_cost_its_line_measured(server: Server) -> None:
    cells = code_cells()
    loop = next(i for i, text in enumerate(cells) if SYNC in text)
    (static,) = analyzed(server, cells, None)[loop]
    assert static["code"] == "GPU001" and static["origin"] == "analysis"

    profiles: list[Any] = [None] * len(cells)
    profiles[loop] = training_profile()
    (merged,) = analyzed(server, cells, profiles)[loop]
    assert merged["severity"] == "warning" and merged["origin"] == "analysis"
    assert (merged["from"], merged["to"], merged["fixes"]) == (
        static["from"],
        static["to"],
        static["fixes"],
    )
    assert merged["message"] == (
        static["message"] + " Measured in the last profile: 200 syncs, 1.5 ms stalled; the line"
        " ran 200 times and took 8.8 ms, 1.5 % of the cell's 595 ms."
    )
    assert merged["hover"] == f"GPU001: {merged['message']}"


def test_editing_the_measured_line_drops_its_figures_and_other_edits_keep_them(
    server: Server,
) -> None:
    cells = code_cells()
    loop = next(i for i, text in enumerate(cells) if SYNC in text)
    profiles: list[Any] = [None] * len(cells)
    profiles[loop] = training_profile()

    edited = list(cells)
    edited[loop] = cells[loop].replace(SYNC, SYNC + "  # edited")
    (finding,) = analyzed(server, edited, profiles)[loop]
    assert "Measured" not in finding["message"]

    # a line added above, and the `%%gpulens` line typed into the cell: the figures follow
    moved = list(cells)
    moved[loop] = "%%gpulens\n# one more line\n" + cells[loop]
    (finding,) = analyzed(server, moved, profiles)[loop]
    assert "Measured in the last profile: 200 syncs, 1.5 ms stalled" in finding["message"]


def test_a_sync_the_analysis_missed_is_a_finding_of_the_profile_with_the_fix(
    server: Server,
) -> None:
    with gzip.open(FIXTURES / "item_sync_cupti.json.gz", "rt", encoding="utf-8") as handle:
        captured = json.load(handle)
    profile = replay(captured, "item_sync_cupti")
    # `x` comes from a cell the analysis cannot read it from; torch from the first cell
    cells = ["import torch\nx = load_tensor()\n", captured["source"]]
    assert analyzed(server, cells, None)[1] == []
    (found,) = analyzed(server, cells, [None, json.loads(json.dumps(profile))])[1]
    assert found["code"] == "GPU001" and found["origin"] == "profile"
    assert found["severity"] == "warning"
    assert found["hover"].startswith(
        "GPU001 (measured): Measured in the last profile: the host waited for the GPU 50 times"
    )
    (fix,) = found["fixes"]
    assert fix["title"] == "Accumulate `total` on the device, read it once after the loop"
    assert fix["cells"][0]["cell"] == 1


def test_a_host_profile_confirms_nothing(server: Server) -> None:
    cells = code_cells()
    loop = next(i for i, text in enumerate(cells) if SYNC in text)
    host = copy.deepcopy(training_profile())
    host["backend"] = "host"
    profiles: list[Any] = [None] * len(cells)
    profiles[loop] = host
    assert analyzed(server, cells, profiles) == analyzed(server, cells, None)


@pytest.mark.parametrize(
    "profiles",
    [{"cell": 0}, [{"schema": "gpulens.status/2"}], [None, None, None, None, None, None]],
    ids=["not-a-list", "not-a-profile", "more-than-cells"],
)
def test_a_bad_profiles_field_is_refused_in_one_line(server: Server, profiles: Any) -> None:
    reply = server.analyze({"cells": ["x = 1\n"], "profiles": profiles}, token=server.token)
    assert reply.status_code == 400
    assert "profiles" in reply.json()["message"] and "\n" not in reply.json()["message"]
