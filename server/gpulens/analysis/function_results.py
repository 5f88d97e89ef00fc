"""Reusing a function body's results from an earlier version of the same document.

The walker asks `function_body` to walk each function; with a memo it first looks for a
result recorded under a key of everything the body's walk reads from outside the body, and
replays it (findings, pending findings, what the body passes to other functions, the facts,
`self.x` attributes, imports and module classes it sets) instead of walking.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpulens.analysis.incremental import (
    FunctionMemo,
    FunctionResult,
    fingerprint,
    shift_finding,
    within,
)
from gpulens.analysis.symbols import Kind, Scope, Value

if TYPE_CHECKING:
    from gpulens.analysis.context import Context
    from gpulens.analysis.values import Evaluator

Function = ast.FunctionDef | ast.AsyncFunctionDef
Call = tuple[str, tuple[tuple[int | str, Value | None], ...], str | None]


@dataclass(slots=True)
class CallSites:
    """What the file passes to one of its functions, and whether it does so in a loop."""

    arguments: dict[int | str, Value | None] = field(default_factory=dict)
    hot_call: str | None = None  # "the loop that calls train_step()"


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
    outside_reads: int
    calls: list[tuple[str, tuple[tuple[int | str, Value | None], ...], str | None]] = field(
        default_factory=list
    )


class FunctionResultsMixin:
    """The memo half of the walker: what it needs of the walker is declared here."""

    ctx: Context
    evaluator: Evaluator
    memo: FunctionMemo | None
    repaired: frozenset[int]  # lines whose parse is not their text
    call_sites: dict[str, object]
    _recordings: list[Recording]
    _looked_up: dict[int, tuple[Scope, dict[str, tuple[object, ...] | None]]]
    _devices: dict[int, tuple[Scope | None, tuple[str, ...] | None]]

    def walk_function(
        self, function: Function, enclosing: Scope, is_method: bool, sites: object
    ) -> None:
        raise NotImplementedError

    def merge_call(
        self, name: str, arguments: tuple[tuple[int | str, Value | None], ...], hot_call: str | None
    ) -> None:
        raise NotImplementedError

    def function_body(self, function: Function, enclosing: Scope, is_method: bool) -> None:
        sites = self.call_sites.get(("self." if is_method else "") + function.name)
        first = function.lineno - 1
        last = (function.end_lineno or function.lineno) - 1
        if self.memo is None or any(first <= line <= last for line in self.repaired):
            # a repaired body was walked as other text than its own: its text cannot key it
            self.walk_function(function, enclosing, is_method, sites)
            return
        key = self.memo_key(function, enclosing, is_method, sites)
        cached = self.memo.results.get(key)
        if cached is not None:
            self.memo.used.add(key)
            self.replay(cached, first, enclosing)
            return
        ctx = self.ctx
        recording = Recording(
            len(ctx.findings),
            len(ctx.pending),
            ctx.facts.uses_gpu,
            ctx.facts.reduced_precision,
            _self_bindings(enclosing),
            dict(ctx.imports.aliases),
            frozenset(self.evaluator.module_classes),
            ctx.outside_reads,
        )
        self._recordings.append(recording)
        try:
            self.walk_function(function, enclosing, is_method, sites)
        finally:
            self._recordings.pop()
        result = self.result_of(recording, first, last, enclosing)
        if result is not None:
            self.memo.results[key] = result
            self.memo.used.add(key)

    def memo_key(
        self, function: Function, enclosing: Scope, is_method: bool, sites: CallSites | None
    ) -> tuple[object, ...]:
        """Everything a function body's walk reads from outside the body."""
        assert self.memo is not None
        lines = self.ctx.source.lines
        text = "".join(lines[function.lineno - 1 : function.end_lineno])
        names = self.memo.names_in(text, function)
        # an enclosing scope's names are final once its functions are walked: look each up
        # once per walk, however many functions use it
        entry = self._looked_up.get(id(enclosing))
        if entry is None:
            # names are looked up as the body does, from a scope of its own: a class's
            # attributes are not seen from its methods. The probe scope holds the enclosing
            # one, so that its id cannot be reused by a new scope during the walk.
            entry = self._looked_up[id(enclosing)] = (Scope("function", "", enclosing), {})
        probe, looked_up = entry
        scope_values = []
        for name in names:
            if name not in looked_up:
                looked_up[name] = fingerprint(probe.lookup(name), self.evaluator)
            scope_values.append(looked_up[name])
        devices = self._devices.get(id(enclosing), (None, None))[1]
        if devices is None:  # GPU007 uses the first device variable in scope
            found: list[str] = []
            scope: Scope | None = enclosing
            while scope is not None:
                found.extend(
                    n
                    for n, v in scope.bindings.items()
                    if v is not None and v.kind is Kind.DEVICE and "." not in n
                )
                scope = scope.parent
            devices = tuple(found)
            self._devices[id(enclosing)] = (enclosing, devices)
        passed = None
        if sites is not None:
            passed = (
                tuple(
                    sorted(
                        (str(k), fingerprint(v, self.evaluator)) for k, v in sites.arguments.items()
                    )
                ),
                sites.hot_call,
            )
        attributes = _self_bindings(enclosing).items()
        return (
            text,
            is_method,
            tuple(scope_values),
            devices,
            tuple(sorted((k, fingerprint(v, self.evaluator)) for k, v in attributes)),
            passed,
            # in binding order: the first local name of a module is the one fixes spell
            tuple(self.ctx.imports.aliases.items()),
            frozenset(self.evaluator.module_classes),
        )

    def result_of(
        self, recording: Recording, first: int, last: int, enclosing: Scope
    ) -> FunctionResult | None:
        ctx = self.ctx
        if ctx.outside_reads != recording.outside_reads:
            return None  # a rule read the whole module, which the key does not cover
        findings = ctx.findings[recording.findings :]
        pending = ctx.pending[recording.pending :]
        # a fix that edits outside the function (a line after the imports) cannot move with it
        if not all(within(f, first, last) for f in [*findings, *(f for _, f in pending)]):
            return None
        after = _self_bindings(enclosing)
        before = recording.aliases
        return FunctionResult(
            first,
            list(findings),
            list(pending),
            list(recording.calls),
            ctx.facts.uses_gpu and not recording.uses_gpu,
            ctx.facts.reduced_precision and not recording.reduced_precision,
            {k: v for k, v in after.items() if recording.self_bindings.get(k, ...) is not v},
            tuple((k, v) for k, v in ctx.imports.aliases.items() if before.get(k) != v),
            frozenset(self.evaluator.module_classes - recording.module_classes),
        )

    def replay(self, result: FunctionResult, first: int, enclosing: Scope) -> None:
        ctx = self.ctx
        delta = first - result.first  # usually 0: most edits leave other functions in place
        ctx.findings.extend(shift_finding(f, delta) for f in result.findings)
        ctx.pending.extend((c, shift_finding(f, delta)) for c, f in result.pending)
        for recording in self._recordings:  # an enclosing function being recorded
            recording.calls.extend(result.calls)
        for name, arguments, hot_call in result.calls:
            self.merge_call(name, arguments, hot_call)
        ctx.facts.uses_gpu |= result.uses_gpu
        ctx.facts.reduced_precision |= result.reduced_precision
        for name, value in result.self_bindings.items():
            enclosing.bind(name, value)
        if result.imports:
            ctx.imports.bind_all(result.imports)
        self.evaluator.module_classes |= result.module_classes
        self.evaluator.invalidate()


def _self_bindings(scope: Scope) -> dict[str, Value | None]:
    """The `self.x` attributes a class's methods have set (held by the class scope)."""
    if scope.kind != "class":
        return {}
    return {k: v for k, v in scope.bindings.items() if k.startswith("self.")}
