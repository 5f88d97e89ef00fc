"""Typing into a document that carries a profile, through a real client: the merge of the
profile into each version's diagnostics reads the parse the analysis of that version made,
and probes again only the lines of what the edit changed (`profiler.probe_memo`).

The profile is a real capture (`tests/fixtures/profiler/item_sync_cupti`): a loop whose `x`
comes from elsewhere, so its sync is one only the profile shows, with the analysis's fix
found by probing the line as if `x` were on the GPU. What the probes cost is read from the
server (`gpulens/_debug/probeCounts`): whole texts parsed, lines analysed again.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import (
    RecordingClient,
    change_document,
    initialize_params,
    make_profiling_client,
    open_document,
    server_config,
    uri_in,
    wait_for_published,
)
from lsprotocol import types

from gpulens.lsp.debug import ENV, PROBE_COUNTS
from gpulens.profiler.recorded import replay

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "profiler"
MEASURED = "gpulens (measured)"

FUNCTIONS = """\
import torch

device = torch.device("cuda")


def train(model, loader):
    total = 0.0
    for inputs in loader:
        total += model(inputs).sum()
    return total


def evaluate(model, data):
    scores = model(data)
    return scores.max()


# %%
"""


def debug_config() -> pytest_lsp.ClientServerConfig:
    config = server_config(**{ENV: "1"})
    config.client_factory = make_profiling_client
    return config


@pytest_lsp.fixture(config=debug_config(), scope="module")
async def client(lsp_client: RecordingClient, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("measured_typing")
    lsp_client.set_configuration({}, section="gpulens")
    lsp_client.initialize_result = await lsp_client.initialize_session(initialize_params(root))
    yield
    await lsp_client.shutdown_session()


def recorded_sync() -> tuple[str, dict[str, Any]]:
    with gzip.open(FIXTURES / "item_sync_cupti.json.gz", "rt", encoding="utf-8") as handle:
        captured = json.load(handle)
    return captured["source"], json.loads(json.dumps(replay(captured, "item_sync_cupti")))


async def probe_counts(client: RecordingClient) -> dict[str, int]:
    found = await client.protocol.send_request_async(PROBE_COUNTS, {})
    return {"texts_parsed": 0, "lines_analysed": 0, **found._asdict()}


def measured_sync(params: types.PublishDiagnosticsParams) -> types.Diagnostic | None:
    return next((d for d in params.diagnostics if d.source == MEASURED), None)


async def typed(
    client: RecordingClient, uri: str, version: int, text: str, at: tuple[int, int]
) -> types.Diagnostic:
    """Types ``text`` at ``at`` as version ``version``: the measured sync published for it."""
    count = len(client.published[uri])
    change_document(client, uri, version, text, start=at)
    published = await wait_for_published(
        client, uri, lambda p: p.version == version, after=count, timeout=30
    )
    found = measured_sync(published)
    assert found is not None
    return found


async def test_a_keystroke_in_a_profiled_document_reads_the_analysis_and_probes_only_its_edit(
    client: RecordingClient, tmp_path: Path
) -> None:
    source, payload = recorded_sync()
    text = FUNCTIONS + source
    lines = text.splitlines()
    uri = uri_in(tmp_path, "typed.py")
    open_document(client, uri, text)
    await wait_for_published(client, uri)
    count = len(client.published[uri])
    await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="gpulens.showProfile", arguments=[{"uri": uri, "payload": payload}]
            )
        ),
        10,
    )
    shown = await wait_for_published(client, uri, lambda p: bool(measured_sync(p)), after=count)
    sync = measured_sync(shown)
    assert sync is not None and sync.code == "GPU001"
    line = lines.index("    total += (x * step).sum().item()  # item")
    # the probe's span: the sync itself, where its fix applies (the whole line without one)
    assert sync.range.start.line == line
    assert lines[line][sync.range.start.character : sync.range.end.character] == (
        "(x * step).sum().item()"
    )
    before = await probe_counts(client)

    # a keystroke into another function: nothing parsed again, no line probed again
    scores = lines.index("    scores = model(data)")
    again = await typed(client, uri, 2, "2", (scores, len("    scores")))
    assert again == sync
    after_keystroke = await probe_counts(client)
    assert after_keystroke == before

    # a line added to the profiled cell, above the sync: only that cell's line is probed again
    moved = await typed(client, uri, 3, "    step = step + 0\n", (line, 0))
    assert moved.range.start.line == line + 1 and moved.message == sync.message
    after_edit = await probe_counts(client)
    assert after_edit["texts_parsed"] == before["texts_parsed"]
    assert after_edit["lines_analysed"] == before["lines_analysed"] + 1
