"""The file's own functions, classes and methods, and which of them a call can reach.

Plain data read once from the tree, so that a call in one function can be followed into
another (its arguments, whether it runs per step, what it returns) whatever order the two
are defined in.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

Function = ast.FunctionDef | ast.AsyncFunctionDef

# decorators that make a method read as an attribute (`self.device`, not `self.device()`)
PROPERTY_DECORATORS = frozenset({"property", "cached_property"})


def is_property(function: Function) -> bool:
    """`@property`, `@functools.cached_property`: reading the attribute runs the method."""
    for decorator in function.decorator_list:
        match decorator:
            case ast.Name(id=name) | ast.Attribute(attr=name) if name in PROPERTY_DECORATORS:
                return True
    return False


def is_static(function: Function) -> bool:
    """`@staticmethod`: a call through the object or the class passes no `self`."""
    for decorator in function.decorator_list:
        match decorator:
            case ast.Name(id="staticmethod") | ast.Attribute(attr="staticmethod"):
                return True
    return False


# methods a class's constructor calls, or that set the attributes the others read
CONSTRUCTORS = ("__init__", "__post_init__", "setup", "reset_parameters")


# `namedtuple("State", "t y")`, `typing.NamedTuple("State", [("t", Tensor), ...])`
_RECORD_FACTORIES = frozenset({"namedtuple", "NamedTuple"})


def record_made(statement: ast.Assign) -> ast.ClassDef | None:
    """`State = collections.namedtuple("State", "t, y")`: the record class the call makes,
    as the class statement that would define it (`class State(NamedTuple): t: ...`), so
    that its objects keep what they are built with, field by field, as a written one's do."""
    match statement:
        case ast.Assign(
            targets=[ast.Name(id=name)],
            value=ast.Call(func=ast.Name(id=factory) | ast.Attribute(attr=factory), args=args),
        ) if factory in _RECORD_FACTORIES and len(args) == 2:
            fields = _field_names(args[1])
        case _:
            return None
    if not fields:
        return None
    body: list[ast.stmt] = [
        ast.AnnAssign(
            target=ast.Name(id=field_name, ctx=ast.Store()),
            annotation=ast.Name(id="object", ctx=ast.Load()),
            value=None,
            simple=1,
        )
        for field_name in fields
    ]
    made = ast.ClassDef(
        name=name,
        bases=[ast.Name(id="NamedTuple", ctx=ast.Load())],
        keywords=[],
        body=body,
        decorator_list=[],
    )
    for node in ast.walk(made):
        ast.copy_location(node, statement)
    return made


def _field_names(node: ast.expr) -> list[str]:
    """`"t, y"`, `"t y"`, `["t", "y"]`, `[("t", Tensor), ("y", Tensor)]`: the names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace(",", " ").split()
    if not isinstance(node, ast.List | ast.Tuple):
        return []
    names: list[str] = []
    for element in node.elts:
        named = element.elts[0] if isinstance(element, ast.Tuple) and element.elts else element
        if not (isinstance(named, ast.Constant) and isinstance(named.value, str)):
            return []
        names.append(named.value)
    return names if all(n.isidentifier() for n in names) else []


@dataclass(slots=True)
class Definitions:
    functions: dict[str, Function] = field(default_factory=dict)  # module level, by name
    methods: dict[str, dict[str, Function]] = field(default_factory=dict)  # class -> name -> def
    bases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # class -> its bases' names
    defining: dict[str, list[str]] = field(default_factory=dict)  # method name -> classes
    owner: dict[int, str] = field(default_factory=dict)  # id(method def) -> its class
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)  # by name
    # names defined more than once (`f`, `Class.method`, `class Class`): which def a value
    # names depends on where it was taken
    duplicated: set[str] = field(default_factory=set)
    # names the module imports from its own package (`from .base import _BaseTrainer`)
    relatives: set[str] = field(default_factory=set)
    # the modules it imports every name of (`from fastai.vision.all import *`)
    stars: set[str] = field(default_factory=set)

    @staticmethod
    def of(tree: ast.Module) -> Definitions:
        found = Definitions()
        for statement in _top_level(tree.body):
            if isinstance(statement, ast.ImportFrom) and statement.level:
                found.relatives.update(a.asname or a.name for a in statement.names)
            elif isinstance(statement, ast.ImportFrom) and statement.module is not None:
                if any(a.name == "*" for a in statement.names):
                    found.stars.add(statement.module)
            elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                if statement.name in found.functions:
                    found.duplicated.add(statement.name)
                found.functions[statement.name] = statement
            elif isinstance(statement, ast.ClassDef):
                found.add_class(statement)
            elif isinstance(statement, ast.Assign):
                record = record_made(statement)
                if record is not None:
                    found.add_class(record)
        return found

    def add_class(self, node: ast.ClassDef) -> None:
        if node.name in self.classes:
            self.duplicated.add(f"class {node.name}")
        self.classes[node.name] = node
        methods = self.methods.setdefault(node.name, {})
        self.bases[node.name] = tuple(
            base.id if isinstance(base, ast.Name) else base.attr
            for base in node.bases
            if isinstance(base, ast.Name | ast.Attribute)
        )
        for statement in _top_level(node.body):
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                if statement.name in methods:
                    self.duplicated.add(f"{node.name}.{statement.name}")
                methods[statement.name] = statement
                self.owner[id(statement)] = node.name
                self.defining.setdefault(statement.name, []).append(node.name)
            elif isinstance(statement, ast.ClassDef):
                self.add_class(statement)

    def locate(self, node: ast.AST) -> str | None:
        """How another version of the file names the same definition: `f`, `Class.method`,
        `class Class`; None where the name does not say which def it is (defined in a
        function, or more than once)."""
        if isinstance(node, ast.ClassDef):
            where = f"class {node.name}"
            found: ast.AST | None = self.classes.get(node.name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            cls = self.owner.get(id(node))
            where = node.name if cls is None else f"{cls}.{node.name}"
            found = (
                self.functions.get(node.name)
                if cls is None
                else self.methods.get(cls, {}).get(node.name)
            )
        else:
            return None
        return where if found is node and where not in self.duplicated else None

    def located(self, where: str) -> ast.AST | None:
        """The definition `locate` named ``where``, in this version."""
        if where.startswith("class "):
            return self.classes.get(where[len("class ") :])
        cls, _, name = where.rpartition(".")
        return self.functions.get(name) if not cls else self.methods.get(cls, {}).get(name)

    def method(self, cls: str, name: str) -> tuple[str, Function] | None:
        """The class (``cls`` or one of its bases in the file) whose ``name`` a call on an
        instance of ``cls`` runs, and the def."""
        for current in self.lineage(cls):
            found = self.methods.get(current, {}).get(name)
            if found is not None:
                return current, found
        return None

    def lineage(self, cls: str) -> Iterator[str]:
        """``cls`` and its bases, those the file defines followed to theirs, nearest first
        (the order a method is looked up in, for single inheritance)."""
        seen: set[str] = set()
        pending = [cls]
        while pending:
            current = pending.pop(0)
            if current not in seen:
                seen.add(current)
                yield current
                pending.extend(self.bases.get(current, ()))

    def methods_of(self, cls: str) -> dict[str, Function]:
        """Every method an instance of ``cls`` has from the file, its own over its bases'."""
        merged: dict[str, Function] = {}
        for base in reversed(self.bases.get(cls, ())):
            if base in self.methods and base != cls:
                merged.update(self.methods_of(base))
        merged.update(self.methods.get(cls, {}))
        return merged


def recursive_groups(
    definitions: Definitions, text_of: Callable[[Function], str]
) -> dict[int, int]:
    """The file's functions and methods that may reach themselves through others: id of
    the def -> its group (the functions that reach each other). Read from the text, as any
    name of a file function or `self.name` of a method it mentions: an edge too many only
    makes a group larger."""
    nodes: list[Function] = list(definitions.functions.values())
    for methods in definitions.methods.values():
        nodes.extend(methods.values())
    index = {id(node): i for i, node in enumerate(nodes)}
    edges: list[list[int]] = []
    for node in nodes:
        text = text_of(node)
        found: set[int] = set()
        for word in set(_WORD.findall(text)):
            callee = definitions.functions.get(word)
            if callee is not None:
                found.add(index[id(callee)])
        cls = definitions.owner.get(id(node))
        if cls is not None:
            methods = definitions.methods_of(cls)
            for word in set(_SELF_ATTRIBUTE.findall(text)):
                callee = methods.get(word)
                if callee is not None and id(callee) in index:
                    found.add(index[id(callee)])
        edges.append(sorted(found))
    groups: dict[int, int] = {}
    for number, component in enumerate(_components(edges)):
        if len(component) > 1 or component[0] in edges[component[0]]:
            for i in component:
                groups[id(nodes[i])] = number
    return groups


def _components(edges: list[list[int]]) -> list[list[int]]:
    """Strongly connected components (Tarjan's algorithm, without recursion)."""
    order: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    found: list[list[int]] = []
    for root in range(len(edges)):
        if root in order:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                order[node] = low[node] = len(order)
                stack.append(node)
                on_stack.add(node)
            if child < len(edges[node]):
                work.append((node, child + 1))
                nxt = edges[node][child]
                if nxt not in order:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], order[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == order[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(component)
    return found


_WORD = re.compile(r"[A-Za-z_]\w*")
_SELF_ATTRIBUTE = re.compile(r"\bself\.([A-Za-z_]\w*)")


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a body, and those under its `if`/`try`/`with` (not in functions)."""
    for statement in body:
        yield statement
        match statement:
            case ast.If(body=inner, orelse=orelse):
                yield from _top_level(inner)
                yield from _top_level(orelse)
            case ast.Try(body=inner, orelse=orelse, finalbody=final, handlers=handlers):
                yield from _top_level(inner)
                yield from _top_level(orelse)
                yield from _top_level(final)
                for handler in handlers:
                    yield from _top_level(handler.body)
            case ast.With(body=inner):
                yield from _top_level(inner)


def flat_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body in source order, those of nested blocks included, those of
    nested functions and classes not."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list):
                yield from flat_statements(inner)
        for handler in getattr(statement, "handlers", ()):
            yield from flat_statements(handler.body)
        for case in getattr(statement, "cases", ()):
            yield from flat_statements(case.body)


def own_nodes(function: Function, *, lambdas: bool) -> list[ast.AST]:
    """The nodes of ``function``'s body, without those of the functions and classes it
    defines (their names are their own); ``lambdas``: whether the bodies of its lambdas
    count as its own."""
    nested = _NESTED if lambdas else (*_NESTED, ast.Lambda)
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(reversed(function.body))
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(c for c in ast.iter_child_nodes(node) if not isinstance(c, nested))
    return found


_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
