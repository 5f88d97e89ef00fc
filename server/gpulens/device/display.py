"""What people read of a status payload, worded once for every client and the CLI.

`status_display` is the payload's `display` block: the status bar text (for the first GPU
CUDA sees, and for each device a user may choose), its tooltip in Markdown, a one-line
title, the "CPU only" reason, the lines of the JupyterLab popup (each GPU, its processes,
the frameworks), and the device choices. `status_table` is `gpulens status`. Both are made
from the same figures (`_util`, `_memory`, …), so a GPU reads the same everywhere.
Pure: a payload in, strings out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

GIB = 1024**3
# memory use of the GPU shown above which the status bar turns to its warning colour
MEMORY_WARNING_SHARE = 0.9
NO_FRAMEWORKS = "none of torch, cupy, jax, numba, tensorflow is installed"

Gpu = Mapping[str, Any]


# --- one figure ---------------------------------------------------------------------------------
def _gib(value: int | None) -> str:
    return "?" if value is None else f"{value / GIB:.1f}"


def _util(gpu: Gpu) -> str | None:
    value = gpu.get("utilization_pct")
    return None if value is None else f"{round(value)}%"


def _memory(gpu: Gpu) -> str:
    return f"{_gib(gpu.get('memory_used_bytes'))}/{_gib(gpu.get('memory_total_bytes'))} GiB"


def _temperature(gpu: Gpu) -> str | None:
    value = gpu.get("temperature_c")
    return None if value is None else f"{round(value)}°C"


def _power(gpu: Gpu) -> str | None:
    if gpu.get("power_w") is None:
        return None
    limit = gpu.get("power_limit_w")
    return f"{gpu['power_w']:.0f}" + (f"/{limit:.0f} W" if limit else " W")


def _clock(gpu: Gpu) -> str | None:
    value = gpu.get("sm_clock_mhz")
    return None if value is None else f"{value} MHz"


def _count(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 'es' if word.endswith('s') else 's'}"


_SKIPPED_WORDS = re.compile(r"^(\d+\s*[GM]i?B|HBM\d*e?|PCIe|SXM\d*|NVL\d*|MIG)$", re.IGNORECASE)


def short_name(name: str | None) -> str:
    """ "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA A100-SXM4-80GB" -> "A100",
    "NVIDIA GeForce RTX 4090" -> "RTX 4090": the model, for a status bar."""
    text = re.sub(r"^NVIDIA\s+", "", (name or "").strip(), flags=re.IGNORECASE)
    text = re.sub(r"^(GeForce|Tesla|Quadro)\s+", "", text, flags=re.IGNORECASE)
    kept: list[str] = []
    for word in filter(None, re.split(r"[\s-]+", text)):
        if _SKIPPED_WORDS.match(word):
            break
        kept.append(word)
    return " ".join(kept) or (name or "").strip() or "GPU"


def _full_name(gpu: Gpu) -> str:
    return str(gpu.get("name") or f"GPU {gpu.get('index', '?')}")


def _markdown(text: object) -> str:
    """Text for a Markdown line or table cell: no markup, no table breaks."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>])", r"\\\1", str(text))


# --- which GPUs -----------------------------------------------------------------------------------
def _visible(status: Mapping[str, Any]) -> list[Gpu]:
    """The GPUs the user's programs can use, in CUDA order."""
    gpus = [gpu for gpu in status.get("gpus") or [] if gpu.get("visible", True)]
    return sorted(gpus, key=lambda gpu: int(str(gpu.get("cuda_device") or "cuda:0")[5:] or 0))


def _framework_devices(status: Mapping[str, Any]) -> list[str]:
    """Devices a framework sees although NVML does not (Apple mps, ROCm, TPUs)."""
    seen: list[str] = []
    for report in (status.get("frameworks") or {}).values():
        for device in report.get("devices") or []:
            if not str(device).startswith("cpu") and device not in seen:
                seen.append(str(device))
    return seen


def _memory_share(gpu: Gpu) -> float | None:
    used, total = gpu.get("memory_used_bytes"), gpu.get("memory_total_bytes")
    return used / total if used is not None and total else None


# --- the status bar -----------------------------------------------------------------------------
def _bar(gpu: Gpu, others: int) -> dict[str, Any]:
    """The status bar when `gpu` is the device shown, with `others` more GPUs visible."""
    more = f" (+{others})" if others else ""
    if gpu.get("error"):
        text = f"{short_name(gpu.get('name'))} lost{more}"
        return {"text": text, "icon": "lost", "warning": True}
    parts = [short_name(gpu.get("name")), _util(gpu), _memory(gpu), _temperature(gpu)]
    share = _memory_share(gpu)
    return {
        "text": " · ".join(part for part in parts if part) + more,
        "icon": "gpu",
        "warning": share is not None and share > MEMORY_WARNING_SHARE,
    }


def _no_gpu_bar(status: Mapping[str, Any]) -> dict[str, Any]:
    others = _framework_devices(status)
    if not status.get("available") and others:
        return {"text": "GPU: " + ", ".join(others), "icon": "gpu", "warning": False}
    hidden = status.get("available") and status.get("gpus")
    text = "CPU only (GPUs hidden by CUDA_VISIBLE_DEVICES)" if hidden else "CPU only"
    return {"text": text, "icon": "cpu", "warning": False}


def device_choices(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The devices a user may choose for the fixes to write: each visible GPU as `cuda:N`,
    then `cpu`; each with its description and the status bar shown while it is chosen."""
    visible = _visible(status) if status.get("available") else []
    choices = []
    for gpu in visible:
        if not gpu.get("cuda_device"):
            continue
        if gpu.get("error"):
            detail = "lost"
        else:
            processes = len(gpu.get("processes") or [])
            parts = [
                f"{_util(gpu)} busy" if _util(gpu) else None,
                f"{_memory(gpu)} used" if _memory_share(gpu) is not None else None,
                _count(processes, "process") if processes else None,
            ]
            detail = " · ".join(part for part in parts if part)
        choices.append(
            {
                "device": gpu["cuda_device"],
                "label": gpu["cuda_device"],
                "description": _full_name(gpu),
                "detail": detail,
                **_bar(gpu, len(visible) - 1),
            }
        )
    if visible:
        idle = f"cpu · {len(visible)} GPU{'' if len(visible) == 1 else 's'} not used"
        cpu = {"text": idle, "icon": "gpu", "warning": False}
    else:
        cpu = _no_gpu_bar(status)
    choices.append(
        {"device": "cpu", "label": "cpu", "description": "run on the CPU", "detail": "", **cpu}
    )
    return choices


# --- the details ----------------------------------------------------------------------------------
def _facts(status: Mapping[str, Any]) -> str | None:
    if not status.get("available"):
        return None
    cvd = status.get("cuda_visible_devices")
    return (
        f"NVIDIA driver {status.get('driver_version') or '?'} · "
        f"CUDA {status.get('cuda_driver_version') or '?'} · "
        f"CUDA_VISIBLE_DEVICES={'(unset)' if cvd is None else repr(cvd)}"
    )


def _reason(status: Mapping[str, Any]) -> str | None:
    if status.get("available"):
        return None
    return f"CPU only: {status.get('reason') or 'no GPU found.'}"


def _gpu_line(gpu: Gpu) -> str:
    if gpu.get("error"):
        return f"lost: {gpu['error']}"
    parts = [
        f"{_util(gpu)} busy" if _util(gpu) else None,
        _memory(gpu),
        _temperature(gpu),
        _power(gpu),
        _clock(gpu),
    ]
    return " · ".join(part for part in parts if part)


def _where(gpu: Gpu) -> str:
    """How the user's programs name the GPU: `cuda:N`, or why they cannot."""
    if gpu.get("cuda_device"):
        return str(gpu["cuda_device"])
    return "hidden by CUDA_VISIBLE_DEVICES" if gpu.get("visible") is False else "—"


def _device_name(gpu: Gpu) -> str:
    return str(gpu.get("cuda_device") or f"GPU {gpu.get('index')}")


def _gpu_section(gpu: Gpu) -> dict[str, Any]:
    processes = gpu.get("processes") or []
    note = None
    if gpu.get("processes_error"):
        note = str(gpu["processes_error"])
    elif not processes:
        note = "no processes"
    return {
        "index": gpu.get("index"),
        "heading": f"GPU {gpu.get('index')} · {_where(gpu)} · {_full_name(gpu)}",
        "line": _gpu_line(gpu),
        "processes": [
            [
                f"pid {process.get('pid')}",
                str(process.get("name") or "?"),
                f"{_gib(process.get('used_memory_bytes'))} GiB"
                if process.get("used_memory_bytes") is not None
                else "",
            ]
            for process in processes
        ],
        "processes_note": note,
    }


def framework_lines(status: Mapping[str, Any]) -> list[str]:
    """One line per framework the user's interpreter has: version, devices, CUDA runtime."""
    if status.get("frameworks_state") == "pending":
        return ["probing…"]
    frameworks = status.get("frameworks") or {}
    if not frameworks:
        return [NO_FRAMEWORKS]
    lines = []
    for name, report in frameworks.items():
        head = f"{name} {report.get('version') or '?'}"
        if report.get("error"):
            lines.append(f"{head} · {report['error']}")
            continue
        parts = [head, ", ".join(report.get("devices") or []) or "no GPU"]
        if report.get("cuda_runtime"):
            parts.append(f"CUDA {report['cuda_runtime']}")
        lines.append(" · ".join(parts))
    return lines


def _tooltip(status: Mapping[str, Any]) -> str:
    """The status bar's tooltip, in Markdown: every GPU, the processes, the frameworks."""
    lines: list[str] = []
    gpus = status.get("gpus") or []
    if status.get("available") and gpus:
        lines += [
            f"**GPUs** · NVIDIA driver {_markdown(status.get('driver_version') or '?')} · "
            f"CUDA {_markdown(status.get('cuda_driver_version') or '?')}",
            "",
            "| device | name | util | memory | temp | power |",
            "|---|---|---|---|---|---|",
        ]
        for gpu in gpus:
            cells = [_markdown(gpu.get("cuda_device") or "hidden"), _markdown(_full_name(gpu))]
            if gpu.get("error"):
                cells += ["lost", "", "", ""]
            else:
                figures = [_util(gpu), _memory(gpu), _temperature(gpu), _power(gpu)]
                cells += [figure or "–" for figure in figures]
            lines.append(f"| {' | '.join(cells)} |")
        lines.append("")
        cvd = status.get("cuda_visible_devices")
        if cvd is not None:
            lines += [f"CUDA\\_VISIBLE\\_DEVICES={_markdown(cvd)}", ""]
        processes = [
            f"- {_markdown(_device_name(gpu))}: "
            f"{_markdown(process.get('name') or '?')} (pid {process.get('pid')})"
            + (
                f" · {_gib(process['used_memory_bytes'])} GiB"
                if process.get("used_memory_bytes") is not None
                else ""
            )
            for gpu in gpus
            for process in gpu.get("processes") or []
        ]
        lines += ["**Processes**", "", *processes, ""] if processes else ["Processes: none", ""]
        for gpu in gpus:
            if gpu.get("error"):
                lines += [f"GPU {gpu.get('index')}: {_markdown(gpu['error'])}", ""]
    else:
        lines += [f"**CPU only** — {_markdown(status.get('reason') or 'no GPU found.')}", ""]
    lines += ["**Frameworks**", ""]
    lines += [f"- {_markdown(line)}" for line in framework_lines(status)]
    return "\n".join(lines)


def _title(status: Mapping[str, Any]) -> str:
    """The tooltip in one plain line, for clients that show only that."""
    gpus = status.get("gpus") or []
    if not status.get("available") or not gpus:
        return _reason(status) or "CPU only"
    count = f"{len(gpus)} GPU{'' if len(gpus) == 1 else 's'}"
    return (
        f"{count} · NVIDIA driver {status.get('driver_version') or '?'} · "
        f"CUDA {status.get('cuda_driver_version') or '?'}"
    )


def status_display(status: Mapping[str, Any]) -> dict[str, Any]:
    """The `display` block of a status payload (see the module docstring)."""
    choices = device_choices(status)
    gpu_choices = [choice for choice in choices if choice["device"] != "cpu"]
    shown = gpu_choices[0] if gpu_choices else choices[-1]
    return {
        "text": shown["text"],
        "icon": shown["icon"],
        "warning": shown["warning"],
        "title": _title(status),
        "reason": _reason(status),
        "tooltip": _tooltip(status),
        "heading": "GPU status",
        "facts": _facts(status),
        "gpus": [_gpu_section(gpu) for gpu in status.get("gpus") or []],
        "history": {"utilization": "util", "memory": "mem"},
        "frameworks": {"heading": "Frameworks", "lines": framework_lines(status)},
        "devices": choices,
    }


# --- gpulens status ----------------------------------------------------------------------------
def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _table_name(gpu: Gpu) -> str:
    return _full_name(gpu).removeprefix("NVIDIA ").strip()


def _gpu_row(gpu: Gpu, label: str) -> list[str]:
    if gpu.get("error"):
        return [label, _table_name(gpu), "-", "-", "-", "-", "-", "lost"]
    visible = "yes" if gpu.get("visible", True) else "hidden"
    if gpu.get("cuda_device"):
        visible = str(gpu["cuda_device"])
    figures = [_util(gpu), _memory(gpu), _temperature(gpu), _power(gpu), _clock(gpu)]
    return [label, _table_name(gpu), *(figure or "-" for figure in figures), visible]


def status_table(status: Mapping[str, Any]) -> str:
    """The human view of a status payload, as `gpulens status` prints it."""
    lines: list[str] = []
    if status.get("available"):
        lines.append(_facts(status) or "")
        rows = [["GPU", "Name", "Util", "Memory", "Temp", "Power", "SM clock", "Visible as"]]
        processes: list[str] = []
        for gpu in status["gpus"]:
            rows.append(_gpu_row(gpu, str(gpu["index"])))
            for mig in gpu.get("mig_devices") or []:
                rows.append(_gpu_row(mig, f" └ MIG {mig['index']}"))
            for process in gpu.get("processes") or []:
                processes.append(
                    f"  GPU {gpu['index']}  pid {process['pid']:<8} "
                    f"{(process.get('name') or '?'):<20} "
                    f"{_gib(process.get('used_memory_bytes'))} GiB"
                )
        lines.extend(_table(rows))
        for gpu in status["gpus"]:
            if gpu.get("error"):
                lines.append(f"GPU {gpu['index']}: {gpu['error']}")
            elif gpu.get("processes_error"):
                lines.append(f"GPU {gpu['index']}: {gpu['processes_error']}")
        lines.append("Processes:" if processes else "Processes: none")
        lines.extend(processes)
    else:
        lines.append(_reason(status) or "CPU only")
    framework = framework_lines(status)
    if len(framework) == 1 and not status.get("frameworks"):
        lines.append(f"Frameworks: {framework[0]}")
    else:
        lines.append("Frameworks:")
        lines.extend(f"  {line}" for line in framework)
    return "\n".join(lines)
