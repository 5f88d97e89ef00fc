from __future__ import annotations

import json
import os
import subprocess
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


def test_the_working_directory_never_shadows_gpulens_or_the_standard_library(
    tmp_path: Path,
) -> None:
    """A folder holding `json.py` and a `gpulens/` package is where the user runs the CLI
    from: neither may run. The script still sees what `python script.py` gives it: its own
    folder first on sys.path, and PYTHONPATH as the user set it."""
    planted = tmp_path / "planted"
    (planted / "gpulens").mkdir(parents=True)
    (planted / "gpulens" / "__init__.py").write_text("raise SystemExit('planted gpulens ran')\n")
    (planted / "json.py").write_text("raise SystemExit('planted json ran')\n")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    script = scripts / "where.py"
    script.write_text(
        "import json, os, sys\n"
        "print(json.dumps([sys.path[0], os.getcwd(), os.environ.get('PYTHONPATH'),"
        " json.__file__]))\n"
    )
    user_path = str(tmp_path / "user-libs")
    out = tmp_path / "report.json"
    # the installed command, as a user runs it (`python -m gpulens` would itself import
    # from the working directory, before gpulens runs)
    command = str(Path(sys.executable).with_name("gpulens"))
    if not Path(command).exists():  # a checkout on PYTHONPATH, not installed (device machine)
        pytest.skip("the gpulens command is not installed beside this interpreter")
    done = subprocess.run(
        [command, "profile", str(script), "--backend", "host", "--format", "json", "-o", str(out)],
        cwd=planted,
        env={**os.environ, "PYTHONPATH": user_path},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "planted" not in done.stderr
    payload = json.loads(out.read_text())
    assert payload["error"] is None, payload["error"]
    first, cwd, python_path, json_file = json.loads(payload["output"])
    assert first == str(scripts)
    assert cwd == str(planted)  # the CLI runs the script where the user is
    assert python_path == user_path
    assert not json_file.startswith(str(planted))
