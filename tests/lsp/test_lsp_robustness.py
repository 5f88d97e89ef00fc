"""Strange documents never take the server down: after each it still answers a request."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest
from lsp_helpers import (
    LOOP_SYNC,
    RecordingClient,
    change_document,
    code_actions,
    open_document,
    still_answers,
    wait_for_published,
)
from lsprotocol import types

_names = itertools.count()


def fresh_uri() -> str:
    return f"file:///gpulens-tests/robustness/doc{next(_names)}.py"


pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_surrogates_and_astral_characters(shared_client: RecordingClient) -> None:
    uri = fresh_uri()
    # lone surrogates are what a file read with errors="surrogateescape" holds
    text = LOOP_SYNC + 's = "\udcff\ud800 😀 \u2028 \x0c"\n# \udfff\n'
    open_document(shared_client, uri, text)
    await wait_for_published(shared_client, uri)
    change_document(shared_client, uri, 2, "\ud83d", start=(1, 3))
    await wait_for_published(shared_client, uri, lambda p: p.version == 2)
    await code_actions(shared_client, uri, (0, 0), end=(9, 0))
    await still_answers(shared_client)


async def test_deeply_nested_code(shared_client: RecordingClient) -> None:
    texts = [
        "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
        "x = " + "[" * 300 + "]" * 300 + "\n",
        "".join("    " * depth + f"for i{depth} in range(2):\n" for depth in range(150))
        + "    " * 150
        + "pass\n",
        "y = " + " + ".join(["x"] * 20000) + "\n",
    ]
    for text in texts:
        uri = fresh_uri()
        open_document(shared_client, uri, "import torch\n" + text)
        await wait_for_published(shared_client, uri, timeout=30)
        await code_actions(shared_client, uri, (0, 0), end=(3, 0))
    await still_answers(shared_client)


async def test_positions_outside_the_document(shared_client: RecordingClient) -> None:
    uri = fresh_uri()
    open_document(shared_client, uri, LOOP_SYNC)
    await wait_for_published(shared_client, uri)
    await code_actions(shared_client, uri, (400, 9), end=(2, 9999))
    hover = await shared_client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=99, character=99),
        )
    )
    assert hover is None
    change_document(shared_client, uri, 2, "x", start=(50, 3), end=(60, 0))
    await wait_for_published(shared_client, uri, lambda p: p.version == 2)
    await still_answers(shared_client)


async def test_a_5mb_file_does_not_hold_up_other_requests(shared_client: RecordingClient) -> None:
    block = LOOP_SYNC + "\n".join(f"value_{i} = torch.ones({i})" for i in range(40)) + "\n"
    big = block * (5_000_000 // len(block) + 1)
    assert len(big) >= 5_000_000
    uri = fresh_uri()
    open_document(shared_client, uri, big)
    # a small document opened after the big one is still served at once
    small = fresh_uri()
    open_document(shared_client, small, LOOP_SYNC)
    started = time.monotonic()
    await wait_for_published(shared_client, small, timeout=5)
    await still_answers(shared_client)
    assert time.monotonic() - started < 5
    published = await wait_for_published(shared_client, uri, timeout=30)
    assert list(published.diagnostics) == []
    assert any("not analysed" in m.message for m in shared_client.log_messages)
    # typing in it stays cheap too
    change_document(shared_client, uri, 2, "# edit\n", start=(0, 0))
    await asyncio.wait_for(still_answers(shared_client), 5)
