"""What the selection refactors share: a strictly parsed document, imports, selected code.

A refactor asks `Document.parse` for the document (``None`` when the text does not parse:
refactors never edit broken code) and then for the statements a selection touches, the
qualified name an expression refers to through the file's imports, and edits that insert
whole lines without breaking the file's line endings.
"""

from __future__ import annotations

import ast
import functools
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from gpulens.analysis.model import Edit, Span
from gpulens.analysis.source import Positioned
from gpulens.analysis.symbols import dotted_name

COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.If,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.TryStar,
    ast.Match,
)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)

N = TypeVar("N", bound=ast.AST)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Imports:
    """Local names bound by imports, mapped to what they stand for (``T`` -> ``torch``)."""

    names: dict[str, str]
    # names bound by top-level imports only: those a new top-level line may rely on
    top_level: dict[str, str]

    def resolve(self, node: ast.AST) -> str | None:
        """The qualified name of a name or attribute chain, through the imports."""
        name = dotted_name(node) if isinstance(node, ast.expr) else None
        if name is None:
            return None
        root, _, rest = name.partition(".")
        if root not in self.names:
            return None
        target = self.names[root]
        return f"{target}.{rest}" if rest else target

    def uses(self, module: str) -> bool:
        return any(q == module or q.startswith(module + ".") for q in self.names.values())

    def alias_of(self, module: str) -> str | None:
        """A top-level local name bound to ``module`` itself, if the file has one."""
        for local, target in self.top_level.items():
            if target == module:
                return local
        return None


def _imports(tree: ast.Module) -> Imports:
    names: dict[str, str] = {}
    top: dict[str, str] = {}
    top_nodes = {id(n) for n in _top_level_imports(tree.body)}
    for node in ast.walk(tree):
        bound: dict[str, str] = {}
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    root = alias.name.partition(".")[0]
                    bound[root] = root
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if alias.name != "*":
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        names.update(bound)
        if id(node) in top_nodes:
            top.update(bound)
    return Imports(names, top)


def _top_level_imports(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            yield stmt
        elif isinstance(stmt, ast.Try):
            # the `try: import cupy except ImportError: ...` idiom binds at top level too
            yield from _top_level_imports(stmt.body)


def is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _is_import_block(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return True
    # `try: import x` / `except ImportError: x = None` belongs to the import header
    return isinstance(stmt, ast.Try) and all(
        isinstance(s, ast.Import | ast.ImportFrom) for s in stmt.body
    )


def own_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of a statement that belong to no statement nested in it (a header's)."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                stack.append(child)


def stmt_start(stmt: ast.stmt) -> int:
    """0-based first line of a statement, decorators included."""
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno, *(d.lineno for d in decorators)]) - 1


def end_line(node: Positioned) -> int:
    """0-based last line of a node (a parsed tree always has `end_lineno`)."""
    return (node.end_lineno or node.lineno) - 1


class Document:
    """A parsed document with the line and column conversions the refactors need.

    Treat it as read-only: `Document.parse` hands the same instance to every refactor asked
    about the same text (the code-action menu asks all three at once).
    """

    def __init__(self, text: str, tree: ast.Module) -> None:
        self.text = text
        self.tree = tree
        # split on "\n" only: the line breaks `ast` and `apply_edits` both count
        self.lines = text.split("\n")
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self._byte_lines: dict[int, bytes] = {}
        self.parents: dict[int, ast.AST] = {}
        # one walk, kept: every later question iterates this list instead of the tree
        self.nodes: list[ast.AST] = list(ast.walk(tree))
        for node in self.nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.imports = _imports(tree)
        # facts derived from the whole file, computed once per text (see `cached`)
        self._of_type: dict[tuple[type[ast.AST], ...], list[Any]] = {}
        self._depths: dict[int, int] = {}
        self._facts: dict[Callable[[Document], object], object] = {}

    @classmethod
    def parse(cls, text: str) -> Document | None:
        """The document, or None when it is not valid Python (or mixes in lone CRs)."""
        return _parse_cached(text)

    def of_type(self, *types: type[N]) -> list[N]:
        """The nodes of any of ``types``, in walk order."""
        found = self._of_type.get(types)
        if found is None:
            found = self._of_type[types] = [n for n in self.nodes if isinstance(n, types)]
        return found

    def cached(self, compute: Callable[[Document], T]) -> T:
        """``compute(self)``, computed once for this text: a fact a refactor derives from
        the whole file, asked again at every code-action request on the same text."""
        if compute not in self._facts:
            self._facts[compute] = compute(self)
        # stored under the function that made it, so it is what that function returns
        return cast(T, self._facts[compute])

    def depth(self, node: ast.AST) -> int:
        if id(node) not in self._depths:
            parent = self.parent(node)
            self._depths[id(node)] = 0 if parent is None else self.depth(parent) + 1
        return self._depths[id(node)]

    # --- positions -----------------------------------------------------------------------
    def column(self, line: int, byte_column: int) -> int:
        text = self.lines[line] if line < len(self.lines) else ""
        if text.isascii():
            return byte_column
        if line not in self._byte_lines:
            self._byte_lines[line] = text.encode("utf-8")
        return len(self._byte_lines[line][:byte_column].decode("utf-8", "replace"))

    def start(self, node: Positioned) -> tuple[int, int]:
        line = node.lineno - 1
        return line, self.column(line, node.col_offset)

    def end(self, node: Positioned) -> tuple[int, int]:
        line = end_line(node)
        return line, self.column(line, node.end_col_offset or 0)

    def span(self, node: Positioned) -> Span:
        return Span(*self.start(node), *self.end(node))

    def segment(self, node: Positioned) -> str:
        (line, column), (end_line, end_column) = self.start(node), self.end(node)
        if line == end_line:
            return self.lines[line][column:end_column]
        parts = [self.lines[line][column:], *self.lines[line + 1 : end_line]]
        parts.append(self.lines[end_line][:end_column])
        return "\n".join(parts)

    def indentation(self, line: int) -> str:
        text = self.lines[line].rstrip("\r")
        return text[: len(text) - len(text.lstrip(" \t"))]

    def code_lines(self) -> int:
        """How many lines the text has (a final line break opens an empty last one)."""
        return len(self.lines)

    # --- selections ----------------------------------------------------------------------
    def line_range(self, selection: Span | None) -> tuple[int, int]:
        """The 0-based inclusive lines a selection touches (all lines for None)."""
        last_line = len(self.lines) - 1
        if selection is None:
            return 0, last_line
        first, last = selection.line, selection.end_line
        if first > last:
            first, last = last, first
        # a selection that ends at column 0 does not select that line
        if last > first and selection.end_column == 0:
            last -= 1
        return max(0, min(first, last_line)), max(0, min(last, last_line))

    def own_lines(self, stmt: ast.stmt) -> tuple[int, int]:
        """Lines a statement occupies itself: a compound statement's header only."""
        if not isinstance(stmt, COMPOUND):
            return stmt_start(stmt), end_line(stmt)
        ends = [stmt.lineno - 1]
        for node in own_nodes(stmt):
            end = getattr(node, "end_lineno", None)
            if end is not None and node is not stmt:
                ends.append(end - 1)
        return stmt_start(stmt), max(ends)

    def selected_nodes(self, first: int, last: int) -> list[ast.AST]:
        """Every node that belongs to a statement whose own lines meet ``first..last``."""
        found: list[ast.AST] = []
        for stmt in self.of_type(ast.stmt):
            if stmt_start(stmt) > last or end_line(stmt) < first:
                continue  # cheap test first: most statements are far from the selection
            begin, end = self.own_lines(stmt)
            if begin <= last and first <= end:
                found.extend(own_nodes(stmt))
        return found

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def enclosing_function(self, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
            *self.of_type(ast.FunctionDef),
            *self.of_type(ast.AsyncFunctionDef),
        ]
        for node in functions:
            inside = node.body[0].lineno - 1 <= line <= end_line(node)
            # the innermost function is the one that starts last
            if inside and (best is None or node.lineno > best.lineno):
                best = node
        return best

    def bound_names(self) -> set[str]:
        """Every identifier the file binds or reads: what a new name must not be (a copy)."""
        return set(self.cached(_bound_names))

    # --- inserting lines -----------------------------------------------------------------
    def header_end(self) -> int | None:
        """0-based last line of the module's docstring / ``__future__`` / import header."""
        end: int | None = None
        for index, stmt in enumerate(self.tree.body):
            if (index == 0 and is_docstring(stmt)) or _is_import_block(stmt):
                end = end_line(stmt)
            else:
                break
        return end

    def header_binds(self, module: str) -> str | None:
        """The local name the import header binds to ``module``, if it does."""
        end = self.header_end()
        if end is None:
            return None
        for stmt in self.tree.body:
            if stmt.lineno - 1 > end:
                break
            for node in _top_level_imports([stmt]):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.name == module:
                            return alias.asname or alias.name
        return None

    def import_insertion_line(self) -> int:
        """0-based line before which new imports and preamble lines go."""
        end = self.header_end()
        if end is not None:
            return end + 1
        if self.tree.body:
            return stmt_start(self.tree.body[0])
        return len(self.lines) - 1 if self.lines[-1] == "" else len(self.lines)

    def insert_lines(self, before_line: int, lines: list[str]) -> Edit:
        """Insert whole lines before ``before_line`` (which may be one past the last line)."""
        nl = self.newline
        if before_line < len(self.lines):
            return Edit(Span.point(before_line, 0), "".join(line + nl for line in lines))
        # after a last line that has no line break: break it first
        last = len(self.lines) - 1
        column = len(self.lines[last])
        return Edit(Span.point(last, column), "".join(nl + line for line in lines))


def _bound_names(doc: Document) -> frozenset[str]:
    names: set[str] = set(doc.imports.names)
    for node in doc.nodes:
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return frozenset(names)


@functools.lru_cache(maxsize=4)
def _parse_cached(text: str) -> Document | None:
    if "\r" in text.replace("\r\n", ""):
        return None  # lone CRs break lines for `ast` but not for edits: refuse
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return Document(text, tree)


def fresh_name(taken: set[str], base: str) -> str:
    """``base``, or ``base_2``, ``base_3``… whichever the file does not use yet."""
    if base not in taken:
        return base
    index = 2
    while f"{base}_{index}" in taken:
        index += 1
    return f"{base}_{index}"
