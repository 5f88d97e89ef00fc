"""Random incremental edits on example texts: the server survives every one, keeps answering,
and its copy of the text stays the client's."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_helpers import (
    CLEAN,
    LOOP_SYNC,
    RecordingClient,
    code_actions,
    open_document,
    position_of,
    send_change,
    snap,
    still_answers,
    wait_for_published,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

_names = itertools.count()

EXAMPLES = [
    LOOP_SYNC,
    CLEAN,
    "import torch\r\nfor batch in loader:\r\n    print(batch.cuda().mean().item())\r\n",
    '# %%\nimport torch\ns = "😀é"\nx = torch.ones(3, device="cuda")\nwhile True:\n    x.cpu()\n',
    "",
]

PIECES = [
    *"()[]{}:.,=+-*#'\"\\ \t\n\r",
    "\r\n",
    "😀",
    "é",
    "\ud800",
    ".item()",
    ".cuda()",
    "for i in range(3):\n    ",
    "import torch\n",
    "x",
    "def f(",
    '"""',
]

edit = st.tuples(
    st.integers(min_value=0, max_value=10_000),  # where (wrapped to the text's length)
    st.integers(min_value=0, max_value=40),  # how much to replace
    st.lists(st.sampled_from(PIECES), max_size=6).map("".join),  # by what
)


@settings(
    max_examples=20,
    deadline=None,
    # one server for every example is the point: it must survive them all in a row
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(example=st.sampled_from(EXAMPLES), edits=st.lists(edit, min_size=1, max_size=6))
async def test_random_edits(
    shared_client: RecordingClient, example: str, edits: list[tuple[int, int, str]]
) -> None:
    client = shared_client
    uri = f"file:///gpulens-tests/fuzz/doc{next(_names)}.py"
    open_document(client, uri, example)
    text = example
    version = 1
    for where, length, new_text in edits:
        start = snap(text, where % (len(text) + 1))
        end = snap(text, min(len(text), start + length))
        version += 1
        send_change(client, uri, version, old=text, span=(start, end), new=new_text)
        text = text[:start] + new_text + text[end:]
    await wait_for_published(client, uri, lambda p: p.version == version)
    last = position_of(text, len(text))
    await code_actions(client, uri, (0, 0), end=(last.line, last.character))
    await still_answers(client)
    # replace everything the client holds by LOOP_SYNC with no final newline: if the
    # server's copy had drifted, leftovers would glue onto the `.item()` line and break it
    version += 1
    send_change(client, uri, version, old=text, span=(0, len(text)), new=LOOP_SYNC.rstrip("\n"))
    final = await wait_for_published(client, uri, lambda p: p.version == version)
    reference = f"file:///gpulens-tests/fuzz/reference{next(_names)}.py"
    open_document(client, reference, LOOP_SYNC.rstrip("\n"))
    expected = await wait_for_published(client, reference)
    assert final.diagnostics == expected.diagnostics
