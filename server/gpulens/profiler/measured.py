"""Profile-confirmed findings: what a profile measured on each line, merged into what the
analysis found there. Pure: a payload, a text and findings in; findings out.

The analysis guesses; a profile of the same lines measures. `merge_measured` joins them by
line:

- A finding whose rule's cost lands on its own line (`MEASURED_BY`: a sync, a copy, the
  kernels of an element-wise loop) and whose line ran in the profile carries the measured
  figures in its message ("200 syncs, 1.5 ms stalled in the last profile").
- Where that line's cost was negligible (under `NEGLIGIBLE_SHARE` of the cell's wall time),
  or the line made none of the work the rule warns of, the finding drops to a hint that says
  so.
- A line that measured repeated syncs (GPU001), per-iteration small copies to the GPU
  (GPU002) or copies from pageable memory (GPU005) where no finding of the line speaks of
  that work gets a finding of its own, `origin == "profile"`, with the fixes the analysis
  offers once the profile's word is taken that the value is on the GPU
  (`analysis.assumed`).

Rules whose cost lands on another line (a DataLoader's copies, a layer's kernels, a clock
read, a hard-coded device) are left as they are. Only the profiles of a GPU backend (cupti,
torch) are merged: the host backend records no GPU work, so it could confirm nothing.
Suppression comments and the rule selection apply to the profile's findings as to the rest.
"""

from __future__ import annotations

import difflib
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gpulens.analysis.assumed import GpuProbe
from gpulens.analysis.config import Config, is_suppressed, suppressions
from gpulens.analysis.model import Finding, Severity, Span
from gpulens.analysis.source import split_lines
from gpulens.profiler.display import device_seconds
from gpulens.profiler.hints import SYNC_LOOP_HITS, line_hints, per_run, pinned_bandwidth
from gpulens.profiler.schema import KERNELS, MEMSETS, SYNCS, TRANSFERS, PayloadLine
from gpulens.profiler.units import short_bytes, short_count, short_seconds

if TYPE_CHECKING:
    from gpulens.profiler.probe_memo import MemoProbe

# a line whose cost is under this share of its cell's wall time is not worth a warning
NEGLIGIBLE_SHARE = 0.01
# copies to the GPU at most this large on average pay mostly the copy's fixed latency
SMALL_COPY_BYTES = 64 * 1024
# backends that record GPU work: a line's silence there is a measurement
GPU_BACKENDS = frozenset({"cupti", "torch"})

# what a profile measures of each rule on the finding's own line
SYNCS_WORK, COPIES_WORK, KERNELS_WORK = "syncs", "copies", "kernels"
MEASURED_BY: Mapping[str, tuple[str, ...]] = {
    "GPU001": (SYNCS_WORK,),
    "GPU002": (COPIES_WORK,),
    "GPU003": (COPIES_WORK,),
    "GPU006": (COPIES_WORK, SYNCS_WORK),
    "GPU008": (SYNCS_WORK,),
    "GPU009": (KERNELS_WORK, COPIES_WORK, SYNCS_WORK),
}
_NONE_OF = {
    SYNCS_WORK: "no wait for the GPU",
    COPIES_WORK: "no copy to the GPU",
    KERNELS_WORK: "no GPU work",
}

ORIGIN_ANALYSIS, ORIGIN_PROFILE = "analysis", "profile"


@dataclass(frozen=True, slots=True)
class MeasuredLine:
    """One line of a profile, placed on the text being checked."""

    figures: PayloadLine  # the payload's line: hits, host_s, a block per record kind
    wall_s: float  # the profiled cell's wall time
    backend: str


@dataclass(frozen=True, slots=True)
class Merged:
    """A finding as shown once the profile is merged in."""

    finding: Finding
    origin: str  # ORIGIN_ANALYSIS, or ORIGIN_PROFILE: the profile found it, the analysis did not
    measured: bool  # its message carries figures of the profile

    @property
    def from_profile(self) -> bool:
        """The profile found it where the analysis was silent."""
        return self.origin == ORIGIN_PROFILE


# -- placing a profile on a text -----------------------------------------------------------------
def place_lines(payload: Mapping[str, Any], text_lines: Sequence[str]) -> dict[int, PayloadLine]:
    """The payload's lines on `text_lines` (the text now, without line breaks), 0-based.

    The payload holds the source it profiled (`code`, from `source.first_line`): its lines
    are matched to the text as a diff matches them, so a line edited since the profile has no
    figures and the others follow the lines moved above them. A payload without its source
    is taken at its line numbers."""
    by_number: dict[int, PayloadLine] = {
        int(line["line"]): line
        for line in payload.get("lines") or []
        if isinstance(line, dict) and isinstance(line.get("line"), int)
    }
    code = [str(line).rstrip("\r\n") for line in payload.get("code") or []]
    if not code:
        return {n - 1: figures for n, figures in by_number.items() if 0 < n <= len(text_lines)}
    first = int((payload.get("source") or {}).get("first_line") or 1)
    current = [line.rstrip("\r\n") for line in text_lines]
    matcher = difflib.SequenceMatcher(a=code, b=current, autojunk=False)
    placed: dict[int, PayloadLine] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            figures = by_number.get(first + block.a + offset)
            if figures is not None:
                placed[block.b + offset] = figures
    return placed


def place_profile(payload: Mapping[str, Any], text_lines: Sequence[str]) -> dict[int, MeasuredLine]:
    """`place_lines`, as measurements to merge: empty for a backend that records no GPU
    work."""
    backend = str(payload.get("backend") or "")
    if backend not in GPU_BACKENDS:
        return {}
    wall = float(payload.get("wall_s") or 0.0)
    return {
        line: MeasuredLine(figures, wall, backend)
        for line, figures in place_lines(payload, text_lines).items()
    }


# -- merging -------------------------------------------------------------------------------------
def merge_measured(
    findings: Sequence[Finding],
    measured: Mapping[int, MeasuredLine],
    text: str,
    config: Config,
    *,
    program: str | None = None,
    probe: GpuProbe | MemoProbe | None = None,
    lines: Sequence[str] | None = None,
) -> list[Merged]:
    """`findings` of `text` with the profile's figures (`measured`, by 0-based line) merged
    in, and the profile's own findings added; sorted by position and code. `program`: the
    whole program `text` is part of (a notebook's cells), whose imports tell the framework
    of a value the profile found on the GPU. `probe`: what the analysis would find on a
    line if its values were on the GPU, where the caller has one of this text that reuses
    its analysis (`probe_memo`); by default a `GpuProbe` of `text` and `program`. `lines`:
    `split_lines(text)`, where the caller has them.

    Costs in proportion to the findings on measured lines, but for one pass over the
    findings and their sort: a 2 MB text has ~10,000."""
    if not measured:
        return [Merged(f, ORIGIN_ANALYSIS, False) for f in findings]
    merged: list[Merged] = []
    keys: list[tuple[int, int, str, str]] = []  # each one's place in the order shown
    touching: list[Finding] = []  # the findings on measured lines
    for finding in findings:
        span = finding.span
        if span.line == span.end_line:
            on_measured = span.line in measured
        else:
            on_measured = any(n in measured for n in range(span.line, span.end_line + 1))
        if on_measured:
            touching.append(finding)
            merged.append(_confirmed(finding, measured))
        else:
            merged.append(Merged(finding, ORIGIN_ANALYSIS, False))
        keys.append((span.line, span.column, finding.code, ORIGIN_ANALYSIS))
    if lines is None:
        lines = split_lines(text)
    speaking = _work_spoken_of(touching)
    added: list[Merged] = []  # the profile's own findings
    if probe is None:
        probe = GpuProbe(text, program=program)  # parses the text once, if a line needs it
    for line, facts in sorted(measured.items()):
        if line >= len(lines):
            continue
        found = _profile_findings(
            line,
            facts,
            lines=lines,
            config=config,
            speaking=speaking,
            probe=probe,
        )
        for finding in found:
            if config.enabled(finding.code) and not _suppressed(finding, lines):
                added.append(Merged(finding, ORIGIN_PROFILE, True))
    return _in_order(merged, keys, added)


def _in_order(
    merged: list[Merged], keys: list[tuple[int, int, str, str]], added: list[Merged]
) -> list[Merged]:
    """``merged`` (the analysis's findings, whose places are ``keys``) and ``added`` sorted
    by position, code and origin, as a stable sort of the two gives. The analysis's come
    sorted already (then the few added are put in place), but not from every caller."""
    if any(keys[i] > keys[i + 1] for i in range(len(keys) - 1)):
        both = [*merged, *added]
        both.sort(
            key=lambda m: (m.finding.span.line, m.finding.span.column, m.finding.code, m.origin)
        )
        return both
    for item in sorted(
        added, key=lambda m: (m.finding.span.line, m.finding.span.column, m.finding.code)
    ):
        span = item.finding.span
        key = (span.line, span.column, item.finding.code, item.origin)
        at = bisect_right(keys, key)
        keys.insert(at, key)
        merged.insert(at, item)
    return merged


def _suppressed(finding: Finding, lines: Sequence[str]) -> bool:
    """Whether a comment on the finding's first or last line silences it (`is_suppressed`,
    reading those lines alone)."""
    span = finding.span
    table: dict[int, frozenset[str] | None] = {}
    for line in {span.line, span.end_line}:
        if line < len(lines):
            table.update((line, codes) for codes in suppressions([lines[line]]).values())
    return is_suppressed(finding, table)


def _work_spoken_of(findings: Sequence[Finding]) -> dict[int, set[str]]:
    """Per 0-based line, the work its findings warn of: where one does, the profile adds
    no finding of its own about that work."""
    spoken: dict[int, set[str]] = {}
    for finding in findings:
        for line in range(finding.span.line, finding.span.end_line + 1):
            spoken.setdefault(line, set()).update(MEASURED_BY.get(finding.code, ()))
    return spoken


def _confirmed(finding: Finding, measured: Mapping[int, MeasuredLine]) -> Merged:
    work = MEASURED_BY.get(finding.code)
    span = finding.span
    facts = [measured[n] for n in range(span.line, span.end_line + 1) if n in measured]
    if not work or not facts:
        return Merged(finding, ORIGIN_ANALYSIS, False)
    line = _combined([fact.figures for fact in facts])
    hits = int(line.get("hits") or 0)
    if not hits:
        return Merged(finding, ORIGIN_ANALYSIS, False)
    wall = facts[0].wall_s
    figures = [words for kind in work if (words := _work_words(kind, line))]
    took = _took(line, wall)
    if not figures:
        nothing = " and ".join(_NONE_OF[kind] for kind in work)
        message = (
            f"The last profile ran this line {_times(hits)} and measured {nothing} on it "
            f"({took}): the value may not be on the GPU where it ran. {finding.message}"
        )
        return Merged(
            replace(finding, severity=Severity.HINT, message=message), ORIGIN_ANALYSIS, True
        )
    measured_words = "; ".join(figures)
    if _negligible(line, wall):
        message = (
            f"Measured negligible in the last profile: {measured_words}; {took}. {finding.message}"
        )
        return Merged(
            replace(finding, severity=Severity.HINT, message=message), ORIGIN_ANALYSIS, True
        )
    message = f"{finding.message} Measured in the last profile: {measured_words}; {took}."
    return Merged(replace(finding, message=message), ORIGIN_ANALYSIS, True)


def _profile_findings(
    line: int,
    facts: MeasuredLine,
    *,
    lines: Sequence[str],
    config: Config,
    speaking: Mapping[int, set[str]],
    probe: GpuProbe | MemoProbe,
) -> list[Finding]:
    """The findings the profile makes on `line` where the analysis was silent about it."""
    figures = facts.figures
    spoken = speaking.get(line, set())
    negligible = _negligible(figures, facts.wall_s)
    severity = Severity.HINT if negligible else None
    lead = (
        "Measured negligible in the last profile" if negligible else "Measured in the last profile"
    )
    took = _took(figures, facts.wall_s)
    line_figures = dict(figures)
    hints = {
        hint["code"]: hint["message"]
        for hint in line_hints(line_figures, pinned_bandwidth([line_figures]))
    }
    span = _line_span(lines[line], line)
    found: list[Finding] = []
    if "GPU001" in hints and SYNCS_WORK not in spoken:
        syncs = figures.get(SYNCS.key) or {}
        message = (
            f"{lead}: the host waited for the GPU {_times(int(syncs.get('count') or 0))} on "
            f"this line ({short_seconds(float(syncs.get('stall_s') or 0))} stalled), "
            f"{per_run(int(syncs.get('count') or 0), int(figures.get('hits') or 0))}; {took}. "
            "The CPU stops feeding the GPU at each wait: keep the value on the device and read "
            "it once after the loop, or every N steps."
        )
        assumed = probe.findings(line, ("GPU001",), config)
        fixes = tuple(fix for finding in assumed for fix in finding.fixes)
        where = assumed[0].span if assumed else span
        found.append(
            _finding("GPU001", message, where, severity=severity, config=config, fixes=fixes)
        )
    small = _small_copies(figures)
    if small and COPIES_WORK not in spoken:
        found.append(
            _finding("GPU002", f"{lead}: {small}; {took}.", span, severity=severity, config=config)
        )
    if "pinned-memory" in hints and COPIES_WORK not in spoken:
        message = f"{lead}: {hints['pinned-memory']}; {took}."
        found.append(_finding("GPU005", message, span, severity=severity, config=config))
    return found


def _finding(
    code: str,
    message: str,
    span: Span,
    *,
    severity: Severity | None,
    config: Config,
    fixes: tuple[Any, ...] = (),
) -> Finding:
    shown = severity or config.severity_of(code, Severity.WARNING)
    return Finding(code, shown, message, span, fixes)


def _small_copies(line: PayloadLine) -> str | None:
    """Words for a line that copied small pieces to the GPU at least once per run, or None."""
    block = (line.get(TRANSFERS.key) or {}).get("htod") or {}
    count, size = int(block.get("count") or 0), int(block.get("bytes") or 0)
    hits = int(line.get("hits") or 0)
    if count < max(SYNC_LOOP_HITS, hits) or not size or size / count > SMALL_COPY_BYTES:
        return None
    return (
        f"{_copies(count)} to the GPU of "
        f"{short_bytes(size / count)} each on this line "
        f"({short_seconds(float(block.get('s') or 0))}), at least one per run: each pays a "
        "copy's fixed cost. Stack the pieces on the host and copy once, or make them on the GPU"
    )


# -- words ---------------------------------------------------------------------------------------
def _times(count: int) -> str:
    return "once" if count == 1 else f"{short_count(count)} times"


def _copies(count: int) -> str:
    return f"{short_count(count)} cop{'y' if count == 1 else 'ies'}"


def _share(share: float) -> str:
    if share < 0.001:
        return "under 0.1 %"
    return f"{share * 100:.1f} %" if share < 0.1 else f"{share * 100:.0f} %"


def _took(line: PayloadLine, wall_s: float) -> str:
    """ "the line ran 200 times and took 9.1 ms, 1.5 % of the cell's 595 ms"."""
    spent = _cost(line)
    text = f"the line ran {_times(int(line.get('hits') or 0))} and took {short_seconds(spent)}"
    if wall_s > 0:
        text += f", {_share(spent / wall_s)} of the cell's {short_seconds(wall_s)}"
    return text


def _work_words(kind: str, line: PayloadLine) -> str | None:
    if kind == SYNCS_WORK:
        syncs = line.get(SYNCS.key) or {}
        count = int(syncs.get("count") or 0)
        if not count:
            return None
        stall = short_seconds(float(syncs.get("stall_s") or 0))
        return f"{short_count(count)} sync{'' if count == 1 else 's'}, {stall} stalled"
    if kind == COPIES_WORK:
        block = (line.get(TRANSFERS.key) or {}).get("htod") or {}
        count = int(block.get("count") or 0)
        if not count:
            return None
        size = int(block.get("bytes") or 0)
        figures = [short_bytes(size)] if size else []
        figures.append(short_seconds(float(block.get("s") or 0)))
        text = f"{_copies(count)} to the GPU ({', '.join(figures)})"
        pageable = int(block.get("pageable") or 0)
        if pageable:
            text += f", {short_count(pageable)} from pageable memory"
        return text
    kernels = line.get(KERNELS.key) or {}
    count = int(kernels.get("count") or 0)
    memsets = int((line.get(MEMSETS.key) or {}).get("count") or 0)
    if not count and not memsets:
        return None
    spent = short_seconds(device_seconds(line))
    return f"{short_count(count + memsets)} GPU launches, {spent} on the GPU"


# -- figures -------------------------------------------------------------------------------------
def _cost(line: PayloadLine) -> float:
    """What the line cost the cell: its host time (waits for the GPU included), or its GPU
    work's time where that ran longer."""
    return max(float(line.get("host_s") or 0), device_seconds(line))


def _negligible(line: PayloadLine, wall_s: float) -> bool:
    return wall_s > 0 and _cost(line) < NEGLIGIBLE_SHARE * wall_s


def _combined(lines: Sequence[PayloadLine]) -> PayloadLine:
    """The figures of the lines one finding spans, as one line (runs: the most of any)."""
    if len(lines) == 1:
        return lines[0]
    out: dict[str, Any] = {"hits": max(int(line.get("hits") or 0) for line in lines)}
    out["host_s"] = sum(float(line.get("host_s") or 0) for line in lines)
    out[SYNCS.key] = {
        "count": sum(int((line.get(SYNCS.key) or {}).get("count") or 0) for line in lines),
        "stall_s": sum(float((line.get(SYNCS.key) or {}).get("stall_s") or 0) for line in lines),
    }
    out[KERNELS.key] = {
        "count": sum(int((line.get(KERNELS.key) or {}).get("count") or 0) for line in lines),
        "gpu_s": sum(float((line.get(KERNELS.key) or {}).get("gpu_s") or 0) for line in lines),
    }
    directions: dict[str, dict[str, Any]] = {}
    for line in lines:
        for key, block in (line.get(TRANSFERS.key) or {}).items():
            total = directions.setdefault(key, {"count": 0, "bytes": 0, "s": 0.0, "pageable": 0})
            for field in total:
                total[field] += block.get(field) or 0
    out[TRANSFERS.key] = directions
    return out


def _line_span(text: str, line: int) -> Span:
    """The line's code, without its indentation and trailing blanks."""
    body = text.rstrip("\r\n")
    start = len(body) - len(body.lstrip())
    return Span(line, start, line, len(body.rstrip()))
