from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpulens.profiler.runner import ProfileRequestError, plan_job, profile_cell

TEXT = "import os\n# %%\na = 1\n# %%\nb = a + 1\nprint(b)\n"


def test_plan_runs_preamble_and_earlier_cells_then_the_target() -> None:
    job = plan_job("f.py", TEXT, line=5)
    assert [chunk["first_line"] for chunk in job["setup"]] == [1, 2]
    assert job["target"] == {"cell": 2, "first_line": 4, "source": "# %%\nb = a + 1\nprint(b)\n"}


def test_plan_whole_file_without_cell() -> None:
    job = plan_job("f.py", TEXT)
    assert job["setup"] == [] and job["target"]["first_line"] == 1


def test_plan_rejects_a_line_past_the_end() -> None:
    with pytest.raises(ProfileRequestError):
        plan_job("f.py", TEXT, line=99)


def test_profile_cell_uses_the_editor_text_not_the_file(tmp_path: Path) -> None:
    path = tmp_path / "unsaved.py"
    path.write_text("raise SystemExit('stale file on disk')\n")
    payload = profile_cell(str(path), TEXT, 5, sys.executable, 30)
    assert payload["error"] is None
    assert {line["line"] for line in payload["lines"]} == {5, 6}
    assert payload["output"].strip() == "2"


def test_unknown_interpreter_gives_an_actionable_error(tmp_path: Path) -> None:
    payload = profile_cell(str(tmp_path / "x.py"), TEXT, 3, str(tmp_path / "no-python"), 30)
    assert payload["error"]["type"] == "InterpreterError"
    assert "--python" in payload["error"]["message"]
