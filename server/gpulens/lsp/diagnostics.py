"""Diagnostics: analysis in worker threads after an adaptive debounce, one analysis of a
document at a time, published in the order of the texts.

Every change (re)starts a timer per document or notebook. Its delay follows what the
document costs to analyse (`adaptive_delay_s`): a few milliseconds for a file analysed in
20 ms, up to 75 ms for one that takes a third of a second, none for the first change after
a pause. When the timer fires, a snapshot is analysed off the event loop, so requests keep
being answered while it runs. A document is analysed once at a time: a change that arrives
meanwhile is analysed as soon as the running analysis ends, on the text current then, so
intermediate texts are skipped rather than queued. A result is published as soon as it is
there, also when the text changed meanwhile (the next analysis is of the text current then),
so a fast typist sees diagnostics one keystroke behind rather than none until a pause;
results end in the order of their texts, so an older one never replaces a newer one. Code
actions and hover use only a result for the current text, or wait for it.

Where a profile measured lines of a document (`Profiles.measured_of`), its findings are
shown merged with those measurements (`gpulens.profiler.measured`), in a worker thread too:
the merge may analyse a line again to find the fix for a sync the profile measured. The
merge is part of the document's running work, so it keeps the order of publications: a new
profile, a cleared one or an edit of a measured line publishes them again once what runs
has ended, and an analysis merges the profile current when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsprotocol import types

from gpulens.lsp.documents import (
    MAX_ANALYSED_CHARS,
    Snapshot,
    analyse,
    open_targets,
    parsed_text,
    snapshot_of,
    statement_starts,
    target_of,
    text_lines,
)
from gpulens.lsp.published import PublishedDiagnostics
from gpulens.lsp.settings import FIRST_SETTINGS_TIMEOUT_S

if TYPE_CHECKING:
    from gpulens.analysis import Analysis, Finding
    from gpulens.analysis.incremental import DocumentAnalyzer
    from gpulens.lsp.server import GpulensServer
    from gpulens.profiler.measured import MeasuredLine, Merged
    from gpulens.profiler.probe_memo import ProbeMemo

logger = logging.getLogger(__name__)

# The debounce waits this share of the document's last analysis time, at most MAX_DEBOUNCE_S:
# typing into a file analysed in 20 ms waits 5 ms, into one analysed in 300 ms, 75 ms.
DEBOUNCE_SHARE = 0.25
MAX_DEBOUNCE_S = 0.075
# A change this long after the previous one is analysed at once: nothing to coalesce.
PAUSE_S = 1.0
DELAY_ENV = "GPULENS_LSP_DIAGNOSTIC_DELAY_MS"
# From this size on, what an analysis leaves alive is kept out of later garbage collections
# (`analysis.engine.collector_paused`): a full collection of a 2 MB document's trees took
# 2-3 s and came every few keystrokes.
FREEZE_FROM_CHARS = 250_000


def adaptive_delay_s(analysis_s: float | None, since_change_s: float) -> float:
    """How long to wait after a change before analysing: a share of what the document's
    last analysis took (typing faster than that only makes analyses the next keystroke
    throws away), and nothing for a first analysis or a change after a pause."""
    if analysis_s is None or since_change_s >= PAUSE_S:
        return 0.0
    return min(MAX_DEBOUNCE_S, DEBOUNCE_SHARE * analysis_s)


def _import_analysis() -> None:
    try:
        import gpulens.analysis.incremental
        import gpulens.analysis.walker
        import gpulens.analysis.wrapped_magics  # noqa: F401
    except Exception:  # the first analysis imports it again and reports what fails
        logger.exception("importing the analysis failed")


def fixed_delay_s() -> float | None:
    """A fixed delay set in the environment (tests, benchmarks), or None: adaptive."""
    try:
        return max(0.0, float(os.environ[DELAY_ENV]) / 1000)
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Result:
    """The analyses of one snapshot, one per text (None: the texts were too large)."""

    snapshot: Snapshot
    analyses: Sequence[Analysis] | None
    # a text document's top-level statements, where its analysis parsed them all
    statement_starts: tuple[int, ...] | None = None
    # a text document's lines, as its analysis split them
    lines: list[str] | None = None

    def analysis_of(self, uri: str) -> tuple[str, Analysis] | None:
        index = self.snapshot.index_of(uri)
        if index is None or self.analyses is None:
            return None
        return self.snapshot.texts[index], self.analyses[index]


@dataclass(slots=True)
class _Target:
    """What the scheduler keeps per document or notebook."""

    timer: asyncio.Task[None] | None = None
    running: tuple[Snapshot, asyncio.Future[Result]] | None = None
    result: Result | None = None
    analyzer: DocumentAnalyzer | None = None  # the parses and results of earlier versions
    analysis_s: float | None = None  # how long its last analysis took
    changed_at: float = 0.0  # when its text last changed
    diagnostics: PublishedDiagnostics = field(default_factory=PublishedDiagnostics)
    published: tuple[int | None, ...] | None = None  # the versions last published
    cells: set[str] = field(default_factory=set)  # a notebook's cells given diagnostics
    warming: asyncio.Task[None] | None = None  # recording its first analysis's results
    # a result's findings merged with the profiles of a revision (`Profiles.revision`)
    shown: tuple[Result, int, list[list[Merged]]] | None = None
    # the result and the profiles' revision last published
    published_merge: tuple[Result, int] | None = None
    probes: ProbeMemo | None = None  # what the merges of its versions probed

    def stop_running(self, future: asyncio.Future[Result]) -> None:
        """``future`` ended: no analysis runs, unless a newer one started meanwhile."""
        if self.running is not None and self.running[1] is future:
            self.running = None

    def published_before(self, snapshot: Snapshot) -> bool:
        """Whether nothing newer than ``snapshot`` was published (the same version again,
        analysed with other settings, is published)."""
        if self.published is None:
            return True
        return (snapshot.versions[0] or 0) >= (self.published[0] or 0)


class DiagnosticsScheduler:
    def __init__(self, server: GpulensServer) -> None:
        self._server = server
        # None: the adaptive debounce; a number (initializationOptions, the environment):
        # that fixed delay
        self.delay_s: float | None = fixed_delay_s()
        # two workers: one large document being analysed does not hold back a small one
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="gpulens-analysis")
        self._targets: dict[str, _Target] = {}
        self._republishing: set[asyncio.Task[None]] = set()
        self._too_large_reported: set[str] = set()

    def preload(self) -> None:
        """Import the analysis on a thread of its own, once `initialize` is answered: the
        server starts without it, and the first document comes a moment later."""
        threading.Thread(target=_import_analysis, name="gpulens-preload", daemon=True).start()

    def _target(self, target: str) -> _Target:
        found = self._targets.get(target)
        if found is None:
            found = self._targets[target] = _Target()
        return found

    def schedule(self, uri: str, delay_s: float | None = None) -> None:
        """Analyse ``uri`` (or the notebook holding it) after the debounce delay."""
        target = target_of(self._server, uri)
        if target is None:
            return
        state = self._target(target)
        now = time.monotonic()
        if delay_s is None:
            delay_s = self.delay_s
        if delay_s is None:
            delay_s = adaptive_delay_s(state.analysis_s, now - state.changed_at)
        state.changed_at = now
        if state.timer is not None:
            state.timer.cancel()
        state.timer = asyncio.get_running_loop().create_task(self._after(target, delay_s))

    def refresh_all(self) -> None:
        """Re-analyse every open document, e.g. after the settings changed."""
        for target in open_targets(self._server):
            self.schedule(target, delay_s=0)

    async def _after(self, target: str, delay_s: float) -> None:
        state = self._target(target)
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
            if state.timer is asyncio.current_task():
                state.timer = None
        try:
            await self.current(target)
        except Exception:
            logger.exception("analysis of %s failed", target)
            self._server.log(types.MessageType.Error, f"gpulens: analysis of {target} failed")

    async def current(self, uri: str) -> Result | None:
        """The result for the current text of ``uri``: cached, being computed, or computed now.
        One analysis of a document runs at a time; a newer text waits for it to end."""
        while True:
            snapshot = snapshot_of(self._server, uri)
            if snapshot is None:
                return None
            state = self._target(snapshot.target)
            cached = state.result
            if cached is not None and cached.snapshot.same_input(snapshot):
                return cached
            if state.running is not None:
                running_snapshot, running = state.running
                if running_snapshot.same_input(snapshot):
                    return await asyncio.shield(running)
                # an older text is being analysed: its end frees the analyzer for this one
                with contextlib.suppress(Exception):
                    await asyncio.shield(running)
                continue
            return await self._analyse(snapshot, state)

    async def _analyse(self, snapshot: Snapshot, state: _Target) -> Result:
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        state.running = (snapshot, future)
        try:
            began = time.perf_counter()
            try:
                first = state.analyzer is None
                if first:
                    from gpulens.analysis.incremental import DocumentAnalyzer

                    state.analyzer = DocumentAnalyzer()
                analyzer = state.analyzer
                assert analyzer is not None
                # a large document's trees and results stay out of the collector's rounds,
                # and so do a document's first ones (with the analysis's modules, loaded
                # just before): collecting them as the first analysis ended held its
                # diagnostics back (6 ms at 2,000 lines)
                analyzer.freeze_survivors = first or snapshot.size >= FREEZE_FROM_CHARS
                analyses = await asyncio.get_running_loop().run_in_executor(
                    self.pool, analyse, snapshot, analyzer
                )
                starts = statement_starts(snapshot, analyzer)
                lines = text_lines(snapshot, analyzer)
            except Exception:
                # a bug in a rule costs this text its findings, never the session
                from gpulens.analysis import Analysis

                self._report_failure(snapshot)
                analyses, starts = [Analysis([]) for _ in snapshot.texts], None
                lines = None
            state.analysis_s = time.perf_counter() - began
            result = Result(snapshot, analyses, starts, lines)
            latest = snapshot_of(self._server, snapshot.target)
            if latest is not None and latest.same_input(snapshot):
                state.result = result
            if latest is not None and state.published_before(snapshot):
                # a text changed since is analysed next: until then the editor shows these
                # (analyses end in the order of their texts, so an older one never follows;
                # the profiles' merge ends before the next analysis starts)
                await self._publish_shown(result, state)
            future.set_result(result)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as error:
            future.set_exception(error)
            future.exception()  # retrieved: other waiters re-raise it, nobody logs it twice
            raise
        finally:
            state.stop_running(future)
        if state.analyzer is not None and state.analyzer.cold:
            self._warm(snapshot, result, state)
        return result

    def _warm(self, snapshot: Snapshot, result: Result, state: _Target) -> None:
        """Records the function results of a first analysis once its diagnostics are out
        (`DocumentAnalyzer.warm`), as the document's running analysis: a change made
        meanwhile is analysed after it, replaying what it recorded."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        state.running = (snapshot, future)
        analyzer = state.analyzer
        assert analyzer is not None

        async def warm() -> None:
            try:
                await loop.run_in_executor(self.pool, analyzer.warm)
            except Exception:
                logger.exception("recording the function results of %s failed", snapshot.target)
            finally:
                future.set_result(result)
                state.stop_running(future)

        state.warming = loop.create_task(warm())

    async def shown(self, result: Result) -> list[list[Merged]]:
        """The findings shown for each text of ``result``: its analysis's, merged with what
        a profile measured there. Merged in a worker thread, once per result and profile."""
        from gpulens.profiler.measured import ORIGIN_ANALYSIS, Merged

        state = self._targets.get(result.snapshot.target) or _Target()
        revision = self._server.profiles.revision
        merged = await self._merged(result, state, revision)
        if merged is not None:
            return merged
        if result.analyses is None:
            plain: list[list[Merged]] = [[] for _ in result.snapshot.texts]
        else:
            plain = [
                [Merged(f, ORIGIN_ANALYSIS, False) for f in a.findings] for a in result.analyses
            ]
        if state.result is result:
            state.shown = (result, revision, plain)
        return plain

    async def _merged(
        self, result: Result, state: _Target, revision: int, *, running: bool = False
    ) -> list[list[Merged]] | None:
        """`shown`, computed for ``revision`` of the profiles (the current one); None where
        no profile measured a line of the result's texts: its findings are shown as found.
        ``running``: the merge is the document's running work (no analysis of it runs),
        so it may read the parse its analysis left (`ProbeMemo`)."""
        cached = state.shown
        if cached is not None and cached[0] is result and cached[1] == revision:
            return cached[2]
        measured = [self._server.profiles.measured_of(uri) for uri in result.snapshot.uris]
        if not any(measured):
            return None
        reuse = None
        if running and state.analyzer is not None:
            if state.probes is None:
                from gpulens.profiler.probe_memo import ProbeMemo

                state.probes = ProbeMemo()
            reuse = (state.analyzer, state.probes)
        try:
            loop = asyncio.get_running_loop()
            merged = await loop.run_in_executor(self.pool, _merged, result, measured, reuse)
        except Exception:
            # a bug in the merge costs the profile's figures, never the findings
            logger.exception("merging the profile of %s failed", result.snapshot.target)
            self._server.log(
                types.MessageType.Error,
                f"gpulens: merging the profile of {result.snapshot.target} into its "
                f"diagnostics failed; they are shown without it.\n{traceback.format_exc()}",
            )
            return None
        if state.result is result:
            state.shown = (result, revision, merged)
        return merged

    async def _publish_shown(self, result: Result, state: _Target) -> None:
        """Publish ``result`` merged with the profiles as they are when the merge ends: a
        profile that came or went meanwhile is merged again, unless the text changed too (its
        analysis, next, merges the profiles as they are then: typing into a document whose
        merge takes longer than a keystroke still sees each result)."""
        profiles = self._server.profiles
        while True:
            revision = profiles.revision
            merged = await self._merged(result, state, revision, running=True)
            if self._targets.get(result.snapshot.target) is not state:
                return  # closed meanwhile: what it showed is cleared
            if profiles.revision == revision:
                break
            latest = snapshot_of(self._server, result.snapshot.target)
            if latest is None or not latest.same_input(result.snapshot):
                break
        self._publish(result, state, merged)
        state.published = result.snapshot.versions
        state.published_merge = (result, revision)

    def republish(self, uri: str) -> None:
        """Publish the diagnostics of ``uri`` again, merged with its profiles as they are now
        (a profile arrived or was cleared): from its latest analysis once the document's
        running work has ended, or from an analysis of its text now where there is none."""
        target = target_of(self._server, uri)
        if target is None:
            return
        task = asyncio.get_running_loop().create_task(self._republish(target))
        self._republishing.add(task)
        task.add_done_callback(self._republishing.discard)

    async def _republish(self, target: str) -> None:
        try:
            while True:
                latest = snapshot_of(self._server, target)
                if latest is None:
                    return
                state = self._target(target)
                if state.running is not None:
                    # an analysis ending merges the profiles as they are then; a republish
                    # or the recording of a first analysis's results is waited for
                    with contextlib.suppress(Exception):
                        await asyncio.shield(state.running[1])
                    continue
                result = state.result
                if result is None or not result.snapshot.same_input(latest):
                    self.schedule(target, delay_s=0)  # its analysis merges the profiles
                    return
                done = state.published_merge
                if (
                    done is not None
                    and done[0] is result
                    and done[1] == self._server.profiles.revision
                ):
                    return  # published with these profiles already
                future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
                state.running = (result.snapshot, future)
                try:
                    await self._publish_shown(result, state)
                finally:
                    future.set_result(result)
                    state.stop_running(future)
                return
        except Exception:
            logger.exception("publishing the profile of %s failed", target)

    def _publish(
        self, result: Result, state: _Target, merged: Sequence[Sequence[Merged]] | None
    ) -> None:
        """Publish ``result``'s findings, or ``merged``: those findings with the profiles'."""
        snapshot = result.snapshot
        if result.analyses is None:
            self._report_too_large(snapshot)
        codec = self._server.workspace.position_codec
        for index, (uri, text) in enumerate(zip(snapshot.uris, snapshot.texts, strict=True)):
            shown: Sequence[Finding | Merged]
            if merged is not None:
                shown = merged[index]
            else:
                shown = () if result.analyses is None else result.analyses[index].findings
            params = state.diagnostics.params_json(
                uri, snapshot.version_of(uri), text, shown, codec, lines=result.lines
            )
            self._server.protocol.notify_json(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, params)
        state.diagnostics.forget_unpublished()
        if snapshot.is_notebook:
            # cells deleted or turned into markdown keep no stale diagnostics
            published = set(snapshot.uris)
            for gone in state.cells - published:
                self.clear(gone)
            state.cells = published

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
        state = self._targets.pop(target, None)
        if state is not None and state.timer is not None:
            state.timer.cancel()
        self._too_large_reported.discard(target)
        for uri in {*uris, *(state.cells if state is not None else ())}:
            self.clear(uri)

    def shutdown(self) -> None:
        for state in self._targets.values():
            if state.timer is not None:
                state.timer.cancel()
        for task in self._republishing:
            task.cancel()
        self.pool.shutdown(wait=False, cancel_futures=True)


def _merged(
    result: Result,
    measured: Sequence[Mapping[int, MeasuredLine]],
    reuse: tuple[DocumentAnalyzer, ProbeMemo] | None,
) -> list[list[Merged]]:
    """Each text's findings, merged with the lines measured on it; with ``reuse``, the
    probes of a text document read its analysis's parse and what earlier versions probed."""
    from gpulens.profiler.measured import merge_measured

    snapshot = result.snapshot
    if result.analyses is None:
        return [[] for _ in snapshot.texts]
    probe = None
    if reuse is not None and any(measured):
        analyzer, memo = reuse
        parsed = parsed_text(snapshot, analyzer)
        if parsed is not None:
            probe = memo.probe(parsed, snapshot.config)
    return [
        merge_measured(
            analysis.findings,
            lines,
            text,
            snapshot.config,
            probe=probe,
            lines=None if probe is None else probe.lines,
        )
        for analysis, lines, text in zip(result.analyses, measured, snapshot.texts, strict=True)
    ]
