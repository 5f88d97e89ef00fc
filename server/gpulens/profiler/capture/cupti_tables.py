"""What a capture needs to know of CUPTI, learnt once from cupti-python and kept on disk.

The record kinds, the layouts (numpy dtypes) of their structs, the names of copy, memory
and synchronization kinds, and which API calls to record: all of it comes from cupti-python,
whose import takes 60-70 ms (its enums of ~1,300 API calls). A notebook's first profile
would pay that on its path, every fresh kernel. So the tables are written, as plain JSON,
to a file of the user's own cache the first time, keyed by the cupti-python build they came
from, and read from there (about a millisecond) while that build stays installed.

The file is data only (numbers, names, struct layouts: nothing is evaluated), read only
where its directory and the file belong to this user and no one else can write them (a
shared machine has other users), and written atomically: a missing, foreign, stale or
damaged file means the tables are learnt from cupti-python again.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulens.profiler.capture.memory import operation_signs

FORMAT = 1
# API calls that make or wait for GPU work: the only API records kept. Keeping the others
# (cudaGetDevice, cudaMalloc, cuCtxGetCurrent, ...) made 13x the records on a training loop.
API_NAMES = r"Launch|Memcpy|Memset|Synchronize|WaitEvent|GraphLaunch"
# and the calls that allocate or free GPU memory (rare: allocators cache), so CUPTI's memory
# records join the line of the call that made them by its correlation id
MEMORY_API_NAMES = r"Malloc|MemAlloc|MemCreate|Free|MemRelease|MemMap|MemUnmap"
# Of the others, those made around nearly every launch (a 50-step training loop made 8,556
# cudaGetDevice, 2,350 cuDevicePrimaryCtxGetState and 700 cuKernelGetName calls for 1,000
# launches, on the H200) are not recorded at all; rarer ones are recorded, then dropped.
# (Patterns, compiled only where the tables are learnt: a first profile reads them kept.)
CHATTY_API_NAMES = (
    r"cudaGetDevice|cudaSetDevice|cudaGetLastError|cudaPeekAtLastError|cudaDeviceGetAttribute"
    r"|cudaStreamIsCapturing|cudaStreamGetCaptureInfo|cudaPointerGetAttributes"
    r"|cudaFuncGetAttributes|cudaEventRecord|cudaEventQuery|cudaStreamQuery"
    r"|cuDevicePrimaryCtxGetState|cuCtxGetCurrent|cuCtxSetCurrent|cuCtxGetDevice"
    r"|cuKernelGet|cuFuncGetAttribute|cuOccupancy|cuPointerGetAttribute|cuStreamGetCaptureInfo"
    r"|cuStreamIsCapturing|cuDeviceGet|cuGetProcAddress|cuLibraryGetKernel|cuModuleGetFunction"
)
# the struct of each record family, by the stem of cupti-python's dtype names
DTYPE_STEMS = {
    "kernels": "kernel",
    "memcpy": "memcpy",
    "peer": "memcpy_pto_p",
    "memset": "memset",
    "syncs": "synchronization",
    "memory": "memory",
}


class TablesUnavailable(RuntimeError):
    """cupti-python cannot say what the capture needs; the message says why."""


@dataclass
class Tables:
    """What a process needs to know about its CUPTI once: kinds, dtypes, API calls."""

    libcupti: str  # the libcupti cupti-python loads: the one to call (one CUPTI per process)
    kinds: dict[str, tuple[int, ...]]
    dtypes: dict[str, Any]
    copy_names: dict[int, str]
    memory_names: dict[int, str]
    memory_operations: dict[int, str]
    sync_names: dict[int, str]
    zeroed_attribute: int
    thread_id_system: int
    runtime_kind: int
    selected: set[int]
    turned_off: list[int]
    family_of: dict[int, str] = field(init=False)
    sizes: dict[int, int] = field(init=False)
    memory_signs: dict[int, int] = field(init=False)

    def __post_init__(self) -> None:
        self.family_of = {k: family for family, kinds in self.kinds.items() for k in kinds}
        self.sizes = {k: self.dtypes[family].itemsize for k, family in self.family_of.items()}
        self.memory_signs = operation_signs(self.memory_operations)

    def learn(self, keys: Any) -> None:
        """Turns off, from the next profile on, unselected calls that showed up in this one."""
        known = set(self.turned_off)
        self.turned_off.extend(k for k in keys if k not in self.selected and k not in known)

    # -- on disk ---------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "libcupti": self.libcupti,
            "kinds": {family: list(kinds) for family, kinds in self.kinds.items()},
            "dtypes": {family: dtype_spec(dtype) for family, dtype in self.dtypes.items()},
            "copy_names": _keyed(self.copy_names),
            "memory_names": _keyed(self.memory_names),
            "memory_operations": _keyed(self.memory_operations),
            "sync_names": _keyed(self.sync_names),
            "zeroed_attribute": self.zeroed_attribute,
            "thread_id_system": self.thread_id_system,
            "runtime_kind": self.runtime_kind,
            "selected": sorted(self.selected),
            "turned_off": list(self.turned_off),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tables:
        """The tables `to_json` wrote; ValueError where anything is not as written."""
        try:
            if data["format"] != FORMAT:
                raise ValueError(f"format {data['format']!r}")
            return cls(
                libcupti=_text(data["libcupti"]),
                kinds={_text(f): tuple(_ints(k)) for f, k in data["kinds"].items()},
                dtypes={_text(f): build_dtype(s) for f, s in data["dtypes"].items()},
                copy_names=_unkeyed(data["copy_names"]),
                memory_names=_unkeyed(data["memory_names"]),
                memory_operations=_unkeyed(data["memory_operations"]),
                sync_names=_unkeyed(data["sync_names"]),
                zeroed_attribute=_int(data["zeroed_attribute"]),
                thread_id_system=_int(data["thread_id_system"]),
                runtime_kind=_int(data["runtime_kind"]),
                selected=set(_ints(data["selected"])),
                turned_off=_ints(data["turned_off"]),
            )
        except (KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"not the tables' layout ({error})") from error


def from_cupti(cupti: Any, libcupti: str) -> Tables:
    """The tables, read from cupti-python's enums and dtypes."""
    kind = cupti.ActivityKind
    kinds = {
        "api": (int(kind.RUNTIME), int(kind.DRIVER)),
        "kernels": (int(kind.CONCURRENT_KERNEL),),
        "memcpy": (int(kind.MEMCPY),),
        # copies between two GPUs come as their own record kind (CUpti_ActivityMemcpyPtoP)
        "peer": (int(kind.MEMCPY2),),
        "memset": (int(kind.MEMSET),),
        "syncs": (int(kind.SYNCHRONIZATION),),
        # device memory allocated and released (CUpti_ActivityMemory4)
        "memory": (int(kind.MEMORY2),),
    }
    dtypes = {"api": cupti.activity_api_dtype}
    dtypes.update({family: _latest_dtype(cupti, stem) for family, stem in DTYPE_STEMS.items()})
    sync = cupti.ActivitySynchronizationType
    kept = re.compile(API_NAMES, re.IGNORECASE)
    memory_calls = re.compile(MEMORY_API_NAMES)
    chatty = re.compile(CHATTY_API_NAMES)
    selected: set[int] = set()
    turned_off: list[int] = []
    for api_kind, enum in (
        (int(kind.RUNTIME), cupti.runtime_api_trace_cbid),
        (int(kind.DRIVER), cupti.driver_api_trace_cbid),
    ):
        for member in enum:
            key = api_kind << 32 | int(member)
            if kept.search(member.name) or memory_calls.search(member.name):
                selected.add(key)
            elif chatty.match(member.name):
                turned_off.append(key)
    return Tables(
        libcupti=libcupti,
        kinds=kinds,
        dtypes=dtypes,
        copy_names=_enum_names(cupti.ActivityMemcpyKind, {"PTOP": "ptop"}),
        memory_names=_enum_names(cupti.ActivityMemoryKind, {}),
        memory_operations=_enum_names(cupti.ActivityMemoryOperationType, {}),
        sync_names={
            int(sync.CONTEXT_SYNCHRONIZE): "context",
            int(sync.STREAM_SYNCHRONIZE): "stream",
            int(sync.EVENT_SYNCHRONIZE): "event",
            int(sync.STREAM_WAIT_EVENT): "wait",
        },
        zeroed_attribute=int(cupti.ActivityAttribute.ATTR_ZEROED_OUT_BUFFER),
        thread_id_system=int(cupti.ActivityThreadIdType.SYSTEM),
        runtime_kind=int(kind.RUNTIME),
        selected=selected,
        turned_off=turned_off,
    )


def _latest_dtype(module: Any, stem: str) -> Any:
    """cupti-python's dtype of the newest version of a record struct, e.g. activity_kernel10."""
    pattern = re.compile(rf"^activity_{stem}(\d*)_dtype$")
    found = [(int(m.group(1) or 0), name) for name in dir(module) if (m := pattern.match(name))]
    if not found:
        raise TablesUnavailable(f"cupti-python has no activity_{stem}*_dtype")
    return getattr(module, max(found)[1])


def _enum_names(enum: Any, overrides: dict[str, str]) -> dict[int, str]:
    return {int(member): overrides.get(member.name, member.name.lower()) for member in enum}


# -- struct layouts as JSON ------------------------------------------------------------------
def dtype_spec(dtype: Any) -> dict[str, Any]:
    """A structured dtype as plain data: each field's name, format and offset (unions and
    nested structs included: `numpy.lib.format` cannot write overlapping fields)."""
    fields = []
    for name in dtype.names:
        sub, offset = dtype.fields[name][:2]
        fields.append([name, _format_spec(sub), offset])
    return {"fields": fields, "itemsize": dtype.itemsize}


def _format_spec(sub: Any) -> Any:
    if sub.names:
        return dtype_spec(sub)
    if sub.subdtype is not None:
        base, shape = sub.subdtype
        return {"base": _format_spec(base), "shape": list(shape)}
    return sub.str


def build_dtype(spec: dict[str, Any]) -> Any:
    """The dtype `dtype_spec` described."""
    import numpy as np

    names, formats, offsets = [], [], []
    for name, fmt, offset in spec["fields"]:
        names.append(_text(name))
        formats.append(_build_format(fmt))
        offsets.append(_int(offset))
    return np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": _int(spec["itemsize"])}
    )


def _build_format(fmt: Any) -> Any:
    import numpy as np

    if isinstance(fmt, str):
        return np.dtype(fmt)
    if "fields" in fmt:
        return build_dtype(fmt)
    return np.dtype((_build_format(fmt["base"]), tuple(_ints(fmt["shape"]))))


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not text")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{value!r} is not an integer")
    return value


def _ints(values: Any) -> list[int]:
    return [_int(v) for v in values]


def _keyed(names: dict[int, str]) -> dict[str, str]:
    return {str(k): v for k, v in names.items()}


def _unkeyed(names: Any) -> dict[int, str]:
    return {int(_text(k)): _text(v) for k, v in names.items()}


# -- the user's cache --------------------------------------------------------------------------
def cache_dir() -> Path:
    """$XDG_CACHE_HOME/gpulens (~/.cache/gpulens where that is unset or not absolute).
    OSError where there is neither (no home directory: a service account's process)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(base):
        return Path(base) / "gpulens"
    try:
        return Path.home() / ".cache" / "gpulens"
    except RuntimeError as error:  # no HOME and no passwd entry
        raise OSError(f"no cache folder ({error})") from error


def build_key() -> str | None:
    """Names the cupti-python build installed (its extension module's path, size, mtime):
    the tables learnt from another build are not used. None without cupti-python."""
    spec = importlib.util.find_spec("cupti")
    if spec is None or not spec.submodule_search_locations:
        return None
    stamps = []
    for folder in spec.submodule_search_locations:
        for entry in sorted(os.listdir(folder)):
            if entry.startswith("cupti.") and entry.endswith(".so"):
                info = os.stat(os.path.join(folder, entry))
                stamps.append(f"{os.path.join(folder, entry)}:{info.st_size}:{info.st_mtime_ns}")
    if not stamps:
        return None
    text = "\n".join([str(FORMAT), *stamps]).encode()
    return f"{zlib.crc32(text):08x}{zlib.adler32(text):08x}"


def cache_path(key: str) -> Path:
    return cache_dir() / f"cupti-tables-{key}.json"


def _private(info: os.stat_result) -> bool:
    """Owned by this user, writable by no one else."""
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_cached(key: str) -> Tables | None:
    """The tables kept for the build `key`, or None (none kept, someone else's, damaged, or
    its libcupti gone)."""
    try:
        path = cache_path(key)
        if not _private(os.stat(path.parent)):
            return None
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            if not _private(os.fstat(handle.fileno())):
                return None
            data = json.loads(handle.read(4 * 1024 * 1024))
        tables = Tables.from_json(data)
    except (OSError, ValueError):
        return None
    return tables if os.path.isfile(tables.libcupti) else None


def write_cached(key: str, tables: Tables) -> bool:
    """Keeps the tables for the build `key`; False where they could not be kept (a
    read-only home, a layout the JSON cannot hold exactly, ...). Never raises."""
    import contextlib
    import tempfile

    try:
        data = tables.to_json()
        if Tables.from_json(json.loads(json.dumps(data))).dtypes != tables.dtypes:
            return False  # a layout the spec does not round-trip: learn it each time
        folder = cache_dir()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(os.stat(folder)):
            return False
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".cupti-tables-")
        try:
            with os.fdopen(descriptor, "w") as handle:
                json.dump(data, handle)
            os.replace(temporary, cache_path(key))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except Exception:
        return False
    return True
