"""The probes of a profiled document's successive versions, from its analysis's parse and
what the versions before probed.

A profile's merge asks, of each line that measured a sync the analysis was silent about,
what the analysis would find there if the values read were on the GPU (`analysis.assumed`).
A `GpuProbe` of the text parses the whole text to answer: seconds on every keystroke into
a 2 MB document. `ProbeMemo` answers from the top-level blocks the document's analysis has
just parsed (`DocumentAnalyzer.blocks`), reads what each block imports once per block text,
and keeps each line's answer under everything it depends on: the block holding the line
(its text and first line), the module's blocks that hold simple statements (the probe keeps
those), what the program imports, the number of lines and the codes asked. A keystroke into
another function asks nothing again; an edit of the profiled cell probes its lines again.
The answers are the ones a `GpuProbe` of the text gives (tests compare them over edits).
Where the analysis found a syntax error the probe finds nothing, as a `GpuProbe`, whose
parse then fails, does. The analysis reads a text block by block and takes a statement
running over more than nine lines that start at column 0 for an error where `ast.parse`
does not: only there does a sync only the profile shows come without the fix a `GpuProbe`
would find.
"""

from __future__ import annotations

import ast
import threading
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpulens.analysis.assumed import GpuProbe, Imports, imports_of, is_compound
from gpulens.analysis.config import Config
from gpulens.analysis.model import Finding

if TYPE_CHECKING:
    from gpulens.analysis.incremental import DocumentAnalyzer

# one top-level block of a document as its analysis parsed it: its first line (0-based), its
# text, and its statements, numbered as lines of the document
ParsedBlock = tuple[int, str, ast.Module]
_NO_IMPORTS = Imports()


@dataclass(frozen=True, slots=True)
class ParsedText:
    """A text as its analysis parsed it, block by block."""

    text: str
    lines: list[str]  # `split_lines(text)`
    blocks: Sequence[ParsedBlock]  # in order, from line 0
    parses: bool  # False: the text does not parse (a probe of it then finds nothing)


def parsed_text(text: str, analyzer: DocumentAnalyzer) -> ParsedText | None:
    """``text`` as ``analyzer`` parsed it last, block by block; None where it last parsed
    another text. Read it while the analyzer is idle: the next analysis moves its blocks."""
    blocks = analyzer.blocks
    # each block parses on its own: then the whole text does (`statement_starts`)
    parses = blocks.statement_starts(text) is not None
    if not parses and "".join(blocks.lines) != text:
        return None
    order = [(first, key[0], block.tree) for first, key, block in blocks.order]
    return ParsedText(text, blocks.lines, order, parses)


@dataclass(frozen=True, slots=True)
class _BlockFacts:
    """What a probe reads of a block wherever it stands."""

    imports: Imports | None  # None: it imports nothing
    simple: bool  # holds a top-level statement the probe keeps (not a def, a loop, an if)


@dataclass(slots=True)
class ProbeMemo:
    """Probe answers of one document's versions. Merges of the document take turns."""

    # block text -> what the probe reads of it, for the blocks of the last version
    _facts: dict[str, _BlockFacts] = field(default_factory=dict)
    # a line's answer, under what it depends on (`MemoProbe.findings`)
    _found: dict[tuple[object, ...], list[Finding]] = field(default_factory=dict)
    _used: dict[tuple[object, ...], list[Finding]] = field(default_factory=dict)
    _config: Config | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def probe(self, parsed: ParsedText, config: Config) -> MemoProbe:
        """The probe of ``parsed`` for a merge: lines probed by an earlier version and whose
        answer depends on nothing that changed are answered from memory."""
        with self._lock:
            if config != self._config:
                self._found, self._used, self._config = {}, {}, config
            if self._used:  # keep what the last version used, and nothing older
                self._found, self._used = self._used, {}
            facts: dict[str, _BlockFacts] = {}
            imports = _NO_IMPORTS
            kept: list[tuple[int, str]] = []
            for first, text, tree in parsed.blocks if parsed.parses else ():
                found = facts.get(text) or self._facts.get(text)
                if found is None:
                    simple = any(not is_compound(statement) for statement in tree.body)
                    read = imports_of(tree)
                    found = _BlockFacts(None if read == _NO_IMPORTS else read, simple)
                facts[text] = found
                if found.imports is not None:
                    imports = imports.then(found.imports)
                if found.simple:
                    kept.append((first, text))
            if parsed.parses:
                self._facts = facts
        context = (tuple(kept), imports, len(parsed.lines))
        return MemoProbe(self, parsed, imports, context)

    def _recall(self, key: tuple[object, ...]) -> list[Finding] | None:
        with self._lock:
            found = self._used.get(key)
            if found is None:
                found = self._found.get(key)
            return found

    def _keep(self, key: tuple[object, ...], found: list[Finding]) -> None:
        with self._lock:
            self._used[key] = found


class MemoProbe:
    """`GpuProbe.findings` for one version, answered from the memo where it can; the rest
    probed on the analysis's parse (nothing parsed again)."""

    def __init__(
        self,
        memo: ProbeMemo,
        parsed: ParsedText,
        imports: Imports,
        context: tuple[object, ...],
    ) -> None:
        self._memo, self._parsed, self._imports, self._context = memo, parsed, imports, context
        self._firsts = [first for first, _, _ in parsed.blocks]
        self._probe: GpuProbe | None = None

    @property
    def lines(self) -> list[str]:
        """The text's `split_lines`, as its analysis split them."""
        return self._parsed.lines

    def findings(self, line: int, codes: Sequence[str], config: Config) -> list[Finding]:
        """What `GpuProbe(text).findings(line, codes, config)` gives."""
        parsed = self._parsed
        if not parsed.parses or not parsed.blocks:
            return []
        first, text, _ = parsed.blocks[max(0, bisect_right(self._firsts, line) - 1)]
        key = (line, tuple(codes), first, text, self._context)
        found = self._memo._recall(key)
        if found is None:
            if self._probe is None:
                body = [statement for _, _, tree in parsed.blocks for statement in tree.body]
                module = ast.Module(body=body, type_ignores=[])
                self._probe = GpuProbe.parsed(parsed.text, module, parsed.lines, self._imports)
            found = self._probe.findings(line, codes, config)
        self._memo._keep(key, found)
        return found
