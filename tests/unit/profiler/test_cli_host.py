"""The CLI end to end with the host backend: real subprocesses, real line numbers."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpulens.profiler.schema import SCHEMA

SCRIPT = textwrap.dedent(
    """\
    import sys
    base = 10
    # %%
    def square(v):
        return v * v

    total = 0
    for i in range(base):
        total += square(i)
    print("total", total, sys.argv[1:])
    # %%
    {cell2}
    """
)


def run_cli(tmp_path: Path, cell2: str, *extra: str) -> tuple[int, dict, str]:
    script = tmp_path / "work.py"
    script.write_text(SCRIPT.format(cell2=cell2))
    out = tmp_path / "out.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpulens",
            "profile",
            str(script),
            "--format",
            "json",
            "-o",
            str(out),
            "--backend",
            "host",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    payload = json.loads(out.read_text()) if out.exists() else {}
    return done.returncode, payload, done.stderr


def by_line(payload: dict) -> dict[int, dict]:
    return {line["line"]: line for line in payload["lines"]}


def test_cell_with_nested_function_and_loop(tmp_path: Path) -> None:
    code, payload, _ = run_cli(tmp_path, "pass", "--cell", "1", "--", "a", "b")
    assert code == 0
    assert payload["schema"] == SCHEMA
    assert payload["backend"] == "host"
    assert payload["source"]["cell"] == 1 and payload["source"]["first_line"] == 3
    lines = by_line(payload)
    assert lines[5]["hits"] == 10  # the function body, once per call (file line numbers)
    assert lines[9]["hits"] == 10
    assert lines[8]["hits"] == 11  # the loop header: 10 iterations and the exit
    assert "total 285 ['a', 'b']" in payload["output"]
    assert payload["error"] is None


def test_raising_cell_still_reports_the_lines_that_ran(tmp_path: Path) -> None:
    code, payload, _ = run_cli(
        tmp_path, "x = base * 2\nraise ValueError('bad input')\ny = 3", "--cell", "2"
    )
    assert code == 1
    error = payload["error"]
    assert isinstance(error.pop("at"), float)  # when it raised (a job's first failure)
    assert error == {"type": "ValueError", "message": "bad input", "line": 13}
    lines = by_line(payload)
    assert lines[12]["hits"] == 1 and 14 not in lines


def test_cell_that_hangs_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    code, payload, _ = run_cli(
        tmp_path,
        "import time\nwhile True:\n    time.sleep(0.01)",
        "--line",
        "13",
        "--timeout",
        "1.5",
    )
    assert code == 1
    assert payload["error"]["type"] == "Timeout"
    assert "1.5 s timeout" in payload["error"]["message"]
    assert by_line(payload)[14]["hits"] > 10  # the interrupted loop ran and is reported


def test_cell_calling_sys_exit(tmp_path: Path) -> None:
    code, payload, _ = run_cli(tmp_path, "import sys\nsys.exit(3)", "--cell", "2")
    assert code == 1
    assert payload["error"]["type"] == "SystemExit"
    assert "sys.exit(3)" in payload["error"]["message"]
    assert payload["error"]["line"] == 13


def test_cell_calling_os_exit(tmp_path: Path) -> None:
    code, payload, _ = run_cli(tmp_path, "import os\nprint('bye')\nos._exit(7)", "--cell", "2")
    assert code == 1
    assert payload["error"]["type"] == "InterpreterExit"
    assert "status 7" in payload["error"]["message"]
    assert "bye" in payload["output"]


def test_missing_cell_is_a_usage_error(tmp_path: Path) -> None:
    code, payload, stderr = run_cli(tmp_path, "pass", "--cell", "7")
    assert code == 2 and not payload
    assert "has no cell 7" in stderr


def test_memory_views_are_chosen_by_name(tmp_path: Path) -> None:
    """`--memory off|reserved|all` (`--no-memory` is `off`); another name is a usage error
    that lists the choices, and nothing runs."""
    for option in (["--memory", "all"], ["--memory", "off"], ["--no-memory"]):
        code, payload, stderr = run_cli(tmp_path, "pass", "--cell", "2", *option)
        assert code == 0, stderr
        assert payload["lines"]
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    code, payload, stderr = run_cli(wrong, "print('ran')", "--cell", "2", "--memory", "most")
    assert code == 2 and not payload
    assert "--memory" in stderr and "'reserved', 'all'" in stderr


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_text_and_html_reports(tmp_path: Path, fmt: str) -> None:
    script = tmp_path / "work.py"
    script.write_text(SCRIPT.format(cell2="z = [i * i for i in range(5)]"))
    done = subprocess.run(
        [sys.executable, "-m", "gpulens", "profile", str(script), "--cell", "2", "--format", fmt],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    if fmt == "text":
        assert "z = [i * i for i in range(5)]" in done.stdout
        assert "Hits" in done.stdout and "host backend" in done.stdout
    else:
        assert done.stdout.startswith("<!DOCTYPE html>") and "</html>" in done.stdout
        assert "<script" not in done.stdout and "http" not in done.stdout  # self-contained


def test_text_format_shows_the_scripts_output_as_it_comes(tmp_path: Path) -> None:
    script = tmp_path / "slow.py"
    script.write_text("import time\nprint('first step done', flush=True)\ntime.sleep(30)\n")
    cli = subprocess.Popen(
        [sys.executable, "-m", "gpulens", "profile", str(script), "--backend", "host"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert cli.stderr is not None
        # the script sleeps 30 s after printing: the line must come long before that
        readable, _, _ = select.select([cli.stderr], [], [], 10)
        assert readable, "the output waited for the end of the run"
        assert cli.stderr.readline() == "first step done\n"
    finally:
        cli.terminate()
        cli.wait(timeout=30)


def test_a_torch_without_cuda_beside_the_script_falls_back_to_host_timing(tmp_path: Path) -> None:
    """A `torch.py` next to the script (a shadowing file, or a torch build without CUDA
    support) imports, but has no `torch.cuda`: the automatic backend says so and profiles
    host time; the run does not crash."""
    (tmp_path / "torch.py").write_text("version = 'not the real one'\n")
    script = tmp_path / "work.py"
    script.write_text("total = 0\nfor i in range(10):\n    total += i\n")
    out = tmp_path / "out.json"
    command = [sys.executable, "-m", "gpulens", "profile", str(script), "--format", "json"]
    done = subprocess.run(
        [*command, "-o", str(out), "--backend", "auto"],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    payload = json.loads(out.read_text())
    assert payload["error"] is None, (payload["error"], done.stderr)
    assert payload["backend"] == "host"
    assert any("torch" in w and "CUDA" in w for w in payload["warnings"]), payload["warnings"]
    assert {line["line"]: line["hits"] for line in payload["lines"]}[3] == 10
