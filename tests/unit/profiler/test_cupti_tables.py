"""CUPTI's tables kept in the user's cache: read back exactly, and never from a file someone
else could have written. The tables are cupti-python 13.0.1's own, recorded by
`cupti_tables.from_cupti` (tests/fixtures/cupti/); the GPU tests learn them afresh."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gpulens.profiler.capture import cupti_tables
from gpulens.profiler.capture.cupti_tables import Tables

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "cupti"


def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (RECORDED / "tables-cupti-python-13.0.1.json").read_text(encoding="utf-8")
    )
    return data


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache home; the tables' libcupti a file that exists."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path


def tables_in(folder: Path) -> Tables:
    library = folder / "libcupti.so.13"
    library.write_bytes(b"")
    return Tables.from_json({**recorded(), "libcupti": str(library)})


def test_the_recorded_layouts_are_rebuilt_field_for_field() -> None:
    """The kernel record's unions and nested structs included (numpy's own .npy header
    cannot hold overlapping fields): every name, offset, format and size as written."""
    data = recorded()
    tables = Tables.from_json(data)
    assert tables.to_json() == data
    kernel = tables.dtypes["kernels"]
    assert any(kernel.fields[name][0].names for name in kernel.names)  # a nested struct
    with pytest.raises(ValueError, match="overlapping"):
        kernel.descr  # noqa: B018 (numpy's own description cannot hold the record's union)
    # each kind steps by its struct's size, and the families know their kinds
    assert tables.sizes[tables.kinds["kernels"][0]] == kernel.itemsize
    assert tables.family_of[tables.runtime_kind] == "api"


def test_tables_kept_are_the_tables_read(cache: Path) -> None:
    tables = tables_in(cache)
    assert cupti_tables.write_cached("k1", tables)
    path = cupti_tables.cache_path("k1")
    assert path.parent == cache / "cache" / "gpulens"
    assert os.stat(path.parent).st_mode & 0o777 == 0o700
    assert os.stat(path).st_mode & 0o777 == 0o600
    back = cupti_tables.read_cached("k1")
    assert back is not None
    assert back.to_json() == tables.to_json()
    assert back.dtypes == tables.dtypes
    assert cupti_tables.read_cached("another-build") is None


@pytest.mark.parametrize(
    "spoil",
    ["group-writable file", "world-writable folder", "a link", "damaged", "other format", "gone"],
)
def test_tables_someone_else_could_have_written_or_that_do_not_hold_are_not_read(
    cache: Path, spoil: str
) -> None:
    """A shared machine has other users: the file and its folder must be this user's and
    writable by no one else; a link is not followed; a damaged or stale file is no file."""
    tables = tables_in(cache)
    assert cupti_tables.write_cached("k1", tables)
    path = cupti_tables.cache_path("k1")
    assert cupti_tables.read_cached("k1") is not None
    if spoil == "group-writable file":
        path.chmod(0o620)
    elif spoil == "world-writable folder":
        path.parent.chmod(0o702)
    elif spoil == "a link":
        elsewhere = cache / "planted.json"
        path.rename(elsewhere)
        path.symlink_to(elsewhere)
    elif spoil == "damaged":
        path.write_text(path.read_text()[:-40])
    elif spoil == "other format":
        path.write_text(json.dumps({**json.loads(path.read_text()), "format": 0}))
    elif spoil == "gone":
        Path(tables.libcupti).unlink()
    assert cupti_tables.read_cached("k1") is None


def test_a_cache_that_cannot_be_written_leaves_the_tables_unkept(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tables = tables_in(cache)
    blocked = cache / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert not cupti_tables.write_cached("k1", tables)
    assert cupti_tables.read_cached("k1") is None


def test_the_key_names_the_cupti_python_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tables learnt from one build of cupti-python are not read for another."""
    package = tmp_path / "site" / "cupti"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    module = package / "cupti.cpython-312-x86_64-linux-gnu.so"
    module.write_bytes(b"one build")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(__import__("sys").modules, "cupti", raising=False)
    first = cupti_tables.build_key()
    assert first is not None and first == cupti_tables.build_key()
    module.write_bytes(b"another build")
    assert cupti_tables.build_key() != first
    module.unlink()
    assert cupti_tables.build_key() is None


def test_without_a_home_nothing_is_kept_and_nothing_fails(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process with neither $XDG_CACHE_HOME nor a home directory (a service account
    without a passwd entry: `Path.home` raises) learns the tables each time; reading and
    keeping them say so quietly."""
    tables = tables_in(cache)

    def no_home(cls: type[Path]) -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setattr(Path, "home", classmethod(no_home))
    assert cupti_tables.read_cached("k1") is None
    assert not cupti_tables.write_cached("k1", tables)
