"""What editors other than VS Code send, and what they do with the answers.

JupyterLab-LSP wraps `%%gpulens` cells in a call, Neovim sends an empty settings table as
`[]` and applies edits past the last line as lines of their own, Emacs may ask for plain-text
hover, and some clients send `didSave` unasked. Each test drives `gpulens serve` through a
real client with the capabilities or messages such an editor sends.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import (
    LOOP_SYNC,
    LOOP_SYNC_CALL,
    RecordingClient,
    apply_text_edits,
    code_actions,
    codes,
    edits_for,
    initialize_params,
    open_document,
    server_config,
    still_answers,
    text_in,
    uri_in,
    wait_for_published,
    wait_until,
)
from lsprotocol import types
from pytest_lsp import client_capabilities

# ---- JupyterLab-LSP: cell magics wrapped in a call ----------------------------------------------

# A notebook as JupyterLab-LSP sends it: one Python text, the `%%gpulens` cell wrapped the way
# its IPython overrides wrap a cell magic (body in a triple-quoted string, `"""` escaped).
SETUP_CELL = 'import torch\nx = torch.randn(10, device="cuda")\ntotal = 0.0'
MAGIC_BODY = (
    'note = """per step"""\n'
    "for i in range(100):\n"
    '    label = """step"""; total += (x * i).sum().item()'
)


def wrap_cell_magic(cell: str) -> str:
    """JupyterLab-LSP's `run_cell_magic` override, as it rewrites a cell (its overrides.ts)."""
    match = re.match(r"^%%(\S+)(.*\n)([\s\S]*)", cell)
    assert match is not None
    name, first_line, content = match.groups()
    first_line = re.sub(r'(["\\])', r"\\\1", first_line)[:-1]
    content = content.replace('"""', '\\"\\"\\"')
    return f'get_ipython().run_cell_magic("{name}", "{first_line}", """{content}""")'


def unwrap_cell_magic(code: str) -> str:
    """Its reverse: the cell the user sees again after an edit to the wrapped text."""
    match = re.match(r'^get_ipython\(\)\.run_cell_magic\("(.*?)", "(.*?)", """([\s\S]*)"""\)', code)
    assert match is not None, code
    name, line, content = match.groups()
    line = re.sub(r'\\([\\"])', r"\1", line)
    return f"%%{name}{line}\n" + content.replace('\\"\\"\\"', '"""')


def virtual_document(cells: list[str]) -> str:
    """Cells joined as JupyterLab-LSP joins them in the document it sends."""
    return "\n\n\n".join(cells) + "\n"


async def test_a_wrapped_gpulens_cell_is_analysed_where_the_client_sent_it(
    client: RecordingClient,
) -> None:
    wrapped = wrap_cell_magic(f"%%gpulens --backend host\n{MAGIC_BODY}")
    text = virtual_document([SETUP_CELL, wrapped])
    uri = "file:///gpulens-tests/clients/Untitled.ipynb.py"
    open_document(client, uri, text)
    published = await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    (finding,) = [d for d in published.diagnostics if d.code == "GPU001"]
    # on the very characters of the call inside the string, after the escaped quotes
    assert text_in(text, finding.range) == LOOP_SYNC_CALL
    assert finding.range.start.line == text.splitlines().index(
        '    label = \\"\\"\\"step\\"\\"\\"; total += (x * i).sum().item()""")'
    )

    actions = await code_actions(
        client, uri, (finding.range.start.line, finding.range.start.character + 2)
    )
    (fix,) = [a for a in actions if a.kind == "quickfix" and a.is_preferred]
    assert fix.edit is not None
    fixed = apply_text_edits(text, edits_for(fix.edit, uri))
    # the fix lands inside the cell: the cell the user sees has it, and so does no other
    cells = fixed.rstrip("\n").split("\n\n\n")
    assert cells[0] == SETUP_CELL
    assert unwrap_cell_magic(cells[1]) == (
        "%%gpulens --backend host\n"
        + MAGIC_BODY.replace("(x * i).sum().item()", "(x * i).sum().detach().double()")
        + "\ntotal = float(total)  # one sync, after the loop"
    )


async def test_the_first_line_of_a_wrapped_body_maps_past_the_call(
    client: RecordingClient,
) -> None:
    body = "for i in range(100): total += (x * i).sum().item()"
    text = virtual_document([SETUP_CELL, wrap_cell_magic(f"%%timeit\n{body}")])
    uri = "file:///gpulens-tests/clients/one-line.ipynb.py"
    open_document(client, uri, text)
    published = await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    (finding,) = [d for d in published.diagnostics if d.code == "GPU001"]
    assert text_in(text, finding.range) == LOOP_SYNC_CALL
    assert text.splitlines()[finding.range.start.line].startswith("get_ipython()")


async def test_a_cell_magic_whose_body_is_not_python_stays_a_string(
    client: RecordingClient,
) -> None:
    body = "for i in range(100):\n    total += (x * i).sum().item()"
    text = virtual_document([SETUP_CELL, wrap_cell_magic(f"%%writefile loop.py\n{body}")])
    uri = "file:///gpulens-tests/clients/writefile.ipynb.py"
    open_document(client, uri, text)
    published = await wait_for_published(client, uri)
    assert "GPU001" not in codes(published)


# ---- Neovim: empty settings, edits at the end of the file ---------------------------------------


def neovim_params(root: Path, version: str = "") -> types.InitializeParams:
    params = initialize_params(root)
    params.capabilities = client_capabilities(f"neovim{version}")
    return params


@pytest_lsp.fixture(config=server_config())
async def neovim(lsp_client: RecordingClient, tmp_path: Path):
    """A client with Neovim's capabilities whose `gpulens = {}` settings table arrives, as
    Neovim encodes an empty Lua table, as `[]`: in the answer to workspace/configuration and
    in the didChangeConfiguration Neovim sends once initialized."""
    lsp_client.set_configuration([], section="gpulens")
    await lsp_client.initialize_session(neovim_params(tmp_path))
    lsp_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"gpulens": []})
    )
    yield
    await lsp_client.shutdown_session()


async def test_empty_settings_from_neovim_warn_about_nothing(
    neovim: RecordingClient, tmp_path: Path
) -> None:
    client = neovim
    await wait_until(lambda: client.configuration_requests >= 1)
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    await still_answers(client)
    assert [m.message for m in client.messages] == []


def apply_like_neovim(text: str, edits: list[types.TextEdit]) -> str:
    """`vim.lsp.util.apply_text_edits` of Neovim 0.11 on a buffer of ASCII lines: the text is
    held as lines with an implied final line break ('eol'), and an edit that starts past
    the last line is appended as lines of its own."""
    eol = text.endswith("\n")
    lines = text.split("\n")
    if eol:
        lines.pop()
    ordered = sorted(
        enumerate(edits),
        key=lambda item: (item[1].range.start.line, item[1].range.start.character, item[0]),
        reverse=True,
    )
    fix_eol = False
    for _, edit in ordered:
        new = edit.new_text.split("\n")
        start, end = edit.range.start, edit.range.end
        if len(lines) <= start.line:
            lines[len(lines) : len(lines)] = new
            continue
        end_line, end_column = end.line, end.character
        if len(lines) <= end_line:
            end_line, end_column = len(lines) - 1, len(lines[-1])
            fix_eol = True
        before = lines[start.line][: start.character]
        after = lines[end_line][min(end_column, len(lines[end_line])) :]
        new = [before + new[0], *new[1:]]
        new[-1] += after
        lines[start.line : end_line + 1] = new
    if fix_eol and eol and lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + ("\n" if eol else "")


async def test_a_quick_fix_at_the_end_of_the_file_adds_no_blank_line(
    neovim: RecordingClient, tmp_path: Path
) -> None:
    client = neovim
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)  # the loop ends the file: the fix adds a line after
    published = await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    (finding,) = [d for d in published.diagnostics if d.code == "GPU001"]
    actions = await code_actions(client, uri, (finding.range.start.line, 20))
    (fix,) = [a for a in actions if a.kind == "quickfix" and a.is_preferred]
    if fix.edit is None:
        fix = await client.code_action_resolve_async(fix)
    assert fix.edit is not None
    edits = edits_for(fix.edit, uri)
    expected = (
        LOOP_SYNC.replace(LOOP_SYNC_CALL, "(x * i).sum().detach().double()")
        + "total = float(total)  # one sync, after the loop\n"
    )
    assert apply_text_edits(LOOP_SYNC, edits) == expected  # applied exactly, as VS Code does
    assert apply_like_neovim(LOOP_SYNC, edits) == expected


# ---- settings: the section removed, one request per change -------------------------------------


async def settings_change(client: RecordingClient, section: object) -> None:
    """The workspace's gpulens section becomes ``section`` (None: there is none), the client
    says so, and the server has asked for it and had a moment to take the answer."""
    asked = client.configuration_requests
    if section is None:
        client.set_configuration({})
    else:
        client.set_configuration(section, section="gpulens")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_until(lambda: client.configuration_requests > asked)
    await asyncio.sleep(0.1)


async def test_removing_the_section_restores_the_defaults(
    client: RecordingClient, tmp_path: Path
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    count = len(client.published[uri])
    await settings_change(client, {"rules": {"ignore": ["GPU001"]}})
    await wait_for_published(client, uri, lambda p: "GPU001" not in codes(p), after=count)
    count = len(client.published[uri])
    await settings_change(client, None)
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p), after=count)


@pytest_lsp.fixture(config=server_config())
async def neovim_0_7(lsp_client: RecordingClient, tmp_path: Path):
    """Neovim 0.7: it answers no workspace/configuration (it does not say it can), and pushes
    all its settings in didChangeConfiguration, an empty table as []."""
    await lsp_client.initialize_session(neovim_params(tmp_path, "@v0.7.0"))
    yield
    await lsp_client.shutdown_session()


async def test_a_client_that_only_pushes_can_remove_the_section(
    neovim_0_7: RecordingClient, tmp_path: Path
) -> None:
    client = neovim_0_7
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    count = len(client.published[uri])
    ignore = {"gpulens": {"rules": {"ignore": ["GPU001"]}}}
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=ignore))
    await wait_for_published(client, uri, lambda p: "GPU001" not in codes(p), after=count)
    count = len(client.published[uri])
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=[]))
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p), after=count)
    assert client.configuration_requests == 0


async def test_one_configuration_request_per_change(client: RecordingClient) -> None:
    await wait_until(lambda: client.configuration_requests >= 1)
    await asyncio.sleep(0.5)
    assert client.configuration_requests == 1, "asked more than once after initialized"
    for expected in (2, 3):
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await wait_until(lambda: client.configuration_requests >= expected)  # noqa: B023
        await asyncio.sleep(0.5)
        assert client.configuration_requests == expected


# ---- hover in plain text; didSave --------------------------------------------------------------


@pytest_lsp.fixture(config=server_config())
async def plain_text_client(lsp_client: RecordingClient, tmp_path: Path):
    """A client that prefers plain-text hover (Emacs without markdown-mode asks for it)."""
    params = initialize_params(tmp_path)
    assert params.capabilities.text_document is not None
    params.capabilities.text_document.hover = types.HoverClientCapabilities(
        content_format=[types.MarkupKind.PlainText, types.MarkupKind.Markdown]
    )
    lsp_client.set_configuration({}, section="gpulens")
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def test_hover_is_plain_text_for_a_client_that_asks_for_it(
    plain_text_client: RecordingClient, tmp_path: Path
) -> None:
    client = plain_text_client
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    published = await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
    (finding,) = [d for d in published.diagnostics if d.code == "GPU001"]
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=finding.range.start.line, character=20),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.PlainText
    value = hover.contents.value
    assert value.startswith("GPU001 ")
    assert "**" not in value and "```" not in value and "`" not in value
    # the rule's good example, as an indented block
    assert "\n    total = torch.zeros((), device=device)\n" in value


async def test_did_save_is_taken_without_a_word(
    client: RecordingClient, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    uri = uri_in(tmp_path)
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri)
    for _ in range(3):
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
    await still_answers(client)
    await asyncio.sleep(0.3)  # the server's stderr reaches this process through a pipe
    assert "didSave" not in capfd.readouterr().err
    assert not [m for m in client.log_messages if "didSave" in m.message]
