"""What each GPU framework sees, probed in short-lived subprocesses of the user's interpreter.

The server never imports torch, CuPy, JAX, Numba or TensorFlow itself: each is probed in its own
``python -c`` subprocess (the probe's source text travels on the command line, so that
interpreter needs no gpulens), all in parallel, each with a timeout. One subprocess per
framework means a framework that crashes or hangs on import is named as the culprit and the
others are still reported. Results are cached by ``FrameworkProbeCache``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gpulens.safe_path import private_directory, safe_source

FRAMEWORKS: tuple[str, ...] = ("torch", "cupy", "jax", "numba", "tensorflow")
PROBE_MARKER = "GPULENS_PROBE "
DEFAULT_TIMEOUT_S = 60.0

FrameworkReport = dict[str, Any]
"""One framework's view: ``installed``, ``version``, ``build`` (cuda|rocm|cpu|mps|tpu),
``cuda`` (sees a GPU), ``device_count``, ``devices``, ``cuda_runtime``; or ``state`` crashed /
timeout / error with an ``error`` sentence."""


def probe_source() -> str:
    """The probe script's text, sent with ``python -c``."""
    return Path(__file__).with_name("_probe.py").read_text(encoding="utf-8")


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def interpret_probe_output(
    framework: str,
    python: str,
    *,
    returncode: int | None,
    stdout: str,
    stderr: str,
    timeout_s: float,
) -> FrameworkReport:
    """Turn one probe subprocess's outcome into a report. Pure: the tests feed it directly."""
    if returncode is None:
        return {
            "installed": True,
            "state": "timeout",
            "error": (
                f"Importing {framework} in {python} did not finish within {timeout_s:g} s, "
                f"so its GPU view is unknown: run `{python} -c 'import {framework}'` to see "
                "where it hangs (a stuck driver call or a slow network file system)."
            ),
        }
    for line in reversed(stdout.splitlines()):
        if line.startswith(PROBE_MARKER):
            try:
                report: FrameworkReport = json.loads(line[len(PROBE_MARKER) :])
            except json.JSONDecodeError:
                break
            if "error" in report:
                report["state"] = "error"
                report["error"] = (
                    f"Importing {framework} in {python} raised {report['error']}: "
                    f"run `{python} -c 'import {framework}'` to see the full error, "
                    f"then reinstall {framework}."
                )
            else:
                report.setdefault("state", "ok" if report.get("installed") else "absent")
            return report
    if returncode < 0:
        how = f"crashed the interpreter ({_signal_name(returncode)})"
    else:
        how = f"made the interpreter exit with status {returncode}"
    detail = _last_line(stderr)
    return {
        "installed": True,
        "state": "crashed",
        "error": (
            f"Importing {framework} in {python} {how}"
            + (f" ({detail})" if detail else "")
            + f": run `{python} -c 'import {framework}'` to reproduce it, then reinstall "
            f"{framework} or the library it names."
        ),
    }


def run_script(
    python: str, source: str, argument: str, *, timeout_s: float, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run a standard-library script in the user's interpreter, for a probe or a smoke test.

    Nothing outside the interpreter's own paths is importable (see `gpulens.safe_path`): a
    `torch.py` in the server's cwd, the workspace or the shared temp dir is never run.
    Raises `subprocess.TimeoutExpired`, and `OSError` when the interpreter cannot start.
    """
    with private_directory("gpulens-probe-") as cwd:
        return subprocess.run(
            [python, "-c", safe_source(source), argument],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            check=False,
        )


def run_probe(
    framework: str,
    python: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> FrameworkReport:
    """Probe one framework in a fresh subprocess of ``python``."""
    child_env = dict(os.environ if env is None else env)
    # Probing must not take the user's GPU memory: JAX would otherwise reserve 75 % of it.
    child_env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    child_env["PYTHONUNBUFFERED"] = "1"
    started = time.perf_counter()
    try:
        completed = run_script(
            python, probe_source(), framework, timeout_s=timeout_s, env=child_env
        )
    except subprocess.TimeoutExpired as expired:
        stdout = expired.stdout if isinstance(expired.stdout, str) else ""
        report = interpret_probe_output(
            framework, python, returncode=None, stdout=stdout, stderr="", timeout_s=timeout_s
        )
    except OSError as error:
        return {
            "installed": False,
            "state": "error",
            "error": (
                f"The interpreter {python} could not be started ({error.strerror}): "
                "choose another one in the `gpulens.profile.python` setting."
            ),
        }
    else:
        report = interpret_probe_output(
            framework,
            python,
            returncode=completed.returncode,
            stdout=completed.stdout,
            stderr=completed.stderr,
            timeout_s=timeout_s,
        )
    report["probe_s"] = round(time.perf_counter() - started, 3)
    return report


ProbeFunction = Callable[[str, str], FrameworkReport]


def probe_all(
    python: str,
    frameworks: Sequence[str] = FRAMEWORKS,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    probe: ProbeFunction | None = None,
) -> dict[str, FrameworkReport]:
    """Probe every framework in parallel; the slowest one bounds the wait."""

    def one(name: str) -> FrameworkReport:
        if probe is not None:
            return probe(name, python)
        return run_probe(name, python, timeout_s=timeout_s)

    with ThreadPoolExecutor(max_workers=len(frameworks) or 1) as pool:
        results = list(pool.map(one, frameworks))
    return dict(zip(frameworks, results, strict=True))


def interpreter_env_visible_devices(reports: Mapping[str, FrameworkReport]) -> str | None:
    """``CUDA_VISIBLE_DEVICES`` as the user's interpreter saw it (from any probe that ran)."""
    for report in reports.values():
        if "cuda_visible_devices" in report:
            seen: str | None = report["cuda_visible_devices"]
            return seen
    return os.environ.get("CUDA_VISIBLE_DEVICES")


class FrameworkProbeCache:
    """Probes once per interpreter and keeps the answer; ``refresh`` probes again.

    ``get(block=False)`` never waits: it starts the probe on a background thread and answers
    ``None`` until it is done, so a status poll is never held up by importing torch.
    """

    def __init__(
        self,
        python: str | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        probe: Callable[[str], dict[str, FrameworkReport]] | None = None,
    ) -> None:
        self._python = python or sys.executable
        self._timeout_s = timeout_s
        self._probe = probe or (lambda py: probe_all(py, timeout_s=self._timeout_s))
        self._lock = threading.Lock()
        self._result: dict[str, FrameworkReport] | None = None
        self._running: threading.Thread | None = None
        self._done = threading.Event()
        self.probes_run = 0

    @property
    def python(self) -> str:
        return self._python

    def set_python(self, python: str | None) -> None:
        """Switch interpreter; the cached answer belonged to the old one, so it is dropped."""
        python = python or sys.executable
        with self._lock:
            if python == self._python:
                return
            self._python = python
            self._result = None
            self._done = threading.Event()

    def _worker(self, python: str, done: threading.Event) -> None:
        try:
            result = self._probe(python)
        except Exception as error:  # never let a probe failure kill the server's thread
            result = {"_probe": {"state": "error", "error": f"Framework probe failed: {error}"}}
        with self._lock:
            self.probes_run += 1
            if python == self._python:
                self._result = result
            self._running = None
        done.set()

    def _start_locked(self) -> threading.Event:
        if self._running is None:
            done = self._done
            thread = threading.Thread(
                target=self._worker, args=(self._python, done), name="gpulens-probe", daemon=True
            )
            self._running = thread
            thread.start()
        return self._done

    def refresh(self) -> None:
        """Probe again in the background; the previous answer stays until the new one lands."""
        with self._lock:
            if self._running is None:
                self._done = threading.Event()
                self._start_locked()

    def get(self, *, block: bool = False) -> dict[str, FrameworkReport] | None:
        with self._lock:
            if self._result is not None and not block:
                return self._result
            if self._result is not None and self._running is None:
                return self._result
            done = self._start_locked()
        if block:
            done.wait()
            with self._lock:
                return self._result
        return None
