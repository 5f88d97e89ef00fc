"""Waiting for the GPU work this process queued, whoever queued it (torch, CuPy, JAX, ...).

A cell's wall time ends when its last line returns, but the kernels it queued may still run:
a cell that no longer waits for the GPU every step (the point of many fixes) would look faster
than it is. `synchronize_gpus` waits for every primary CUDA context this process made, through
the driver that is already loaded (nothing is loaded or initialized here: a process that never
used CUDA has nothing to wait for). Standard library only, as the profiled child needs.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys

CUDA_SUCCESS = 0
_LIBCUDA = ("libcuda.so.1", "libcuda.so")


def loaded_libcuda(no_load: int) -> ctypes.CDLL | None:
    """The CUDA driver library if this process has loaded it, else None."""
    for name in _LIBCUDA:
        with contextlib.suppress(OSError):
            return ctypes.CDLL(name, mode=no_load | os.RTLD_NOW)
    return None


def synchronize_gpus() -> None:
    """Returns once every GPU this process used has finished the work queued on it."""
    no_load = getattr(os, "RTLD_NOLOAD", None)
    if no_load is None:  # no way to find a loaded driver without loading it: torch's view
        _synchronize_torch()
        return
    lib = loaded_libcuda(no_load)
    if lib is None:
        return  # the driver is not loaded: nothing was queued
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != CUDA_SUCCESS:
        return  # the driver was never initialized: nothing was queued
    for ordinal in range(count.value):
        device = ctypes.c_int(0)
        flags, active = ctypes.c_uint(0), ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(device), ordinal) != CUDA_SUCCESS:
            continue
        state = lib.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active))
        if state != CUDA_SUCCESS or not active.value:
            continue  # no context on this GPU: nothing queued there
        context = ctypes.c_void_p()
        if lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) != CUDA_SUCCESS:
            continue
        try:
            if lib.cuCtxPushCurrent_v2(context) == CUDA_SUCCESS:
                lib.cuCtxSynchronize()
                lib.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        finally:
            lib.cuDevicePrimaryCtxRelease_v2(device)


def _synchronize_torch() -> None:
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_initialized():
            for index in range(cuda.device_count()):
                cuda.synchronize(index)
    except Exception:  # a torch without CUDA, or one that a cell broke: nothing to wait for
        return
