"""Measuring this gpulens beside another in the same run (the benchmarks' `--compare
SERVER_DIR`, e.g. `git archive <rev> server | tar -x -C /tmp/before`, then `--compare
/tmp/before/server`): each runs in fresh interpreters with its source folder first on
PYTHONPATH, the two alternated so that a load spike hits each alike."""

from __future__ import annotations

import json
import os
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
