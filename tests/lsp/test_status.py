"""`gpulens/status` through a real client: the notification, the request and the live interval.

Runs against `python -m gpulens serve`. On a machine without a GPU the payload must say so,
with the reason NVML really gave.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from gpulens.lsp.status import STATUS_METHOD, plain

TIMEOUT_S = 20.0


class StatusClient(LanguageClient):
    statuses: list[tuple[float, dict[str, Any]]]


def make_status_client() -> StatusClient:
    from pytest_lsp.client import make_test_lsp_client

    client = make_test_lsp_client()
    client.__class__ = StatusClient
    client.statuses = []

    @client.feature(STATUS_METHOD)
    def on_status(params: Any) -> None:
        client.statuses.append((time.monotonic(), plain(params)))

    return client  # type: ignore[return-value]


def _initialize_params(root: Path) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="root")],
    )


FULL = ClientServerConfig(
    server_command=[sys.executable, "-m", "gpulens", "serve"], client_factory=make_status_client
)


@pytest_lsp.fixture(config=FULL)
async def full(lsp_client: StatusClient, tmp_path: Path):
    lsp_client.set_configuration({}, section="gpulens")
    await lsp_client.initialize_session(_initialize_params(tmp_path))
    yield
    await lsp_client.shutdown_session()


async def _wait_for(client: StatusClient, predicate, timeout_s: float = TIMEOUT_S) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for _, payload in client.statuses:
            if predicate(payload):
                return payload
        await asyncio.sleep(0.05)
    raise AssertionError(f"no matching {STATUS_METHOD} notification in {timeout_s} s")


def _assert_payload_says_no_gpu(payload: dict[str, Any]) -> None:
    assert payload["schema"] == "gpulens.status/2"
    dt.datetime.fromisoformat(payload["time"])
    if payload["available"]:  # pragma: no cover - only on a machine with a GPU
        assert payload["gpus"]
        return
    # No driver on this machine: the reason must come from NVML, not be blank.
    assert payload["gpus"] == []
    assert "NVIDIA driver" in payload["reason"], payload["reason"]


async def _set_interval(client: StatusClient, seconds: float) -> None:
    client.set_configuration({"statusIntervalSeconds": seconds}, section="gpulens")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"gpulens": {"statusIntervalSeconds": seconds}})
    )


async def _count_in(client: StatusClient, seconds: float) -> int:
    start = time.monotonic()
    await asyncio.sleep(seconds)
    return sum(1 for stamp, _ in client.statuses if stamp > start)


@pytest.mark.asyncio
async def test_notification_arrives_right_after_initialized(full: StatusClient) -> None:
    payload = await _wait_for(full, lambda p: True, timeout_s=10)
    _assert_payload_says_no_gpu(payload)
    # The probe ran in a subprocess and its answer follows without waiting for the interval.
    ready = await _wait_for(full, lambda p: p["frameworks_state"] == "ready")
    assert isinstance(ready["frameworks"], dict)


@pytest.mark.asyncio
async def test_request_answers_the_payload_now(full: StatusClient) -> None:
    result = plain(await full.protocol.send_request_async(STATUS_METHOD, None))
    _assert_payload_says_no_gpu(result)
    assert result["cuda_visible_devices"] == full_env_cvd()


def full_env_cvd() -> str | None:
    import os

    return os.environ.get("CUDA_VISIBLE_DEVICES")


@pytest.mark.asyncio
async def test_interval_setting_applies_live(full: StatusClient) -> None:
    await _wait_for(full, lambda p: p["frameworks_state"] == "ready")
    await _set_interval(full, 0.25)
    await asyncio.sleep(0.3)  # let the change land
    fast = await _count_in(full, 1.5)
    assert fast >= 4, f"{fast} notifications in 1.5 s at a 0.25 s interval"
    await _set_interval(full, 30)
    await asyncio.sleep(0.3)
    slow = await _count_in(full, 1.5)
    assert slow == 0, f"{slow} notifications in 1.5 s at a 30 s interval"


@pytest.mark.asyncio
async def test_requests_are_answered_while_polling_fast(full: StatusClient) -> None:
    await _set_interval(full, 0.25)
    timings = []
    for _ in range(10):
        start = time.perf_counter()
        result = plain(await full.protocol.send_request_async(STATUS_METHOD, None))
        timings.append(time.perf_counter() - start)
        assert result["schema"] == "gpulens.status/2"
    assert max(timings) < 1.0, timings
