"""A real `jupyter server` with the gpulens extension enabled the way an installed wheel
enables it: the shipped `jupyter_server_config.d/gpulens.json` is copied into the server's
config dir (an editable install does not put it in place)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import requests

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONFIG = REPO / "jupyter-config" / "jupyter_server_config.d" / "gpulens.json"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, url: str, token: str, root: Path) -> None:
        self.url = url
        self.token = token
        self.root = root

    def get(self, path: str, token: str | None = None, **params: str):
        headers = {"Authorization": f"token {token}"} if token else {}
        return requests.get(f"{self.url}{path}", headers=headers, params=params, timeout=120)

    def analyze(self, body: Any, token: str | None = None):
        """`POST /gpulens/analyze` with ``body`` (JSON, or bytes sent as they are)."""
        headers = {"Authorization": f"token {token}"} if token else {}
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return requests.post(f"{self.url}/gpulens/analyze", data=data, headers=headers, timeout=120)

    def browser_session(self) -> Any:
        """A session logged in the way a browser is: a login cookie and an `_xsrf` cookie."""
        session = requests.Session()
        assert session.get(f"{self.url}/login", params={"token": self.token}).ok
        assert "_xsrf" in session.cookies
        return session


@contextlib.contextmanager
def running_server(home: Path, env: Mapping[str, str] | None = None) -> Iterator[Server]:
    """A jupyter server in ``home`` (its config, data, runtime and root folders), with
    ``env`` added to this process's environment; stopped on exit."""
    config_dir = home / "config"
    (config_dir / "jupyter_server_config.d").mkdir(parents=True)
    shutil.copy(SHIPPED_CONFIG, config_dir / "jupyter_server_config.d" / "gpulens.json")
    root = home / "root"
    root.mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    environment = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(config_dir),
        JUPYTER_CONFIG_PATH=str(config_dir),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_PLATFORM_DIRS="1",
        **(env or {}),
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
        env=environment,
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
        yield Server(url, token, root)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
