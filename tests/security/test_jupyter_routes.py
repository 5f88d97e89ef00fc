"""The Jupyter routes on a real `jupyter server`: no planted module runs on a status poll, and
the doctor (framework imports and a GPU smoke test) does not run again on every GET.

The default kernel's interpreter is one that records each run, so the tests count how many
subprocesses a route started.
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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from security_helpers import marker_interpreter, plant, ran, runs_of

requests = pytest.importorskip("requests")
pytest.importorskip("jupyter_server")

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONFIG = REPO / "jupyter-config" / "jupyter_server_config.d" / "gpulens.json"


@dataclass
class Jupyter:
    url: str
    token: str
    markers: Path  # planted modules in the server's temp dir that ran
    runs: Path  # one line per run of the kernel's interpreter

    def get(self, path: str, token: str | None = None, **params: str) -> requests.Response:
        headers = {"Authorization": f"token {token}"} if token else {}
        return requests.get(f"{self.url}{path}", headers=headers, params=params, timeout=300)


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jupyter]:
    home = tmp_path_factory.mktemp("jupyter")
    config_dir, data_dir = home / "config", home / "data"
    (config_dir / "jupyter_server_config.d").mkdir(parents=True)
    shutil.copy(SHIPPED_CONFIG, config_dir / "jupyter_server_config.d" / "gpulens.json")
    interpreter = marker_interpreter(home / "kernel-python", home / "runs.txt")
    kernel = data_dir / "kernels" / "python3"
    kernel.mkdir(parents=True)
    argv = [str(interpreter), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": "Python 3", "language": "python"}
    (kernel / "kernel.json").write_text(json.dumps(spec))
    shared_tmp, root = home / "shared-tmp", home / "root"
    plant(shared_tmp, home / "markers")
    root.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = secrets.token_hex(16)
    env = dict(
        os.environ,
        TMPDIR=str(shared_tmp),
        JUPYTER_CONFIG_DIR=str(config_dir),
        JUPYTER_CONFIG_PATH=str(config_dir),
        JUPYTER_DATA_DIR=str(data_dir),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_PLATFORM_DIRS="1",
        JUPYTER_PREFER_ENV_PATH="0",  # our kernelspec before the virtual env's own
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
            *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        ],
        env=env,
        cwd=root,
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
        yield Jupyter(url, token, home / "markers", home / "runs.txt")
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def test_status_poll_runs_nothing_from_the_temp_dir(jupyter: Jupyter) -> None:
    reply = jupyter.get("/gpulens/status", token=jupyter.token)
    assert reply.status_code == 200
    assert reply.json()["frameworks_state"] == "ready"
    assert runs_of(jupyter.runs) > 0, "the probes ran in the kernel's interpreter"
    assert ran(jupyter.markers) == []


def test_doctor_runs_once_for_many_requests(jupyter: Jupyter) -> None:
    assert jupyter.get("/gpulens/doctor", smoke="0").status_code == 403
    first = jupyter.get("/gpulens/doctor", token=jupyter.token, smoke="0")
    assert first.status_code == 200
    assert first.json()["schema"] == "gpulens.doctor/1"
    after_first = runs_of(jupyter.runs)
    with ThreadPoolExecutor(4) as pool:
        replies = list(
            pool.map(
                lambda _: jupyter.get("/gpulens/doctor", token=jupyter.token, smoke="0"),
                range(8),
            )
        )
    assert [r.status_code for r in replies] == [200] * 8
    assert {r.json()["time"] for r in replies} == {first.json()["time"]}
    assert runs_of(jupyter.runs) == after_first, "a GET within a minute runs nothing again"
    assert ran(jupyter.markers) == []
