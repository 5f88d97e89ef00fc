"""The CUDA driver calls a capture makes after a cell: wait for its GPU work, name devices.

Through ctypes on the libcuda the process already loaded (a framework that ran on the GPU
loaded it; one that did not has nothing to wait for). cuda-bindings' driver module would
do the same at the cost of an import of tens of milliseconds on a first profile's path.
cuInit is never called here: a process that has not initialized CUDA ran nothing on a GPU.
"""

from __future__ import annotations

import ctypes
import functools

CUDA_SUCCESS = 0


@functools.lru_cache(maxsize=1)
def _driver() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    int_p = ctypes.POINTER(ctypes.c_int)
    signatures = {
        "cuDeviceGetCount": [int_p],
        "cuDeviceGet": [int_p, ctypes.c_int],
        "cuDevicePrimaryCtxGetState": [ctypes.c_int, ctypes.POINTER(ctypes.c_uint), int_p],
        "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
        "cuDevicePrimaryCtxRelease_v2": [ctypes.c_int],
        "cuCtxPushCurrent_v2": [ctypes.c_void_p],
        "cuCtxPopCurrent_v2": [ctypes.POINTER(ctypes.c_void_p)],
        "cuCtxSynchronize": [],
        "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
        "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
    }
    try:
        for name, argtypes in signatures.items():
            function = getattr(lib, name)
            function.argtypes = argtypes
            function.restype = ctypes.c_int
    except AttributeError:
        return None
    return lib


def _error_name(lib: ctypes.CDLL, rc: int) -> str:
    text = ctypes.c_char_p()
    if lib.cuGetErrorName(rc, ctypes.byref(text)) == CUDA_SUCCESS and text.value:
        return text.value.decode(errors="replace")
    return f"CUDA error {rc}"


def synchronize_active_contexts(warnings: list[str]) -> None:
    """Waits for every primary context in use, so its records are complete before a flush."""
    lib = _driver()
    if lib is None:
        warnings.append("the CUDA driver library did not load: unfinished GPU work may be cut")
        return
    count = ctypes.c_int()
    if lib.cuDeviceGetCount(ctypes.byref(count)) != CUDA_SUCCESS:
        return  # CUDA never initialized in this process: nothing ran on a GPU
    for ordinal in range(count.value):
        device, flags, active = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
        if lib.cuDeviceGet(ctypes.byref(device), ordinal) != CUDA_SUCCESS:
            continue
        state = lib.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active))
        if state != CUDA_SUCCESS or not active.value:
            continue
        context = ctypes.c_void_p()
        if lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) != CUDA_SUCCESS:
            continue
        try:
            if lib.cuCtxPushCurrent_v2(context) != CUDA_SUCCESS:
                continue
            rc = lib.cuCtxSynchronize()
            if rc != CUDA_SUCCESS:
                name = _error_name(lib, rc)
                warnings.append(f"GPU {ordinal} reported {name} while finishing its work")
            lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        finally:
            lib.cuDevicePrimaryCtxRelease_v2(device)


@functools.lru_cache(maxsize=64)
def device_name(index: int) -> str:
    """The driver's name of GPU `index` (e.g. "NVIDIA H100 80GB HBM3"), else "GPU <index>"."""
    lib = _driver()
    device = ctypes.c_int()
    if lib is None or lib.cuDeviceGet(ctypes.byref(device), index) != CUDA_SUCCESS:
        return f"GPU {index}"
    raw = ctypes.create_string_buffer(256)
    if lib.cuDeviceGetName(raw, 256, device) != CUDA_SUCCESS:
        return f"GPU {index}"
    return raw.value.decode(errors="replace") or f"GPU {index}"
