"""Framework probe, run as ``python -c <this file's text> FRAMEWORK`` in the user's interpreter.

Standalone on purpose: it imports nothing from gpulens (that interpreter may not have it) and
only the standard library besides the framework it probes; it keeps to Python 3.8 syntax.
It prints one line ``GPULENS_PROBE <json>`` on stdout; anything the framework prints is ignored.
Probing must not take GPU memory from the user: no framework allocates here.
"""

# Python 3.8 syntax on purpose: this runs in whatever interpreter the user has (signatures'
# annotations are quoted, as 3.8 would evaluate them; a local's annotation is never evaluated).
# ruff: noqa: UP031, SIM105

import importlib.util
import json
import os
import sys
from collections.abc import Callable
from typing import Any

MARKER = "GPULENS_PROBE "


def _devices_of(prefix: "str", count: "int") -> "list[str]":
    return ["%s:%d" % (prefix, i) for i in range(count)]


def probe_torch() -> "dict[str, Any]":
    import torch

    cuda_build = getattr(torch.version, "cuda", None)
    hip_build = getattr(torch.version, "hip", None)
    result: dict[str, Any] = {"version": torch.__version__, "cuda_runtime": cuda_build}
    if hip_build:
        result["build"] = "rocm"
        result["rocm_runtime"] = hip_build
    elif cuda_build:
        result["build"] = "cuda"
    else:
        result["build"] = "cpu"
    available = bool(torch.cuda.is_available())
    count = torch.cuda.device_count() if available else 0
    devices = _devices_of("cuda", count)
    result["device_names"] = [torch.cuda.get_device_name(i) for i in range(count)]
    if count:
        # Capability and the build's kernels tell "this build cannot run on this GPU" apart.
        result["capabilities"] = [
            "%d.%d" % torch.cuda.get_device_capability(i) for i in range(count)
        ]
        result["arch_list"] = list(torch.cuda.get_arch_list())
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
        if result["build"] == "cpu":
            result["build"] = "mps"
    result.update(cuda=available, device_count=count, devices=devices)
    return result


def probe_cupy() -> "dict[str, Any]":
    import cupy

    result: dict[str, Any] = {"version": cupy.__version__}
    runtime = cupy.cuda.runtime
    hip = bool(getattr(runtime, "is_hip", False))
    result["build"] = "rocm" if hip else "cuda"
    try:
        version = runtime.runtimeGetVersion()
        result["cuda_runtime"] = "%d.%d" % (version // 1000, (version % 1000) // 10)
    except Exception as error:  # the runtime library itself is missing
        result["cuda_runtime"] = None
        result["runtime_error"] = "%s: %s" % (type(error).__name__, error)
    try:
        count = runtime.getDeviceCount()
    except Exception as error:
        count = 0
        result["device_error"] = "%s: %s" % (type(error).__name__, error)
    result.update(cuda=count > 0, device_count=count, devices=_devices_of("cuda", count))
    return result


def probe_jax() -> "dict[str, Any]":
    import jax

    result: dict[str, Any] = {"version": jax.__version__}
    devices = []
    try:
        found = jax.devices()
    except Exception as error:
        found = []
        result["device_error"] = "%s: %s" % (type(error).__name__, error)
    for device in found:
        devices.append("%s:%d" % (device.platform, device.id))
    platforms = {d.platform for d in found}
    accelerators = [d for d in found if d.platform != "cpu"]
    if "gpu" in platforms or "cuda" in platforms:
        result["build"] = "cuda"
    elif "rocm" in platforms:
        result["build"] = "rocm"
    elif "tpu" in platforms:
        result["build"] = "tpu"
    else:
        plugins = [
            name
            for name in ("jax_cuda13_plugin", "jax_cuda12_plugin", "jax_rocm60_plugin")
            if importlib.util.find_spec(name) is not None
        ]
        result["build"] = "cuda" if plugins else "cpu"
    result["default_backend"] = jax.default_backend()
    try:
        from jax._src.lib import cuda_versions

        if cuda_versions is not None:
            version = cuda_versions.cuda_runtime_get_version()
            result["cuda_runtime"] = "%d.%d" % (version // 1000, (version % 1000) // 10)
    except Exception:
        result["cuda_runtime"] = None
    gpus = [d for d in accelerators if d.platform in ("gpu", "cuda", "rocm")]
    result.update(cuda=bool(gpus), device_count=len(accelerators), devices=devices)
    return result


def probe_numba() -> "dict[str, Any]":
    import numba

    result: dict[str, Any] = {"version": numba.__version__, "build": "cuda"}
    try:
        from numba import cuda
    except Exception as error:
        result.update(build="cpu", cuda=False, device_count=0, devices=[])
        result["device_error"] = "%s: %s" % (type(error).__name__, error)
        return result
    available = bool(cuda.is_available())
    count = len(cuda.gpus) if available else 0
    result["cuda_runtime"] = None
    if available:
        try:
            result["cuda_runtime"] = "%d.%d" % cuda.runtime.get_version()
        except Exception:
            pass
    result.update(cuda=available, device_count=count, devices=_devices_of("cuda", count))
    return result


def probe_tensorflow() -> "dict[str, Any]":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    info: dict[str, Any] = {}
    try:
        info = dict(tf.sysconfig.get_build_info())
    except Exception:
        pass
    built_with_cuda = bool(info.get("is_cuda_build")) or tf.test.is_built_with_cuda()
    gpus = tf.config.list_physical_devices("GPU")
    return {
        "version": tf.__version__,
        "build": "cuda" if built_with_cuda else ("rocm" if info.get("is_rocm_build") else "cpu"),
        "cuda_runtime": info.get("cuda_version"),
        "cuda": bool(gpus),
        "device_count": len(gpus),
        "devices": _devices_of("gpu", len(gpus)),
    }


PROBES: "dict[str, tuple[str, Callable[[], dict[str, Any]]]]" = {
    "torch": ("torch", probe_torch),
    "cupy": ("cupy", probe_cupy),
    "jax": ("jax", probe_jax),
    "numba": ("numba", probe_numba),
    "tensorflow": ("tensorflow", probe_tensorflow),
}


def main(argv: "list[str]") -> None:
    name = argv[0]
    module, probe = PROBES[name]
    result: dict[str, Any]
    if importlib.util.find_spec(module) is None:
        result = {"installed": False}
    else:
        try:
            result = probe()
            result["installed"] = True
        except Exception as error:
            result = {
                "installed": True,
                "error": "%s: %s" % (type(error).__name__, error),
            }
    result["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    result["python"] = sys.executable
    result["python_version"] = "%d.%d.%d" % sys.version_info[:3]
    sys.stdout.write("\n" + MARKER + json.dumps(result) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
