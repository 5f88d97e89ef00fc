"""Notebook cells analysed as one program; configuration and suppression comments."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulens.analysis import Config, ConfigError, Severity, analyze, analyze_cells, load_config
from gpulens.analysis.config import config_from_mapping, parse_codes
from gpulens.analysis.notebook import python_view

SETUP = 'import torch\nx = torch.randn(100, device="cuda")\n'
LOOP = "total = 0.0\nfor i in range(10):\n    total += x[i].item()\n"


def test_names_from_earlier_cells_are_known_in_later_ones() -> None:
    first, second = analyze_cells([SETUP, LOOP])
    assert first.findings == []
    assert [(f.span.line, f.code) for f in second.findings] == [(2, "GPU001")]


def test_cell_positions_are_cell_relative_and_fixes_stay_in_the_cell() -> None:
    (_, cell) = analyze_cells([SETUP, "\n\n" + LOOP])
    finding = cell.findings[0]
    assert finding.span.line == 4
    edits = [e for fix in finding.fixes for e in fix.edits]
    assert edits and all(0 <= e.span.line <= 5 for e in edits)


def test_magics_and_shell_escapes_are_blanked() -> None:
    cell = "%matplotlib inline\n!nvidia-smi\nfiles = !ls\n" + LOOP
    assert python_view(cell).splitlines()[:3] == ["", "", ""]
    (_, result) = analyze_cells([SETUP, cell])
    assert [(f.span.line, f.code) for f in result.findings] == [(5, "GPU001")]


def test_non_python_cell_magic_is_skipped_whole() -> None:
    (_, bash, after) = analyze_cells([SETUP, "%%bash\nfor i in 1 2; do echo $i; done\n", LOOP])
    assert bash.findings == [] and bash.syntax_problem is None
    assert [f.code for f in after.findings] == ["GPU001"]


def test_timed_cell_is_analysed() -> None:
    (_, timed) = analyze_cells([SETUP, "%%time\n" + LOOP])
    assert [(f.span.line, f.code) for f in timed.findings] == [(3, "GPU001")]


def test_syntax_error_is_reported_in_its_own_cell() -> None:
    results = analyze_cells([SETUP, "def broken(:\n", LOOP])
    assert results[1].syntax_problem is not None and results[1].syntax_problem.line == 0
    assert results[0].syntax_problem is None
    assert [f.code for f in results[2].findings] == ["GPU001"]


def test_suppression_comment_silences_one_code_on_its_line() -> None:
    text = SETUP + LOOP.replace(".item()", ".item()  # gpulens: ignore[GPU001]")
    assert analyze(text).findings == []
    text = SETUP + LOOP.replace(".item()", ".item()  # gpulens: ignore[GPU004]")
    assert [f.code for f in analyze(text).findings] == ["GPU001"]
    text = SETUP + LOOP.replace(".item()", ".item()  # gpulens: ignore")
    assert analyze(text).findings == []


def test_select_ignore_and_severity() -> None:
    text = SETUP + LOOP
    assert analyze(text, Config(ignore=frozenset({"GPU001"}))).findings == []
    assert analyze(text, Config(select=frozenset({"GPU00"}))).findings != []
    assert analyze(text, Config(select=frozenset({"GPU004"}))).findings == []
    severity = config_from_mapping({"severity": {"GPU001": "error"}}).severity
    (finding,) = analyze(text, Config(severity=severity)).findings
    assert finding.severity is Severity.ERROR


def test_pyproject_table_is_found_from_a_nested_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[tool.gpulens]\nignore = ["GPU007"]\ndevice = "cuda:1"\n'
    )
    nested = tmp_path / "src" / "pkg"
    nested.mkdir(parents=True)
    config = load_config(nested / "train.py")
    assert config.ignore == frozenset({"GPU007"}) and config.device == "cuda:1"


@pytest.mark.parametrize(
    "table",
    [{"select": ["GPU1234"]}, {"severity": {"GPU001": "fatal"}}, {"colour": "red"}, {"device": 3}],
)
def test_bad_configuration_says_what_is_wrong(table: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as error:
        config_from_mapping(table)
    assert "[tool.gpulens]" in str(error.value)


def test_codes_parse_from_a_comma_list() -> None:
    assert parse_codes("gpu001, GPU004", "--select") == frozenset({"GPU001", "GPU004"})
    assert parse_codes("ALL", "--select") is None


def test_a_fix_after_a_loop_that_ends_a_cell_stays_in_that_cell() -> None:
    from gpulens.analysis.edits import apply_edits

    loop = LOOP.rstrip("\n")  # as editors store a cell: no final newline
    (_, cell, _) = analyze_cells([SETUP, loop, "print(total)"])
    (finding,) = cell.findings
    (fix,) = finding.fixes
    fixed = apply_edits(loop, fix.edits)
    assert fixed.splitlines()[-1] == "total = float(total)  # one sync, after the loop"
    assert ".detach()" in fixed
