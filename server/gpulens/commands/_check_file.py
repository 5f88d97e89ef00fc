"""One file through `gpulens check`: read it, analyse it, apply fixes, write it back.

Runs in worker processes as well as in the main one, so its inputs and outputs are plain
picklable data (`Job` in, `FileResult` out).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpulens.analysis import Analysis, Config, Edit, Finding, analyze, analyze_cells
from gpulens.analysis.edits import apply_edits, first_safe_fix
from gpulens.analysis.encoding import SourceDecodeError, decode_source
from gpulens.analysis.source import SyntaxProblem

# Fixes can uncover or shift other findings; a few rounds reach a fixed point, and the cap
# stops two rules that undo each other from looping forever.
MAX_FIX_ROUNDS = 10


@dataclass(frozen=True, slots=True)
class Job:
    path: str  # shown to the user
    absolute: str | None  # None: the text comes from stdin
    config: Config
    fix: bool
    notebook: bool
    text: str | None = None  # stdin's text


@dataclass(frozen=True, slots=True)
class Located:
    finding: Finding
    cell: int | None = None  # 1-based index in the notebook's list of cells


@dataclass(slots=True)
class FileResult:
    path: str
    findings: list[Located] = field(default_factory=list)
    syntax_problems: list[tuple[int | None, SyntaxProblem]] = field(default_factory=list)
    error: str | None = None  # the file could not be read or written: exit 2
    notes: list[str] = field(default_factory=list)
    fixed: int = 0
    fixed_text: str | None = None  # the fixed stdin text, printed instead of written


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
    analysis = analyze(decoded.text, job.config)
    if job.fix:
        text, fixed, count, note = _fix_rounds(
            decoded.text, analysis, lambda t: analyze(t, job.config), decoded.newline
        )
        if note:
            result.notes.append(note)
        if job.absolute is None:
            result.fixed_text = _restore_newlines(text, decoded.newline)
            analysis, result.fixed = fixed, count
        elif text != decoded.text:
            try:
                _write(Path(job.absolute), _encode(job.path, text, decoded), job.path, decoded.raw)
            except _FileError as error:
                result.error = str(error)  # the file keeps its text, and so its findings
            else:
                analysis, result.fixed = fixed, count
    result.findings = [Located(f) for f in analysis.findings]
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
    newline = _newline_of(text)
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


def _newline_of(text: str) -> str:
    index = text.find("\n")
    cr = text.find("\r")
    if cr == -1 and index == -1:
        return "\n"
    if cr == -1 or (index != -1 and index < cr):
        return "\n"
    return "\r\n" if text.startswith("\r\n", cr) else "\r"


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


# ---- fixing, shared by files and notebooks --------------------------------------------------


def _fix_rounds(
    text: str, analysis: Analysis, reanalyze: Any, newline: str
) -> tuple[str, Analysis, int, str | None]:
    """Apply the first safe fix of each finding until none is left or nothing changes."""
    limit = None if analysis.syntax_problem is None else analysis.syntax_problem.line
    fixed = 0
    for _ in range(MAX_FIX_ROUNDS):
        edits, count = select_fixes(analysis.findings, limit, newline)
        if not edits:
            break
        candidate = apply_edits(text, edits)
        if candidate == text:
            break
        after = reanalyze(candidate)
        if limit is None and after.syntax_problem is not None:
            return text, analysis, fixed, _BROKE_SYNTAX
        text, analysis, fixed = candidate, after, fixed + count
    return text, analysis, fixed, None


_BROKE_SYNTAX = (
    "a fix would have made the file invalid Python, so it was not applied; "
    "please report this with the file"
)


def select_fixes(
    findings: Iterable[Finding], limit: int | None, newline: str = "\n"
) -> tuple[list[Edit], int]:
    """The edits of the first safe fix of each finding, whole fixes only: a fix whose edits
    overlap one already taken waits for the next round rather than being half applied.

    With a syntax error at line ``limit`` (0-based), only fixes above it are taken: the
    analysis did not see the text from there on, and a fix must not lose it.
    """
    taken: list[Edit] = []
    count = 0
    for finding in findings:
        fix = first_safe_fix(finding)
        if fix is None or not fix.edits:
            continue
        if limit is not None and any(e.span.end_line >= limit for e in fix.edits):
            continue
        if any(_overlap(edit, other) for edit in fix.edits for other in taken):
            continue
        taken.extend(_with_newline(edit, newline) for edit in fix.edits)
        count += 1
    return taken, count


def _overlap(a: Edit, b: Edit) -> bool:
    if a == b:
        return False  # the same edit from two findings is applied once
    return a.span.start < b.span.end and b.span.start < a.span.end


def _with_newline(edit: Edit, newline: str) -> Edit:
    if newline != "\r\n" or "\n" not in edit.new_text:
        return edit
    return Edit(edit.span, edit.new_text.replace("\r\n", "\n").replace("\n", "\r\n"))


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
    if job.fix:
        fixed_sources, fixed, count, note = _fix_cells(sources, analyses, job.config)
        if note:
            result.notes.append(note)
        if fixed_sources != sources:
            for index, source in zip(code, fixed_sources, strict=True):
                _set_cell_source(cells[index], source)
        if job.absolute is None:
            result.fixed_text = _dump_notebook(notebook, raw)
            analyses, result.fixed = fixed, count
        elif fixed_sources != sources:
            try:
                _write(Path(job.absolute), _dump_notebook(notebook, raw).encode(), job.path, data)
            except _FileError as error:
                result.error = str(error)  # the notebook keeps its cells, and their findings
            else:
                analyses, result.fixed = fixed, count
    for index, analysis in zip(code, analyses, strict=True):
        result.findings.extend(Located(f, index + 1) for f in analysis.findings)
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


def _fix_cells(
    sources: list[str], analyses: list[Analysis], config: Config
) -> tuple[list[str], list[Analysis], int, str | None]:
    problem_cell = next((i for i, a in enumerate(analyses) if a.syntax_problem), None)
    fixed = 0
    for _ in range(MAX_FIX_ROUNDS):
        candidate = list(sources)
        count = 0
        for index, analysis in enumerate(analyses):
            if problem_cell is not None and index > problem_cell:
                break  # after a syntax error the analysis saw no reliable text
            limit = analysis.syntax_problem.line if analysis.syntax_problem else None
            edits, taken = select_fixes(analysis.findings, limit)
            if edits:
                candidate[index] = apply_edits(sources[index], edits)
                count += taken
        if candidate == sources:
            break
        after = analyze_cells(candidate, config)
        if problem_cell is None and any(a.syntax_problem for a in after):
            return sources, analyses, fixed, _BROKE_SYNTAX
        sources, analyses, fixed = candidate, after, fixed + count
    return sources, analyses, fixed, None
