"""`%%gpulens` in a real IPython kernel (jupyter_client), host backend."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

MIME = "application/vnd.gpulens.profile+json"
SERVER = str(Path(__file__).resolve().parents[3] / "server")


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    from jupyter_client.manager import start_new_kernel

    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SERVER, os.environ.get("PYTHONPATH")]))
    )
    manager, client = start_new_kernel(kernel_name="python3", env=env)
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def execute(client: Any, code: str) -> tuple[str, list[dict[str, Any]], str]:
    """(status, display_data bundles, stream text) of one execution."""
    msg_id = client.execute(code)
    bundles, text = [], ""
    while True:
        msg = client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "display_data":
            bundles.append(content["data"])
        elif kind == "stream":
            text += content["text"]
        elif kind == "status" and content["execution_state"] == "idle":
            break
    reply = client.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=30)
    return reply["content"]["status"], bundles, text


def test_magic_profiles_a_cell_with_the_kernel_state(kernel: Any) -> None:
    status, _, _ = execute(kernel, "%load_ext gpulens\nscale = 3")
    assert status == "ok"
    cell = (
        "%%gpulens --backend host\n"
        "def f(v):\n"
        "    return v * scale\n"
        "vals = [f(i) for i in range(4)]\n"
        "total = sum(vals)"
    )
    status, bundles, _ = execute(kernel, cell)
    assert status == "ok"
    (data,) = bundles
    assert set(data) >= {MIME, "text/html", "text/plain"}
    payload = data[MIME]
    assert payload["schema"] == "gpulens.profile/1"
    assert payload["source"]["first_line"] == 2  # cell line 1 is the magic itself
    lines = {line["line"]: line for line in payload["lines"]}
    assert lines[3]["hits"] == 4  # f's body, once per call
    assert "gpulens profile" in data["text/plain"] and "<table>" in data["text/html"]
    status, _, text = execute(kernel, "print(total)")
    assert text.strip() == "18"  # the cell ran in the user's namespace


def test_raising_cell_reports_then_raises_and_leaves_the_kernel_clean(kernel: Any) -> None:
    execute(kernel, "%load_ext gpulens")
    status, bundles, _ = execute(kernel, "%%gpulens --backend host\na = 1\nraise KeyError('k')")
    assert status == "error"
    payload = bundles[0][MIME]
    assert payload["error"]["type"] == "KeyError" and payload["error"]["line"] == 3
    check = (
        "import sys\n"
        "mon = getattr(sys, 'monitoring', None)\n"
        "print(sys.gettrace() is None, [mon.get_tool(i) for i in range(6)] if mon else [])"
    )
    _, _, text = execute(kernel, check)
    assert text.split()[0] == "True"
    assert "gpulens" not in text


def test_status_line_magic(kernel: Any) -> None:
    execute(kernel, "%load_ext gpulens")
    status, _, text = execute(kernel, "%gpulens status")
    assert status == "ok"
    # this machine has no NVIDIA driver: the table says so, with the reason
    assert text.startswith("CPU only:")
    assert "driver" in text
