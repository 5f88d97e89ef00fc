"""`%%gpulens` in a real IPython kernel (jupyter_client), host backend."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpulens.profiler.schema import SCHEMA

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
    client.kernel_manager = manager  # for the tests that interrupt it
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def execute(client: Any, code: str) -> tuple[str, list[dict[str, Any]], str]:
    """(status, display_data bundles, stream text) of one execution."""
    status, bundles, text, _ = execute_reply(client, client.execute(code))
    return status, bundles, text


def execute_reply(
    client: Any, msg_id: str, timeout: float = 30
) -> tuple[str, list[dict[str, Any]], str, dict[str, Any]]:
    """(status, display_data bundles, stream text, reply content) of a sent execution."""
    bundles, text = [], ""
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "display_data":
            bundles.append(content["data"])
        elif kind == "stream":
            text += content["text"]
        elif kind == "status" and content["execution_state"] == "idle":
            break
    reply = client.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=timeout)
    return reply["content"]["status"], bundles, text, reply["content"]


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
    assert payload["schema"] == SCHEMA
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


def test_a_bad_option_is_a_usage_error_and_the_cell_does_not_run(kernel: Any) -> None:
    execute(kernel, "%load_ext gpulens")
    msg_id = kernel.execute("%%gpulens --bad-option\nran_anyway = True")
    status, bundles, _, reply = execute_reply(kernel, msg_id)
    assert status == "error" and reply["ename"] == "UsageError"  # "Run all" stops here
    assert "--bad-option" in reply["evalue"] and "--backend" in reply["evalue"]
    assert not bundles
    _, _, text = execute(kernel, "print('ran_anyway' in globals())")
    assert text.strip() == "False"


def test_an_interrupted_long_cell_answers_within_a_second(kernel: Any) -> None:
    """Millions of line events before the interrupt; what is left to walk after it is
    bounded. 3 s leaves room for a loaded machine (the benchmark reports the real figure)."""
    execute(kernel, "%load_ext gpulens")
    msg_id = kernel.execute("%%gpulens --backend host\ntotal = 0\nwhile True:\n    total += 1")
    time.sleep(4)
    interrupted = time.monotonic()
    kernel.kernel_manager.interrupt_kernel()
    status, bundles, _, reply = execute_reply(kernel, msg_id, timeout=60)
    answered = time.monotonic() - interrupted
    assert status == "error" and reply["ename"] == "KeyboardInterrupt"
    payload = bundles[0][MIME]
    hits = {line["line"]: line["hits"] for line in payload["lines"]}
    assert hits[4] > 100_000 and abs(hits[3] - hits[4]) <= 1
    assert answered <= 3.0, f"answered {answered:.2f} s after the interrupt"


def test_the_header_names_the_cell_by_its_place_or_by_its_run(kernel: Any) -> None:
    """An editor that adds `%%gpulens` says where the cell stands (`--cell 4`); typed by
    hand, the cell is named by its run, never by a run count dressed as its place."""
    execute(kernel, "%load_ext gpulens")
    _, bundles, _ = execute(kernel, "%%gpulens --backend host --cell 4\nx = 1")
    payload = bundles[0][MIME]
    count = payload["source"]["execution_count"]
    assert isinstance(count, int) and count > 0
    assert payload["source"]["cell"] == 4
    assert payload["display"]["header"].startswith("gpulens profile · cell 4 (lines 2–2) · ")
    assert payload["display"]["header"] in bundles[0]["text/plain"]
    _, bundles, _ = execute(kernel, "%%gpulens --backend host\nx = 2")
    payload = bundles[0][MIME]
    run = payload["source"]["execution_count"]
    assert payload["source"]["cell"] is None and run == count + 1
    assert f"the cell run as [{run}]" in payload["display"]["header"]
    msg_id = kernel.execute("%%gpulens --cell 0\nx = 3")
    status, _, _, reply = execute_reply(kernel, msg_id)
    assert status == "error" and reply["ename"] == "UsageError" and "--cell" in reply["evalue"]


def test_memory_views_are_an_option_of_the_magic(kernel: Any) -> None:
    """`--memory off|reserved|all` (and `--no-memory`, which is `off`) choose the GPU memory
    views; another name stops the cell with a usage error that lists them."""
    execute(kernel, "%load_ext gpulens")
    for option in ("--no-memory", "--memory off", "--memory all"):
        status, bundles, _ = execute(kernel, f"%%gpulens --backend host {option}\nx = 5")
        assert status == "ok", option
        payload = bundles[0][MIME]
        assert payload["peak"] is None and payload["lines"][0]["memory"] is None
    msg_id = kernel.execute("%%gpulens --memory most\nx = 6")
    status, _, _, reply = execute_reply(kernel, msg_id)
    assert status == "error" and reply["ename"] == "UsageError"
    assert "--memory" in reply["evalue"] and "reserved" in reply["evalue"]
    assert "the cell did not run" in reply["evalue"]


def test_a_profile_right_after_loading_the_extension_waits_for_its_preload(kernel: Any) -> None:
    """An editor's "profile cell" loads the extension and profiles at once: the profile
    waits for the preload the loading started (what it loads, the profile needs) instead of
    running beside it. The preload here is made slow, so a profile that did not wait would
    run its cell before the preload ends."""
    execute(
        kernel,
        "import time as _t, gpulens.profiler.capture as _capture\n"
        "_preload_ends, _real_preload = [], _capture.preload\n"
        "def _slow_preload(requested='auto'):\n"
        "    _t.sleep(0.5)\n"
        "    _preload_ends.append(_t.perf_counter())\n"
        "_capture.preload = _slow_preload\n",
    )
    kernel.execute("%reload_ext gpulens")  # queued: the profile follows with no pause
    status, bundles, _ = execute(
        kernel, "%%gpulens --backend host\n_cell_began = _t.perf_counter()"
    )
    assert status == "ok" and bundles
    _, _, text = execute(
        kernel,
        "print(len(_preload_ends), _preload_ends[0] <= _cell_began)\n"
        "_capture.preload = _real_preload",
    )
    assert text.split() == ["1", "True"]
