"""Cell profiling in the editor: "Profile cell" code lenses, the `gpulens.profileCell` and
`gpulens.clearProfile` commands, inlay hints after the profiled lines and their hover.

Code runs only when the client executes `gpulens.profileCell {uri, line}` (line 0-based):
never on open, save, code lens or hover, and never where the client said the folder is not
trusted (`gpulens.lsp.trust`: the command then answers with the reason). The cell holding that
line runs in a subprocess of `gpulens.profile.python` (default: the server's interpreter) under
`gpulens.profile.timeoutSeconds`, in the file's folder, as editors run a cell; the command
answers with the `gpulens.profile/2.1` payload, so a client may draw it itself, and the server
keeps its lines to draw them as inlay hints. The subprocess, its stopping and killing are
`gpulens.profiler.runner.BackgroundProfile`'s: a server that exits (or is killed) mid-profile
is not held up by it, and the subprocess ends with the server.

A cell whose code (setup included) calls `init_process_group` runs as the ranks of one
torchrun job (`gpulens.profile.ranks` of them, else one per GPU the server sees), each
profiled and merged, as `gpulens profile --nproc-per-node N` does.

Lenses: "Profile cell" above each `# %%` cell with code; none in a file without markers,
because every module of a project would carry one and most are not scripts. The command works
on any line of such a file all the same and then profiles the whole file (the code before the
first marker is the whole file), so a client may offer "Profile file" with it.

A profile runs one at a time per server (a second waits): two profiles at once would each
count the other's GPU work as their own. It reports `$/progress` when the client supports
`window/workDoneProgress`; its token is cancellable, and cancelling it interrupts the cell
(SIGINT, so the lines that ran are still drawn). `$/cancelRequest` on the executeCommand
request kills the subprocess and its process group at once.

Results are kept per open document by line (`Profiles`, one per server): an edit drops the
lines it touches and moves the lines after it, closing the document drops them all. The
lines a GPU backend measured are also merged into the document's diagnostics
(`gpulens.profiler.measured`): each change of them re-publishes the diagnostics.

`gpulens.showProfile {uri, payload}` draws a saved profile (`gpulens profile -o`, a
`%%gpulens` output) on an open document as if it had just been made: its lines are matched
to the document by their text, so a profile of an older version still lands on the lines that
did not change. Nothing runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path
from pygls.workspace.position_codec import PositionCodec

from gpulens.analysis.encoding import SourceDecodeError, decode_source
from gpulens.analysis.source import common_ends, source_lines
from gpulens.lsp.convert import LineIndex
from gpulens.lsp.documents import notebook_of, open_document
from gpulens.lsp.settings import plain
from gpulens.lsp.text_documents import LspTextDocument
from gpulens.lsp.trust import UNTRUSTED_LENS, UNTRUSTED_PROFILE, may_profile
from gpulens.profiler.cells import Cell, cell_at_line, sets_up_process_group, split_cells

# lines compared at a time for what two versions of a text share (`common_ends`)
LINES_STEP = 1024

if TYPE_CHECKING:
    from concurrent.futures import Future

    from gpulens.lsp.server import GpulensServer
    from gpulens.profiler.measure_fix import BackgroundMeasurement
    from gpulens.profiler.measured import MeasuredLine
    from gpulens.profiler.runner import BackgroundProfile

logger = logging.getLogger(__name__)

PROFILE_CELL = "gpulens.profileCell"
CLEAR_PROFILE = "gpulens.clearProfile"
SHOW_PROFILE = "gpulens.showProfile"
# a killed run that has not returned by then is left behind (its subprocess is gone)
STOP_GIVE_UP_S = 30.0
PROGRESS_EVERY_S = 1.0

T = TypeVar("T")


# --- pure ---------------------------------------------------------------------------------------


def carry_over(old: Sequence[str], new: Sequence[str], results: Mapping[int, T]) -> dict[int, T]:
    """Results keyed by 0-based line of the text `old`, moved onto the text `new` (both as
    lists of lines): lines before the first changed one keep their number, lines after the
    last changed one move with the edit, and changed or removed lines lose their result."""
    prefix, suffix = common_ends(old, new, LINES_STEP)
    shift = len(new) - len(old)
    moved: dict[int, T] = {}
    for line, result in results.items():
        if line < prefix:
            moved[line] = result
        elif line >= len(old) - suffix:
            moved[line + shift] = result
    return moved


def lines_of(text: str) -> list[str]:
    """The lines of `text` as LSP counts them, without their line breaks."""
    return [line.rstrip("\r\n") for line in LineIndex(text, _CODEC).lines]


def lines_after(old: str, new: str, old_lines: list[str]) -> list[str]:
    """`lines_of(new)`, from `old_lines` (`lines_of(old)`) where the texts agree: only the
    lines an edit touched are split again (the whole text took ~50 ms at 2 MB, twice
    on each keystroke)."""
    if "\r" in old or "\r" in new:
        return lines_of(new)  # then a line may end at a carriage return: split it all
    prefix, suffix = common_ends(old, new, LINES_STEP)
    # without carriage returns the lines are the text split at "\n"; those whose break lies
    # in the shared start, and those after a break in the shared end, are the old ones
    before = old.count("\n", 0, prefix)
    after = old.count("\n", len(old) - suffix)
    start = new.rfind("\n", 0, prefix) + 1
    end = new.find("\n", len(new) - suffix) if after else len(new)
    middle = new[start:end].split("\n")
    return [*old_lines[:before], *middle, *old_lines[len(old_lines) - after :]]


def has_code(cell: Cell) -> bool:
    """Whether a cell holds something to run (not only its marker, comments, blank lines)."""
    if cell.markdown:
        return False
    lines = source_lines(cell.source)
    body = lines[1:] if cell.index else lines
    return any(line.strip() and not line.lstrip().startswith("#") for line in body)


def cell_label(cells: Sequence[Cell], line: int, name: str) -> str:
    """What a progress title calls the cell holding 0-based `line`: "cell 2 of train.py"."""
    cell = cell_at_line(list(cells), line + 1)
    if cell is None or len(cells) == 1:
        return name
    if cell.index == 0:
        return f"the code before the first cell of {name}"
    return f"cell {cell.index} of {name}"


# --- state --------------------------------------------------------------------------------------


@dataclass
class DocumentProfile:
    """The profiled lines of one open document: 0-based line -> the payload's line entry."""

    lines: dict[int, dict[str, Any]] = field(default_factory=dict)
    backend: str | None = None
    text: str = ""  # the document's text the lines are numbered in
    text_lines: list[str] | None = None  # `lines_of(text)`, once an edit has needed them
    # the lines a GPU backend measured, with their cell's wall time: merged into diagnostics
    measured: dict[int, MeasuredLine] = field(default_factory=dict)


class Profiles:
    """The profiles of one server: each open document's profiled lines, and the run going on."""

    def __init__(self) -> None:
        self.documents: dict[str, DocumentProfile] = {}
        # one profile at a time: concurrent ones would count each other's GPU work
        self.one_at_a_time = asyncio.Lock()
        self.running: BackgroundProfile | BackgroundMeasurement | None = None
        # changes with every change of any document's measured lines
        self.revision = 0

    def of(self, uri: str) -> DocumentProfile | None:
        return self.documents.get(_key(uri))

    def measured_of(self, uri: str) -> dict[int, MeasuredLine]:
        """The lines of `uri` a GPU backend measured, by 0-based line of its text now."""
        profile = self.of(uri)
        return {} if profile is None else profile.measured

    def edited(self, params: types.DidChangeTextDocumentParams, codec: PositionCodec) -> None:
        """Move the document's profiled lines with the edit (the lines it touches go)."""
        profile = self.of(params.text_document.uri)
        if profile is None:
            return
        copy = LspTextDocument(params.text_document.uri, profile.text, position_codec=codec)
        old = profile.text_lines
        if old is None:
            old = lines_of(copy.source)
        for change in params.content_changes:
            before = copy.source
            copy.apply_change(change)
            new = lines_after(before, copy.source, old)
            profile.lines = carry_over(old, new, profile.lines)
            if profile.measured:
                profile.measured = carry_over(old, new, profile.measured)
                self.revision += 1
            old = new
        profile.text, profile.text_lines = copy.source, old

    def closed(self, uri: str) -> None:
        if self.documents.pop(_key(uri), None) is not None:
            self.revision += 1

    def cleared(self, uri: str) -> DocumentProfile | None:
        self.revision += 1
        return self.documents.pop(_key(uri), None)

    def keep(
        self, uri: str, lines: dict[int, dict[str, Any]], payload: dict[str, Any], text: str
    ) -> None:
        """Store `lines` (0-based, on `text`) of `payload` for the document, replacing what
        an earlier profile of the same lines left."""
        profile = self.documents.setdefault(_key(uri), DocumentProfile())
        source = payload.get("source") or {}
        first = int(source.get("first_line") or 1) - 1
        last = int(source.get("last_line") or first + 1) - 1
        stale = set(range(first, last + 1)) | set(lines)
        profile.lines = {n: c for n, c in profile.lines.items() if n not in stale} | lines
        # a new dict, never one changed in place: a worker thread may be merging the old one
        measured = {n: m for n, m in profile.measured.items() if n not in stale}
        backend = str(payload.get("backend") or "")
        from gpulens.profiler.measured import GPU_BACKENDS, MeasuredLine

        if backend in GPU_BACKENDS:
            wall = float(payload.get("wall_s") or 0.0)
            measured |= {n: MeasuredLine(c, wall, backend) for n, c in lines.items()}
        profile.measured = measured
        profile.backend = payload.get("backend")
        profile.text, profile.text_lines = text, None
        self.revision += 1

    def kill(self) -> None:
        """End the running profile or measurement now (at shutdown: it would keep the
        process alive)."""
        if self.running is not None:
            self.running.kill()


# LineIndex needs a codec only to count columns; splitting lines does not depend on it
_CODEC = PositionCodec()


def _key(uri: str) -> str:
    return unquote(uri)


@dataclass(frozen=True)
class ProfileRequest:
    path: str
    text: str | None  # the editor's text; None reads the file
    line: int  # 0-based
    python: str | None
    timeout_s: float | None
    label: str  # "cell 2 of train.py", for the progress title
    ranks: int | None = None  # run as the ranks of one torchrun job
    memory: str = "reserved"  # the GPU memory views recorded (`gpulens.profile.memory`)

    def start(self) -> BackgroundProfile:
        # the profiler loads with the first profile, not with the server
        from gpulens.profiler.runner import BackgroundProfile

        return BackgroundProfile(
            self.path,
            text=self.text,
            line=self.line + 1,
            python=self.python,
            timeout=self.timeout_s,
            cwd=os.path.dirname(os.path.abspath(self.path)),
            nproc_per_node=self.ranks,
            memory=self.memory,
        )


# --- commands -----------------------------------------------------------------------------------


def profile_arguments(arguments: Sequence[object]) -> tuple[str, int]:
    """`[{"uri": ..., "line": 0-based}]` or `[uri, line]`, validated."""
    values = [plain(a) for a in arguments]
    if len(values) == 1 and isinstance(values[0], Mapping):
        uri, line = values[0].get("uri"), values[0].get("line")
    elif len(values) == 2:
        uri, line = values
    else:
        uri = line = None
    if not isinstance(uri, str) or isinstance(line, bool) or not isinstance(line, int) or line < 0:
        raise JsonRpcInvalidParams(
            f'{PROFILE_CELL} takes {{"uri": "file:///…/train.py", "line": 0-based line}}'
        )
    return uri, line


def show_arguments(arguments: Sequence[object]) -> tuple[str, dict[str, Any]]:
    """`[{"uri": ..., "payload": {gpulens.profile/2}}]`, validated."""
    values = [plain(a) for a in arguments]
    found = values[0] if len(values) == 1 and isinstance(values[0], Mapping) else {}
    uri, payload = found.get("uri"), found.get("payload")
    if not isinstance(uri, str) or not isinstance(payload, Mapping):
        raise JsonRpcInvalidParams(
            f'{SHOW_PROFILE} takes {{"uri": "file:///…/train.py", "payload": a saved profile}}'
        )
    if not str(payload.get("schema", "")).startswith("gpulens.profile/") or not isinstance(
        payload.get("lines"), list
    ):
        raise JsonRpcInvalidParams(
            f"{SHOW_PROFILE}: the payload is not a gpulens profile (no gpulens.profile schema "
            "and lines); save one with `gpulens profile FILE -o OUT --format json`"
        )
    return uri, dict(payload)


def show_saved_profile(ls: Any, uri: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Draw a saved profile on the open document `uri`: its lines matched to the text by
    content. Answers with the payload, worded as recorded; nothing runs."""
    document = open_document(ls, uri)
    if document is None:
        raise JsonRpcInvalidParams(f"{SHOW_PROFILE}: {uri} is not open; open it first")
    from gpulens.profiler.display import annotate
    from gpulens.profiler.measured import place_lines

    try:
        annotate(payload, recorded=True)
        placed = place_lines(payload, lines_of(document.source))
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise JsonRpcInvalidParams(
            f"{SHOW_PROFILE}: the payload's figures cannot be read ({error})"
        ) from None
    if placed:
        ls.profiles.keep(uri, placed, payload, document.source)
        _drawn_again(ls, uri)
    return payload


def uri_argument(arguments: Sequence[object]) -> str:
    values = [plain(a) for a in arguments]
    uri = values[0].get("uri") if len(values) == 1 and isinstance(values[0], Mapping) else None
    if uri is None and len(values) == 1:
        uri = values[0]
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams(f'{CLEAR_PROFILE} takes {{"uri": "file:///…/train.py"}}')
    return uri


def _file_path(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    try:
        return to_fs_path(uri)
    except Exception:
        return None


def _cancel_with_request(ls: Any, task: asyncio.Task[Any]) -> None:
    """Cancel `task` when the client cancels the executeCommand request it serves.

    pygls answers `$/cancelRequest` for a command but leaves a started handler running (it
    cancels only the request's own future), and it offers no public hook; so we watch that
    future, found by the request id pygls keeps in the handler's context.
    """
    msg_id = ls.protocol.msg_id
    request = getattr(ls.protocol, "_request_futures", {}).get(msg_id)
    if request is None:
        return
    loop = asyncio.get_running_loop()

    def on_done(future: Future[Any]) -> None:
        if future.cancelled():
            loop.call_soon_threadsafe(task.cancel)

    request.add_done_callback(on_done)


class Progress:
    """`$/progress` for one profile, when the client supports it; cancellable."""

    def __init__(self, ls: Any) -> None:
        self._ls = ls
        self.token: str | None = None
        self.cancelled = asyncio.Event()

    async def begin(self, title: str) -> None:
        window = self._ls.client_capabilities.window
        if window is None or not window.work_done_progress:
            return
        token = f"gpulens-profile-{uuid.uuid4()}"
        progress = self._ls.work_done_progress
        try:
            await asyncio.wait_for(progress.create_async(token), timeout=5)
        except Exception as error:  # no progress then; the profile still runs
            logger.info("window/workDoneProgress/create failed: %s", error)
            return
        self.token = token
        progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=True))
        loop = asyncio.get_running_loop()
        # pygls cancels this future on `window/workDoneProgress/cancel` for our token
        progress.tokens[token].add_done_callback(
            lambda _: loop.call_soon_threadsafe(self.cancelled.set)
        )

    def report(self, message: str) -> None:
        if self.token is not None:
            self._ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message)
            )

    def end(self, message: str | None) -> None:
        if self.token is not None:
            self._ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self._ls.work_done_progress.tokens.pop(self.token, None)
            self.token = None


async def run_profile_command(ls: Any, uri: str, line: int) -> dict[str, Any]:
    from gpulens.profiler.report import failed_payload

    task = asyncio.current_task()
    if task is not None:
        _cancel_with_request(ls, task)
    document = open_document(ls, uri)
    path = _file_path(uri)
    text = None if document is None else document.source
    name = (path or uri).replace("\\", "/").rsplit("/", 1)[-1]
    if not may_profile(ls.settings.workspace_trusted):
        payload = failed_payload(
            {"path": path or uri, "cell": None, "first_line": line + 1},
            UNTRUSTED_PROFILE,
            "RequestError",
        )
    elif notebook_of(ls, uri) is not None:
        payload = failed_payload(
            {"path": path or uri, "cell": None, "first_line": line + 1},
            "notebook cells are profiled in their kernel: run the cell with %%gpulens "
            "(after %load_ext gpulens)",
            "RequestError",
        )
    elif path is None:
        payload = failed_payload(
            {"path": uri, "cell": None, "first_line": line + 1},
            "it is not a file on disk; save it to a .py file and profile again",
            "RequestError",
        )
    else:
        settings = ls.settings.editor
        python = settings.profile_python and os.path.expanduser(settings.profile_python)
        label = cell_label(split_cells(text), line, name) if text is not None else name
        ranks = await _ranks_for(ls, path, text, line)
        if ranks is not None:
            label = f"{label} as {ranks} rank{'s' if ranks > 1 else ''}"
        request = ProfileRequest(
            path,
            text,
            line,
            python,
            settings.profile_timeout_seconds,
            label,
            ranks,
            settings.profile_memory,
        )
        payload = await _profile(ls, request)
        if text is not None:
            _keep(ls, uri, text, payload)
    shown = payload["display"]
    if shown["message"] is not None:
        kind = _MESSAGE_TYPES.get(shown["level"], types.MessageType.Error)
        ls.window_show_message(types.ShowMessageParams(type=kind, message=shown["message"]))
    return payload


_MESSAGE_TYPES = {
    "info": types.MessageType.Info,
    "warning": types.MessageType.Warning,
    "error": types.MessageType.Error,
}


async def _ranks_for(ls: Any, path: str, text: str | None, line: int) -> int | None:
    """How many ranks the cell runs as: None for a plain cell; for one whose setup calls
    `init_process_group`, `gpulens.profile.ranks`, else one per GPU the server sees (at
    least one), as `torchrun --nproc-per-node gpu` would start."""
    if text is None:
        try:
            text = decode_source(Path(path).read_bytes(), path).text
        except (OSError, SourceDecodeError):
            return None  # the runner says why it cannot read it
    if not sets_up_process_group(text, line + 1):
        return None
    chosen: int | None = ls.settings.editor.profile_ranks
    if chosen is not None:
        return chosen
    loop = asyncio.get_running_loop()
    status = await loop.run_in_executor(None, ls.status.source.snapshot)
    return max(1, sum(1 for gpu in status.get("gpus") or [] if gpu.get("visible")))


async def _profile(ls: Any, request: ProfileRequest) -> dict[str, Any]:
    from gpulens.profiler.display import annotate

    profiles: Profiles = ls.profiles
    progress = Progress(ls)
    await progress.begin(f"gpulens: profiling {request.label}")
    summary: str | None = "cancelled"
    try:
        if profiles.one_at_a_time.locked():
            progress.report("waiting for the profile already running")
        async with profiles.one_at_a_time:
            started = time.monotonic()
            run = profiles.running = request.start()
            worker = asyncio.wrap_future(run.future)
            try:
                cancelled = await _wait(worker, progress, started)
            except asyncio.CancelledError:
                # the request was cancelled: nobody wants the figures, stop at once
                run.kill()
                with contextlib.suppress(Exception):
                    await asyncio.wait({worker}, timeout=STOP_GIVE_UP_S)
                raise
            finally:
                profiles.running = None if profiles.running is run else profiles.running
            if cancelled:
                run.interrupt()  # the lines that ran are still drawn
            payload: dict[str, Any] = await worker
            if cancelled:
                error = payload.get("error") or {}
                payload["error"] = {
                    "type": "Cancelled",
                    "message": "the profile was cancelled",
                    "line": error.get("line"),
                }
                annotate(payload)
            summary = f"{time.monotonic() - started:.1f} s"
            return payload
    finally:
        progress.end(summary)


async def _wait(worker: asyncio.Future[Any], progress: Progress, started: float) -> bool:
    """Wait for the runner, reporting progress; True when the progress was cancelled."""
    cancel = asyncio.ensure_future(progress.cancelled.wait())
    try:
        while not worker.done():
            await asyncio.wait({worker, cancel}, timeout=PROGRESS_EVERY_S)
            if cancel.done():
                return True
            progress.report(f"{time.monotonic() - started:.0f} s")
        return False
    finally:
        cancel.cancel()


def _keep(ls: Any, uri: str, profiled: str, payload: dict[str, Any]) -> None:
    """Store the payload's lines for the document (replacing the profiled cell's old ones),
    moved onto the document's text if it changed while the cell ran."""
    document = open_document(ls, uri)
    if document is None or not payload.get("lines"):
        return
    fresh = {int(cost["line"]) - 1: cost for cost in payload["lines"]}
    fresh = carry_over(lines_of(profiled), lines_of(document.source), fresh)
    ls.profiles.keep(uri, fresh, payload, document.source)
    _drawn_again(ls, uri)


def _drawn_again(ls: Any, uri: str) -> None:
    """After the document's profiled lines changed: hints, lenses and diagnostics again."""
    refresh(ls)
    ls.diagnostics.republish(uri)


def refresh(ls: Any) -> None:
    """Ask the client to request inlay hints and code lenses again, where it can."""
    workspace = ls.client_capabilities.workspace
    if workspace is None:
        return
    asks: list[Callable[[None], Future[Any]]] = []
    if workspace.inlay_hint is not None and workspace.inlay_hint.refresh_support:
        asks.append(ls.workspace_inlay_hint_refresh)
    if workspace.code_lens is not None and workspace.code_lens.refresh_support:
        asks.append(ls.workspace_code_lens_refresh)
    for ask in asks:
        # fire and forget; reading the outcome keeps a failed answer out of the logs
        ask(None).add_done_callback(lambda f: f.cancelled() or f.exception())


# --- drawing ------------------------------------------------------------------------------------


def profile_at(ls: Any, uri: str, line: int) -> tuple[dict[str, Any], str | None] | None:
    """The profiled line at 0-based `line` of `uri` and the run's backend, if any."""
    profile = ls.profiles.of(uri)
    if profile is None or line not in profile.lines:
        return None
    return profile.lines[line], profile.backend


def profile_details(ls: Any, uri: str, line: int) -> str | None:
    """The Markdown details of the profiled line at 0-based `line` of `uri`, if any."""
    found = profile_at(ls, uri, line)
    return None if found is None else found[0]["hover"]


def inlay_hints(ls: Any, uri: str, within: types.Range) -> list[types.InlayHint]:
    profile = ls.profiles.of(uri)
    document = open_document(ls, uri)
    if profile is None or document is None:
        return []
    index = LineIndex(document.source, ls.workspace.position_codec)
    hints = []
    for line, cost in sorted(profile.lines.items()):
        if not within.start.line <= line <= within.end.line or line >= len(index.lines):
            continue
        end = len(index.lines[line].rstrip("\r\n"))
        hints.append(
            types.InlayHint(
                position=index.to_client(line, end),
                label=cost["label"],
                padding_left=True,
                tooltip=types.MarkupContent(kind=types.MarkupKind.Markdown, value=cost["hover"]),
            )
        )
    return hints


def code_lenses(ls: Any, uri: str) -> list[types.CodeLens]:
    document = open_document(ls, uri)
    if document is None or notebook_of(ls, uri) is not None:
        return []
    profile = ls.profiles.of(uri)
    title = "▶ Profile cell" if may_profile(ls.settings.workspace_trusted) else UNTRUSTED_LENS
    lenses = []
    for cell in split_cells(document.source):
        if cell.index == 0 or not has_code(cell):
            continue
        marker = cell.first_line - 1
        where = types.Range(
            start=types.Position(line=marker, character=0),
            end=types.Position(line=marker, character=0),
        )
        lenses.append(
            types.CodeLens(
                range=where,
                command=types.Command(
                    title=title,
                    command=PROFILE_CELL,
                    arguments=[{"uri": uri, "line": marker}],
                ),
            )
        )
        if profile is not None and any(marker <= n < cell.last_line for n in profile.lines):
            lenses.append(
                types.CodeLens(
                    range=where,
                    command=types.Command(
                        title="Clear profile", command=CLEAR_PROFILE, arguments=[{"uri": uri}]
                    ),
                )
            )
    return lenses


# --- wiring -------------------------------------------------------------------------------------


def register(server: GpulensServer) -> None:
    """The commands, lenses and inlay hints; the server hands edits and closes of documents
    to `Profiles` (pygls takes one handler per method)."""

    # pygls reads a command handler's annotations at run time to convert its arguments, so
    # they may only name what exists then
    @server.command(PROFILE_CELL)
    async def profile_cell(ls: Any, *arguments: object) -> dict[str, Any]:
        uri, line = profile_arguments(arguments)
        return await run_profile_command(ls, uri, line)

    @server.command(CLEAR_PROFILE)
    def clear_profile(ls: Any, *arguments: object) -> dict[str, int]:
        uri = uri_argument(arguments)
        removed = ls.profiles.cleared(uri)
        _drawn_again(ls, uri)
        return {"cleared": 0 if removed is None else len(removed.lines)}

    @server.command(SHOW_PROFILE)
    def show_profile(ls: Any, *arguments: object) -> dict[str, Any]:
        uri, payload = show_arguments(arguments)
        return show_saved_profile(ls, uri, payload)

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def on_code_lens(ls: Any, params: types.CodeLensParams) -> list[types.CodeLens]:
        return code_lenses(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    def on_inlay_hint(ls: Any, params: types.InlayHintParams) -> list[types.InlayHint]:
        return inlay_hints(ls, params.text_document.uri, params.range)
