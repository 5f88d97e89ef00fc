"""A profiled script never outlives the run that started it, and a long run stays small.

Real processes throughout: the `gpulens profile` CLI stopped by SIGINT, SIGTERM or SIGKILL,
the language server killed mid-profile, a tight loop interrupted, a loop of a million line
events measured against the same loop run plainly, and a script that prints 300 MB.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX process groups")

# a stopped script must be gone this soon (it stops within milliseconds; the margin is for
# a loaded machine)
GONE_WITHIN_S = 2.0
# an interrupted cell must answer within 1 s; this bound leaves room for a loaded 2-core
# machine (benchmarks/profiler_memory.py reports the real figure)
ANSWERED_WITHIN_S = 3.0
EXTRA_MEMORY_KB = 50 * 1024

SLEEPER = """\
import os, pathlib, time
pathlib.Path({pid_file!r}).write_text(str(os.getpid()))
while True:
    time.sleep(0.01)
"""
SPINNER = """\
import os, pathlib
pathlib.Path({pid_file!r}).write_text(str(os.getpid()))
total = 0
while True:
    total += 1
"""
LOOP = """\
import sys
total = 0
for i in range(int(sys.argv[1])):
    total += i
print(total)
"""


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by init, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def wait_until(condition: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def pid_from(pid_file: Path) -> int:
    assert wait_until(lambda: pid_file.exists() and pid_file.read_text().isdigit(), 30)
    return int(pid_file.read_text())


@contextlib.contextmanager
def reaped(*pids: Callable[[], int | None]) -> Iterator[None]:
    """Kills what a failed test left running (a script that outlived its runner)."""
    try:
        yield
    finally:
        for pid_of in pids:
            pid = pid_of()
            if pid is not None and alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def profile_cli(script: Path, *extra: str, **popen: Any) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "gpulens", "profile", str(script), "--backend", "host"]
    return subprocess.Popen([*command, *extra], **popen)


def script_in(folder: Path, text: str) -> tuple[Path, Path]:
    pid_file = folder / "script.pid"
    script = folder / "script.py"
    script.write_text(text.format(pid_file=str(pid_file)))
    return script, pid_file


@pytest.mark.parametrize(
    "number", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda n: n.name
)
def test_a_stopped_cli_takes_its_script_down_and_leaves_no_file(
    tmp_path: Path, number: signal.Signals
) -> None:
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    script, pid_file = script_in(tmp_path, SLEEPER)
    out = tmp_path / "report.json"
    cli = profile_cli(
        script,
        "--format",
        "json",
        "-o",
        str(out),
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(private_tmp)},
        stderr=subprocess.DEVNULL,
    )
    child: list[int] = []
    with reaped(lambda: child[0] if child else None, lambda: cli.pid):
        child.append(pid_from(pid_file))
        os.kill(cli.pid, number)
        cli.wait(timeout=10)
        assert wait_until(lambda: not alive(child[0]), GONE_WITHIN_S), "the script outlived it"
    assert list(private_tmp.iterdir()) == []  # the job's source is nowhere on disk
    if number != signal.SIGKILL:
        assert cli.returncode == 128 + number
        payload = json.loads(out.read_text())
        assert payload["error"]["type"] == "Interrupted"
        assert signal.Signals(number).name in payload["error"]["message"]
        assert {line["line"] for line in payload["lines"]} >= {2, 3}  # what ran is reported


def test_an_interrupted_tight_loop_answers_within_a_second(tmp_path: Path) -> None:
    script, pid_file = script_in(tmp_path, SPINNER)
    out = tmp_path / "report.json"
    cli = profile_cli(
        script, "--format", "json", "-o", str(out), cwd=tmp_path, stderr=subprocess.DEVNULL
    )
    child: list[int] = []
    with reaped(lambda: child[0] if child else None, lambda: cli.pid):
        child.append(pid_from(pid_file))
        time.sleep(3)  # a few million line events
        interrupted = time.monotonic()
        os.kill(cli.pid, signal.SIGINT)
        cli.wait(timeout=30)
        answered = time.monotonic() - interrupted
    payload = json.loads(out.read_text())
    assert payload["error"]["type"] == "Interrupted"
    hits = {line["line"]: line["hits"] for line in payload["lines"]}
    assert hits[4] > 100_000 and abs(hits[4] - hits[5]) <= 1
    assert answered <= ANSWERED_WITHIN_S, f"answered {answered:.2f} s after the SIGINT"


def test_a_killed_language_server_takes_its_profile_down(tmp_path: Path) -> None:
    pid_file = tmp_path / "cell.pid"
    cell = (
        "# %%\nimport os, pathlib, time\n"
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))\ntime.sleep(60)\n"
    )
    uri = (tmp_path / "train.py").as_uri()
    server = subprocess.Popen(
        [sys.executable, "-m", "gpulens", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    child: list[int] = []
    with reaped(lambda: child[0] if child else None, lambda: server.pid):
        client = RawLspClient(server)
        root = {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}
        assert "result" in client.request("initialize", root, 30)
        client.notify("initialized", {})
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": cell}},
        )
        client.send_request(
            "workspace/executeCommand",
            {"command": "gpulens.profileCell", "arguments": [{"uri": uri, "line": 1}]},
        )
        child.append(pid_from(pid_file))
        server.kill()
        server.wait(timeout=10)
        assert wait_until(lambda: not alive(child[0]), GONE_WITHIN_S), "the cell outlived it"


def peak_rss_kb(command: list[str], cwd: Path) -> int:
    """The largest peak resident memory among `command` and the processes it waited for."""
    measure = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", measure, *command],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return int(done.stdout.split()[-1])


def test_a_million_line_events_cost_the_profile_at_most_50_mb_more_than_the_plain_run(
    tmp_path: Path,
) -> None:
    iterations = "600000"  # 1.2M line events: past 190 MB if each were kept
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    out = tmp_path / "report.json"
    plain = peak_rss_kb([sys.executable, str(script), iterations], tmp_path)
    command = [sys.executable, "-m", "gpulens", "profile", str(script), "--backend", "host"]
    command += ["--format", "json", "-o", str(out), "--", iterations]
    profiled = peak_rss_kb(command, tmp_path)
    payload = json.loads(out.read_text())
    hits = {line["line"]: line["hits"] for line in payload["lines"]}
    assert hits[4] == 600_000  # exact, however many times the timeline was folded
    assert profiled - plain <= EXTRA_MEMORY_KB, f"{(profiled - plain) / 1024:.0f} MB more"


def test_a_script_printing_300_mb_leaves_the_runner_flat(tmp_path: Path) -> None:
    script = tmp_path / "printer.py"
    script.write_text(
        "import sys\nchunk = 'x' * 999_999 + '\\n'\n"
        "for _ in range(300):\n    sys.stdout.write(chunk)\nprint('the end')\n"
    )
    runner = (
        "import json, resource, sys\n"
        "from gpulens.profiler.runner import run_profile\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "payload = run_profile(sys.argv[1], backend='host')\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps({'grew_kb': after - before, 'output': payload['output'],"
        " 'error': payload['error']}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", runner, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    result = json.loads(done.stdout)
    assert result["error"] is None
    assert result["output"].endswith("x\nthe end\n") and len(result["output"]) == 4000
    assert result["grew_kb"] <= EXTRA_MEMORY_KB, f"the runner grew {result['grew_kb']} KB"


class RawLspClient:
    """Just enough JSON-RPC over stdio to drive the server: requests the server makes are
    answered with empty results, everything else is kept by id."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._in, self._out = process.stdin, process.stdout
        self._answers: dict[Any, Any] = {}
        self._arrived = threading.Condition()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self._in.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self._in.flush()

    def _read(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while True:
                length = 0
                while (header := self._out.readline().strip()) != b"":
                    if header.lower().startswith(b"content-length:"):
                        length = int(header.split(b":")[1])
                if not length:
                    return
                message = json.loads(self._out.read(length))
                if "method" in message and "id" in message:  # the server asks
                    items = (message.get("params") or {}).get("items")
                    result = [None] * len(items) if isinstance(items, list) else None
                    self._write({"id": message["id"], "result": result})
                elif "id" in message:
                    with self._arrived:
                        self._answers[message["id"]] = message
                        self._arrived.notify_all()

    def send_request(self, method: str, params: Any) -> int:
        self._next += 1
        self._write({"id": self._next, "method": method, "params": params})
        return self._next

    def request(self, method: str, params: Any, timeout: float) -> Any:
        ident = self.send_request(method, params)
        with self._arrived:
            assert self._arrived.wait_for(lambda: ident in self._answers, timeout)
            return self._answers[ident]

    def notify(self, method: str, params: Any) -> None:
        self._write({"method": method, "params": params})
