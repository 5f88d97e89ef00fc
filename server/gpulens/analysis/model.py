"""The only types the analysis hands to other layers.

Positions are 0-based lines and 0-based columns counted in code points (Python ``str``
indices); spans are half-open. The CLI adds 1 for humans, the language server converts
columns to the client's encoding (UTF-16 by default).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"

    @property
    def blocks(self) -> bool:
        """Whether a finding of this severity makes `gpulens check` exit 1."""
        return self in (Severity.ERROR, Severity.WARNING)


@dataclass(frozen=True, slots=True, order=True)
class Position:
    line: int
    column: int


@dataclass(frozen=True, slots=True, order=True)
class Span:
    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def start(self) -> Position:
        return Position(self.line, self.column)

    @property
    def end(self) -> Position:
        return Position(self.end_line, self.end_column)

    def contains(self, other: Span) -> bool:
        return self.start <= other.start and other.end <= self.end

    def overlaps(self, other: Span) -> bool:
        return self.start <= other.end and other.start <= self.end

    @staticmethod
    def point(line: int, column: int) -> Span:
        return Span(line, column, line, column)


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text in ``span`` by ``new_text`` (an empty span inserts)."""

    span: Span
    new_text: str


@dataclass(frozen=True, slots=True)
class Fix:
    title: str
    edits: tuple[Edit, ...]
    # A fix that changes what the program computes (e.g. a layer's shape) is never applied
    # by `--fix` or `source.fixAll`; the user applies it by hand.
    safe: bool = True


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: Severity
    message: str
    span: Span
    fixes: tuple[Fix, ...] = field(default=())
