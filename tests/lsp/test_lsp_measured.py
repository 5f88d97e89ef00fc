"""Profile-confirmed diagnostics through a real client: a recorded H200 profile, loaded with
`gpulens.showProfile`, merges into the document's diagnostics; an edit clears what it touches.

The profiles are real captures (`tests/fixtures/profiler`), replayed as `gpulens profile`
reports them (`gpulens.profiler.recorded`); nothing runs.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path
from typing import Any, Union

import pytest
import pytest_lsp
from lsp_helpers import (
    RecordingClient,
    apply_text_edits,
    change_document,
    code_actions,
    edits_for,
    initialize_params,
    make_profiling_client,
    open_document,
    server_config,
    still_answers,
    uri_in,
    wait_for_published,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from gpulens.profiler.recorded import replay

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "profiler"
MEASURED = "gpulens (measured)"


class EditorClient(RecordingClient):
    """A client that answers what the server asks after a profile: refresh the inlay hints
    and lenses, show a message with actions (it picks `answer`), apply an edit."""

    answer: str | None
    asked: list[types.ShowMessageRequestParams]
    applied: list[types.ApplyWorkspaceEditParams]


def make_editor_client() -> EditorClient:
    client: Any = make_profiling_client()  # answers the refreshes a shown profile asks for
    client.answer, client.asked, client.applied = None, [], []
    # lsprotocol reads any code action that carries a command (and no edit) as a bare
    # Command, losing its kind and arguments: tell them apart as the protocol does
    converter = client.protocol._converter
    action_or_command = Union[types.Command, types.CodeAction]  # noqa: UP007 - the type lsprotocol registers

    def structure(value: Any, _: Any) -> types.Command | types.CodeAction:
        kind = types.Command if isinstance(value.get("command"), str) else types.CodeAction
        return converter.structure(value, kind)

    converter.register_structure_hook(action_or_command, structure)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def show_message_request(
        params: types.ShowMessageRequestParams,
    ) -> types.MessageActionItem | None:
        client.asked.append(params)
        return None if client.answer is None else types.MessageActionItem(title=client.answer)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        client.applied.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    return client


def editor_config(**env: str):
    config = server_config(**env)
    config.client_factory = make_editor_client
    return config


@pytest_lsp.fixture(config=editor_config(), scope="module")
async def shared_client(lsp_client: EditorClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("measured")
    lsp_client.set_configuration({}, section="gpulens")
    lsp_client.initialize_result = await lsp_client.initialize_session(initialize_params(root))
    yield
    await lsp_client.shutdown_session()


def recording(name: str) -> dict[str, Any]:
    with gzip.open(FIXTURES / f"{name}.json.gz", "rt", encoding="utf-8") as handle:
        return json.load(handle)


def replayed(name: str) -> tuple[str, dict[str, Any]]:
    """A recorded script's source and its profile, as `gpulens profile -o` saves it."""
    captured = recording(name)
    return captured["source"], json.loads(json.dumps(replay(captured, name)))


async def show(client: RecordingClient, uri: str, payload: dict[str, Any]) -> dict[str, Any]:
    return await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="gpulens.showProfile", arguments=[{"uri": uri, "payload": payload}]
            )
        ),
        10,
    )


async def measure_action(
    client: EditorClient, uri: str, at: tuple[int, int], diagnostics: list[types.Diagnostic]
) -> types.Command:
    """The one "Measure this fix" action at `at`: its command."""
    found = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=at[0], character=at[1]),
                end=types.Position(line=at[0], character=at[1]),
            ),
            context=types.CodeActionContext(
                diagnostics=diagnostics, only=["quickfix.gpulens.measure"]
            ),
        )
    )
    (action,) = found or []
    if isinstance(action, types.CodeAction):
        assert action.kind == "quickfix.gpulens.measure" and action.command is not None
        return action.command
    return types.Command(
        title=action.title, command="gpulens.measureFix", arguments=action.arguments
    )


def by_code(params: types.PublishDiagnosticsParams) -> dict[str, types.Diagnostic]:
    return {str(d.code): d for d in params.diagnostics}


async def test_a_sync_the_analysis_missed_is_a_measured_diagnostic_with_the_fix(
    shared_client: EditorClient, tmp_path: Path
) -> None:
    source, payload = replayed("item_sync_cupti")
    # the capture's script, with the import its setup made: the profile still finds its lines
    text = "import torch\n" + source
    uri = uri_in(tmp_path, "sync.py")
    open_document(shared_client, uri, text)
    before = await wait_for_published(shared_client, uri)
    assert not before.diagnostics  # `x` came from elsewhere: the analysis cannot tell

    count = len(shared_client.published[uri])
    answer = await show(shared_client, uri, payload)
    assert answer["display"]["recorded"].startswith("recorded on NVIDIA H200")
    after = await wait_for_published(shared_client, uri, lambda p: bool(p.diagnostics), after=count)
    (diagnostic,) = after.diagnostics
    line = text.splitlines().index("    total += (x * step).sum().item()  # item")
    assert diagnostic.code == "GPU001" and diagnostic.source == MEASURED
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.range.start.line == line
    lines = text.splitlines()
    start, end = diagnostic.range.start.character, diagnostic.range.end.character
    assert lines[line][start:end] == "(x * step).sum().item()"
    assert diagnostic.message.startswith(
        "Measured in the last profile: the host waited for the GPU 50 times on this line"
        " (291 µs stalled), once per run; the line ran 50 times and took 6.1 ms, 98 % of"
    )

    # the analysis's own fix for the sync, now that the profile showed the value on the GPU
    actions = await code_actions(
        shared_client, uri, (line, start), diagnostics=[diagnostic], only=["quickfix"]
    )
    fix = next(a for a in actions if a.title.startswith("Accumulate `total` on the device"))
    assert list(fix.diagnostics or []) == [diagnostic]
    assert fix.edit is not None
    fixed = apply_text_edits(text, edits_for(fix.edit, uri))
    assert fixed == (
        text.replace("(x * step).sum().item()", "(x * step).sum().detach().double()")
        + "total = float(total)  # one sync, after the loop\n"
    )
    assert "Suppress GPU001 on this line" in [a.title for a in actions]
    measure = await measure_action(shared_client, uri, (line, start), [diagnostic])
    assert measure.title == f"Measure this fix: {fix.title}"
    assert list(measure.arguments or []) == [
        {"uri": uri, "line": line, "code": "GPU001", "title": fix.title}
    ]


async def test_a_finding_carries_its_cost_and_a_negligible_one_drops_to_a_hint(
    shared_client: EditorClient, tmp_path: Path
) -> None:
    # the demo's training cell on an H200: 9.1 s, nearly all of it importing torch and
    # starting CUDA; its 200 `.item()` syncs cost 9.1 ms of it
    demo = (REPO / "examples" / "profile_demo.py").read_text(encoding="utf-8")
    payload = json.loads((FIXTURES / "demo_cell3_h200_payload.json").read_text())
    uri = uri_in(tmp_path, "profile_demo.py")
    open_document(shared_client, uri, demo)
    first = await wait_for_published(shared_client, uri)
    sync_line = demo.splitlines().index("    total += loss.item()")
    static = by_code(first)["GPU001"]
    assert static.severity == types.DiagnosticSeverity.Warning
    assert static.range.start.line == sync_line

    count = len(shared_client.published[uri])
    await show(shared_client, uri, payload)
    merged = await wait_for_published(
        shared_client, uri, lambda p: len(p.diagnostics) == 2, after=count
    )
    found = by_code(merged)
    hint = found["GPU001"]
    assert hint.source == "gpulens" and hint.range == static.range
    assert hint.severity == types.DiagnosticSeverity.Hint
    assert hint.message == (
        "Measured negligible in the last profile: 200 syncs, 1.5 ms stalled; the line ran 200 "
        "times and took 9.1 ms, under 0.1 % of the cell's 9.1 s. " + static.message
    )
    # the 400 pageable copies of line 37, which the analysis does not see: measured, a hint too
    pageable = found["GPU005"]
    assert pageable.source == MEASURED
    assert pageable.severity == types.DiagnosticSeverity.Hint
    assert pageable.range.start.line == demo.splitlines().index(
        "    x, y = data.to(device), target.to(device)"
    )
    assert "each of the 400 pageable copies makes the host wait for the GPU" in pageable.message

    # hover over the sync shows the merged message
    hover = await shared_client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=static.range.start,
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "Measured negligible in the last profile: 200 syncs" in hover.contents.value


async def test_a_measured_cost_stays_on_a_warning_that_matters(
    shared_client: EditorClient, tmp_path: Path
) -> None:
    source, payload = replayed("small_copies")
    text = "import torch\n\nhost = [torch.zeros(1024) for _ in range(100)]\n" + source
    uri = uri_in(tmp_path, "copies.py")
    open_document(shared_client, uri, text)
    static = by_code(await wait_for_published(shared_client, uri))["GPU002"]
    count = len(shared_client.published[uri])
    await show(shared_client, uri, payload)
    merged = await wait_for_published(
        shared_client, uri, lambda p: "Measured" in p.diagnostics[0].message, after=count
    )
    (copies,) = merged.diagnostics
    assert copies.code == "GPU002" and copies.source == "gpulens"
    assert copies.severity == types.DiagnosticSeverity.Warning
    assert copies.message == (
        static.message + " Measured in the last profile: 100 copies to the GPU (410 KB, 92 µs),"
        " 100 from pageable memory; the line ran once and took 16 ms, 99 % of the cell's 16 ms."
    )


async def test_an_edit_clears_its_lines_facts_and_shifts_the_others(
    shared_client: EditorClient, tmp_path: Path
) -> None:
    source, payload = replayed("big_copies")
    text = "import torch\n" + source
    uri = uri_in(tmp_path, "big.py")
    open_document(shared_client, uri, text)
    await wait_for_published(shared_client, uri)
    count = len(shared_client.published[uri])
    await show(shared_client, uri, payload)
    shown = await wait_for_published(
        shared_client, uri, lambda p: len(p.diagnostics) == 2, after=count
    )
    lines = text.splitlines()
    up = lines.index('d_big = big.to("cuda")  # pageable')
    down = lines.index("back = d_big.cpu()  # d2h")
    assert [(d.code, d.source, d.range.start.line) for d in shown.diagnostics] == [
        ("GPU005", MEASURED, up),
        ("GPU005", MEASURED, down),
    ]
    assert "1 pageable copy of 400 MB ran at 3.0 GB/s" in shown.diagnostics[0].message

    # a line added above moves both
    count = len(shared_client.published[uri])
    change_document(shared_client, uri, 2, "# moved\n", start=(0, 0))
    moved = await wait_for_published(shared_client, uri, after=count)
    assert [d.range.start.line for d in moved.diagnostics] == [up + 1, down + 1]
    # editing the first copy's line clears its measurement; the other stays
    count = len(shared_client.published[uri])
    change_document(shared_client, uri, 3, "  # edited", start=(up + 1, len(lines[up])))
    edited = await wait_for_published(shared_client, uri, after=count)
    assert [(d.code, d.range.start.line) for d in edited.diagnostics] == [("GPU005", down + 1)]

    # clearing the profile clears the rest
    count = len(shared_client.published[uri])
    await shared_client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="gpulens.clearProfile", arguments=[{"uri": uri}])
    )
    cleared = await wait_for_published(shared_client, uri, after=count)
    assert not cleared.diagnostics


async def test_a_suppression_comment_silences_a_measured_finding(
    shared_client: EditorClient, tmp_path: Path
) -> None:
    source, payload = replayed("train_step")
    quiet = "    loss.item()  # gpulens: ignore[GPU001]"
    text = "import torch\n" + source.replace("    loss.item()", quiet)
    uri = uri_in(tmp_path, "quiet.py")
    open_document(shared_client, uri, text)
    await wait_for_published(shared_client, uri)
    count = len(shared_client.published[uri])
    await show(shared_client, uri, payload)
    # the profile's lines are drawn (hints), and no diagnostic comes of the silenced sync
    hints = await shared_client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0),
                end=types.Position(line=100, character=0),
            ),
        )
    )
    assert hints
    await asyncio.sleep(0.3)
    assert all(not p.diagnostics for p in shared_client.published[uri][count:])


async def test_a_payload_that_is_not_a_profile_is_refused(
    shared_client: EditorClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path, "any.py")
    open_document(shared_client, uri, "x = 1\n")
    with pytest.raises(JsonRpcException, match="not a gpulens profile"):
        await show(shared_client, uri, {"schema": "something/1", "lines": []})
    with pytest.raises(JsonRpcException, match="is not open"):
        await show(shared_client, uri_in(tmp_path, "closed.py"), replayed("train_step")[1])


# --- a profile that comes or goes while an analysis runs ----------------------------------------

# enough functions that a walk of the whole file takes a second or more on a loaded machine:
# the profile's command arrives while it runs
PADDING = "".join(
    f"""

def step_{i}(model, batch, device):
    x = batch.to(device)
    total = 0.0
    for j in range(10):
        total += model(x).sum().item()
    return total
"""
    for i in range(500)
)


def measured_lines(params: types.PublishDiagnosticsParams) -> list[int]:
    return [d.range.start.line for d in params.diagnostics if d.source == MEASURED]


async def open_slow(client: EditorClient, tmp_path: Path) -> tuple[str, list[int], dict[str, Any]]:
    """The recorded big-copies script with a slow-to-walk tail, open and analysed twice
    (version 2: the first analysis's function results are recorded): its uri, the lines of
    its two measured copies once a line is added on top (`change_and_wait`), its profile."""
    source, payload = replayed("big_copies")
    text = "import torch\n" + source + PADDING
    uri = uri_in(tmp_path, "slow.py")
    open_document(client, uri, text)
    await wait_for_published(client, uri, timeout=60)
    change_document(client, uri, 2, "# analysed again\n", start=(0, 0))
    await wait_for_published(client, uri, lambda p: p.version == 2, timeout=60)
    lines = ["# analysed again", *text.splitlines()]
    moved = [
        lines.index('d_big = big.to("cuda")  # pageable') + 1,
        lines.index("back = d_big.cpu()  # d2h") + 1,
    ]
    return uri, moved, payload


async def change_and_wait(client: EditorClient, uri: str) -> None:
    """Version 3: an import on top, which every function may read, so the whole file is
    walked again (half a second and more); returns once that walk has started (after the
    debounce, at most 75 ms, and a request the server answered)."""
    change_document(client, uri, 3, "import numpy\n", start=(0, 0))
    await asyncio.sleep(0.2)
    await still_answers(client)


async def settled(client: EditorClient, uri: str) -> list[types.PublishDiagnosticsParams]:
    """Every publication for ``uri`` once the server has nothing left to publish (a hover
    waits for the analysis of the text now; a second more for any publication after it)."""
    await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=0, character=0),
            )
        ),
        60,
    )
    await asyncio.sleep(1.0)
    return client.published[uri]


async def test_a_profile_shown_while_the_text_is_analysed_is_in_what_that_analysis_publishes(
    shared_client: EditorClient, tmp_path: Path
) -> None:
    uri, moved, payload = await open_slow(shared_client, tmp_path)
    count = len(shared_client.published[uri])
    await change_and_wait(shared_client, uri)
    await show(shared_client, uri, payload)

    published = (await settled(shared_client, uri))[count:]
    # the profile, placed on version 3's lines, never goes out with version 2's text; the
    # last publication carries it
    assert published and [p.version for p in published] == [3] * len(published)
    assert measured_lines(published[-1]) == moved


async def test_a_profile_cleared_while_the_text_is_analysed_is_not_in_what_it_publishes(
    shared_client: EditorClient, tmp_path: Path
) -> None:
    uri, moved, payload = await open_slow(shared_client, tmp_path)
    count = len(shared_client.published[uri])
    await show(shared_client, uri, payload)
    shown = await wait_for_published(
        shared_client, uri, lambda p: len(measured_lines(p)) == 2, after=count, timeout=60
    )
    assert measured_lines(shown) == [line - 1 for line in moved]

    count = len(shared_client.published[uri])
    await change_and_wait(shared_client, uri)
    await shared_client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="gpulens.clearProfile", arguments=[{"uri": uri}])
    )

    published = (await settled(shared_client, uri))[count:]
    versions = [p.version for p in published]
    assert published and versions == sorted(versions) and versions[-1] == 3
    assert not measured_lines(published[-1])
    assert published[-1].diagnostics  # the analysis's own findings stay


# --- "Measure this fix" ------------------------------------------------------------------------

HOST_TORCH = REPO / "tests" / "fixtures" / "host_torch"

# a training-style script with `# %%` cells: setup, then the loop whose sync GPU001 finds. The
# stand-in torch (`tests/fixtures/host_torch`) makes each host read wait 2 ms, as a sync does;
# a setup line may change what a read and a `.detach()` cost
TRAIN = """\
import torch

# %% setup
x = torch.ones(10, device="cuda")
{costs}
# %% the loop
total = 0.0
for step in range(100):
    total += (x * step).sum().item()
print(total)
"""
SYNC_LINE = 8
FIX_TITLE = "Accumulate `total` on the device, read it once after the loop"


@pytest_lsp.fixture(
    config=editor_config(PYTHONPATH=str(HOST_TORCH)), scope="module", loop_scope="module"
)
async def measuring_client(lsp_client: EditorClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("measuring")
    lsp_client.set_configuration({"profile": {"timeoutSeconds": 20}}, section="gpulens")
    lsp_client.initialize_result = await lsp_client.initialize_session(initialize_params(root))
    yield
    await lsp_client.shutdown_session()


async def measure(client: EditorClient, command: types.Command) -> dict[str, Any]:
    return await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
        ),
        120,
    )


async def training_cell(
    client: EditorClient, tmp_path: Path, name: str, costs: str
) -> tuple[Path, str, str, types.Diagnostic, types.Command]:
    """The training cell (with `costs` set in its stand-in torch) saved as `name` and opened:
    its path, text, URI, its one finding, and that finding's "Measure this fix" command."""
    text = TRAIN.format(costs=costs)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    open_document(client, uri, text)
    (diagnostic,) = (await wait_for_published(client, uri)).diagnostics
    line = diagnostic.range.start.line
    command = await measure_action(client, uri, (line, 20), [diagnostic])
    return path, text, uri, diagnostic, command


async def test_measuring_a_fix_runs_both_versions_and_applies_the_fix_on_request(
    measuring_client: EditorClient, tmp_path: Path
) -> None:
    client = measuring_client
    path, text, uri, diagnostic, command = await training_cell(client, tmp_path, "train.py", "")
    assert diagnostic.code == "GPU001" and diagnostic.range.start.line == SYNC_LINE

    client.answer, asked, applied = "Apply fix", len(client.asked), len(client.applied)
    tokens = set(client.progress_reports)
    result = await measure(client, command)

    # five runs each way, in fresh processes: 100 waits of 2 ms against one
    assert result["schema"] == "gpulens.measure-fix/1"
    assert result["verdict"] == "faster", result["message"]
    assert result["before"]["runs"] == result["after"]["runs"] == 5
    assert result["before"]["min_s"] > 0.2 > result["after"]["max_s"]
    assert (
        result["message"].startswith(f"gpulens: “{FIX_TITLE}” makes cell 2 of train.py ")
        and "faster, beyond the noise" in result["message"]
    )
    (token,) = set(client.progress_reports) - tokens
    kinds = [report.kind for report in client.progress_reports[token]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    # the file was never written
    assert path.read_text(encoding="utf-8") == text

    # the message, with "Apply fix"; picked, the quick-fix's edit is applied
    await asyncio.wait_for(_until(lambda: len(client.applied) > applied), 10)
    question = client.asked[asked]
    assert question.message == result["message"]
    assert [a.title for a in question.actions or []] == ["Apply fix"]
    edit = client.applied[applied]
    assert edit.label == FIX_TITLE
    fixed = apply_text_edits(text, edits_for(edit.edit, uri))
    assert "total += (x * step).sum().detach().double()" in fixed
    assert "total = float(total)  # one sync, after the loop" in fixed


async def test_a_fix_that_costs_more_than_it_saves_is_said_to_be_slower(
    measuring_client: EditorClient, tmp_path: Path
) -> None:
    client = measuring_client
    # reads cost nothing here and the fix's `.detach()` 2 ms each: the "fix" makes it slower
    costs = "torch.SYNC_S, torch.DETACH_S = 0.0, 0.002\n"
    *_, command = await training_cell(client, tmp_path, "slower.py", costs)
    client.answer, asked = None, len(client.asked)
    result = await measure(client, command)
    assert result["verdict"] == "slower", result["message"]
    assert result["message"].startswith(
        f"gpulens: “{FIX_TITLE}” makes cell 2 of slower.py slower ("
    )
    await asyncio.wait_for(_until(lambda: len(client.asked) > asked), 10)
    assert client.asked[asked].message == result["message"]


async def test_a_fix_that_breaks_the_cell_is_reported_and_not_offered(
    measuring_client: EditorClient, tmp_path: Path
) -> None:
    client = measuring_client
    # the stand-in has no `.double()` here: the fixed cell raises
    *_, command = await training_cell(client, tmp_path, "broken.py", "del torch.Tensor.double\n")
    messages = len(client.messages)
    result = await measure(client, command)
    assert result["verdict"] == "failed" and not result["apply"]
    assert result["before"]["runs"] == 1 and result["after"]["runs"] == 0
    assert result["message"].startswith(f"gpulens: “{FIX_TITLE}” breaks cell 2 of broken.py: ")
    assert "AttributeError" in result["message"]
    await asyncio.wait_for(_until(lambda: len(client.messages) > messages), 10)
    assert client.messages[messages].message == result["message"]
    assert client.messages[messages].type == types.MessageType.Error


async def test_a_request_that_names_no_fix_runs_nothing(
    measuring_client: EditorClient, tmp_path: Path
) -> None:
    client = measuring_client
    uri = uri_in(tmp_path, "clean.py")
    open_document(client, uri, "x = 1\n")
    await wait_for_published(client, uri)
    result = await measure(
        client,
        types.Command(
            title="",
            command="gpulens.measureFix",
            arguments=[{"uri": uri, "line": 0, "code": "GPU001"}],
        ),
    )
    assert result["verdict"] == "refused"
    assert result["message"] == "gpulens: the fix was not measured: line 1 has no GPU001 finding."
    with pytest.raises(JsonRpcException, match="takes"):
        await measure(client, types.Command(title="", command="gpulens.measureFix", arguments=[]))


async def _until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0.02)


@pytest_lsp.fixture(config=editor_config(PYTHONPATH=str(HOST_TORCH)), loop_scope="module")
async def untrusted_client(lsp_client: EditorClient, tmp_path: Path):
    lsp_client.set_configuration({}, section="gpulens")
    params = initialize_params(tmp_path, {"workspaceTrusted": False})
    lsp_client.initialize_result = await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def test_an_untrusted_folder_is_offered_no_measurement_and_runs_none(
    untrusted_client: EditorClient, tmp_path: Path
) -> None:
    client = untrusted_client
    text = TRAIN.format(costs="")
    path = tmp_path / "train.py"
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    open_document(client, uri, text)
    (diagnostic,) = (await wait_for_published(client, uri)).diagnostics
    offered = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    titles = [action.title for action in offered or []]
    assert FIX_TITLE in titles
    assert not [title for title in titles if title.startswith("Measure")]
    arguments = [{"uri": uri, "line": SYNC_LINE, "code": "GPU001"}]
    result = await measure(
        client, types.Command(title="", command="gpulens.measureFix", arguments=arguments)
    )
    assert result["verdict"] == "refused" and result["before"]["runs"] == 0
    assert "the workspace is not trusted" in result["message"]
