"""Source text: tolerant parsing and the mapping from ``ast`` offsets to code points."""

from __future__ import annotations

import ast
import itertools
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from gpulens.analysis.model import Span

# A half-typed file is repaired by blanking the statement the parser stopped at, a few
# times over; past this many repairs the file is read one top-level block at a time.
MAX_REPAIRS = 8

# the nodes that stand somewhere in the source (`ast.AST` itself declares no position)
Positioned = (
    ast.expr | ast.stmt | ast.arg | ast.keyword | ast.alias | ast.excepthandler | ast.pattern
)


@dataclass(frozen=True, slots=True)
class SyntaxProblem:
    message: str
    line: int  # 0-based
    column: int


class SourceText:
    """The text of one document, split in lines, with offset conversions."""

    __slots__ = ("_ascii", "lines", "text")

    def __init__(self, text: str, lines: list[str] | None = None) -> None:
        """``lines``: ``split_lines(text)`` where the caller has them already (copied)."""
        self.text = text
        self.lines = split_lines(text) if lines is None else list(lines)
        if not self.lines or text.endswith(("\n", "\r")):
            self.lines.append("")
        # most files are ASCII throughout: then byte columns are code-point columns
        self._ascii = text.isascii()

    def char_column(self, line: int, byte_column: int) -> int:
        """Column in code points of a UTF-8 byte offset that ``ast`` reports (line 0-based)."""
        if self._ascii or line >= len(self.lines) or self.lines[line].isascii():
            return byte_column
        return len(self.lines[line].encode("utf-8")[:byte_column].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> Span:
        """Where a node stands, in code points; TypeError for a node without a position
        (`ast.AST` itself declares none: its subclasses that stand in the source do)."""
        if not isinstance(node, Positioned):
            raise TypeError(f"an ast.{type(node).__name__} has no place in the source")
        start = node.lineno - 1
        end = (node.end_lineno or node.lineno) - 1
        return Span(
            start,
            self.char_column(start, node.col_offset),
            end,
            self.char_column(end, node.end_col_offset or 0),
        )

    def segment(self, span: Span) -> str:
        if span.line == span.end_line:
            return self.lines[span.line][span.column : span.end_column]
        parts = [self.lines[span.line][span.column :]]
        parts.extend(self.lines[span.line + 1 : span.end_line])
        parts.append(self.lines[span.end_line][: span.end_column])
        return "".join(parts)

    def indentation(self, line: int) -> str:
        return _indent(self.lines[line] if line < len(self.lines) else "")

    def line_end(self, line: int) -> int:
        """Column of the end of ``line``'s content (before its newline)."""
        return len(self.lines[line].rstrip("\r\n"))


def _indent(line: str) -> str:
    """The spaces and tabs a line starts with."""
    return line[: len(line) - len(line.lstrip(" \t"))]


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split where Python's tokenizer splits them.

    `str.splitlines` also splits on form feeds, `\\x1c`-`\\x1e`, `\\x85` and U+2028, which
    `ast` does not count as line ends: positions would drift after the first one.
    """
    return _LINE.findall(text)


def source_lines(text: str) -> list[str]:
    """The lines of ``text`` without their endings, numbered as Python numbers them."""
    return [line.rstrip("\r\n") for line in split_lines(text)]


def _blank_line(lines: list[str], index: int) -> None:
    """Turn a line into ``pass`` at its indentation, so the block around it stays valid."""
    line = lines[index]
    ending = line[len(line.rstrip("\r\n")) :]
    indent = _indent(line)
    lines[index] = (indent + "pass" if line.strip() else "") + ending


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        # invalid escape sequences in the user's strings are not our business
        warnings.simplefilter("ignore")
        return ast.parse(text, type_comments=False)


def parse_tolerant(text: str) -> tuple[ast.Module, SyntaxProblem | None]:
    """Parse ``text``; on a syntax error, parse what can be parsed.

    Line numbers of the returned tree are those of ``text``. Never raises for any input
    string: a file that cannot be read at all gives an empty module and the problem.
    """
    tree, problem, _ = parse_repaired(text)
    return tree, problem


def parse_repaired(text: str) -> tuple[ast.Module, SyntaxProblem | None, frozenset[int]]:
    """`parse_tolerant`, and the lines (0-based) whose parse is not their text: blanked by a
    repair, or lost with a block that did not parse. The tree's nodes elsewhere are what
    their own lines say."""
    try:
        return _parse(text), None, frozenset()
    except SyntaxError as error:
        first = _problem(error)
    except (RecursionError, MemoryError, ValueError) as error:
        # one pathological statement (a 20,000-term sum, a NUL byte): keep the others
        lines = split_lines(text)
        return _parse_blocks(lines), SyntaxProblem(_describe(error), 0, 0), _all(lines)

    original = split_lines(text)
    lines = list(original)
    problem = first
    for _ in range(MAX_REPAIRS):
        _blank_statement(lines, _error_line(problem, len(lines)))
        try:
            tree = _parse("".join(lines))
        except SyntaxError as error:
            problem = _problem(error)
            continue
        except (RecursionError, MemoryError, ValueError):
            break
        changed = frozenset(i for i, line in enumerate(lines) if line != original[i])
        return tree, first, changed
    return _parse_blocks(original), first, _all(original)


def _all(lines: list[str]) -> frozenset[int]:
    return frozenset(range(len(lines) + 1))


def _problem(error: SyntaxError) -> SyntaxProblem:
    return SyntaxProblem(
        error.msg, max((error.lineno or 1) - 1, 0), max((error.offset or 1) - 1, 0)
    )


def _describe(error: BaseException) -> str:
    if isinstance(error, RecursionError | MemoryError):
        return "the code is nested too deeply to analyse"
    return str(error) or type(error).__name__


def _error_line(problem: SyntaxProblem, count: int) -> int:
    return min(problem.line, max(count - 1, 0))


def _blank_statement(lines: list[str], line: int) -> None:
    """Blank the line the parser stopped at and the continuation lines of its statement."""
    if not lines:
        return
    _blank_line(lines, line)
    # a block header that lost its body makes the next indented lines invalid: blank them too
    index = line + 1
    base = len(_indent(lines[line]))
    while index < len(lines):
        stripped = lines[index].strip()
        if stripped and len(_indent(lines[index])) <= base:
            break
        if stripped:
            _blank_line(lines, index)
        index += 1


def _parse_blocks(lines: list[str]) -> ast.Module:
    """Parse each top-level block on its own and keep those that parse."""
    body: list[ast.stmt] = []
    starts = [
        i
        for i, line in enumerate(lines)
        if line.strip() and not line[0].isspace() and not line.lstrip().startswith("#")
    ]
    starts.append(len(lines))
    for begin, end in itertools.pairwise(starts):
        chunk = "\n" * begin + "".join(lines[begin:end])
        try:
            body.extend(_parse(chunk).body)
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            continue
    return ast.Module(body=body, type_ignores=[])


def common_ends(old: Sequence[object], new: Sequence[object], step: int) -> tuple[int, int]:
    """How many items (characters, lines) ``old`` and ``new`` share at their start, and then
    at their end (not counting those twice). Compared ``step`` items at a time: an edit
    changes a few of the millions in a large text."""
    size = min(len(old), len(new))
    prefix = 0
    while prefix + step <= size and old[prefix : prefix + step] == new[prefix : prefix + step]:
        prefix += step
    while prefix < size and old[prefix] == new[prefix]:
        prefix += 1
    limit, suffix = size - prefix, 0
    end_old, end_new = len(old), len(new)
    while (
        suffix + step <= limit
        and old[end_old - suffix - step : end_old - suffix]
        == new[end_new - suffix - step : end_new - suffix]
    ):
        suffix += step
    while suffix < limit and old[end_old - 1 - suffix] == new[end_new - 1 - suffix]:
        suffix += 1
    return prefix, suffix
