"""Code actions: quick-fixes bound to their diagnostics, "Suppress GPUxxx on this line",
`source.fixAll.gpulens` (VS Code's fix on save asks for it), the selection refactors as
`refactor.rewrite`, and "Measure this fix" (`quickfix.gpulens.measure`) on each fix of a file
that can be profiled: a command (`gpulens.measureFix`, `lsp.measure_fix`) that runs nothing
until the user picks it.

The findings are those shown: the analysis's, merged with what a profile measured on the
document (a sync the profile found brings the analysis's fix for it).

Fixes are applied as `gpulens check --fix` applies them (`analysis.edits`): a quick-fix is
offered only if its edits leave the file parsing, and fix-all takes each fix whole or not at
all, round after round. The actions are built in a worker thread from the latest analysis:
the checks, the fix-all rounds and the refactors parse the text again, which must not hold
up the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from gpulens.analysis import Analysis, Edit, Finding, Fix, Span
from gpulens.analysis.config import suppression_edit
from gpulens.lsp.convert import (
    SOURCE,
    SOURCES,
    LineIndex,
    edits_to_text_edits,
    merged_to_diagnostic,
    minimal_replacement,
    workspace_edit,
)
from gpulens.lsp.documents import Snapshot, analyse
from gpulens.lsp.trust import may_profile

if TYPE_CHECKING:
    from gpulens.lsp.server import GpulensServer
    from gpulens.profiler.measured import Merged

logger = logging.getLogger(__name__)

QUICK_FIX = types.CodeActionKind.QuickFix.value
REFACTOR = types.CodeActionKind.RefactorRewrite.value
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"
MEASURE = f"{QUICK_FIX}.{SOURCE}.measure"
KINDS = [QUICK_FIX, REFACTOR, FIX_ALL, MEASURE]
FIX_ALL_TITLE = "Fix all gpulens problems"
MEASURE_FIX = "gpulens.measureFix"


def wanted(kind: str, only: Sequence[str] | None) -> bool:
    """Whether ``kind`` is asked for: `only` entries are kind prefixes (`source` asks for
    `source.fixAll.gpulens`)."""
    if not only:
        return True
    prefixes = [str(getattr(entry, "value", entry)) for entry in only]
    return any(kind == prefix or kind.startswith(prefix + ".") for prefix in prefixes)


@dataclass(frozen=True, slots=True)
class ActionRequest:
    snapshot: Snapshot
    index: int  # which text of the snapshot the request is about
    analysis: Analysis
    selection: types.Range
    only: Sequence[str] | None
    client_diagnostics: Sequence[types.Diagnostic]
    codec: PositionCodec
    versioned_edits: bool
    # the client can fill in an action's edit later (codeAction/resolve): the costly
    # fix-all is then computed only when the user picks it
    resolves_edits: bool = False
    # where the text's top-level statements start, if its analysis parsed them all
    statement_starts: tuple[int, ...] | None = None
    # the analyses of every text of the snapshot (a notebook's cells), ``analysis`` among them
    analyses: Sequence[Analysis] = ()
    # the findings shown for the text: ``analysis``'s, with a profile's figures merged in
    merged: Sequence[Merged] = ()
    # the text is a file the user may profile: "Measure this fix" is offered
    measurable: bool = False

    @property
    def shown(self) -> Sequence[Merged]:
        if self.merged:
            return self.merged
        from gpulens.profiler.measured import ORIGIN_ANALYSIS, Merged

        return [Merged(f, ORIGIN_ANALYSIS, False) for f in self.analysis.findings]

    @property
    def uri(self) -> str:
        return self.snapshot.uris[self.index]

    @property
    def text(self) -> str:
        return self.snapshot.texts[self.index]

    @property
    def version(self) -> int | None:
        return self.snapshot.version_of(self.uri)


def build_actions(request: ActionRequest) -> list[types.CodeAction]:
    """Every action that applies at the request's selection, in menu order."""
    from gpulens.analysis.edits import first_safe_fix

    index = LineIndex(request.text, request.codec)
    selection = index.range_to_span(request.selection)
    here = [m for m in request.shown if m.finding.span.overlaps(selection)]
    actions: list[types.CodeAction] = []
    measure = request.measurable and wanted(MEASURE, request.only)
    applicable = (
        [_applicable(request, m.finding) for m in here]
        if wanted(QUICK_FIX, request.only) or measure
        else []
    )
    if wanted(QUICK_FIX, request.only):
        actions.extend(_quick_fixes(request, index, here, applicable))
        actions.extend(_suppressions(request, index, here))
    if measure:
        actions.extend(_measure_fixes(request, index, here, applicable))
    # The light bulb asks at every cursor move with an empty range; the refactors parse the
    # whole file, so they are offered for a selection or when asked for by kind.
    selected = selection.start != selection.end
    if wanted(REFACTOR, request.only) and (selected or request.only):
        actions.extend(_refactors(request, index, selection))
    if request.only and wanted(FIX_ALL, request.only):
        action = _fix_all(request, index)
        if action is not None:
            actions.append(action)
    elif not request.only and request.resolves_edits:
        # the light bulb lists fix-all once there is more than one fix; its edit comes later
        fixable = sum(1 for f in request.analysis.findings if first_safe_fix(f) is not None)
        if fixable > 1:
            actions.append(
                types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL, data={"uri": request.uri})
            )
    return actions


def _edit(request: ActionRequest, index: LineIndex, edits: Sequence[Edit]) -> types.WorkspaceEdit:
    return workspace_edit(
        request.uri, request.version, edits_to_text_edits(edits, index), request.versioned_edits
    )


def _diagnostic(request: ActionRequest, index: LineIndex, merged: Merged) -> types.Diagnostic:
    """The client's copy of the finding's diagnostic when it sent one, else ours."""
    ours = merged_to_diagnostic(merged, index)
    for theirs in request.client_diagnostics:
        if theirs.source in SOURCES and theirs.code == ours.code and theirs.range == ours.range:
            return theirs
    return ours


def _applicable(request: ActionRequest, finding: Finding) -> list[Fix]:
    """The finding's fixes that leave the text parsing (one that does not is a bug of its
    rule, and is not offered)."""
    from gpulens.analysis.edits import apply_fixes

    cell = request.snapshot.is_notebook
    return [
        fix
        for fix in finding.fixes
        if apply_fixes(
            request.text, [fix], cell=cell, statement_starts=request.statement_starts
        ).applied
    ]


def _quick_fixes(
    request: ActionRequest,
    index: LineIndex,
    found: Sequence[Merged],
    applicable: Sequence[Sequence[Fix]],
) -> list[types.CodeAction]:
    from gpulens.analysis.edits import first_safe_fix

    actions = []
    for merged, fixes in zip(found, applicable, strict=True):
        preferred = first_safe_fix(merged.finding)
        for fix in fixes:
            actions.append(
                types.CodeAction(
                    title=fix.title,
                    kind=QUICK_FIX,
                    diagnostics=[_diagnostic(request, index, merged)],
                    edit=_edit(request, index, fix.edits),
                    is_preferred=True if fix is preferred else None,
                )
            )
    return actions


def _measure_fixes(
    request: ActionRequest,
    index: LineIndex,
    found: Sequence[Merged],
    applicable: Sequence[Sequence[Fix]],
) -> list[types.CodeAction]:
    """ "Measure this fix" for each fix offered here: a command, run only when picked."""
    actions = []
    for merged, fixes in zip(found, applicable, strict=True):
        finding = merged.finding
        for fix in fixes:
            arguments = {
                "uri": request.uri,
                "line": finding.span.line,
                "code": finding.code,
                "title": fix.title,
            }
            actions.append(
                types.CodeAction(
                    title=f"Measure this fix: {fix.title}",
                    kind=MEASURE,
                    diagnostics=[_diagnostic(request, index, merged)],
                    command=types.Command(
                        title=f"Measure this fix: {fix.title}",
                        command=MEASURE_FIX,
                        arguments=[arguments],
                    ),
                )
            )
    return actions


def _suppressions(
    request: ActionRequest, index: LineIndex, found: Sequence[Merged]
) -> list[types.CodeAction]:
    actions = []
    done: set[tuple[str, int]] = set()
    for merged in found:
        finding = merged.finding
        line = finding.span.line
        # a comment after a line continuation would end the statement there
        if index.lines[line].rstrip("\r\n").endswith("\\"):
            line = finding.span.end_line
        if (finding.code, line) in done or line >= len(index.lines):
            continue
        done.add((finding.code, line))
        edit = suppression_edit(index.lines[line], line, finding.code)
        actions.append(
            types.CodeAction(
                title=f"Suppress {finding.code} on this line",
                kind=QUICK_FIX,
                diagnostics=[_diagnostic(request, index, merged)],
                edit=_edit(request, index, [edit]),
            )
        )
    return actions


def _refactors(request: ActionRequest, index: LineIndex, selection: Span) -> list[types.CodeAction]:
    from gpulens.analysis.refactors import refactors_for

    try:
        fixes = refactors_for(request.text, selection, request.snapshot.config.device)
    except Exception:  # one broken refactor must not take the quick-fixes down with it
        logger.exception("refactors failed for %s", request.uri)
        return []
    return [
        types.CodeAction(title=fix.title, kind=REFACTOR, edit=_edit(request, index, fix.edits))
        for fix in fixes
    ]


def fixed_text(snapshot: Snapshot, position: int, analyses: Sequence[Analysis]) -> str:
    """The text at ``position`` after fix-all: the first safe fix of every finding, round
    after round until nothing changes, as `gpulens check --fix` makes it."""
    from gpulens.analysis.edits import fix_until_stable
    from gpulens.analysis.incremental import DocumentAnalyzer

    analyzer = DocumentAnalyzer()  # each round's text differs from the last in a few lines

    def reanalyze(texts: list[str]) -> list[Analysis]:
        found = analyse(snapshot.with_texts(texts), analyzer)
        return [Analysis([]) for _ in texts] if found is None else found

    fixed = fix_until_stable(
        snapshot.texts, analyses, reanalyze, cells=snapshot.is_notebook, only=position
    )
    return fixed.texts[position]


def _fix_all(request: ActionRequest, index: LineIndex) -> types.CodeAction | None:
    analyses = request.analyses or [request.analysis]
    after = fixed_text(request.snapshot, request.index, analyses)
    if after == request.text:
        return None
    edit = minimal_replacement(request.text, after)
    return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL, edit=_edit(request, index, [edit]))


def _versioned_edits(ls: GpulensServer) -> bool:
    workspace = ls.client_capabilities.workspace
    edit = None if workspace is None else workspace.workspace_edit
    return bool(edit and edit.document_changes)


def _resolves_edits(ls: GpulensServer) -> bool:
    document = ls.client_capabilities.text_document
    code_action = None if document is None else document.code_action
    support = None if code_action is None else code_action.resolve_support
    return bool(support and "edit" in support.properties)


async def _request_for(
    ls: GpulensServer,
    uri: str,
    selection: types.Range,
    only: Sequence[str] | None,
    client_diagnostics: Sequence[types.Diagnostic],
) -> ActionRequest | None:
    result = await ls.diagnostics.current(uri)
    if result is None:
        return None
    found = result.analysis_of(uri)
    position = result.snapshot.index_of(uri)
    if found is None or position is None:
        return None
    shown = await ls.diagnostics.shown(result)
    measurable = (
        not result.snapshot.is_notebook
        and uri.startswith("file:")
        and may_profile(ls.settings.workspace_trusted)
    )
    return ActionRequest(
        snapshot=result.snapshot,
        index=position,
        analysis=found[1],
        selection=selection,
        only=only,
        client_diagnostics=client_diagnostics,
        codec=ls.workspace.position_codec,
        versioned_edits=_versioned_edits(ls),
        resolves_edits=_resolves_edits(ls),
        statement_starts=result.statement_starts,
        analyses=result.analyses or (),
        merged=shown[position],
        measurable=measurable,
    )


def register(server: GpulensServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True),
    )
    async def code_action(
        ls: GpulensServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        context = params.context
        request = await _request_for(
            ls, params.text_document.uri, params.range, context.only, context.diagnostics
        )
        if request is None:
            return None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(ls.diagnostics.pool, build_actions, request)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def resolve_code_action(ls: GpulensServer, action: types.CodeAction) -> types.CodeAction:
        data = action.data
        uri = data.get("uri") if isinstance(data, dict) else getattr(data, "uri", None)
        if action.kind != FIX_ALL or not isinstance(uri, str) or action.edit is not None:
            return action
        everything = types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
        )
        request = await _request_for(ls, uri, everything, [FIX_ALL], [])
        if request is None:
            return action
        loop = asyncio.get_running_loop()
        resolved = await loop.run_in_executor(ls.diagnostics.pool, build_actions, request)
        # nothing left to fix (the text changed since): an empty edit, never a stale one
        action.edit = resolved[0].edit if resolved else types.WorkspaceEdit(changes={})
        return action
