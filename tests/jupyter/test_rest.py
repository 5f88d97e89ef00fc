"""`GET /gpulens/status` and `/gpulens/doctor` on a real `jupyter server`, behind its token.

The extension is enabled the way an installed wheel enables it: the shipped
`jupyter_server_config.d/gpulens.json` is copied into the server's config dir (an editable
install does not put it in place), so these tests also prove that file works.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

requests = pytest.importorskip("requests")
pytest.importorskip("jupyter_server")

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONFIG = REPO / "jupyter-config" / "jupyter_server_config.d" / "gpulens.json"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token

    def get(self, path: str, token: str | None = None, **params: str):
        headers = {"Authorization": f"token {token}"} if token else {}
        return requests.get(f"{self.url}{path}", headers=headers, params=params, timeout=120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("jupyter")
    config_dir = home / "config"
    (config_dir / "jupyter_server_config.d").mkdir(parents=True)
    shutil.copy(SHIPPED_CONFIG, config_dir / "jupyter_server_config.d" / "gpulens.json")
    root = home / "root"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(config_dir),
        JUPYTER_CONFIG_PATH=str(config_dir),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    log = (home / "server.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--port-retries=0",
            f"--IdentityProvider.token={token}",
            "--ServerApp.open_browser=False",
            f"--ServerApp.root_dir={root}",
            # CI containers often run as root; the server refuses that unless told.
            *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                if requests.get(f"{url}/api", timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((home / "server.log").read_text())
            time.sleep(0.2)
        yield Server(url, token)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def test_shipped_config_enables_an_extension_that_exists() -> None:
    enabled = json.loads(SHIPPED_CONFIG.read_text())["ServerApp"]["jpserver_extensions"]
    assert enabled == {"gpulens.jupyter": True}
    import gpulens.jupyter as extension

    points = extension._jupyter_server_extension_points()
    assert points == [{"module": "gpulens.jupyter"}]
    assert callable(extension._load_jupyter_server_extension)


@pytest.mark.parametrize("path", ["/gpulens/status", "/gpulens/doctor"])
def test_routes_refuse_requests_without_a_token(server: Server, path: str) -> None:
    assert server.get(path).status_code == 403
    assert server.get(path, token="not-the-token").status_code == 403


def test_status_answers_the_payload_with_the_token(server: Server) -> None:
    reply = server.get("/gpulens/status", token=server.token)
    assert reply.status_code == 200
    assert reply.headers["Content-Type"].startswith("application/json")
    payload = reply.json()
    assert payload["schema"] == "gpulens.status/2"
    assert payload["frameworks_state"] == "ready"
    if not payload["available"]:  # this machine has no driver: the reason must say so
        assert "NVIDIA driver" in payload["reason"]


def test_doctor_answers_findings_with_the_token(server: Server) -> None:
    reply = server.get("/gpulens/doctor", token=server.token, smoke="0")
    assert reply.status_code == 200
    report = reply.json()
    assert report["schema"] == "gpulens.doctor/1"
    assert report["smoke"] is None
    assert report["status"]["schema"] == "gpulens.status/2"
    codes = {finding["code"] for finding in report["findings"]}
    if not report["status"]["available"]:
        assert "no-gpu" in codes
