"""`DoctorReports`: one doctor run at a time, shared by concurrent requests, reused while fresh,
on a thread of its own (the status route's executor stays free)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

pytest.importorskip("jupyter_server")

from gpulens.jupyter.handlers import DoctorReports


class Doctor:
    """A doctor run that counts its runs and finishes when told to."""

    def __init__(self) -> None:
        self.runs: list[tuple[bool, str]] = []
        self.release = threading.Event()
        self.fail = False

    def __call__(self, smoke: bool) -> dict[str, Any]:
        self.runs.append((smoke, threading.current_thread().name))
        self.release.wait(10)
        if self.fail:
            raise RuntimeError("NVML went away")
        return {"smoke": smoke, "run": len(self.runs)}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_concurrent_requests_share_one_run_on_the_doctors_thread() -> None:
    doctor, clock = Doctor(), Clock()
    reports = DoctorReports(doctor, fresh_s=60, clock=clock)
    waiting = [asyncio.ensure_future(reports.get(False)) for _ in range(5)]
    await asyncio.sleep(0.1)
    doctor.release.set()
    answers = await asyncio.gather(*waiting)
    assert len(doctor.runs) == 1
    assert doctor.runs[0][1].startswith("gpulens-doctor")
    assert all(answer == {"smoke": False, "run": 1} for answer in answers)


async def test_a_report_is_reused_while_fresh_then_made_again() -> None:
    doctor, clock = Doctor(), Clock()
    doctor.release.set()
    reports = DoctorReports(doctor, fresh_s=60, clock=clock)
    assert (await reports.get(True))["run"] == 1
    clock.now += 59
    assert (await reports.get(True))["run"] == 1
    assert (await reports.get(False))["run"] == 2, "without the smoke test: its own report"
    clock.now += 2
    assert (await reports.get(True))["run"] == 3
    assert len(doctor.runs) == 3


async def test_a_failed_run_is_not_kept() -> None:
    doctor, clock = Doctor(), Clock()
    doctor.release.set()
    doctor.fail = True
    reports = DoctorReports(doctor, fresh_s=60, clock=clock)
    with pytest.raises(RuntimeError):
        await reports.get(False)
    doctor.fail = False
    assert (await reports.get(False))["run"] == 2


async def test_a_request_that_goes_away_does_not_stop_the_run_others_wait_for() -> None:
    doctor, clock = Doctor(), Clock()
    reports = DoctorReports(doctor, fresh_s=60, clock=clock)
    leaving = asyncio.ensure_future(reports.get(False))
    staying = asyncio.ensure_future(reports.get(False))
    await asyncio.sleep(0.1)
    leaving.cancel()
    doctor.release.set()
    assert (await staying)["run"] == 1
    assert (await reports.get(False))["run"] == 1
