"""Hover text in the format the client asked for (`textDocument.hover.contentFormat`): the
Markdown the rules and the profiler write, or the same words as plain text.

The Markdown is our own (rule docs, profile details), so plain text needs only its few
constructs undone: code fences become indented blocks, tables aligned columns, and the
marks of bold, code spans, headings, links and escapes go.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lsprotocol import types

_FENCE = re.compile(r"^\s*```")
_TABLE_RULE = re.compile(r"^\s*\|?(\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")
_HELD = 0xF0000  # a private-use plane: escaped ASCII marks wait there


def preferred_kind(formats: Sequence[types.MarkupKind] | None) -> types.MarkupKind:
    """The first format the client lists that we can write (it lists them by preference);
    Markdown when it says nothing."""
    for kind in formats or ():
        if kind in (types.MarkupKind.Markdown, types.MarkupKind.PlainText):
            return types.MarkupKind(kind)
    return types.MarkupKind.Markdown


def markup(markdown: str, kind: types.MarkupKind) -> types.MarkupContent:
    value = markdown if kind == types.MarkupKind.Markdown else plain_text(markdown)
    return types.MarkupContent(kind=kind, value=value)


def plain_text(markdown: str) -> str:
    """The words of our Markdown without its marks."""
    out: list[str] = []
    table: list[list[str]] = []
    in_code = False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            out.append(f"    {line}" if line else "")
            continue
        if line.lstrip().startswith("|"):
            if not _TABLE_RULE.match(line):
                table.append([_inline(cell.strip()) for cell in _cells(line)])
            continue
        if table:
            out.extend(_aligned(table))
            table = []
        out.append(_inline(_HEADING.sub("", line)))
    if table:
        out.extend(_aligned(table))
    return "\n".join(out)


def _inline(text: str) -> str:
    # an escaped mark is a character, not a mark: kept out of the way until the marks are gone
    text = _ESCAPE.sub(lambda m: chr(_HELD + ord(m.group(1))), text)
    text = _LINK.sub(r"\1 (\2)", text)
    text = _BOLD.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    return "".join(chr(ord(c) - _HELD) if _HELD <= ord(c) < _HELD + 128 else c for c in text)


def _cells(row: str) -> list[str]:
    """A table row's cells, split at the pipes that are not escaped."""
    body = row.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return re.split(r"(?<!\\)\|", body)


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(max(map(len, rows)))]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
