"""Reusing a function body's results from an earlier version of the same document.

The walker asks `function_body` to walk each function; with a memo it first looks for a
result recorded under a key of everything the body's walk reads from outside the body, and
replays it (findings, pending findings, what the body passes to other functions, the facts,
`self.x` attributes, imports and module, loader and step classes it sets) instead of walking.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpulens.analysis.incremental import (
    FunctionMemo,
    FunctionResult,
    MemoKey,
    fingerprint,
    first_line,
    shift_finding,
    within,
)
from gpulens.analysis.rules.sync import mentions_mps, module_loggers
from gpulens.analysis.rules.timing import chooses_only_cuda
from gpulens.analysis.symbols import Kind, Scope, Value
from gpulens.analysis.values import record_field_names

if TYPE_CHECKING:
    from gpulens.analysis.context import Context
    from gpulens.analysis.definitions import Definitions
    from gpulens.analysis.project import ModuleLinks
    from gpulens.analysis.regions import Trace
    from gpulens.analysis.values import Evaluator

Function = ast.FunctionDef | ast.AsyncFunctionDef
# values that name a def of the file: its identity matters (what it returns, whose it is)
_NAMED = (Kind.FUNCTION, Kind.CLASS, Kind.INSTANCE)
Judgment = tuple[Function, tuple[int, int, int]]
# what a function body's walk does to the rest of the walk (`effects_of`)
Effects = tuple[object, ...]
Call = tuple[str, tuple[tuple[int | str, Value | None], ...], str | None]


@dataclass(slots=True)
class CallSites:
    """What the file passes to one of its functions, and whether it does so in a loop."""

    arguments: dict[int | str, Value | None] = field(default_factory=dict)
    hot_call: str | None = None  # "the loop that calls train_step()"
    # every call reaches it only if a guess holds (an object of unknown class, or a caller
    # that is itself a guess): what its body finds is likely, not proven
    guessed: bool = False


@dataclass(slots=True)
class Recording:
    """What walking one function body adds to the file's results, as it happens."""

    findings: int  # len(ctx.findings) at the start
    pending: int
    uses_gpu: bool
    reduced_precision: bool
    self_bindings: dict[str, Value | None]
    aliases: dict[str, str]  # the imports' bindings at the start
    module_classes: frozenset[str]
    loader_classes: frozenset[str]
    step_classes: dict[str, str]
    outside_reads: int
    # what the file's functions return, as the key holds it: the judgments read from here
    # on must be among ``covered`` (or of functions the body defines, judged in the state
    # the key was taken in)
    judgments: int  # len(evaluator.judgments_read) at the start
    covered: frozenset[Judgment]
    state: tuple[int, int, int]  # the evaluator's state when the key was taken
    calls: list[tuple[str, tuple[tuple[int | str, Value | None], ...], str | None]] = field(
        default_factory=list
    )


class FunctionResultsMixin:
    """The memo half of the walker: what it needs of the walker is declared here."""

    ctx: Context
    evaluator: Evaluator
    memo: FunctionMemo | None
    repaired: frozenset[int]  # lines whose parse is not their text
    call_sites: dict[str, CallSites]
    definitions: Definitions
    _recordings: list[Recording]
    _looked_up: dict[tuple[int, int], tuple[Scope, dict[str, tuple[object, Value | None]]]]
    _devices: dict[int, tuple[Scope, tuple[str, ...]]]
    _file_key: tuple[object, ...] | None
    _shared_key: tuple[tuple[object, ...], tuple[object, ...]] | None
    trace: Trace | None
    links: ModuleLinks | None  # where calls into the project's other modules go
    # what the functions of the other modules the file calls return: (module, key) -> value
    project_returned: dict[tuple[str, str], Value]
    helper_root: str

    def walk_function(
        self, function: Function, enclosing: Scope, is_method: bool, sites: CallSites | None
    ) -> None:
        raise NotImplementedError

    def merge_call(
        self, name: str, arguments: tuple[tuple[int | str, Value | None], ...], hot_call: str | None
    ) -> None:
        raise NotImplementedError

    def sites_of(self, function: Function, scope: Scope, is_method: bool) -> CallSites | None:
        raise NotImplementedError

    def text_of(self, function: Function) -> str:
        raise NotImplementedError

    def function_body(self, function: Function, enclosing: Scope, is_method: bool) -> None:
        trace = self.trace
        if trace is not None and not self._recordings:  # a function of the module's level
            if trace.module_reads is None:
                trace.module_reads = self.ctx.outside_reads
            if function is trace.target:
                trace.capture(self, enclosing, is_method)
                trace.target_walked(*self.walk_target(function, enclosing, is_method))
                return
        sites = self.sites_of(function, enclosing, is_method)
        first = first_line(function) - 1
        last = (function.end_lineno or function.lineno) - 1
        if self.memo is None or any(first <= line <= last for line in self.repaired):
            # a repaired body was walked as other text than its own: its text cannot key it
            self.walk_function(function, enclosing, is_method, sites)
            return
        judged = len(self.evaluator.judgments_read)
        key = self.memo_key(function, enclosing, is_method, sites)
        cached = self.memo.results.get(key)
        if cached is not None:
            self.memo.used[key] = cached
            self.replay(cached, first, enclosing)
            return
        recording = self.recording(enclosing, judged)
        self._recordings.append(recording)
        try:
            self.walk_function(function, enclosing, is_method, sites)
        finally:
            self._recordings.pop()
        result = self.result_of(recording, first, last, enclosing)
        if result is not None:
            self.memo.results[key] = result
            self.memo.used[key] = result
        elif trace is not None and not self._recordings:
            trace.unkeyed += 1  # what it read is not all in a key: it may read any text

    def recording(self, enclosing: Scope, judged: int) -> Recording:
        """A recording of what a body's walk adds, from now on (``judged``: how many
        judgments had been read before its key was taken)."""
        ctx, evaluator = self.ctx, self.evaluator
        return Recording(
            len(ctx.findings),
            len(ctx.pending),
            ctx.facts.uses_gpu,
            ctx.facts.reduced_precision,
            _self_bindings(enclosing),
            dict(ctx.imports.aliases),
            frozenset(evaluator.module_classes),
            frozenset(evaluator.loader_classes),
            dict(evaluator.step_classes),
            ctx.outside_reads,
            len(evaluator.judgments_read),
            frozenset(evaluator.judgments_read[judged:]),
            evaluator.state(),
        )

    def walk_target(
        self, function: Function, enclosing: Scope, is_method: bool
    ) -> tuple[Effects, int, int]:
        """Walks (or replays) the function a trace follows, as `function_body` does, and
        says what it did to the rest of the walk: its effects, and how many findings and
        pending findings it added."""
        ctx = self.ctx
        sites = self.sites_of(function, enclosing, is_method)
        # its decorators included, as `function_body` keys a memo entry: a result one
        # records is replayed by the other, shifted by the difference of the two
        first = first_line(function) - 1
        last = (function.end_lineno or function.lineno) - 1
        key = None
        judged = len(self.evaluator.judgments_read)
        if self.memo is not None and not any(first <= line <= last for line in self.repaired):
            key = self.memo_key(function, enclosing, is_method, sites)
        cached = None if key is None or self.memo is None else self.memo.results.get(key)
        findings, pending = len(ctx.findings), len(ctx.pending)
        recording = self.recording(enclosing, judged)
        self._recordings.append(recording)
        try:
            if cached is not None:
                assert self.memo is not None and key is not None
                self.memo.used[key] = cached
                self.replay(cached, first, enclosing)
            else:
                self.walk_function(function, enclosing, is_method, sites)
        finally:
            self._recordings.pop()
        effects = self.effects_of(recording, enclosing)
        if cached is None and key is not None and self.memo is not None:
            result = self.result_of(recording, first, last, enclosing)
            if result is not None:
                self.memo.results[key] = result
                self.memo.used[key] = result
        return effects, len(ctx.findings) - findings, len(ctx.pending) - pending

    def effects_of(self, recording: Recording, enclosing: Scope) -> Effects:
        """What a body's walk or replay changed for the rest of the walk: the calls it
        made, the facts it set, the attributes, imports and classes it bound."""
        ctx, evaluator = self.ctx, self.evaluator
        before = recording.self_bindings
        return (
            tuple(recording.calls),
            ctx.facts.uses_gpu and not recording.uses_gpu,
            ctx.facts.reduced_precision and not recording.reduced_precision,
            tuple(
                (k, v) for k, v in _self_bindings(enclosing).items() if before.get(k, ...) is not v
            ),
            tuple((k, v) for k, v in ctx.imports.aliases.items() if recording.aliases.get(k) != v),
            frozenset(evaluator.module_classes - recording.module_classes),
            frozenset(evaluator.loader_classes - recording.loader_classes),
            tuple(
                (k, v)
                for k, v in evaluator.step_classes.items()
                if recording.step_classes.get(k) != v
            ),
        )

    def memo_key(
        self, function: Function, enclosing: Scope, is_method: bool, sites: CallSites | None
    ) -> MemoKey:
        """Everything a function body's walk reads from outside the body."""
        assert self.memo is not None
        text = self.text_of(function)
        names = self.memo.names_in(text, function)
        # an enclosing scope's names are final once its functions are walked: look each up
        # once per walk (and state of the imports, which what the file's functions return
        # is judged under), however many functions use it
        entry = self._looked_up.get((id(enclosing), self.ctx.imports.version))
        if entry is None:
            # names are looked up as the body does, from a scope of its own: a class's
            # attributes are not seen from its methods. The probe scope holds the enclosing
            # one, so that its id cannot be reused by a new scope during the walk.
            entry = (Scope("function", "", enclosing), {})
            self._looked_up[(id(enclosing), self.ctx.imports.version)] = entry
        probe, looked_up = entry
        # what a callee returns matters only where the body calls it (`name(`, `self.name(`)
        _, called, methods = self.memo.called_in(text)
        scope_values = []
        for name in names:
            found = looked_up.get(name)
            if found is None:
                value = probe.lookup(name)
                found = looked_up[name] = (fingerprint(value), value)
            scope_values.append(found[0])
            if name in called:
                scope_values.append(self.returns_of(found[1]))
        passed = None
        if sites is not None:
            passed = (
                tuple(
                    sorted(
                        (str(k), fingerprint(v), self.returns_of(v))
                        for k, v in sites.arguments.items()
                    )
                ),
                sites.hot_call,
                sites.guessed,
            )
        owner = enclosing.enclosing_class()
        return MemoKey(
            (
                text,
                is_method,
                # the class around: where calls on self go (`A.step`), which steps a
                # framework runs
                None if owner is None else owner.name,
                tuple(scope_values),
                self.devices_in(enclosing),
                tuple(
                    sorted(
                        (
                            k,
                            fingerprint(v),
                            self.returns_of(v) if k.removeprefix("self.") in methods else None,
                        )
                        for k, v in _self_bindings(enclosing).items()
                    )
                ),
                passed,
                self.shared_key(),
            )
        )

    def shared_key(self) -> tuple[object, ...]:
        """The part of every key read from the whole file's state: the imports, the
        classes seen so far, the file's definitions. Built once per state: with thousands
        of classes, building it for each function made a keystroke quadratic in the file."""
        evaluator = self.evaluator
        state = (
            self.ctx.imports.version,
            len(evaluator.module_classes),
            len(evaluator.loader_classes),
            tuple(evaluator.step_classes.items()),  # (a class's framework may be replaced)
        )
        if self._shared_key is None or self._shared_key[0] != state:
            shared = (
                # in binding order: the first local name of a module is the one fixes spell
                tuple(self.ctx.imports.aliases.items()),
                # (the sets only grow during a walk: their sizes say when they changed)
                frozenset(evaluator.module_classes),
                frozenset(evaluator.loader_classes),
                tuple(sorted(evaluator.step_classes.items())),
                self.file_key(),
                chooses_only_cuda(self.ctx),  # which wait GPU004's fix writes
                module_loggers(self.ctx),  # which calls format their arguments (GPU001)
            )
            assert self.memo is not None
            self._shared_key = (state, self.memo.canonical(MemoKey(shared)))
        return self._shared_key[1]

    def devices_in(self, scope: Scope | None) -> tuple[str, ...]:
        """The device variables visible in ``scope``, nearest first and each in binding
        order: GPU007 and GPU004 use the first. Each scope's own are found once per walk."""
        if scope is None:
            return ()
        cached = self._devices.get(id(scope))
        if cached is not None:
            return cached[1]
        own = [
            n
            for n, v in scope.bindings.items()
            if v is not None and v.kind is Kind.DEVICE and "." not in n
        ]
        devices = tuple(dict.fromkeys((*own, *self.devices_in(scope.parent))))
        # the entry holds the scope, so that its id cannot be reused by a new scope
        self._devices[id(scope)] = (scope, devices)
        return devices

    def returns_of(self, value: Value | None) -> tuple[object, ...] | None:
        """For a function of the file, what calling it returns (and the parts of the tuple
        it returns, and the parameters it reads on the host): what a caller's walk reads of
        the callee's body."""
        if value is None or value.kind is not Kind.FUNCTION:
            return None
        function = value.origin
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        parts = self.evaluator.returned_parts(function)
        return (
            fingerprint(self.evaluator.returned(function)),
            None if parts is None else tuple(map(fingerprint, parts)),
            self.evaluator.host_reads(function),
        )

    def file_key(self) -> tuple[object, ...]:
        """What of the whole file any body may read, once per walk: its functions, classes,
        bases and methods (which of them a call reaches), the names it imports from its own
        package (which framework a base class is), whether it names Apple's GPU
        (whose lack of float64 the accumulate fix heeds), where its calls into other
        modules of its project go and what those return."""
        if self._file_key is None:
            definitions = self.definitions
            self._file_key = (
                tuple(sorted(definitions.functions)),
                tuple(sorted((c, tuple(sorted(m))) for c, m in definitions.methods.items())),
                tuple(sorted(definitions.bases.items())),
                tuple(sorted(definitions.duplicated)),
                tuple(sorted(definitions.relatives)),
                # which classes are records, whose fields hold what they are built with
                tuple(
                    sorted(
                        (name, tuple(record_field_names(cls)))
                        for name, cls in self.evaluator.record_classes().items()
                    )
                ),
                mentions_mps(self.ctx),
                self.evaluator.fastai,  # whose names the file cannot resolve
                None if self.links is None else self.links.key,
                tuple(sorted(self.project_returned.items(), key=repr)),
                self.helper_root,  # where the helpers the file imports are read
            )
        return self._file_key

    def result_of(
        self, recording: Recording, first: int, last: int, enclosing: Scope
    ) -> FunctionResult | None:
        ctx = self.ctx
        evaluator = self.evaluator
        if ctx.outside_reads != recording.outside_reads:
            return None  # a rule read the whole module, which the key does not cover
        for function, state in evaluator.judgments_read[recording.judgments :]:
            if (function, state) in recording.covered:
                continue
            if state == recording.state and first < function.lineno - 1 <= last:
                continue  # a function the body defines: its text is the body's
            return None  # what a function returns, judged where the key did not look
        findings = ctx.findings[recording.findings :]
        pending = ctx.pending[recording.pending :]
        # a fix that edits outside the function (a line after the imports) cannot move with it
        if not all(within(f, first, last) for f in [*findings, *(f for _, f in pending)]):
            return None
        after = _self_bindings(enclosing)
        attributes = {
            k: v for k, v in after.items() if recording.self_bindings.get(k, ...) is not v
        }
        passed = (v for _, arguments, _ in recording.calls for _, v in arguments)
        relocated = self.definitions_named([*attributes.values(), *passed], first, last)
        if relocated is None:
            return None
        before = recording.aliases
        return FunctionResult(
            first,
            list(findings),
            list(pending),
            list(recording.calls),
            ctx.facts.uses_gpu and not recording.uses_gpu,
            ctx.facts.reduced_precision and not recording.reduced_precision,
            attributes,
            tuple((k, v) for k, v in ctx.imports.aliases.items() if before.get(k) != v),
            frozenset(evaluator.module_classes - recording.module_classes),
            frozenset(evaluator.loader_classes - recording.loader_classes),
            tuple(
                (k, v)
                for k, v in evaluator.step_classes.items()
                if recording.step_classes.get(k) != v
            ),
            relocated,
        )

    def definitions_named(
        self, values: list[Value | None], first: int, last: int
    ) -> dict[int, str] | None:
        """The functions and classes of the file outside lines ``first``..``last`` that
        ``values`` name (a callback passed on, `self.fn = helper`), by id, each with the
        name that finds it in another version; None if one has no such name. A replay puts
        the current def in their place: what it returns, whose method it is."""
        found: dict[int, str] = {}
        for value in values:
            if value is None or value.kind not in _NAMED or value.origin is None:
                continue
            if isinstance(value.origin, ast.Lambda):
                # a lambda passed on is reported where it stands, and no name finds the
                # current one: the node kept would place its findings where it stood before
                return None
            if first <= getattr(value.origin, "lineno", 0) - 1 <= last:
                continue  # defined in the body: the same text in every version it is replayed in
            where = self.definitions.locate(value.origin)
            if where is None:
                return None
            found[id(value.origin)] = where
        return found

    def replay(self, result: FunctionResult, first: int, enclosing: Scope) -> None:
        ctx = self.ctx
        evaluator = self.evaluator
        delta = first - result.first  # usually 0: most edits leave other functions in place
        ctx.findings.extend(shift_finding(f, delta) for f in result.findings)
        ctx.pending.extend((c, shift_finding(f, delta)) for c, f in result.pending)
        calls = result.calls
        attributes = result.self_bindings
        if result.relocated:
            current = {
                old: self.definitions.located(where) for old, where in result.relocated.items()
            }

            def now(value: Value | None) -> Value | None:
                if value is None or id(value.origin) not in current:
                    return value
                return replace(value, origin=current[id(value.origin)])

            calls = [
                (name, tuple((k, now(v)) for k, v in arguments), hot_call)
                for name, arguments, hot_call in calls
            ]
            attributes = {k: now(v) for k, v in attributes.items()}
        for recording in self._recordings:  # an enclosing function being recorded
            recording.calls.extend(calls)
        for name, arguments, hot_call in calls:
            self.merge_call(name, arguments, hot_call)
        ctx.facts.uses_gpu |= result.uses_gpu
        ctx.facts.reduced_precision |= result.reduced_precision
        owner = enclosing.enclosing_class()
        for name, value in attributes.items():
            if owner is not None:
                owner.bind(name, value)
        if result.imports:
            ctx.imports.bind_all(result.imports)
        evaluator.module_classes |= result.module_classes
        evaluator.loader_classes |= result.loader_classes
        evaluator.step_classes.update(result.step_classes)
        evaluator.invalidate()


def _self_bindings(scope: Scope) -> dict[str, Value | None]:
    """The `self.x` attributes the methods of the class around ``scope`` have set (held by
    the class's scope): what a method, or a function nested in one, reads of self."""
    owner = scope.enclosing_class()
    if owner is None:
        return {}
    return {k: v for k, v in owner.bindings.items() if k.startswith("self.")}
