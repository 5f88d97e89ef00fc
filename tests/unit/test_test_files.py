"""Test files get no performance findings unless the project asks for them: through the CLI
(a real run of `gpulens check` on files in a project) and through the language server's
settings (a real server, a real client)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpulens.analysis import Config, ConfigError
from gpulens.analysis.config import config_from_mapping, is_test_file

LOOP = """\
import torch
x = torch.randn(10, device="cuda")
total = 0.0
for i in range(100):
    total += (x * i).sum().item()
"""


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/test_model.py", True),
        ("tests/helpers.py", True),
        ("pkg/test/data.py", True),
        ("test_train.py", True),
        ("train_test.py", True),
        ("conftest.py", True),
        ("src/pkg/conftest.py", True),
        ("train.py", False),
        ("src/testing_utils.py", False),
        ("latest.py", False),
        ("contest.py", False),
        ("attests/model.py", False),
    ],
)
def test_which_files_are_test_files(path: str, test: bool) -> None:
    assert is_test_file(path) is test


def test_the_setting_is_read_and_checked() -> None:
    assert config_from_mapping({"tests": True}).tests is True
    assert config_from_mapping({}).tests is False
    with pytest.raises(ConfigError, match="tests must be true or false"):
        config_from_mapping({"tests": "yes"})


def test_a_test_file_selects_no_rule_unless_asked() -> None:
    assert not Config().for_file("tests/test_x.py").enabled("GPU001")
    assert Config().for_file("train.py").enabled("GPU001")
    assert Config(tests=True).for_file("tests/test_x.py").enabled("GPU001")


def check(project: Path, *paths: str) -> list[dict[str, object]]:
    result = subprocess.run(
        [sys.executable, "-m", "gpulens", "check", "--format", "json", *paths],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_cli_skips_test_files_by_default(tmp_path: Path) -> None:
    for name in ("train.py", "tests/test_train.py", "tests/helpers.py", "conftest.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(LOOP)
    found = check(tmp_path, ".")
    assert sorted({f["path"] for f in found}) == ["train.py"]


def test_cli_checks_test_files_when_the_project_opts_in(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.gpulens]\ntests = true\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_train.py").write_text(LOOP)
    found = check(tmp_path, "tests/test_train.py")
    assert [f["code"] for f in found] == ["GPU001"]
