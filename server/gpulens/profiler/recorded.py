"""Captures recorded on the GPU machine (`tests/fixtures/profiler/*.json.gz`) played back as
`gpulens profile` reports them, so CI and the clients' tests see real records without a GPU.

A one-process recording holds the script's ``source``, its ``events`` and ``records``,
``backend``, ``gpus`` and ``error``. A torchrun job's (``ddp_two_ranks``) holds the job's
``source``, ``filename`` and ``cell``, and per rank its ``events``, ``records``,
``flight_recorder``, ``backend`` and ``gpus``: each rank is attributed and sized as
`gpulens.profiler.rank_child` does, then merged as the runner merges them.
"""

from __future__ import annotations

import copy
from typing import Any

from gpulens.profiler.attribution import attribute_records
from gpulens.profiler.cells import cell_by_number, split_cells
from gpulens.profiler.collectives import size_collectives
from gpulens.profiler.merge import RankResult, merge_ranks
from gpulens.profiler.rank_child import collectives_of
from gpulens.profiler.report import build_payload


def replay(recording: dict[str, Any], name: str) -> dict[str, Any]:
    """The `gpulens.profile/2.1` payload of a recording named ``name``: the whole file of a
    one-process script (lines from 1), or every rank of a job, merged."""
    if "ranks" in recording:
        return replay_job(recording)
    return build_payload(
        attribute_records(recording["events"], recording["records"]),
        source={"path": f"{name}.py", "cell": None, "first_line": 1},
        backend=recording["backend"],
        gpus=recording["gpus"],
        error=recording["error"],
        code=recording["source"].splitlines(),
    )


def replay_rank(recording: dict[str, Any], rank: str) -> RankResult:
    """One rank as `rank_child` makes it: sized from its flight recorder, attributed, built."""
    capture = recording["ranks"][rank]
    cell = cell_by_number(split_cells(recording["source"]), recording["cell"])
    if cell is None:
        raise ValueError(f"the recording has no cell {recording['cell']}")
    records = copy.deepcopy(capture["records"])
    records["kernels"].pop("bytes", None)  # sized again here, from the flight recorder
    events = capture["events"]
    warnings = size_collectives(records, capture["flight_recorder"], events["start"], events["end"])
    attributed = attribute_records(events, records)
    payload = build_payload(
        attributed,
        source={"path": recording["filename"], "cell": 1, "first_line": cell.first_line},
        backend=capture["backend"],
        gpus=capture["gpus"],
        warnings=warnings,
        code=cell.source.splitlines(),
    )
    return RankResult(
        rank=int(rank), payload=payload, collectives=collectives_of(attributed["lines"])
    )


def replay_job(recording: dict[str, Any]) -> dict[str, Any]:
    """The merged `gpulens.profile/2.1` payload of every rank in the recording."""
    results = [replay_rank(recording, rank) for rank in sorted(recording["ranks"], key=int)]
    first = results[0]["payload"]
    return merge_ranks(
        results,
        world_size=len(results),
        failures={},
        source=first["source"],
        code=first["code"],
        wall_s=max(result["payload"]["wall_s"] for result in results),
    )
