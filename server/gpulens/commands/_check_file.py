"""One file through `gpulens check`: read it, analyse it, apply fixes, write it back.

Runs in worker processes as well as in the main one, so its inputs and outputs are plain
picklable data (`Job` in, `FileResult` out).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulens.analysis import Analysis, Config, Finding, analyze, analyze_cells
from gpulens.analysis.edits import fix_until_stable, line_break_of
from gpulens.analysis.encoding import SourceDecodeError, decode_source
from gpulens.analysis.project import ProjectCall, ProjectReturn, ProjectView
from gpulens.analysis.source import SyntaxProblem


@dataclass(frozen=True, slots=True)
class Job:
    path: str  # shown to the user
    absolute: str | None  # None: the text comes from stdin
    config: Config
    fix: bool
    notebook: bool
    text: str | None = None  # stdin's text
    # saved profiles of this file (`gpulens profile -o`, a `%%gpulens` output): their figures
    # are merged into the findings (`profiler.measured`)
    profiles: tuple[dict[str, Any], ...] = ()
    # the file's module and what the project's other modules pass its functions
    project: ProjectView | None = None


@dataclass(frozen=True, slots=True)
class Located:
    finding: Finding
    cell: int | None = None  # 1-based index in the notebook's list of cells
    # "analysis", or "profile": a saved profile found it where the analysis was silent
    origin: str = "analysis"


@dataclass(slots=True)
class FileResult:
    path: str
    findings: list[Located] = field(default_factory=list)
    syntax_problems: list[tuple[int | None, SyntaxProblem]] = field(default_factory=list)
    error: str | None = None  # the file could not be read or written: exit 2
    notes: list[str] = field(default_factory=list)
    fixed: int = 0
    fixed_text: str | None = None  # the fixed stdin text, printed instead of written
    calls: tuple[ProjectCall, ...] = ()  # into the project's other modules (`Job.project`)
    returns: tuple[ProjectReturn, ...] = ()  # what its functions return, read by the others


def check_file(job: Job) -> FileResult:
    """Never raises for a file's content; I/O and decoding problems come back as ``error``."""
    result = FileResult(job.path)
    try:
        if job.notebook:
            _check_notebook(job, result)
        else:
            _check_python(job, result)
    except _FileError as error:
        result.error = str(error)
    return result


def check_files(jobs: Sequence[Job]) -> list[FileResult]:
    """Worker entry point: one call per chunk keeps the pickling to one round trip."""
    return [check_file(job) for job in jobs]


class _FileError(Exception):
    """What went wrong with one file, as the sentence the user reads."""


# ---- Python files ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Decoded:
    text: str  # newlines as in the file, except a file of lone "\r" is read with "\n"
    encoding: str
    newline: str
    raw: bytes  # the file's bytes as read (stdin's text encoded)


def _check_python(job: Job, result: FileResult) -> None:
    decoded = _decode(job)
    analysis = analyze(decoded.text, job.config, project=job.project)
    result.calls = analysis.calls
    result.returns = analysis.returns
    shown = decoded.text  # the text the findings are of
    if job.fix:
        outcome = fix_until_stable(
            [decoded.text],
            [analysis],
            lambda texts: [analyze(texts[0], job.config, project=job.project)],
        )
        (text,), (fixed,), count = outcome.texts, outcome.analyses, outcome.fixed
        if outcome.rejected:
            result.notes.append(_BROKE_SYNTAX)
        if job.absolute is None:
            result.fixed_text = _restore_newlines(text, decoded.newline)
            analysis, result.fixed, shown = fixed, count, text
        elif text != decoded.text:
            try:
                _write(Path(job.absolute), _encode(job.path, text, decoded), job.path, decoded.raw)
            except _FileError as error:
                result.error = str(error)  # the file keeps its text, and so its findings
            else:
                analysis, result.fixed, shown = fixed, count, text
    result.findings = _located(analysis, shown, job.profiles, job.config)
    if analysis.syntax_problem is not None:
        result.syntax_problems.append((None, analysis.syntax_problem))


def _decode(job: Job) -> _Decoded:
    if job.text is not None:
        text, encoding, raw = job.text, "utf-8", job.text.encode("utf-8", "surrogatepass")
    else:
        raw = _read(job)
        try:
            decoded = decode_source(raw, job.path)
        except SourceDecodeError as error:
            raise _FileError(str(error)) from None
        text, encoding = decoded.text, decoded.encoding
    newline = line_break_of(text)
    if newline == "\r":
        text = text.replace("\r", "\n")  # the analysis and the edits count lines by "\n"
    return _Decoded(text, encoding, newline, raw)


def _read(job: Job) -> bytes:
    try:
        return Path(job.absolute or job.path).read_bytes()
    except OSError as error:
        raise _FileError(
            f"{job.path}: cannot read it ({error.strerror or error}); check that it exists "
            "and that you may read it"
        ) from None


def _restore_newlines(text: str, newline: str) -> str:
    return text.replace("\n", "\r") if newline == "\r" else text


def _encode(path: str, text: str, decoded: _Decoded) -> bytes:
    try:
        return _restore_newlines(text, decoded.newline).encode(decoded.encoding)
    except UnicodeEncodeError:
        raise _FileError(
            f"{path}: the fixed text cannot be written as {decoded.encoding}, so the file was "
            "left unchanged; save it as UTF-8 and run --fix again"
        ) from None


def _write(path: Path, data: bytes, shown: str, original: bytes) -> None:
    """Write the fixed text into the file itself (the same inode), so that it keeps its mode,
    owner and hard links, and a symbolic link to it stays a link (``path`` is the target).

    A file with no write permission is read-only by choice and is left alone. The new bytes
    go in with one write and are flushed to disk; if the write fails part way (a full disk),
    ``original`` is put back, so the file holds its old text or its new one. Writing a
    temporary copy and renaming it over the file would be atomic, but it makes a new file:
    the other hard links keep the old text, a link becomes a plain file, and the owner
    becomes whoever ran --fix.
    """
    try:
        mode = os.stat(path).st_mode
        if not mode & 0o222:
            raise _FileError(
                f"{shown}: the file is read-only, so its fixes were not written; make it "
                "writable (chmod u+w) to fix it, or leave out --fix"
            )
        handle = os.open(path, os.O_WRONLY)
    except OSError as error:
        raise _FileError(
            f"{shown}: cannot write the fixes ({error.strerror or error}); check that you may "
            "write to the file"
        ) from None
    try:
        _replace_content(handle, data)
    except OSError as error:
        with contextlib.suppress(OSError):
            _replace_content(handle, original)
        raise _FileError(
            f"{shown}: writing the fixes failed ({error.strerror or error}), so the file was "
            "left as it was; free some disk space or check the disk, then run --fix again"
        ) from None
    finally:
        os.close(handle)


def _replace_content(handle: int, data: bytes) -> None:
    os.lseek(handle, 0, os.SEEK_SET)
    view = memoryview(data)
    while view:  # one write for a file of any usual size; a loop for what the kernel splits
        view = view[os.write(handle, view) :]
    os.ftruncate(handle, len(data))  # the fixed text may be shorter than the old one
    os.fsync(handle)


def _located(
    analysis: Analysis,
    text: str,
    profiles: Sequence[dict[str, Any]],
    config: Config,
    cell: int | None = None,
) -> list[Located]:
    """The findings of `text`, with the figures of its saved profiles merged in."""
    if not profiles:
        return [Located(f, cell) for f in analysis.findings]
    from gpulens.analysis.source import split_lines
    from gpulens.profiler.measured import merge_measured, place_profile

    lines = split_lines(text)
    measured = {}
    for profile in profiles:  # a later profile of a line replaces an earlier one
        measured.update(place_profile(profile, lines))
    merged = merge_measured(analysis.findings, measured, text, config)
    return [Located(m.finding, cell, m.origin) for m in merged]


# ---- fixing, shared by files and notebooks --------------------------------------------------


_BROKE_SYNTAX = (
    "a fix would have made the file invalid Python, so it was not applied; "
    "please report this with the file"
)


# ---- notebooks ------------------------------------------------------------------------------


def _check_notebook(job: Job, result: FileResult) -> None:
    if job.text is not None:
        raw, data = job.text, job.text.encode("utf-8", "surrogatepass")
    else:
        raw, data = _decode_notebook(job)
    notebook = _load_notebook(job.path, raw)
    cells: list[dict[str, Any]] = notebook["cells"]
    code = [i for i, cell in enumerate(cells) if cell.get("cell_type") == "code"]
    sources = [_cell_source(job.path, i, cells[i]) for i in code]
    analyses = analyze_cells(sources, job.config)
    shown = sources  # the texts the findings are of
    if job.fix:
        outcome = fix_until_stable(
            sources, analyses, lambda texts: analyze_cells(texts, job.config), cells=True
        )
        fixed_sources, fixed, count = list(outcome.texts), list(outcome.analyses), outcome.fixed
        if outcome.rejected:
            result.notes.append(_BROKE_SYNTAX)
        if fixed_sources != sources:
            for index, source in zip(code, fixed_sources, strict=True):
                _set_cell_source(cells[index], source)
        if job.absolute is None:
            result.fixed_text = _dump_notebook(notebook, raw)
            analyses, result.fixed, shown = fixed, count, fixed_sources
        elif fixed_sources != sources:
            try:
                _write(Path(job.absolute), _dump_notebook(notebook, raw).encode(), job.path, data)
            except _FileError as error:
                result.error = str(error)  # the notebook keeps its cells, and their findings
            else:
                analyses, result.fixed, shown = fixed, count, fixed_sources
    for index, analysis, text in zip(code, analyses, shown, strict=True):
        # a `%%gpulens` output names its cell by its place in the notebook, from 1
        profiles = [p for p in job.profiles if (p.get("source") or {}).get("cell") == index + 1]
        result.findings.extend(_located(analysis, text, profiles, job.config, index + 1))
        if analysis.syntax_problem is not None:
            result.syntax_problems.append((index + 1, analysis.syntax_problem))


def _decode_notebook(job: Job) -> tuple[str, bytes]:
    data = _read(job)
    try:
        return data.decode("utf-8-sig"), data  # nbformat files are UTF-8 JSON
    except UnicodeDecodeError as error:
        raise _FileError(
            f"{job.path}: not valid UTF-8 (byte 0x{data[error.start]:02x} at offset "
            f"{error.start}); notebooks are UTF-8 JSON, so re-save it from Jupyter"
        ) from None


def _load_notebook(path: str, raw: str) -> dict[str, Any]:
    try:
        notebook = json.loads(raw)
    except json.JSONDecodeError as error:
        raise _FileError(
            f"{path}: not a notebook (invalid JSON at line {error.lineno}, column {error.colno}); "
            "re-save it from Jupyter or exclude it"
        ) from None
    except (RecursionError, ValueError) as error:  # a deep nest, an integer of 5,000 digits
        why = "JSON nested too deeply" if isinstance(error, RecursionError) else str(error)
        raise _FileError(
            f"{path}: not a notebook ({why}); re-save it from Jupyter or exclude it"
        ) from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise _FileError(
            f"{path}: not an nbformat 4 notebook (no list of cells); re-save it from Jupyter "
            "or exclude it"
        )
    for index, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict):
            raise _FileError(
                f"{path}: cell {index + 1} is not a notebook cell (a JSON object); re-save the "
                "notebook from Jupyter or exclude it"
            )
    return notebook


def _cell_source(path: str, index: int, cell: Any) -> str:
    source = cell.get("source", "") if isinstance(cell, dict) else None
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise _FileError(
        f"{path}: cell {index + 1} has no text source; re-save the notebook from Jupyter"
    )


def _set_cell_source(cell: dict[str, Any], source: str) -> None:
    # keep the form the file had: Jupyter writes a list of lines, other tools a string
    if isinstance(cell.get("source"), list):
        cell["source"] = source.splitlines(keepends=True)
    else:
        cell["source"] = source


def _dump_notebook(notebook: dict[str, Any], raw: str) -> str:
    """JSON as the file was written: Jupyter's indent of 1 unless the file used another,
    keys in their order, non-ASCII kept as is unless the file escaped it."""
    indent: int | None = None  # a notebook written on one line stays on one line
    if "\n" in raw.strip():
        second = raw.lstrip().split("\n", 2)[1]
        indent = len(second) - len(second.lstrip(" ")) or 1
    ascii_only = raw.isascii() and "\\u" in raw
    text = json.dumps(notebook, indent=indent, ensure_ascii=ascii_only)
    return text + "\n" if raw.endswith("\n") else text
