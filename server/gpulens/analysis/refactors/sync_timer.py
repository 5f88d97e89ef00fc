""" "Insert synchronize-aware timer" around the selected statements.

`insert_sync_timer(text, selection)` returns the edits that time the selected statements
(a partial selection grows to whole statements of one block; ``[]`` when it spans two block
levels, holds no statement, holds ``return``/``break``/``continue``/``global`` that would skip
or break the timer, when the code is already timed by this refactor, or the file does not
parse). What the timer waits for follows what the selected code uses, through its imports:

- torch: CUDA events recorded around the code, then ``torch.cuda.synchronize()``
  (``clock="perf_counter"``: synchronize before both clock reads instead);
- CuPy: ``cp.cuda.Stream.null.synchronize()`` before both ``time.perf_counter()`` reads;
- JAX: ``jax.block_until_ready(<the last assigned value>)`` before the end clock;
- none (and no GPU framework in the file): plain ``time.perf_counter()``.

With a GPU framework and ``warmup=True`` a copy of the code runs once first, under a comment
that says why: the first run pays for the CUDA context, autotuning and compilation. Every
line the timer adds ends with ``# gpulens: timer``: the marker that makes a second
application a no-op and shows the user what to delete. Missing imports go after the
import header. `insert_cupy_benchmark` offers ``cupyx.profiler.benchmark`` for a selection
that is one CuPy call.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpulens.analysis.model import Edit, Span
from gpulens.analysis.refactors._document import Document, end_line, fresh_name, stmt_start

MARKER = "# gpulens: timer"
WARMUP_COMMENT = "# warm-up: first run pays for CUDA context, cuDNN autotuning and compilation"
FRAMEWORKS = {"torch": "torch", "cupy": "cupy", "cupyx": "cupy", "jax": "jax", "jaxlib": "jax"}
LABEL_LENGTH = 40
LOOPS = (ast.For, ast.AsyncFor, ast.While)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass(frozen=True, slots=True)
class Block:
    """Whole statements of one body, and the lines they span (0-based, inclusive)."""

    statements: list[ast.stmt]
    first_line: int
    last_line: int


def insert_sync_timer(
    text: str,
    selection: Span | None,
    warmup: bool = True,
    *,
    clock: Literal["events", "perf_counter"] = "events",
) -> list[Edit]:
    doc = Document.parse(text)
    if doc is None or selection is None:
        return []
    block = selected_block(doc, selection)
    if block is None or _already_timed(doc, block, selection) or not _safe_to_time(block):
        return []
    frameworks = _frameworks(doc, block)
    taken = doc.bound_names()
    indent = doc.indentation(block.first_line)
    modules: dict[str, str] = {}
    missing: list[str] = []

    def module(name: str) -> str:
        if name not in modules:
            alias = doc.imports.alias_of(name)
            if alias is None:
                # `time` may be a user's variable (`from time import time`): do not shadow it
                alias = name if name not in taken else fresh_name(taken, f"_{name}")
                missing.append(f"import {name}" if alias == name else f"import {name} as {alias}")
                taken.add(alias)
            modules[name] = alias
        return modules[name]

    before: list[str] = []
    after: list[str] = []
    elapsed = fresh_name(taken, "elapsed_ms")
    taken.add(elapsed)
    if "torch" in frameworks and clock == "events" and len(frameworks) == 1:
        torch = module("torch")
        start, end = fresh_name(taken, "start_event"), fresh_name(taken, "end_event")
        before += [
            f"{torch}.cuda.synchronize()",
            f"{start} = {torch}.cuda.Event(enable_timing=True)",
            f"{end} = {torch}.cuda.Event(enable_timing=True)",
            f"{start}.record()",
        ]
        after += [
            f"{end}.record()",
            f"{torch}.cuda.synchronize()",
            f"{elapsed} = {start}.elapsed_time({end})",
        ]
    else:
        waits = _device_waits(frameworks, module)
        start = fresh_name(taken, "start_time")
        clock_module = module("time")
        before += [*waits, f"{start} = {clock_module}.perf_counter()"]
        after += waits
        target = _last_assigned(block) if "jax" in frameworks else None
        if target is not None:
            # JAX dispatches asynchronously: wait for the value, not for a device
            after.append(f"{module('jax')}.block_until_ready({target})")
        after.append(f"{elapsed} = ({clock_module}.perf_counter() - {start}) * 1000")
    after.append(f'print(f"{_label(doc, block)}: {{{elapsed}:.3f}} ms")')

    lines = [f"{indent}{line}  {MARKER}" for line in before]
    if warmup and frameworks:
        copy = [
            line.removesuffix("\r") for line in doc.lines[block.first_line : block.last_line + 1]
        ]
        lines = [f"{indent}{WARMUP_COMMENT}", *copy, *lines]
    edits: list[Edit] = []
    if missing:
        anchor = doc.import_insertion_line()
        if anchor <= block.first_line:
            edits.append(doc.insert_lines(anchor, missing))
        else:
            # the selection is in the import header itself: import inside the timer
            lines = [f"{indent}{line}  {MARKER}" for line in missing] + lines
    edits.append(doc.insert_lines(block.first_line, lines))
    edits.append(
        doc.insert_lines(block.last_line + 1, [f"{indent}{line}  {MARKER}" for line in after])
    )
    return edits


def insert_cupy_benchmark(text: str, selection: Span | None, n_repeat: int = 100) -> list[Edit]:
    """Add ``print(benchmark(f, (args…), n_repeat=…))`` after a selected CuPy call statement."""
    doc = Document.parse(text)
    if doc is None or selection is None:
        return []
    block = selected_block(doc, selection)
    if block is None or len(block.statements) != 1 or _already_timed(doc, block, selection):
        return []
    match block.statements[0]:
        case ast.Expr(value=ast.Call(func=func, args=args, keywords=keywords)):
            pass
        case _:
            return []
    if "cupy" not in _frameworks(doc, block) or any(isinstance(a, ast.Starred) for a in args):
        return []
    if any(k.arg is None for k in keywords):
        return []
    arguments = "".join(f"{doc.segment(a)}, " for a in args)
    call = f"{doc.segment(func)}, ({arguments.rstrip(' ')}"
    call = call.rstrip(",") + ("," if len(args) == 1 else "") + ")"
    if keywords:
        pairs = ", ".join(f"{k.arg!r}: {doc.segment(k.value)}" for k in keywords)
        call += f", kwargs={{{pairs}}}"
    indent = doc.indentation(block.first_line)
    edits: list[Edit] = []
    benchmark = "cupyx.profiler.benchmark"
    if doc.imports.alias_of("cupyx.profiler") is None:
        anchor = doc.import_insertion_line()
        if anchor > block.first_line:
            return []
        edits.append(doc.insert_lines(anchor, ["import cupyx.profiler"]))
    else:
        benchmark = f"{doc.imports.alias_of('cupyx.profiler')}.benchmark"
    line = f"{indent}print({benchmark}({call}, n_repeat={n_repeat}))  {MARKER}"
    edits.append(doc.insert_lines(block.last_line + 1, [line]))
    return edits


# --- which statements -----------------------------------------------------------------------
def _body_of(doc: Document, stmt: ast.stmt) -> list[ast.stmt] | None:
    parent = doc.parent(stmt)
    if parent is None:
        return None
    for field in ("body", "orelse", "finalbody", "handlers"):
        body = getattr(parent, field, None)
        if isinstance(body, list) and any(s is stmt for s in body):
            return body
    return None


def _innermost(doc: Document, line: int, latest: bool) -> ast.stmt | None:
    """The deepest statement on ``line``; of several side by side, the first (or last)."""
    best: ast.stmt | None = None
    best_key: tuple[int, int] | None = None
    for node in doc.of_type(ast.stmt):
        if not stmt_start(node) <= line <= end_line(node):
            continue
        order = node.col_offset if latest else -node.col_offset
        key = (doc.depth(node), order if node.lineno - 1 == line else 0)
        if best_key is None or key > best_key:
            best, best_key = node, key
    while best is not None:
        parent = doc.parent(best)
        # `if x: y` on one line: time the `if`, not its body; an `elif` is part of its `if`
        if not isinstance(parent, ast.stmt):
            break
        same_line = parent.lineno == best.lineno
        is_elif = isinstance(best, ast.If) and _starts_with(doc, best, "elif")
        if not (same_line or is_elif):
            break
        best = parent
    return best


def _starts_with(doc: Document, stmt: ast.stmt, keyword: str) -> bool:
    line, column = doc.start(stmt)
    return re.match(rf"{keyword}\b", doc.lines[line][column:]) is not None


def _ancestry(doc: Document, stmt: ast.stmt) -> list[tuple[ast.stmt, list[ast.stmt]]]:
    chain: list[tuple[ast.stmt, list[ast.stmt]]] = []
    current: ast.AST | None = stmt
    while isinstance(current, ast.stmt):
        body = _body_of(doc, current)
        if body is None:
            break
        chain.append((current, body))
        current = doc.parent(current)
        while current is not None and not isinstance(current, ast.stmt):
            current = doc.parent(current)  # an except handler or a match case
    return chain


def selected_block(doc: Document, selection: Span) -> Block | None:
    """The whole statements of one body that the selection covers, or None."""
    first, last = doc.line_range(selection)
    lines = range(first, last + 1)
    start = next((s for s in (_innermost(doc, n, False) for n in lines) if s), None)
    end = next((s for s in (_innermost(doc, n, True) for n in reversed(lines)) if s), None)
    if start is None or end is None:
        return None
    starts, ends = _ancestry(doc, start), _ancestry(doc, end)
    # the deepest body that holds both ends (or a statement around each)
    common = next(
        (
            (i, j)
            for i, (_, body) in enumerate(starts)
            for j, (_, other) in enumerate(ends)
            if other is body
        ),
        None,
    )
    if common is None:
        return None
    i, j = common
    outer_start, body = starts[i]
    outer_end = ends[j][0]
    if outer_start is not outer_end:
        # a selection that begins inside a block, or ends inside one short of its end,
        # spans two block levels
        if i > 0 or (j > 0 and last < end_line(outer_end)):
            return None
    elif i > 0 and j > 0:
        return None
    index_start = next(k for k, s in enumerate(body) if s is outer_start)
    index_end = next(k for k, s in enumerate(body) if s is outer_end)
    if index_start > index_end:
        return None
    statements = body[index_start : index_end + 1]
    first_line = stmt_start(statements[0])
    last_line = end_line(statements[-1])
    head = doc.lines[first_line][: doc.start(statements[0])[1]]
    if getattr(statements[0], "decorator_list", None):
        head = ""  # a decorator starts its line: nothing else can share it
    tail = doc.lines[last_line][doc.end(statements[-1])[1] :].strip()
    # other statements share the first or last line (`a = 1; b = 2` half selected)
    if head.strip() or (tail and not tail.startswith("#")):
        return None
    return Block(statements, first_line, last_line)


def _is_marker_line(line: str) -> bool:
    stripped = line.strip()
    return MARKER in line or stripped.startswith(WARMUP_COMMENT)


def _already_timed(doc: Document, block: Block, selection: Span) -> bool:
    """Whether a timer of ours is in, or right around, the selected code."""
    first, last = doc.line_range(selection)
    begin, end = min(first, block.first_line), max(last, block.last_line)
    if any(_is_marker_line(doc.lines[n]) for n in range(begin, end + 1)):
        return True
    for step, start in ((-1, begin - 1), (1, end + 1)):
        # look past comments and blank lines to the next line of code, both ways
        line = start
        while 0 <= line < len(doc.lines):
            if _is_marker_line(doc.lines[line]):
                return True
            stripped = doc.lines[line].strip()
            if stripped and not stripped.startswith("#"):
                break
            line += step
    return False


def _safe_to_time(block: Block) -> bool:
    """No statement that would skip the end of the timer or break when run twice."""

    def visit(node: ast.AST, in_loop: bool) -> bool:
        if isinstance(node, ast.Return | ast.Global | ast.Nonlocal):
            return False
        if isinstance(node, ast.Break | ast.Continue) and not in_loop:
            return False
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            return False
        for child in ast.iter_child_nodes(node):
            if isinstance(child, SCOPES):
                continue  # a nested function's `return` is its own business
            if not visit(child, in_loop or isinstance(node, LOOPS)):
                return False
        return True

    return all(visit(stmt, False) for stmt in block.statements)


# --- what to wait for -------------------------------------------------------------------------
def _assigned_values(doc: Document) -> dict[str, list[ast.expr]]:
    """For each name the file assigns, the values it is assigned."""
    return doc.cached(_find_assigned_values)


def _find_assigned_values(doc: Document) -> dict[str, list[ast.expr]]:
    values: dict[str, list[ast.expr]] = {}
    for node in doc.nodes:
        if isinstance(node, ast.Assign):
            value, targets = node.value, node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            value, targets = node.value, [node.target]
        else:
            continue
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    values.setdefault(name.id, []).append(value)
    return values


def _named_frameworks(doc: Document, node: ast.AST, seen: set[str]) -> set[str]:
    """Frameworks an expression names, directly or through what its names are assigned."""
    found: set[str] = set()
    values = _assigned_values(doc)
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id in values and child.id not in seen:
            # `y = x @ x` after `x = torch.ones(…)`: y is torch's too
            seen.add(child.id)
            for value in values[child.id]:
                found |= _named_frameworks(doc, value, seen)
        if isinstance(child, ast.Name | ast.Attribute):
            qualified = doc.imports.resolve(child) or ""
            framework = FRAMEWORKS.get(qualified.partition(".")[0])
            if framework:
                found.add(framework)
    return found


def _frameworks(doc: Document, block: Block) -> list[str]:
    """GPU frameworks the selected code uses (or, for code calling into others, the file's)."""
    found: set[str] = set()
    computes = False
    seen: set[str] = set()
    for stmt in block.statements:
        found |= _named_frameworks(doc, stmt, seen)
        computes = computes or any(isinstance(n, ast.Call | ast.BinOp) for n in ast.walk(stmt))
    if not found and computes:
        # `out = fn(a)` with `a` a parameter: any framework of the file may be at work
        found = {f for root, f in FRAMEWORKS.items() if doc.imports.uses(root)}
    return [f for f in ("torch", "cupy", "jax") if f in found]


def _last_assigned(block: Block) -> str | None:
    for stmt in reversed(block.statements):
        match stmt:
            case (
                ast.Assign(targets=[*_, target])
                | ast.AnnAssign(target=target)
                | ast.AugAssign(target=target)
            ):
                names = [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
                if len(names) == 1 and isinstance(target, ast.Name):
                    return names[0]
                if names:
                    return "(" + ", ".join(names) + ",)"
    return None


def _device_waits(frameworks: list[str], module: Callable[[str], str]) -> list[str]:
    """Statements that wait for the queued work of each framework's default stream."""
    waits: list[str] = []
    if "torch" in frameworks:
        waits.append(f"{module('torch')}.cuda.synchronize()")
    if "cupy" in frameworks:
        waits.append(f"{module('cupy')}.cuda.Stream.null.synchronize()")
    return waits


def _label(doc: Document, block: Block) -> str:
    """The first selected line, shortened, safe inside an f-string's literal part."""
    text = doc.lines[stmt_start(block.statements[0])].strip()
    text = re.sub(r"\s+", " ", text)
    if len(text) > LABEL_LENGTH:
        text = text[: LABEL_LENGTH - 3].rstrip() + "..."
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text.replace("{", "{{").replace("}", "}}")
