"""`gpulens check` end to end: real `python -m gpulens check` runs and in-process `main()` calls.

Every test runs the real rules on realistic code; the expected positions are computed from
the input text. The one stand-in left is a fault injection (a fix that breaks the file),
which no real rule produces.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpulens.analysis import Edit, Finding, Fix, Severity
from gpulens.analysis.rules import RULES
from gpulens.cli import main
from gpulens.commands._files import Patterns, discover

# GPU001 (warning) with a safe fix: accumulate on the device, read once after the loop
LOOP_SYNC = """\
import torch
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
"""
SYNC = "(x * i).sum().item()"  # what GPU001 points at
# what its fix puts there: the sum stays on the device, in float64 as the Python float was
KEPT = "(x * i).sum().detach().double()"
AFTER_LOOP = "total = float(total)  # one sync, after the loop\n"  # the line its fix adds
LOOP_SYNC_FIXED = LOOP_SYNC.replace(SYNC, KEPT) + AFTER_LOOP

# GPU011 (info, no fix) at the `1` of `batch_size=1` (found as "1, pin"), then GPU001 as above
TRAINING = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(dataset, batch_size=1, pin_memory=True, num_workers=4)
x = torch.randn(10, device=device)
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
"""

# GPU001 (warning) in the loop, GPU007 (info, safe fix) on `.cuda()` with `device` defined
SYNC_AND_DEVICE = """\
import torch
device = torch.device("cuda")
x = torch.randn(10, device=device)
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
model = Net().cuda()
"""

# GPU007 alone: info, does not block
HARD_CODED = """\
import torch
device = torch.device("cuda")
model = Net().cuda()
"""

# GPU006 (add non_blocking=True) and GPU007 (`.cuda()` -> `.to(device)`) on the same call:
# their fixes overlap, so --fix needs two rounds; then GPU001 on the loop's sum
LOADER_COPY = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(dataset, batch_size=64, shuffle=True, pin_memory=True, num_workers=4)
total = 0.0
for x, y in loader:
    x = x.cuda()
    total += x.sum().item()
"""


# ---- helpers --------------------------------------------------------------------------------


def at(text: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """1-based line and column (in characters) where ``needle`` starts in ``text``."""
    index = -1
    for _ in range(occurrence):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    column = index - text.rfind("\n", 0, index)
    return line, column


def where(path: str, text: str, needle: str, occurrence: int = 1) -> str:
    line, column = at(text, needle, occurrence)
    return f"{path}:{line}:{column}"


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


def codes_in(out: str) -> list[tuple[str, int, int, str]]:
    return [(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(out)]


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


def test_select_of_a_code_no_rule_has_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "a.py", LOOP_SYNC)
    status, out, err = run_main(["--select", "GPU999", "a.py"], tmp_path, capsys, monkeypatch)
    assert status == 2
    assert "GPU999 names no gpulens rule" in err
    assert "GPU001" in err  # the known codes are listed
    assert out == ""  # nothing was checked


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
    status, out, _ = run_main(["--explain", "gpu001"], tmp_path, capsys, monkeypatch)
    assert status == 0
    assert out.startswith("GPU001: sync-in-loop (warning)\n")
    assert RULES["GPU001"].summary in out
    assert "**Bad:**" in out
    assert "**Good:**" in out


def test_non_utf8_file_exits_2_and_the_others_are_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "latin.py").write_bytes(b"caf\xe9 = 1\n")
    write(tmp_path / "loop.py", LOOP_SYNC)
    status, out, err = run_main(["."], tmp_path, capsys, monkeypatch)
    assert status == 2
    assert "latin.py: not valid UTF-8 (byte 0xe9 on line 1)" in err
    assert f"{where('loop.py', LOOP_SYNC, SYNC)}: GPU001" in out


# `café` is one character but two UTF-8 bytes: columns count characters
LATIN1 = """\
# -*- coding: latin-1 -*-
import torch
x = torch.randn(10, device="cuda")
café = 0.0
for i in range(100):
    café += (x * i).sum().item()
print(café)
"""
LATIN1_FIXED = LATIN1.replace(SYNC, KEPT).replace(
    "print(café)", "café = float(café)  # one sync, after the loop\nprint(café)"
)


def test_declared_latin1_file_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "old.py").write_bytes(LATIN1.encode("latin-1"))
    status, out, err = run_main(["old.py"], tmp_path, capsys, monkeypatch)
    assert status == 1, err
    assert at(LATIN1, SYNC) == (6, 13)
    assert out.startswith(f"{where('old.py', LATIN1, SYNC)}: GPU001 [*] `{SYNC}`")


# ---- findings: text, JSON, selection ----------------------------------------------------------


def test_text_lines_are_one_based_with_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "train.py", TRAINING)
    status, out, _ = run_main(["train.py"], tmp_path, capsys, monkeypatch)
    assert status == 1
    first, second, closing = out.splitlines()
    # GPU011 offers no fix: no [*]; GPU001's fix is safe: [*]
    assert first.startswith(f"{where('train.py', TRAINING, '1, pin')}: GPU011 `batch_size=1` ")
    assert second.startswith(f"{where('train.py', TRAINING, SYNC)}: GPU001 [*] `{SYNC}` ")
    assert closing == "Found 2 problems (1 fixable with --fix)."


def test_info_findings_alone_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "a.py", HARD_CODED)
    status, out, _ = run_main(["a.py"], tmp_path, capsys, monkeypatch)
    assert status == 0
    assert out.startswith(f"{where('a.py', HARD_CODED, '.cuda()')}: GPU007 [*] ")
    assert out.endswith("Found 1 problem (1 fixable with --fix).\n")


def test_json_fields_positions_and_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "b.py", LOOP_SYNC)
    write(tmp_path / "a.py", LOADER_COPY)
    status, out, _ = run_main(["--format", "json", "."], tmp_path, capsys, monkeypatch)
    assert status == 1
    # sorted by path, line, column, then code: GPU006 underlines the copy, GPU007 its `.cuda()`
    assert codes_in(out) == [
        ("a.py", *at(LOADER_COPY, "x.cuda()"), "GPU006"),
        ("a.py", *at(LOADER_COPY, ".cuda()"), "GPU007"),
        ("a.py", *at(LOADER_COPY, "x.sum().item()"), "GPU001"),
        ("b.py", *at(LOOP_SYNC, SYNC), "GPU001"),
    ]
    sync = json.loads(out)[3]
    assert sync.pop("message").startswith(f"`{SYNC}` copies a GPU value to the host")
    line, column = at(LOOP_SYNC, SYNC)
    after = LOOP_SYNC.count("\n") + 1  # the line below the loop, which ends the file
    assert sync == {
        "path": "b.py",
        "line": line,
        "column": column,
        "end_line": line,
        "end_column": column + len(SYNC),
        "code": "GPU001",
        "severity": "warning",
        "fixes": [
            {
                "title": "Accumulate `total` on the device, read it once after the loop",
                "safe": True,
                "edits": [
                    {
                        "line": line,
                        "column": column,
                        "end_line": line,
                        "end_column": column + len(SYNC),
                        "new_text": KEPT,
                    },
                    {
                        "line": after,
                        "column": 1,
                        "end_line": after,
                        "end_column": 1,
                        "new_text": AFTER_LOOP,
                    },
                ],
            }
        ],
    }


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"GPU001", "GPU007"}),
        (["--select", "GPU001"], {"GPU001"}),
        (["--ignore", "GPU001"], {"GPU007"}),
        (["--select", "GPU00"], {"GPU001", "GPU007"}),
        (["--select", "GPU007", "--ignore", "GPU00"], set()),
    ],
)
def test_select_and_ignore(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    expected: set[str],
) -> None:
    write(tmp_path / "a.py", SYNC_AND_DEVICE)
    _, out, _ = run_main([*args, "--format", "json", "a.py"], tmp_path, capsys, monkeypatch)
    assert {f["code"] for f in json.loads(out)} == expected


def test_pyproject_config_applies_and_the_command_line_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "pyproject.toml", '[tool.gpulens]\nignore = ["GPU001"]\n')
    write(tmp_path / "pkg" / "a.py", SYNC_AND_DEVICE)
    _, out, _ = run_main(["--format", "json", "pkg"], tmp_path, capsys, monkeypatch)
    assert {f["code"] for f in json.loads(out)} == {"GPU007"}
    _, out, _ = run_main(
        ["--format", "json", "--select", "GPU001", "pkg"], tmp_path, capsys, monkeypatch
    )
    assert {f["code"] for f in json.loads(out)} == {"GPU001"}


def test_syntax_error_file_is_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = LOOP_SYNC + "def broken(:\n    pass\n"
    write(tmp_path / "half.py", text)
    status, out, err = run_main(["half.py"], tmp_path, capsys, monkeypatch)
    assert status == 1
    assert f"{where('half.py', text, SYNC)}: GPU001" in out
    line, column = at(text, "(:")
    # Python points at the `:` that cannot follow `(`
    assert f"half.py:{line}:{column + 1}: syntax error" in err
    assert "checked the parts that parse" in err
    assert "Found 1 problem " in out  # the syntax error is not counted as a finding


# ---- --fix ----------------------------------------------------------------------------------


def test_fix_rewrites_and_a_second_run_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "train.py", TRAINING)
    status, out, _ = run_main(["--fix", "train.py"], tmp_path, capsys, monkeypatch)
    assert status == 0  # the info finding that remains (GPU011, no fix) does not block
    assert path.read_text() == TRAINING.replace(SYNC, KEPT) + AFTER_LOOP
    remaining, closing = out.splitlines()
    assert remaining.startswith(f"{where('train.py', TRAINING, '1, pin')}: GPU011 ")
    assert closing == "Found 2 problems (1 fixed, 1 remaining)."
    compile(path.read_text(), "train.py", "exec")
    before = path.stat().st_mtime_ns
    status, out, _ = run_main(["--fix", "train.py"], tmp_path, capsys, monkeypatch)
    assert status == 0
    assert path.stat().st_mtime_ns == before  # nothing to change: not written
    assert out.endswith("Found 1 problem.\n")


def test_fix_repeats_until_stable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "loader.py", LOADER_COPY)
    # the precondition that makes this a test of the rounds: GPU006's edit lies inside
    # GPU007's, so one round takes only one of them
    _, out, _ = run_main(["--format", "json", "loader.py"], tmp_path, capsys, monkeypatch)
    edits = {f["code"]: f["fixes"][0]["edits"][0] for f in json.loads(out) if f["code"] != "GPU001"}
    inner, outer = edits["GPU006"], edits["GPU007"]
    assert outer["line"] == inner["line"] == outer["end_line"]
    assert outer["column"] < inner["column"] < outer["end_column"]

    status, out, _ = run_main(["--fix", "loader.py"], tmp_path, capsys, monkeypatch)
    assert status == 0
    assert path.read_text() == (
        LOADER_COPY.replace("x.cuda()", "x.to(device, non_blocking=True)").replace(
            "x.sum().item()", "x.sum().detach().double()"
        )
        + AFTER_LOOP
    )
    assert "3 fixed, 0 remaining" in out


def test_fix_keeps_crlf_and_declared_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "win.py"
    path.write_bytes(LATIN1.replace("\n", "\r\n").encode("latin-1"))
    status, _, err = run_main(["--fix", "win.py"], tmp_path, capsys, monkeypatch)
    assert status == 0, err
    # the inserted line ends in \r\n too, and `café` is written back as latin-1
    assert path.read_bytes() == LATIN1_FIXED.replace("\n", "\r\n").encode("latin-1")


def test_fix_leaves_the_text_after_a_syntax_error_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = "if x\n    pass\ntotal = 0.0\nfor i in range(100):\n    total += (x * i).sum().item()\n"
    text = LOOP_SYNC + "print(total)\n" + tail
    path = write(tmp_path / "half.py", text)
    # both loops are reported with a safe fix, the one below the syntax error too
    _, out, _ = run_main(["--format", "json", "half.py"], tmp_path, capsys, monkeypatch)
    found = json.loads(out)
    assert [(f["line"], f["column"]) for f in found] == [at(text, SYNC), at(text, SYNC, 2)]
    assert all(f["fixes"] and f["fixes"][0]["safe"] for f in found)

    status, out, err = run_main(["--fix", "half.py"], tmp_path, capsys, monkeypatch)
    assert status == 1  # the second loop's sync remains
    assert path.read_text() == LOOP_SYNC_FIXED + "print(total)\n" + tail
    assert "Found 2 problems (1 fixed, 1 remaining)." in out
    assert "syntax error" in err


def test_fix_refuses_an_edit_that_breaks_the_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Fault injection, the one stand-in left: no real rule offers a fix that makes the file
    # invalid Python (tests/unit/rules/test_cases.py checks that each fix parses), so a walk
    # that offers one is put in place of the rules to drive the command's guard against it.
    from gpulens.analysis import walker

    def breaking_walk(tree, source, config, memo=None, repaired=frozenset(), **_):  # type: ignore[no-untyped-def]
        if not any(isinstance(n, ast.Call) for n in ast.walk(tree)):
            return [], [], ()
        edit = Edit(source.span(tree.body[0]), "def (:")
        bad = Finding(
            "GPU001", Severity.WARNING, "m", source.span(tree.body[0]), (Fix("t", (edit,)),)
        )
        return [bad], [], (), ()

    monkeypatch.setattr(walker, "walk_module", breaking_walk)
    path = write(tmp_path / "a.py", "f()\n")
    status, _, err = run_main(["--fix", "a.py"], tmp_path, capsys, monkeypatch)
    assert path.read_text() == "f()\n"
    assert "invalid Python" in err
    assert status == 1


def test_stdin_is_checked_under_its_given_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    stdin = io.TextIOWrapper(io.BytesIO(LOOP_SYNC.encode()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    status, out, _ = run_main(["--stdin-filename", "pkg/x.py"], tmp_path, capsys, monkeypatch)
    assert status == 1
    assert out.startswith(f"{where('pkg/x.py', LOOP_SYNC, SYNC)}: GPU001 [*]")
    bad = run_cli("-", cwd=tmp_path, stdin="def f(:\n")
    assert "-:1:7: syntax error" in bad.stderr


def test_fix_on_stdin_prints_the_fixed_text(tmp_path: Path) -> None:
    result = run_cli("--fix", "--stdin-filename", "x.py", "-", cwd=tmp_path, stdin="v = 1\n")
    assert result.returncode == 0
    assert result.stdout == "v = 1\n"
    assert "All checks passed." in result.stderr
    fixed = run_cli("--fix", "--stdin-filename", "x.py", "-", cwd=tmp_path, stdin=LOOP_SYNC)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout == LOOP_SYNC_FIXED
    assert "Found 1 problem (1 fixed, 0 remaining)." in fixed.stderr
    assert not (tmp_path / "x.py").exists()


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


def test_exclude_option_and_config_exclude(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "pyproject.toml", '[tool.gpulens]\nexclude = ["vendored/"]\n')
    for name in ("main.py", "vendored/v.py", "legacy/old.py"):
        write(tmp_path / name, LOOP_SYNC)
    _, out, _ = run_main(["--format", "json", "."], tmp_path, capsys, monkeypatch)
    assert [f["path"] for f in json.loads(out)] == ["legacy/old.py", "main.py"]
    _, out, _ = run_main(
        ["--format", "json", "--exclude", "legacy", "."], tmp_path, capsys, monkeypatch
    )
    assert [f["path"] for f in json.loads(out)] == ["main.py"]


def test_parallel_and_sequential_runs_agree(tmp_path: Path) -> None:
    from gpulens.analysis import DEFAULT_CONFIG
    from gpulens.commands._check_file import Job
    from gpulens.commands.check import run_jobs

    jobs = []
    for index in range(40):
        # one finding per file, on a different line in each: GPU001 or GPU007 by turns
        text = (LOOP_SYNC, HARD_CODED)[index % 2]
        path = write(tmp_path / f"m{index:02}.py", "a = 1\n" * index + text)
        jobs.append(Job(path.name, str(path), DEFAULT_CONFIG, False, False))
    sequential = run_jobs(jobs, workers=1)
    parallel = run_jobs(jobs, workers=2)
    assert [(r.path, r.findings) for r in parallel] == [(r.path, r.findings) for r in sequential]
    assert [(r.path, [x.finding.code for x in r.findings]) for r in parallel] == [
        (f"m{index:02}.py", ["GPU001" if index % 2 == 0 else "GPU007"]) for index in range(40)
    ]
    assert [r.findings[0].finding.span.line + 1 for r in parallel] == [
        index + at((LOOP_SYNC, HARD_CODED)[index % 2], (SYNC, "Net().cuda()")[index % 2])[0]
        for index in range(40)
    ]


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


# as Jupyter saves cells: no newline at the end of the last line
TRAIN_CELL = "%%time\ntotal = 0.0\nfor i in range(3):\n    total += (x * i).sum().item()"
NOTEBOOK = notebook(
    ("code", "import torch\nx = torch.ones(3, device='cuda')"),
    ("markdown", "# Training — ünïcode"),
    ("code", TRAIN_CELL),
)


def test_notebook_positions_are_cell_relative(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "nb.ipynb", jupyter_json(NOTEBOOK))
    line, column = at(TRAIN_CELL, SYNC)
    status, out, _ = run_main(["nb.ipynb"], tmp_path, capsys, monkeypatch)
    assert status == 1
    assert out.splitlines()[0].startswith(f"nb.ipynb:cell 3:{line}:{column}: GPU001 [*] `{SYNC}`")
    _, out, _ = run_main(["--format", "json", "nb.ipynb"], tmp_path, capsys, monkeypatch)
    (finding,) = json.loads(out)
    assert (finding["cell"], finding["line"], finding["column"]) == (3, line, column)
    assert [(e["line"], e["column"]) for e in finding["fixes"][0]["edits"]] == [
        (line, column),
        (line, len(TRAIN_CELL.splitlines()[-1]) + 1),  # the end of the cell's last line
    ]


def test_notebook_fix_rewrites_cell_sources_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "nb.ipynb", jupyter_json(NOTEBOOK))
    status, out, _ = run_main(["--fix", "nb.ipynb"], tmp_path, capsys, monkeypatch)
    assert status == 0
    assert "Found 1 problem (1 fixed, 0 remaining)." in out
    expected = json.loads(jupyter_json(NOTEBOOK))
    fixed_cell = TRAIN_CELL.replace(SYNC, KEPT) + "\n" + AFTER_LOOP.rstrip()
    expected["cells"][2]["source"] = fixed_cell.splitlines(keepends=True)
    assert path.read_text(encoding="utf-8") == jupyter_json(expected)
    before = path.stat().st_mtime_ns
    status, out, _ = run_main(["--fix", "nb.ipynb"], tmp_path, capsys, monkeypatch)
    assert status == 0
    assert path.stat().st_mtime_ns == before
    assert out == "All checks passed.\n"


def test_notebook_that_is_not_json_exits_2(tmp_path: Path) -> None:
    write(tmp_path / "broken.ipynb", "{not json")
    result = run_cli("broken.ipynb", cwd=tmp_path)
    assert result.returncode == 2
    assert "broken.ipynb: not a notebook" in result.stderr


# ---- the real rules through a real process --------------------------------------------------


def test_real_rules_find_the_sync_in_a_loop(tmp_path: Path) -> None:
    write(tmp_path / "train.py", LOOP_SYNC)
    result = run_cli("--format", "json", "train.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert codes_in(result.stdout) == [("train.py", *at(LOOP_SYNC, SYNC), "GPU001")]


def test_real_fix_is_idempotent(tmp_path: Path) -> None:
    path = write(tmp_path / "train.py", LOOP_SYNC)
    first = run_cli("--fix", "train.py", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    fixed = path.read_text()
    assert fixed == LOOP_SYNC_FIXED
    compile(fixed, "train.py", "exec")
    second = run_cli("--fix", "--format", "json", "train.py", cwd=tmp_path)
    assert path.read_text() == fixed
    assert json.loads(second.stdout) == []


def test_small_runs_stay_in_one_process() -> None:
    from gpulens.commands.check import PARALLEL_MIN_BYTES, _worker_count

    assert _worker_count([1000] * 200) == 1  # many files, little source
    assert _worker_count([PARALLEL_MIN_BYTES]) == 1  # one file cannot be shared out
    expected = min(2, len(os.sched_getaffinity(0)))
    assert _worker_count([PARALLEL_MIN_BYTES // 4] * 8) == expected
