"""The doctor's smoke test: runs ``_smoke_script.py`` in the user's interpreter and reads it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpulens.device.frameworks import FrameworkReport, run_script

SMOKE_MARKER = "GPULENS_SMOKE "
DEFAULT_TIMEOUT_S = 120.0


def choose_smoke_framework(reports: Mapping[str, FrameworkReport]) -> str | None:
    """torch if it sees a GPU, else CuPy if it does; ``None`` when neither can run the test."""
    for name in ("torch", "cupy"):
        if reports.get(name, {}).get("cuda"):
            return name
    return None


def parse_smoke_output(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(SMOKE_MARKER):
            try:
                return dict(json.loads(line[len(SMOKE_MARKER) :]))
            except json.JSONDecodeError:
                return None
    return None


def run_smoke_test(
    python: str, framework: str, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> dict[str, Any]:
    source = Path(__file__).with_name("_smoke_script.py").read_text(encoding="utf-8")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        completed = run_script(python, source, framework, timeout_s=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {
            "framework": framework,
            "error": f"The smoke test did not finish within {timeout_s:g} s.",
        }
    except OSError as error:
        return {
            "framework": framework,
            "error": f"The interpreter {python} could not be started ({error.strerror}).",
        }
    result = parse_smoke_output(completed.stdout)
    if result is None:
        tail = completed.stderr.strip().splitlines()[-1:] or [f"exit {completed.returncode}"]
        return {"framework": framework, "error": f"The smoke test failed: {tail[0][:300]}"}
    return result
