"""Lines are where LSP says they are: `\\n`, `\\r\\n` and `\\r`, nothing else.

Python's `str.splitlines` also breaks at form feeds (which PEP 8 allows in code), `\\v`,
`\\x1c`-`\\x1e`, `\\x85`, U+2028 and U+2029. A server that splits so applies the editor's
incremental changes to other lines than the editor meant: its copy of the document drifts,
and "Fix all" writes garbage into the user's file.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_helpers import (
    RecordingClient,
    apply_text_edits,
    code_actions,
    edits_for,
    initialize_params,
    open_document,
    position_of,
    send_change,
    server_config,
    snap,
    wait_for_published,
)

from gpulens.lsp.debug import DOCUMENT_TEXT, ENV

pytestmark = pytest.mark.asyncio(loop_scope="module")

# every character `str.splitlines` breaks at, and LSP's three line breaks
LINE_BREAK_LIKE = ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
LSP_BREAKS = ["\r", "\r\n", "\n"]
PIECES = [*LINE_BREAK_LIKE, *LSP_BREAKS, "x", "é", "😀", " ", "import torch", ".item()", "#"]

_names = itertools.count()


@pytest_lsp.fixture(config=server_config(**{ENV: "1"}), scope="module")
async def debug_client(lsp_client: RecordingClient, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("line_breaks")
    lsp_client.set_configuration({}, section="gpulens")
    lsp_client.initialize_result = await lsp_client.initialize_session(initialize_params(root))
    yield
    await lsp_client.shutdown_session()


async def server_text(client: RecordingClient, uri: str) -> str:
    return await client.protocol.send_request_async(DOCUMENT_TEXT, {"uri": uri})


texts = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)
edits = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=10_000),  # where (wrapped to the text's length)
        st.integers(min_value=0, max_value=12),  # how much to replace
        st.lists(st.sampled_from(PIECES), max_size=5).map("".join),  # by what
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=200,
    deadline=None,
    # one server for every example: its copy must stay right across them all
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(start=texts, changes=edits)
async def test_the_servers_text_is_the_clients_after_every_edit(
    debug_client: RecordingClient, start: str, changes: list[tuple[int, int, str]]
) -> None:
    client = debug_client
    uri = f"file:///gpulens-tests/line-breaks/doc{next(_names)}.py"
    open_document(client, uri, start)
    text = start
    for version, (where, length, new_text) in enumerate(changes, start=2):
        begin = snap(text, where % (len(text) + 1))
        end = snap(text, min(len(text), begin + length))
        send_change(client, uri, version, old=text, span=(begin, end), new=new_text)
        text = text[:begin] + new_text + text[end:]
        assert await server_text(client, uri) == text, f"after edit {version - 1}"


PROGRAM = [
    "import time",
    "",
    "import torch",
    "from torch.utils.data import DataLoader, TensorDataset",
    "",
    'device = torch.device("cuda")',
    'label = "a\u2028b\x85c\u2029d\vf"',
    "images = torch.randn(4096, 784)",
    "loader = DataLoader(TensorDataset(images), batch_size=256)",
    "model = torch.nn.Linear(784, 10).to(device)",
    "",
    "start = time.perf_counter()",
    "total = 0.0",
    "for (x,) in loader:",
    "    x = x.to(device)",
    "    total += model(x).sum().item()",
    "noise = torch.randn(256, 784).to(device)",
    'print(f"{time.perf_counter() - start:.2f} s", total, noise)',
]


def program_with_odd_breaks() -> str:
    """The program with a form feed for each blank line (as PEP 8 allows) and a character
    `str.splitlines` breaks at in a comment on every other line."""
    lines = [
        "\f" if not line else f"{line}  # {LINE_BREAK_LIKE[n % len(LINE_BREAK_LIKE)]} note"
        for n, line in enumerate(PROGRAM)
    ]
    return "\n".join(lines) + "\n"


def fixed_by_the_cli(text: str, folder: Path) -> str:
    path = folder / "typed.py"
    path.write_bytes(text.encode("utf-8"))
    subprocess.run(
        [sys.executable, "-m", "gpulens", "check", "--fix", str(path)],
        check=False,
        capture_output=True,
        timeout=60,
    )
    return path.read_bytes().decode("utf-8")


async def test_fix_all_gives_what_check_fix_gives(
    debug_client: RecordingClient, tmp_path: Path
) -> None:
    client = debug_client
    text = program_with_odd_breaks()
    expected = fixed_by_the_cli(text, tmp_path)
    assert expected != text, "the program has nothing to fix: the test would prove nothing"

    # typed in as an editor sends it: each line appended at the end of what is there
    uri = f"file:///gpulens-tests/line-breaks/typed{next(_names)}.py"
    open_document(client, uri, "")
    typed = ""
    for version, piece in enumerate(text.splitlines(keepends=True), start=2):
        send_change(client, uri, version, old=typed, span=(len(typed), len(typed)), new=piece)
        typed += piece
    assert typed == text
    await wait_for_published(client, uri, lambda p: p.version == version)

    last = position_of(text, len(text))
    actions = await code_actions(
        client, uri, (0, 0), end=(last.line, last.character), only=["source.fixAll.gpulens"]
    )
    assert len(actions) == 1 and actions[0].edit is not None
    assert apply_text_edits(text, edits_for(actions[0].edit, uri)) == expected
