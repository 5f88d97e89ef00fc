"""The language server gives a test file no performance findings unless the project asks
for them (`[tool.gpulens] tests = true`): the same rule as `gpulens check`."""

from __future__ import annotations

from pathlib import Path

from lsp_helpers import LOOP_SYNC, RecordingClient, codes, open_document, uri_in, wait_for_published


async def test_a_test_file_gets_no_findings(client: RecordingClient, tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    quiet = uri_in(tmp_path / "tests", "test_train.py")
    loud = uri_in(tmp_path, "train.py")
    open_document(client, quiet, LOOP_SYNC)
    open_document(client, loud, LOOP_SYNC)
    await wait_for_published(client, loud, lambda p: "GPU001" in codes(p))
    assert codes(await wait_for_published(client, quiet)) == []


async def test_a_project_that_opts_in_gets_them(client: RecordingClient, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.gpulens]\ntests = true\n")
    (tmp_path / "tests").mkdir()
    uri = uri_in(tmp_path / "tests", "test_train.py")
    open_document(client, uri, LOOP_SYNC)
    await wait_for_published(client, uri, lambda p: "GPU001" in codes(p))
