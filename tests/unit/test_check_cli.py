"""`gpulens check` end to end: real `python -m gpulens check` runs and in-process `main()` calls.

The plumbing tests (discovery, formats, exit codes, --fix mechanics, notebooks) run against a
stand-in rule set installed by the `stand_in_rules` fixture, so they hold whatever the real
rules do; the tests at the end run the real rules on realistic code.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulens.analysis import Edit, Finding, Fix, Severity, Span
from gpulens.analysis.rules import RULES, Rule
from gpulens.cli import main
from gpulens.commands._files import Patterns, discover

LOOP_SYNC = """\
import torch
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
"""


# ---- helpers --------------------------------------------------------------------------------


def run_cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpulens", "check", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def run_main(
    args: list[str], cwd: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    status = main(["check", *args])
    out, err = capsys.readouterr()
    return status, out, err


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def stand_in_walk(tree: ast.Module, source, config, memo=None) -> tuple[list[Finding], list[str]]:  # type: ignore[no-untyped-def]
    """GPU001 (warning) on every `.item()`, its fix deletes the call; GPU007 (info, no fix)
    on every `.cuda()`. Enough to drive every path of the command."""
    findings: list[Finding] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        span = source.span(node)
        if node.func.attr == "item":
            receiver = source.span(node.func.value)
            cut = Edit(
                Span(receiver.end_line, receiver.end_column, span.end_line, span.end_column), ""
            )
            fix = Fix("Keep the value on the GPU", (cut,))
            findings.append(Finding("GPU001", Severity.WARNING, "sync in a loop", span, (fix,)))
        elif node.func.attr == "cuda":
            findings.append(Finding("GPU007", Severity.INFO, "hard-coded device", span))
    return findings, []


@pytest.fixture
def stand_in_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulens.analysis import walker

    monkeypatch.setattr(walker, "walk_module", stand_in_walk)
    for code, severity in (("GPU001", Severity.WARNING), ("GPU007", Severity.INFO)):
        if code not in RULES:  # --select checks codes against the registered rules
            monkeypatch.setitem(RULES, code, Rule(code, "stand-in", severity, "", ""))


# ---- exit status and formats without findings -------------------------------------------------


def test_clean_file_passes_with_exit_0(tmp_path: Path) -> None:
    write(tmp_path / "clean.py", "import torch\nprint('hello')\n")
    result = run_cli("clean.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "All checks passed."


def test_json_without_findings_is_an_empty_array(tmp_path: Path) -> None:
    write(tmp_path / "clean.py", "value = 1\n")
    result = run_cli("--format", "json", "clean.py", cwd=tmp_path)
    assert result.returncode == 0
    assert json.loads(result.stdout) == []


def test_help_explains_notebook_positions(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gpulens", "check", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "cell N:LINE:COL" in result.stdout
    assert "--fix" in result.stdout


def test_missing_path_exits_2(tmp_path: Path) -> None:
    result = run_cli("nowhere.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "nowhere.py: no such file or folder" in result.stderr


def test_bad_select_code_exits_2_before_any_work(tmp_path: Path) -> None:
    write(tmp_path / "a.py", "x = 1\n")
    result = run_cli("--select", "GPU001,FOO", "a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "FOO" in result.stderr
    assert "All checks passed" not in result.stdout


@pytest.mark.usefixtures("stand_in_rules")
def test_select_of_a_code_no_rule_has_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "a.py", "x = 1\n")
    status, _, err = run_main(["--select", "GPU999", "a.py"], tmp_path, capsys, monkeypatch)
    assert status == 2
    assert "GPU999 names no gpulens rule" in err


def test_unknown_pyproject_key_exits_2_with_the_key(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.gpulens]\nselekt = ["GPU001"]\n')
    write(tmp_path / "a.py", "x = 1\n")
    result = run_cli("a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "selekt" in result.stderr
    assert "pyproject.toml" in result.stderr


def test_invalid_toml_with_gpulens_table_exits_2(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.gpulens]\nselect = ["GPU001"\n')
    write(tmp_path / "a.py", "x = 1\n")
    result = run_cli("a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "not valid TOML" in result.stderr


def test_explain_of_an_unknown_code_exits_2(tmp_path: Path) -> None:
    result = run_cli("--explain", "GPU999", cwd=tmp_path)
    assert result.returncode == 2
    assert "GPU999 is not a gpulens rule code" in result.stderr


def test_explain_prints_the_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = "Each `.item()` waits for the GPU.\n\n**Bad:** ...\n\n**Good:** ..."
    rule = Rule("GPU901", "stand-in", Severity.WARNING, "A stand-in rule.", doc)
    monkeypatch.setitem(RULES, "GPU901", rule)
    status, out, _ = run_main(["--explain", "gpu901"], tmp_path, capsys, monkeypatch)
    assert status == 0
    assert out.startswith("GPU901: stand-in (warning)")
    assert "**Good:**" in out


@pytest.mark.usefixtures("stand_in_rules")
def test_non_utf8_file_exits_2_and_the_others_are_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "latin.py").write_bytes(b"caf\xe9 = 1\n")
    write(tmp_path / "loop.py", LOOP_SYNC)
    status, out, err = run_main(["."], tmp_path, capsys, monkeypatch)
    assert status == 2
    assert "latin.py: not valid UTF-8 (byte 0xe9 on line 1)" in err
    assert "loop.py:5:14: GPU001" in out


@pytest.mark.usefixtures("stand_in_rules")
def test_declared_latin1_file_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "old.py").write_bytes(b"# -*- coding: latin-1 -*-\ncaf\xe9 = t.item()\n")
    status, out, err = run_main(["old.py"], tmp_path, capsys, monkeypatch)
    assert status == 1, err
    assert "old.py:2:8: GPU001" in out


# ---- findings: text, JSON, selection (stand-in rules) -----------------------------------------


@pytest.mark.usefixtures("stand_in_rules")
def test_text_lines_are_one_based_with_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "loop.py", LOOP_SYNC + "model.cuda()\n")
    status, out, _ = run_main(["loop.py"], tmp_path, capsys, monkeypatch)
    assert status == 1
    assert out.splitlines() == [
        "loop.py:5:14: GPU001 [*] sync in a loop",
        "loop.py:6:1: GPU007 hard-coded device",
        "Found 2 problems (1 fixable with --fix).",
    ]


@pytest.mark.usefixtures("stand_in_rules")
def test_info_findings_alone_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "a.py", "model.cuda()\n")
    status, out, _ = run_main(["a.py"], tmp_path, capsys, monkeypatch)
    assert status == 0
    assert "a.py:1:1: GPU007" in out


@pytest.mark.usefixtures("stand_in_rules")
def test_json_fields_positions_and_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "b.py", "a.item()\n")
    write(tmp_path / "a.py", "m.cuda(); n.item()\n")
    status, out, _ = run_main(["--format", "json", "."], tmp_path, capsys, monkeypatch)
    assert status == 1
    findings = json.loads(out)
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in findings] == [
        ("a.py", 1, 1, "GPU007"),
        ("a.py", 1, 11, "GPU001"),
        ("b.py", 1, 1, "GPU001"),
    ]
    first_sync = findings[1]
    assert first_sync == {
        "path": "a.py",
        "line": 1,
        "column": 11,
        "end_line": 1,
        "end_column": 19,
        "code": "GPU001",
        "severity": "warning",
        "message": "sync in a loop",
        "fixes": [
            {
                "title": "Keep the value on the GPU",
                "safe": True,
                "edits": [
                    {"line": 1, "column": 12, "end_line": 1, "end_column": 19, "new_text": ""}
                ],
            }
        ],
    }


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--select", "GPU001"], {"GPU001"}),
        (["--ignore", "GPU001"], {"GPU007"}),
        (["--select", "GPU00"], {"GPU001", "GPU007"}),
        (["--select", "GPU007", "--ignore", "GPU00"], set()),
    ],
)
@pytest.mark.usefixtures("stand_in_rules")
def test_select_and_ignore(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    expected: set[str],
) -> None:
    write(tmp_path / "a.py", "m.cuda(); n.item()\n")
    _, out, _ = run_main([*args, "--format", "json", "a.py"], tmp_path, capsys, monkeypatch)
    assert {f["code"] for f in json.loads(out)} == expected


@pytest.mark.usefixtures("stand_in_rules")
def test_pyproject_config_applies_and_the_command_line_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "pyproject.toml", '[tool.gpulens]\nignore = ["GPU001"]\n')
    write(tmp_path / "pkg" / "a.py", "m.cuda(); n.item()\n")
    _, out, _ = run_main(["--format", "json", "pkg"], tmp_path, capsys, monkeypatch)
    assert {f["code"] for f in json.loads(out)} == {"GPU007"}
    _, out, _ = run_main(
        ["--format", "json", "--select", "GPU001", "pkg"], tmp_path, capsys, monkeypatch
    )
    assert {f["code"] for f in json.loads(out)} == {"GPU001"}


@pytest.mark.usefixtures("stand_in_rules")
def test_syntax_error_file_is_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "half.py", LOOP_SYNC + "def broken(:\n    pass\n")
    status, out, err = run_main(["half.py"], tmp_path, capsys, monkeypatch)
    assert status == 1
    assert "half.py:5:14: GPU001" in out
    assert "half.py:6:" in err
    assert "syntax error" in err
    assert "checked the parts that parse" in err
    assert "Found 1 problem " in out  # the syntax error is not counted as a finding


# ---- --fix ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("stand_in_rules")
def test_fix_rewrites_and_a_second_run_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "loop.py", LOOP_SYNC + "model.cuda()\n")
    status, out, _ = run_main(["--fix", "loop.py"], tmp_path, capsys, monkeypatch)
    assert status == 0  # the info finding that remains does not block
    assert path.read_text() == LOOP_SYNC.replace(".sum().item()", ".sum()") + "model.cuda()\n"
    assert "Found 2 problems (1 fixed, 1 remaining)." in out
    before = path.stat().st_mtime_ns
    status, out, _ = run_main(["--fix", "loop.py"], tmp_path, capsys, monkeypatch)
    assert path.stat().st_mtime_ns == before  # nothing to change: not written
    assert "Found 1 problem." in out


@pytest.mark.usefixtures("stand_in_rules")
def test_fix_repeats_until_stable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the edits of nested findings overlap: one per round
    path = write(tmp_path / "nested.py", "v = t.item().item().item()\n")
    status, out, _ = run_main(["--fix", "nested.py"], tmp_path, capsys, monkeypatch)
    assert status == 0
    assert path.read_text() == "v = t\n"
    assert "3 fixed, 0 remaining" in out


@pytest.mark.usefixtures("stand_in_rules")
def test_fix_keeps_crlf_and_declared_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "win.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\r\ncaf\xe9 = t.item()\r\nz = 1\r\n")
    status, _, err = run_main(["--fix", "win.py"], tmp_path, capsys, monkeypatch)
    assert status == 0, err
    assert path.read_bytes() == b"# -*- coding: latin-1 -*-\r\ncaf\xe9 = t\r\nz = 1\r\n"


@pytest.mark.usefixtures("stand_in_rules")
def test_fix_leaves_the_text_after_a_syntax_error_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "a = t.item()\nif x\n    b = u.item()\nc = w.item()\n"
    path = write(tmp_path / "half.py", text)
    run_main(["--fix", "half.py"], tmp_path, capsys, monkeypatch)
    assert path.read_text() == text.replace("t.item()", "t")


def test_fix_refuses_an_edit_that_breaks_the_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gpulens.analysis import walker

    def breaking_walk(tree, source, config, memo=None):  # type: ignore[no-untyped-def]
        if not any(isinstance(n, ast.Call) for n in ast.walk(tree)):
            return [], []
        edit = Edit(source.span(tree.body[0]), "def (:")
        bad = Finding(
            "GPU001", Severity.WARNING, "m", source.span(tree.body[0]), (Fix("t", (edit,)),)
        )
        return [bad], []

    monkeypatch.setattr(walker, "walk_module", breaking_walk)
    path = write(tmp_path / "a.py", "f()\n")
    status, _, err = run_main(["--fix", "a.py"], tmp_path, capsys, monkeypatch)
    assert path.read_text() == "f()\n"
    assert "invalid Python" in err
    assert status == 1


@pytest.mark.usefixtures("stand_in_rules")
def test_stdin_is_checked_under_its_given_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    stdin = io.TextIOWrapper(io.BytesIO(b"v = t.item()\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    status, out, _ = run_main(["--stdin-filename", "pkg/x.py"], tmp_path, capsys, monkeypatch)
    assert status == 1
    assert out.startswith("pkg/x.py:1:5: GPU001")
    bad = run_cli("-", cwd=tmp_path, stdin="def f(:\n")
    assert "-:1:7: syntax error" in bad.stderr


def test_fix_on_stdin_prints_the_fixed_text(tmp_path: Path) -> None:
    result = run_cli("--fix", "--stdin-filename", "x.py", "-", cwd=tmp_path, stdin="v = 1\n")
    assert result.returncode == 0
    assert result.stdout == "v = 1\n"
    assert "All checks passed." in result.stderr


# ---- discovery ------------------------------------------------------------------------------


def _found(
    arguments: list[str], root: Path, excludes: list[str] = (), force: bool = False
) -> list[str]:  # type: ignore[assignment]
    patterns = Patterns.of(list(excludes), root.resolve())
    found = discover(
        [str(root / a) for a in arguments],
        lambda folder: (patterns,) if patterns else (),
        force_exclude=force,
    )
    return sorted(t.absolute.relative_to(root.resolve()).as_posix() for t in found.files)


def test_walk_honours_gitignore_files_and_default_skips(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".gitignore", "generated/\n*_pb2.py\n")
    write(tmp_path / "src" / ".gitignore", "scratch.py\n!keep_pb2.py\n")
    for name in [
        "src/model.py",
        "src/scratch.py",
        "src/keep_pb2.py",
        "src/other_pb2.py",
        "generated/x.py",
        "nb/train.ipynb",
        "notes.txt",
        ".venv/lib/x.py",
        "build/y.py",
        "pkg/__pycache__/z.py",
        "lib/site-packages/w.py",
        "node_modules/n.py",
    ]:
        write(tmp_path / name, "x = 1\n")
    assert _found(["."], tmp_path) == ["nb/train.ipynb", "src/keep_pb2.py", "src/model.py"]
    # a walk below the top still honours the top-level .gitignore
    assert _found(["src"], tmp_path) == ["src/keep_pb2.py", "src/model.py"]
    # a folder named on the command line is checked even when ignored or a default skip
    assert _found(["generated"], tmp_path) == ["generated/x.py"]
    assert _found(["build"], tmp_path) == ["build/y.py"]


def test_named_files_are_checked_even_when_ignored_unless_forced(tmp_path: Path) -> None:
    write(tmp_path / ".gitignore", "scratch.py\n")
    (tmp_path / ".git").mkdir()
    write(tmp_path / "scratch.py", "x = 1\n")
    write(tmp_path / "gen" / "g.py", "x = 1\n")
    assert _found(["scratch.py"], tmp_path) == ["scratch.py"]
    assert _found(["gen/g.py"], tmp_path, ["gen/"]) == ["gen/g.py"]
    assert _found(["gen/g.py"], tmp_path, ["gen/"], force=True) == []
    assert _found(["."], tmp_path, ["gen/"]) == []


@pytest.mark.usefixtures("stand_in_rules")
def test_exclude_option_and_config_exclude(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "pyproject.toml", '[tool.gpulens]\nexclude = ["vendored/"]\n')
    for name in ("main.py", "vendored/v.py", "legacy/old.py"):
        write(tmp_path / name, "t.item()\n")
    _, out, _ = run_main(
        ["--format", "json", "--exclude", "legacy", "."], tmp_path, capsys, monkeypatch
    )
    assert [f["path"] for f in json.loads(out)] == ["main.py"]


@pytest.mark.usefixtures("stand_in_rules")
def test_parallel_and_sequential_runs_agree(tmp_path: Path) -> None:
    from gpulens.analysis import DEFAULT_CONFIG
    from gpulens.commands._check_file import Job
    from gpulens.commands.check import run_jobs

    jobs = []
    for index in range(40):
        path = write(tmp_path / f"m{index:02}.py", "a = 1\n" * index + "t.item()\n")
        jobs.append(Job(path.name, str(path), DEFAULT_CONFIG, False, False))
    sequential = run_jobs(jobs, workers=1)
    parallel = run_jobs(jobs, workers=2)
    assert [(r.path, r.findings) for r in parallel] == [(r.path, r.findings) for r in sequential]
    assert sum(len(r.findings) for r in parallel) == 40


# ---- notebooks ------------------------------------------------------------------------------


def notebook(*cells: tuple[str, str]) -> dict[str, object]:
    return {
        "cells": [
            {
                "cell_type": kind,
                "metadata": {"tags": ["x"]},
                "source": source.splitlines(keepends=True),
                **({"execution_count": None, "outputs": []} if kind == "code" else {}),
            }
            for kind, source in cells
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def jupyter_json(data: object) -> str:
    # what nbformat.write produces
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


NOTEBOOK = notebook(
    ("code", "import torch\nx = torch.ones(3, device='cuda')"),
    ("markdown", "# Training — ünïcode"),
    ("code", "%%time\nfor i in range(3):\n    print(x.sum().item())"),
)


@pytest.mark.usefixtures("stand_in_rules")
def test_notebook_positions_are_cell_relative(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "nb.ipynb", jupyter_json(NOTEBOOK))
    status, out, _ = run_main(["nb.ipynb"], tmp_path, capsys, monkeypatch)
    assert status == 1
    assert out.splitlines()[0] == "nb.ipynb:cell 3:3:11: GPU001 [*] sync in a loop"
    _, out, _ = run_main(["--format", "json", "nb.ipynb"], tmp_path, capsys, monkeypatch)
    (finding,) = json.loads(out)
    assert (finding["cell"], finding["line"], finding["column"]) == (3, 3, 11)
    assert finding["fixes"][0]["edits"][0]["line"] == 3


@pytest.mark.usefixtures("stand_in_rules")
def test_notebook_fix_rewrites_cell_sources_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "nb.ipynb", jupyter_json(NOTEBOOK))
    status, _, _ = run_main(["--fix", "nb.ipynb"], tmp_path, capsys, monkeypatch)
    assert status == 0
    expected = json.loads(jupyter_json(NOTEBOOK))
    expected["cells"][2]["source"] = ["%%time\n", "for i in range(3):\n", "    print(x.sum())"]
    assert path.read_text(encoding="utf-8") == jupyter_json(expected)
    before = path.stat().st_mtime_ns
    run_main(["--fix", "nb.ipynb"], tmp_path, capsys, monkeypatch)
    assert path.stat().st_mtime_ns == before


def test_notebook_that_is_not_json_exits_2(tmp_path: Path) -> None:
    write(tmp_path / "broken.ipynb", "{not json")
    result = run_cli("broken.ipynb", cwd=tmp_path)
    assert result.returncode == 2
    assert "broken.ipynb: not a notebook" in result.stderr


# ---- the real rules on realistic code -------------------------------------------------------

needs_rules = pytest.mark.skipif(
    "GPU001" not in RULES, reason="the GPU001 rule is not registered in this build"
)


@needs_rules
def test_real_rules_find_the_sync_in_a_loop(tmp_path: Path) -> None:
    write(tmp_path / "train.py", LOOP_SYNC)
    result = run_cli("--format", "json", "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    codes = {(f["code"], f["line"]) for f in json.loads(result.stdout)}
    assert ("GPU001", 5) in codes


@needs_rules
def test_real_fix_is_idempotent(tmp_path: Path) -> None:
    path = write(tmp_path / "train.py", LOOP_SYNC)
    first = run_cli("--fix", "train.py", cwd=tmp_path)
    fixed = path.read_text()
    assert fixed != LOOP_SYNC, first.stdout + first.stderr
    compile(fixed, "train.py", "exec")
    second = run_cli("--fix", "--format", "json", "train.py", cwd=tmp_path)
    assert path.read_text() == fixed
    assert "GPU001" not in {f["code"] for f in json.loads(second.stdout)}


def test_small_runs_stay_in_one_process() -> None:
    from gpulens.commands.check import PARALLEL_MIN_BYTES, _worker_count

    assert _worker_count([1000] * 200) == 1  # many files, little source
    assert _worker_count([PARALLEL_MIN_BYTES]) == 1  # one file cannot be shared out
    expected = min(2, len(os.sched_getaffinity(0)))
    assert _worker_count([PARALLEL_MIN_BYTES // 4] * 8) == expected
