"""`gpulens check --profile SAVED.json`: a profile saved by `gpulens profile -o` (or a
`%%gpulens` output) merged into the findings of the file it profiled, through real
`python -m gpulens check` runs; the profiles are captures recorded on an H200."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "profiler"
DEMO_PROFILE = FIXTURES / "demo_cell3_h200_payload.json"


def check(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpulens", "check", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """examples/profile_demo.py and its cell 3's profile, saved as `gpulens profile -o` saves
    it (its path as it was given then: examples/profile_demo.py)."""
    shutil.copy(REPO / "examples" / "profile_demo.py", tmp_path / "profile_demo.py")
    shutil.copy(DEMO_PROFILE, tmp_path / "cell3.json")
    return tmp_path


def test_the_profile_demotes_a_negligible_sync_and_adds_what_it_measured(demo: Path) -> None:
    plain = check(demo, "profile_demo.py")
    assert plain.returncode == 1  # the sync is a warning
    (sync,) = plain.stdout.splitlines()[:-1]
    assert sync.startswith("profile_demo.py:42:14: GPU001 [*] `loss.item()`")

    done = check(demo, "profile_demo.py", "--profile", "cell3.json")
    assert done.returncode == 0, done.stdout + done.stderr  # only hints are left
    pageable, measured_sync, summary = done.stdout.splitlines()
    assert pageable.startswith(
        "profile_demo.py:37:5: GPU005 (measured) Measured negligible in the last profile: each of "
        "the 400 pageable copies makes the host wait for the GPU (5.4 ms stalled)"
    )
    assert measured_sync == (
        "profile_demo.py:42:14: GPU001 [*] Measured negligible in the last profile: 200 syncs, "
        "1.5 ms stalled; the line ran 200 times and took 9.1 ms, under 0.1 % of the cell's "
        "9.1 s. " + sync.split(" [*] ", 1)[1]
    )
    assert summary == "Found 2 problems (1 fixable with --fix)."


def test_json_says_where_each_finding_comes_from(demo: Path) -> None:
    done = check(demo, "profile_demo.py", "--profile", "cell3.json", "--format", "json")
    found = json.loads(done.stdout)
    assert [(f["line"], f["code"], f["severity"], f["origin"]) for f in found] == [
        (37, "GPU005", "hint", "profile"),
        (42, "GPU001", "hint", "analysis"),
    ]
    assert found[1]["fixes"][0]["safe"] is True


def test_a_profile_of_an_older_text_merges_where_the_lines_did_not_change(demo: Path) -> None:
    text = (demo / "profile_demo.py").read_text(encoding="utf-8")
    edited = text.replace("import random\n", "import random\nimport sys\n", 1).replace(
        "    total += loss.item()\n", "    total += loss.item()  # edited\n"
    )
    (demo / "profile_demo.py").write_text(edited, encoding="utf-8")
    done = check(demo, "profile_demo.py", "--profile", "cell3.json")
    lines = done.stdout.splitlines()
    # the copy line moved down one and kept its measurement; the edited sync line lost its own
    assert lines[0].startswith("profile_demo.py:38:5: GPU005 (measured)")
    assert lines[1].startswith("profile_demo.py:43:14: GPU001 [*] `loss.item()`")
    assert done.returncode == 1


def notebook(cells: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source}
            | ({"outputs": [], "execution_count": None} if kind == "code" else {})
            for kind, source in cells
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_a_notebook_cell_s_profile_merges_into_that_cell(tmp_path: Path) -> None:
    profile = json.loads((FIXTURES / "pitfalls_cell3_h200.profile.json").read_text())
    assert profile["source"]["path"] is None and profile["source"]["cell"] == 5
    loop = "\n".join(profile["code"]) + "\n"
    cells = [
        ("markdown", "# training"),
        ("code", "import torch\nfrom torch import nn\n"),
        (
            "code",
            'model = nn.Linear(784, 10).to("cuda")\nx = torch.randn(256, 784, device="cuda")\n',
        ),
        ("markdown", "the loop, profiled on an H200:"),
        ("code", loop),
    ]
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook(cells)), encoding="utf-8")
    (tmp_path / "loop.json").write_text(json.dumps(profile), encoding="utf-8")
    done = check(tmp_path, "nb.ipynb", "--profile", "loop.json")
    (line, _) = done.stdout.splitlines()
    assert line.startswith("nb.ipynb:cell 5:8:19: GPU001 [*] `loss.item()`")
    assert line.endswith(
        "Measured in the last profile: 200 syncs, 1.5 ms stalled; the line ran 200 times and "
        "took 8.8 ms, 1.5 % of the cell's 595 ms."
    )


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda f: None, "--profile missing.json: cannot read it as a saved profile"),
        (
            lambda f: (f / "missing.json").write_text('{"schema": "gpulens.status/2"}'),
            "--profile missing.json: not a gpulens profile",
        ),
        (
            lambda f: (f / "missing.json").write_text(
                json.dumps({**json.loads(DEMO_PROFILE.read_text()), "source": {"path": "x.py"}})
            ),
            "--profile missing.json is a profile of x.py, which is not among the files checked",
        ),
    ],
    ids=["unreadable", "not-a-profile", "another-file"],
)
def test_a_profile_that_cannot_be_used_is_a_one_line_error(
    demo: Path, make: Any, error: str
) -> None:
    make(demo)
    done = check(demo, "profile_demo.py", "--profile", "missing.json")
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {error}") and done.stderr.count("\n") == 1
    assert done.stdout == ""
