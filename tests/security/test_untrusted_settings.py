"""An interpreter named in the settings runs only where the client vouched for the settings.

The settings may come from the repository (workspace settings, Neovim's exrc, Helix's and Zed's
project config), so `gpulens.profile.python` may be a program the repository chose. Each test
names an interpreter that records its runs, sends it both in initializationOptions and as the
answer to `workspace/configuration`, and checks what the real server did with it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from security_helpers import (
    GPULENS,
    TIMEOUT_S,
    frameworks_probed,
    language_server,
    marker_interpreter,
    runs_of,
)

CELLS = "# %%\nx = 1\n# %%\ny = x + 1\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "cells.py").write_text(CELLS)
    return folder


@pytest.fixture
def chosen(tmp_path: Path) -> tuple[Path, Path]:
    """The repository's interpreter, and the file where it records its runs."""
    marker = tmp_path / "runs.txt"
    return marker_interpreter(tmp_path / "repo-python", marker), marker


def _options(interpreter: Path, trusted: bool | None) -> dict[str, Any]:
    options: dict[str, Any] = {"gpulens": {"profile": {"python": str(interpreter)}}}
    if trusted is not None:
        options["workspaceTrusted"] = trusted
    return options


def _settings(interpreter: Path) -> dict[str, Any]:
    return {"profile": {"python": str(interpreter)}}


async def _settled(client: Any) -> None:
    """The probes answered, and the settings pulled after `initialized` had time to apply."""
    await frameworks_probed(client)
    await asyncio.sleep(1.0)
    await client.protocol.send_request_async("gpulens/status", {"refreshFrameworks": True})
    await asyncio.sleep(1.0)


@pytest.mark.parametrize("trusted", [False, None], ids=["untrusted", "trust-not-said"])
async def test_status_probes_never_run_the_settings_interpreter_unless_trusted(
    workspace: Path, chosen: tuple[Path, Path], trusted: bool | None
) -> None:
    interpreter, marker = chosen
    async with language_server(
        [GPULENS, "serve"],
        cwd=workspace,
        workspace=workspace,
        options=_options(interpreter, trusted),
        settings=_settings(interpreter),
    ) as client:
        await _settled(client)
    assert runs_of(marker) == 0


async def test_a_trusted_workspace_probes_with_the_settings_interpreter(
    workspace: Path, chosen: tuple[Path, Path]
) -> None:
    # the control: the marker does record runs, and a vouched-for setting is honoured
    interpreter, marker = chosen
    async with language_server(
        [GPULENS, "serve"],
        cwd=workspace,
        workspace=workspace,
        options=_options(interpreter, True),
        settings=_settings(interpreter),
    ):
        deadline = asyncio.get_running_loop().time() + TIMEOUT_S
        while runs_of(marker) == 0 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)
    assert runs_of(marker) > 0


async def test_an_untrusted_workspace_is_not_profiled_and_the_reason_is_given(
    workspace: Path, chosen: tuple[Path, Path]
) -> None:
    interpreter, marker = chosen
    uri = (workspace / "cells.py").as_uri()
    async with language_server(
        [GPULENS, "serve"],
        cwd=workspace,
        workspace=workspace,
        options=_options(interpreter, False),
        settings=_settings(interpreter),
    ) as client:
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=1, text=CELLS
                )
            )
        )
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        payload = await asyncio.wait_for(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams(
                    command="gpulens.profileCell", arguments=[{"uri": uri, "line": 2}]
                )
            ),
            TIMEOUT_S,
        )
    assert runs_of(marker) == 0
    assert payload["lines"] == []
    assert "not trusted" in payload["error"]["message"]
    assert "trust the folder" in payload["error"]["message"]
    # the editor shows why, in one sentence
    assert any("not trusted" in message.message for message in client.messages)
    titles = [lens.command.title for lens in lenses or [] if lens.command]
    assert titles and all("trust the folder" in title for title in titles)
