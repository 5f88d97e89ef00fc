"""Analysing successive versions of one document, reusing what did not change.

An editor sends a new version on every keystroke, and most of the file is the same as
before. Two things are kept between versions:

- the parse of each top-level block (a `def`, a `class`, a statement at column 0), keyed by
  its text; an unchanged block that moved is shifted, not parsed again;
- the findings of each function body, keyed by its text and by everything its walk reads
  from outside (the values of the names it uses, what the functions it calls return, what
  the file passes it, the imports, the file's classes and methods). A body whose text was
  repaired to parse, or whose walk read the whole module or what a function returns where
  its key did not look, is walked again each time: its key does not say what it read.

The result is always what `analyze()` gives for the same text: the tests compare the two
over random edit sequences.
"""

from __future__ import annotations

import ast
import re
import threading
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpulens.analysis.config import Config
from gpulens.analysis.model import Edit, Finding, Fix, Span
from gpulens.analysis.source import SyntaxProblem, common_ends, parse_repaired, split_lines
from gpulens.analysis.symbols import Value, dotted_name

if TYPE_CHECKING:
    from gpulens.analysis.context import Condition
    from gpulens.analysis.engine import Analysis
    from gpulens.analysis.regions import Change, LastWalk
    from gpulens.analysis.source import SourceText

# a name called in a function's text (`f(`, `self.m(`, `Class(`); a plain name; a method of self
CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")
CALLED_NAME = re.compile(r"(?<![.\w])([A-Za-z_]\w*)\s*\(")
CALLED_METHOD = re.compile(r"\bself\.([A-Za-z_]\w*)\s*\(")
# a line at column 0 that continues the statement above rather than starting one
_CONTINUES = re.compile(r"(else|elif|except|finally)\b|[)\]}]")
_TRIPLE_QUOTE = re.compile(r"\"\"\"|'''")
# lines, candidate block starts, blocks in order, and the block cache of a text
_Parsed = tuple[
    list[str],
    list[int],
    list[tuple[int, tuple[str, int], "_Block"]],
    dict[tuple[str, int], "_Block"],
]
# a block that does not parse may be a wrong split (a call's arguments at column 0): it
# is tried with up to this many of the blocks after it before it counts as broken
MAX_MERGE = 8
# characters compared at a time for what two versions of a text share (`common_ends`)
TEXT_STEP = 4096


def block_starts(lines: list[str]) -> list[int]:
    """Lines where a top-level statement (with its decorators) starts; the first is 0."""
    return _resume_starts(lines, 0, len(lines), set())[0]


def _resume_starts(
    lines: list[str], begin: int, changed_end: int, old_starts: set[int]
) -> tuple[list[int], int]:
    """The lines where top-level statements start, read from line ``begin`` (a block's first
    line: the reading is in no string and no decorator there), until a line past
    ``changed_end`` where the old text's reading started a block and this one is clean
    again: from there on the two agree. The starts found, and that line (or the end)."""
    starts = [begin]
    decorating = False  # the current block so far holds only decorators
    in_string = False  # inside a triple-quoted string (a rough count; merging repairs misses)
    for index in range(begin, len(lines)):
        clean = not in_string and not decorating
        if clean and index > begin and index >= changed_end and index in old_starts:
            return starts, index
        line = lines[index]
        quotes = len(_TRIPLE_QUOTE.findall(line)) if ('"""' in line or "'''" in line) else 0
        was_in_string = in_string
        if quotes % 2:
            in_string = not in_string
        if was_in_string or not line or line[0] in " \t\r\n#" or _CONTINUES.match(line):
            continue
        if decorating:
            decorating = line.startswith("@")
            continue
        if index != begin:
            starts.append(index)
        decorating = line.startswith("@")
    return starts, len(lines)


def _parsed_whole(text: str) -> _Parsed | None:
    """A first text that parses, parsed in one go and cut into its blocks: the blocks a
    parse block by block gives (each holds whole statements: each of its chunks parses to
    them alone), without shifting each block's tree to its place, which cost 40 % of a
    first parse. None where the text does not parse, or its statements do not fall into
    the blocks (the parse block by block then tells)."""
    tree = _parse_strict(text)
    if tree is None:
        return None
    lines = split_lines(text)
    starts = block_starts(lines)
    starts.append(len(lines))
    order: list[tuple[int, tuple[str, int], _Block]] = []
    blocks: dict[tuple[str, int], _Block] = {}
    seen: dict[str, int] = {}
    statements, at, count = tree.body, 0, len(tree.body)
    index = 0
    while index < len(starts) - 1:
        first, after = starts[index], index + 1
        taken: list[ast.stmt] = []
        while at < count and first_line(statements[at]) - 1 < starts[after]:
            statement = statements[at]
            if first_line(statement) - 1 < first:
                return None
            # a statement running past the next start takes that block in (a wrong split)
            while (statement.end_lineno or statement.lineno) - 1 >= starts[after]:
                after += 1
                if after >= len(starts) or after - index > MAX_MERGE:
                    return None
            taken.append(statement)
            at += 1
        if not taken:
            return None
        chunk = "".join(lines[first : starts[after]])
        key = (chunk, seen.get(chunk, 0))
        seen[chunk] = key[1] + 1
        block = _Block(ast.Module(body=taken, type_ignores=[]), first, None)
        blocks[key] = block
        order.append((first, key, block))
        index = after
    if at != count:
        return None
    return lines, starts, order, blocks


def first_line(statement: ast.stmt) -> int:
    """The line a statement starts on, its decorators included (1-based)."""
    decorators = getattr(statement, "decorator_list", None)
    return (
        min(statement.lineno, *(d.lineno for d in decorators)) if decorators else statement.lineno
    )


def _without(
    blocks: dict[tuple[str, int], _Block],
    gone: set[tuple[str, int]],
    fresh: dict[tuple[str, int], _Block],
) -> dict[tuple[str, int], _Block]:
    kept = {key: block for key, block in blocks.items() if key not in gone}
    kept.update(fresh)
    return kept


@dataclass(slots=True)
class _Block:
    tree: ast.Module
    offset: int  # the line its tree's line numbers currently start at
    problem: SyntaxProblem | None  # relative to the block's first line
    # lines (relative) whose parse is not their text, after a repair
    repaired: frozenset[int] = frozenset()


class BlockParser:
    """Parses a document one top-level block at a time.

    A syntax error costs only its own block (repaired the tolerant way), and a block whose
    text is unchanged since the last version is not parsed again, only moved.
    """

    def __init__(self) -> None:
        # (block text, its occurrence among equal blocks) -> its parse
        self._blocks: dict[tuple[str, int], _Block] = {}
        # the last text parsed, and where its blocks start (None: one did not parse)
        self._last: tuple[str, tuple[int, ...] | None] = ("", None)
        self._starts: list[int] = []  # its candidate block starts (`block_starts`), and its end
        # the blocks of the last text parsed, in order: (first line, key, parse)
        self.order: list[tuple[int, tuple[str, int], _Block]] = []
        self.lines: list[str] = []  # the last text's lines

    def parse(self, text: str) -> tuple[ast.Module, SyntaxProblem | None, frozenset[int]]:
        """The module, its first syntax problem, and the lines whose parse is not their
        text (a repair blanked them or lost them with their block)."""
        found = self._edited(text) if self.order else _parsed_whole(text)
        if found is None:
            lines = split_lines(text)
            starts = block_starts(lines)
            starts.append(len(lines))
            kept: dict[tuple[str, int], _Block] = {}
            order: list[tuple[int, tuple[str, int], _Block]] = []
            first = 0
            seen: dict[str, int] = {}
            while first < len(starts) - 1:
                key, block, after = self._block(lines, starts, first, seen, kept)
                order.append((starts[first], key, block))
                first = after
            found = (lines, starts, order, kept)
        lines, starts, order, self._blocks = found
        body: list[ast.stmt] = []
        problem: SyntaxProblem | None = None
        repaired: set[int] = set()
        for first, _, block in order:
            if block.offset != first:
                shift_lines(block.tree, first - block.offset)
                block.offset = first
            body.extend(block.tree.body)
            if problem is None and block.problem is not None:
                problem = replace(block.problem, line=block.problem.line + block.offset)
            if block.repaired:
                repaired.update(block.offset + line for line in block.repaired)
        block_lines = None if problem is not None else tuple(first for first, _, _ in order)
        self._last = (text, block_lines)
        self.order, self.lines, self._starts = order, lines, starts
        return ast.Module(body=body, type_ignores=[]), problem, frozenset(repaired)

    def _edited(self, text: str) -> _Parsed | None:
        """The lines, candidate block starts, blocks and block cache of ``text``, found
        from the last text's by reading again only the blocks from the edit on until the
        old ones stand again; None where a full parse must tell (the first text, carriage
        returns, blocks of the same text around the edit). The same as a full parse gives:
        each block is read as it reads it."""
        old, order = self._last[0], self.order
        if not order or "\r" in text or "\r" in old or text == old:
            return None
        prefix, suffix = common_ends(old, text, TEXT_STEP)
        # the lines the edit touched: [a, old_end) of the old text, [a, new_end) of the new
        a = old.count("\n", 0, prefix)
        old_end = old.count("\n", 0, len(old) - suffix) + 1
        new_end = text.count("\n", 0, len(text) - suffix) + 1
        start = old.rfind("\n", 0, prefix) + 1
        stop = text.find("\n", len(text) - suffix)
        middle = split_lines(text[start : len(text) if stop < 0 else stop + 1])
        if a + len(middle) != new_end and not (stop < 0 and a + len(middle) == new_end - 1):
            return None
        lines = [*self.lines[:a], *middle, *self.lines[old_end:]]
        delta = len(lines) - len(self.lines)
        # from the block before the one holding line a (whose first line the edit may have
        # made part of the block above)
        firsts = [first for first, _, _ in order]
        first_block = max(0, bisect_right(firsts, a) - 2)
        begin = firsts[first_block]
        old_starts = self._starts
        head = bisect_left(old_starts, begin)
        later = {line + delta for line in old_starts[bisect_left(old_starts, old_end) :]}
        window, resume = _resume_starts(lines, begin, new_end, later)
        starts = [*old_starts[:head], *window]
        starts.extend(
            line + delta for line in old_starts[bisect_left(old_starts, resume - delta) :]
        )
        if starts[-1] != len(lines):
            return None
        seen: dict[str, int] = {}
        for _, key, _ in order[:first_block]:
            seen[key[0]] = key[1] + 1
        # the old blocks from the edit on, by the line they start at in the new text
        moved = {
            first + delta: position
            for position, (first, _, _) in enumerate(order)
            if first >= old_end
        }
        fresh: dict[tuple[str, int], _Block] = {}
        new_order = list(order[:first_block])
        index = head
        while index < len(starts) - 1:
            line = starts[index]
            position = moved.get(line) if line >= new_end else None
            if position is not None:
                # from here on the old text's blocks stand, where no block of the same text
                # was read anew (their occurrences would count otherwise)
                remaining = order[position:]
                gone = {key for _, key, _ in order[first_block:position]}
                texts = {key[0] for key in (*fresh, *gone)}
                if any(key[0] in texts for _, key, _ in remaining):
                    return None
                new_order.extend((first + delta, key, block) for first, key, block in remaining)
                return lines, starts, new_order, _without(self._blocks, gone, fresh)
            key, block, index_after = self._block(lines, starts, index, seen, fresh)
            new_order.append((line, key, block))
            index = index_after
        gone = {key for _, key, _ in order[first_block:]}
        return lines, starts, new_order, _without(self._blocks, gone, fresh)

    def replace_tree(self, key: tuple[str, int], tree: ast.Module) -> None:
        """Makes ``tree`` (numbered from the block's first line) the parse of the block
        ``key`` of the last text: an earlier version's tree made equal to its parse."""
        for index, (first, found, block) in enumerate(self.order):
            if found == key:
                replacement = _Block(tree, first, block.problem, block.repaired)
                self._blocks[key] = replacement
                self.order[index] = (first, key, replacement)
                return
        raise KeyError(key)

    def lines_of(self, text: str) -> list[str] | None:
        """``split_lines(text)``, if it is the last text parsed (the list is never changed
        in place: a later parse makes a new one)."""
        return self.lines if self._last[0] == text else None

    def statement_starts(self, text: str) -> tuple[int, ...] | None:
        """Where the top-level blocks of ``text`` start, if it is the last text parsed and
        it parsed. Each block parsed on its own, so an edit that keeps the blocks it
        touches parsing keeps the whole text parsing (`edits.apply_fixes`)."""
        last, starts = self._last
        return starts if last == text else None

    def _block(
        self,
        lines: list[str],
        starts: list[int],
        first: int,
        seen: dict[str, int],
        kept: dict[tuple[str, int], _Block],
    ) -> tuple[tuple[str, int], _Block, int]:
        """The key and parse of the block starting at ``starts[first]``, and the index
        after it."""
        last = min(first + 1 + MAX_MERGE, len(starts) - 1)
        for after in range(first + 1, last + 1):
            chunk = "".join(lines[starts[first] : starts[after]])
            key = (chunk, seen.get(chunk, 0))
            block = self._blocks.get(key) or kept.get(key)
            if block is None or block.problem is not None:
                tree = _parse_strict(chunk)
                if tree is None:
                    continue  # perhaps a wrong split: try with the next block
                block = _Block(tree, 0, None)
            seen[chunk] = key[1] + 1  # equal blocks are different trees at different lines
            kept[key] = block
            return key, block, after
        # a real syntax error: repair this block alone
        chunk = "".join(lines[starts[first] : starts[first + 1]])
        key = (chunk, seen.get(chunk, 0))
        seen[chunk] = key[1] + 1
        block = self._blocks.get(key)
        if block is None:
            tree, problem, repaired = parse_repaired(chunk)
            block = _Block(tree, 0, problem, repaired)
        kept[key] = block
        return key, block, first + 1


# the fields of each node type that may hold nodes (not its context or operator)
_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def shift_lines(tree: ast.AST, delta: int) -> None:
    """Moves every node of ``tree`` ``delta`` lines down, as `ast.increment_lineno` does,
    in 40 % of its time: a block that moved is shifted on every keystroke above it."""
    stack = [tree]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        try:
            node.lineno += delta  # type: ignore[attr-defined]
            end = node.end_lineno  # type: ignore[attr-defined]
            if end is not None:
                node.end_lineno = end + delta  # type: ignore[attr-defined]
        except AttributeError:  # a node that stands nowhere (arguments, a comprehension)
            pass
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = tuple(
                name for name in kind._fields if name not in ("ctx", "op", "ops")
            )
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push(item)
            elif isinstance(value, ast.AST):
                push(value)


def _parse_strict(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return None


def fingerprint(value: Value | None) -> tuple[object, ...] | None:
    """What of a value a function's walk can depend on (not where it was made). What a
    function of the file returns is keyed apart, where a body calls it."""
    if value is None:
        return None
    # the class of an object, or the name of a function: which methods a call reaches
    named = getattr(value.origin, "name", None)
    return (value.kind, value.lib, value.exact, value.guessed, named)


def names_read(function: ast.AST) -> tuple[str, ...]:
    """The names a function body can look up: plain names and dotted ones (`cfg.device`,
    which an assignment outside may bind); `self.x` attributes are keyed apart."""
    names: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            dotted = dotted_name(node)
            if dotted is not None and not dotted.startswith("self."):
                names.add(dotted)
    return tuple(sorted(names))


@dataclass(slots=True)
class FunctionResult:
    """What walking one function body added; lines as they were when `def` stood at `first`."""

    first: int
    findings: list[Finding]
    pending: list[tuple[Condition, Finding]]
    calls: list[tuple[str, tuple[tuple[int | str, Value | None], ...], str | None]]
    uses_gpu: bool
    reduced_precision: bool
    self_bindings: dict[str, Value | None] = field(default_factory=dict)
    # what the body added to the whole file's state: imports made inside it, and the
    # nn.Module, DataLoader and framework-step subclasses it defines (later functions see
    # all of them)
    imports: tuple[tuple[str, str], ...] = ()
    module_classes: frozenset[str] = frozenset()
    loader_classes: frozenset[str] = frozenset()
    step_classes: tuple[tuple[str, str], ...] = ()
    # defs of the file outside the body that its values name (id -> where, as
    # `Definitions.locate` says): replaced by the current version's defs on replay
    relocated: dict[int, str] = field(default_factory=dict)


class MemoKey(tuple):  # type: ignore[type-arg]
    """A memo key that hashes once: a key holds a function's text and the fingerprints of
    everything its walk reads, and a tuple rehashes all of that on every lookup."""

    _hash: int

    def __new__(cls, parts: tuple[object, ...]) -> MemoKey:
        key = super().__new__(cls, parts)
        key._hash = tuple.__hash__(key)
        return key

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other


class FunctionMemo:
    """Function-body results of the previous versions of a document."""

    def __init__(self) -> None:
        self.results: dict[MemoKey, FunctionResult] = {}
        self.names: dict[str, tuple[str, ...]] = {}  # function text -> names it reads
        # function text -> the names it calls: all, those not after a dot, methods of self
        self.called: dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]] = {}
        # the results the last version used: the memo of the next one
        self.used: dict[MemoKey, FunctionResult] = {}
        self._texts: set[str] = set()  # function texts of the last version
        # one object per value of the part of keys read from the whole file, kept across
        # versions, so that keys compare it by identity, not item by item
        self._shared: dict[MemoKey, MemoKey] = {}
        self._shared_used: dict[MemoKey, MemoKey] = {}
        # the function texts of the last full walk, and the results the last walk of one
        # function used (`region`)
        self._walked_texts: set[str] = set()
        self._region_used: dict[MemoKey, FunctionResult] = {}

    def canonical(self, shared: MemoKey) -> MemoKey:
        """The object that stands for ``shared`` in every version's keys."""
        found = self._shared.setdefault(shared, shared)
        self._shared_used[found] = found
        return found

    def names_in(self, text: str, function: ast.AST) -> tuple[str, ...]:
        self._texts.add(text)
        names = self.names.get(text)
        if names is None:
            names = self.names[text] = names_read(function)
        return names

    def called_in(self, text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """The names a function's text calls: every one, those not after a dot (`f(`,
        `Class(`), and the methods it calls on self (`self.m(`)."""
        self._texts.add(text)
        called = self.called.get(text)
        if called is None:
            called = self.called[text] = (
                frozenset(CALLED.findall(text)),
                frozenset(CALLED_NAME.findall(text)),
                frozenset(CALLED_METHOD.findall(text)),
            )
        return called

    def forget_unused(self) -> None:
        """Drop what the last version did not use, so memory follows the document."""
        self.results, self.used = self.used, {}
        self._shared, self._shared_used = self._shared_used, {}
        texts, self._texts = self._texts, set()
        self.names = {k: v for k, v in self.names.items() if k in texts}
        self.called = {k: v for k, v in self.called.items() if k in texts}
        self._walked_texts, self._region_used = texts, {}

    @contextmanager
    def region(self, replaced: str) -> Iterator[None]:
        """A walk of one function whose text was ``replaced`` (`regions`): what the previous
        one of these recorded and this one did not use is dropped, the rest of the last
        full walk's kept."""
        used, self.used = self.used, {}
        self._texts = set()
        # the replaced function's text, and its nested functions', are no longer the file's
        self._walked_texts = {t for t in self._walked_texts if t not in replaced}
        try:
            yield
        finally:
            region_used, self.used = self.used, used
            for key in self._region_used:
                if key not in region_used:
                    self.results.pop(key, None)
                    used.pop(key, None)
            used.update(region_used)
            self._region_used = region_used
            texts = self._walked_texts | self._texts
            self.names = {k: v for k, v in self.names.items() if k in texts}
            self.called = {k: v for k, v in self.called.items() if k in texts}


def shift_finding(finding: Finding, delta: int) -> Finding:
    if not delta:
        return finding
    return replace(
        finding,
        span=_shift(finding.span, delta),
        fixes=tuple(
            Fix(
                fix.title,
                tuple(Edit(_shift(e.span, delta), e.new_text) for e in fix.edits),
                fix.safe,
            )
            for fix in finding.fixes
        ),
    )


def _shift(span: Span, delta: int) -> Span:
    return Span(span.line + delta, span.column, span.end_line + delta, span.end_column)


def within(finding: Finding, first: int, last: int) -> bool:
    """The finding and all its edits lie on lines first..last (a result that can move)."""
    spans = [finding.span, *(e.span for fix in finding.fixes for e in fix.edits)]
    return all(first <= s.line and s.end_line <= last for s in spans)


class DocumentAnalyzer:
    """`analyze()` for one document across its versions. Safe to call from several threads
    (calls for one document take turns).

    The first version is analysed without recording function results: recording costs a
    third more than the walk, and the first diagnostics of an opened file are the ones a
    user waits for. `warm` records them afterwards (the language server calls it once the
    first diagnostics are out); a second version does it otherwise."""

    def __init__(self) -> None:
        self.blocks = BlockParser()
        self.memo = FunctionMemo()
        self._config: Config | None = None
        self._lock = threading.Lock()
        # the text of a first analysis, whose function results are not recorded yet
        self._cold: str | None = None
        self._last: LastWalk | None = None  # the last version, where its target is traced
        # keep what each analysis leaves alive out of later collections (`collector_paused`)
        self.freeze_survivors = False

    @property
    def cold(self) -> bool:
        """Whether the last analysis recorded no function results (`warm` would)."""
        return self._cold is not None

    def analyze(self, text: str, config: Config) -> Analysis:
        from gpulens.analysis.engine import analyze, collector_paused

        with self._lock, collector_paused(self.freeze_survivors):
            if config != self._config:
                self.memo = FunctionMemo()
                self._config = config
                self._cold = text
                self._last = None
                return analyze(text, config, blocks=self.blocks)
            self._cold = None
            return self._analyze(text, config)

    def _analyze(self, text: str, config: Config) -> Analysis:
        """A version after the first: its edited function alone where `regions` can,
        the whole file with the memo otherwise."""
        from gpulens.analysis.engine import Analysis, shown, walk_parsed
        from gpulens.analysis.regions import LastWalk, Trace, findings_of, reshown, target_of
        from gpulens.analysis.source import SourceText

        before = self.blocks.order
        tree, problem, repaired = self.blocks.parse(text)
        source = SourceText(text, self.blocks.lines)
        last, self._last = self._last, None
        if last is not None:
            change = self._region(last, text, tree, source=source, repaired=repaired, config=config)
            if change is not None:
                self._last = last
                found = reshown(last.shown, change, source, config)
                if found is None:
                    found = shown(findings_of(last.trace), source, config)
                last.shown = found
                return Analysis(found, problem, [])
        target = target_of(before, self.blocks.order)
        trace = None if target is None else Trace(target[2])
        result = walk_parsed(tree, problem, repaired, source, config, memo=self.memo, trace=trace)
        self.memo.forget_unused()
        if target is not None and trace is not None and trace.usable:
            order = list(self.blocks.order)
            self._last = LastWalk(
                text, self.blocks.lines, trace, order, target[0], target[1], result.findings
            )
        return result

    def _region(
        self,
        last: LastWalk,
        text: str,
        tree: ast.Module,
        *,
        source: SourceText,
        repaired: frozenset[int],
        config: Config,
    ) -> Change | None:
        """Walks only the body of the last trace's target, where only it changed (see
        `regions`): what it changed (the findings are kept in ``last``), or None."""
        from gpulens.analysis.regions import (
            changed_region,
            function_around,
            function_at,
            graft,
            reaches,
            walk_region,
        )
        from gpulens.analysis.rules.timing import may_choose_a_device

        order, index = self.blocks.order, last.block
        if len(order) != len(last.order):
            return None
        for position, (old, new) in enumerate(zip(last.order, order, strict=True)):
            if (old[2] is new[2]) == (position == index):
                return None  # another block changed, or none did
        (first, old_key, old_block), (_, new_key, new_block) = last.order[index], order[index]
        region = changed_region(old_key[0], new_key[0], first)
        target, path = last.trace.target, last.path
        changed = None if region is None else function_around(new_block.tree, region[0], region[2])
        if region is None or changed is None or changed[0] != path:
            return None
        if function_around(old_block.tree, region[0], region[1]) != (path, target):
            return None
        function = changed[1]
        old_text = "".join(last.lines[target.lineno - 1 : target.end_lineno])
        new_text = "".join(self.blocks.lines[function.lineno - 1 : function.end_lineno])
        aliases, state = last.trace.aliases, last.trace.state
        assert state is not None
        owner = state.enclosing.name if state.is_method else None
        if (
            reaches(old_text, state.definitions, owner)
            != reaches(new_text, state.definitions, owner)
            or ("mps" in text) != ("mps" in last.text)
            or any(may_choose_a_device(s, aliases) for s in (*target.body, *function.body))
        ):
            return None  # the order of the walk, or what every key holds, may change
        if (
            not graft(old_block.tree, new_block.tree, path)
            or function_at(old_block.tree, path) is not target
        ):
            return None
        self.blocks.replace_tree(new_key, old_block.tree)
        tree.body[tree.body.index(new_block.tree.body[0])] = old_block.tree.body[0]
        with self.memo.region(old_text):
            change = walk_region(
                last, source, tree, repaired=repaired, config=config, memo=self.memo, region=region
            )
        if change is None:
            return None
        last.text, last.lines, last.order = text, self.blocks.lines, list(order)
        last.order[index] = self.blocks.order[index]
        return change

    def warm(self) -> None:
        """Records the function results of a first analysis, so that the next version
        replays what it leaves unchanged. Nothing to do after any other analysis."""
        from gpulens.analysis.engine import analyze, collector_paused

        with self._lock, collector_paused(self.freeze_survivors):
            text, self._cold = self._cold, None
            if text is None or self._config is None:
                return
            analyze(text, self._config, blocks=self.blocks, memo=self.memo)
            self.memo.forget_unused()
