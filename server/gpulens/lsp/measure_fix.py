""" "Measure this fix": `gpulens.measureFix {uri, line, code, title}`, the command behind the
code action of that name (`code_actions`).

Code runs only when the user picks the action: never where the client said the folder is not
trusted (`gpulens.lsp.trust`), never for a notebook cell (its cells run in their kernel) nor a
text that is not a file on disk. The text the editor holds (unsaved edits included) is
measured: the cell holding the finding runs as it is and with the fix applied, several times
each, each run a fresh subprocess of `gpulens.profile.python` in the file's folder
(`gpulens.profiler.measure_fix`); the fixed text exists only in memory, the file is never
written. One profile or measurement runs at a time (they would count each other's GPU work).
It reports `$/progress`; cancelling it stops after interrupting the run going on, and
`$/cancelRequest` kills that run at once.

The command answers with the `gpulens.measure-fix/1` result. The server shows its message as it
is and, unless the fixed cell failed, offers "Apply fix" (`window/showMessageRequest`): picked,
the ordinary quick-fix is applied to the document as it is then (`workspace/applyEdit`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from gpulens.lsp.code_actions import MEASURE_FIX
from gpulens.lsp.convert import LineIndex, edits_to_text_edits, workspace_edit
from gpulens.lsp.documents import notebook_of, open_document
from gpulens.lsp.profiling import (
    PROGRESS_EVERY_S,
    STOP_GIVE_UP_S,
    Progress,
    _cancel_with_request,
    _file_path,
    cell_label,
)
from gpulens.lsp.settings import plain
from gpulens.lsp.trust import UNTRUSTED_PROFILE, may_profile
from gpulens.profiler.cells import split_cells

if TYPE_CHECKING:
    from gpulens.analysis import Finding
    from gpulens.lsp.server import GpulensServer

logger = logging.getLogger(__name__)

APPLY_FIX = "Apply fix"
_MESSAGE_TYPES = {
    "info": types.MessageType.Info,
    "warning": types.MessageType.Warning,
    "error": types.MessageType.Error,
}


def measure_arguments(arguments: Sequence[object]) -> tuple[str, int, str, str | None]:
    """`[{"uri", "line": 0-based, "code": "GPU001", "title": the fix's (optional)}]`."""
    values = [plain(a) for a in arguments]
    found = values[0] if len(values) == 1 and isinstance(values[0], Mapping) else {}
    uri, line = found.get("uri"), found.get("line")
    code, title = found.get("code"), found.get("title")
    if (
        not isinstance(uri, str)
        or isinstance(line, bool)
        or not isinstance(line, int)
        or line < 0
        or not isinstance(code, str)
        or not (title is None or isinstance(title, str))
    ):
        raise JsonRpcInvalidParams(
            f'{MEASURE_FIX} takes {{"uri": "file:///…/train.py", "line": 0-based line, '
            '"code": "GPU001", "title": the fix\'s title (optional)}'
        )
    return uri, line, code, title


async def _shown_findings(ls: Any, uri: str) -> tuple[str, list[Finding]] | None:
    """The document's text and the findings shown for it (a profile's merged in)."""
    result = await ls.diagnostics.current(uri)
    position = None if result is None else result.snapshot.index_of(uri)
    if result is None or position is None:
        return None
    shown = await ls.diagnostics.shown(result)
    return result.snapshot.texts[position], [m.finding for m in shown[position]]


def _refusal(ls: Any, uri: str, path: str | None) -> str | None:
    if not may_profile(ls.settings.workspace_trusted):
        return UNTRUSTED_PROFILE
    if notebook_of(ls, uri) is not None:
        return "notebook cells run in their kernel; measure a fix in a .py file"
    if path is None:
        return "it is not a file on disk; save it to a .py file and measure again"
    if open_document(ls, uri) is None:
        return "the document is not open; open it and measure again"
    return None


async def run_measure_command(
    ls: Any, uri: str, line: int, code: str, title: str | None
) -> dict[str, Any]:
    # the measurement loads with the first one, not with the server
    from gpulens.profiler.measure_fix import (
        MeasureRequestError,
        choose_fix,
        plan_measurement,
        refused,
    )

    task = asyncio.current_task()
    if task is not None:
        _cancel_with_request(ls, task)
    path = _file_path(uri)
    reason = _refusal(ls, uri, path)
    found = None if reason else await _shown_findings(ls, uri)
    result: dict[str, Any]
    if reason is None and found is None:
        reason = "the document is not open; open it and measure again"
    if reason is not None or path is None or found is None:
        result = refused(path or uri, line + 1, code, reason or "")
    else:
        text, findings = found
        try:
            finding, fix = choose_fix(findings, line + 1, code, title)
            plan = plan_measurement(path, text, finding, fix)
        except MeasureRequestError as error:
            result = refused(path, line + 1, code, str(error))
        else:
            name = path.replace("\\", "/").rsplit("/", 1)[-1]
            label = cell_label(split_cells(text), finding.span.line, name)
            result = await _measure(ls, plan, f"gpulens: measuring “{fix.title}” on {label}")
    _offer(ls, uri, line, code, result)
    return result


async def _measure(ls: Any, plan: Any, title: str) -> dict[str, Any]:
    from gpulens.profiler.measure_fix import BackgroundMeasurement

    settings = ls.settings.editor
    python = settings.profile_python and os.path.expanduser(settings.profile_python)
    progress = Progress(ls)
    await progress.begin(title)
    summary: str | None = "cancelled"
    try:
        if ls.profiles.one_at_a_time.locked():
            progress.report("waiting for the profile already running")
        async with ls.profiles.one_at_a_time:
            run = BackgroundMeasurement(
                plan,
                python=python,
                timeout=settings.profile_timeout_seconds,
                cwd=os.path.dirname(os.path.abspath(plan.path)),
            )
            ls.profiles.running = run
            worker = asyncio.wrap_future(run.future)
            cancel: asyncio.Future[Any] = asyncio.ensure_future(progress.cancelled.wait())
            try:
                while not worker.done():
                    await asyncio.wait({worker, cancel}, timeout=PROGRESS_EVERY_S)
                    if cancel.done():
                        run.interrupt()
                        break
                    progress.report(f"run {run.done + 1} of {run.total}")
            except asyncio.CancelledError:
                run.kill()
                with contextlib.suppress(Exception):
                    await asyncio.wait({worker}, timeout=STOP_GIVE_UP_S)
                raise
            finally:
                cancel.cancel()
                if ls.profiles.running is run:
                    ls.profiles.running = None
            result: dict[str, Any] = await worker
            summary = str(result["verdict"])
            return result
    finally:
        progress.end(summary)


def _offer(ls: Any, uri: str, line: int, code: str, result: dict[str, Any]) -> None:
    """Show the result's message; with "Apply fix" where it may be applied."""
    kind = _MESSAGE_TYPES.get(str(result.get("level")), types.MessageType.Info)
    fix = result.get("fix") or {}
    if not result.get("apply") or not fix.get("title"):
        ls.window_show_message(types.ShowMessageParams(type=kind, message=result["message"]))
        return

    async def ask() -> None:
        params = types.ShowMessageRequestParams(
            type=kind,
            message=result["message"],
            actions=[types.MessageActionItem(title=APPLY_FIX)],
        )
        try:
            picked = await ls.window_show_message_request_async(params)
        except Exception as error:  # the client went away, or cannot ask
            logger.info("window/showMessageRequest failed: %s", error)
            return
        if picked is not None and picked.title == APPLY_FIX:
            await apply_fix(ls, uri, line, code, fix["title"])

    task = asyncio.get_running_loop().create_task(ask())
    _asking.add(task)
    task.add_done_callback(_asking.discard)


# the questions waiting for the user, kept so that they are not collected mid-question
_asking: set[asyncio.Task[None]] = set()


async def apply_fix(ls: Any, uri: str, line: int, code: str, title: str) -> bool:
    """Apply the quick-fix `title` of the `code` finding on 0-based `line`, as the document
    is now; a message says so where that finding or fix is gone."""
    from gpulens.profiler.measure_fix import MeasureRequestError, choose_fix

    found = await _shown_findings(ls, uri)
    try:
        if found is None:
            raise MeasureRequestError("the document is closed")
        text, findings = found
        _, fix = choose_fix(findings, line + 1, code, title)
    except MeasureRequestError as error:
        ls.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Warning,
                message=f"gpulens: the fix was not applied: {error} any more.",
            )
        )
        return False
    document = open_document(ls, uri)
    index = LineIndex(text, ls.workspace.position_codec)
    edit = workspace_edit(
        uri,
        None if document is None else document.version,
        edits_to_text_edits(fix.edits, index),
        _versioned_edits(ls),
    )
    answer = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=fix.title)
    )
    return bool(answer and answer.applied)


def _versioned_edits(ls: Any) -> bool:
    workspace = ls.client_capabilities.workspace
    edit = None if workspace is None else workspace.workspace_edit
    return bool(edit and edit.document_changes)


def register(server: GpulensServer) -> None:
    # pygls reads a command handler's annotations at run time to convert its arguments
    @server.command(MEASURE_FIX)
    async def measure_fix(ls: Any, *arguments: object) -> dict[str, Any]:
        uri, line, code, title = measure_arguments(arguments)
        return await run_measure_command(ls, uri, line, code, title)
