"""Diagnostics: debounced analysis in worker threads, published only for the latest text.

Every change (re)starts a short timer per document or notebook; when it fires, a snapshot
is analysed off the event loop, so requests keep being answered while it runs. A result is
published only if the text it was computed from is still the current one, so an older
analysis finishing late never overwrites a newer one. Code actions and hover reuse the
latest result, or wait for the one being computed for the current text.

Where a profile measured lines of a document (`Profiles.measured_of`), its findings are
shown merged with those measurements (`gpulens.profiler.measured`), in a worker thread too:
the merge may analyse a line again to find the fix for a sync the profile measured. A new
profile, a cleared one or an edit of a measured line publishes them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import traceback
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types

from gpulens.analysis import Analysis
from gpulens.analysis.incremental import DocumentAnalyzer
from gpulens.lsp.convert import LineIndex, merged_to_diagnostic
from gpulens.lsp.documents import (
    MAX_ANALYSED_CHARS,
    Snapshot,
    analyse,
    open_targets,
    snapshot_of,
    statement_starts,
    target_of,
)
from gpulens.lsp.settings import FIRST_SETTINGS_TIMEOUT_S
from gpulens.profiler.measured import MeasuredLine, Merged, merge_measured

if TYPE_CHECKING:
    from gpulens.lsp.server import GpulensServer

logger = logging.getLogger(__name__)

# Wait this long after the last keystroke: typing at 10 chars/s then costs one analysis per
# pause, not one per character. 0 (benchmarks) analyses every change at once.
DEBOUNCE_S = 0.075
DELAY_ENV = "GPULENS_LSP_DIAGNOSTIC_DELAY_MS"


def default_delay_s() -> float:
    try:
        return max(0.0, float(os.environ[DELAY_ENV]) / 1000)
    except (KeyError, ValueError):
        return DEBOUNCE_S


@dataclass(frozen=True, slots=True)
class Result:
    """The analyses of one snapshot, one per text (None: the texts were too large)."""

    snapshot: Snapshot
    analyses: Sequence[Analysis] | None
    # a text document's top-level statements, where its analysis parsed them all
    statement_starts: tuple[int, ...] | None = None

    def analysis_of(self, uri: str) -> tuple[str, Analysis] | None:
        index = self.snapshot.index_of(uri)
        if index is None or self.analyses is None:
            return None
        return self.snapshot.texts[index], self.analyses[index]


class DiagnosticsScheduler:
    def __init__(self, server: GpulensServer) -> None:
        self._server = server
        self.delay_s = default_delay_s()
        # two workers: one large document being analysed does not hold back a small one
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gpulens-analysis")
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._running: dict[str, tuple[Snapshot, asyncio.Future[Result]]] = {}
        self._results: dict[str, Result] = {}
        # per target: the result, the profiles' revision and the findings shown for them
        self._shown: dict[str, tuple[Result, int, list[list[Merged]]]] = {}
        self._republishing: set[asyncio.Task[None]] = set()
        self._published_cells: dict[str, set[str]] = {}
        self._too_large_reported: set[str] = set()
        # per open document: the parse and function results of its earlier versions
        self._analyzers: dict[str, DocumentAnalyzer] = {}

    def schedule(self, uri: str, delay_s: float | None = None) -> None:
        """Analyse ``uri`` (or the notebook holding it) after the debounce delay."""
        target = target_of(self._server, uri)
        if target is None:
            return
        timer = self._timers.pop(target, None)
        if timer is not None:
            timer.cancel()
        delay = self.delay_s if delay_s is None else delay_s
        self._timers[target] = asyncio.get_running_loop().create_task(self._after(target, delay))

    def refresh_all(self) -> None:
        """Re-analyse every open document, e.g. after the settings changed."""
        for target in open_targets(self._server):
            self.schedule(target, delay_s=0)

    async def _after(self, target: str, delay_s: float) -> None:
        try:
            if delay_s:
                await asyncio.sleep(delay_s)
            if not self._server.settings.ready.is_set():
                # the first analysis waits for the editor's settings, so an ignored rule
                # never flashes up at startup
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._server.settings.ready.wait(), FIRST_SETTINGS_TIMEOUT_S
                    )
        finally:
            # from here on a newer change no longer cancels this task: a request may be
            # waiting on its result, and a result for an older text is simply not published
            if self._timers.get(target) is asyncio.current_task():
                del self._timers[target]
        try:
            await self.current(target)
        except Exception:
            logger.exception("analysis of %s failed", target)
            self._server.log(types.MessageType.Error, f"gpulens: analysis of {target} failed")

    async def current(self, uri: str) -> Result | None:
        """The result for the current text of ``uri``: cached, being computed, or computed now."""
        snapshot = snapshot_of(self._server, uri)
        if snapshot is None:
            return None
        cached = self._results.get(snapshot.target)
        if cached is not None and cached.snapshot.same_input(snapshot):
            return cached
        running = self._running.get(snapshot.target)
        if running is not None and running[0].same_input(snapshot):
            return await asyncio.shield(running[1])
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._running[snapshot.target] = (snapshot, future)
        try:
            try:
                analyzer = self._analyzers.setdefault(snapshot.target, DocumentAnalyzer())
                analyses = await asyncio.get_running_loop().run_in_executor(
                    self.pool, analyse, snapshot, analyzer
                )
                starts = statement_starts(snapshot, analyzer)
            except Exception:
                # a bug in a rule costs this text its findings, never the session
                self._report_failure(snapshot)
                analyses, starts = [Analysis([]) for _ in snapshot.texts], None
            result = Result(snapshot, analyses, starts)
            future.set_result(result)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as error:
            future.set_exception(error)
            future.exception()  # retrieved: other waiters re-raise it, nobody logs it twice
            raise
        finally:
            if self._running.get(snapshot.target, (None, None))[1] is future:
                del self._running[snapshot.target]
        latest = snapshot_of(self._server, snapshot.target)
        if latest is not None and latest.same_input(snapshot):
            self._results[snapshot.target] = result
            shown = await self.shown(result)
            latest = snapshot_of(self._server, snapshot.target)
            if latest is not None and latest.same_input(snapshot):
                self._publish(result, shown)
        return result

    async def shown(self, result: Result) -> list[list[Merged]]:
        """The findings shown for each text of `result`: its analysis's, merged with what a
        profile measured there. Computed in a worker thread, once per result and profile."""
        target = result.snapshot.target
        profiles = self._server.profiles
        revision = profiles.revision
        cached = self._shown.get(target)
        if cached is not None and cached[0] is result and cached[1] == revision:
            return cached[2]
        measured = [profiles.measured_of(uri) for uri in result.snapshot.uris]
        if any(measured):
            loop = asyncio.get_running_loop()
            shown = await loop.run_in_executor(self.pool, _merged, result, measured)
        else:
            shown = _merged(result, measured)
        if self._results.get(target) is result:
            self._shown[target] = (result, revision, shown)
        return shown

    def republish(self, uri: str) -> None:
        """Publish the diagnostics of `uri` again (its profile changed), from its latest
        analysis; analyse it first where there is none for its text."""
        target = target_of(self._server, uri)
        if target is None:
            return
        result = self._results.get(target)
        latest = snapshot_of(self._server, target)
        if result is None or latest is None or not result.snapshot.same_input(latest):
            self.schedule(target, delay_s=0)
            return
        task = asyncio.get_running_loop().create_task(self._republish(target, result))
        self._republishing.add(task)
        task.add_done_callback(self._republishing.discard)

    async def _republish(self, target: str, result: Result) -> None:
        try:
            shown = await self.shown(result)
        except Exception:
            logger.exception("merging the profile of %s failed", target)
            return
        if self._results.get(target) is result:  # no newer analysis published meanwhile
            self._publish(result, shown)

    def _publish(self, result: Result, shown: Sequence[Sequence[Merged]]) -> None:
        snapshot = result.snapshot
        if result.analyses is None:
            self._report_too_large(snapshot)
        codec = self._server.workspace.position_codec
        for index, (uri, text) in enumerate(zip(snapshot.uris, snapshot.texts, strict=True)):
            findings = shown[index]
            diagnostics: list[types.Diagnostic] = []
            if findings:  # no line table for a text without findings: 5 MB would cost 100 ms
                line_index = LineIndex(text, codec)
                diagnostics = [merged_to_diagnostic(f, line_index) for f in findings]
            self._server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(
                    uri=uri, version=snapshot.version_of(uri), diagnostics=diagnostics
                )
            )
        if snapshot.is_notebook:
            # cells deleted or turned into markdown keep no stale diagnostics
            published = set(snapshot.uris)
            for gone in self._published_cells.get(snapshot.target, set()) - published:
                self.clear(gone)
            self._published_cells[snapshot.target] = published

    def _report_failure(self, snapshot: Snapshot) -> None:
        logger.exception("analysis of %s failed", snapshot.target)
        self._server.log(
            types.MessageType.Error,
            f"gpulens: analysis of {snapshot.target} failed; its diagnostics are left out "
            f"until it is edited.\n{traceback.format_exc()}",
        )

    def _report_too_large(self, snapshot: Snapshot) -> None:
        if snapshot.target in self._too_large_reported:
            return
        self._too_large_reported.add(snapshot.target)
        self._server.log(
            types.MessageType.Info,
            f"gpulens: {snapshot.target} has {snapshot.size:,} characters; files over "
            f"{MAX_ANALYSED_CHARS:,} are not analysed.",
        )

    def clear(self, uri: str) -> None:
        self._server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    def forget(self, target: str, uris: Sequence[str]) -> None:
        """A document or notebook was closed: stop its work and clear what it showed."""
        timer = self._timers.pop(target, None)
        if timer is not None:
            timer.cancel()
        self._results.pop(target, None)
        self._shown.pop(target, None)
        self._analyzers.pop(target, None)
        self._too_large_reported.discard(target)
        for uri in {*uris, *self._published_cells.pop(target, set())}:
            self.clear(uri)

    def shutdown(self) -> None:
        for timer in [*self._timers.values(), *self._republishing]:
            timer.cancel()
        self.pool.shutdown(wait=False, cancel_futures=True)


def _merged(result: Result, measured: Sequence[Mapping[int, MeasuredLine]]) -> list[list[Merged]]:
    """Each text's findings, merged with the lines measured on it."""
    snapshot = result.snapshot
    if result.analyses is None:
        return [[] for _ in snapshot.texts]
    return [
        merge_measured(analysis.findings, lines, text, snapshot.config)
        for analysis, lines, text in zip(result.analyses, measured, snapshot.texts, strict=True)
    ]
