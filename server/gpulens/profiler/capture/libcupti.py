"""libcupti through ctypes: the few C calls a capture makes while a cell runs.

cupti-python's own import takes 60-70 ms (measured on an H100 with NumPy already loaded:
its enums of some 1,300 API calls), which a notebook's first profile would pay on its
path. What a capture calls (enable and disable record kinds, filter API calls, flush,
read the clock) are C functions of int arguments; they are called here on the very
libcupti cupti-python loads (one CUPTI per process), and cupti-python is needed only to
learn the record layouts once (`cupti_tables`).
"""

from __future__ import annotations

import ctypes
import functools

from gpulens.profiler.capture.clock import Reading, read

CUPTI_SUCCESS = 0
# readings of CUPTI's clock against Unix time: the tightest of this many
READING_TRIES = 5


class CuptiUnavailable(RuntimeError):
    """CUPTI cannot be used in this process; the message says why."""


def loaded_path() -> str | None:
    """The libcupti already loaded in this process (by cupti-python, Kineto, ...), if any:
    a second copy of the library would be a second CUPTI fighting over the same driver."""
    try:
        with open("/proc/self/maps") as maps:
            for row in maps:
                if "libcupti.so" in row:
                    return row.split(None, 5)[-1].strip()
    except OSError:
        pass
    return None


def _check(rc: int, lib: ctypes.CDLL, call: str) -> None:
    if rc != CUPTI_SUCCESS:
        raise CuptiUnavailable(f"{call} returned {result_string(lib, rc)}")


def result_string(lib: ctypes.CDLL, rc: int) -> str:
    """CUPTI's name for a result code (e.g. CUPTI_ERROR_NOT_INITIALIZED), else the number."""
    text = ctypes.c_char_p()
    try:
        if lib.cuptiGetResultString(rc, ctypes.byref(text)) == CUPTI_SUCCESS and text.value:
            return text.value.decode(errors="replace")
    except AttributeError:
        pass
    return str(rc)


class Libcupti:
    """One libcupti, its functions typed once."""

    def __init__(self, path: str) -> None:
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as error:
            raise CuptiUnavailable(f"libcupti did not load ({error})") from error
        self.path = path
        lib = self.lib
        for name in (
            "cuptiActivityEnable",
            "cuptiActivityDisable",
            "cuptiActivityFlushAll",
            "cuptiSetThreadIdType",
        ):
            getattr(lib, name).argtypes = [ctypes.c_int]
            getattr(lib, name).restype = ctypes.c_int
        for name in ("cuptiActivityEnableRuntimeApi", "cuptiActivityEnableDriverApi"):
            getattr(lib, name).argtypes = [ctypes.c_int, ctypes.c_uint8]
            getattr(lib, name).restype = ctypes.c_int
        lib.cuptiGetTimestamp.argtypes = [ctypes.c_void_p]
        lib.cuptiGetTimestamp.restype = ctypes.c_int
        lib.cuptiGetResultString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuptiGetResultString.restype = ctypes.c_int
        lib.cuptiActivityRegisterCallbacks.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.cuptiActivityRegisterCallbacks.restype = ctypes.c_int
        lib.cuptiActivityGetNextRecord.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_void_p),
        ]
        lib.cuptiActivityGetNextRecord.restype = ctypes.c_int
        for name in ("cuptiActivityGetAttribute", "cuptiActivitySetAttribute"):
            function = getattr(lib, name)
            function.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_size_t), ctypes.c_void_p]
            function.restype = ctypes.c_int
        self._stamp = ctypes.c_uint64()
        self._stamp_address = ctypes.addressof(self._stamp)
        self.timestamp()  # fails cleanly where there is no driver

    def timestamp(self) -> int:
        """CUPTI's clock: what its records are stamped with (Unix ns, unless torch.profiler
        has given CUPTI its own source: `capture.clock`)."""
        _check(self.lib.cuptiGetTimestamp(self._stamp_address), self.lib, "cuptiGetTimestamp")
        return self._stamp.value

    def _stamp_now(self) -> int:
        """`timestamp` without the check, for readings bracketed tightly (a working CUPTI:
        `timestamp` succeeded as the library opened)."""
        self.lib.cuptiGetTimestamp(self._stamp_address)
        return self._stamp.value

    def reading(self) -> Reading:
        """CUPTI's clock between two reads of Unix time, of `READING_TRIES` the tightest."""
        return read(self._stamp_now, READING_TRIES)

    def enable(self, kind: int) -> None:
        _check(self.lib.cuptiActivityEnable(kind), self.lib, f"cuptiActivityEnable({kind})")

    def disable(self, kind: int) -> int:
        rc: int = self.lib.cuptiActivityDisable(kind)
        return rc

    def flush(self, flag: int) -> None:
        _check(self.lib.cuptiActivityFlushAll(flag), self.lib, "cuptiActivityFlushAll")

    def set_thread_id_type(self, value: int) -> bool:
        return bool(self.lib.cuptiSetThreadIdType(value) == CUPTI_SUCCESS)

    def set_api_call(self, runtime: bool, cbid: int, on: bool) -> bool:
        """Records one runtime (else driver) API call, or not; False where CUPTI refused."""
        setter = (
            self.lib.cuptiActivityEnableRuntimeApi
            if runtime
            else self.lib.cuptiActivityEnableDriverApi
        )
        return bool(setter(cbid, int(on)) == CUPTI_SUCCESS)


@functools.lru_cache(maxsize=4)
def open_library(path: str) -> Libcupti:
    """The process's one handle on the libcupti at `path`."""
    return Libcupti(path)
