"""Measuring this gpulens beside another in the same run (the benchmarks' `--compare
SERVER_DIR`, e.g. `git archive <rev> server | tar -x -C /tmp/before`, then `--compare
/tmp/before/server`): each runs in fresh interpreters with its source folder first on
PYTHONPATH, the two alternated so that a load spike hits each alike."""

from __future__ import annotations

import compileall
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

SERVER = str(Path(__file__).resolve().parents[1] / "server")
Figures = TypeVar("Figures")


def with_server(path: str) -> dict[str, str]:
    """This process's environment with the gpulens source folder ``path`` first on
    PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
    return env


def built(path: str, folder: str, *, bytecode: bool) -> dict[str, str]:
    """The environment of a server run from a copy of the gpulens source folder ``path``,
    made under ``folder``: compiled to bytecode as `pip install` compiles a package
    (``bytecode``), or as source only, which every start then compiles again (the copy's
    environment writes no bytecode). Where PYTHONDONTWRITEBYTECODE is set, a source
    checkout stays source only: measuring it as it is measures the second."""
    target = Path(folder) / ("bytecode" if bytecode else "source")
    shutil.copytree(
        Path(path) / "gpulens",
        target / "gpulens",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    env = with_server(str(target))
    if bytecode:
        compileall.compile_dir(target, quiet=1)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def versions(compare: str | None) -> list[tuple[str, str]]:
    """("gpulens", this source folder) and, with ``compare``, ("compared", that one)."""
    return [("gpulens", SERVER)] + ([("compared", compare)] if compare else [])


def run_json(code: str, args: Sequence[str], server: str, timeout: float) -> dict[str, float]:
    """`python -c code *args` with ``server``'s gpulens: the JSON object its last line
    prints; a failed run stops the benchmark with the end of its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=with_server(server),
        check=False,
        timeout=timeout,
    )
    if done.returncode:
        raise SystemExit(f"the run failed: {done.stderr.strip()[-800:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def alternated(
    count: int, compared: Sequence[tuple[str, str]], measure: Callable[[str], Figures]
) -> dict[str, list[Figures]]:
    """``measure(server)`` ``count`` times for each version, the versions taking turns."""
    runs: dict[str, list[Figures]] = {label: [] for label, _ in compared}
    for _ in range(count):
        for label, server in compared:
            runs[label].append(measure(server))
    return runs
