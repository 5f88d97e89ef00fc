"""Calls between the modules of one project: which functions and methods of a module the
project's other modules call, with what, and from where (a loop, a training step, per item).

A file's walk resolves the calls it makes into the project's other modules from its imports
(`ModuleLinks`: `from . import phaser` … `phas = phaser.Phaser(cfg)` … `phas.run_iteration(i)`)
and records each as a `ProjectCall`. A `ProjectIndex` gathers them per called module; the
next walk of that module starts from what its callers pass, as it does for calls within one
file (`Incoming`). Everything is read from the text: no code runs. The index is built apart
from any one file's analysis (the CLI's rounds, the language server's saves), which only
reads it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from gpulens.analysis.overrides import CALLED_BY
from gpulens.analysis.symbols import Kind, Value

Arguments = tuple[tuple[int | str, Value | None], ...]
# what callers in other modules pass one function or method: its key in the module ("f",
# "Class.method"), the arguments, the loop that calls it (None: not in a loop), and whether
# every call reaches it only through a guess
Incoming = tuple[tuple[str, Arguments, str | None, bool], ...]
# the calls per step a module's classes make on themselves (`self._update(x)` in `update`),
# which run the overrides of their subclasses in other modules: the module, the key
# (`Base._update<update`), the arguments and the loop that runs the caller
Inherited = tuple[tuple[str, str, Arguments, str], ...]

# what one module's function returns, as another module reads it: (its module, its key in
# the module, the value)
Returns = tuple[tuple[str, str, Value], ...]

# between a record class and a field in the key of what its module builds the field with
# (`Hypothesis#score`): read by the modules that import the class
RECORD_FIELD = "#"

# values that mean the same in another module: a def of the caller's file does not
_PORTABLE = frozenset({Kind.GPU, Kind.GPU_MODULE, Kind.HOST})
# what a call into another module may return that its caller's walk can use: where the
# device is (an array, a module, a loader whose batches are placed there). Not the host: a
# body judged to return host values may fill the list it returns with tensors (`chunks =
# []` … `chunks.append(...)`), and a false "host" would hide the caller's syncs
_RETURNABLE = frozenset({Kind.GPU, Kind.GPU_MODULE, Kind.DEVICE_LOADER})
# classmethods that build an object of their class (`Projection.from_config(cfg, n)`)
_CONSTRUCTOR_PREFIXES = ("from_", "create", "build", "load")


@dataclass(frozen=True, slots=True)
class ProjectCall:
    """A call a module makes into another module of its project."""

    module: str  # the called module, dotted (`cuphaser.phaser`)
    key: str  # the function or method called: "f", "Class.method"
    arguments: Arguments
    hot_call: str | None  # how messages name the loop around the call; None: no loop
    guessed: bool = False  # the caller is reached only through a guess


@dataclass(frozen=True, slots=True)
class ProjectReturn:
    """What calling a function or method of a module returns, judged from its body in its
    own file with its parameters unknown (as a call within the file reads it)."""

    module: str
    key: str  # "f", "Class.method"
    value: Value


@dataclass(frozen=True, slots=True)
class ProjectView:
    """What one file's walk knows of its project: its module's dotted name, and the calls
    the other modules make into it."""

    module: str
    is_package: bool = False  # an `__init__.py`: relative imports start at the module itself
    incoming: Incoming = ()
    # resolve and record the calls the file makes into the other modules (for an index;
    # the analysis a user waits for only reads ``incoming`` and ``returns``)
    record: bool = False
    # what the functions of the other modules this file calls return
    returns: Returns = ()
    # the other top-level modules and packages an absolute import of this file reaches in
    # the project: those beside its top package (or beside the script, whose folder is on
    # `sys.path` when it runs: `from utils import make_env`)
    siblings: frozenset[str] = frozenset()
    # the folder whose entry on `sys.path` makes the module importable: where the sources
    # of the modules it imports are read ("" where none is known)
    root: str = ""
    # what the classes this file imports call on themselves per step (`Inherited`)
    inherited: Inherited = ()


def returnable(value: Value | None) -> Value | None:
    """The part of what a function returns that means the same in the module calling it;
    a guess in the callee's file is no evidence in the caller's."""
    if value is None or value.kind not in _RETURNABLE or value.guessed:
        return None
    return value if value.origin is None else replace(value, origin=None)


def portable(value: Value | None) -> Value | None:
    """The part of a value that means the same in another module (where the device is, not
    which def of the caller's file made it)."""
    if value is None or value.kind not in _PORTABLE:
        return None
    if value.kind is Kind.GPU and (value.guessed or not value.exact):
        # a batch, a list or a tuple of tensors is read by the callee as it chooses
        # (`isinstance(a, list)`), and a guess in the caller's file is no evidence in the
        # callee's: both cross as guesses, kept only where the callee's parameter says it
        # takes one tensor (`received`)
        return replace(value, origin=None, guessed=True)
    return value if value.origin is None else replace(value, origin=None)


def received(arguments: Arguments, function: Function, method: bool) -> Arguments:
    """What ``function`` keeps of the values another module's call passes it: a guess only
    where its parameter is annotated as one tensor (`preds: Tensor`), on the GPU as the
    caller guessed (a hint at most), and not known for one array: the annotation is no
    proof, and rules that need one array stay silent. ``method``: its first
    parameter is the object, which the call's positions do not count."""
    parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    if method and parameters:
        parameters = parameters[1:]
    tensors = _tensor_parameters(function)
    kept: list[tuple[int | str, Value | None]] = []
    for key, value in arguments:
        held = value
        if value is not None and value.kind is Kind.GPU and value.guessed:
            name = (
                key
                if isinstance(key, str)
                else (parameters[key] if key < len(parameters) else None)
            )
            held = replace(value, exact=False) if name in tensors else None
        kept.append((key, held))
    return tuple(kept)


def _tensor_parameters(function: Function) -> frozenset[str]:
    """The parameters annotated as one tensor: `Tensor`, `torch.Tensor`, optionally None."""
    every = (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
    return frozenset(a.arg for a in every if a.annotation is not None and _one_tensor(a.annotation))


def _one_tensor(annotation: ast.expr) -> bool:
    match annotation:
        case ast.Name(id="Tensor") | ast.Attribute(value=ast.Name(id="torch"), attr="Tensor"):
            return True
        case ast.Constant(value=str() as text):
            return text.strip() in ("Tensor", "torch.Tensor")
        case ast.Subscript(value=ast.Name(id="Optional"), slice=inner):
            return _one_tensor(inner)
        case ast.BinOp(op=ast.BitOr(), left=left, right=ast.Constant(value=None)):
            return _one_tensor(left)
    return False


def module_name(path: Path) -> tuple[str, bool]:
    """The dotted name a file is imported by, found from the packages around it (folders
    with an `__init__.py`), and whether it is a package's `__init__.py`."""
    path = path.resolve()
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.append(folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    if not parts:
        parts = [path.parent.name or path.stem]
    return ".".join(reversed(parts)), path.stem == "__init__"


# --- resolving a file's calls into its project ----------------------------------------------

Function = ast.FunctionDef | ast.AsyncFunctionDef
# where a name leads: a module of the project, or a name in one (`("pkg.mod", "f")`)
Target = tuple[str, str | None]


# the nodes that hold statements; expressions never do (a lambda's body is an expression)
_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements(root: ast.AST) -> list[ast.AST]:
    """``root`` and the statements under it (with the except handlers and match cases that
    hold some), in `ast.walk`'s order, without visiting an expression: the links read only
    imports, classes and assignments, and walking every node cost a third of `check`."""
    found = [root]
    for node in found:  # breadth first, as ast.walk: grows while it is read
        found.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, _HOLDERS))
    return found


class ModuleLinks:
    """What a file's names lead to in its project's other modules, read from its imports
    and its assignments (`x = mod.Class(...)`, `self.proj = Projection.from_config(...)`)."""

    __slots__ = ("_attributes", "_locals", "module", "names", "package_top", "siblings")

    def __init__(self, tree: ast.Module, view: ProjectView) -> None:
        self.module = view.module
        self.package_top = view.module.split(".", 1)[0]
        self.siblings = view.siblings
        package = view.module if view.is_package else view.module.rpartition(".")[0]
        self.names: dict[str, Target] = {}
        statements = _statements(tree)
        for node in statements:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self._link(alias.asname, (alias.name, None))
                    else:
                        top = alias.name.split(".", 1)[0]
                        self._link(top, (top, None))
            elif isinstance(node, ast.ImportFrom):
                base = absolute(node, package)
                if base is None:
                    continue
                for alias in node.names:
                    if alias.name != "*":
                        self._link(alias.asname or alias.name, (base, alias.name))
        # per class, the objects its methods keep on self; per function, in its names
        self._attributes: dict[str, dict[str, Target]] = {}
        self._locals: dict[int, dict[str, Target]] = {}
        for node in statements:
            if isinstance(node, ast.ClassDef):
                kept: dict[str, Target] = {}
                for method in node.body:
                    if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
                        for name, target in self._assigned(method).items():
                            if name.startswith("self."):
                                _keep(kept, name[5:], target)
                if kept:
                    self._attributes[node.name] = kept

    def _link(self, local: str, target: Target) -> None:
        top = target[0].split(".", 1)[0]
        if top == self.package_top or top in self.siblings:
            self.names[local] = target
        else:
            self.names.pop(local, None)  # rebound to a library

    @property
    def key(self) -> tuple[object, ...]:
        """What of the file the links depend on, for keys of results kept across versions."""
        return (
            self.module,
            tuple(sorted(self.names.items(), key=lambda item: item[0])),
            tuple(sorted((c, tuple(sorted(a.items()))) for c, a in self._attributes.items())),
        )

    def _assigned(self, function: Function) -> dict[str, Target]:
        """The names (and `self.x` attributes) a function binds to objects of the project's
        classes; a name bound to two different things is left out."""
        found = self._locals.get(id(function))
        if found is not None:
            return found
        found = self._locals[id(function)] = {}
        for node in _statements(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                made = self._made_by(node.value, found)
                target = node.targets[0]
                name = (
                    target.id
                    if isinstance(target, ast.Name)
                    else f"self.{target.attr}"
                    if isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    else None
                )
                if name is not None and made is not None:
                    _keep(found, name, made)
        return found

    def _made_by(self, value: ast.expr, local: Mapping[str, Target]) -> Target | None:
        """The class whose object ``value`` builds or names: `mod.Class(...)`,
        `Class.from_config(...)`, a name bound to one."""
        match value:
            case ast.Call(func=ast.Attribute(value=owner, attr=attr)) if attr.startswith(
                _CONSTRUCTOR_PREFIXES
            ):
                cls = self._resolved(owner)
                return cls if _is_class_name(cls) else None
            case ast.Call(func=func):
                cls = self._resolved(func)
                return cls if _is_class_name(cls) else None
            case ast.Name(id=name) if name in local:
                return local[name]
        return None

    def _resolved(self, node: ast.expr) -> Target | None:
        """Where a dotted name leads: `phaser.Phaser` -> ("pkg.phaser", "Phaser")."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.names:
            return None
        module, member = self.names[node.id]
        path = [*([member] if member else []), *reversed(parts)]
        if not path:
            return (module, None)
        # `from pkg import mod` then `mod.f`: a module's member (a name of `pkg` itself only
        # when it is called directly)
        return (".".join([module, *path[:-1]]), path[-1])

    def targets(self, func: ast.expr, function: Function | None, owner: str | None) -> list[Target]:
        """The functions and methods of other modules of the project a call of ``func``,
        in ``function`` (a method of class ``owner``), may run: (module, key)."""
        local = self._assigned(function) if function is not None else {}
        match func:
            case ast.Name(id=name) if name in self.names:
                module, member = self.names[name]
                if member is None:
                    return []
                return _call_keys(module, member)
            case ast.Attribute(value=receiver, attr=attr):
                held = self._object_of(receiver, local, owner)
                if held is not None and held[1] is not None:
                    return [(held[0], f"{held[1]}.{attr}")]
                resolved = self._resolved(func)
                if resolved is None:
                    return []
                module, member = resolved
                if member is None:
                    return []
                keys = _call_keys(module, member)
                cls = self._resolved(receiver)
                if cls is not None and cls[1] is not None and _is_class_name(cls):
                    keys.append((cls[0], f"{cls[1]}.{attr}"))  # `Class.method(...)`
                return keys
        return []

    def unbound(self, call: ast.Call) -> bool:
        """`Base.method(self, x)`: a method called through its class, with the object as
        its first argument (which the callee's parameters do not count)."""
        match call:
            case ast.Call(func=ast.Attribute(value=receiver), args=[ast.Name(id="self"), *_]):
                return _is_class_name(self._resolved(receiver))
        return False

    def _object_of(
        self, receiver: ast.expr, local: Mapping[str, Target], owner: str | None
    ) -> Target | None:
        match receiver:
            case ast.Name(id=name) if name in local:
                return local[name]
            case ast.Attribute(value=ast.Name(id="self"), attr=attr) if owner is not None:
                return self._attributes.get(owner, {}).get(attr)
        return None


def _keep(found: dict[str, Target], name: str, target: Target) -> None:
    if found.get(name, target) != target:
        found[name] = ("", None)  # two classes: unknown which
    else:
        found[name] = target


def _is_class_name(target: Target | None) -> bool:
    return target is not None and bool(target[0]) and (target[1] or "")[:1].isupper()


def _call_keys(module: str, member: str) -> list[Target]:
    """What calling `member` of `module` runs: the function, or the class's constructor
    (which of the two the callee's file says); a module `module.member` has neither."""
    return [(module, member), (module, f"{member}.__init__")]


def absolute(node: ast.ImportFrom, package: str) -> str | None:
    """The module a `from … import` names, relative ones resolved from ``package``."""
    if not node.level:
        return node.module
    parts = package.split(".") if package else []
    if node.level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (node.level - 1)]
    if node.module:
        base.append(node.module)
    return ".".join(base) or None


# --- the index -----------------------------------------------------------------------------


@dataclass(slots=True)
class ProjectIndex:
    """The calls each module of a project receives from the others, and what the functions
    each module calls in the others return, gathered from the files' walks (the latest walk
    of each file counts)."""

    modules: dict[str, tuple[str, bool]] = field(default_factory=dict)  # path -> module
    _calls: dict[str, tuple[ProjectCall, ...]] = field(default_factory=dict)  # path -> calls
    # path -> every function of another module its walk calls, and what its own return
    _called: dict[str, frozenset[tuple[str, str]]] = field(default_factory=dict)
    _returns: dict[str, tuple[ProjectReturn, ...]] = field(default_factory=dict)
    _roots: dict[str, Path] = field(default_factory=dict)
    _paths: dict[str, list[str]] = field(default_factory=dict)  # module -> its paths

    def __post_init__(self) -> None:
        for path, (module, is_package) in self.modules.items():
            # the folder whose entry on `sys.path` makes the module importable by its name
            parents = Path(path).resolve().parents
            self._roots[path] = parents[min(module.count(".") + is_package, len(parents) - 1)]
            self._paths.setdefault(module, []).append(path)

    def view(self, path: str) -> ProjectView:
        """What a walk of ``path`` reads of the project."""
        module, is_package = self.modules[path]
        return ProjectView(
            module,
            is_package,
            self.incoming(path),
            returns=self.returns_for(path),
            siblings=self.siblings(path),
            root=self.root(path),
            inherited=self.inherited(path),
        )

    def root(self, path: str) -> str:
        """The folder whose entry on `sys.path` makes ``path``'s module importable."""
        return str(self._roots[path])

    def record(
        self, path: str, calls: Iterable[ProjectCall], returns: Iterable[ProjectReturn] = ()
    ) -> bool:
        """The calls the latest walk of ``path`` made, and what its functions return;
        whether they changed."""
        module = self.modules[path][0]
        calls = tuple(calls)
        kept = tuple(c for c in calls if (c.module != module or CALLED_BY in c.key) and _informs(c))
        called = frozenset((c.module, c.key) for c in calls if c.module != module)
        returned = tuple(returns)
        changed = (self._calls.get(path, ()), self._called.get(path), self._returns.get(path)) != (
            kept,
            called,
            returned,
        )
        self._calls[path], self._called[path], self._returns[path] = kept, called, returned
        return changed

    def siblings(self, path: str) -> frozenset[str]:
        """The top-level modules and packages beside ``path``'s own top package or script."""
        root = self._roots[path]
        own = self.modules[path][0].split(".", 1)[0]
        return frozenset(
            top
            for other, (module, _) in self.modules.items()
            if self._roots[other] == root and (top := module.split(".", 1)[0]) != own
        )

    def resolved(self, module: str, importer: str) -> list[str]:
        """The paths an import of ``module`` in ``importer`` may load: the one beside it
        where there is one (each folder of scripts has its own `utils`), else each."""
        paths = self._paths.get(module, [])
        if len(paths) < 2:
            return paths
        root = self._roots[importer]
        return [p for p in paths if self._roots[p] == root] or paths

    def incoming(self, path: str) -> Incoming:
        """What the other modules pass the functions of ``path``: each distinct call, in a
        stable order (the walk merges them as it merges a file's own calls)."""
        module = self.modules[path][0]
        found = {
            (call.key, call.arguments, call.hot_call, call.guessed)
            for caller, calls in self._calls.items()
            for call in calls
            if call.module == module
            and CALLED_BY not in call.key
            and path in self.resolved(module, caller)
        }
        return tuple(sorted(found, key=repr))

    def inherited(self, path: str) -> Inherited:
        """What the classes ``path`` imports from the other modules call on themselves per
        step (the calls their subclasses' overrides receive)."""
        imported = self._called.get(path, frozenset())
        found = {
            (call.module, call.key, call.arguments, call.hot_call)
            for caller, calls in self._calls.items()
            for call in calls
            if CALLED_BY in call.key
            and call.hot_call is not None
            and (call.module, call.key.partition(".")[0]) in imported
            and caller in self.resolved(call.module, path)
        }
        return tuple(sorted(found, key=repr))

    def returns_for(self, path: str) -> Returns:
        """What the functions ``path`` calls in the other modules return, where that is
        known; a call whose callee two files define differently is left out."""
        found: dict[tuple[str, str], Value | None] = {}
        for module, key in self._called.get(path, ()):
            for callee in self.resolved(module, path):
                for returned in self._returns.get(callee, ()):
                    if returned.key == key or returned.key.startswith(key + RECORD_FIELD):
                        seen = found.setdefault((module, returned.key), returned.value)
                        if seen != returned.value:
                            found[(module, returned.key)] = None
        return tuple(sorted(((m, k, v) for (m, k), v in found.items() if v), key=repr))


# how often the files called from other files are walked again with what their callers pass
# them and what their callees return: each round follows the calls one module further (a
# loop in a script, the method it calls, the helpers that method calls in a third module)
ROUNDS = 3

Result = TypeVar("Result")


def settle(
    modules: Mapping[str, tuple[str, bool]],
    walk: Callable[[Sequence[tuple[str, ProjectView]]], Sequence[Result]],
    calls_of: Callable[[Result], Iterable[ProjectCall]],
    returns_of: Callable[[Result], Iterable[ProjectReturn]] = lambda _: (),
) -> tuple[dict[str, ProjectView], dict[str, Result]]:
    """Walks every file of ``modules`` (path -> its module), then again each file whose
    callers in the other files pass something new, or whose callees there return something
    new, a few rounds at most. ``walk`` walks a batch of files, each with its view of the
    project, in order. Returns each file's last view and the result of its last walk."""
    index = ProjectIndex(dict(modules))
    views = {
        path: ProjectView(*module, (), True, siblings=index.siblings(path), root=index.root(path))
        for path, module in modules.items()
    }
    results = dict(zip(views, walk(list(views.items())), strict=True))
    for _ in range(ROUNDS):
        for path, result in results.items():
            index.record(path, calls_of(result), returns_of(result))
        again = []
        for path, last in views.items():
            view = replace(index.view(path), record=True)
            if view != last:
                views[path] = view
                again.append((path, view))
        if not again:
            break
        results.update(zip((p for p, _ in again), walk(again), strict=True))
    return views, results


def _informs(call: ProjectCall) -> bool:
    """A call that tells the callee something: made in a loop, or passing a known value.
    A call the caller's file makes only on a guess (from a body walked because a guess
    reached it) is none: the callee's own findings would all become guesses."""
    if call.guessed:
        return False
    return call.hot_call is not None or any(v is not None for _, v in call.arguments)
