"""GPU memory per line on records recorded on an H200 (torch 2.11, cupti-python 13.0.1).

`scripts/record_memory_probe.py` ran five statements whose allocations are known by
construction, taking a Unix-time mark between each, under CUPTI's memory records and
torch's allocator history (tests/fixtures/profiler/raw/memory_probe_h200.json.gz). Here the
marks are the line timeline (each statement one line, the loop one line) and the records
go through the capture's own conversions (`capture.memory`) and the attribution, as a
profile's would:

1. ``x = torch.empty(2**28, device="cuda")``: 1 GiB allocated, and reserved from the driver
2. ``y = torch.ones(1000, 1000, device="cuda")``: 4,000,000 bytes allocated (a 20 MiB segment)
3. ``del x``: 1 GiB freed, kept in torch's cache (the driver's view does not move)
4. three ``z = randn(4096, 4096) @ randn(4096, 4096); del z``: 64 MiB blocks in and out,
   cuBLAS's 32 MiB workspace kept, and cuBLAS's own driver allocations
5. ``torch.cuda.empty_cache()``: an unused 2 MiB segment given back to the driver
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.capture.memory import (
    allocator_columns,
    bytes_before,
    driver_memory_columns,
    operation_signs,
)
from gpulens.profiler.report import build_payload, render_text
from gpulens.profiler.timeline import LINE, RETURN, START

from .conftest import FIXTURES

GiB, MiB = 2**30, 2**20
# CUpti_ActivityMemoryKind and CUpti_ActivityMemoryOperationType, as cupti-python names them
MEMORY_KINDS = {
    0: "unknown",
    1: "pageable",
    2: "pinned",
    3: "device",
    4: "array",
    5: "managed",
    6: "device_static",
    7: "managed_static",
}
OPERATIONS = {0: "invalid", 1: "allocation", 2: "release"}
EMPTY, ONES, DEL, LOOP, EMPTY_CACHE = 1, 2, 3, 4, 5
CODE = [
    'x = torch.empty(2**28, device="cuda")',
    'y = torch.ones(1000, 1000, device="cuda")',
    "del x",
    "for _ in range(3): z = randn(4096, 4096) @ randn(4096, 4096); del z",
    "torch.cuda.empty_cache()",
]


@pytest.fixture(scope="module")
def probe() -> dict[str, Any]:
    with gzip.open(FIXTURES / "raw" / "memory_probe_h200.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def line_events(probe: dict[str, Any]) -> dict[str, Any]:
    """Each statement a line, from the mark before it to the mark after it."""
    marks = probe["marks"]
    starts = [
        (marks["before_empty"], EMPTY),
        (marks["after_empty"], ONES),
        (marks["after_ones"], DEL),
        (marks["after_del"], LOOP),
        (marks["after_loop"], EMPTY_CACHE),
    ]
    begin, end = marks["before_empty"] - 1, marks["after_empty_cache"]
    rows = [(begin, START, 0), *((t, LINE, line) for t, line in starts), (end, RETURN, 0)]
    return {
        "t": [t for t, _, _ in rows],
        "kind": [kind for _, kind, _ in rows],
        "code": [0] * len(rows),
        "line": [line for _, _, line in rows],
        "codes": ["<module>"],
        "start": begin,
        "end": end + 1,
    }


def memory_records(probe: dict[str, Any]) -> dict[str, Any]:
    """The probe's records as the capture makes them, on its timeline's clock (Unix time:
    CUPTI's timestamps moved by the offset of the two clocks read together)."""
    allocator = allocator_columns(probe["torch_traces"], lambda ns: ns)
    cupti = {
        field: [record[field] for record in probe["cupti_records"]]
        for field in (
            "correlation_id",
            "timestamp",
            "bytes",
            "device_id",
            "memory_kind",
            "memory_operation_type",
        )
    }
    driver = driver_memory_columns(cupti, MEMORY_KINDS, operation_signs(OPERATIONS))
    offset = probe["c0"] - probe["t0_ns"]
    driver["start"] = [t - offset for t in driver["start"]]
    # the probe began with nothing allocated: its one earlier tensor was never kept
    return {
        "allocator": allocator,
        "allocator_before": {"device": [0], "bytes": [0]},
        "driver_memory": driver,
    }


def payload_of(probe: dict[str, Any]) -> dict[str, Any]:
    attributed = attribute_records(line_events(probe), memory_records(probe))
    return build_payload(
        attributed,
        source={"path": "probe.py", "cell": None, "first_line": 1},
        backend="cupti",
        gpus=[{"index": 0, "name": "NVIDIA H200"}],
        code=CODE,
    )


def test_the_capture_keeps_device_memory_with_its_sign(probe: dict[str, Any]) -> None:
    driver = memory_records(probe)["driver_memory"]
    # 44 records: the device allocations and the one release; a library's static globals
    # (curand's tables, cuBLAS's constants) are not memory a line allocated
    assert sorted(driver["bytes"]) == sorted([GiB, 20 * MiB, 1024, 128 * 1024, 64 * MiB, -2 * MiB])
    allocator = memory_records(probe)["allocator"]
    assert (
        sum(size for size in allocator["bytes"] if size > 0)
        == GiB + 4_000_000 + 9 * 64 * MiB + 32 * MiB
    )
    assert sum(allocator["bytes"]) == 4_000_000 + 32 * MiB  # y and cuBLAS's workspace stay


def test_each_statement_has_the_memory_it_allocated_and_freed(probe: dict[str, Any]) -> None:
    lines = {line["line"]: line["memory"] for line in payload_of(probe)["lines"]}
    assert lines[EMPTY] == {
        "allocated": {"alloc": GiB, "free": 0, "net": GiB},
        "reserved": {"alloc": GiB, "free": 0, "net": GiB},
    }
    assert lines[ONES]["allocated"]["net"] == 4_000_000
    assert lines[ONES]["reserved"]["net"] == 20 * MiB
    assert lines[DEL] == {
        "allocated": {"alloc": 0, "free": GiB, "net": -GiB},
        "reserved": {"alloc": 0, "free": 0, "net": 0},
    }
    assert lines[LOOP]["allocated"] == {
        "alloc": 9 * 64 * MiB + 32 * MiB,
        "free": 9 * 64 * MiB,
        "net": 32 * MiB,
    }
    assert lines[LOOP]["reserved"]["net"] == 1024 + 128 * 1024 + 64 * MiB
    assert lines[EMPTY_CACHE] == {
        "allocated": {"alloc": 0, "free": 0, "net": 0},
        "reserved": {"alloc": 0, "free": 2 * MiB, "net": -2 * MiB},
    }


def test_the_peak_is_named_on_the_line_that_reached_it(probe: dict[str, Any]) -> None:
    peak = payload_of(probe)["peak"]
    # x and y held together: the most allocated at once, first reached when y was made
    assert peak["allocated"] == [
        {"device": 0, "bytes": GiB + 4_000_000, "rise": GiB + 4_000_000, "line": ONES}
    ]
    # the driver never took back more than the 2 MiB segment: its peak came in the loop,
    # with what was held before the cell unknown
    assert peak["reserved"] == [
        {
            "device": 0,
            "bytes": None,
            "rise": GiB + 20 * MiB + 1024 + 128 * 1024 + 64 * MiB,
            "line": LOOP,
        }
    ]


def test_memory_reaches_the_label_hover_table_and_notes(probe: dict[str, Any]) -> None:
    payload = payload_of(probe)
    lines = {line["line"]: line for line in payload["lines"]}
    assert lines[EMPTY]["label"] == "1 hit · 5.3 ms host · +1.0 GiB mem"
    assert lines[ONES]["label"].endswith(" · +3.8 MiB mem · peak 1.0 GiB")
    assert lines[DEL]["label"].endswith(" · −1.0 GiB mem")
    hover = lines[DEL]["hover"]
    assert "- GPU memory (torch's allocator): 0 B allocated · 1.0 GiB freed · net −1.0 GiB" in hover
    assert "the driver" not in hover  # nothing went back to the driver: torch kept it
    assert (
        "reached the cell's peak: 1.0 GiB allocated, all of it since the cell began"
        in (lines[ONES]["hover"])
    )
    assert (
        "- GPU memory (the driver): 0 B reserved · 2.0 MiB released · net −2.0 MiB"
        in (lines[EMPTY_CACHE]["hover"])
    )
    # in the table, under the line's GPU work: its memory, and the peak on a row of its own
    table = payload["display"]["table"]
    assert [column["title"] for column in table["columns"]] == [
        "Line",
        "Hits",
        "Host",
        "GPU work",
        "Source",
    ]
    memory = {row["line"]: row["cells"][3] for row in table["rows"]}
    assert memory == {
        EMPTY: "+1.0 GiB mem",
        ONES: "+3.8 MiB mem\n▲ peak 1.0 GiB",
        DEL: "−1.0 GiB mem",
        LOOP: "+32 MiB mem",
        EMPTY_CACHE: "",  # torch's allocator did nothing there (the driver's view did)
    }
    assert "peak 1.0 GiB at line 2" in payload["display"]["header"]
    assert (
        "GPU memory (torch's allocator): peak 1.0 GiB allocated at line 2"
        in payload["display"]["notes"]
    )
    assert (
        "GPU memory (the driver): reserved memory rose by at most 1.1 GiB at line 4"
        in payload["display"]["notes"]
    )
    assert "▲ peak: the most held at once, first reached on that line" in table["legend"]
    assert "▲ peak 1.0 GiB" in render_text(payload)


def test_bytes_held_before_come_from_what_is_held_at_the_end(probe: dict[str, Any]) -> None:
    allocator = memory_records(probe)["allocator"]
    # at the end torch held y and cuBLAS's workspace; every change since the first event
    # taken away from that leaves what was held before it: nothing
    held_now = {0: 4_000_000 + 32 * MiB}
    assert bytes_before(allocator, held_now) == {"device": [0], "bytes": [0]}
    # and a history that lost its oldest events still starts from what was held then
    later = {key: column[1:] for key, column in allocator.items()}  # x's alloc gone
    assert bytes_before(later, held_now) == {"device": [0], "bytes": [GiB]}
