"""Record real NVML answers to JSON and replay them through the same reading code.

A recording holds one or more *snapshots*; each maps ``call_key(function, device, args)`` to
``{"value": ...}`` or ``{"error": code}``, plus ``"init"`` for ``nvmlInit`` itself. Replaying a
snapshot with ``RecordedBackend`` makes ``NvmlMonitor`` take exactly the path it took on the
machine that was recorded, errors included.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpulens.device.nvml import NvmlBackend, NvmlCallError, call_key

RECORDING_SCHEMA = "gpulens.nvml-recording/1"
# `PATH` or `PATH#SNAPSHOT`: makes the CLI, server and doctor replay a recording (demos, tests).
REPLAY_ENV = "GPULENS_NVML_REPLAY"
INIT_KEY = "init"


class CallNotRecorded(LookupError):
    """The reader made a call the recording does not hold: the fixture and the code disagree."""


class RecordedBackend:
    """Answers NVML calls from one recorded snapshot (a dict of call key -> outcome)."""

    def __init__(self, calls: dict[str, dict[str, Any]]) -> None:
        self.calls = calls
        self.made: list[str] = []  # the keys asked for, in order: tests check what was called

    @classmethod
    def from_file(cls, path: str | Path, snapshot: str | int = 0) -> RecordedBackend:
        return cls(load_snapshot(path, snapshot))

    def _answer(self, key: str, function: str) -> Any:
        self.made.append(key)
        try:
            outcome = self.calls[key]
        except KeyError:
            raise CallNotRecorded(key) from None
        if "error" in outcome:
            raise NvmlCallError(int(outcome["error"]), function)
        return outcome.get("value")

    def init(self) -> None:
        self._answer(INIT_KEY, "nvmlInit")

    def shutdown(self) -> None:
        self.made.append("shutdown")

    def call(self, function: str, device: str | None = None, *args: int) -> Any:
        return self._answer(call_key(function, device, args), function)


class RecordingBackend:
    """Wraps a live backend and keeps every answer it gives, for ``RecordedBackend`` to replay."""

    def __init__(self, inner: NvmlBackend) -> None:
        self.inner = inner
        self.calls: dict[str, dict[str, Any]] = {}

    def init(self) -> None:
        try:
            self.inner.init()
        except NvmlCallError as error:
            self.calls[INIT_KEY] = {"error": error.code}
            raise
        self.calls[INIT_KEY] = {"value": None}

    def shutdown(self) -> None:
        self.inner.shutdown()

    def call(self, function: str, device: str | None = None, *args: int) -> Any:
        key = call_key(function, device, args)
        try:
            value = self.inner.call(function, device, *args)
        except NvmlCallError as error:
            self.calls[key] = {"error": error.code}
            raise
        self.calls[key] = {"value": value}
        return value


def load_recording(path: str | Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("schema") != RECORDING_SCHEMA:
        raise ValueError(f"{path} is not a {RECORDING_SCHEMA} recording")
    return data


def load_snapshot(path: str | Path, snapshot: str | int = 0) -> dict[str, dict[str, Any]]:
    """The calls of one snapshot, by position or by its ``label``."""
    snapshots = load_recording(path)["snapshots"]
    if isinstance(snapshot, int):
        return dict(snapshots[snapshot]["calls"])
    for item in snapshots:
        if item["label"] == snapshot:
            return dict(item["calls"])
    raise KeyError(f"{path} has no snapshot labelled {snapshot!r}")


def backend_from_env(environ: Mapping[str, str] = os.environ) -> RecordedBackend | None:
    """The recorded backend named by ``GPULENS_NVML_REPLAY``, or ``None`` for live NVML."""
    value = environ.get(REPLAY_ENV)
    if not value:
        return None
    path, _, snapshot = value.partition("#")
    return RecordedBackend.from_file(path, int(snapshot) if snapshot.isdigit() else snapshot or 0)
