"""The one walk: statements in program order, names bound to abstract values as they go,
each node handed to the checks registered for its type.

Flow-sensitive where it is cheap (a name rebound with `.cpu()` is no longer on the GPU;
branches join), flow-insensitive where it is not (a loop body is walked once). Function
bodies run when called, so they are walked once their scope has bound all its names,
callers before callees, with what the file passes them.
"""

from __future__ import annotations

import ast
from collections import defaultdict

from gpulens.analysis import frameworks as fw
from gpulens.analysis import rules as _rules  # noqa: F401  (registers every rule)
from gpulens.analysis.config import Config
from gpulens.analysis.context import Context, Loop
from gpulens.analysis.function_results import CallSites, FunctionResultsMixin, Recording
from gpulens.analysis.guards import leaves_loop, runs_once_per_period
from gpulens.analysis.incremental import FunctionMemo
from gpulens.analysis.model import Finding
from gpulens.analysis.rules.registry import CHECKS
from gpulens.analysis.source import SourceText
from gpulens.analysis.symbols import Kind, Scope, Value, dotted_name, merge, simple_name

Function = ast.FunctionDef | ast.AsyncFunctionDef
_METHODS_FIRST = ("__init__", "__post_init__", "setup", "reset_parameters")
_PROGRESS = ("tqdm", "track", "progress", "iter", "trange")


def walk_module(
    tree: ast.Module,
    source: SourceText,
    config: Config,
    memo: FunctionMemo | None = None,
    repaired: frozenset[int] = frozenset(),
) -> tuple[list[Finding], list[str]]:
    """Findings of ``tree``; ``memo`` replays function bodies of earlier versions, except
    those holding ``repaired`` lines (parsed as other text than their own)."""
    ctx = Context(source, config, tree)
    walker = _Walker(ctx, memo, repaired)
    notes: list[str] = []
    try:
        walker.scope_body(tree.body)
    except RecursionError:
        # a pathological expression: walk what we can, one top-level statement at a time
        ctx = Context(source, config, tree)
        walker = _Walker(ctx, None, repaired)
        for statement in tree.body:
            try:
                walker.scope_body([statement])
            except RecursionError:
                notes.append(f"line {statement.lineno}: nested too deeply to analyse")
    ctx.finish()
    return ctx.findings, notes


class _Walker(FunctionResultsMixin):
    def __init__(self, ctx: Context, memo: FunctionMemo | None, repaired: frozenset[int]) -> None:
        self.ctx = ctx
        self.evaluator = ctx.evaluator
        self.memo = memo
        self.repaired = repaired
        self.call_sites: defaultdict[str, CallSites] = defaultdict(CallSites)
        # per scope being walked: its function definitions, walked once the scope is done
        self._deferred_functions: list[list[tuple[Function, Scope, bool]]] = []
        self._recordings: list[Recording] = []
        # per walk: fingerprints of names looked up in a scope, device variables in scope
        # (keyed by the scope's id; scopes live as long as the walk)
        self._looked_up: dict[int, tuple[Scope, dict[str, tuple[object, ...] | None]]] = {}
        self._devices: dict[int, tuple[Scope | None, tuple[str, ...] | None]] = {}

    # -- scopes -------------------------------------------------------------------------

    def scope_body(self, body: list[ast.stmt], *, is_class: bool = False) -> None:
        """Walk a module, function or class body, then the functions defined in it."""
        self._deferred_functions.append([])
        self.block(body)
        functions = self._deferred_functions.pop()
        # callers are usually defined after their callees: walking in reverse source
        # order lets a callee see what its callers pass; a class's __init__ comes first
        # so its methods see the attributes it sets
        ordered = list(reversed(functions))
        if is_class:
            ordered.sort(key=lambda item: item[0].name not in _METHODS_FIRST)
        for function, scope, is_method in ordered:
            self.function_body(function, scope, is_method)

    def walk_function(
        self, function: Function, enclosing: Scope, is_method: bool, sites: CallSites | None
    ) -> None:
        ctx = self.ctx
        scope = Scope("function", function.name, enclosing)
        positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        if is_method and positional:
            positional = positional[1:]
        for index, name in enumerate(positional):
            value = None
            if sites is not None:
                value = sites.arguments.get(index) or sites.arguments.get(name)
            scope.bind(name, value)
        for argument in (*function.args.kwonlyargs, function.args.vararg, function.args.kwarg):
            if argument is not None:
                value = sites.arguments.get(argument.arg) if sites else None
                scope.bind(argument.arg, value)
        saved = (self.evaluator.scope, ctx.loops, ctx.function)
        self.evaluator.scope = scope
        self.evaluator.invalidate()
        ctx.function = function
        ctx.loops = []
        # a callee with loops of its own is the per-epoch level: its loops are the hot ones,
        # and what runs once per call (a read of the epoch's total) is no pitfall
        if sites is not None and sites.hot_call and not _has_loop(function.body):
            line = function.lineno - 1
            ctx.loops = [Loop(function, line, frozenset(), None, called_from=sites.hot_call)]
        try:
            self.scope_body(function.body)
        finally:
            self.evaluator.scope, ctx.loops, ctx.function = saved
            self.evaluator.invalidate()

    # -- statements ---------------------------------------------------------------------

    def block(self, body: list[ast.stmt]) -> None:
        ctx = self.ctx
        for index, statement in enumerate(body):
            ctx.statement = statement
            ctx.statements = (body, index)
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        for check in CHECKS.get(type(node), ()):
            check(node, self.ctx)
        match node:
            case ast.Import() | ast.ImportFrom():
                self.ctx.imports.add(node)
                if self.ctx.imports.uses("cupy") or self.ctx.imports.uses("numba"):
                    self.ctx.facts.uses_gpu = True
            case ast.FunctionDef() | ast.AsyncFunctionDef():
                self.expressions(*node.decorator_list, *node.args.defaults)
                self.expressions(*(d for d in node.args.kw_defaults if d is not None))
                self.bind(node.name, Value(Kind.FUNCTION, origin=node))
                is_method = self.evaluator.scope.kind == "class"
                self._deferred_functions[-1].append((node, self.evaluator.scope, is_method))
            case ast.ClassDef():
                self.class_def(node)
            case ast.Assign(targets=targets, value=value):
                self.expression(value)
                for target in targets:
                    self.assign(target, value)
            case ast.AnnAssign(target=target, value=value):
                if value is not None:
                    self.expression(value)
                    self.assign(target, value)
            case ast.AugAssign(target=target, value=value):
                self.expression(value)
                self.expression(target)
                if isinstance(target, ast.Name):
                    before = self.evaluator.value(target)
                    after = self.evaluator.value(value)
                    gpu = after if after is not None and after.on_gpu else before
                    self.bind(target.id, gpu if gpu is not None and gpu.on_gpu else before)
            case ast.Expr(value=value):
                self.expression(value)
                self.in_place_move(value)
            case ast.For() | ast.AsyncFor():
                self.for_loop(node)
            case ast.While():
                self.while_loop(node)
            case ast.If():
                self.if_statement(node)
            case ast.With() | ast.AsyncWith():
                for item in node.items:
                    self.expression(item.context_expr)
                    if item.optional_vars is not None:
                        self.assign(item.optional_vars, item.context_expr)
                self.block(node.body)
            case ast.Try() | ast.TryStar():
                self.block(node.body)
                for handler in node.handlers:
                    if handler.type is not None:
                        self.expression(handler.type)
                    if handler.name:
                        self.bind(handler.name, None)
                    self.block(handler.body)
                self.block(node.orelse)
                self.block(node.finalbody)
            case ast.Match(subject=subject, cases=cases):
                self.expression(subject)
                before = self.evaluator.scope.snapshot()
                branches = []
                for case in cases:
                    self.restore(before)
                    if case.guard is not None:
                        self.expression(case.guard)
                    self.block(case.body)
                    branches.append(self.evaluator.scope.snapshot())
                self.join(before, *branches)
            case ast.Delete(targets=targets):
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.bind(target.id, None)
            case _:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.expr):
                        self.expression(child)

    def class_def(self, node: ast.ClassDef) -> None:
        self.expressions(*node.decorator_list, *node.bases, *(k.value for k in node.keywords))
        evaluator = self.evaluator
        for base in node.bases:
            name = self.ctx.qualname(base) or ""
            local = base.id if isinstance(base, ast.Name) else ""
            if name.endswith(("nn.Module", "LightningModule")) or local in evaluator.module_classes:
                evaluator.module_classes.add(node.name)
        saved = evaluator.scope
        evaluator.scope = Scope("class", node.name, saved)
        saved_loops, self.ctx.loops = self.ctx.loops, []
        try:
            self.scope_body(node.body, is_class=True)
        finally:
            evaluator.scope = saved
            self.ctx.loops = saved_loops
            evaluator.invalidate()
        self.bind(node.name, None)

    def for_loop(self, node: ast.For | ast.AsyncFor) -> None:
        self.expression(node.iter)
        before = self.evaluator.scope.snapshot()
        iterates = self.iterated(node.iter)
        self.bind_loop_target(node.target, node.iter)
        targets = frozenset(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        loop = Loop(
            node, node.lineno - 1, targets, iterates, statement=node, block=self.ctx.statements
        )
        loop.guarded = leaves_loop(node.body)  # a body that ends in break runs once
        self.ctx.loops.append(loop)
        try:
            self.block(node.body)
        finally:
            self.ctx.loops.pop()
        # the body may run zero times
        self.join(before, self.evaluator.scope.snapshot())
        self.block(node.orelse)

    def while_loop(self, node: ast.While) -> None:
        before = self.evaluator.scope.snapshot()
        loop = Loop(
            node, node.lineno - 1, frozenset(), None, statement=node, block=self.ctx.statements
        )
        loop.guarded = leaves_loop(node.body)
        self.ctx.loops.append(loop)
        try:
            self.ctx.statement = node
            self.expression(node.test)  # the test runs on every iteration
            self.block(node.body)
        finally:
            self.ctx.loops.pop()
        self.join(before, self.evaluator.scope.snapshot())
        self.block(node.orelse)

    def if_statement(self, node: ast.If) -> None:
        self.expression(node.test)
        loop = self.ctx.loop
        guard = (
            loop is not None
            and not loop.guarded
            and (runs_once_per_period(node.test, self.ctx) or leaves_loop(node.body))
        )
        before = self.evaluator.scope.snapshot()
        if guard:
            loop.guarded = True  # type: ignore[union-attr]
        try:
            self.block(node.body)
        finally:
            if guard:
                loop.guarded = False  # type: ignore[union-attr]
        after_body = self.evaluator.scope.snapshot()
        self.restore(before)
        self.block(node.orelse)
        self.join(after_body, self.evaluator.scope.snapshot())

    # -- expressions --------------------------------------------------------------------

    def expressions(self, *nodes: ast.expr) -> None:
        for node in nodes:
            self.expression(node)

    def expression(self, node: ast.expr) -> None:
        for check in CHECKS.get(type(node), ()):
            check(node, self.ctx)
        match node:
            case ast.ListComp() | ast.SetComp() | ast.GeneratorExp():
                self.comprehension(node, node.generators, (node.elt,))
                return
            case ast.DictComp():
                self.comprehension(node, node.generators, (node.key, node.value))
                return
            case ast.Lambda():
                self.lambda_(node)
                return
            case ast.NamedExpr(target=target, value=value):
                self.expression(value)
                self.bind(target.id, self.evaluator.value(value))
                return
            case ast.Call():
                self.record_call(node)
        for field_name in _EXPRESSION_FIELDS[type(node)]:
            child = getattr(node, field_name)
            if isinstance(child, list):
                for item in child:
                    if isinstance(item, ast.expr):
                        self.expression(item)
                    elif isinstance(item, ast.keyword):
                        self.expression(item.value)
            elif isinstance(child, ast.expr):
                self.expression(child)

    def comprehension(
        self, node: ast.expr, generators: list[ast.comprehension], results: tuple[ast.expr, ...]
    ) -> None:
        evaluator = self.evaluator
        outer = evaluator.scope
        pushed = 0
        try:
            for index, generator in enumerate(generators):
                self.expression(generator.iter)
                if index == 0:
                    evaluator.scope = Scope("comprehension", "<comprehension>", outer)
                iterates = self.iterated(generator.iter)
                self.bind_loop_target(generator.target, generator.iter)
                targets = frozenset(
                    n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)
                )
                self.ctx.loops.append(Loop(node, node.lineno - 1, targets, iterates))
                pushed += 1
                self.expressions(*generator.ifs)
            self.expressions(*results)
        finally:
            del self.ctx.loops[len(self.ctx.loops) - pushed :]
            evaluator.scope = outer
            evaluator.invalidate()

    def lambda_(self, node: ast.Lambda) -> None:
        evaluator = self.evaluator
        outer, loops = evaluator.scope, self.ctx.loops
        evaluator.scope = Scope("function", "<lambda>", outer)
        self.ctx.loops = []
        try:
            self.expression(node.body)
        finally:
            evaluator.scope, self.ctx.loops = outer, loops
            evaluator.invalidate()

    # -- bindings -----------------------------------------------------------------------

    def bind(self, name: str, value: Value | None) -> None:
        scope = self.evaluator.scope
        if "." in name and name.startswith("self."):
            # attributes set on self are seen by every method of the class
            owner: Scope | None = scope
            while owner is not None and owner.kind != "class":
                owner = owner.parent
            scope = owner or scope
        scope.bind(name, value)
        if value is not None and value.kind is Kind.DEVICE:
            self.ctx.facts.uses_gpu = True
            if scope.kind == "module":
                self.ctx.facts.device_names.add(name)
        self.evaluator.invalidate()

    def restore(self, bindings: dict[str, Value | None]) -> None:
        self.evaluator.scope.bindings = dict(bindings)
        self.evaluator.invalidate()

    def join(self, *branches: dict[str, Value | None]) -> None:
        self.evaluator.scope.restore_merged(*branches)
        self.evaluator.invalidate()

    def assign(self, target: ast.expr, value: ast.expr) -> None:
        match target:
            case ast.Name(id=name):
                self.bind(name, self.evaluator.value(value))
            case ast.Tuple(elts=targets) | ast.List(elts=targets):
                if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(targets):
                    for sub_target, sub_value in zip(targets, value.elts, strict=True):
                        self.assign(sub_target, sub_value)
                    return
                self.bind_all(target, _element(self.evaluator.value(value)))
            case ast.Starred(value=inner):
                self.bind_all(inner, _element(self.evaluator.value(value)))
            case ast.Attribute():
                name = dotted_name(target)
                if name is not None:
                    self.bind(name, self.evaluator.value(value))

    def bind_all(self, target: ast.expr, value: Value | None) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.bind(node.id, value)
            elif isinstance(node, ast.Attribute) and (name := dotted_name(node)):
                self.bind(name, value)

    def in_place_move(self, value: ast.expr) -> None:
        """`model.to(device)` / `model.cuda()` as a statement moves a module in place."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
            return
        if not self.evaluator.moves_to_gpu(value):
            return
        name = dotted_name(value.func.value)
        if name is None:
            return
        current = self.evaluator.scope.lookup(name)
        if current is None or current.kind in (Kind.MODULE, Kind.GPU_MODULE):
            self.bind(name, Value(Kind.GPU_MODULE, origin=current.origin if current else None))

    # -- loops --------------------------------------------------------------------------

    def iterated(self, node: ast.expr) -> Value | None:
        """What a loop iterates: a loader, a GPU array, or (None) something else."""
        match node:
            case ast.Call(func=ast.Name(id="enumerate" | "reversed" | "list"), args=[inner, *_]):
                return self.iterated(inner)
            case ast.Call(func=ast.Name(id="zip"), args=arguments):
                values = [self.iterated(a) for a in arguments]
                return next((v for v in values if v is not None), None)
            case ast.Call(func=func, args=[inner, *_]) if _is_progress(func):
                return self.iterated(inner)
        value = self.evaluator.value(node)
        if value is not None:
            return value
        name = dotted_name(node)
        if name is not None and fw.LOADER_NAME.search(name.rsplit(".", 1)[-1]):
            return Value(Kind.LOADER)
        return None

    def bind_loop_target(self, target: ast.expr, iterable: ast.expr) -> None:
        match iterable, target:
            case ast.Call(func=ast.Name(id="enumerate"), args=[inner, *_]), ast.Tuple(
                elts=[index, item]
            ):
                self.bind_all(index, None)
                self.bind_loop_target(item, inner)
                return
            case ast.Call(func=ast.Name(id="zip"), args=arguments), ast.Tuple(elts=items) if len(
                arguments
            ) == len(items):
                for item, argument in zip(items, arguments, strict=True):
                    self.bind_loop_target(item, argument)
                return
            case ast.Call(func=func, args=[inner, *_]), _ if _is_progress(func):
                self.bind_loop_target(target, inner)
                return
        iterates = self.iterated(iterable)
        element: Value | None = None
        if iterates is not None:
            if iterates.kind in (Kind.LOADER, Kind.BATCH):
                element = Value(Kind.BATCH)
            elif iterates.kind is Kind.GPU:
                element = Value(Kind.GPU, iterates.lib, exact=False)
        self.bind_all(target, element)

    def record_call(self, node: ast.Call) -> None:
        """Remember what the file passes to its own functions, and from where."""
        if isinstance(node.func, ast.Attribute) and self.evaluator.moves_to_gpu(node):
            self.ctx.facts.uses_gpu = True
        name = dotted_name(node.func)
        if name is None:
            return
        if "." in name and not name.startswith("self."):
            return
        callee = self.evaluator.scope.lookup(name) if "." not in name else None
        if "." not in name and (callee is None or callee.kind is not Kind.FUNCTION):
            return
        arguments: list[tuple[int | str, Value | None]] = []
        for index, argument in enumerate(node.args):
            if isinstance(argument, ast.Starred):
                break
            arguments.append((index, self.evaluator.value(argument)))
        for keyword in node.keywords:
            if keyword.arg is not None:
                arguments.append((keyword.arg, self.evaluator.value(keyword.value)))
        loop = self.ctx.hot_loop
        hot_call = None
        if loop is not None:
            hot_call = f"the loop that calls {name.removeprefix('self.')}()"
        for recording in self._recordings:
            recording.calls.append((name, tuple(arguments), hot_call))
        self.merge_call(name, tuple(arguments), hot_call)

    def merge_call(
        self, name: str, arguments: tuple[tuple[int | str, Value | None], ...], hot_call: str | None
    ) -> None:
        sites = self.call_sites[name]
        for key, value in arguments:
            sites.arguments[key] = merge(sites.arguments.get(key), value)
        if sites.hot_call is None:
            sites.hot_call = hot_call


def _expression_fields(node_type: type[ast.AST]) -> tuple[str, ...]:
    """The fields of an expression node that hold expressions (or keywords)."""
    if node_type in (ast.Constant, ast.Name):
        return ()
    skip = {"ctx", "op", "ops", "conversion", "kind", "type_comment", "id", "attr"}
    return tuple(name for name in node_type._fields if name not in skip)


# ast.iter_child_nodes is a generator over every field: too slow for the hot path
_EXPRESSION_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {
    node_type: _expression_fields(node_type)
    for node_type in (getattr(ast, name) for name in dir(ast))
    if isinstance(node_type, type) and issubclass(node_type, ast.expr)
}


def _has_loop(body: list[ast.stmt]) -> bool:
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _element(value: Value | None) -> Value | None:
    """What unpacking a value gives: the parts of a model's outputs, of a batch."""
    if value is not None and value.kind in (Kind.GPU, Kind.BATCH):
        return Value(value.kind, value.lib, exact=False)
    return None


def _is_progress(func: ast.expr) -> bool:
    return simple_name(func).lower().startswith(_PROGRESS)
