"""The one walk: statements in program order, names bound to abstract values as they go,
each node handed to the checks registered for its type.

Flow-sensitive where it is cheap (a name rebound with `.cpu()` is no longer on the GPU;
branches join), flow-insensitive where it is not (a loop body is walked once). Function
bodies run when called, so they are walked once their scope has bound all its names,
callers before callees, with what the file passes them.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpulens.analysis import frameworks as fw
from gpulens.analysis import rules as _rules  # noqa: F401  (registers every rule)
from gpulens.analysis.call_order import callers_first, held_calls_only
from gpulens.analysis.config import Config
from gpulens.analysis.context import Context, Loop
from gpulens.analysis.definitions import (
    CONSTRUCTORS,
    Definitions,
    flat_statements,
    is_static,
    record_made,
)
from gpulens.analysis.function_results import CallSites, FunctionResultsMixin, Recording
from gpulens.analysis.guards import (
    device_test,
    exits_unless_periodic,
    falls_through,
    is_few,
    leaves_loop,
    narrowed_to_host,
    narrowed_to_mapping,
    narrowed_to_scalar,
    needs_cuda,
    runs_once_per_period,
    scalar_unless,
    tensor_unless,
)
from gpulens.analysis.helper_reads import helper_reads
from gpulens.analysis.incremental import CALLED, FunctionMemo, first_line
from gpulens.analysis.mappings import gives_keys, mapping_names, may_give_keys
from gpulens.analysis.model import Finding
from gpulens.analysis.module_forward import runs_per_call, saved_by_forward, tensor_inputs
from gpulens.analysis.overrides import (
    builds_itself,
    overrides_reached,
    overriding,
    self_call_key,
)
from gpulens.analysis.project import (
    RECORD_FIELD,
    ModuleLinks,
    ProjectCall,
    ProjectReturn,
    ProjectView,
    portable,
    received,
    returnable,
)
from gpulens.analysis.rules.registry import CHECKS
from gpulens.analysis.source import SourceText
from gpulens.analysis.symbols import (
    Imports,
    Kind,
    Scope,
    Value,
    dotted_name,
    keyword,
    merge,
    names_in,
    simple_name,
)
from gpulens.analysis.training import one_training_step
from gpulens.analysis.values import Evaluator, HostReads, element_of

if TYPE_CHECKING:
    from gpulens.analysis.regions import Trace

Function = ast.FunctionDef | ast.AsyncFunctionDef
_PROGRESS = ("tqdm", "track", "progress", "iter", "trange")


def walk_module(
    tree: ast.Module,
    source: SourceText,
    config: Config,
    memo: FunctionMemo | None = None,
    repaired: frozenset[int] = frozenset(),
    *,
    trace: Trace | None = None,
    project: ProjectView | None = None,
) -> tuple[list[Finding], list[str], tuple[ProjectCall, ...], tuple[ProjectReturn, ...]]:
    """Findings of ``tree``, the calls it makes into the other modules of its ``project``
    and what its functions return (both where ``project.record``); ``memo`` replays
    function bodies of earlier versions, except those holding ``repaired`` lines (parsed as
    other text than their own). ``trace`` keeps what the next version needs to walk only
    its target function (`regions`)."""
    ctx = Context(source, config, tree)
    definitions = Definitions.of(tree)
    # the calls into other modules are resolved only where they are recorded for an index,
    # or where what they return is known
    links = (
        ModuleLinks(tree, project)
        if project is not None and (project.record or project.returns)
        else None
    )
    walker = _Walker(ctx, memo, definitions, repaired, trace, project=project, links=links)
    notes: list[str] = []
    try:
        walker.scope_body(tree.body)
    except RecursionError:
        # a pathological expression: walk what we can, one top-level statement at a time
        ctx = Context(source, config, tree)
        walker = _Walker(ctx, None, definitions, repaired, project=project, links=links)
        for statement in tree.body:
            try:
                walker.scope_body([statement])
            except RecursionError:
                notes.append(f"line {statement.lineno}: nested too deeply to analyse")
    if trace is not None:
        trace.walked(walker, notes)
    ctx.finish()
    returns = (
        walker.project_returns(project.module) if project is not None and project.record else ()
    )
    walker.release()
    return ctx.findings, notes, walker.project_calls(), returns


class _Walker(FunctionResultsMixin):
    def __init__(
        self,
        ctx: Context,
        memo: FunctionMemo | None,
        definitions: Definitions,
        repaired: frozenset[int],
        trace: Trace | None = None,
        *,
        project: ProjectView | None = None,
        links: ModuleLinks | None = None,
    ) -> None:
        self.ctx = ctx
        self.trace = trace
        self.evaluator = ctx.evaluator
        self.evaluator.definitions = definitions
        self.evaluator.text_of = self.text_of
        self.definitions = definitions
        self.memo = memo
        self.repaired = repaired
        self.call_sites: defaultdict[str, CallSites] = defaultdict(CallSites)
        # per scope being walked: its function definitions, walked once the scope is done
        self._deferred_functions: list[list[tuple[Function, Scope, bool]]] = []
        self._recordings: list[Recording] = []
        # per walk: fingerprints of names looked up in a scope, device variables in scope
        # (keyed by the scope's id; scopes live as long as the walk)
        self._looked_up: dict[
            tuple[int, int], tuple[Scope, dict[str, tuple[object, Value | None]]]
        ] = {}
        self._devices: dict[int, tuple[Scope, tuple[str, ...]]] = {}
        # the names the tests around the walked statement prove to hold dicts
        self._mappings: list[str] = []
        self._mapping_names: dict[int, frozenset[str]] = {}  # id of a def (alive for the walk)
        self._file_key: tuple[object, ...] | None = None
        self._shared_key: tuple[tuple[object, ...], tuple[object, ...]] | None = None
        self._texts: dict[int, str] = {}  # id of a function (alive for the walk) -> its source
        # the lambdas whose bodies a hot call ran (each reported once, whoever calls it)
        self._lambdas_run: set[int] = set()
        # where the file's calls into the other modules of its project go, and what those
        # modules pass its functions: a call from another file counts as one from this one
        self.links = links
        self._has_loops: dict[int, tuple[Function, bool]] = {}  # (the def kept: ids stay unique)
        self.project_returned: dict[tuple[str, str], Value] = {}
        self.helper_root = ""  # where the sources of the project's modules are read
        # the names the file cannot resolve are fastai's: it imports all of a fastai
        # module's names, or is a module of fastai's own package (relative imports)
        self.fastai = any(m.split(".", 1)[0] == fw.FASTAI_PACKAGE for m in definitions.stars) or (
            project is not None and project.module.split(".", 1)[0] == fw.FASTAI_PACKAGE
        )
        self.evaluator.fastai = self.fastai
        if project is not None:
            for key, arguments, hot_call, guessed in project.incoming:
                kept = self.received_from_project(key, arguments)
                self.merge_call(_GUESSED + key if guessed else key, kept, hot_call)
            imported = links.names if links is not None else {}
            for module, key, arguments, hot_call in project.inherited:
                # a base of another module calls this override per step (`overrides`)
                for local, passes in overriding(definitions, imported, module, key):
                    kept = self.received_from_project(local, arguments) if passes else ()
                    self.merge_call(local, kept, hot_call)
            self.project_returned = {(m, k): v for m, k, v in project.returns}
            if project.root and links is not None:
                self.helper_root = project.root
                self.evaluator.helper_reads = self.foreign_helper_reads
            if self.project_returned and links is not None:
                self.evaluator.foreign_return = self.foreign_return
                self.evaluator.foreign_records = self.foreign_records(links)

    def received_from_project(
        self, key: str, arguments: tuple[tuple[int | str, Value | None], ...]
    ) -> tuple[tuple[int | str, Value | None], ...]:
        """What the function or method ``key`` of the file keeps of what another module's
        call passes it (`received`); a def the file does not hold keeps no guess."""
        owner, _, name = key.rpartition(".")
        function = (
            self.definitions.methods.get(owner, {}).get(name)
            if owner
            else self.definitions.functions.get(name)
        )
        if function is None:
            return _without_guesses(arguments)
        return received(arguments, function, bool(owner) and not is_static(function))

    def project_calls(self) -> tuple[ProjectCall, ...]:
        """The calls the walk saw into the project's other modules."""
        calls = []
        for key, sites in self.call_sites.items():
            if key.startswith(_PROJECT):
                module, _, name = key[len(_PROJECT) :].partition(":")
                guessed = name.startswith(_GUESSED)
                arguments = tuple(sorted(sites.arguments.items(), key=lambda a: str(a[0])))
                calls.append(
                    ProjectCall(
                        module, name.removeprefix(_GUESSED), arguments, sites.hot_call, guessed
                    )
                )
        if self.links is not None:
            # the classes the file imports: what their modules build their records with
            # (a call with nothing passed and no loop tells the callee nothing)
            calls.extend(
                ProjectCall(module, member, (), None)
                for module, member in sorted(set(self.links.names.values()), key=repr)
                if member is not None and member[:1].isupper()
            )
        return tuple(calls)

    def foreign_records(
        self, links: ModuleLinks
    ) -> dict[str, tuple[ast.ClassDef, dict[str, Value]]]:
        """The record classes the file imports by name from other modules of the project
        (`from .beam_search import Hypothesis`), with the GPU values their modules build
        each field with; a name the file defines itself is its own."""
        found: dict[str, tuple[ast.ClassDef, dict[str, Value]]] = {}
        for local, (module, member) in links.names.items():
            if member is None or local in self.definitions.classes:
                continue
            prefix = f"{member}{RECORD_FIELD}"
            fields = {
                k.removeprefix(prefix): v
                for (m, k), v in self.project_returned.items()
                if m == module and k.startswith(prefix)
            }
            if fields:
                stand_in = ast.ClassDef(
                    name=local, bases=[], keywords=[], body=[], decorator_list=[]
                )
                found[local] = (stand_in, fields)
        return found

    def foreign_return(self, func: ast.expr, judging: bool) -> Value | None:
        """What a call of ``func``, a function or method of another module of the project,
        returns where that module's walk knows it. A function judged apart from its callers
        (``judging``) resolves only names of the module, not its own locals."""
        assert self.links is not None
        function = None if judging else self.ctx.function
        owner = None if judging else self.evaluator.scope.enclosing_class()
        found = [
            self.project_returned[target]
            for target in self.links.targets(func, function, owner.name if owner else None)
            if target in self.project_returned
        ]
        return found[0] if len(set(found)) == 1 else None

    def foreign_helper_reads(self, func: ast.expr) -> tuple[str, HostReads] | None:
        """What a call of ``func``, a top-level function of another module of the project,
        reads on the host of what it is handed (`helper_reads`), with the function's name;
        None for anything else (a method, a function of the file)."""
        assert self.links is not None
        if isinstance(func, ast.Name) and (
            func.id in self.definitions.functions or func.id in self.definitions.classes
        ):
            return None
        for module, key in self.links.targets(func, self.ctx.function, None):
            if key is not None and "." not in key:
                reads = helper_reads(self.helper_root, module, key)
                return (f"{module}.{key}", reads) if reads else None
        return None

    def project_returns(self, module: str) -> tuple[ProjectReturn, ...]:
        """What the module's functions and methods return, as a call from another module
        reads it (judged from each body with its parameters unknown)."""
        definitions = self.definitions
        functions = list(definitions.functions.items())
        functions += [
            (f"{cls}.{name}", f)
            for cls, methods in definitions.methods.items()
            for name, f in methods.items()
            if not name.startswith("__")
        ]
        found = []
        for key, function in functions:
            if key in definitions.duplicated or not _returns_something(function):
                continue
            value = returnable(self.evaluator.returned_surely(function))
            if value is not None:
                found.append(ProjectReturn(module, key, value))
        for name, cls in self.evaluator.record_classes().items():
            for attr, held in self.evaluator.record_fields(cls).items():
                value = returnable(held)
                if value is not None and value.on_gpu:
                    found.append(ProjectReturn(module, f"{name}{RECORD_FIELD}{attr}", value))
        return tuple(found)

    def release(self) -> None:
        """Breaks the walker's cycle (its evaluator reads texts through it), so that a walk
        is freed as soon as it ends, not by a collection of the whole heap."""
        self.evaluator.text_of = None

    # -- scopes -------------------------------------------------------------------------

    def scope_body(self, body: list[ast.stmt]) -> None:
        """Walk a module or function body, then the functions and methods defined in it."""
        self._deferred_functions.append([])
        self.block(body)
        functions = self._deferred_functions.pop()
        for function, scope, is_method in self.call_order(functions):
            self.function_body(function, scope, is_method)

    def call_order(
        self, functions: list[tuple[Function, Scope, bool]]
    ) -> list[tuple[Function, Scope, bool]]:
        """Callers before callees, so that each body is walked knowing what every caller
        passes it and whether one calls it per step; a class's constructor before its other
        methods, which read the attributes it sets. Cycles are broken in reverse source
        order (callees are usually defined before their callers)."""
        if len(functions) < 2:
            return functions
        # who may call whom, read from the text (a name followed by `(`): an edge too many
        # only changes the order, and the text is far quicker to scan than the tree
        keys: list[str] = []
        calls: list[frozenset[str]] = []
        # the classes (None: the module) whose functions bear each name
        owners: defaultdict[str, set[int | None]] = defaultdict(set)
        for function, scope, is_method in functions:
            owners[function.name].add(id(scope) if is_method else None)
        for function, scope, is_method in functions:
            # `Class(...)` runs its __init__
            keys.append(scope.name if is_method and function.name == "__init__" else function.name)
            text = self.text_of(function)
            # (the same functions, keystroke after keystroke: the memo keeps their names)
            called = (
                self.memo.called_in(text)[0]
                if self.memo is not None
                else frozenset(CALLED.findall(text))
            )
            if fw.IGNITE_REGISTRATION in text:
                # `engine.add_event_handler(event, self.log)`: the engine calls it
                called = called | frozenset(_REGISTERED.findall(text))
            if function.name in called and _calls_of(function.name, text) < 2:
                # only its own `def name(`: no call of another class's method of that name
                called = called - {function.name}
            if is_method:
                # `self.model.train()` calls what the instance holds: not its own class's
                # method nor a module function (another class of the file may be held)
                own = {id(scope), None}
                mine = frozenset(n for n in called if n in owners and owners[n] <= own)
                called = called - held_calls_only(mine, text)
            calls.append(called)
        order = callers_first(
            keys,
            calls,
            [id(scope) if is_method else None for _, scope, is_method in functions],
            [is_method and f.name in CONSTRUCTORS for f, _, is_method in functions],
            [
                is_method and self.framework_step(f, scope) is not None
                for f, scope, is_method in functions
            ],
        )
        return [functions[index] for index in order]

    def framework_step(
        self, function: Function, scope: Scope
    ) -> tuple[str, list[str], bool] | None:
        """For a method a framework runs once per step (a LightningModule's training_step,
        a loss's forward): how messages name the loop that runs it, its parameters that get
        device data, and whether that they do is a guess."""
        framework = self.evaluator.step_classes.get(scope.name) if scope.kind == "class" else None
        if framework is None:
            if scope.kind != "class":
                return None
            return _step_by_signature(function) or self.module_forward(function, scope)
        wanted = fw.STEP_METHODS[framework].get(function.name)
        if wanted is None and framework == fw.LOSS and _hands_to_own_call(function):
            wanted = ()
        if wanted is None:
            return None
        parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)][1:]
        signature = fw.STEP_SIGNATURES.get(framework)
        if signature is not None and parameters[: len(signature)] != list(signature):
            return None  # not the framework's hook: a method of the same name
        if framework in fw.FASTAI_STEPS:
            if parameters != list(signature or ()):
                return None  # fastai's events take nothing but what `accumulate` is handed
            # the step's tensors are the learner's attributes (see `walk_function`)
            return fw.STEP_LOOPS[framework].format(function.name), [], True
        required = parameters[: len(parameters) - len(function.args.defaults)]
        if framework == fw.LOSS:
            if function.name in fw.LOSS_HOOKS and not _inherits_entry(
                self.definitions.methods.get(scope.name, {})
            ):
                # its own forward calls it: walked as that call, with what the forward passes
                return None
            # what the model produced and the batch: the required arguments, on the model's
            # device if the model is on one (which the file does not show)
            return f"the training step that computes {scope.name}", required, True
        if framework in fw.GUESSED_STEPS:
            # a library's hook, called by its own loop: the data it is handed is on the
            # model's device if the model is on one (which the file does not show)
            keywords = [a.arg for a in function.args.kwonlyargs]
            named = [p for p in (*parameters, *keywords) if p in wanted] if wanted else required
            return fw.STEP_LOOPS[framework].format(function.name), named, True
        named = [p for p in parameters if p in wanted]
        if not named and parameters and function.name.endswith("_step"):
            named = parameters[:1]  # `def training_step(self, data, index)`
        return f"the loop that runs {function.name}() once per batch", named, False

    def module_forward(
        self, function: Function, scope: Scope
    ) -> tuple[str, list[str], bool] | None:
        """The `forward` of a module class (see `module_forward`): run once per step, on
        the inputs it uses as tensors, on the model's device if it is on one (a guess)."""
        if not runs_per_call(
            function,
            scope.name,
            self.evaluator.module_classes,
            self.definitions,
            self.ctx.imports,
            # the names imported from the project's own modules by an absolute import
            own=frozenset(self.links.names) if self.links is not None else frozenset(),
        ):
            return None
        inputs = tensor_inputs(function, self.ctx.imports)
        return f"{_FORWARD_STEP} {scope.name}.{function.name}", inputs, True

    def fastai_learners(
        self, function: Function, enclosing: Scope, is_method: bool, step: bool
    ) -> tuple[str, ...]:
        """The names a fastai callback's or metric's method reads the learner's step
        tensors through: in any method of a callback, its own attributes and its learner's
        (`self.loss`, `self.learn.pred`: a callback looks up on its learner what it does not
        hold); in a metric's `accumulate(learn)`, the learner it is handed."""
        if not is_method or enclosing.kind != "class" or not function.args.args:
            return ()
        framework = self.evaluator.step_classes.get(enclosing.name)
        this = function.args.args[0].arg
        if (
            framework == fw.FASTAI_CALLBACK
            and not is_static(function)
            and (step or not fw.FASTAI_EVENT.match(function.name))
        ):
            # a batch event, or a method of its own that one may call; not an epoch's event
            return (this, f"{this}.learn")
        if framework == fw.FASTAI_METRIC and step:
            return (function.args.args[1].arg,)
        return ()

    def text_of(self, function: Function) -> str:
        """The source of a function (its decorators, def and body), as the file has it: a
        decorator decides how the body runs (`@numba.njit` compiles its loops)."""
        text = self._texts.get(id(function))
        if text is None:
            lines = self.ctx.source.lines
            text = self._texts[id(function)] = "".join(
                lines[first_line(function) - 1 : function.end_lineno]
            )
        return text

    def site_key(self, function: Function, scope: Scope, is_method: bool) -> str:
        """The name calls of a function are recorded under: `f`, or `Class.method`."""
        return f"{scope.name}.{function.name}" if is_method else function.name

    def sites_of(self, function: Function, scope: Scope, is_method: bool) -> CallSites | None:
        """What the calls that reach a function pass it, the sure ones and the guessed ones
        together; `guessed` when there are only guessed ones."""
        key = self.site_key(function, scope, is_method)
        sure, guessed = self.call_sites.get(key), self.call_sites.get(_GUESSED + key)
        if guessed is None:
            return sure
        if sure is None:
            return CallSites(dict(guessed.arguments), guessed.hot_call, guessed=True)
        arguments = dict(sure.arguments)
        for name, value in guessed.arguments.items():
            arguments[name] = merge(arguments.get(name), value)
        return CallSites(arguments, sure.hot_call or guessed.hot_call)

    def walk_function(
        self, function: Function, enclosing: Scope, is_method: bool, sites: CallSites | None
    ) -> None:
        if _compiled(function):
            return  # its loops run as machine code, on the host or in a kernel, not in Python
        ctx = self.ctx
        scope = Scope("function", function.name, enclosing)
        positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        scope.parameters = frozenset(positional) | {a.arg for a in function.args.kwonlyargs}
        if is_method and positional and not is_static(function):
            positional = positional[1:]
        host = _host_annotated(function)
        for index, name in enumerate(positional):
            value = None
            if sites is not None and name not in host:
                by_position, by_name = sites.arguments.get(index), sites.arguments.get(name)
                # passed by position by some calls and by name by others: what both pass
                value = by_name if by_position is None else by_position
                if by_position is not None and by_name is not None:
                    value = merge(by_position, by_name)
            scope.bind(name, value)
        for argument in (*function.args.kwonlyargs, function.args.vararg, function.args.kwarg):
            if argument is not None:
                value = (
                    sites.arguments.get(argument.arg)
                    if sites and argument.arg not in host
                    else None
                )
                scope.bind(argument.arg, value)
        for argument in (
            *function.args.posonlyargs,
            *function.args.args,
            *function.args.kwonlyargs,
        ):
            if scope.bindings.get(argument.arg) is None and argument.annotation is not None:
                # `hyp: Hypothesis`: an object of a record class of the file
                record = self.evaluator.record_of(argument.annotation)
                if record is not None:
                    scope.bind(argument.arg, record)
        for name in _few_by_default(function):
            if scope.bindings.get(name) is None:
                scope.bind(name, Value(Kind.FEW))  # `policy_delay: int = 2`
        for name in _cpu_by_default(function):
            if scope.bindings.get(name) is None:
                scope.bind(name, Value(Kind.HOST))  # `device="cpu"`: no GPU by its name
        for name, default in _lambda_defaults(function):
            # `output_transform=lambda x, y, y_pred, loss: loss.item()`: a call of the
            # parameter runs the default for every caller that passes none
            scope.bind(name + _DEFAULT, Value(Kind.FUNCTION, origin=default))
            if scope.bindings.get(name) is None:
                scope.bind(name, Value(Kind.FUNCTION, origin=default))
        handler = self.engine_handler(function)
        registered = sites is not None and sites.hot_call == _engine_call(function.name)
        if (handler or registered) and positional:
            # the engine it is handed first: what its step returned, on the model's device
            # (which the file does not show)
            scope.bind(f"{positional[0]}.{fw.IGNITE_OUTPUT}", _ENGINE_OUTPUT)
        for name in _engine_annotated(function, ctx):
            scope.bind(f"{name}.{fw.IGNITE_OUTPUT}", _ENGINE_OUTPUT)
        step = self.framework_step(function, enclosing) if is_method else None
        for holder in self.fastai_learners(function, enclosing, is_method, step is not None):
            for name in fw.FASTAI_STEP_ATTRIBUTES:
                # the step's tensors, on the learner's device (which the file does not show)
                scope.bind(f"{holder}.{name}", Value(Kind.GPU, exact=False, guessed=True))
            for name in fw.FASTAI_HOST_ATTRIBUTES:
                scope.bind(f"{holder}.{name}", Value(Kind.HOST))
        if step is not None:
            # the framework moved the batch to the device before calling the step
            for name in step[1]:
                known = scope.bindings.get(name)
                if known is not None and known.kind is Kind.GPU and not known.guessed:
                    continue  # a call of the file hands it a GPU value: known, not guessed
                if name not in host:
                    scope.bind(name, Value(Kind.GPU, exact=False, guessed=step[2]))
            for name in positional:
                if name in fw.STEP_MODEL_PARAMETERS:
                    scope.bind(name, Value(Kind.GPU_MODULE))  # the model it trains
            if step[0].startswith(_FORWARD_STEP):
                for name in saved_by_forward(function):
                    # what the forward saved: tensors of its inputs' device (a guess)
                    scope.bind(name, Value(Kind.GPU, exact=False, guessed=True))
        # `def sample(model, x, sigmas): for i in …: model(x, sigmas[i] * s)`: what a loop
        # feeds a model it was handed is likely on the model's device (a guess: hints)
        for name in _fed_to_a_model(function):
            if scope.bindings.get(name) is None:
                scope.bind(name, Value(Kind.GPU, exact=False, guessed=True))
        saved = (
            self.evaluator.scope,
            ctx.loops,
            ctx.function,
            ctx.timers,
            ctx.likely,
            ctx.host_only,
            ctx.cuda_only,
            self.evaluator.in_forward,
        )
        self.evaluator.scope = scope
        self.evaluator.in_forward = step is not None and step[0].startswith(_FORWARD_STEP)
        self.evaluator.invalidate()
        ctx.function = function
        ctx.loops = []
        ctx.timers = 0
        ctx.host_only = 0
        ctx.cuda_only = 0
        ctx.likely = sites is not None and sites.guessed
        # a callee with loops of its own is the per-epoch level: its loops are the hot ones,
        # and what runs once per call (a read of the epoch's total) is no pitfall
        line = function.lineno - 1
        if step is not None:
            hook = Loop(function, line, frozenset(), None, called_from=step[0])
            hook.per_step = hook.hook = True
            hook.forward = step[0].startswith(_FORWARD_STEP)
            hook.backward = bool(_BACKWARD.search(self.text_of(function)))
            ctx.loops = [hook]
        elif handler:
            hook = Loop(function, line, frozenset(), None, called_from=_engine_call(function.name))
            hook.per_step = True
            ctx.loops = [hook]
        elif sites is not None and sites.hot_call:
            # (called per training step, it is per step, loops of its own or not)
            per_step = sites.hot_call.startswith(_STEP_CALL)
            per_item = sites.hot_call.endswith(_PER_ITEM)
            if per_step or per_item or not _has_loop(function.body):
                ctx.loops = [Loop(function, line, frozenset(), None, called_from=sites.hot_call)]
                ctx.loops[0].per_step = per_step
                # a backward pass of its own: what it reads is an autograd tensor on the
                # model's device, whatever the file shows of that device
                ctx.loops[0].backward = bool(_BACKWARD.search(self.text_of(function)))
        elif one_training_step(function.body):
            # it runs a backward pass and steps an optimizer: whoever trains calls it once
            # per step, and what it computes is on the model's device (which the file may not
            # show: then what it reads is a hint)
            called = f"the training loop that calls {function.name}() once per step"
            step_loop = Loop(function, line, frozenset(), None, called_from=called)
            step_loop.per_step = step_loop.backward = True
            ctx.loops = [step_loop]
        try:
            self.scope_body(function.body)
        finally:
            (
                self.evaluator.scope,
                ctx.loops,
                ctx.function,
                ctx.timers,
                ctx.likely,
                ctx.host_only,
                ctx.cuda_only,
                self.evaluator.in_forward,
            ) = saved
            self.evaluator.invalidate()

    # -- statements ---------------------------------------------------------------------

    def block(self, body: list[ast.stmt]) -> None:
        ctx = self.ctx
        # `if step % 100 != 0: return`: the rest of the block runs once per period
        guarded: Loop | None = None
        try:
            for index, statement in enumerate(body):
                ctx.statement = statement
                ctx.statements = (body, index)
                self.statement(statement)
                loop = ctx.loop
                if (
                    loop is not None
                    and not loop.guarded
                    and (
                        exits_unless_periodic(statement, ctx)
                        or _fallback_follows(statement, loop, ctx)
                    )
                ):
                    guarded = loop
                    loop.guarded = True
        finally:
            if guarded is not None:
                guarded.guarded = False

    def statement(self, node: ast.stmt) -> None:
        for check in CHECKS.get(type(node), ()):
            check(node, self.ctx)
        match node:
            case ast.Import() | ast.ImportFrom():
                self.ctx.imports.add(node)
                if self.fastai and _imports_all(node):
                    # fastai's modules are made to be imported whole, and hand out torch,
                    # numpy and torch.nn under their usual names (`torch.randperm(n)`)
                    aliases = self.ctx.imports.aliases
                    self.ctx.imports.bind_all(
                        (name, module)
                        for name, module in fw.FASTAI_EXPORTS.items()
                        if name not in aliases
                    )
                if self.ctx.imports.uses("cupy") or self.ctx.imports.uses("numba"):
                    self.ctx.facts.uses_gpu = True
            case ast.FunctionDef() | ast.AsyncFunctionDef():
                self.expressions(*node.decorator_list, *node.args.defaults)
                self.expressions(*(d for d in node.args.kw_defaults if d is not None))
                function = Value(Kind.FUNCTION, origin=node)
                self.bind(node.name, function)
                is_method = self.evaluator.scope.kind == "class"
                if is_method:
                    self.bind(f"self.{node.name}", function)  # what `self.name()` calls
                self._deferred_functions[-1].append((node, self.evaluator.scope, is_method))
            case ast.ClassDef():
                self.class_def(node)
            case ast.Assign(targets=targets, value=value):
                self.expression(value)
                for target in targets:
                    self.assign(target, value)
                made = self.made_record(node)
                if made is not None:
                    self.bind(made.name, Value(Kind.CLASS, origin=made))
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
                    if before is not None and before.kind is Kind.CPU_TENSOR:
                        gpu = before  # `total += counts.to(total.device)`: updated in place
                    self.bind(target.id, gpu if gpu is not None and gpu.on_gpu else before)
            case ast.Expr(value=value):
                self.expression(value)
                self.in_place_move(value)
                self.collect(value)
            case ast.For() | ast.AsyncFor():
                self.for_loop(node)
            case ast.While():
                self.while_loop(node)
            case ast.If():
                self.if_statement(node)
            case ast.With() | ast.AsyncWith():
                timer = False
                for item in node.items:
                    self.expression(item.context_expr)
                    if item.optional_vars is not None:
                        self.assign(item.optional_vars, item.context_expr)
                    timer = timer or _is_timer(item.context_expr)
                self.ctx.timers += timer
                try:
                    self.block(node.body)
                finally:
                    self.ctx.timers -= timer
            case ast.Try() | ast.TryStar():
                entry = self.evaluator.scope.snapshot()
                imported_before = dict(self.ctx.imports.aliases)
                self.block(node.body)
                self.block(node.orelse)
                cupy_here = cupy_bound(imported_before, self.ctx.imports.aliases)
                branches = [self.evaluator.scope.snapshot()]
                for handler in node.handlers:
                    # a handler runs when the body failed, often before its bindings happened
                    self.restore(entry)
                    if handler.type is not None:
                        self.expression(handler.type)
                    if handler.name:
                        self.bind(handler.name, None)
                    self.block(handler.body)
                    if cupy_here and catches_import_error(handler):
                        # `try: import cupy as np / except ImportError: import numpy as np`:
                        # where CuPy imports, the code runs on it, and that is the run whose
                        # GPU costs matter; the fallback does not rename the module
                        self.ctx.imports.bind_all(cupy_here.items())
                    branches.append(self.evaluator.scope.snapshot())
                self.join(*branches)
                self.block(node.finalbody)
            case ast.Match(subject=subject, cases=cases):
                self.expression(subject)
                entry = self.evaluator.scope.snapshot()
                branches = []
                for case in cases:
                    self.restore(entry)
                    if case.guard is not None:
                        self.expression(case.guard)
                    self.block(case.body)
                    branches.append(self.evaluator.scope.snapshot())
                self.join(entry, *branches)
            case ast.Assert(test=test, msg=msg):
                self.expression(test)
                if msg is not None:
                    self.failure_only(msg)  # evaluated only when the test is false
            case ast.Raise(exc=exc, cause=cause):
                # `else: raise ValueError(f"... {kind}")`: evaluated once, when it raises,
                # wherever the branch stands (an `if` ending in raise is a guard already)
                for part in (exc, cause):
                    if part is not None:
                        self.failure_only(part)
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
            if name in fw.DATALOADERS or local in evaluator.loader_classes:
                evaluator.loader_classes.add(node.name)
            framework = evaluator.step_classes.get(local) or _step_framework(
                name, base, self.definitions, fastai=self.fastai
            )
            if framework is not None:
                evaluator.step_classes[node.name] = framework
        if node.name not in evaluator.step_classes:
            own = _library_base(node.name, self.ctx.imports)
            if own is not None:
                evaluator.step_classes[node.name] = own
        if node.name not in evaluator.step_classes and (
            fw.LOSS_CLASS.search(node.name)
            or any(fw.LOSS_CLASS.search(simple_name(b)) for b in node.bases)
            or (node.name in evaluator.module_classes and _forward_computes_loss(node))
        ):
            # a criterion, or a head whose forward computes the training loss
            # (`return self.get_losses(...)`): called once per step
            evaluator.step_classes[node.name] = fw.LOSS
        saved = evaluator.scope
        evaluator.scope = Scope("class", node.name, saved)
        for name in _stored_cpu_devices(node):
            # `super().__init__(device=device)` with `device="cpu"`: the base class keeps it
            evaluator.scope.bind(name, Value(Kind.HOST))
        saved_loops, self.ctx.loops = self.ctx.loops, []
        try:
            # its methods are walked with the functions of the enclosing scope, once every
            # caller there has been seen
            self.block(node.body)
        finally:
            evaluator.scope = saved
            self.ctx.loops = saved_loops
            evaluator.invalidate()
        self.bind(node.name, Value(Kind.CLASS, origin=node))

    def made_record(self, node: ast.Assign) -> ast.ClassDef | None:
        """The record class a module-level `State = namedtuple("State", "t y")` makes, as
        the file's definitions hold it."""
        if self.evaluator.scope.kind != "module":
            return None
        written = record_made(node)
        made = self.definitions.classes.get(written.name) if written is not None else None
        return made if made is not None and made.lineno == node.lineno else None

    def for_loop(self, node: ast.For | ast.AsyncFor) -> None:
        self.expression(node.iter)
        before = self.evaluator.scope.snapshot()
        iterates = self.iterated(node.iter)
        self.bind_loop_target(node.target, node.iter)
        targets = frozenset(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
        per_epoch, trains, backward = self.loop_facts(node)
        loop = Loop(
            node,
            node.lineno - 1,
            targets,
            iterates,
            statement=node,
            block=self.ctx.statements,
            whole_items=_whole_items(node.target, node.iter, self.ctx.function),
            per_epoch=per_epoch,
            trains=trains,
            backward=backward,
        )
        # a body that ends in break runs once; one over what a collective gathered runs
        # once per process of the group, after the collective: a handful of items
        loop.guarded = leaves_loop(node.body) or self.per_rank(node.iter)
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
        scope = self.evaluator.scope
        tested_on_gpu = {n for n in _names_read(node.test) if _holds_gpu(scope.lookup(n))}
        per_epoch, trains, backward = self.loop_facts(node)
        loop = Loop(
            node,
            node.lineno - 1,
            frozenset(),
            None,
            statement=node,
            block=self.ctx.statements,
            per_epoch=per_epoch,
            trains=trains,
            backward=backward,
        )
        loop.guarded = leaves_loop(node.body)
        self.ctx.loops.append(loop)
        try:
            self.ctx.statement = node
            self.exit_test(node.test)  # the test runs on every iteration
            self.block(node.body)
            self.retest(node, tested_on_gpu)
        finally:
            self.ctx.loops.pop()
        self.join(before, self.evaluator.scope.snapshot())
        self.block(node.orelse)

    def retest(self, node: ast.While, tested_on_gpu: set[str]) -> None:
        """`norm = 0` … `while norm < 1:` … `norm = xp.linalg.norm(v)`: from the second
        iteration on, the test reads what the body bound last. Walked again with those
        values where the body made a name it tests a GPU value that was none before the
        loop (``tested_on_gpu``: those the first walk of the test saw on the GPU already)."""
        scope = self.evaluator.scope
        carried = [
            name
            for name in _names_read(node.test) - tested_on_gpu
            if _holds_gpu(scope.lookup(name))
        ]
        if not carried:
            return
        self.evaluator.invalidate()
        self.ctx.statement = node
        for check in CHECKS.get(ast.While, ()):
            check(node, self.ctx)
        self.exit_test(node.test)

    def exit_test(self, test: ast.expr, deciding: bool = True) -> None:
        """Walk a test the loop may stop on (`while norm < 1`, `if done.all(): break`): the
        program needs its answer there, which the rules word as such."""
        self.ctx.deciding_exit = deciding
        try:
            self.expression(test)
        finally:
            self.ctx.deciding_exit = False

    def if_statement(self, node: ast.If) -> None:
        # `if (tokens == eos).all(): break`: the loop cannot stop without this read
        self.exit_test(node.test, self.ctx.loop is not None and leaves_loop(node.body))
        loop = self.ctx.loop
        open_loop = loop is not None and not loop.guarded
        periodic = open_loop and runs_once_per_period(node.test, self.ctx)
        guard = periodic or (open_loop and leaves_loop(node.body))
        # `if small: return self.exact(x)` in a function run per step: one of its paths,
        # whose calls run per call (its reads stay judged as a way out)
        ending = guard and not periodic and _ends_the_call(loop, node.body)
        before = self.evaluator.scope.snapshot()
        # `if x.device.type == "cpu":` … `else:` (or the other way round): the branch for
        # the CPU reads no GPU value, whatever the names hold
        on_gpu = device_test(node.test)
        if guard:
            loop.guarded = True  # type: ignore[union-attr]
            loop.returning = ending  # type: ignore[union-attr]
        self.ctx.host_only += on_gpu is False
        # `if isinstance(a, list):`: in the branch, `a` is a list (of tensors, maybe), not
        # the one GPU array a caller passes on another path (a container of GPU values, a
        # batch or a loss dict, stays what it is: its items are still on the GPU)
        for name in narrowed_to_host(node.test):
            held = self.evaluator.scope.lookup(name)
            if held is not None and held.array_on_gpu:
                self.bind(name, None)
        # `if isinstance(loss, float):`: a Python number there, whatever it held before
        self.narrow_to_scalar(narrowed_to_scalar(node.test))
        # `if isinstance(out, dict): for name in sorted(out)`: its keys, not its entries
        mappings = narrowed_to_mapping(node.test)
        self._mappings.extend(mappings)
        # `if not torch.isfinite(loss): warnings.warn(f"… {loss.item()}")`: the branch runs
        # only when something went wrong, and its reads at most that once
        failure = _reports_failure(node.body, self.ctx)
        self.ctx.host_only += failure
        cuda_only = needs_cuda(node.test)
        self.ctx.cuda_only += cuda_only
        try:
            self.block(node.body)
        finally:
            self.ctx.host_only -= on_gpu is False
            self.ctx.host_only -= failure
            self.ctx.cuda_only -= cuda_only
            del self._mappings[len(self._mappings) - len(mappings) :]
            if guard:
                loop.guarded = loop.returning = False  # type: ignore[union-attr]
        after_body = self.evaluator.scope.snapshot()
        self.restore(before)
        # `if not isinstance(loss, float): …`: on the path that skips it, a Python number
        self.narrow_to_scalar(scalar_unless(node.test))
        # `if isinstance(x, torch.Tensor): return …`: past it, x is no tensor
        for name in tensor_unless(node.test):
            held = self.evaluator.scope.lookup(name)
            if held is not None and held.kind is Kind.GPU:
                self.bind(name, None)
        self.ctx.host_only += on_gpu is True
        try:
            self.block(node.orelse)
        finally:
            self.ctx.host_only -= on_gpu is True
        after_else = self.evaluator.scope.snapshot()
        # a branch that ends in `raise` or `return` binds nothing the code after it sees
        if not falls_through(node.body):
            self.join(after_else)
        elif node.orelse and not falls_through(node.orelse):
            self.join(after_body)
        else:
            self.join(after_body, after_else)

    def narrow_to_scalar(self, names: list[str]) -> None:
        for name in names:
            held = self.evaluator.scope.lookup(name)
            if held is not None and held.kind is not Kind.HOST:
                self.bind(name, Value(Kind.HOST))

    def failure_only(self, node: ast.expr) -> None:
        """Walk what runs only when something failed (an assert's message): it binds and
        calls as written, and costs no GPU time per step."""
        self.ctx.host_only += 1
        try:
            self.expression(node)
        finally:
            self.ctx.host_only -= 1

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
                self.asks_device(node)
                if self.mapped_lambda(node):
                    return
                if self.called_lambda(node):
                    return
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
                whole = _whole_items(generator.target, generator.iter, self.ctx.function)
                loop = Loop(node, node.lineno - 1, targets, iterates, whole_items=whole)
                # `[int(s.item()) for s in sizes]` after `dist.all_gather(sizes, size)`
                loop.guarded = self.per_rank(generator.iter)
                self.ctx.loops.append(loop)
                pushed += 1
                self.expressions(*generator.ifs)
            self.expressions(*results)
            check = self.ctx.comprehension_checks.pop(id(node), None)
            if check is not None:
                check()
        finally:
            del self.ctx.loops[len(self.ctx.loops) - pushed :]
            evaluator.scope = outer
            evaluator.invalidate()

    def lambda_(self, node: ast.Lambda) -> None:
        """A lambda on its own: its body runs when something calls it, not here."""
        evaluator = self.evaluator
        outer, loops = evaluator.scope, self.ctx.loops
        evaluator.scope = Scope("function", "<lambda>", outer)
        self.ctx.loops = []
        try:
            self.expression(node.body)
        finally:
            evaluator.scope, self.ctx.loops = outer, loops
            evaluator.invalidate()

    def mapped_lambda(self, call: ast.Call) -> bool:
        """`map(lambda t: t.item(), xs)`, `sorted(xs, key=lambda t: t.item())`: the lambda
        runs once per item, here, like a comprehension's body. False when ``call`` is no
        such call (it is then walked as any other)."""
        found = _mapped_lambda(call)
        if found is None:
            return False
        function, iterables, label = found
        self.expression(call.func)
        for argument in (*call.args, *(k.value for k in call.keywords)):
            if argument is not function:
                self.expression(argument)
        evaluator = self.evaluator
        outer = evaluator.scope
        evaluator.scope = Scope("comprehension", "<lambda>", outer)
        parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        for parameter, iterable in zip(parameters, iterables, strict=False):
            held = element_of(self.iterated(iterable))
            self.bind(parameter, held if held is not None else self.listed_records(iterable))
        iterates = self.iterated(iterables[0])
        keyed = simple_name(call.func) if any(k.value is function for k in call.keywords) else None
        self.ctx.loops.append(
            Loop(
                function,
                call.lineno - 1,
                frozenset(parameters),
                iterates,
                label=label,
                key_of=keyed,
            )
        )
        try:
            for check in CHECKS.get(ast.Lambda, ()):
                check(function, self.ctx)  # (a key's checks see its parameters bound)
            self.expression(function.body)
        finally:
            self.ctx.loops.pop()
            evaluator.scope = outer
            evaluator.invalidate()
        return True

    def called_lambda(self, call: ast.Call) -> bool:
        """`output_transform(x, y, y_pred, loss)` where the name holds a lambda (a
        parameter's default): its body runs here, on what the call hands it. The loss a
        training step runs its backward pass on is a tensor on the model's device, which
        the file may not show; and the caller may pass another function: what the body reads
        is a hint. False when ``call`` is no such call."""
        run = _lambdas_held(self.evaluator, call.func)
        if not run:
            return False
        self.ctx.definitions_read(list(run))  # bodies of elsewhere in the file: no memo
        for argument in (call.func, *call.args, *(k.value for k in call.keywords)):
            self.expression(argument)
        loop = self.ctx.hot_loop
        if loop is None:
            return True  # run once, or as often as a caller the file does not show
        for function in run:
            if id(function) not in self._lambdas_run:
                self._lambdas_run.add(id(function))
                self.run_lambda(function, call, loop)
        return True

    def run_lambda(self, function: ast.Lambda, call: ast.Call, loop: Loop) -> None:
        """Walk a lambda's body as ``call`` in ``loop`` runs it."""
        losses = loop.backward_names() if loop.backward else frozenset()
        handed: dict[str, Value | None] = {}
        parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        for parameter, argument in zip(parameters, call.args, strict=False):
            handed[parameter] = self.handed_value(argument, losses)
        for named in call.keywords:
            if named.arg in parameters:
                handed[named.arg] = self.handed_value(named.value, losses)
        evaluator = self.evaluator
        outer, likely = evaluator.scope, self.ctx.likely
        evaluator.scope = Scope("function", "<lambda>", outer)
        for parameter in (*parameters, *(a.arg for a in function.args.kwonlyargs)):
            evaluator.scope.bind(parameter, handed.get(parameter))
        evaluator.invalidate()
        self.ctx.likely = True
        try:
            self.expression(function.body)
        finally:
            evaluator.scope, self.ctx.likely = outer, likely
            evaluator.invalidate()

    def handed_value(self, argument: ast.expr, losses: frozenset[str]) -> Value | None:
        """What a call hands a lambda: the argument's value, or, for the loss the step runs
        its backward pass on (or an expression of it), a tensor on the model's device."""
        value = self.evaluator.value(argument)
        if value is None and names_in(argument) & losses:
            return Value(Kind.GPU, exact=True, guessed=True)
        return value

    # -- bindings -----------------------------------------------------------------------

    def bind(self, name: str, value: Value | None) -> None:
        scope = self.evaluator.scope
        if "." in name and name.startswith("self."):
            # attributes set on self are seen by every method of the class, whichever of
            # the values its methods (and their branches) assign
            owner: Scope | None = scope
            while owner is not None and owner.kind != "class":
                owner = owner.parent
            if owner is not None:
                if name in owner.bindings:
                    value = merge(owner.bindings[name], value)
                scope = owner
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
                # `model, opt, loader = accelerator.prepare(model, opt, loader)`, and
                # `train, val = make_loaders(...)` of a function returning a tuple
                parts = self.evaluator.parts_of(value) if isinstance(value, ast.Call) else None
                if parts is not None and len(parts) == len(targets):
                    for sub_target, part in zip(targets, parts, strict=True):
                        self.bind_all(sub_target, part)
                    return
                self.bind_all(target, element_of(self.evaluator.value(value)))
            case ast.Starred(value=inner):
                self.bind_all(inner, element_of(self.evaluator.value(value)))
            case ast.Attribute():
                dotted = dotted_name(target)
                if dotted is not None:
                    self.bind(dotted, self.evaluator.value(value))
            case ast.Subscript(value=container):
                self.hold(container, self.evaluator.value(value))

    def bind_all(self, target: ast.expr, value: Value | None) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.bind(node.id, value)
            elif isinstance(node, ast.Attribute) and (name := dotted_name(node)):
                self.bind(name, value)

    def collect(self, value: ast.expr) -> None:
        """`losses.append(loss)`: the list now holds a GPU value."""
        match value:
            case ast.Call(
                func=ast.Attribute(value=container, attr="append" | "add" | "extend" | "insert"),
                args=[*_, item],
            ):
                self.hold(container, self.evaluator.value(item))

    def hold(self, container: ast.expr, item: Value | None) -> None:
        """A list or dict known to nothing else now holds ``item``."""
        name = dotted_name(container)
        if name is None or item is None or item.kind is not Kind.GPU:
            return
        if self.evaluator.scope.lookup(name) is None:
            self.bind(name, Value(Kind.GPU, item.lib, exact=False, guessed=item.guessed))

    def asks_device(self, call: ast.Call) -> None:
        """`xp = cp.get_array_module(x)`, `device = get_device(x)`: the code is written for
        ``x`` on either the host or a GPU, so it may be on a GPU (a guess: hints)."""
        if simple_name(call.func) not in fw.ARRAY_DEVICE_FUNCTIONS:
            return
        for argument in call.args:
            if isinstance(argument, ast.Name) and self.evaluator.value(argument) is None:
                self.bind(argument.id, Value(Kind.GPU, "cupy", exact=True, guessed=True))

    def in_place_move(self, value: ast.expr) -> None:
        """`model.to(device)` / `model.cuda()` as a statement moves a module in place;
        `batch_to_device(batch, device)` moves a batch's tensors in place."""
        if not isinstance(value, ast.Call):
            return
        moved = value.args[0] if value.args else None
        if isinstance(moved, ast.Name) and self.evaluator.moves_batch(value):
            self.bind(moved.id, Value(Kind.GPU, exact=False))
            return
        if not isinstance(value.func, ast.Attribute):
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

    def loop_facts(self, loop: ast.For | ast.AsyncFor | ast.While) -> tuple[bool, bool, bool]:
        """What a loop's body says of the loop: (`per_epoch`: it holds a loop over a loader,
        `trains`: it takes a training step or draws the next batch, `backward`: it runs a
        backward pass)."""
        per_epoch = any(
            (found := self.iterated(inner.iter)) is not None and found.kind in _LOADER_KINDS
            for inner in flat_statements(loop.body)
            if isinstance(inner, ast.For | ast.AsyncFor)
        )
        # the text is quicker to search than the tree
        text = "".join(self.ctx.source.lines[loop.lineno - 1 : loop.end_lineno])
        backward = bool(_BACKWARD.search(text)) or self.backward_by_helper(loop)
        return per_epoch, backward or bool(_TRAINS.search(text)), backward

    def backward_by_helper(self, loop: ast.For | ast.AsyncFor | ast.While) -> bool:
        """The loop hands a value to a function of the file (`run_backward(loss)`) or a
        method of its own class (`self._backward(loss)`) named for the backward pass, whose
        body runs one: a training loop whose step a subclass or plugin may override. (Only
        helpers so named are read: their names are in the loop's text, so a loop that calls
        none reads no other body, and its function's walk can still be remembered.)"""
        helpers: list[Function] = []
        for call in ast.walk(loop):
            if not isinstance(call, ast.Call) or not call.args:
                continue
            if "backward" not in simple_name(call.func).lower():
                continue
            if not isinstance(call.func, ast.Name | ast.Attribute):
                continue
            if isinstance(call.func, ast.Attribute) and simple_name(call.func.value) != "self":
                continue
            callee = self.evaluator.scope.lookup(dotted_name(call.func) or "")
            if (
                callee is not None
                and callee.kind is Kind.FUNCTION
                and isinstance(callee.origin, ast.FunctionDef | ast.AsyncFunctionDef)
            ):
                helpers.append(callee.origin)
        if not helpers:
            return False
        function = self.ctx.function
        outside = [
            helper
            for helper in helpers
            if function is None
            or not function.lineno <= helper.lineno <= (function.end_lineno or function.lineno)
        ]
        if outside:
            # bodies beyond the one walked decide: its result cannot be remembered
            self.ctx.definitions_read(list(outside))
        return any(_BACKWARD.search(self.text_of(helper)) for helper in helpers)

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
            case ast.Call(func=ast.Attribute(value=mapping, attr="items")), ast.Tuple(
                elts=[key, item]
            ):
                self.bind_all(key, None)  # the names of a batch's fields, a state dict's keys
                self.bind_all(item, element_of(self.evaluator.value(mapping)))
                return
        if self.keys_of(iterable):
            self.bind_all(target, None)
            return
        iterated = self.iterated(iterable)
        held = element_of(iterated)
        if held is None and isinstance(target, ast.Name):
            held = self.annotated_items(iterable) or self.listed_records(iterable)
        if isinstance(target, ast.Tuple) and _unknown_parts(iterable, iterated):
            held = None  # `for idx, out in outputs`: which part is a tensor, nothing says
        self.bind_all(target, held)

    def annotated_items(self, iterable: ast.expr) -> Value | None:
        """The items of a parameter annotated as a sequence of a record class of the file
        (`hyps: List[Hypothesis]`): objects of that class."""
        function = self.ctx.function
        if not isinstance(iterable, ast.Name) or function is None:
            return None
        arguments = function.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            if argument.arg == iterable.id:
                return self.evaluator.record_of(argument.annotation, items=True)
        return None

    def listed_records(self, iterable: ast.expr) -> Value | None:
        """The items of a list the function fills with records of the file only: every
        binding of the name is a list of such records (`best = []`), or a sorted copy or a
        slice of the list itself (`best = sorted(best, key=...)[:k]`), and everything put into
        it is a record built there (`best.append(Hypothesis(...))`): objects of that class."""
        function = self.ctx.function
        if not isinstance(iterable, ast.Name) or function is None:
            return None
        name = iterable.id
        found: set[str] = set()
        for node in ast.walk(function):
            match node:
                case ast.Assign(targets=targets, value=value) if any(
                    name in names_in(t) for t in targets
                ):
                    if not (
                        len(targets) == 1
                        and isinstance(targets[0], ast.Name)
                        and _same_list(value, name, found, self.evaluator)
                    ):
                        return None
                case ast.AugAssign(target=target) | ast.AnnAssign(target=target) if (
                    name in names_in(target)
                ):
                    return None
                case ast.For(target=target) | ast.comprehension(target=target) if name in names_in(
                    target
                ):
                    return None
                case ast.Call(
                    func=ast.Attribute(value=ast.Name(id=owner), attr=method), args=arguments
                ) if owner == name and method in _FILLS:
                    built = _record_built(arguments[-1:], found, self.evaluator)
                    if method != "append" or not built:
                        return None
        if len(found) != 1:
            return None
        return self.evaluator.record_of(ast.Name(id=found.pop()))

    def keys_of(self, node: ast.expr) -> bool:
        """Whether iterating ``node`` gives a mapping's keys: `x.keys()`, or a name a test
        proved a dict (`sorted(x)`, `list(x)` of one too)."""
        match node:
            case ast.Call(func=ast.Attribute(attr="keys"), args=[]):
                return True
            case ast.Call(func=ast.Name(id="sorted" | "list" | "reversed"), args=[inner]):
                return self.keys_of(inner)
            case ast.Name(id=name) if name in self._mappings:
                return True
        return may_give_keys(node) and gives_keys(node, self.mapping_names())

    def mapping_names(self) -> frozenset[str]:
        """The names the walked function's text proves mappings or key sets (`mappings`)."""
        function = self.ctx.function
        if function is None:
            return frozenset()
        found = self._mapping_names.get(id(function))
        if found is None:
            found = self._mapping_names[id(function)] = mapping_names(function)
        return found

    def record_call(self, node: ast.Call) -> None:
        """Remember what the file passes to its own functions and methods, and from where."""
        if isinstance(node.func, ast.Attribute) and self.evaluator.moves_to_gpu(node):
            self.ctx.facts.uses_gpu = True
        self.record_handler(node)
        targets = self.call_targets(node.func)
        foreign = False
        if not targets and self.links is not None:
            # a function or method of another module of the project
            owner = self.evaluator.scope.enclosing_class()
            targets = [
                f"{_PROJECT}{module}:{key}"
                for module, key in self.links.targets(
                    node.func, self.ctx.function, owner.name if owner else None
                )
            ]
            foreign = True
        if not targets:
            return
        arguments: list[tuple[int | str, Value | None]] = []
        # `Base.method(self, x)` of another module: `x` is its first parameter
        skip = 1 if foreign and self.links is not None and self.links.unbound(node) else 0
        for index, argument in enumerate(node.args[skip:]):
            if isinstance(argument, ast.Starred):
                break
            arguments.append((index, self.evaluator.value(argument)))
        for named in node.keywords:
            if named.arg is not None:
                arguments.append((named.arg, self.evaluator.value(named.value)))
        if foreign:
            arguments = [(k, portable(v)) for k, v in arguments]
        if self.ctx.loops and self.ctx.loops[0].forward:
            # a forward's guess about its inputs stays in its own body: what helpers make of
            # it (sizes unpacked from a result) is not known to be on the GPU
            arguments = list(_without_guesses(arguments))
        loop = self.ctx.hot_loop or self.ctx.returning_loop
        # handed the item of a loop over the samples of some data (`f(x[i])` in `for i in
        # range(n)`): the callee runs per item, loops of its own or not
        per_item = (
            loop is not None
            and loop.per_sample
            and any(
                names_in(argument) & loop.targets
                for argument in (*node.args, *(k.value for k in node.keywords))
            )
        )
        for target in targets:
            # a guessed caller makes a guessed call
            guessed = self.ctx.likely and not target.startswith(_GUESSED)
            key = _GUESSED + target if guessed else target
            if guessed and foreign:
                module, _, name = target.partition(":")
                key = f"{module}:{_GUESSED}{name}"
            hot_call = None
            if loop is not None and not loop.forward and not (foreign and self.outer_level(loop)):
                called = key.rpartition(":")[2].rsplit(".", 1)[-1].removeprefix(_GUESSED)
                per_step = loop.per_step or loop.over_loader or loop.trains
                hot_call = f"{_STEP_CALL if per_step else 'the loop that calls'} {called}()"
                if not per_step and per_item:
                    hot_call += _PER_ITEM
            passed = () if self.built_otherwise(node.func, target) else tuple(arguments)
            self.call_made(key, passed, hot_call)
            if hot_call is not None and not guessed and not foreign:
                self.inheritable_call(node, target, arguments, hot_call)

    def built_otherwise(self, func: ast.expr, target: str) -> bool:
        """`self.m(x)` reaching the override ``target`` of a subclass that builds itself
        otherwise (`builds_itself`): the call runs it, but x is not known for it."""
        owner = self.evaluator.scope.enclosing_class()
        if owner is None or not isinstance(func, ast.Attribute):
            return False
        cls = target.rpartition(".")[0]
        if cls == owner.name or self.definitions.method(cls, func.attr) is None:
            return False
        base = self.definitions.method(owner.name, func.attr)
        return (
            base is not None and base[0] != cls and builds_itself(self.definitions, cls, owner.name)
        )

    def inheritable_call(
        self,
        node: ast.Call,
        target: str,
        arguments: list[tuple[int | str, Value | None]],
        hot_call: str,
    ) -> None:
        """`self._update(...)` in a method of the class that defines `_update`, run per
        step: recorded for the project's index as the class's own call, which runs the
        override of each subclass in the other modules that inherits the caller."""
        if self.links is None or not (
            isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
        ):
            return
        key = self_call_key(self.definitions, self.ctx.function, target)
        if key is not None:
            kept = tuple((k, portable(v)) for k, v in arguments)
            self.call_made(f"{_PROJECT}{self.links.module}:{key}", kept, hot_call)

    def record_handler(self, node: ast.Call) -> None:
        """`engine.add_event_handler(Events.ITERATION_COMPLETED, f)`: the engine runs f, a
        function or method of the file, once per iteration."""
        func = node.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr == fw.IGNITE_REGISTRATION
            and len(node.args) >= 2
            and self.per_iteration_event(node.args[0])
        ):
            return
        for target in self.call_targets(node.args[1]):
            hot_call = _engine_call(target.rsplit(".", 1)[-1])
            # (a call like any other: a walk replayed from the memo registers it again)
            self.call_made(target, (), hot_call)

    def call_made(
        self, key: str, arguments: tuple[tuple[int | str, Value | None], ...], hot_call: str | None
    ) -> None:
        """A call the walked body makes: what the callee gets, and recorded for the memo's
        replay of this body (which merges it again without walking)."""
        for recording in self._recordings:
            recording.calls.append((key, arguments, hot_call))
        self.merge_call(key, arguments, hot_call)

    def per_iteration_event(self, event: ast.expr) -> bool:
        """An ignite event that fires on every iteration (`Events.ITERATION_COMPLETED`, or a
        name the walked function binds to one: the default, whatever filter it may add)."""
        if isinstance(event, ast.Name) and self.ctx.function is not None:
            return any(
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == event.id for t in node.targets)
                and self.per_iteration_event(node.value)
                for node in ast.walk(self.ctx.function)
                if not isinstance(node, ast.Name)
            )
        if not (isinstance(event, ast.Attribute) and event.attr in fw.IGNITE_ITERATION_EVENTS):
            return False
        qualified = self.ctx.qualname(event.value)
        if qualified is None:
            # `Events, _ = optional_import("ignite.engine", ..., "Events")`
            return isinstance(event.value, ast.Name) and event.value.id == fw.IGNITE_EVENTS
        return qualified.startswith("ignite.") and qualified.endswith("." + fw.IGNITE_EVENTS)

    def engine_handler(self, function: Function) -> bool:
        """`@engine.on(Events.ITERATION_COMPLETED)`: a handler the engine runs per iteration."""
        return any(
            isinstance(d, ast.Call)
            and isinstance(d.func, ast.Attribute)
            and d.func.attr == fw.IGNITE_DECORATOR
            and len(d.args) == 1
            and self.per_iteration_event(d.args[0])
            for d in function.decorator_list
        )

    def outer_level(self, loop: Loop) -> bool:
        """Whether ``loop`` is a function's own body, run per item of its caller's loop,
        where the function has loops of its own: those are its hot loops, and what it calls
        outside them runs once per outer item (a run of a solver, a reconstruction), not
        per step. Said of calls into other modules, whose own files cannot tell."""
        function = self.ctx.function
        if function is None or loop.node is not function or loop.per_step:
            return False
        has_loop = self._has_loops.get(id(function))
        if has_loop is None:
            has_loop = self._has_loops[id(function)] = (function, _has_loop(function.body))
        return has_loop[1]

    def call_targets(self, func: ast.expr) -> list[str]:
        """The keys of the file's functions and methods a call of ``func`` may run."""
        targets = self._call_targets(func)
        match func:
            case ast.Attribute(value=ast.Name(id="self"), attr=attr) if targets:
                owner = self.evaluator.scope.enclosing_class()
                if owner is not None:
                    caller = self.ctx.function
                    targets += overrides_reached(self.definitions, owner.name, attr, caller)
        return targets

    def _call_targets(self, func: ast.expr) -> list[str]:
        definitions = self.definitions
        evaluator = self.evaluator
        match func:
            case ast.Attribute(attr=attr, value=base) if attr not in definitions.defining:
                # no class of the file has such a method: only `self.net(x)`, a module of
                # the file held by self, may still run one (its forward)
                if "forward" not in definitions.defining or not (
                    isinstance(base, ast.Name) and base.id == "self"
                ):
                    return []
        callee = evaluator.value(func)
        if callee is not None:
            if callee.kind is Kind.FUNCTION and isinstance(callee.origin, Function):
                owner = definitions.owner.get(id(callee.origin))
                name = callee.origin.name
                return [f"{owner}.{name}" if owner else name]
            if callee.kind is Kind.CLASS and isinstance(callee.origin, ast.ClassDef):
                return _method_key(definitions, callee.origin.name, "__init__")
            if callee.kind in (Kind.MODULE, Kind.GPU_MODULE):
                made = callee.origin
                if isinstance(made, ast.Call) and isinstance(made.func, ast.Name):
                    return _method_key(definitions, made.func.id, "forward")
            return []
        match func:
            case ast.Name(id="self"):
                owner_scope = evaluator.scope.enclosing_class()
                return _method_key(definitions, owner_scope.name, "forward") if owner_scope else []
            case ast.Name(id=name) if name in definitions.methods:
                return _method_key(definitions, name, "__init__")
            case ast.Attribute(value=ast.Name(id="self"), attr=attr):
                owner_scope = evaluator.scope.enclosing_class()
                return _method_key(definitions, owner_scope.name, attr) if owner_scope else []
            case ast.Attribute(value=ast.Call(func=ast.Name(id="super")), attr=attr):
                owner_scope = evaluator.scope.enclosing_class()
                if owner_scope is None:
                    return []
                bases = definitions.bases.get(owner_scope.name, ())
                return [k for base in bases for k in _method_key(definitions, base, attr)][:1]
            case ast.Attribute(value=receiver, attr=attr) if (
                attr in definitions.defining and not attr.startswith("__")
            ):
                held = evaluator.value(receiver)
                if held is not None and held.kind is Kind.INSTANCE and held.origin is not None:
                    return _method_key(definitions, held.origin.name, attr)  # type: ignore[attr-defined]
                if held is not None and held.kind is Kind.CLASS:
                    return _class_level_key(definitions, held.origin, attr)
                if held is not None or self.ctx.qualname(receiver):
                    return []  # a library's object or module
                if self._made_by_import(receiver):
                    return []  # `kmeans = faiss.Kmeans(d, k)`: a library's object
                # an object whose class the file does not say: any class of the file that
                # defines the method may be the one
                return [f"{_GUESSED}{cls}.{attr}" for cls in definitions.defining[attr]]
        return []

    def per_rank(self, iterable: ast.expr) -> bool:
        """`for t in tensor_list` (or `zip(sizes, tensor_list)`) after `dist.all_gather(
        tensor_list, t)` in the same body: one item per process of the group."""
        function = self.ctx.function
        if function is None:
            return False
        iterated = _iterated_names(iterable)
        if not iterated:
            return False
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr not in _GATHERING:
                    continue
                if not (self.ctx.qualname(node.func) or "").startswith("torch.distributed."):
                    continue
                if any(isinstance(a, ast.Name) and a.id in iterated for a in node.args):
                    return True
        return False

    def _made_by_import(self, receiver: ast.expr) -> bool:
        """A name the walked body binds only to what calls of imported names return
        (`mat = faiss.PCAMatrix(…)`): an object of another module, not of the file."""
        if not isinstance(receiver, ast.Name) or self.ctx.function is None:
            return False
        made = [
            node.value.func
            for node in ast.walk(self.ctx.function)
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == receiver.id for t in node.targets)
            and isinstance(node.value, ast.Call)
        ]
        return bool(made) and all(self.ctx.qualname(func) is not None for func in made)

    def merge_call(
        self, name: str, arguments: tuple[tuple[int | str, Value | None], ...], hot_call: str | None
    ) -> None:
        sites = self.call_sites[name]
        for key, value in arguments:
            sites.arguments[key] = merge(sites.arguments.get(key), value)
        if sites.hot_call is None or _says_more(hot_call, sites.hot_call):
            sites.hot_call = hot_call  # a training step's call says the most, then an item's


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


# how messages name a step (of training, denoising, an environment) that calls a function
# (it runs per step, loops or not)
_STEP_CALL = "the step that calls"
# how messages name a loop that calls a function with each of its items
_PER_ITEM = " once per item"


def _engine_call(name: str) -> str:
    """How messages name an ignite engine's loop, which runs a handler per iteration (a
    step's call: its own loops or not, it runs once per step)."""
    return f"{_STEP_CALL} {name}() on each iteration of the engine"


def _says_more(new: str | None, old: str) -> bool:
    """Whether a call's loop (`hot_call`) says more of how often the callee runs than the
    one recorded: a training step's, then an item's, then any loop's."""
    if new is None:
        return False

    def rank(call: str) -> int:
        return 2 if call.startswith(_STEP_CALL) else 1 if call.endswith(_PER_ITEM) else 0

    return rank(new) > rank(old)


# a training step or the next batch: `loss.backward()`, `next(batches)`
# a backward pass: `loss.backward()`, or an optimizer handed the loss (`self.optim.step(loss)`,
# a wrapper that runs it) or a closure that computes it (`optimizer.step(closure)`)
_BACKWARD_PATTERN = r"\.backward\s*\(|optim\w*\.step\s*\(\s*[^)\s]"
_TRAINS = re.compile(_BACKWARD_PATTERN + r"|(?<![.\w])next\s*\(")
_BACKWARD = re.compile(_BACKWARD_PATTERN)
# the mark of a call recorded on a guess of what it reaches
_GUESSED = "?"
# the mark of a call into another module of the project (`>pkg.mod:Class.method`)
_PROJECT = ">"


def _returns_something(function: Function) -> bool:
    """Whether the body has a `return <value>` of its own (a quick test before judging)."""
    return any(
        isinstance(node, ast.Return) and node.value is not None
        for node in ast.walk(function)
        if not isinstance(node, ast.Lambda)
    )


_LOADER_KINDS = (Kind.LOADER, Kind.DEVICE_LOADER)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# context managers that time what runs inside them
_TIMER = re.compile(
    r"timer|timeit|stopwatch|elapsed|benchmark|profile|record_function|measure", re.IGNORECASE
)


def _calls_of(name: str, text: str) -> int:
    """How often ``text`` has `name(` as a whole name (its `def name(` among them, not
    `other_name(`), counting to 2."""
    found = 0
    start = text.find(name)
    while start >= 0 and found < 2:
        end = start + len(name)
        before = text[start - 1] if start else " "
        if not (before.isalnum() or before == "_") and text[end:].lstrip(" \t")[:1] == "(":
            found += 1
        start = text.find(name, end)
    return found


# calls that tell the user something went wrong: `warnings.warn`, `logger.warning(...)`
_FAILURE_REPORTS = frozenset({"warn", "warning", "error", "exception", "critical"})


def _reports_failure(body: list[ast.stmt], ctx: Context) -> bool:
    """A branch that only warns of a failure (and maybe raises): `warnings.warn(...)`,
    `logger.error(...)`, `raise`."""
    reports = False
    for statement in body:
        if isinstance(statement, ast.Raise):
            continue
        match statement:
            case ast.Expr(value=ast.Call(func=ast.Attribute(attr=attr) as func)) if (
                attr in _FAILURE_REPORTS
                and (ctx.qualname(func) == "warnings.warn" or attr != "warn")
            ):
                reports = True
            case ast.Expr(value=ast.Call(func=ast.Name() as func)) if (
                ctx.qualname(func) == "warnings.warn"
            ):
                reports = True
            case _:
                return False
    return reports


def _is_timer(context: ast.expr) -> bool:
    target = context.func if isinstance(context, ast.Call) else context
    return bool(_TIMER.search(simple_name(target)))


def _has_loop(body: list[ast.stmt]) -> bool:
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.For | ast.AsyncFor | ast.While):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return False


# names of loop variables and iterables whose items are whole batches or parts of one
_WHOLE_ITEMS = re.compile(
    r"(^|_)(batch|batches|minibatch|minibatches|micro_?batch\w*|chunk|chunks|shard|shards|"
    r"split|splits|inputs|ins|args|buffers|caches?|params|parameters)$",
    re.IGNORECASE,
)
_SPLITTING_METHODS = frozenset(
    {"split", "chunk", "tensor_split", "array_split", "items", "values", "keys"}
)


# collectives that fill a list with one item per process of the group
_GATHERING = frozenset({"all_gather", "gather", "all_gather_object", "gather_object"})


def _iterated_names(iterable: ast.expr) -> set[str]:
    """The lists a loop walks: `xs`, `zip(a, b)`, `enumerate(xs)`."""
    match iterable:
        case ast.Name(id=name):
            return {name}
        case ast.Call(func=ast.Name(id="zip" | "enumerate" | "reversed"), args=arguments):
            return {a.id for a in arguments if isinstance(a, ast.Name)}
    return set()


def _inherits_entry(methods: dict[str, Function]) -> bool:
    """Whether a loss class leaves its entry (`forward`, `__call__`, `loss`) to its base."""
    return not any(name in methods for name in ("forward", "__call__", "loss"))


def _forward_computes_loss(cls: ast.ClassDef) -> bool:
    """A module whose `forward` calls a method of its own named for a loss (`self.get_losses(
    …)`, `self.compute_loss(…)`): a detection head that computes its loss in training."""
    for statement in cls.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "forward":
            return any(
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "self"
                and "loss" in node.func.attr.lower()
                for node in ast.walk(statement)
            )
    return False


def _whole_items(target: ast.expr, iterable: ast.expr, function: Function | None) -> bool:
    """A loop whose items are whole batches or chunks, a batch's fields, a module's
    parameters, a function's `*args`, or a few distinct tensors written out (`for t in (x,
    mask, cos, sin)`): copying or running each is not per sample."""
    match iterable:
        case ast.Tuple() | ast.List() | ast.Set():
            return True
        case ast.IfExp(body=body, orelse=orelse):  # `for x in xs if many else [xs]`
            return _whole_items(target, body, function) or _whole_items(target, orelse, function)
        case ast.GeneratorExp(generators=[first, *_]) | ast.ListComp(generators=[first, *_]):
            # `for m in (m for m in net.modules() if …)`: the items of the inner loop
            return _whole_items(first.target, first.iter, function)
        case ast.Call(func=func, args=[_, _, _]) if simple_name(func) in ("range", "trange"):
            return True  # `for i in range(0, n, chunk)`: the starts of chunks
        case ast.Call(func=ast.Name(id="enumerate" | "reversed" | "list" | "tuple"), args=[inner]):
            return _whole_items(_enumerated(target), inner, function)
        case ast.Call(func=ast.Name(id="zip"), args=arguments) if arguments:
            return all(_whole_items(target, a, function) for a in arguments)
        case ast.Call(func=func, args=[inner, *_]) if _is_progress(func):
            return _whole_items(target, inner, function)
        case ast.Call(func=ast.Attribute(attr=attr)) if (
            attr in _SPLITTING_METHODS or attr in fw.MODULE_PARTS_METHODS
        ):
            return True
        case ast.Name(id=name) if function is not None and function.args.vararg is not None:
            if name == function.args.vararg.arg:
                return True
        case ast.Call(func=func) if simple_name(func) in ("chunk", "split", "tensor_split"):
            return True
    names = [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    iterated = (dotted_name(iterable) or "").rsplit(".", 1)[-1]
    return any(_WHOLE_ITEMS.search(n) for n in [*names, iterated] if n)


def _unknown_parts(iterable: ast.expr, value: Value | None) -> bool:
    """A container held in a name, on the GPU by a guess only and not known as one array
    (what a module's forward was handed, a model's outputs): the items unpacked from each
    of its elements may be numbers as well as tensors (`(layer, output)` pairs). What a
    call hands out (`zip(*top_k)`: values beside indices) is read by the call."""
    return (
        isinstance(iterable, ast.Name | ast.Attribute | ast.Subscript)
        and value is not None
        and value.kind is Kind.GPU
        and value.guessed
        and not value.exact
    )


def _fed_to_a_model(function: Function) -> list[str]:
    """The required parameters whose values reach, through the function's own assignments,
    the arguments of a call in a loop to a parameter named like a model (`model(x, sigma)`)."""
    arguments = function.args
    parameters = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    models = {p for p in parameters if fw.MODEL_NAME.search(p)}
    fed: set[str] = set()
    loops = [n for n in ast.walk(function) if isinstance(n, ast.For | ast.While)]
    inner: set[int] = set()  # loops an outer loop's walk has seen (breadth first: outer first)
    for loop in loops:
        if id(loop) in inner:
            continue
        for node in ast.walk(loop):
            if node is not loop and isinstance(node, ast.For | ast.While):
                inner.add(id(node))
            if isinstance(node, ast.Call) and _runs_a_model(node.func, models):
                for argument in (*node.args, *(k.value for k in node.keywords)):
                    fed |= names_in(argument)
    if not fed:
        return []
    assignments: list[tuple[set[str], ast.expr]] = []
    for statement in flat_statements(function.body):
        match statement:
            case ast.Assign(targets=targets, value=value):
                assignments.append((set().union(*(names_in(t) for t in targets)), value))
            case ast.AugAssign(target=target, value=value):
                assignments.append((names_in(target), value))
            case ast.For(target=ast.Name() as target, iter=iterable) if not (
                fw.LOADER_NAME.search(dotted_name(iterable) or "")
            ):
                # `for frame in features:` runs the model per frame of an array; a loader's
                # batches (`for x, y in loader`) are what it yields, not the loader
                assignments.append((names_in(target), iterable))
    grown = True
    while grown:  # what the fed names were computed from is fed too
        grown = False
        for bound, source in assignments:
            if bound & fed:
                more = names_in(source) - fed
                if more:
                    fed |= more
                    grown = True
    # only what every caller must pass: options with defaults are numbers, flags, callbacks
    required = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    required = required[: len(required) - len(arguments.defaults)]
    return [p for p in required if p in fed and p not in models and p not in ("self", "cls")]


def _runs_a_model(func: ast.expr, models: set[str]) -> bool:
    """A call of a model the function was handed (`model(x)`), or of one its object holds
    (`self.joint_network(x, y)`, `self.model(x)`): the model's forward."""
    match func:
        case ast.Name(id=called):
            return called in models
        case ast.Attribute(value=ast.Name(id="self"), attr=attr):
            # `self.add_module(name, layer)` builds the model, it does not run one
            return bool(fw.MODEL_NAME.search(attr)) and not fw.ACTS_ON_MODEL.match(attr)
    return False


_REGISTERED = re.compile(fw.IGNITE_REGISTRATION + r"\([^,()]+,\s*(?:self\.)?(\w+)")
_ENGINE_OUTPUT = Value(Kind.GPU, exact=False, guessed=True)


def _engine_annotated(function: Function, ctx: Context) -> list[str]:
    """The parameters annotated as an ignite `Engine` (`engine: Engine`)."""
    arguments = function.args
    every = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    return [
        a.arg
        for a in every
        if isinstance(a.annotation, (ast.Name, ast.Attribute))
        and ctx.qualname(a.annotation) in fw.IGNITE_ENGINE
    ]


def _host_annotated(function: Function) -> frozenset[str]:
    """The parameters annotated as text only (`ref: str`, `output: Sequence[str]`): whatever
    a call passes there, the function reads no array from them."""
    arguments = function.args
    every = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    return frozenset(a.arg for a in every if a.annotation is not None and _host_type(a.annotation))


def _host_type(annotation: ast.expr) -> bool:
    names = [n for n in ast.walk(annotation) if isinstance(n, (ast.Name, ast.Attribute))]
    if not names or not all(isinstance(n, ast.Name) for n in names):
        return False  # `torch.Tensor`, `np.ndarray`: an array may come
    found = {n.id for n in names if isinstance(n, ast.Name)}
    return bool(found & _HOST_SCALARS) and found <= _HOST_SCALARS | _HOST_CONTAINERS


# (only text: libraries annotate `timestep: int` and pass a 0-d tensor)
_HOST_SCALARS = frozenset({"str", "bytes"})
_HOST_CONTAINERS = frozenset(
    {
        "Sequence",
        "list",
        "List",
        "tuple",
        "Tuple",
        "Iterable",
        "Optional",
        "dict",
        "Dict",
        "Mapping",
    }
)


def _few_by_default(function: Function) -> list[str]:
    """The parameters whose default is a small whole number (2 to 4): how often something
    happens in steps, a delay, a count of a few."""
    return [
        argument.arg
        for argument, default in _defaults(function)
        if isinstance(default, ast.Constant) and is_few(default.value)
    ]


def _cpu_by_default(function: Function) -> list[str]:
    """The device parameters whose default is the CPU (`device="cpu"`,
    `device=torch.device("cpu")`): what the function computes on them is on the host
    unless a caller says otherwise."""
    return [
        argument.arg
        for argument, default in _defaults(function)
        if fw.DEVICE_NAME.match(argument.arg) and _names_the_cpu(default)
    ]


def _names_the_cpu(node: ast.expr | None) -> bool:
    match node:
        case ast.Constant(value="cpu"):
            return True
        case ast.Call(func=func, args=[ast.Constant(value="cpu")], keywords=[]):
            return (dotted_name(func) or "").endswith("device")
    return False


def _defaults(function: Function) -> list[tuple[ast.arg, ast.expr | None]]:
    """Each parameter with a default, and the default."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    return [
        *zip(
            positional[len(positional) - len(arguments.defaults) :],
            arguments.defaults,
            strict=True,
        ),
        *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True),
    ]


# after a parameter's name: the key its default lambda is bound under (no name ends so)
_DEFAULT = "="


def _lambdas_held(evaluator: Evaluator, func: ast.expr) -> list[ast.Lambda]:
    """The lambdas a call of ``func`` may run: the one its name holds, and the default of
    the parameter of that name (which runs for callers that pass none)."""
    if not isinstance(func, ast.Name):
        return []
    held: list[ast.Lambda] = []
    for name in (func.id, func.id + _DEFAULT):
        value = evaluator.scope.lookup(name)
        origin = value.origin if value is not None else None
        if isinstance(origin, ast.Lambda) and origin not in held:
            held.append(origin)
    return held


def _lambda_defaults(function: Function) -> list[tuple[str, ast.Lambda]]:
    """The parameters whose default is a lambda (`output_transform=lambda out: out`)."""
    return [
        (argument.arg, default)
        for argument, default in _defaults(function)
        if isinstance(default, ast.Lambda)
    ]


def _stored_cpu_devices(cls: ast.ClassDef) -> list[str]:
    """`self.device` / `self._device` where the class's `__init__` takes a device that
    defaults to the CPU and hands it on (to the base class that stores it) without setting
    either attribute itself."""
    init = next(
        (
            s
            for s in cls.body
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == "__init__"
        ),
        None,
    )
    if init is None or not cls.bases:
        return []
    assigned = {
        f"self.{t.attr}"
        for n in ast.walk(cls)
        if isinstance(n, ast.Assign | ast.AnnAssign | ast.AugAssign)
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    }
    stored = [f"self.{p}" for name in _cpu_by_default(init) for p in (name, f"_{name}")]
    return [name for name in stored if name not in assigned]


def _enumerated(target: ast.expr) -> ast.expr:
    """The item part of an `enumerate` loop's target (`i, batch` -> `batch`)."""
    if isinstance(target, ast.Tuple) and len(target.elts) == 2:
        return target.elts[1]
    return target


def _step_framework(
    qualified: str, base: ast.expr, definitions: Definitions, *, fastai: bool = False
) -> str | None:
    """The framework whose steps a class with base ``base`` (``qualified``: its qualified
    name, "" when the file cannot tell) defines. A base the file imports from its own
    package (`from .base import _BaseTrainer`) is a framework's by its name; its methods are
    steps only where their signature is the framework's (see `framework_step`). ``fastai``:
    the names the file cannot tell are fastai's (it imports all of a fastai module's names,
    or is a module of fastai's own package)."""
    if qualified.startswith(fw.FASTAI_PACKAGE + ".") or (not qualified and fastai):
        name = simple_name(base)
        if name.endswith("Callback"):
            return fw.FASTAI_CALLBACK
        if name in fw.FASTAI_METRICS:
            return fw.FASTAI_METRIC
        if qualified:
            return None
    if not qualified:
        if simple_name(base) not in definitions.relatives:
            return None
        return next(
            (f for end, f in fw.STEP_CLASSES.items() if simple_name(base).endswith(end)), None
        )
    last = qualified.rsplit(".", 1)[-1]
    if last == "Callback":
        # a Lightning Callback, however a package re-exports it: its hooks count only where
        # their parameters are Lightning's (see `framework_step`)
        return fw.LIGHTNING_CALLBACK
    if qualified.startswith(fw.IGNITE_METRICS_PACKAGE):
        return fw.IGNITE_METRIC  # `Metric`, or one of its subclasses there (`Entropy`)
    if not qualified.startswith(fw.STEP_CLASS_MODULES):
        return None
    framework = fw.STEP_CLASSES.get(last)
    home = fw.STEP_CLASS_HOMES.get(framework or "")
    return None if home is not None and not qualified.startswith(home) else framework


def _fallback_follows(statement: ast.stmt, loop: Loop, ctx: Context) -> bool:
    """`try: return self._forward(x)` then `except RuntimeError: ...` in the function a
    step runs: what follows the try runs only when it failed (an out-of-memory retry)."""
    return (
        loop.node is ctx.function
        and isinstance(statement, ast.Try)
        and bool(statement.handlers)
        and isinstance(statement.body[-1], ast.Return)
    )


# how messages name the step that runs a module's forward
_FORWARD_STEP = "the step that runs"


def _step_by_signature(function: Function) -> tuple[str, list[str], bool] | None:
    """A method with Lightning's step signature (`training_step(self, batch, batch_idx)`) in
    a class not known to be a LightningModule: a mixin of one, or an object its step hands
    the batch to (`self.task.training_step(batch, batch_idx)`). Lightning runs it once per
    batch, on the model's device, which the file does not show: a guess."""
    if function.name not in fw.LIGHTNING_STEPS:
        return None
    parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)][1:]
    if parameters[: len(fw.LIGHTNING_STEP_SIGNATURE)] != list(fw.LIGHTNING_STEP_SIGNATURE):
        return None
    return f"the loop that runs {function.name}() once per batch", parameters[:1], True


def _imports_all(node: ast.Import | ast.ImportFrom) -> bool:
    """`from fastai.vision.all import *`, `from ..basics import *`."""
    return isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)


def _library_base(name: str, imports: Imports) -> str | None:
    """The library whose hook base class a class of this name is, where the file defines it
    itself: the library's own file (it imports the library's modules by their absolute
    name) defines `class Agent:` or `class BaseBuffer(ABC):`, whose hooks its loops call as
    they call a subclass's."""
    framework = fw.STEP_CLASSES.get(name)
    home = fw.STEP_CLASS_HOMES.get(framework or "")
    if framework is None or home is None:
        return None
    return framework if imports.uses(home.rstrip(".")) else None


def _mapped_lambda(call: ast.Call) -> tuple[ast.Lambda, list[ast.expr], str] | None:
    """The lambda a call runs once per item, the iterables it gets its items from, and the
    call's name for messages."""
    name = simple_name(call.func)
    if name in ("map", "filter", "starmap") and len(call.args) >= 2:
        function, *iterables = call.args
        if isinstance(function, ast.Lambda) and not any(
            isinstance(i, ast.Starred) for i in iterables
        ):
            return function, iterables, f"the `{name}()` over its items"
        return None
    if name in ("sorted", "min", "max") and len(call.args) == 1:
        key = keyword(call, "key")
        if key is not None and isinstance(key.value, ast.Lambda):
            return key.value, [call.args[0]], f"the `{name}()` over its items"
    if isinstance(call.func, ast.Attribute) and name == "sort" and not call.args:
        key = keyword(call, "key")  # `hyps.sort(key=lambda h: h.score)`
        if key is not None and isinstance(key.value, ast.Lambda):
            return key.value, [call.func.value], "the `sort()` over its items"
    return None


_FILLS = frozenset({"append", "extend", "insert", "__setitem__"})


def _record_built(items: list[ast.expr], found: set[str], evaluator: Evaluator) -> bool:
    """Whether ``items`` is one call of a record class of the file (`Hypothesis(...)`),
    whose name goes into ``found``."""
    match items:
        case [ast.Call(func=ast.Name(id=cls))] if evaluator.record_of(ast.Name(id=cls)):
            found.add(cls)
            return True
    return False


def _same_list(value: ast.expr, name: str, found: set[str], evaluator: Evaluator) -> bool:
    """`[]`, `[Hypothesis(...)]`, `sorted(best, ...)`, `best[:k]`: a binding that keeps a
    list of records one (what it builds goes into ``found``)."""
    match value:
        case ast.List(elts=elements):
            return all(_record_built([e], found, evaluator) for e in elements)
        case ast.Subscript(value=inner, slice=ast.Slice()):
            return _same_list(inner, name, found, evaluator)
        case ast.Call(func=ast.Name(id="sorted" | "list"), args=[ast.Name(id=inner)]):
            return inner == name
    return False


def _method_key(definitions: Definitions, cls: str, name: str) -> list[str]:
    resolved = definitions.method(cls, name)
    return [f"{resolved[0]}.{name}"] if resolved is not None else []


def _ends_the_call(loop: Loop | None, body: list[ast.stmt]) -> bool:
    """A branch that returns from a function whose every call is one pass of the loop
    around it (a step's helper): it runs once per call like the rest of the body, one of
    its paths, not once on the way out of a loop."""
    return (
        loop is not None
        and isinstance(loop.node, ast.FunctionDef | ast.AsyncFunctionDef)
        and isinstance(body[-1], ast.Return)
    )


def _class_level_key(definitions: Definitions, cls: ast.AST | None, name: str) -> list[str]:
    """`Wrapper.find_best(losses)`: a static or class method called on its class of the
    file gets its arguments as a call on an instance would; a plain method called so takes
    the instance first (`Base.step(self, x)`), which the positions here do not know."""
    if not isinstance(cls, ast.ClassDef):
        return []
    resolved = definitions.method(cls.name, name)
    if resolved is None or not any(
        simple_name(d) in ("staticmethod", "classmethod") for d in resolved[1].decorator_list
    ):
        return []
    return [f"{resolved[0]}.{name}"]


def _compiled(function: Function) -> bool:
    """`@numba.njit`, `@cuda.jit`, `@nb.jit(nopython=True)`: a body a JIT compiles."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if simple_name(target) in _JIT_DECORATORS:
            return True
    return False


_JIT_DECORATORS = frozenset({"jit", "njit", "vectorize", "guvectorize", "stencil", "rawkernel"})


def _without_guesses(
    arguments: Iterable[tuple[int | str, Value | None]],
) -> tuple[tuple[int | str, Value | None], ...]:
    """What a call passes, with the values only guessed on the GPU left unknown."""
    return tuple((k, None if v is not None and v.guessed else v) for k, v in arguments)


def _is_progress(func: ast.expr) -> bool:
    return simple_name(func).lower().startswith(_PROGRESS)


def cupy_bound(before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """The names a block bound to CuPy (or a CuPy module) that were not bound so before."""
    return {
        name: target
        for name, target in after.items()
        if (target == "cupy" or target.startswith("cupy.")) and before.get(name) != target
    }


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    """Whether an `except` clause catches a failed import (bare, ImportError, its subclass
    ModuleNotFoundError, or Exception)."""
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    caught = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
    return any(isinstance(kind, ast.Name) and kind.id in caught for kind in kinds)


def _holds_gpu(value: Value | None) -> bool:
    return value is not None and value.kind is Kind.GPU


def _names_read(test: ast.expr) -> set[str]:
    """The names and dotted attributes (`self.error`) a test reads."""
    found = names_in(test)
    found.update(
        dotted
        for node in ast.walk(test)
        if isinstance(node, ast.Attribute) and (dotted := dotted_name(node)) is not None
    )
    return found


def _hands_to_own_call(function: Function) -> bool:
    """A method that returns what calling its own object gives (`return self(pos, neg)`): a
    loss's preparation of the scores it then computes the loss of, run as often as that."""
    this = function.args.args[0].arg if function.args.args else None
    return this is not None and any(
        isinstance(node, ast.Return)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == this
        for node in ast.walk(function)
    )
