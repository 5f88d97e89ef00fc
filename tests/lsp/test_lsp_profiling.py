"""Cell profiling through a real client: lenses, the commands, inlay hints, hover, edits,
errors, timeout and both kinds of cancellation.

The cells are plain Python, so they run on any machine (on the host backend where no GPU one is
installed); one server serves the module (each test opens its own document), with a 2 s timeout.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import (
    ProfilingClient,
    change_document,
    initialize_params,
    make_profiling_client,
    open_document,
    server_config,
    uri_in,
    wait_until,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from gpulens.lsp.profiling import carry_over
from gpulens.profiler.schema import SCHEMA

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIMEOUT_S = 2
# a cancelled cell must end this soon: well before TIMEOUT_S would end it anyway
STOPPED_WITHIN_S = 1.0

SCRIPT = """\
import time
# %%
total = 0
for i in range(200):
    total += i * i
time.sleep(0.05)
# %% [markdown]
# Notes: nothing to run here.
# %%
x = 1
"""
# 0-based lines of SCRIPT
FIRST_MARKER, TOTAL, LOOP, BODY, SLEEP, MARKDOWN, SECOND_MARKER = 1, 2, 3, 4, 5, 6, 8

RAISES = """\
# %%
a = 1
b = a / 0
c = 2
"""


def waits_for(pid_file: Path) -> str:
    """A cell that says which process runs it, then sleeps far past any test's patience."""
    return f"""\
# %%
import os, pathlib, time
pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))
time.sleep(60)
"""


def profiling_params(root: Path) -> types.InitializeParams:
    params = initialize_params(root)
    # the recorded VS Code capabilities predate inlay hints; VS Code has them today
    assert params.capabilities.workspace is not None
    params.capabilities.workspace.inlay_hint = types.InlayHintWorkspaceClientCapabilities(
        refresh_support=True
    )
    return params


CONFIG = server_config()
CONFIG.client_factory = make_profiling_client


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def client(lsp_client: ProfilingClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("profiling")
    lsp_client.set_configuration({"profile": {"timeoutSeconds": TIMEOUT_S}}, section="gpulens")
    lsp_client.initialize_result = await lsp_client.initialize_session(profiling_params(root))
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path


async def profile(client: ProfilingClient, uri: str, line: int) -> dict[str, Any]:
    return await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="gpulens.profileCell", arguments=[{"uri": uri, "line": line}]
            )
        ),
        30,
    )


async def hints(client: ProfilingClient, uri: str) -> dict[int, types.InlayHint]:
    found = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0),
                end=types.Position(line=10_000, character=0),
            ),
        )
    )
    return {hint.position.line: hint for hint in found or []}


def labels(found: dict[int, types.InlayHint]) -> dict[int, str]:
    return {line: str(hint.label) for line, hint in found.items()}


def messages_since(client: ProfilingClient, count: int) -> list[str]:
    return [m.message for m in client.messages[count:]]


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return not stat.parent.parent.is_dir()  # no /proc here: os.kill said it exists


async def pid_written(pid_file: Path) -> int:
    await wait_until(lambda: pid_file.exists() and pid_file.read_text().isdigit(), 15)
    return int(pid_file.read_text())


# --- pure ---------------------------------------------------------------------------------------


async def test_results_move_with_edits_above_and_drop_on_the_edited_line() -> None:
    old = ["a", "b", "c", "d"]
    results = {1: "B", 2: "C", 3: "D"}
    assert carry_over(old, ["new", *old], results) == {2: "B", 3: "C", 4: "D"}
    assert carry_over(old, ["a", "b", "C!", "d"], results) == {1: "B", 3: "D"}
    assert carry_over(old, ["a", "c", "d"], results) == {1: "C", 2: "D"}  # b deleted
    assert carry_over(old, ["a", "b", "", "c", "d"], results) == {1: "B", 3: "C", 4: "D"}


# --- through the client -------------------------------------------------------------------------


async def test_lenses_above_code_cells_only_and_nothing_runs(
    client: ProfilingClient, folder: Path
) -> None:
    uri = uri_in(folder, "lenses.py")
    open_document(client, uri, SCRIPT)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert [
        (lens.range.start.line, lens.command.title) for lens in lenses or [] if lens.command
    ] == [
        (FIRST_MARKER, "▶ Profile cell"),
        (SECOND_MARKER, "▶ Profile cell"),
    ]
    command = lenses[0].command
    assert command is not None and command.command == "gpulens.profileCell"
    assert list(command.arguments or []) == [{"uri": uri, "line": FIRST_MARKER}]
    # showing lenses ran nothing: no costs to draw
    assert await hints(client, uri) == {}
    plain = uri_in(folder, "module.py")
    open_document(client, plain, "def f():\n    return 1\n")
    assert not await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=plain))
    )


async def test_profile_returns_the_payload_and_draws_hints_then_edits_and_clear(
    client: ProfilingClient, folder: Path
) -> None:
    uri = uri_in(folder, "loop.py")
    open_document(client, uri, SCRIPT)
    refreshes = len(client.refreshes)
    tokens = set(client.progress_reports)
    payload = await profile(client, uri, TOTAL)

    # plain Python: the host backend here; a machine with torch or cupti-python picks those
    assert payload["schema"] == SCHEMA and payload["backend"] != "none"
    assert payload["error"] is None
    assert payload["source"]["cell"] == 1
    hits = {line["line"]: line["hits"] for line in payload["lines"]}
    assert hits == {TOTAL + 1: 1, LOOP + 1: 201, BODY + 1: 200, SLEEP + 1: 1}
    assert "inlayHint" in client.refreshes[refreshes:]
    # progress: begun (cancellable), ended
    (token,) = set(client.progress_reports) - tokens
    kinds = [report.kind for report in client.progress_reports[token]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert client.progress_reports[token][0].cancellable is True

    drawn = await hints(client, uri)
    assert sorted(drawn) == [TOTAL, LOOP, BODY, SLEEP]
    lines = SCRIPT.splitlines()
    for line, hint in drawn.items():
        assert hint.position.character == len(lines[line])  # at the end of its line
    text = labels(drawn)
    assert re.fullmatch(r"200 hits · [\d.]+ (ns|µs|ms) host", text[BODY]), text[BODY]
    assert re.fullmatch(r"201 hits · [\d.]+ (ns|µs|ms) host", text[LOOP]), text[LOOP]
    sleep_ms = re.fullmatch(r"1 hit · ([\d.]+) ms host", text[SLEEP])
    assert sleep_ms and 45 <= float(sleep_ms.group(1)) < 500, text[SLEEP]

    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=BODY, character=4),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert f"line {BODY + 1}" in hover.contents.value
    assert "ran 200 times" in hover.contents.value

    # a line added above moves every hint down by one
    change_document(client, uri, 2, "import os\n", start=(0, 0))
    assert labels(await hints(client, uri)) == {line + 1: label for line, label in text.items()}
    # editing the loop body drops its hint only
    change_document(client, uri, 3, "2 * i", start=(BODY + 1, 13), end=(BODY + 1, 18))
    assert labels(await hints(client, uri)) == {
        TOTAL + 1: text[TOTAL],
        LOOP + 1: text[LOOP],
        SLEEP + 1: text[SLEEP],
    }
    # pressing Enter at the end of a profiled line keeps it
    end_of_loop = len(lines[LOOP])
    change_document(client, uri, 4, "\n    pass", start=(LOOP + 1, end_of_loop))
    assert sorted(await hints(client, uri)) == [TOTAL + 1, LOOP + 1, SLEEP + 2]

    refreshes = len(client.refreshes)
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="gpulens.clearProfile", arguments=[{"uri": uri}])
    )
    assert await hints(client, uri) == {}
    assert "inlayHint" in client.refreshes[refreshes:]


async def test_a_cell_that_raises_draws_the_lines_that_ran_and_says_so(
    client: ProfilingClient, folder: Path
) -> None:
    uri = uri_in(folder, "raises.py")
    open_document(client, uri, RAISES)
    shown = len(client.messages)
    payload = await profile(client, uri, 2)
    assert payload["error"]["type"] == "ZeroDivisionError" and payload["error"]["line"] == 3
    assert sorted(await hints(client, uri)) == [1, 2]  # `c = 2` never ran
    (message,) = messages_since(client, shown)
    assert "raised ZeroDivisionError at line 3: division by zero" in message
    assert client.messages[shown].type == types.MessageType.Error


async def test_a_cell_past_the_timeout_is_stopped_with_a_clear_message(
    client: ProfilingClient, folder: Path
) -> None:
    uri = uri_in(folder, "slow.py")
    pid_file = folder / "slow.pid"
    open_document(client, uri, waits_for(pid_file))
    shown = len(client.messages)
    started = time.monotonic()
    payload = await profile(client, uri, 1)
    assert time.monotonic() - started < TIMEOUT_S + 5
    assert payload["error"]["type"] == "Timeout"
    assert not alive(int(pid_file.read_text()))
    (message,) = messages_since(client, shown)
    assert f"ran past the {TIMEOUT_S} s timeout" in message
    assert "gpulens.profile.timeoutSeconds" in message
    # the lines before the sleep ran and are drawn
    assert 2 in await hints(client, uri)


async def test_cancelling_the_request_kills_the_subprocess(
    client: ProfilingClient, folder: Path
) -> None:
    uri = uri_in(folder, "cancel.py")
    pid_file = folder / "cancel.pid"
    open_document(client, uri, waits_for(pid_file))
    request = client.protocol.send_request(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(
            command="gpulens.profileCell", arguments=[{"uri": uri, "line": 2}]
        ),
        msg_id="profile-to-cancel",
    )
    pid = await pid_written(pid_file)
    assert alive(pid)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="profile-to-cancel"))
    with pytest.raises(JsonRpcException, match="cancel"):
        await asyncio.wait_for(asyncio.wrap_future(request), 10)
    # gone well before the profile timeout would have stopped it
    await wait_until(lambda: not alive(pid), STOPPED_WITHIN_S)
    assert not await hints(client, uri)
    # the next profile is not held up by the cancelled one
    other = uri_in(folder, "after_cancel.py")
    open_document(client, other, RAISES.replace("a / 0", "a + 1"))
    assert (await profile(client, other, 1))["error"] is None


async def test_cancelling_the_progress_stops_the_cell_and_keeps_what_ran(
    client: ProfilingClient, folder: Path
) -> None:
    uri = uri_in(folder, "stop.py")
    pid_file = folder / "stop.pid"
    open_document(client, uri, waits_for(pid_file))
    tokens = set(client.progress_reports)
    running = asyncio.ensure_future(profile(client, uri, 2))
    pid = await pid_written(pid_file)
    (token,) = set(client.progress_reports) - tokens
    shown = len(client.messages)
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    await wait_until(lambda: not alive(pid), STOPPED_WITHIN_S)
    payload = await asyncio.wait_for(running, 10)
    assert payload["error"]["type"] == "Cancelled"
    assert 2 in await hints(client, uri)  # the line that wrote the pid ran
    assert any("was cancelled" in m for m in messages_since(client, shown))


async def test_a_cell_runs_in_the_folder_of_its_file(client: ProfilingClient, folder: Path) -> None:
    """As editors run a cell, and whatever folder the server itself was started in."""
    uri = uri_in(folder, "where.py")
    open_document(client, uri, "# %%\nimport os\nprint(os.getcwd())\n")
    payload = await profile(client, uri, 1)
    assert payload["error"] is None
    assert payload["output"].strip() == str(folder)


async def test_a_line_past_the_end_gives_a_payload_error_and_a_message(
    client: ProfilingClient, folder: Path
) -> None:
    uri = uri_in(folder, "short.py")
    open_document(client, uri, "x = 1\n")
    shown = len(client.messages)
    payload = await profile(client, uri, 40)
    assert payload["error"]["type"] == "RequestError" and payload["lines"] == []
    (message,) = messages_since(client, shown)
    assert "has no line 41" in message


async def test_bad_arguments_are_invalid_params(client: ProfilingClient) -> None:
    with pytest.raises(JsonRpcException, match="line"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="gpulens.profileCell", arguments=[{"uri": 3}])
        )


async def settings_changed(client: ProfilingClient, gpulens: dict[str, Any]) -> None:
    """Change the client's settings and return once the server has asked for them."""
    asked = client.configuration_requests
    client.set_configuration(gpulens, section="gpulens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_until(lambda: client.configuration_requests > asked)
    await asyncio.sleep(0.05)  # the answer leaves the client right after its handler returns


async def test_a_missing_interpreter_says_which_setting_to_fix(
    client: ProfilingClient, folder: Path
) -> None:
    await settings_changed(client, {"profile": {"python": str(folder / "no-such-python")}})
    try:
        uri = uri_in(folder, "any.py")
        open_document(client, uri, RAISES)
        shown = len(client.messages)
        payload = await profile(client, uri, 1)
    finally:
        await settings_changed(client, {"profile": {"timeoutSeconds": TIMEOUT_S}})
    assert payload["error"]["type"] == "InterpreterError"
    assert "no-such-python" in payload["error"]["message"]
    (message,) = messages_since(client, shown)
    assert "was not profiled" in message and "gpulens.profile.python" in message
    assert await hints(client, uri) == {}


DDP = """\
import torch.distributed as dist
# %%
dist.init_process_group("gloo")
# %%
x = 1
"""


async def test_a_cell_set_up_as_a_distributed_job_runs_as_ranks(
    client: ProfilingClient, folder: Path
) -> None:
    """A plain run of this cell raises "environment variable RANK expected"; as ranks it runs
    under torch's launcher, or, where the interpreter has no torch, says the launcher needs it."""
    await settings_changed(client, {"profile": {"timeoutSeconds": 60, "ranks": 1}})
    try:
        uri = uri_in(folder, "ddp.py")
        open_document(client, uri, DDP)
        payload = await profile(client, uri, 4)
    finally:
        await settings_changed(client, {"profile": {"timeoutSeconds": TIMEOUT_S}})
    if importlib.util.find_spec("torch") is None:
        assert payload["error"]["type"] == "InterpreterError"
        assert "torch.distributed.run" in payload["error"]["message"]
    else:
        assert payload["error"] is None, payload["error"]
        assert payload["ranks"]["world_size"] == 1
    assert "RANK" not in str(payload["error"])


async def test_a_bad_ranks_setting_is_refused_with_its_name(
    client: ProfilingClient, folder: Path
) -> None:
    shown = len(client.messages)
    await settings_changed(client, {"profile": {"timeoutSeconds": TIMEOUT_S, "ranks": 0}})
    try:
        await wait_until(lambda: len(client.messages) > shown)
    finally:
        await settings_changed(client, {"profile": {"timeoutSeconds": TIMEOUT_S}})
    assert any("gpulens.profile.ranks" in m for m in messages_since(client, shown))


async def test_a_bad_memory_setting_is_refused_with_its_name(
    client: ProfilingClient, folder: Path
) -> None:
    shown = len(client.messages)
    await settings_changed(client, {"profile": {"timeoutSeconds": TIMEOUT_S, "memory": "most"}})
    try:
        await wait_until(lambda: len(client.messages) > shown)
    finally:
        await settings_changed(client, {"profile": {"timeoutSeconds": TIMEOUT_S}})
    said = messages_since(client, shown)
    assert any("gpulens.profile.memory" in m and "reserved, all, off" in m for m in said), said
