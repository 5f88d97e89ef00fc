"""Walking only the function being edited, and keeping every other finding as it was.

A keystroke inside a function body changes what that body's walk finds, and nothing else
unless the body changes what the rest of the walk reads. So, when a version is walked in
full, the walk keeps a `Trace` of the function whose block changed (the *target*): the
state of the walk just before the target (`WalkState`: the imports, classes, facts, what
callers pass, the class's attributes), what its walk did to the rest of the walk (its
calls, facts, attributes, imports and classes: its *effects*), and all the findings. The
next version that changes only that body (`walk_region`) puts the new body in the old
tree (the block is parsed and must equal the old tree with that body), walks it alone from
the kept state, and when its effects are the same as before, the findings are the old ones
with the target's replaced and those below it moved. Anything else falls back to the full
walk, which gives the same findings by definition.

What a body may read of the file beyond the state is covered too: a trace is not used
when the walk read the whole module before the functions (a rule at module level), when
any other function's walk could not be keyed (it read text no key holds), when the
target's returns were judged by anyone, or when its body's calls, mentions of Apple's GPU
or device choices (which every memo key holds) differ. The tests compare the result with a
fresh analysis over edit sequences, those that change what other functions read included.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpulens.analysis.incremental import fingerprint, first_line
from gpulens.analysis.model import Edit, Finding, Fix, Span
from gpulens.analysis.source import split_lines

if TYPE_CHECKING:
    from gpulens.analysis.config import Config
    from gpulens.analysis.context import Condition, ModuleFacts
    from gpulens.analysis.definitions import Definitions
    from gpulens.analysis.function_results import CallSites, Effects, FunctionResultsMixin
    from gpulens.analysis.incremental import FunctionMemo, _Block
    from gpulens.analysis.source import SourceText
    from gpulens.analysis.symbols import Scope
    from gpulens.analysis.values import Built, Judgment

Function = ast.FunctionDef | ast.AsyncFunctionDef
Pending = tuple["Condition", Finding]


@dataclass(slots=True)
class WalkState:
    """What a walk had read and bound just before it walked the target function."""

    aliases: dict[str, str]
    imports_version: int
    module_classes: set[str]
    loader_classes: set[str]
    step_classes: dict[str, str]
    facts: ModuleFacts
    file_facts: dict[tuple[object, ...], object]
    outside_reads: int
    call_sites: dict[str, CallSites]
    returns: dict[tuple[int, tuple[int, int, int]], Judgment]
    static: dict[str, Scope]
    groups: dict[int, int] | None
    enclosing: Scope  # the module's scope, or the class's (copied: methods bind into it)
    is_method: bool
    definitions: Definitions
    file_key: tuple[object, ...] | None
    judging: tuple[int, int, int]  # the state returns were judged in (`Evaluator.state`)

    @staticmethod
    def of(walker: FunctionResultsMixin, enclosing: Scope, is_method: bool) -> WalkState:
        from gpulens.analysis.context import ModuleFacts
        from gpulens.analysis.function_results import CallSites
        from gpulens.analysis.symbols import Scope

        ctx, evaluator = walker.ctx, walker.evaluator
        facts = ctx.facts
        if enclosing.kind == "class":
            scope = Scope(enclosing.kind, enclosing.name, enclosing.parent)
            scope.bindings = dict(enclosing.bindings)
            scope.state = dict(enclosing.state)
            enclosing = scope
        return WalkState(
            aliases=dict(ctx.imports.aliases),
            imports_version=ctx.imports.version,
            module_classes=set(evaluator.module_classes),
            loader_classes=set(evaluator.loader_classes),
            step_classes=dict(evaluator.step_classes),
            facts=ModuleFacts(facts.uses_gpu, facts.reduced_precision, set(facts.device_names)),
            file_facts=dict(ctx.file_facts),
            outside_reads=ctx.outside_reads,
            call_sites={
                name: CallSites(dict(sites.arguments), sites.hot_call, sites.guessed)
                for name, sites in walker.call_sites.items()
            },
            returns=dict(evaluator._returns),
            static=dict(evaluator._static),
            groups=evaluator._groups,
            enclosing=enclosing,
            is_method=is_method,
            definitions=walker.definitions,
            file_key=walker._file_key,
            judging=evaluator.state(),
        )


class Trace:
    """What a full walk keeps of its target function for the next version (see the module
    docstring). Filled by the walker: `capture` and `target_walked` around the target,
    `walked` at the end."""

    def __init__(self, target: Function) -> None:
        from gpulens.analysis.context import ModuleFacts

        self.target = target
        self.state: WalkState | None = None
        self.effects: Effects | None = None
        self.findings = (0, 0)  # the target's slice of `raw_findings`
        self.pending = (0, 0)  # and of `raw_pending`
        # outside reads of the module-level walk (None until the first function is walked)
        self.module_reads: int | None = None
        self.unkeyed = 0  # other functions whose walk no key covers
        self.raw_findings: list[Finding] = []  # before the pending ones are borne out
        self.raw_pending: list[Pending] = []
        # the lines each raw finding's places lie on (`extent`)
        self.extents: list[tuple[int, int]] = []
        self.pending_extents: list[tuple[int, int]] = []
        self.facts = ModuleFacts()
        self.judged: frozenset[int] = frozenset()  # ids of the functions whose returns were read
        self.judgments: dict[tuple[int, int, int], tuple[object, object, object, object]] = {}
        self.aliases: frozenset[str] = frozenset()  # see `walked`
        self.notes: list[str] = []

    def capture(self, walker: FunctionResultsMixin, enclosing: Scope, is_method: bool) -> None:
        self.state = WalkState.of(walker, enclosing, is_method)
        self._start = (len(walker.ctx.findings), len(walker.ctx.pending))

    def target_walked(self, effects: Effects, findings: int, pending: int) -> None:
        self.effects = effects
        self.findings = (self._start[0], self._start[0] + findings)
        self.pending = (self._start[1], self._start[1] + pending)

    def walked(self, walker: FunctionResultsMixin, notes: list[str]) -> None:
        from gpulens.analysis.context import ModuleFacts

        ctx, evaluator = walker.ctx, walker.evaluator
        self.raw_findings = list(ctx.findings)
        self.raw_pending = list(ctx.pending)
        self.extents = list(map(extent, self.raw_findings))
        self.pending_extents = [extent(finding) for _, finding in self.raw_pending]
        self.facts = ModuleFacts(ctx.facts.uses_gpu, ctx.facts.reduced_precision)
        self.judged = frozenset(key[0] for key in evaluator._returns)
        # what the target returns, as callers' keys hold it, in each state it was judged in
        self.judgments = {
            key[1]: (fingerprint(found[0]), _parts(found[1]), found[2], _built(found[3]))
            for key, found in evaluator._returns.items()
            if key[0] == id(self.target)
        }
        self.notes = list(notes)
        if self.state is not None:
            # the local names a device-choosing call may go by (`from torch import device`)
            self.aliases = frozenset(
                local
                for aliases in (self.state.aliases, ctx.imports.aliases)
                for local, target in aliases.items()
                if target.endswith("is_available") or target == "torch.device"
            )
            if self.state.groups is None:  # found later in the walk: the same for the target
                self.state.groups = evaluator._groups

    @property
    def usable(self) -> bool:
        """Whether the next version may walk the target alone."""
        return (
            self.state is not None
            and self.effects is not None
            and self.module_reads == 0
            and self.unkeyed == 0
            and not self.notes
            and all(state == self.state.judging for state in self.judgments)
        )


@dataclass(slots=True)
class LastWalk:
    """The last version analysed, with the trace of its target."""

    text: str
    lines: list[str]  # its lines (BlockParser.lines)
    trace: Trace
    order: list[tuple[int, tuple[str, int], _Block]]  # its blocks (BlockParser.order)
    block: int  # the target's block, an index of ``order``
    path: tuple[int, ...]  # the target in its block: () the block's def, (j,) its j-th method
    shown: list[Finding]  # the findings it showed (`engine.shown`)


def target_of(
    before: list[tuple[int, tuple[str, int], _Block]],
    after: list[tuple[int, tuple[str, int], _Block]],
) -> tuple[int, tuple[int, ...], Function] | None:
    """The function an edit changed, when it changed the body of one function (a def of
    the module, or a method of one of its classes) and nothing else: its block's index in
    ``after``, its path in the block, and its node."""
    if len(before) != len(after):
        return None
    changed = [
        i for i, (old, new) in enumerate(zip(before, after, strict=True)) if old[2] is not new[2]
    ]
    if len(changed) != 1:
        return None
    index = changed[0]
    first, key, block = after[index]
    span = _changed_lines(before[index][1][0], key[0])
    if span is None:
        return None
    located = function_around(block.tree, first + span[0], first + span[2])
    if located is None:
        return None
    return index, located[0], located[1]


def _changed_lines(old: str, new: str) -> tuple[int, int, int] | None:
    """The lines (relative) an edit replaced: (first, end in ``old``, end in ``new``)."""
    old_lines, new_lines = split_lines(old), split_lines(new)
    limit = min(len(old_lines), len(new_lines))
    prefix = 0
    while prefix < limit and old_lines[prefix] == new_lines[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < limit - prefix
        and old_lines[len(old_lines) - 1 - suffix] == new_lines[len(new_lines) - 1 - suffix]
    ):
        suffix += 1
    if prefix == len(old_lines) == len(new_lines):
        return None  # the same text
    return prefix, len(old_lines) - suffix, len(new_lines) - suffix


def function_around(
    tree: ast.Module, first: int, end: int
) -> tuple[tuple[int, ...], Function] | None:
    """The def whose body holds lines ``first``..``end`` (0-based, end excluded) of the
    file, with its path in the block: the block's own def, or a method of its class. The
    blank lines and comments after a def's last statement are its own too."""
    if len(tree.body) != 1:
        return None
    top = tree.body[0]
    if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef):
        return ((), top) if _holds(top, first, end, _ANYWHERE) else None
    if not isinstance(top, ast.ClassDef):
        return None
    for index, statement in enumerate(top.body):
        if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        later = top.body[index + 1 :]
        limit = first_line(later[0]) - 1 if later else _ANYWHERE
        if _holds(statement, first, end, limit):
            return (index,), statement
    return None


_ANYWHERE = 1 << 62


def _holds(function: Function, first: int, end: int, limit: int) -> bool:
    """Whether lines ``first``..``end`` lie in the function's body, after its header (the
    lines up to ``limit``, 0-based exclusive, follow its last statement)."""
    body_first = function.body[0].lineno - 1
    return body_first > function.lineno - 1 and body_first <= first and end <= limit


def function_at(tree: ast.Module, path: tuple[int, ...]) -> Function | None:
    """The def at ``path`` of a block (see `function_around`)."""
    node: ast.AST = tree.body[0] if len(tree.body) == 1 else None  # type: ignore[assignment]
    for index in path:
        body = getattr(node, "body", None)
        if not isinstance(body, list) or index >= len(body):
            return None
        node = body[index]
    return node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None


def graft(old_tree: ast.Module, new_tree: ast.Module, path: tuple[int, ...]) -> bool:
    """Makes ``old_tree`` (an earlier parse of a block) equal to ``new_tree`` (its parse
    now, which differs in the body of the function at ``path``) by moving the new body into
    the old function, so that every other node keeps its identity. False (and ``old_tree``
    of no further use) where the two differ in anything else."""
    old, new = function_at(old_tree, path), function_at(new_tree, path)
    if old is None or new is None or type(old) is not type(new):
        return False
    delta = (new.end_lineno or new.lineno) - (old.end_lineno or old.lineno)
    old.body = new.body
    old.end_lineno, old.end_col_offset = new.end_lineno, new.end_col_offset
    if path:  # a method: the class's later statements move, and the class ends elsewhere
        from gpulens.analysis.incremental import shift_lines

        owner, new_owner = old_tree.body[0], new_tree.body[0]
        for statement in owner.body[path[0] + 1 :]:  # type: ignore[attr-defined]
            shift_lines(statement, delta)
        owner.end_lineno, owner.end_col_offset = new_owner.end_lineno, new_owner.end_col_offset
    # the body is the same list in both now: all else must be equal (the body is left out
    # of the comparison, which would only read it twice)
    body = old.body
    old.body = new.body = []
    try:
        dump = ast.dump
        return dump(old_tree, include_attributes=True) == dump(new_tree, include_attributes=True)
    finally:
        old.body = new.body = body


def reaches(text: str, definitions: Definitions, owner: str | None) -> tuple[frozenset[str], ...]:
    """What of a function's text the order of the walk and the file's recursions are read
    from (`call_order.callers_first`, `definitions.recursive_groups`): the file's names it
    calls, those it calls only on what the instance holds, the file's functions it mentions,
    and its class's methods it names on self."""
    from gpulens.analysis.call_order import held_calls_only
    from gpulens.analysis.definitions import _SELF_ATTRIBUTE, _WORD
    from gpulens.analysis.incremental import CALLED

    functions = frozenset(definitions.functions)
    names = functions | frozenset(definitions.classes) | frozenset(definitions.defining)
    methods = frozenset(definitions.methods_of(owner)) if owner is not None else frozenset()
    called = frozenset(CALLED.findall(text)) & names
    return (
        called,
        held_calls_only(called, text),
        frozenset(_WORD.findall(text)) & functions,
        frozenset(_SELF_ATTRIBUTE.findall(text)) & methods,
    )


def changed_region(before: str, after: str, first: int) -> tuple[int, int, int] | None:
    """The file lines an edit of a block starting at line ``first`` replaced: (first, end
    before, end after)."""
    span = _changed_lines(before, after)
    if span is None:
        return None
    return first + span[0], first + span[1], first + span[2]


def move(finding: Finding, end: int, delta: int) -> Finding:
    """``finding`` with every place at or below line ``end`` (before the edit) moved
    ``delta`` lines."""
    if not delta:
        return finding
    spans = [finding.span, *(edit.span for fix in finding.fixes for edit in fix.edits)]
    if all(span.line < end and span.end_line < end for span in spans):
        return finding
    return replace(
        finding,
        span=_moved(finding.span, end, delta),
        fixes=tuple(
            Fix(
                fix.title,
                tuple(Edit(_moved(e.span, end, delta), e.new_text) for e in fix.edits),
                fix.safe,
            )
            for fix in finding.fixes
        ),
    )


def _moved(span: Span, end: int, delta: int) -> Span:
    line = span.line + delta if span.line >= end else span.line
    end_line = span.end_line + delta if span.end_line >= end else span.end_line
    return Span(line, span.column, end_line, span.end_column)


def walk_region(
    last: LastWalk,
    source: SourceText,
    tree: ast.Module,
    *,
    repaired: frozenset[int],
    config: Config,
    memo: FunctionMemo,
    region: tuple[int, int, int],
) -> Change | None:
    """Walks the body of the last trace's target in a version that changed only it
    (grafted into ``tree`` already), and keeps the other findings in the trace; None
    where its walk does not leave the rest of the walk as it was."""
    from gpulens.analysis.context import Context, ModuleFacts, borne_out
    from gpulens.analysis.function_results import CallSites
    from gpulens.analysis.walker import _Walker

    trace = last.trace
    state = trace.state
    assert state is not None
    ctx = Context(source, config, tree)
    ctx.imports.aliases = dict(state.aliases)
    ctx.imports.version = state.imports_version
    facts = state.facts
    ctx.facts = ModuleFacts(facts.uses_gpu, facts.reduced_precision, set(facts.device_names))
    ctx.file_facts = dict(state.file_facts)
    ctx.outside_reads = state.outside_reads
    walker = _Walker(ctx, memo, state.definitions, repaired)
    evaluator = walker.evaluator
    evaluator.scope = state.enclosing.module()
    evaluator.module_classes = set(state.module_classes)
    evaluator.loader_classes = set(state.loader_classes)
    evaluator.step_classes = dict(state.step_classes)
    evaluator._returns = dict(state.returns)
    evaluator._static = dict(state.static)
    evaluator._groups = state.groups
    walker.call_sites = _CallSitesCopied(state.call_sites, CallSites)  # type: ignore[assignment]
    walker._file_key = state.file_key
    enclosing = state.enclosing
    if enclosing.kind == "class":  # the attributes as they were: the walk binds its own
        from gpulens.analysis.symbols import Scope

        scope = Scope(enclosing.kind, enclosing.name, enclosing.parent)
        scope.bindings = dict(enclosing.bindings)
        scope.state = dict(enclosing.state)
        enclosing = scope
    if trace.judgments:
        # what the target returns is read elsewhere: it must read the same now
        target_id = id(trace.target)
        evaluator._returns = {k: v for k, v in evaluator._returns.items() if k[0] != target_id}
        judged = (
            fingerprint(evaluator.returned(trace.target)),
            _parts(evaluator.returned_parts(trace.target)),
            evaluator.host_reads(trace.target),
            _built(evaluator.records_built(trace.target)),
        )
        if trace.judgments != {evaluator.state(): judged}:
            return None
    try:
        effects, findings, pending = walker.walk_target(trace.target, enclosing, state.is_method)
    finally:
        walker.release()
    if effects != trace.effects:
        return None
    fresh = ctx.findings[:findings]
    fresh_pending = ctx.pending[:pending]
    old = trace.raw_findings[trace.findings[0] : trace.findings[1]]
    old_pending = trace.raw_pending[trace.pending[0] : trace.pending[1]]
    spliced = _splice(trace.raw_findings, trace.extents, trace.findings, fresh, region)
    spliced_pending = _splice(
        [finding for _, finding in trace.raw_pending],
        trace.pending_extents,
        trace.pending,
        [finding for _, finding in fresh_pending],
        region,
    )
    if spliced is None or spliced_pending is None:
        return None
    start, start_p = trace.findings[0], trace.pending[0]
    conditions = [condition for condition, _ in trace.raw_pending]
    conditions[trace.pending[0] : trace.pending[1]] = [c for c, _ in fresh_pending]
    trace.raw_findings, trace.extents = spliced
    trace.raw_pending = list(zip(conditions, spliced_pending[0], strict=True))
    trace.pending_extents = spliced_pending[1]
    trace.findings = (start, start + findings)
    trace.pending = (start_p, start_p + pending)
    return Change(
        [*old, *borne_out(old_pending, trace.facts)],
        [*fresh, *borne_out(fresh_pending, trace.facts)],
        moved=region[2] != region[1],
        # whether "hard-coded often" holds changed: other functions' pending findings too
        recounted=_hard_coded(old_pending) != _hard_coded(fresh_pending),
    )


@dataclass(slots=True)
class Change:
    """What a walk of the target changed: its findings before and after (the pending ones
    the file bears out included), whether the findings below it moved, and whether the
    others' pending findings may now be borne out otherwise."""

    before: list[Finding]
    after: list[Finding]
    moved: bool
    recounted: bool


def _hard_coded(pending: list[Pending]) -> int:
    from gpulens.analysis.context import Condition

    return sum(condition is Condition.MANY_HARD_CODED_DEVICES for condition, _ in pending)


def reshown(
    shown_before: list[Finding], change: Change, source: SourceText, config: Config
) -> list[Finding] | None:
    """The findings shown after a walk of the target: those shown before less the
    target's, with the target's new ones in their places; None where only showing them
    all again can tell (findings moved, a severity configured, a tie in the order)."""
    from bisect import bisect_left, bisect_right

    from gpulens.analysis.engine import shown

    if change.moved or change.recounted or config.severity:
        return None
    gone = {id(finding) for finding in change.before}
    kept = [finding for finding in shown_before if id(finding) not in gone]
    others = [(f.span.line, f.span.column, f.code) for f in kept]
    keys = list(others)
    for finding in shown(change.after, source, config):  # in their order, ties included
        key = (finding.span.line, finding.span.column, finding.code)
        at = bisect_left(others, key)
        if at < len(others) and others[at] == key:
            return None  # a tie with another function's: the full sort keeps the walk's order
        at = bisect_right(keys, key)
        keys.insert(at, key)
        kept.insert(at, finding)
    return kept


def extent(finding: Finding) -> tuple[int, int]:
    """The first and last line any place of ``finding`` (its span, its fixes' edits) is on."""
    spans = [finding.span, *(edit.span for fix in finding.fixes for edit in fix.edits)]
    return min(span.line for span in spans), max(span.end_line for span in spans)


def _splice(
    findings: list[Finding],
    extents: list[tuple[int, int]],
    target: tuple[int, int],
    fresh: list[Finding],
    region: tuple[int, int, int],
) -> tuple[list[Finding], list[tuple[int, int]]] | None:
    """``findings`` with the target's slice replaced by ``fresh`` and the others moved below
    the edit; None where one of the others lies in (or across) the lines it replaced."""
    first, end, after = region
    delta = after - end
    start, stop = target
    others = extents[:start] + extents[stop:]
    if any(low < end and high >= first for low, high in others):
        return None
    kept, kept_extents = findings[:start], extents[:start]
    later, later_extents = findings[stop:], extents[stop:]
    if delta:
        kept = [move(f, end, delta) for f in kept]
        later = [move(f, end, delta) for f in later]
        kept_extents = list(map(extent, kept))
        later_extents = list(map(extent, later))
    return (
        [*kept, *fresh, *later],
        [*kept_extents, *map(extent, fresh), *later_extents],
    )


def _parts(parts: object) -> object:
    return None if parts is None else tuple(map(fingerprint, parts))  # type: ignore[call-overload]


def findings_of(trace: Trace) -> list[Finding]:
    """What the walk gives at its end: the findings, then the pending ones the file bears out."""
    from gpulens.analysis.context import borne_out

    return [*trace.raw_findings, *borne_out(trace.raw_pending, trace.facts)]


class _CallSitesCopied(dict):  # type: ignore[type-arg]
    """What callers passed each function, as kept in a walk state: an entry is copied the
    first time the walk reads or changes it, so the state stays as it was for the next."""

    def __init__(self, base: dict[str, CallSites], make: type[CallSites]) -> None:
        super().__init__()
        self._base = base
        self._make = make

    def __missing__(self, key: str) -> CallSites:
        found = self._base.get(key)
        sites = (
            self._make()
            if found is None
            else self._make(dict(found.arguments), found.hot_call, found.guessed)
        )
        self[key] = sites
        return sites

    def get(self, key: str, default: object = None) -> object:
        if dict.__contains__(self, key) or key in self._base:
            return self[key]
        return default


def _built(built: Built) -> tuple[tuple[str, str, object], ...]:
    """What a function builds records with, as the walks of the bodies that read their
    fields see it."""
    return tuple((cls, name, fingerprint(value)) for cls, name, value in built)
