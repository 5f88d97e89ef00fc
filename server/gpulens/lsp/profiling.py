"""Cell profiling in the editor: "Profile cell" code lenses, the `gpulens.profileCell` and
`gpulens.clearProfile` commands, inlay hints after the profiled lines and their hover.

Code runs only when the client executes `gpulens.profileCell {uri, line}` (line 0-based):
never on open, save, code lens or hover, and never where the client said the folder is not
trusted (`gpulens.lsp.trust`: the command then answers with the reason). The cell holding that
line runs in a subprocess of `gpulens.profile.python` (default: the server's interpreter) under
`gpulens.profile.timeoutSeconds` (`gpulens.profiler.runner`), in the file's folder, as editors
run a cell; the command answers with the `gpulens.profile/1` payload, so a client may draw it
itself, and the server keeps its lines to draw them as inlay hints. The runner waits in a
daemon thread: a server that exits (or is killed) mid-profile is not held up by it, and the
subprocess ends with the server.

Lenses: "Profile cell" above each `# %%` cell with code; none in a file without markers,
because every module of a project would carry one and most are not scripts. The command works
on any line of such a file all the same and then profiles the whole file (the code before the
first marker is the whole file), so a client may offer "Profile file" with it.

A profile runs one at a time per server (a second waits): two profiles at once would each
count the other's GPU work as their own. It reports `$/progress` when the client supports
`window/workDoneProgress`; its token is cancellable, and cancelling it interrupts the cell
(SIGINT, so the lines that ran are still drawn). `$/cancelRequest` on the executeCommand
request kills the subprocess and its process group at once.

Results are kept per open document by line: an edit drops the lines it touches and moves the
lines after it, closing the document drops them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import subprocess
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path
from pygls.workspace.position_codec import PositionCodec

from gpulens.analysis.source import source_lines
from gpulens.lsp.convert import LineIndex
from gpulens.lsp.documents import notebook_of, open_document
from gpulens.lsp.settings import plain
from gpulens.lsp.status import _chain_builtin
from gpulens.lsp.text_documents import LspTextDocument
from gpulens.lsp.trust import UNTRUSTED_LENS, UNTRUSTED_PROFILE, may_profile
from gpulens.profiler.cells import Cell, cell_at_line, split_cells
from gpulens.profiler.report import (
    failed_payload,
    format_line_costs,
    format_line_details,
    format_run_message,
)
from gpulens.profiler.runner import ProfileRequestError, run_profile

if TYPE_CHECKING:
    from concurrent.futures import Future

    from gpulens.lsp.server import GpulensServer

logger = logging.getLogger(__name__)

PROFILE_CELL = "gpulens.profileCell"
CLEAR_PROFILE = "gpulens.clearProfile"
# after a cancelled progress interrupts the cell, how long it may take to write what ran
INTERRUPT_GRACE_S = 3.0
# a stop that has not seen the subprocess end by then gives up (the runner's timeout remains)
STOP_GIVE_UP_S = 30.0
PROGRESS_EVERY_S = 1.0

T = TypeVar("T")


# --- pure ---------------------------------------------------------------------------------------


def carry_over(old: Sequence[str], new: Sequence[str], results: Mapping[int, T]) -> dict[int, T]:
    """Results keyed by 0-based line of the text `old`, moved onto the text `new` (both as
    lists of lines): lines before the first changed one keep their number, lines after the
    last changed one move with the edit, and changed or removed lines lose their result."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
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


@dataclass
class ProfileState:
    documents: dict[str, DocumentProfile] = field(default_factory=dict)
    # one profile at a time: concurrent ones would count each other's GPU work
    running: asyncio.Lock = field(default_factory=asyncio.Lock)
    # the running profile's subprocess, handed over by the runner as soon as it starts
    process: subprocess.Popen[bytes] | None = None

    def running_pids(self) -> list[int]:
        process = self.process
        return [process.pid] if process is not None and process.poll() is None else []

    def started(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process


_STATES: weakref.WeakKeyDictionary[Any, ProfileState] = weakref.WeakKeyDictionary()
# LineIndex needs a codec only to count columns; splitting lines does not depend on it
_CODEC = PositionCodec()


def state_of(ls: Any) -> ProfileState:
    state = _STATES.get(ls)
    if state is None:
        state = _STATES[ls] = ProfileState()
    return state


def _key(uri: str) -> str:
    return unquote(uri)


# --- the subprocess -----------------------------------------------------------------------------


def _signal_group(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, number)  # the runner starts each child in a session of its own


def kill_profiles(state: ProfileState) -> None:
    if hasattr(os, "killpg"):
        for pid in state.running_pids():
            _signal_group(pid, signal.SIGKILL)


async def stop_profile(state: ProfileState, worker: asyncio.Future[Any], graceful: bool) -> None:
    """End the running profile's subprocess and wait for the runner to return.

    `graceful`: interrupt first (the cell stops where it is and the lines that ran are
    written), kill after INTERRUPT_GRACE_S; otherwise kill at once. Looks again until the
    runner returns, because a stop may come before the runner has started the subprocess.
    """
    if not hasattr(os, "killpg"):
        logger.warning("gpulens: this platform cannot stop a running profile")
        return
    loop = asyncio.get_running_loop()
    started = loop.time()
    interrupted: set[int] = set()
    while not worker.done() and loop.time() - started < STOP_GIVE_UP_S:
        kill = not graceful or loop.time() - started >= INTERRUPT_GRACE_S
        for pid in state.running_pids():
            if kill:
                _signal_group(pid, signal.SIGKILL)
            elif pid not in interrupted:
                interrupted.add(pid)
                _signal_group(pid, signal.SIGINT)
        await asyncio.wait({worker}, timeout=0.05)


@dataclass(frozen=True)
class ProfileRequest:
    path: str
    text: str | None  # the editor's text; None reads the file
    line: int  # 0-based
    python: str | None
    timeout_s: float | None
    label: str  # "cell 2 of train.py", for the progress title


def in_daemon_thread(function: Callable[[], T]) -> asyncio.Future[T]:
    """`function()` in a daemon thread, as a future of the running loop. Unlike
    `asyncio.to_thread`, interpreter exit does not wait for it."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def work() -> None:
        try:
            outcome = functools.partial(future.set_result, function())
        except BaseException as error:
            outcome = functools.partial(future.set_exception, error)
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=work, name="gpulens-profile", daemon=True).start()
    return future


def _run(request: ProfileRequest, state: ProfileState) -> dict[str, Any]:
    """The runner, with a request it cannot run (no such line, unreadable file) as a payload."""
    try:
        return run_profile(
            request.path,
            text=request.text,
            line=request.line + 1,
            python=request.python,
            timeout=request.timeout_s,
            on_start=state.started,
            cwd=os.path.dirname(os.path.abspath(request.path)),
        )
    except ProfileRequestError as error:
        source = {"path": request.path, "cell": None, "first_line": request.line + 1}
        return failed_payload(source, str(error), "RequestError")


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
    state = state_of(ls)
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
        request = ProfileRequest(path, text, line, python, settings.profile_timeout_seconds, label)
        payload = await _profile(ls, state, request)
        if text is not None:
            _keep(ls, state, uri, lines_of(text), payload)
    message = format_run_message(payload)
    if message is not None:
        error_type = (payload.get("error") or {}).get("type")
        kind = {
            None: types.MessageType.Info,
            "Cancelled": types.MessageType.Info,
            "Timeout": types.MessageType.Warning,
        }.get(error_type, types.MessageType.Error)
        ls.window_show_message(types.ShowMessageParams(type=kind, message=message))
    return payload


async def _profile(ls: Any, state: ProfileState, request: ProfileRequest) -> dict[str, Any]:
    progress = Progress(ls)
    await progress.begin(f"gpulens: profiling {request.label}")
    summary: str | None = "cancelled"
    try:
        if state.running.locked():
            progress.report("waiting for the profile already running")
        async with state.running:
            started = time.monotonic()
            worker = in_daemon_thread(lambda: _run(request, state))
            try:
                cancelled = await _wait(worker, progress, started)
            except asyncio.CancelledError:
                # the request was cancelled: nobody wants the figures, stop at once
                await stop_profile(state, worker, graceful=False)
                raise
            if cancelled:
                await stop_profile(state, worker, graceful=True)
            payload: dict[str, Any] = await worker
            if cancelled:
                error = payload.get("error") or {}
                payload["error"] = {
                    "type": "Cancelled",
                    "message": "the profile was cancelled",
                    "line": error.get("line"),
                }
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


def _keep(
    ls: Any, state: ProfileState, uri: str, profiled: list[str], payload: dict[str, Any]
) -> None:
    """Store the payload's lines for the document (replacing the profiled cell's old ones),
    moved onto the document's text if it changed while the cell ran."""
    document = open_document(ls, uri)
    if document is None or not payload.get("lines"):
        return
    key = _key(uri)
    profile = state.documents.setdefault(key, DocumentProfile())
    source = payload.get("source") or {}
    first = int(source.get("first_line") or 1) - 1
    last = int(source.get("last_line") or first + 1) - 1
    kept = {n: cost for n, cost in profile.lines.items() if not first <= n <= last}
    fresh = {int(cost["line"]) - 1: cost for cost in payload["lines"]}
    fresh = carry_over(profiled, lines_of(document.source), fresh)
    profile.lines = {**kept, **fresh}
    profile.backend = payload.get("backend")
    refresh(ls)


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
    profile = state_of(ls).documents.get(_key(uri))
    if profile is None or line not in profile.lines:
        return None
    return profile.lines[line], profile.backend


def add_profile_hover(
    ls: Any, params: types.HoverParams, hover: types.Hover | None, kind: types.MarkupKind
) -> types.Hover | None:
    """`hover` (the findings') with the profiled line's details after it, if it has some."""
    found = profile_at(ls, params.text_document.uri, params.position.line)
    if found is None:
        return hover
    details = format_line_details(*found)
    if hover is None:
        return types.Hover(contents=types.MarkupContent(kind=kind, value=details))
    contents = hover.contents
    value = contents.value if isinstance(contents, types.MarkupContent) else str(contents)
    return types.Hover(
        contents=types.MarkupContent(kind=kind, value=f"{value}\n\n---\n\n{details}"),
        range=hover.range,
    )


def inlay_hints(ls: Any, uri: str, within: types.Range) -> list[types.InlayHint]:
    profile = state_of(ls).documents.get(_key(uri))
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
                label=format_line_costs(cost),
                padding_left=True,
                tooltip=types.MarkupContent(
                    kind=types.MarkupKind.Markdown,
                    value=format_line_details(cost, profile.backend),
                ),
            )
        )
    return hints


def code_lenses(ls: Any, uri: str) -> list[types.CodeLens]:
    document = open_document(ls, uri)
    if document is None or notebook_of(ls, uri) is not None:
        return []
    profile = state_of(ls).documents.get(_key(uri))
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
    state = state_of(server)

    # pygls reads a command handler's annotations at run time to convert its arguments, so
    # they may only name what exists then
    @server.command(PROFILE_CELL)
    async def profile_cell(ls: Any, *arguments: object) -> dict[str, Any]:
        uri, line = profile_arguments(arguments)
        return await run_profile_command(ls, uri, line)

    @server.command(CLEAR_PROFILE)
    def clear_profile(ls: Any, *arguments: object) -> dict[str, int]:
        removed = state.documents.pop(_key(uri_argument(arguments)), None)
        refresh(ls)
        return {"cleared": 0 if removed is None else len(removed.lines)}

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def on_code_lens(ls: Any, params: types.CodeLensParams) -> list[types.CodeLens]:
        return code_lenses(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    def on_inlay_hint(ls: Any, params: types.InlayHintParams) -> list[types.InlayHint]:
        return inlay_hints(ls, params.text_document.uri, params.range)

    def before_change(params: types.DidChangeTextDocumentParams) -> None:
        # runs before pygls applies the change, so the document still holds the old text
        profile = state.documents.get(_key(params.text_document.uri))
        document = open_document(server, params.text_document.uri)
        if profile is None or document is None:
            return
        copy = LspTextDocument(
            document.uri, document.source, position_codec=server.workspace.position_codec
        )
        old = lines_of(copy.source)
        for change in params.content_changes:
            copy.apply_change(change)
            new = lines_of(copy.source)
            profile.lines = carry_over(old, new, profile.lines)
            old = new

    def before_close(params: types.DidCloseTextDocumentParams) -> None:
        state.documents.pop(_key(params.text_document.uri), None)

    _chain_builtin(server, types.TEXT_DOCUMENT_DID_CHANGE, before=before_change)
    _chain_builtin(server, types.TEXT_DOCUMENT_DID_CLOSE, before=before_close)
    # a profile still running at shutdown would keep the server's process alive until its
    # timeout: the runner's thread is waited for at exit
    _chain_builtin(server, types.SHUTDOWN, before=lambda *_: kill_profiles(state))
