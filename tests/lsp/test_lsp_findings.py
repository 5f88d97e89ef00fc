"""Diagnostics, quick-fixes, fix-all, suppression and hover on real findings (GPU001).

One server for the module: every test opens documents of its own and changes no setting.
"""

from __future__ import annotations

import itertools

import pytest
from lsp_helpers import (
    CLEAN,
    LOOP_SYNC,
    LOOP_SYNC_CALL,
    LOOP_SYNC_LINE,
    RecordingClient,
    apply_text_edits,
    change_document,
    code_actions,
    codes,
    edits_for,
    open_document,
    text_in,
    wait_for_published,
)
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

_names = itertools.count()

TWO_LOOPS = """\
import torch
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
biggest = 0.0
for j in range(10):
    biggest += x.max().item()
"""


def fresh_uri(client: RecordingClient) -> str:
    """A URI no other test of this server has used."""
    return f"file:///gpulens-tests/findings/doc{next(_names)}.py"


async def diagnostics_of(client: RecordingClient, text: str) -> list[types.Diagnostic]:
    """Open ``text`` as a new document and return the server's first diagnostics for it."""
    uri = fresh_uri(client)
    open_document(client, uri, text)
    return list((await wait_for_published(client, uri)).diagnostics)


def gpu001(diagnostics: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.code == "GPU001"]


async def test_sync_in_a_loop_is_reported_on_the_call(shared_client: RecordingClient) -> None:
    found = gpu001(await diagnostics_of(shared_client, LOOP_SYNC))
    assert len(found) == 1, found
    diagnostic = found[0]
    assert diagnostic.source == "gpulens"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.range.start.line == diagnostic.range.end.line == LOOP_SYNC_LINE
    assert "item()" in text_in(LOOP_SYNC, diagnostic.range)
    assert text_in(LOOP_SYNC, diagnostic.range) in LOOP_SYNC_CALL


async def test_the_clean_program_has_no_finding(shared_client: RecordingClient) -> None:
    assert gpu001(await diagnostics_of(shared_client, CLEAN)) == []


async def test_columns_are_utf16_code_units(shared_client: RecordingClient) -> None:
    # each emoji is one code point but two UTF-16 units: a server counting code points
    # would put the range two units short per emoji
    text = LOOP_SYNC.replace("    total +=", '    total += len("😀😀") +')
    (diagnostic,) = gpu001(await diagnostics_of(shared_client, text))
    line = text.splitlines()[LOOP_SYNC_LINE]
    prefix = line[: line.index(LOOP_SYNC_CALL)]
    assert diagnostic.range.start.character >= len(prefix.encode("utf-16-le")) // 2
    assert "item()" in text_in(text, diagnostic.range)


# findings after non-ASCII text on their lines (UTF-16 columns differ from code points),
# fixable and not, warnings and infos
MIXED = """\
import time

import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
x = torch.randn(8, device="cuda")  # é 😀
loader = DataLoader(list(range(64)), batch_size=8)
total = 0.0
for step, batch in enumerate(loader):  # é 😀 é
    batch = batch.to(device)
    total += len("😀😀") + x.sum().item()
    t0 = time.perf_counter()
    label = "é😀"; y = torch.zeros(256, 3).cuda()
print(f"took {time.perf_counter() - t0:.3f} s")
"""


def analysed(text: str) -> list[types.Diagnostic]:
    """The diagnostics of a fresh analysis of ``text``, converted by lsprotocol's types."""
    from pygls.workspace.position_codec import PositionCodec

    from gpulens.analysis import analyze
    from gpulens.lsp.convert import LineIndex, finding_to_diagnostic

    index = LineIndex(text, PositionCodec(types.PositionEncodingKind.Utf16))
    return [finding_to_diagnostic(f, index) for f in analyze(text).findings]


async def test_published_diagnostics_are_a_fresh_analysis(
    shared_client: RecordingClient,
) -> None:
    """What the client receives, first and after an edit that moves every finding, is what
    lsprotocol makes of a fresh analysis of the text: the server writes each diagnostic's
    JSON itself and reuses it while its finding is unchanged."""
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, MIXED)
    first = await wait_for_published(client, uri, lambda p: p.version == 1)
    expected = analysed(MIXED)
    assert {d.code for d in expected} >= {"GPU001", "GPU003", "GPU005", "GPU007"}
    assert {d.data["fixable"] for d in expected} == {True, False}
    assert list(first.diagnostics) == expected
    # a line above everything: each finding moves down one line
    change_document(client, uri, 2, "# é😀\n", start=(0, 0))
    moved = await wait_for_published(client, uri, lambda p: p.version == 2)
    assert list(moved.diagnostics) == analysed("# é😀\n" + MIXED)


async def test_changes_update_the_diagnostics(shared_client: RecordingClient) -> None:
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, CLEAN)
    await wait_for_published(client, uri, lambda p: p.version == 1)
    # turn CLEAN's accumulation into a per-iteration sync: `.sum()` -> `.sum().item()`
    line = CLEAN.splitlines()[4]
    column = line.index(".sum()") + len(".sum()")
    change_document(client, uri, 2, ".item()", start=(4, column))
    appeared = await wait_for_published(client, uri, lambda p: p.version == 2)
    assert "GPU001" in codes(appeared)
    change_document(client, uri, 3, "", start=(4, column), end=(4, column + len(".item()")))
    gone = await wait_for_published(client, uri, lambda p: p.version == 3)
    assert "GPU001" not in codes(gone)


async def test_typing_the_program_through_syntax_errors(shared_client: RecordingClient) -> None:
    """Keystroke by keystroke, half-typed lines included; the last text gets its finding."""
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, "")
    line, column, version = 0, 0, 1
    for char in LOOP_SYNC:
        version += 1
        change_document(client, uri, version, char, start=(line, column))
        line, column = (line + 1, 0) if char == "\n" else (line, column + 1)
    final = await wait_for_published(client, uri, lambda p: p.version == version)
    (diagnostic,) = [d for d in final.diagnostics if d.code == "GPU001"]
    # the server's copy of the text matches the client's: the finding is where it should be
    assert "item()" in text_in(LOOP_SYNC, diagnostic.range)


async def test_quick_fix_is_bound_to_its_diagnostic(shared_client: RecordingClient) -> None:
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, LOOP_SYNC)
    published = await wait_for_published(client, uri)
    (diagnostic,) = gpu001(list(published.diagnostics))
    start = (diagnostic.range.start.line, diagnostic.range.start.character)
    actions = await code_actions(client, uri, start, diagnostics=[diagnostic])
    fixes = [
        a
        for a in actions
        if a.kind == types.CodeActionKind.QuickFix and not a.title.startswith("Suppress")
    ]
    assert fixes, [a.title for a in actions]
    assert all(a.diagnostics and a.diagnostics[0].code == "GPU001" for a in fixes)
    assert sum(1 for a in fixes if a.is_preferred) == 1
    preferred = next(a for a in fixes if a.is_preferred)
    assert preferred.edit is not None
    fixed = apply_text_edits(LOOP_SYNC, edits_for(preferred.edit, uri))
    assert fixed != LOOP_SYNC
    compile(fixed, "fixed.py", "exec")
    assert gpu001(await diagnostics_of(client, fixed)) == []


async def test_suppress_on_this_line(shared_client: RecordingClient) -> None:
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, LOOP_SYNC)
    (diagnostic,) = gpu001(list((await wait_for_published(client, uri)).diagnostics))
    start = (diagnostic.range.start.line, diagnostic.range.start.character)
    actions = await code_actions(client, uri, start, only=["quickfix"])
    (suppress,) = [a for a in actions if a.title == "Suppress GPU001 on this line"]
    assert suppress.edit is not None
    suppressed = apply_text_edits(LOOP_SYNC, edits_for(suppress.edit, uri))
    assert suppressed.splitlines()[LOOP_SYNC_LINE].endswith("  # gpulens: ignore[GPU001]")
    assert gpu001(await diagnostics_of(client, suppressed)) == []


async def test_fix_all_fixes_every_finding(shared_client: RecordingClient) -> None:
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, TWO_LOOPS)
    assert len(gpu001(list((await wait_for_published(client, uri)).diagnostics))) == 2
    actions = await code_actions(client, uri, (0, 0), only=["source.fixAll"])
    assert [a.kind for a in actions] == ["source.fixAll.gpulens"]
    assert actions[0].edit is not None
    fixed = apply_text_edits(TWO_LOOPS, edits_for(actions[0].edit, uri))
    compile(fixed, "fixed.py", "exec")
    assert gpu001(await diagnostics_of(client, fixed)) == []


async def test_fix_all_on_a_clean_file_offers_nothing(shared_client: RecordingClient) -> None:
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, CLEAN)
    assert await code_actions(client, uri, (0, 0), only=["source.fixAll.gpulens"]) == []


async def test_only_restricts_the_kinds(shared_client: RecordingClient) -> None:
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, TWO_LOOPS)
    await wait_for_published(client, uri)
    everywhere = ((0, 0), (len(TWO_LOOPS.splitlines()), 0))
    everything = await code_actions(client, uri, everywhere[0], end=everywhere[1])
    kinds = {a.kind for a in everything}
    assert {"quickfix", "source.fixAll.gpulens"} <= kinds, kinds
    for only, allowed in (
        (["quickfix"], {"quickfix"}),
        (["refactor"], {"refactor.rewrite"}),
        (["source"], {"source.fixAll.gpulens"}),
    ):
        got = await code_actions(client, uri, everywhere[0], end=everywhere[1], only=only)
        assert got, only
        assert {a.kind for a in got} <= allowed, (only, {a.kind for a in got})


async def test_hover_shows_the_rule(shared_client: RecordingClient) -> None:
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, LOOP_SYNC)
    (diagnostic,) = gpu001(list((await wait_for_published(client, uri)).diagnostics))
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start
        )
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert "GPU001" in hover.contents.value
    assert diagnostic.message in hover.contents.value
    from gpulens.analysis.rules import RULES

    if "GPU001" in RULES:  # the catalogue's own text, whatever it says
        assert RULES["GPU001"].doc.splitlines()[0] in hover.contents.value
    assert hover.range == diagnostic.range


async def test_light_bulb_fix_all_is_resolved_on_demand(shared_client: RecordingClient) -> None:
    client = shared_client
    uri = fresh_uri(client)
    open_document(client, uri, TWO_LOOPS)
    await wait_for_published(client, uri)
    actions = await code_actions(client, uri, (LOOP_SYNC_LINE, 14))
    (lazy,) = [a for a in actions if a.kind == "source.fixAll.gpulens"]
    assert lazy.edit is None  # the light bulb does not pay for it
    resolved = await client.code_action_resolve_async(lazy)
    assert resolved.edit is not None
    fixed = apply_text_edits(TWO_LOOPS, edits_for(resolved.edit, uri))
    assert gpu001(await diagnostics_of(client, fixed)) == []


async def test_refactors_need_a_selection_or_a_request(shared_client: RecordingClient) -> None:
    client = shared_client
    uri = fresh_uri(client)
    text = "import torch\nmodel = torch.nn.Linear(4, 4)\nx = torch.randn(8, 4)\n"
    open_document(client, uri, text)
    await wait_for_published(client, uri)
    at_cursor = await code_actions(client, uri, (2, 4))
    assert [a for a in at_cursor if a.kind == "refactor.rewrite"] == []
    selected = await code_actions(client, uri, (1, 0), end=(2, 21))
    assert any(a.title.startswith("Move to device") for a in selected)
    asked = await code_actions(client, uri, (2, 4), only=["refactor"])
    assert any(a.title.startswith("Move to device") for a in asked)
