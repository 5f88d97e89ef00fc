"""The framework probe, run for real in subprocesses against stand-in framework packages.

Each stand-in is a package named like the framework on a PYTHONPATH of its own, so the probe
script really runs, imports it, and reports; hangs and crashes are real hangs and crashes.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from gpulens.device.frameworks import (
    FrameworkProbeCache,
    interpret_probe_output,
    probe_all,
    probe_source,
    run_probe,
)

CPU_ONLY_TORCH = """
__version__ = "2.5.1+cpu"
class version:
    cuda = None
    hip = None
class cuda:
    @staticmethod
    def is_available():
        return False
    @staticmethod
    def device_count():
        return 0
class backends:
    class mps:
        @staticmethod
        def is_available():
            return False
print("noise a framework prints on import")
"""

MAC_TORCH = CPU_ONLY_TORCH.replace(
    "class mps:\n        @staticmethod\n        def is_available():\n            return False",
    "class mps:\n        @staticmethod\n        def is_available():\n            return True",
)

HANGING = "import time\ntime.sleep(60)\n"
CRASHING = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
RAISING = "raise ImportError('libcudart.so.13: cannot open shared object file')\n"


def stand_in(tmp_path: Path, name: str, source: str) -> dict[str, str]:
    package = tmp_path / "site" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(source)
    return dict(os.environ, PYTHONPATH=str(tmp_path / "site"))


def interpreter_without_site(tmp_path: Path) -> str:
    """An interpreter that cannot import gpulens (no site-packages), as a user's might be."""
    wrapper = tmp_path / "python-bare"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return str(wrapper)


@pytest.mark.skipif(sys.platform == "win32", reason="uses a POSIX shell wrapper")
def test_probe_runs_where_gpulens_is_not_installed(tmp_path: Path) -> None:
    env = stand_in(tmp_path, "torch", CPU_ONLY_TORCH)
    python = interpreter_without_site(tmp_path)
    import subprocess

    check = subprocess.run(
        [python, "-c", "import gpulens"], env=env, capture_output=True, cwd=tmp_path, check=False
    )
    assert check.returncode != 0, "precondition: gpulens must not be importable there"
    report = run_probe("torch", python, env=env, timeout_s=30)
    assert report["state"] == "ok", report
    assert report["version"] == "2.5.1+cpu"
    assert report["build"] == "cpu"
    assert report["cuda"] is False
    assert report["devices"] == []


def test_cpu_only_build_is_detected_and_noise_ignored(tmp_path: Path) -> None:
    env = stand_in(tmp_path, "torch", CPU_ONLY_TORCH)
    env["CUDA_VISIBLE_DEVICES"] = "1"
    report = run_probe("torch", sys.executable, env=env, timeout_s=30)
    assert report["build"] == "cpu"
    assert report["cuda_runtime"] is None
    assert report["device_count"] == 0
    # the variable as that interpreter saw it
    assert report["cuda_visible_devices"] == "1"


def test_apple_mps_is_a_device(tmp_path: Path) -> None:
    report = run_probe(
        "torch", sys.executable, env=stand_in(tmp_path, "torch", MAC_TORCH), timeout_s=30
    )
    assert report["devices"] == ["mps"]
    assert report["build"] == "mps"


def test_hanging_import_is_reported_as_a_timeout(tmp_path: Path) -> None:
    start = time.monotonic()
    report = run_probe("jax", sys.executable, env=stand_in(tmp_path, "jax", HANGING), timeout_s=1.5)
    assert time.monotonic() - start < 10
    assert report["state"] == "timeout"
    assert "did not finish within 1.5 s" in report["error"]


@pytest.mark.skipif(not hasattr(signal, "SIGSEGV"), reason="needs POSIX signals")
def test_crashing_import_is_named(tmp_path: Path) -> None:
    report = run_probe(
        "cupy", sys.executable, env=stand_in(tmp_path, "cupy", CRASHING), timeout_s=30
    )
    assert report["state"] == "crashed"
    assert "SIGSEGV" in report["error"]
    assert "import cupy" in report["error"]


def test_raising_import_is_an_error_with_the_cause(tmp_path: Path) -> None:
    report = run_probe(
        "numba", sys.executable, env=stand_in(tmp_path, "numba", RAISING), timeout_s=30
    )
    assert report["state"] == "error"
    assert "libcudart.so.13" in report["error"]


def test_missing_framework_is_simply_absent(tmp_path: Path) -> None:
    report = run_probe("tensorflow", sys.executable, env=stand_in(tmp_path, "x", ""))
    assert report["installed"] is False
    assert report["state"] == "absent"


def test_one_crash_does_not_hide_the_others(tmp_path: Path) -> None:
    env = stand_in(tmp_path, "torch", CPU_ONLY_TORCH)
    (tmp_path / "site" / "cupy").mkdir()
    (tmp_path / "site" / "cupy" / "__init__.py").write_text(CRASHING)

    def probe(name: str, python: str):
        return run_probe(name, python, env=env, timeout_s=30)

    reports = probe_all(sys.executable, ("torch", "cupy"), probe=probe)
    assert reports["torch"]["state"] == "ok"
    assert reports["cupy"]["state"] == "crashed"


def test_unstartable_interpreter_says_which_setting_to_change() -> None:
    report = run_probe("torch", "/nonexistent/python3")
    assert report["state"] == "error"
    assert "gpulens.profile.python" in report["error"]


def test_probe_source_imports_only_the_standard_library() -> None:
    import ast

    tree = ast.parse(probe_source())
    top_level = {
        alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert top_level <= set(sys.stdlib_module_names)


def test_interpret_exit_without_marker() -> None:
    report = interpret_probe_output(
        "torch", "py", returncode=1, stdout="", stderr="Traceback...\nOSError: bad ELF", timeout_s=5
    )
    assert report["state"] == "crashed"
    assert "exit with status 1" in report["error"]
    assert "OSError: bad ELF" in report["error"]


class CountingProbe:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.release = threading.Event()

    def __call__(self, python: str) -> dict:
        self.calls.append(python)
        self.release.wait(5)
        return {"torch": {"installed": True, "version": str(len(self.calls))}}


def test_cache_never_blocks_a_poll_and_probes_once() -> None:
    probe = CountingProbe()
    cache = FrameworkProbeCache("/py/a", probe=probe)
    assert cache.get() is None  # started in the background, answered at once
    assert cache.get() is None
    probe.release.set()
    assert cache.get(block=True)["torch"]["version"] == "1"
    for _ in range(10):
        cache.get()
    assert probe.calls == ["/py/a"]


def test_cache_refresh_and_interpreter_change_probe_again() -> None:
    probe = CountingProbe()
    probe.release.set()
    cache = FrameworkProbeCache("/py/a", probe=probe)
    cache.get(block=True)
    cache.refresh()
    assert cache.get(block=True)["torch"]["version"] == "2"
    cache.set_python("/py/b")
    assert cache.get(block=True)["torch"]["version"] == "3"
    assert probe.calls == ["/py/a", "/py/a", "/py/b"]
