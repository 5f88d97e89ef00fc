"""Settings and the device command change what the server reports and writes.

Each test gets a fresh server: they change server-wide state.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest_lsp
from lsp_helpers import (
    CLEAN,
    LOOP_SYNC,
    RecordingClient,
    apply_text_edits,
    code_actions,
    codes,
    edits_for,
    initialize_params,
    open_document,
    server_config,
    still_answers,
    uri_in,
    wait_for_published,
    wait_until,
)
from lsprotocol import types

# nothing here is on the device yet: "Move to device" has work to do on lines 1-2
ON_CPU = """\
import torch
model = torch.nn.Linear(4, 4)
x = torch.randn(8, 4)
y = model(x)
"""


async def settings_changed(client: RecordingClient, gpulens: dict) -> None:
    """Change the client's settings, tell the server, and return once it has asked for them
    (and had a moment to get the answer), so what follows sees them."""
    asked = client.configuration_requests
    client.set_configuration(gpulens, section="gpulens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    for _ in range(500):
        if client.configuration_requests > asked:
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("the server never asked for the changed settings")
    # the answer leaves the client right after its handler returns
    await asyncio.sleep(0.05)


async def test_ignoring_a_rule_in_settings_hides_it(client: RecordingClient, tmp_path: Path):
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    count = len(client.published[uri])
    await settings_changed(client, {"rules": {"ignore": ["GPU001"]}})
    hidden = await wait_for_published(client, uri, after=count)
    assert "GPU001" not in codes(hidden)
    count = len(client.published[uri])
    await settings_changed(client, {})
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p), after=count)


async def test_severity_override(client: RecordingClient, tmp_path: Path) -> None:
    uri = uri_in(tmp_path)
    await settings_changed(client, {"rules": {"severity": {"GPU001": "error"}}})
    open_document(client, uri, LOOP_SYNC)
    published = await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    assert [d.severity for d in published.diagnostics if d.code == "GPU001"] == [
        types.DiagnosticSeverity.Error
    ]


async def test_pyproject_applies_and_editor_settings_override_it(
    client: RecordingClient, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.gpulens]\nignore = ["GPU001"]\n')
    project = tmp_path / "pkg"
    project.mkdir()
    uri = uri_in(project)
    open_document(client, uri, LOOP_SYNC)
    first = await wait_for_published(client, uri)
    assert "GPU001" not in codes(first)
    count = len(client.published[uri])
    await settings_changed(client, {"rules": {"ignore": []}})
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p), after=count)


async def test_a_broken_pyproject_warns_and_keeps_the_defaults(
    client: RecordingClient, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.gpulens]\nignore = ["NOPE"]\n')
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    assert any("NOPE" in m.message for m in client.messages)


async def move_to_device_edit(client: RecordingClient, uri: str) -> tuple[str, str]:
    """The "Move to device" refactor over the whole file: its title and the text it makes."""
    actions = await code_actions(client, uri, (1, 0), end=(3, 0), only=["refactor.rewrite"])
    (move,) = [a for a in actions if a.title.startswith("Move to device")]
    assert move.kind == types.CodeActionKind.RefactorRewrite
    assert move.edit is not None
    return move.title, apply_text_edits(ON_CPU, edits_for(move.edit, uri))


async def test_select_device_changes_what_move_to_device_writes(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, ON_CPU)
    title, moved = await move_to_device_edit(client, uri)
    assert '"cuda"' in moved
    assert "cuda:1" not in title + moved
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="gpulens.selectDevice", arguments=[{"device": "cuda:1"}])
    )
    assert result == {"device": "cuda:1"}
    title, moved = await move_to_device_edit(client, uri)
    assert "cuda:1" in title
    assert '"cuda:1"' in moved
    compile(moved, "moved.py", "exec")


async def test_device_setting_is_used_until_a_device_is_selected(
    client: RecordingClient, tmp_path: Path
) -> None:
    await settings_changed(client, {"device": "mps"})
    uri = uri_in(tmp_path)
    open_document(client, uri, ON_CPU)
    await wait_for_published(client, uri)
    _, moved = await move_to_device_edit(client, uri)
    assert '"mps"' in moved
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="gpulens.selectDevice", arguments=["cpu"])
    )
    _, moved = await move_to_device_edit(client, uri)
    assert '"cpu"' in moved


async def test_settings_are_pulled_after_initialized_and_on_change(
    client: RecordingClient, tmp_path: Path
) -> None:
    await wait_until(lambda: client.configuration_requests >= 1)
    uri = uri_in(tmp_path)
    open_document(client, uri, CLEAN)
    await wait_for_published(client, uri)
    before = client.configuration_requests
    count = len(client.published[uri])
    client.set_configuration({"rules": {"severity": {"GPU001": "error"}}}, section="gpulens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_until(lambda: client.configuration_requests > before)
    # open documents are analysed again with the new settings (even with no finding)
    await wait_for_published(client, uri, after=count)


async def test_bad_settings_warn_and_keep_the_server_running(
    client: RecordingClient, tmp_path: Path
) -> None:
    client.set_configuration(
        {"device": "tpu:banana", "rules": {"ignore": ["NOTACODE"], "severity": {"GPU001": "loud"}}},
        section="gpulens",
    )
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_until(lambda: len(client.messages) >= 3)
    warnings = [m.message for m in client.messages if m.type == types.MessageType.Warning]
    # each names the setting it is about, as the editor's settings UI spells it
    assert any("gpulens.device" in m and "tpu:banana" in m for m in warnings), warnings
    assert any("gpulens.rules.ignore" in m and "NOTACODE" in m for m in warnings), warnings
    assert any("gpulens.rules.severity" in m and "loud" in m for m in warnings), warnings
    uri = uri_in(tmp_path)
    open_document(client, uri, CLEAN)
    await wait_for_published(client, uri)
    await still_answers(client)


async def test_settings_pushed_in_the_notification_are_read(
    client: RecordingClient, tmp_path: Path
) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"gpulens": {"rules": {"select": ["XYZ"]}}})
    )
    await wait_until(lambda: any("XYZ" in m.message for m in client.messages))


@pytest_lsp.fixture(config=server_config())
async def client_with_bad_init_options(lsp_client: RecordingClient, tmp_path: Path):
    await lsp_client.initialize_session(
        initialize_params(tmp_path, options={"gpulens": {"statusIntervalSeconds": -1}})
    )
    yield
    await lsp_client.shutdown_session()


async def test_bad_initialization_options_warn(client_with_bad_init_options: RecordingClient):
    client = client_with_bad_init_options
    await wait_until(lambda: any("statusIntervalSeconds" in m.message for m in client.messages))
    await still_answers(client)


async def test_pyproject_changes_apply_when_the_client_reports_them(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    count = len(client.published[uri])
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.gpulens]\nignore = ["GPU001"]\n')
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Created)]
        )
    )
    await wait_for_published(client, uri, lambda p: "GPU001" not in codes(p), after=count)
