"""Writes the payloads the editor clients' unit tests draw, made now by the real Python code.

The clients hold no formatting of their own: they draw the words and figures the payloads
carry. Their tests read what this script writes, so what they check is what Python says
today, never a copy kept by hand. Status payloads come from recorded NVML answers (H200 ×1,
H200 ×2, no driver) and framework reports (tests/fixtures/nvml); profile payloads from
captures recorded on an H200 (tests/fixtures/profiler/*.json.gz) through the attribution
and the payload builder, from notebook payloads recorded there, from a host-backend run of
a real script, and from runs that failed every way a run can.

It also lists the fields a client may draw (`drawn_fields`): every field of each payload's
`display` block and each profiled line's `LINE_FIELDS`, with other values each can take. A
client's test changes each field in turn and fails where its drawing stays the same, unless
the test names the field as one the other editor draws: a field Python adds is drawn, or
consciously left out, by each client.

Run by the clients' test setup (extension/test/unit/payloads.setup.ts,
labextension/tests/payloads.setup.ts):
    python scripts/client_payloads.py OUT_DIR
It writes OUT_DIR/<name>.json, OUT_DIR/index.json ({"status": [names], "profile": [names]})
and OUT_DIR/fields.json ({"status": {field name: [field]}, "profile": ...}, a field name like
"display.gpus.[].heading", each field {"payload": name, "path": [key or index, ...],
"values": [other values]}).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))

from gpulens.device.nvml import NVML_ERROR_LIBRARY_NOT_FOUND, NvmlMonitor  # noqa: E402
from gpulens.device.recorded import RecordedBackend, load_snapshot  # noqa: E402
from gpulens.device.status import build_status  # noqa: E402
from gpulens.profiler.attribution import attribute_records  # noqa: E402
from gpulens.profiler.display import LINE_FIELDS, annotate  # noqa: E402
from gpulens.profiler.recorded import replay  # noqa: E402
from gpulens.profiler.report import build_payload, failed_payload  # noqa: E402
from gpulens.profiler.runner import run_profile  # noqa: E402

NVML = REPO / "tests" / "fixtures" / "nvml"
PROFILER = REPO / "tests" / "fixtures" / "profiler"
CELLS = REPO / "extension" / "test-fixtures" / "workspace" / "cells.py"
NOW = dt.datetime(2026, 11, 22, 17, 36, 20, tzinfo=dt.UTC)


def _reading(recording: str, snapshot: str) -> Any:
    return NvmlMonitor(RecordedBackend(load_snapshot(NVML / recording, snapshot))).read()


def status_payloads() -> dict[str, dict[str, Any]]:
    frameworks = json.loads((NVML / "doctor-h200x2.json").read_text())["status"]["frameworks"]
    no_driver = NvmlMonitor(
        RecordedBackend({"init": {"error": NVML_ERROR_LIBRARY_NOT_FOUND}})
    ).read()
    lost = _reading("h200x2.json", "idle")
    lost["gpus"][1] = {**lost["gpus"][1], "error": "GPU 1 fell off the bus", "processes": None}
    full = _reading("h200x1.json", "loaded")
    total = full["gpus"][0]["memory_total_bytes"]
    full["gpus"][0] = {**full["gpus"][0], "memory_used_bytes": int(total * 0.95)}
    odd = _reading("h200x1.json", "idle")
    odd["gpus"][0] = {**odd["gpus"][0], "name": "NVIDIA X | *bold* <b>"}
    mps = {"torch": {"installed": True, "version": "2.11.0", "devices": ["mps"], "cuda": False}}
    return {
        "status-h200x2": build_status(_reading("h200x2.json", "loaded"), frameworks, None, NOW),
        "status-h200x2-idle": build_status(_reading("h200x2.json", "idle"), frameworks, None, NOW),
        "status-h200x2-hidden": build_status(_reading("h200x2.json", "loaded"), {}, "1", NOW),
        "status-h200x1": build_status(_reading("h200x1.json", "loaded"), {}, None, NOW),
        "status-pending": build_status(_reading("h200x1.json", "idle"), None, None, NOW),
        "status-cpu-only": build_status(no_driver, {}, None, NOW),
        "status-mps": build_status(no_driver, mps, None, NOW),
        "status-lost": build_status(lost, frameworks, None, NOW),
        "status-full": build_status(full, {}, None, NOW),
        "status-markup-in-name": build_status(odd, {}, None, NOW),
    }


def _capture(name: str) -> dict[str, Any]:
    with gzip.open(PROFILER / f"{name}.json.gz", "rt", encoding="utf-8") as handle:
        return json.load(handle)


def script_payload(name: str) -> dict[str, Any]:
    """A recorded capture as `gpulens profile` reports it (a torchrun job: its ranks merged)."""
    return replay(_capture(name), name)


def notebook_payload(name: str, place: int) -> dict[str, Any]:
    """A recorded capture as `%%gpulens --cell PLACE` displays it: line 1 is the magic line."""
    capture = _capture(name)
    attributed = attribute_records(capture["events"], capture["records"])
    for cost in attributed["lines"]:
        cost["line"] += 1
    body = capture["source"].splitlines()
    return build_payload(
        attributed,
        source={
            "path": None,
            "cell": place,
            "execution_count": 9,
            "first_line": 2,
            "last_line": 1 + len(body),
        },
        backend=capture["backend"],
        gpus=capture["gpus"],
        code=body,
        time=NOW.isoformat(),
    )


def synthetic_payload() -> dict[str, Any]:
    """Figures no recording has: ↔ copies, counts in thousands, a kernel name past the cut
    with `|` and a backtick in it, a copy direction the schema does not know, GPU memory
    in both views with the peak reached on a line, the GPU idle most of a line."""
    top = [
        {
            "name": "void at::native::elementwise<128, " + "T" * 90 + "|x`y>",
            "count": 1200,
            "gpu_s": 0.006,
        },
        {"name": "gemm_<*_k|`v`>", "count": 200, "gpu_s": 0.0027},
    ]
    empty = {"count": 0, "bytes": 0, "s": 0.0, "pageable": 0, "pinned": 0}
    lines = [
        {
            "line": 3,
            "hits": 200,
            "host_s": 0.0087,
            "kernels": {
                "count": 1400,
                "gpu_s": 0.0087,
                "top": top,
            },
            "transfers": {
                "htod": {**empty, "count": 200, "bytes": 400_000_000, "s": 0.062, "pageable": 200},
                "dtoh": dict(empty),
                "dtod": {**empty, "count": 1, "bytes": 12_345_678_901, "s": 1.5},
                "nvlink": {**empty, "count": 2, "bytes": 4096, "s": 1e-5},
            },
            "memsets": {"count": 1, "bytes": 4096, "s": 2.2e-6},
            "syncs": {"count": 12_345, "stall_s": 75.0},
            "pageable": {"bytes": 400_000_000, "s": 0.062},
            "pinned": {"bytes": 0, "s": 0.0},
            "memory": {
                "allocated": {"alloc": 3 * 2**30, "free": 2 * 2**30, "net": 2**30},
                "reserved": {"alloc": 2**31, "free": 0, "net": 2**31},
            },
            "own_s": 0.0087,
            "gpu_idle_s": 0.0081,
        },
        {
            "line": 5,
            "hits": 1_000_000,
            "host_s": 0.25,
            "memory": {
                "allocated": {"alloc": 0, "free": 2**30, "net": -(2**30)},
                "reserved": {"alloc": 0, "free": 0, "net": 0},
            },
            "own_s": 0.25,
            "gpu_idle_s": 0.0,
        },
    ]
    return annotate(
        {
            "schema": "gpulens.profile/2",
            "source": {"path": "synthetic.py", "cell": 1, "first_line": 2, "last_line": 5},
            "backend": "cupti",
            "gpus": [{"index": 0, "name": "NVIDIA H200"}],
            "wall_s": 2.0,
            "warnings": [],
            "lines": lines,
            "unattributed": {"kernels": 3},
            "error": None,
            "code": ["# %% synthetic", "x = big.to(device)", "", "for i in range(10**6): pass"],
            "peak": {
                "allocated": [{"device": 0, "bytes": 12_884_901_888, "rise": 2**30, "line": 3}],
                "reserved": [{"device": 0, "bytes": None, "rise": 2**31, "line": 3}],
            },
            "gpu_busy": {"s": 1.6, "share": 0.8},
        }
    )


def profile_payloads() -> dict[str, dict[str, Any]]:
    payloads = {
        f"profile-{path.name.removesuffix('.json.gz')}": script_payload(
            path.name.removesuffix(".json.gz")
        )
        for path in sorted(PROFILER.glob("*.json.gz"))
    }
    payloads["profile-notebook-train_step"] = notebook_payload("train_step", place=4)
    for path in sorted(PROFILER.glob("*.json")):
        saved = annotate(json.loads(path.read_text()), recorded=True)
        payloads[f"profile-recorded-{path.name.split('.')[0]}"] = saved
    payloads["profile-host"] = run_profile(str(CELLS), cell=2, backend="host", timeout=60)
    payloads["profile-synthetic"] = synthetic_payload()
    source = {"path": "/w/train.py", "cell": 2, "first_line": 8, "last_line": 12}
    for kind, message in [
        ("Timeout", "the cell ran past the 5 s timeout and was stopped"),
        ("Cancelled", "the profile was cancelled"),
        ("RequestError", "no line 99 in train.py"),
        ("SyntaxError", "line 3: invalid syntax"),
        ("ZeroDivisionError", "division by zero"),
    ]:
        payloads[f"profile-failed-{kind}"] = failed_payload(source, message, kind)
    nothing = failed_payload({"path": "/w/a.py", "cell": 0}, "", "x")
    nothing["error"] = None
    payloads["profile-ran-nothing"] = annotate(nothing)
    return payloads


FieldPath = list[str | int]


def _ends(items: list[Any]) -> list[int]:
    """The indexes of a list's first and last items."""
    return sorted({0, len(items) - 1}) if items else []


def _leaves(value: Any, path: FieldPath) -> list[tuple[FieldPath, Any]]:
    """The scalar fields under `value`, by path; of a list, its first and last items (the
    fields of an item, not every row, are what a client draws or drops)."""
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, [*path, key])]
    if isinstance(value, list):
        return [leaf for i in _ends(value) for leaf in _leaves(value[i], [*path, i])]
    return [(path, value)]


def _changed(value: Any) -> Any:
    """Another value of the same type (a number stays within 0..1 if it was)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value / 2 if value else 0.5
    if isinstance(value, str):
        return f"{value} (changed)"
    return "(changed)"  # a field that is null here


def _name(path: FieldPath) -> str:
    return ".".join("[]" if isinstance(key, int) else key for key in path)


def drawn_fields(payloads: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each field a client may draw, in each payload, with other values it can take: a
    changed one, and the values the same field has in the other payloads (an icon name
    read from a fixed set changes the drawing only as another name of the set; three at
    most)."""
    found: list[tuple[str, FieldPath, Any]] = []
    for name, payload in payloads.items():
        found += [(name, path, v) for path, v in _leaves(payload.get("display"), ["display"])]
        lines = payload.get("lines") or []
        for index in _ends(lines):
            found += [(name, ["lines", index, key], lines[index].get(key)) for key in LINE_FIELDS]
    seen: dict[str, list[Any]] = {}
    for _, path, value in found:
        values = seen.setdefault(_name(path), [])
        if value not in values:
            values.append(value)
    fields: dict[str, list[dict[str, Any]]] = {}
    for name, path, value in found:
        others = [v for v in seen[_name(path)] if v != value][:3]
        field = {"payload": name, "path": path, "values": [_changed(value), *others]}
        fields.setdefault(_name(path), []).append(field)
    return fields


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    index: dict[str, list[str]] = {}
    fields: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for group, payloads in (("status", status_payloads()), ("profile", profile_payloads())):
        for name, payload in payloads.items():
            (out / f"{name}.json").write_text(json.dumps(payload, ensure_ascii=False, indent=1))
        index[group] = list(payloads)
        fields[group] = drawn_fields(payloads)
    (out / "index.json").write_text(json.dumps(index, indent=1))
    (out / "fields.json").write_text(json.dumps(fields, ensure_ascii=False))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/client_payloads.py OUT_DIR")
    main(Path(sys.argv[1]))
