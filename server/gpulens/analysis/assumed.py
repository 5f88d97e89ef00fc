"""Findings the analysis would make on one line if the values read on the host there were
known to be on the GPU: the fixes for a sync that a profile measured where the analysis could
not tell the value's device.

The analysis says nothing where it cannot prove a value is on the GPU (a model passed in, a
tensor made in another cell). A profile can: it measured the line waiting for the GPU. Here
the line is analysed again as if each value it reads on the host had been moved to the GPU
just before the statement (`x = x.cuda(); total += x.item()`, on the same line, so no other
line moves), and the findings the rules then make on it come back with their fixes, mapped
onto the real text. A fix that would touch the inserted text is dropped. Only what the fix
can depend on is analysed again: the top-level statement holding the line, and the module's
simple statements (imports, assignments); the other functions, classes and blocks are left
out as blank lines, so the positions stay those of the text. Pure: text in, findings out;
nothing here runs the code.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from gpulens.analysis import frameworks as fw
from gpulens.analysis.config import Config
from gpulens.analysis.engine import analyze
from gpulens.analysis.model import Edit, Finding, Fix, Span
from gpulens.analysis.source import split_lines

# what probes have cost in this process: whole texts parsed ("texts_parsed") and lines
# analysed again ("lines_analysed"); the language server's debug request reads them
counts: Counter[str] = Counter()

_COMPOUND: tuple[type[ast.stmt], ...] = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Match,
    ast.TryStar,
)


def findings_if_on_gpu(
    text: str,
    line: int,
    codes: Sequence[str],
    config: Config,
    *,
    program: str | None = None,
) -> list[Finding]:
    """The findings of `codes` the analysis makes on 0-based `line` of `text` once the values
    read on the host there (`x` of `x.item()`, of `float(x)`) are GPU arrays of the framework
    the program imports (torch or CuPy; nothing where it imports both or neither). `program`:
    the whole program `text` is part of (a notebook's cells), where its imports are. Empty
    where the line holds no such read or is not a simple statement of its own."""
    return GpuProbe(text, program=program).findings(line, codes, config)


@dataclass(frozen=True, slots=True)
class Imports:
    """What a program's imports tell the probe (`imports_of`): the names they bind, whether
    torch is imported, and the name of the last `import cupy [as ...]` (None: none)."""

    names: frozenset[str] = frozenset()
    torch: bool = False
    cupy: str | None = None

    def then(self, later: Imports) -> Imports:
        """These imports followed by ``later``'s (the next part of the same program)."""
        return Imports(self.names | later.names, self.torch or later.torch, later.cupy or self.cupy)


def imports_of(tree: ast.Module) -> Imports:
    """The imports anywhere in ``tree`` (in functions too). A program's are its parts' in
    order (`Imports.then`): a document's top-level blocks can be read one at a time."""
    names: set[str] = set()
    torch = False
    cupy: str | None = None
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
                torch = torch or alias.name.split(".")[0] == "torch"
                if alias.name == "cupy":
                    cupy = alias.asname or "cupy"
        elif isinstance(node, ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            torch = torch or (node.module or "").split(".")[0] == "torch"
    return Imports(frozenset(names), torch, cupy)


def is_compound(statement: ast.stmt) -> bool:
    """A statement the probe leaves out unless it holds the probed line (a `def`, a loop,
    an `if`); the module's simple statements it keeps."""
    return isinstance(statement, _COMPOUND)


class GpuProbe:
    """`findings_if_on_gpu` for several lines of one text: what the lines share (the tree,
    the lines, how a name moves to the GPU, the names imported) is read once, at the first
    line probed. A profile merges a dozen lines into one text, each a parse and a walk of
    the whole module before."""

    def __init__(self, text: str, *, program: str | None = None) -> None:
        self.text, self.program = text, program
        self._shared: tuple[ast.Module, list[str], Callable[[str], str] | None, frozenset[str]]
        self._read: bool | None = None  # None: not read yet; False: the text does not parse

    @classmethod
    def parsed(cls, text: str, tree: ast.Module, lines: list[str], imports: Imports) -> GpuProbe:
        """A probe of ``text`` from a parse made already (a document's analysis): ``tree``
        is what `ast.parse` gives for it, ``lines`` its `split_lines`, ``imports`` the
        program's (`imports_of`). Nothing is parsed again."""
        probe = cls(text)
        probe._shared = (tree, lines, _mover(imports), imports.names)
        probe._read = True
        return probe

    def _read_shared(self) -> bool:
        if self._read is None:
            counts["texts_parsed"] += 1
            try:
                tree = ast.parse(self.text)
                program = tree if self.program is None else ast.parse(self.program)
            except (SyntaxError, ValueError):
                self._read = False
                return False
            imports = imports_of(program)
            modules = imports.names if program is tree else imports.names | imports_of(tree).names
            self._shared = (tree, split_lines(self.text), _mover(imports), modules)
            self._read = True
        return self._read

    def findings(self, line: int, codes: Sequence[str], config: Config) -> list[Finding]:
        """`findings_if_on_gpu` of 0-based `line`."""
        if not self._read_shared():
            return []
        tree, lines, mover, modules = self._shared
        statements = _simple_statements_at(tree.body, line)
        if not statements or mover is None or line >= len(lines):
            return []
        names = list(dict.fromkeys(n for s in statements for n in _host_read_names(s, modules)))
        if not names:
            return []
        prefix = "".join(f"{name} = {mover(name)}; " for name in names)
        at = _column(lines[line], statements[0].col_offset)
        probed = _around(tree, lines, line)
        probed[line] = probed[line][:at] + prefix + probed[line][at:]
        shift = _Shift(line, at, len(prefix))
        counts["lines_analysed"] += 1
        found = []
        for finding in analyze("".join(probed), config).findings:
            span = shift.back(finding.span)
            if finding.code not in codes or finding.span.line != line or span is None:
                continue
            fixes = tuple(fix for fix in map(shift.fix_back, finding.fixes) if fix is not None)
            found.append(Finding(finding.code, finding.severity, finding.message, span, fixes))
        return found


class _Shift:
    """Positions of the probed text (`inserted` characters at column `at` of `line`) on the
    real text."""

    def __init__(self, line: int, at: int, inserted: int) -> None:
        self.line, self.at, self.end = line, at, at + inserted
        self.inserted = inserted

    def _column(self, row: int, column: int, *, start: bool) -> int | None:
        if row != self.line:
            return column
        if column >= self.end:
            return column - self.inserted
        if column < self.at or (column == self.at and not start):
            return column
        return None  # inside the inserted text

    def back(self, span: Span) -> Span | None:
        """`span` on the real text; None where it touches the inserted text."""
        start = self._column(span.line, span.column, start=True)
        end = self._column(span.end_line, span.end_column, start=False)
        begins_before = span.line < self.line or (span.line == self.line and span.column < self.at)
        ends_after = span.end_line > self.line or (
            span.end_line == self.line and span.end_column > self.at
        )
        if start is None or end is None or (begins_before and ends_after):
            return None
        return Span(span.line, start, span.end_line, end)

    def fix_back(self, fix: Fix) -> Fix | None:
        edits = []
        for edit in fix.edits:
            span = self.back(edit.span)
            if span is None:
                return None
            edits.append(Edit(span, edit.new_text))
        return Fix(fix.title, tuple(edits), fix.safe)


def _column(text: str, utf8_offset: int) -> int:
    """The code-point column of `ast`'s UTF-8 byte offset into `text`."""
    return len(text.encode("utf-8")[:utf8_offset].decode("utf-8", "replace"))


def _statements(body: Sequence[ast.AST]) -> Iterator[ast.stmt]:
    """Every statement in `body`, nested ones too (not the expressions: a fraction of the
    nodes of a large module)."""
    for node in body:
        if isinstance(node, ast.stmt):
            yield node
        yield from _statements(
            [
                child
                for child in ast.iter_child_nodes(node)
                if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case)
            ]
        )


def _lines_of(node: ast.stmt) -> range:
    """The 0-based lines of a statement, its decorators included."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    return range(first - 1, node.end_lineno or node.lineno)


def _simple_statements_at(body: Sequence[ast.AST], line: int) -> list[ast.stmt]:
    """The simple statements (not an `if`, a loop, a `def`) that start and end on 0-based
    `line`, in order: `a = f(); total += a.item()` holds two. Only the statements around the
    line are looked into."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.stmt) and line not in _lines_of(node):
            continue
        if isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND):
            if node.lineno - 1 == line == (node.end_lineno or node.lineno) - 1:
                found.append(node)
            continue
        children = [
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case)
        ]
        found += _simple_statements_at(children, line)
    return sorted(found, key=lambda node: node.col_offset)


def _around(tree: ast.Module, lines: Sequence[str], line: int) -> list[str]:
    """The text with only the top-level statement holding `line` and the module's simple
    statements kept; the rest blanked, line breaks kept."""
    kept: set[int] = set()
    for node in tree.body:
        span = _lines_of(node)
        if line in span or not isinstance(node, _COMPOUND):
            kept.update(span)
    return [
        text if index in kept else text[len(text.rstrip("\r\n")) :]
        for index, text in enumerate(lines)
    ]


def _host_read_names(statement: ast.stmt, modules: frozenset[str]) -> list[str]:
    """The plain names inside what the statement reads on the host (the receiver of
    `.item()`, `.cpu()`, `.numpy()`, `.tolist()`; the argument of `float()`, `print()` and
    the like), in order; not modules, nor names the statement itself binds."""
    read: list[ast.expr] = []
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in fw.SYNC_METHODS:
                read.append(node.func.value)
            elif isinstance(node.func, ast.Name) and node.func.id in fw.SYNC_BUILTINS:
                read.extend(node.args[:1])
    bound = {
        node.id
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }
    names = {
        node.id: None
        for expression in read
        for node in ast.walk(expression)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return [name for name in names if name not in bound and name not in modules]


def _mover(imports: Imports) -> Callable[[str], str] | None:
    """How the probe moves a name to the GPU: `.cuda()` in a torch file, `cupy.asarray()`
    (as the file spells it) in a CuPy file; None where it imports both or neither."""
    if imports.torch and imports.cupy is None:
        return lambda name: f"{name}.cuda()"
    if imports.cupy is not None and not imports.torch:
        spelled = imports.cupy
        return lambda name: f"{spelled}.asarray({name})"
    return None
