from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "profiler"


def load_fixture(name: str) -> dict[str, Any]:
    """A capture recorded on the device machine by tests/gpu/test_profiler_gpu.py."""
    path = FIXTURES / f"{name}.json.gz"
    if not path.exists():
        pytest.fail(f"missing fixture {path}: record it on the device machine")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)
