"""The profile payload's version, and its record kinds, each defined once.

A kind is one sort of GPU work a line can make: kernels, copies (per direction), memsets,
host waits on the GPU. Each kind below says, in one place, which capture records it is
tallied from (`family`, `columns`), how its records add to their lines (`tally`), what the payload
line holds of it (`payload`), how much GPU time it stands for (`device_s`, the heat scale),
and how people read it: the label beside the line, the hover's rows and the text table's
cell. The attribution, the payload builder, the hints and every rendering iterate
`RECORD_KINDS`, so a new kind is one class here (and its records in the capture); the
editor clients draw the strings the payload carries and need no change.

Tallies are in integer nanoseconds (the attribution's clock); payload lines in seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from gpulens.profiler.collectives import collective_names
from gpulens.profiler.units import short_bytes, short_count, short_seconds

# the profile payload's version, written by every producer (`report`, `merge`, `display`)
# and checked by every consumer: the minor version grows with fields a reader of the same
# major version may ignore (2.1: per line `memory`, `gpu_idle_s` and `own_s`; per cell
# `peak` and `gpu_busy`)
SCHEMA = "gpulens.profile/2.1"

# a line of the attribution, while records are tallied: see `new_line_cost`
LineCost = dict[str, Any]
# a line of the payload (seconds, JSON): see `RecordKind.payload`
PayloadLine = dict[str, Any]
# a capture's records of one family: equal-length columns by name
Family = Mapping[str, Sequence[Any]]
# the line of the call (by correlation id) that made a record; None where there is none
Place = Callable[[int], LineCost | None]


def rows(family: Family, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """The family's records as rows of `columns`."""
    return zip(*(family.get(name, ()) for name in columns), strict=True)


@dataclass(frozen=True)
class Direction:
    """A copy direction: its key in `transfers`, and how people read it."""

    key: str
    arrow: str
    words: str

    @property
    def mark(self) -> str:
        """What a label puts before the bytes: the arrow, or the name of a direction
        without one."""
        return self.arrow or f"{self.key} "

    @property
    def name(self) -> str:
        """The direction in a hover row: arrow and words."""
        return f"{self.arrow} {self.words}" if self.arrow else self.words


DIRECTIONS = (
    Direction("htod", "↑", "host→device"),
    Direction("dtoh", "↓", "device→host"),
    Direction("dtod", "↔", "device→device"),
)
_BY_KEY = {direction.key: direction for direction in DIRECTIONS}


def direction(key: str) -> Direction:
    """The direction named `key`; one the schema does not know is read by its name."""
    return _BY_KEY.get(key) or Direction(key, "", key)


def plural(count: int, word: str) -> str:
    return f"{short_count(count)} {word}{'' if count == 1 else 's'}"


def seconds(ns: int) -> float:
    """Nanoseconds of the attribution as the payload's seconds."""
    return round(ns / 1e9, 9)


def _block(line: PayloadLine, key: str) -> dict[str, Any]:
    block = line.get(key)
    return block if isinstance(block, dict) else {}


def device_tally(cost: LineCost, device: int) -> dict[str, int]:
    """A line's figures on one GPU (only shown when a cell used several, or not GPU 0)."""
    found: dict[str, int] | None = cost["devices"].get(device)
    if found is None:
        found = cost["devices"][device] = {
            "kernels": 0,
            "kernel_ns": 0,
            "transfers": 0,
            "transfer_bytes": 0,
            "transfer_ns": 0,
        }
    return found


class RecordKind:
    """One kind of GPU work. Subclasses fill in the class attributes and the methods."""

    key: ClassVar[str]  # in a payload line, in `unattributed`, and in the attribution's lines
    family: ClassVar[str]  # the capture's record family it is tallied from
    columns: ClassVar[tuple[str, ...]]  # the family's columns `tally` reads, `corr` first
    legend: ClassVar[str]  # what its table parts say, under the table ("": they say it)

    def empty(self) -> dict[str, Any]:
        """The line's tally of this kind, under `key`."""
        raise NotImplementedError

    def line_fields(self) -> dict[str, Any]:
        """Other tallies of the line this kind keeps (beside `key`), empty."""
        return {}

    def tally(self, family: Family, place: Place, devices: set[int], names: Sequence[str]) -> None:
        """Adds each record of the family to the line `place` gives its call (None: no line),
        and the GPU it ran on to `devices`. One loop per kind, with no call per record
        beyond `place`: a busy cell has tens of thousands of records."""
        raise NotImplementedError

    def payload(self, cost: LineCost) -> dict[str, Any]:
        """The payload line's fields for this kind (seconds), from the line's tally."""
        raise NotImplementedError

    def made_work(self, line: PayloadLine) -> bool:
        raise NotImplementedError

    def device_s(self, line: PayloadLine) -> float:
        """Seconds of GPU time the line's work of this kind took (0 for host waits)."""
        return 0.0

    def label(self, line: PayloadLine) -> list[str]:
        """Parts of the text drawn after the line."""
        raise NotImplementedError

    def hover(self, line: PayloadLine) -> list[str]:
        """Rows of the hover's list (plain text: no Markdown markup)."""
        raise NotImplementedError

    def cell(self, line: PayloadLine) -> list[str]:
        """Its parts of the table's "GPU work" cell, one per row (none: no such work)."""
        raise NotImplementedError


class Kernels(RecordKind):
    key = "kernels"
    family = "kernels"
    columns = ("corr", "start", "end", "device", "name")
    legend = ""  # "1.4k kernels 8.4 ms" says what it is
    # kernels listed by name in a line's payload, the longest first
    TOP = 5

    def empty(self) -> dict[str, Any]:
        return {"count": 0, "ns": 0, "by_name": {}}

    def tally(self, family: Family, place: Place, devices: set[int], names: Sequence[str]) -> None:
        collectives = collective_names(names)  # NCCL's kernels are `Collectives`' records
        key, count = self.key, len(names)
        for corr, begin, finish, device, name in rows(family, self.columns):
            devices.add(device)
            if name in collectives:
                continue
            cost = place(corr)
            if cost is None:
                continue
            ns = finish - begin
            block = cost[key]
            block["count"] += 1
            block["ns"] += ns
            label = names[name] if 0 <= name < count else "?"
            by_name = block["by_name"].get(label)
            if by_name is None:
                by_name = block["by_name"][label] = [0, 0]
            by_name[0] += 1
            by_name[1] += ns
            per_device = cost["devices"].get(device) or device_tally(cost, device)
            per_device["kernels"] += 1
            per_device["kernel_ns"] += ns

    def payload(self, cost: LineCost) -> dict[str, Any]:
        block = cost[self.key]
        by_name = sorted(block["by_name"].items(), key=lambda item: -item[1][1])
        return {
            self.key: {
                "count": block["count"],
                "gpu_s": seconds(block["ns"]),
                "top": [
                    {"name": name, "count": count, "gpu_s": seconds(ns)}
                    for name, (count, ns) in by_name[: self.TOP]
                ],
            }
        }

    def made_work(self, line: PayloadLine) -> bool:
        return bool(_block(line, self.key).get("count"))

    def device_s(self, line: PayloadLine) -> float:
        return float(_block(line, self.key).get("gpu_s") or 0)

    def label(self, line: PayloadLine) -> list[str]:
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        return [plural(block["count"], "kernel"), f"{short_seconds(block.get('gpu_s', 0))} GPU"]

    def hover(self, line: PayloadLine) -> list[str]:
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        return [
            f"{plural(block['count'], 'kernel')} · "
            f"{short_seconds(block.get('gpu_s', 0))} on the GPU"
        ]

    def cell(self, line: PayloadLine) -> list[str]:
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        return [f"{plural(block['count'], 'kernel')} {short_seconds(block.get('gpu_s', 0))}"]


class Collectives(RecordKind):
    """NCCL's collective kernels (all-reduce, broadcast, all-gather, ...): their GPU time
    includes the time the rank waited in them for the other ranks (`waited_s`, known once
    the ranks' figures are merged), and their bytes come from torch's flight recorder where
    it ran (`bytes` in the kernel records; None where unknown)."""

    key = "collectives"
    family = "kernels"
    columns = ("corr", "start", "end", "device", "name")
    legend = "⇄ NCCL collectives: count, bytes, GPU time (of it waiting for other ranks)"

    def empty(self) -> dict[str, Any]:
        # `sequence`: (start, ns, name) of each, for matching a collective across ranks
        return {"count": 0, "ns": 0, "bytes": 0, "unsized": 0, "by_name": {}, "sequence": []}

    def tally(self, family: Family, place: Place, devices: set[int], names: Sequence[str]) -> None:
        collectives = collective_names(names)
        if not collectives:
            return
        sizes = family.get("bytes") or [None] * len(family.get("corr", ()))
        for (corr, begin, finish, device, name), size in zip(
            rows(family, self.columns), sizes, strict=True
        ):
            if name not in collectives:
                continue
            cost = place(corr)
            if cost is None:
                continue
            ns = finish - begin
            block = cost[self.key]
            block["count"] += 1
            block["ns"] += ns
            if size is None or size < 0:
                block["unsized"] += 1
            else:
                block["bytes"] += size
            label = collectives[name]
            by_name = block["by_name"].setdefault(label, [0, 0])
            by_name[0] += 1
            by_name[1] += ns
            block["sequence"].append((begin, ns, label))
            per_device = device_tally(cost, device)
            per_device["kernels"] += 1
            per_device["kernel_ns"] += ns

    def payload(self, cost: LineCost) -> dict[str, Any]:
        block = cost[self.key]
        if not block["count"]:
            return {}
        by_name = sorted(block["by_name"].items(), key=lambda item: -item[1][1])
        return {
            self.key: {
                "count": block["count"],
                "gpu_s": seconds(block["ns"]),
                "bytes": None if block["unsized"] else block["bytes"],
                "top": [
                    {"name": name, "count": count, "gpu_s": seconds(ns)}
                    for name, (count, ns) in by_name[: Kernels.TOP]
                ],
            }
        }

    def made_work(self, line: PayloadLine) -> bool:
        return bool(_block(line, self.key).get("count"))

    def device_s(self, line: PayloadLine) -> float:
        return float(_block(line, self.key).get("gpu_s") or 0)

    def _figures(self, block: dict[str, Any]) -> str:
        size = block.get("bytes")
        text = f"{short_bytes(size)} " if size else ""
        text += short_seconds(block.get("gpu_s", 0))
        if block.get("waited_s"):
            text += f" ({short_seconds(block['waited_s'])} waiting)"
        return text

    def label(self, line: PayloadLine) -> list[str]:
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        return [f"⇄{short_count(block['count'])} {self._figures(block)}"]

    def hover(self, line: PayloadLine) -> list[str]:
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        size = block.get("bytes")
        row = f"⇄ {plural(block['count'], 'NCCL collective')}"
        if size is not None:
            row += f" · {short_bytes(size)}"
        row += f" · {short_seconds(block.get('gpu_s', 0))} on the GPU"
        if block.get("waited_s"):
            row += f", {short_seconds(block['waited_s'])} of it waiting for other ranks"
        names = ", ".join(
            f"{top['name']} ×{short_count(top['count'])}" for top in block.get("top") or []
        )
        return [row, names] if names else [row]

    def cell(self, line: PayloadLine) -> list[str]:
        """The waiting on a row of its own: the table's source column stays put."""
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        size = block.get("bytes")
        parts = [
            f"⇄{short_count(block['count'])} {f'{short_bytes(size)} ' if size else ''}"
            f"{short_seconds(block.get('gpu_s', 0))}"
        ]
        if block.get("waited_s"):
            parts.append(f"⇄ {short_seconds(block['waited_s'])} waiting")
        return parts


def _new_direction() -> dict[str, int]:
    return {"count": 0, "bytes": 0, "ns": 0, "pageable": 0, "pinned": 0}


class Transfers(RecordKind):
    key = "transfers"
    family = "memcpy"
    columns = ("corr", "start", "end", "device", "bytes", "copy_kind", "src_kind", "dst_kind")
    legend = "copies ↑ host→device, ↓ device→host, ↔ device→device: bytes, time"

    def empty(self) -> dict[str, Any]:
        return {d.key: _new_direction() for d in DIRECTIONS}

    def line_fields(self) -> dict[str, Any]:
        return {"pageable": {"bytes": 0, "ns": 0}, "pinned": {"bytes": 0, "ns": 0}}

    def tally(self, family: Family, place: Place, devices: set[int], names: Sequence[str]) -> None:
        for corr, begin, finish, device, size, copy_kind, src, dst in rows(family, self.columns):
            devices.add(device)
            cost = place(corr)
            if cost is None:
                continue
            ns = finish - begin
            block = cost[self.key].setdefault(copy_kind, _new_direction())
            block["count"] += 1
            block["bytes"] += size
            block["ns"] += ns
            # the host side of the copy: pageable memory is staged through a pinned buffer
            host_side = src if copy_kind == "htod" else dst if copy_kind == "dtoh" else None
            if host_side in {"pageable", "pinned"}:
                block[host_side] += 1
                cost[host_side]["bytes"] += size
                cost[host_side]["ns"] += ns
            per_device = device_tally(cost, device)
            per_device["transfers"] += 1
            per_device["transfer_bytes"] += size
            per_device["transfer_ns"] += ns

    def payload(self, cost: LineCost) -> dict[str, Any]:
        return {
            self.key: {
                key: {
                    "count": block["count"],
                    "bytes": block["bytes"],
                    "s": seconds(block["ns"]),
                    "pageable": block["pageable"],
                    "pinned": block["pinned"],
                }
                for key, block in cost[self.key].items()
            },
            # pageable and pinned copies' own bytes and time: the bandwidth hints quote
            "pageable": {"bytes": cost["pageable"]["bytes"], "s": seconds(cost["pageable"]["ns"])},
            "pinned": {"bytes": cost["pinned"]["bytes"], "s": seconds(cost["pinned"]["ns"])},
        }

    def _made(self, line: PayloadLine) -> list[tuple[Direction, dict[str, Any]]]:
        return [
            (direction(key), block)
            for key, block in _block(line, self.key).items()
            if isinstance(block, dict) and block.get("count")
        ]

    def made_work(self, line: PayloadLine) -> bool:
        return bool(self._made(line))

    def device_s(self, line: PayloadLine) -> float:
        return float(sum(block.get("s") or 0 for _, block in self._made(line)))

    def label(self, line: PayloadLine) -> list[str]:
        return [
            f"{d.mark}{short_bytes(block.get('bytes', 0))} {short_seconds(block.get('s', 0))}"
            for d, block in self._made(line)
        ]

    def hover(self, line: PayloadLine) -> list[str]:
        rows = []
        for d, block in self._made(line):
            count, size, spent = block["count"], block.get("bytes", 0), block.get("s", 0)
            text = (
                f"{d.name}: {count} cop{'y' if count == 1 else 'ies'} · "
                f"{short_bytes(size)} · {short_seconds(spent)}"
            )
            if size and spent > 0:
                text += f" · {size / spent / 1e9:.1f} GB/s"
            if block.get("pageable"):
                text += f" · {block['pageable']} from pageable memory"
            rows.append(text)
        return rows

    def cell(self, line: PayloadLine) -> list[str]:
        return self.label(line)


class Memsets(RecordKind):
    key = "memsets"
    family = "memset"
    columns = ("corr", "start", "end", "device", "bytes")
    legend = ""

    def empty(self) -> dict[str, Any]:
        return {"count": 0, "bytes": 0, "ns": 0}

    def tally(self, family: Family, place: Place, devices: set[int], names: Sequence[str]) -> None:
        for corr, begin, finish, device, size in rows(family, self.columns):
            devices.add(device)
            cost = place(corr)
            if cost is None:
                continue
            block = cost[self.key]
            block["count"] += 1
            block["bytes"] += size
            block["ns"] += finish - begin

    def payload(self, cost: LineCost) -> dict[str, Any]:
        block = cost[self.key]
        return {
            self.key: {"count": block["count"], "bytes": block["bytes"], "s": seconds(block["ns"])}
        }

    def made_work(self, line: PayloadLine) -> bool:
        return bool(_block(line, self.key).get("count"))

    def device_s(self, line: PayloadLine) -> float:
        return float(_block(line, self.key).get("s") or 0)

    def label(self, line: PayloadLine) -> list[str]:
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        return [f"{plural(block['count'], 'memset')} {short_seconds(block.get('s', 0))}"]

    def hover(self, line: PayloadLine) -> list[str]:
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        return [
            f"{plural(block['count'], 'memset')} · {short_bytes(block.get('bytes', 0))} · "
            f"{short_seconds(block.get('s', 0))}"
        ]

    def cell(self, line: PayloadLine) -> list[str]:
        return self.label(line)


class Syncs(RecordKind):
    key = "syncs"
    family = "syncs"
    columns = ("corr", "start", "end", "type")
    legend = "⏸ the host waiting for the GPU: times, stall"
    # synchronization types where the host thread waits (a stream-wait-event does not)
    BLOCKING = frozenset({"context", "stream", "event"})

    def empty(self) -> dict[str, Any]:
        return {"count": 0, "stall_ns": 0}

    def tally(self, family: Family, place: Place, devices: set[int], names: Sequence[str]) -> None:
        for corr, begin, finish, sync_type in rows(family, self.columns):
            if sync_type not in self.BLOCKING:
                continue  # not a wait of the host: neither placed nor counted as unplaced
            cost = place(corr)
            if cost is None:
                continue
            block = cost[self.key]
            block["count"] += 1
            block["stall_ns"] += finish - begin

    def payload(self, cost: LineCost) -> dict[str, Any]:
        block = cost[self.key]
        return {self.key: {"count": block["count"], "stall_s": seconds(block["stall_ns"])}}

    def made_work(self, line: PayloadLine) -> bool:
        return bool(_block(line, self.key).get("count"))

    def label(self, line: PayloadLine) -> list[str]:
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        return [f"⏸{short_count(block['count'])} {short_seconds(block.get('stall_s', 0))}"]

    def hover(self, line: PayloadLine) -> list[str]:
        block = _block(line, self.key)
        if not block.get("count"):
            return []
        return [
            f"⏸ the host waited for the GPU {plural(block['count'], 'time')} · "
            f"{short_seconds(block.get('stall_s', 0))} stalled"
        ]

    def cell(self, line: PayloadLine) -> list[str]:
        return self.label(line)


KERNELS, COLLECTIVES = Kernels(), Collectives()
TRANSFERS, MEMSETS, SYNCS = Transfers(), Memsets(), Syncs()
# every kind, in the order people read them (labels, hovers, table columns)
RECORD_KINDS: tuple[RecordKind, ...] = (KERNELS, COLLECTIVES, TRANSFERS, MEMSETS, SYNCS)
# the capture's record families the kinds are tallied from (plus `api`, the calls)
RECORD_FAMILIES = tuple(dict.fromkeys(kind.family for kind in RECORD_KINDS))


def kind_counts() -> dict[str, int]:
    """A zero count per kind: `unattributed` and its kin."""
    return {kind.key: 0 for kind in RECORD_KINDS}


def new_line_cost(line: int) -> LineCost:
    """An empty line of the attribution: hits and host time, then a tally per kind."""
    cost: LineCost = {"line": line, "hits": 0, "host_ns": 0}
    for kind in RECORD_KINDS:
        cost[kind.key] = kind.empty()
        cost.update(kind.line_fields())
    cost["devices"] = {}
    cost["other_thread_calls"] = 0
    return cost
