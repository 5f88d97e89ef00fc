"""Writes the profile payloads the TypeScript tests read, from the profiler's recorded captures.

The payload is built by the Python side (`attribute_records` + `build_payload`) from a CUPTI
capture recorded on an H200 (`tests/fixtures/profiler/train_step.json.gz`), numbered as
`%%gpulens` numbers a notebook cell: line 1 is the magic line, the body starts at line 2.
Run: .venv/bin/python labextension/tests/make_fixtures.py
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def notebook_payload(capture_name: str) -> dict[str, Any]:
    from gpulens.profiler.attribution import attribute_records
    from gpulens.profiler.report import build_payload

    path = REPO / "tests" / "fixtures" / "profiler" / f"{capture_name}.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        capture = json.load(handle)
    attributed = attribute_records(capture["events"], capture["records"])
    for cost in attributed["lines"]:
        cost["line"] += 1  # the magic line comes first in a notebook cell
    body = capture["source"].splitlines()
    return build_payload(
        attributed,
        source={"path": None, "cell": 1, "first_line": 2, "last_line": 1 + len(body)},
        backend=capture["backend"],
        code=body,
    )


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "fixtures"
    out.mkdir(parents=True, exist_ok=True)
    payload = notebook_payload("train_step")
    (out / "train_step.profile.json").write_text(json.dumps(payload, indent=1) + "\n")
    print(out / "train_step.profile.json")
