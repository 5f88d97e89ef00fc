"""The file's own functions, classes and methods, and which of them a call can reach.

Plain data read once from the tree, so that a call in one function can be followed into
another (its arguments, whether it runs per step, what it returns) whatever order the two
are defined in.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

Function = ast.FunctionDef | ast.AsyncFunctionDef

# methods a class's constructor calls, or that set the attributes the others read
CONSTRUCTORS = ("__init__", "__post_init__", "setup", "reset_parameters")


@dataclass(slots=True)
class Definitions:
    functions: dict[str, Function] = field(default_factory=dict)  # module level, by name
    methods: dict[str, dict[str, Function]] = field(default_factory=dict)  # class -> name -> def
    bases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # class -> its bases' names
    defining: dict[str, list[str]] = field(default_factory=dict)  # method name -> classes
    owner: dict[int, str] = field(default_factory=dict)  # id(method def) -> its class

    @staticmethod
    def of(tree: ast.Module) -> Definitions:
        found = Definitions()
        for statement in _top_level(tree.body):
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                found.functions[statement.name] = statement
            elif isinstance(statement, ast.ClassDef):
                found.add_class(statement)
        return found

    def add_class(self, node: ast.ClassDef) -> None:
        methods = self.methods.setdefault(node.name, {})
        self.bases[node.name] = tuple(
            base.id if isinstance(base, ast.Name) else base.attr
            for base in node.bases
            if isinstance(base, ast.Name | ast.Attribute)
        )
        for statement in _top_level(node.body):
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                methods[statement.name] = statement
                self.owner[id(statement)] = node.name
                self.defining.setdefault(statement.name, []).append(node.name)
            elif isinstance(statement, ast.ClassDef):
                self.add_class(statement)

    def method(self, cls: str, name: str) -> tuple[str, Function] | None:
        """The class (``cls`` or one of its bases in the file) whose ``name`` a call on an
        instance of ``cls`` runs, and the def."""
        seen: set[str] = set()
        pending = [cls]
        while pending:
            current = pending.pop(0)
            if current in seen:
                continue
            seen.add(current)
            found = self.methods.get(current, {}).get(name)
            if found is not None:
                return current, found
            pending.extend(self.bases.get(current, ()))
        return None

    def methods_of(self, cls: str) -> dict[str, Function]:
        """Every method an instance of ``cls`` has from the file, its own over its bases'."""
        merged: dict[str, Function] = {}
        for base in reversed(self.bases.get(cls, ())):
            if base in self.methods and base != cls:
                merged.update(self.methods_of(base))
        merged.update(self.methods.get(cls, {}))
        return merged


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
