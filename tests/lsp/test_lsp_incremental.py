"""The editor and `gpulens check` agree after the incremental analysis has seen a syntax error.

A real client types a syntax error into a document and takes it back; the diagnostics the
server publishes for the repaired text are those `gpulens check --format json` prints for it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_helpers import RecordingClient, change_document, open_document, wait_for_published
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

# Hard-coded devices in a function of a file with no device variable (GPU007, whose fix
# defines one after the imports, so it needs the whole file to parse), a loader batch copied
# without non_blocking (GPU006) and a sync in a loop (GPU001), then module-level statements
# where the syntax error is typed.
TEXT = """\
import torch
from torch.utils.data import DataLoader


def build():
    model = Net().cuda()
    x = load().cuda()
    y = torch.empty(3, device="cuda")
    return model, x, y


def train(model, loader):
    for batch in loader:
        out = model(batch.cuda())
        print(out.sum().item())


EPOCHS = 3
loader = DataLoader(dataset, batch_size=64)
if __name__ == "__main__":
    train(*build())
"""
BROKEN_LINE = TEXT.splitlines().index("EPOCHS = 3")


def check_json(text: str, folder: Path) -> list[dict[str, Any]]:
    path = folder / "typed.py"
    path.write_text(text, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "gpulens", "check", "--format", "json", path.name],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr
    return json.loads(run.stdout)


def as_check_prints(diagnostic: types.Diagnostic) -> tuple[object, ...]:
    """A diagnostic in `gpulens check --format json` terms (1-based; the text is ASCII, so
    UTF-16 columns are code points)."""
    start, end = diagnostic.range.start, diagnostic.range.end
    severity = {1: "error", 2: "warning", 3: "info", 4: "hint"}[int(diagnostic.severity or 0)]
    fixable = bool((diagnostic.data or {}).get("fixable"))
    return (
        start.line + 1,
        start.character + 1,
        end.line + 1,
        end.character + 1,
        diagnostic.code,
        severity,
        diagnostic.message,
        fixable,
    )


def as_printed(finding: dict[str, Any]) -> tuple[object, ...]:
    return (
        finding["line"],
        finding["column"],
        finding["end_line"],
        finding["end_column"],
        finding["code"],
        finding["severity"],
        finding["message"],
        any(fix["safe"] for fix in finding["fixes"]),
    )


async def test_after_a_syntax_error_and_its_repair_the_editor_agrees_with_check(
    shared_client: RecordingClient, tmp_path: Path
) -> None:
    uri = (tmp_path / "typed.py").as_uri()
    open_document(shared_client, uri, TEXT)
    first = await wait_for_published(shared_client, uri, lambda p: p.version == 1)
    assert "GPU007" in {d.code for d in first.diagnostics}

    # `EPOCHS = 3(`: the file stops parsing below the functions, which did not change
    end = len("EPOCHS = 3")
    change_document(shared_client, uri, 2, "(", start=(BROKEN_LINE, end))
    broken = await wait_for_published(shared_client, uri, lambda p: p.version == 2)
    assert "GPU007" not in {d.code for d in broken.diagnostics}  # its fix needs the whole file

    change_document(shared_client, uri, 3, "", start=(BROKEN_LINE, end), end=(BROKEN_LINE, end + 1))
    repaired = await wait_for_published(shared_client, uri, lambda p: p.version == 3)

    printed = sorted(as_printed(f) for f in check_json(TEXT, tmp_path))
    assert sorted(as_check_prints(d) for d in repaired.diagnostics) == printed
    assert sorted(as_check_prints(d) for d in first.diagnostics) == printed
