"""A real client (pytest-lsp) driving `python -m gpulens serve` over stdio."""

from __future__ import annotations

from pathlib import Path

import pytest_lsp
from lsp_helpers import RecordingClient, initialize_params, server_config


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: RecordingClient, tmp_path: Path):
    """A VS Code-like client, initialized, with a `gpulens` settings section it can change."""
    lsp_client.set_configuration({}, section="gpulens")
    lsp_client.initialize_result = await lsp_client.initialize_session(initialize_params(tmp_path))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config(), scope="module")
async def shared_client(lsp_client: RecordingClient, tmp_path_factory):
    """One server for a whole module of tests that change no server-wide state (each test
    opens its own documents): a fresh process per test would triple the suite's time."""
    root = tmp_path_factory.mktemp("shared")
    lsp_client.set_configuration({}, section="gpulens")
    lsp_client.initialize_result = await lsp_client.initialize_session(initialize_params(root))
    yield
    await lsp_client.shutdown_session()
