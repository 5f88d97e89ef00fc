"""`gpulens doctor`: gather the facts (edges), then ``diagnose`` them (pure) into findings.

Every finding is one sentence a user can act on: what happened, why, and the next step.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import shutil
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from gpulens.device.display import status_table
from gpulens.device.frameworks import (
    FRAMEWORKS,
    FrameworkReport,
    interpreter_env_visible_devices,
    probe_all,
)
from gpulens.device.nvml import NvmlMonitor
from gpulens.device.recorded import backend_from_env
from gpulens.device.smoke import choose_smoke_framework, run_smoke_test
from gpulens.device.status import build_status

SCHEMA = "gpulens.doctor/1"
GIB = 1024**3

# The oldest Linux driver each CUDA major version runs on (minor-version compatibility),
# from NVIDIA's "CUDA Toolkit and Corresponding Driver Versions" table.
MIN_DRIVER_FOR_CUDA_MAJOR = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
# Above this a GPU throttles its clocks; a status worth telling the user about.
HOT_C = 90


class Finding(TypedDict):
    severity: str  # error | warning | info
    code: str
    message: str


# --- facts ------------------------------------------------------------------------------------


def parse_cpuinfo(text: str) -> str | None:
    """The CPU model from /proc/cpuinfo (x86 ``model name``, Arm ``Model``/``Hardware``)."""
    for key in ("model name", "Model", "Hardware", "cpu model"):
        for line in text.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key and value.strip():
                return value.strip()
    return None


def parse_meminfo_total(text: str) -> int | None:
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            return int(parts[1]) * 1024
    return None


def _read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def read_cpu_summary() -> dict[str, Any]:
    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    return {
        "model": parse_cpuinfo(_read_text("/proc/cpuinfo")) or platform.processor() or None,
        "logical_cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_total_bytes": parse_meminfo_total(_read_text("/proc/meminfo")),
        "platform": f"{platform.system()} {platform.machine()}",
    }


def gather_facts(
    python: str | None = None,
    *,
    smoke: bool = True,
    monitor: NvmlMonitor | None = None,
    probe: Callable[[str], dict[str, FrameworkReport]] | None = None,
    smoke_runner: Callable[[str, str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything the doctor looks at, as plain data (the doctor's JSON)."""
    python = python or sys.executable
    reports = (probe or probe_all)(python)
    nvml = (monitor or NvmlMonitor(backend_from_env())).read()
    visible = interpreter_env_visible_devices(reports)
    status = build_status(nvml, reports, visible, dt.datetime.now(dt.UTC))
    smoke_result: dict[str, Any] | None = None
    if smoke:
        framework = choose_smoke_framework(reports)
        if framework is None:
            smoke_result = {"skipped": "no framework with CUDA sees a GPU (torch or CuPy needed)"}
        else:
            smoke_result = (smoke_runner or run_smoke_test)(python, framework)
    python_version = next(
        (r["python_version"] for r in reports.values() if "python_version" in r), None
    )
    return {
        "schema": SCHEMA,
        "time": status["time"],
        "cpu": read_cpu_summary(),
        "python": {"executable": python, "version": python_version},
        "nvidia_smi": shutil.which("nvidia-smi"),
        "status": status,
        "installed": {name: bool(reports.get(name, {}).get("installed")) for name in reports},
        "smoke": smoke_result,
    }


# --- diagnosis ----------------------------------------------------------------------------------


def _version_tuple(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    parts = str(text).split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None


def _gpu_words(gpus: list[Mapping[str, Any]]) -> str:
    names = sorted({str(g.get("name") or "GPU") for g in gpus})
    return names[0] if len(names) == 1 and len(gpus) == 1 else f"the {len(gpus)} GPUs"


def _install_hint(name: str, driver_cuda: tuple[int, int] | None) -> str:
    major = driver_cuda[0] if driver_cuda else 12
    minor = driver_cuda[1] if driver_cuda else 0
    if name == "torch":
        return (
            "install the CUDA build (`pip install torch --index-url "
            f"https://download.pytorch.org/whl/cu{major}{minor}` or the newest cuXXX "
            f"not above CUDA {major}.{minor}, see pytorch.org/get-started)"
        )
    if name == "cupy":
        return f"install `cupy-cuda{major}x` instead"
    if name == "jax":
        return f'install the CUDA plugin with `pip install -U "jax[cuda{major}]"`'
    if name == "numba":
        return f"install `numba-cuda[cu{major}]`"
    if name == "tensorflow":
        return "install `tensorflow[and-cuda]` (Linux)"
    return "install its CUDA build"


def _framework_findings(
    name: str, report: Mapping[str, Any], status: Mapping[str, Any]
) -> list[Finding]:
    findings: list[Finding] = []
    version = report.get("version") or ""
    label = f"{name} {version}".strip()
    if report.get("state") in ("crashed", "timeout", "error"):
        return [
            {"severity": "error", "code": f"{name}-{report['state']}", "message": report["error"]}
        ]
    gpus = [g for g in status.get("gpus", []) if not g.get("error")]
    visible = [g for g in gpus if g.get("visible", True)]
    driver_cuda = _version_tuple(status.get("cuda_driver_version"))
    runtime = _version_tuple(report.get("cuda_runtime"))
    build = report.get("build")
    # A runtime newer than the driver: the most common reason a CUDA build sees no GPU.
    if runtime and driver_cuda and build == "cuda":
        if runtime[0] > driver_cuda[0]:
            needed = MIN_DRIVER_FOR_CUDA_MAJOR.get(runtime[0], "a newer one")
            findings.append(
                {
                    "severity": "error",
                    "code": "driver-too-old",
                    "message": (
                        f"{label} is built for CUDA {report['cuda_runtime']}, but NVIDIA driver "
                        f"{status.get('driver_version')} supports CUDA up to "
                        f"{status.get('cuda_driver_version')}, so {name} cannot use the GPU: "
                        f"update the driver to {needed} or newer, or install a {name} build for "
                        f"CUDA {driver_cuda[0]}.x."
                    ),
                }
            )
        elif runtime > driver_cuda:
            findings.append(
                {
                    "severity": "info",
                    "code": "driver-older-minor",
                    "message": (
                        f"{label} is built for CUDA {report['cuda_runtime']}, newer than the "
                        f"driver's CUDA {status.get('cuda_driver_version')}: it runs through "
                        "minor-version compatibility, but code compiled at run time (PTX) may "
                        "fail, so update the NVIDIA driver when you can."
                    ),
                }
            )
    if status.get("available") and visible and not report.get("cuda"):
        if build == "cpu":
            findings.append(
                {
                    "severity": "error",
                    "code": "cpu-only-build",
                    "message": (
                        f"{label} is a CPU-only build, so it cannot use {_gpu_words(visible)}: "
                        f"{_install_hint(name, driver_cuda)}."
                    ),
                }
            )
        elif not any(f["code"] == "driver-too-old" for f in findings):
            detail = report.get("device_error")
            findings.append(
                {
                    "severity": "error",
                    "code": "framework-sees-no-gpu",
                    "message": (
                        f"{label} ({build} build) sees no GPU although the driver sees "
                        f"{len(visible)}"
                        + (f" ({detail})" if detail else "")
                        + f': run `python -c "import {name}"` in this interpreter to see why, '
                        f"or {_install_hint(name, driver_cuda)}."
                    ),
                }
            )
    elif status.get("available") and gpus and not visible and not report.get("cuda"):
        findings.append(
            {
                "severity": "warning",
                "code": "all-gpus-hidden",
                "message": (
                    f"CUDA_VISIBLE_DEVICES={status.get('cuda_visible_devices')!r} hides every GPU "
                    f"from {name}: unset it, or list the GPUs to use (e.g. `0`)."
                ),
            }
        )
    elif report.get("cuda") and visible and report.get("device_count", 0) < len(visible):
        findings.append(
            {
                "severity": "warning",
                "code": "framework-sees-fewer-gpus",
                "message": (
                    f"{label} sees {report.get('device_count')} of the {len(visible)} visible "
                    "GPUs: check CUDA_VISIBLE_DEVICES and `nvidia-smi` for GPUs in an error state."
                ),
            }
        )
    # torch ships kernels for a list of architectures; a GPU outside it fails at the first op.
    arch_list = report.get("arch_list") or []
    for capability in report.get("capabilities") or []:
        sm = "sm_" + capability.replace(".", "")
        major = int(capability.split(".")[0])
        ptx_ok = any(
            a.startswith("compute_") and int(a.removeprefix("compute_")[:-1] or 0) <= major
            for a in arch_list
        )
        if arch_list and sm not in arch_list and not ptx_ok:
            findings.append(
                {
                    "severity": "error",
                    "code": "arch-not-in-build",
                    "message": (
                        f"{label} has no kernels for this GPU ({sm}; the build has "
                        f"{', '.join(arch_list)}): install a newer {name} build that lists {sm}."
                    ),
                }
            )
            break
    return findings


def diagnose(facts: Mapping[str, Any]) -> list[Finding]:
    """The problems in ``facts`` (as ``gather_facts`` returns them), each with its fix."""
    status = facts["status"]
    findings: list[Finding] = []
    if not status.get("available"):
        reason = status.get("reason") or "No GPU was found."
        no_driver = "No NVIDIA driver found" in reason or "reports no GPU" in reason
        findings.append(
            {
                "severity": "warning" if no_driver else "error",
                "code": "no-gpu" if no_driver else "nvml-failed",
                "message": reason,
            }
        )
    else:
        if not facts.get("nvidia_smi"):
            findings.append(
                {
                    "severity": "info",
                    "code": "no-nvidia-smi",
                    "message": (
                        "nvidia-smi is not on PATH, though the driver works: add the driver's "
                        "bin folder to PATH if you want to use it (gpulens does not need it)."
                    ),
                }
            )
        for gpu in status.get("gpus", []):
            if gpu.get("error"):
                findings.append({"severity": "error", "code": "gpu-error", "message": gpu["error"]})
                continue
            if gpu.get("processes_error"):
                findings.append(
                    {
                        "severity": "info",
                        "code": "processes-hidden",
                        "message": gpu["processes_error"],
                    }
                )
            if gpu.get("mig_devices"):
                findings.append(
                    {
                        "severity": "info",
                        "code": "mig-enabled",
                        "message": (
                            f"GPU {gpu['index']} is split into {len(gpu['mig_devices'])} MIG "
                            "devices, so frameworks see those slices, not the whole GPU: pick one "
                            "with CUDA_VISIBLE_DEVICES=MIG-<uuid>."
                        ),
                    }
                )
            temperature = gpu.get("temperature_c")
            if temperature is not None and temperature >= HOT_C:
                findings.append(
                    {
                        "severity": "warning",
                        "code": "gpu-hot",
                        "message": (
                            f"GPU {gpu['index']} is at {temperature}°C, where it slows its clocks "
                            "to cool down: check the cooling and airflow."
                        ),
                    }
                )
    frameworks = status.get("frameworks") or {}
    for name, report in frameworks.items():
        findings.extend(_framework_findings(name, report, status))
    installed = facts.get("installed") or {}
    if installed and not any(installed.values()):
        findings.append(
            {
                "severity": "info",
                "code": "no-framework",
                "message": (
                    f"None of {', '.join(FRAMEWORKS)} is installed in "
                    f"{facts.get('python', {}).get('executable')}: install one (e.g. `pip install "
                    "torch`) or point `gpulens.profile.python` at the interpreter you use."
                ),
            }
        )
    findings.extend(_smoke_findings(facts.get("smoke")))
    return findings


def _smoke_findings(smoke: Mapping[str, Any] | None) -> list[Finding]:
    if not smoke or smoke.get("skipped"):
        return []
    if smoke.get("error"):
        return [
            {
                "severity": "error",
                "code": "smoke-failed",
                "message": (
                    f"The GPU smoke test with {smoke.get('framework')} failed ({smoke['error']}): "
                    "run `gpulens doctor` again, and if it persists check `nvidia-smi` for errors."
                ),
            }
        ]
    findings: list[Finding] = []
    cpu_ms, gpu_ms = smoke.get("cpu_ms"), smoke.get("gpu_ms")
    if cpu_ms and gpu_ms and gpu_ms >= cpu_ms:
        findings.append(
            {
                "severity": "warning",
                "code": "gpu-slower-than-cpu",
                "message": (
                    f"x * x on 10M elements took {gpu_ms:.3g} ms on the GPU and {cpu_ms:.3g} ms "
                    "on the CPU, so the GPU is busy, throttled or misconfigured: look at its "
                    "utilization and clocks in `gpulens status`."
                ),
            }
        )
    pageable, pinned = smoke.get("h2d_pageable_gbps"), smoke.get("h2d_pinned_gbps")
    if pageable and pinned and pinned >= 1.5 * pageable:
        findings.append(
            {
                "severity": "info",
                "code": "pin-memory",
                "message": (
                    f"Host→device copies run at {pinned:.1f} GB/s from pinned memory but "
                    f"{pageable:.1f} GB/s from ordinary (pageable) memory: use "
                    "`pin_memory=True` in DataLoaders and `non_blocking=True` copies."
                ),
            }
        )
    return findings


# --- text ---------------------------------------------------------------------------------------


def format_doctor_report(facts: Mapping[str, Any], findings: list[Finding]) -> str:
    cpu = facts["cpu"]
    memory = cpu.get("memory_total_bytes")
    lines = [
        "CPU         "
        + " · ".join(
            part
            for part in (
                cpu.get("model") or "unknown model",
                f"{cpu.get('logical_cores')} cores ({cpu.get('usable_cores')} usable)",
                f"{memory / GIB:.1f} GiB RAM" if memory else "",
                cpu.get("platform") or "",
            )
            if part
        ),
        f"Python      {facts['python']['executable']} ({facts['python'].get('version') or '?'})",
        f"nvidia-smi  {facts.get('nvidia_smi') or 'not found'}",
        "",
        status_table(facts["status"]),
    ]
    missing = [name for name, present in (facts.get("installed") or {}).items() if not present]
    if missing:
        lines.append("  not installed: " + ", ".join(missing))
    smoke = facts.get("smoke")
    if smoke:
        lines.append("")
        if smoke.get("skipped"):
            lines.append(f"Smoke test: skipped ({smoke['skipped']})")
        elif smoke.get("error"):
            lines.append(f"Smoke test ({smoke.get('framework')}): failed: {smoke['error']}")
        else:
            lines.append(f"Smoke test ({smoke['framework']} on {smoke.get('device', 'GPU 0')}):")
            cpu_ms, gpu_ms = smoke["cpu_ms"], smoke["gpu_ms"]
            speedup = f" ({cpu_ms / gpu_ms:.0f}x faster)" if gpu_ms else ""
            lines.append(
                f"  x * x, 10M float32   CPU {cpu_ms:.3f} ms · GPU {gpu_ms:.3f} ms{speedup}"
            )
            lines.append(
                f"  host→device          pageable {smoke['h2d_pageable_gbps']:.1f} GB/s · "
                f"pinned {smoke['h2d_pinned_gbps']:.1f} GB/s"
            )
            lines.append(
                f"  device→host          pageable {smoke['d2h_pageable_gbps']:.1f} GB/s · "
                f"pinned {smoke['d2h_pinned_gbps']:.1f} GB/s"
            )
    lines.append("")
    if not findings:
        lines.append("No problems found.")
    else:
        lines.append("Findings:")
        for finding in findings:
            lines.append(f"  {finding['severity']:<8} {finding['message']}")
    return "\n".join(lines)
