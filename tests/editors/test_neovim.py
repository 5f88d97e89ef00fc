"""Neovim's built-in LSP client, headless, against `gpulens serve`: diagnostics, a quick-fix
picked in `vim.lsp.buf.code_action`, hover, code lens, and the settings (an empty section,
a rule ignored, the section removed).

Neovim comes from the machine's packages (`setup_neovim.sh`, Debian's 0.7.2), installed on
first use as the lab UI tests install Chromium. `neovim_client.lua` does what a user would
and writes what happened as JSON; the assertions are here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SERVER = [sys.executable, "-P", "-m", "gpulens", "serve"]

# GPU001 on the call; its fix adds a line after the loop, which ends the file
TRAIN = """\
import torch
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
"""
FIXED = (
    TRAIN.replace("(x * i).sum().item()", "(x * i).sum().detach().double()")
    + "total = float(total)  # one sync, after the loop\n"
)
CELLS = """\
import torch
# %%
x = torch.randn(10, device="cuda")
# %%
print(x.sum())
"""


@pytest.fixture(scope="module")
def nvim() -> str:
    done = subprocess.run(
        [str(HERE / "setup_neovim.sh")], capture_output=True, text=True, check=False, timeout=600
    )
    assert done.returncode == 0, f"could not install Neovim: {done.stderr[-2000:]}"
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def session(nvim: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One Neovim session through every step; what it saw."""
    workspace = tmp_path_factory.mktemp("nvim-workspace")
    (workspace / "train.py").write_text(TRAIN)
    (workspace / "other.py").write_text(TRAIN)
    (workspace / "cells.py").write_text(CELLS)
    result = workspace.parent / "nvim-result.json"
    env = {
        **os.environ,
        "GPULENS_SERVER": json.dumps(SERVER),
        "GPULENS_WORKSPACE": str(workspace),
        "GPULENS_RESULT": str(result),
        "XDG_STATE_HOME": str(workspace.parent / "state"),  # Neovim's LSP log, not the user's
        "XDG_CACHE_HOME": str(workspace.parent / "cache"),
    }
    command = [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n"]
    command += ["-c", f"luafile {HERE / 'neovim_client.lua'}"]
    done = subprocess.run(
        command, cwd=workspace, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert result.exists(), f"Neovim wrote no result (exit {done.returncode}): {done.stderr}"
    seen = json.loads(result.read_text())
    seen["errors"] = seen["errors"] or {}  # Lua's empty table comes out as []
    # errors of the session as a whole; each test checks its own step
    whole = {k: v for k, v in seen["errors"].items() if k in ("start", "script", "stop")}
    assert not whole, f"{whole}\n{done.stderr}"
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True, check=True)
    seen["version"] = version.stdout.splitlines()[0]
    return seen


def completed(session: dict[str, Any], step: str) -> None:
    assert step not in session["errors"], f"{step}: {session['errors'][step]}"


def test_diagnostics_appear_on_the_call(session: dict[str, Any]) -> None:
    completed(session, "diagnostics")
    found = session["diagnostic"]
    assert (found["code"], found["source"]) == ("GPU001", "gpulens")
    line = TRAIN.splitlines()[found["lnum"]]
    assert line[found["col"] : found["end_col"]] == "(x * i).sum().item()"
    assert "every iteration" in found["message"]


def test_a_quick_fix_gives_the_fixed_file_and_nothing_more(session: dict[str, Any]) -> None:
    completed(session, "quick-fix")
    assert "Suppress GPU001 on this line" in session["offered"]
    assert session["fixed"] == FIXED  # no blank line added at the end


def test_hover_is_the_rules_text(session: dict[str, Any]) -> None:
    from gpulens.analysis.rules import RULES

    completed(session, "hover")
    hover = session["hover"]
    assert hover["kind"] == "markdown"  # Neovim prefers it
    assert hover["value"].startswith("**GPU001**")
    assert RULES["GPU001"].doc.splitlines()[0] in hover["value"]


def test_code_lenses_above_the_cells(session: dict[str, Any]) -> None:
    completed(session, "code lens")
    markers = [n for n, line in enumerate(CELLS.splitlines()) if line.startswith("# %%")]
    assert [lens["line"] for lens in session["lenses"]] == markers
    assert all(lens["title"] == "▶ Profile cell" for lens in session["lenses"])


def test_settings_apply_and_the_empty_section_warns_about_nothing(
    session: dict[str, Any],
) -> None:
    completed(session, "settings")
    assert "GPU001" not in session["ignored"]
    assert "GPU001" in session["restored"]  # the section removed: the defaults are back
    assert session["messages"] == []  # `gpulens = {}` arrives as [] and is no error
