"""GPU004: a host clock read while GPU work is still queued."""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context
from gpulens.analysis.model import Fix, Severity, Span
from gpulens.analysis.rules.common import insert_before, shown
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import Kind, dotted_name, simple_name

UNSYNCED_TIMER = rule(
    "GPU004",
    "timer-without-sync",
    Severity.WARNING,
    "Host clock read while GPU work is still queued",
    """
Kernel launches return before the kernels run. A host clock read after GPU work, with no
synchronization in between, measures how long Python took to *queue* the work, not how long
the GPU took to do it: timings come out too small, and the work is billed to whatever
synchronizes next.

The fix waits for the device the code targets: `torch.cuda.synchronize()` where every device
the file chooses is CUDA, and a guarded wait (`if torch.device(device).type == "cuda": …`)
where the code may also run on the CPU or another device.

**Bad:**
```python
start = time.perf_counter()
y = model(x)
elapsed = time.perf_counter() - start      # the kernels may not have run yet
```

**Good:** synchronize before reading the clock (or time with CUDA events):
```python
start = time.perf_counter()
y = model(x)
torch.cuda.synchronize()
elapsed = time.perf_counter() - start
```
""",
)

_SIMPLE = ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Expr | ast.Return


@dataclass(slots=True)
class _Interval:
    started: bool = False
    pending: set[str] = field(default_factory=set)  # libraries with queued work
    last_array: dict[str, str] = field(default_factory=dict)  # lib -> a name holding its work
    # the last synchronizing call: the calls inside it (its arguments) ran before it
    sync: Span | None = None
    # the loop whose iteration waited for the device since the last clock read
    waited_in: ast.AST | None = None


def _interval(ctx: Context) -> _Interval:
    # one timing state per function: a clock in one function says nothing of another's
    scope = ctx.scope
    while scope.kind == "comprehension" and scope.parent is not None:
        scope = scope.parent
    state = scope.state.get("timing")
    if not isinstance(state, _Interval):
        state = scope.state["timing"] = _Interval()
    return state


# `start = time.perf_counter()` opens an interval: work queued before it is not timed by it
_START_NAME = re.compile(r"^(t_?0|tic|st|since|start\w*|begin\w*|\w*_(start|begin|t0))$", re.I)


def _starts_interval(node: ast.Call, ctx: Context) -> bool:
    match ctx.statement:
        case ast.Assign(targets=[ast.Name(id=name)], value=value) if value is node:
            return bool(_START_NAME.match(name))
    return False


def _synced(interval: _Interval, node: ast.AST, ctx: Context) -> None:
    interval.pending.clear()
    interval.sync = ctx.span(node)
    if ctx.loop is not None:
        interval.waited_in = ctx.loop.node


def _step_waited(interval: _Interval, ctx: Context) -> bool:
    """A clock read per iteration of a loop whose iteration already waited for the device
    (`loss.item()`, a mixed-precision `scaler.step`): what was queued after that wait lands
    in the next iteration's time, so the time per step is right on average."""
    return ctx.loop is not None and interval.waited_in is ctx.loop.node


def _inside_sync(interval: _Interval, node: ast.AST, ctx: Context) -> bool:
    # checks see a call before its arguments; `model(x).sum().item()` ran model(x) first
    return interval.sync is not None and interval.sync.contains(ctx.span(node))


@checks(ast.Call)
def check_clock(node: ast.Call, ctx: Context) -> None:
    name = ctx.qualname(node.func, through_calls=True)
    interval = _interval(ctx)
    if _inside_sync(interval, node, ctx):
        return
    if name in fw.HOST_CLOCKS:
        if (
            interval.started
            and interval.pending
            and not _starts_interval(node, ctx)
            and not _step_waited(interval, ctx)
        ):
            _report(node, interval, ctx)
        interval.started = True
        interval.pending.clear()
        interval.waited_in = None
        return
    if not interval.started:
        return  # no clock read yet in this function: queued work cannot be mis-timed
    if name in fw.DEVICE_SYNC_CALLS or name in fw.DEVICE_TO_HOST_CALLS:
        _synced(interval, node, ctx)
        return
    func = node.func
    receiver = ctx.value(func.value) if isinstance(func, ast.Attribute) else None
    if (
        receiver is not None
        and receiver.kind is Kind.SCALER
        and receiver.exact
        and isinstance(func, ast.Attribute)
        and func.attr == "step"
    ):
        _synced(interval, node, ctx)  # an enabled GradScaler reads its found-inf flags
        return
    if receiver is not None and receiver.on_gpu and isinstance(func, ast.Attribute):
        if func.attr in fw.SYNC_METHODS or func.attr in ("block_until_ready", "get"):
            _synced(interval, node, ctx)
            return
        if func.attr in fw.HOST_RESULT_METHODS or func.attr in fw.MODULE_PARTS_METHODS:
            return  # `x.numel()`, `x.size(0)`: metadata, no GPU work queued
        interval.pending.add(receiver.lib)
        return
    if isinstance(func, ast.Name) and func.id in fw.SYNC_BUILTINS:
        if any(ctx.on_gpu(a) for a in node.args):
            _synced(interval, node, ctx)
        return
    if isinstance(func, ast.Attribute) and func.attr == "synchronize":
        _synced(interval, node, ctx)  # an event's or a stream's synchronize()
        return
    if _opaque(node, ctx):
        # `postprocess(outputs, …)`, `eval_model(actor, env)`: code the file does not show,
        # handed the queued work's results, may wait for them before it returns (a gather by
        # a mask, NMS, a reward read per episode): no proof that work is still queued
        if not _builtin(node.func) and any(ctx.on_gpu(a) for a in _arguments(node)):
            interval.pending.clear()
        return
    value = ctx.value(node)
    if value is not None and value.on_gpu:
        interval.pending.add(value.lib)


def _builtin(func: ast.expr) -> bool:
    return isinstance(func, ast.Name) and func.id in _BUILTINS


_BUILTINS = frozenset(dir(builtins))


def _arguments(node: ast.Call) -> list[ast.expr]:
    return [*node.args, *(k.value for k in node.keywords)]


def _opaque(node: ast.Call, ctx: Context) -> bool:
    """A call of code the file does not show (`super().training_step(model, inputs)`,
    `compute(x)` of another module), judged on the GPU only from its arguments: it may wait
    for its own work before it returns (a training step that logs its loss does), so it is
    no proof that work is still queued when the clock is read."""
    if name_of_library(node, ctx):
        return False
    if ctx.value(node.func) is not None:
        return False
    # a model the file was handed (`model(x)`): a forward queues its kernels and returns;
    # `eval_model(actor, env)` is a function that does something with one
    name = dotted_name(node.func)
    last = name.rsplit(".", 1)[-1] if name is not None else ""
    return not fw.MODEL_NAME.search(last) or bool(fw.ACTS_ON_MODEL.match(last))


def name_of_library(node: ast.Call, ctx: Context) -> bool:
    """A call of a library the analysis knows (torch, CuPy, JAX, Numba): its work is queued."""
    name = ctx.qualname(node.func) or ""
    return name.startswith(("torch.", "cupy.", "cupyx.", "jax.", "numba."))


@checks(ast.BinOp)
def check_arithmetic(node: ast.BinOp, ctx: Context) -> None:
    interval = _interval(ctx)
    if not interval.started:
        return
    value = ctx.value(node)
    if value is not None and value.on_gpu and not _inside_sync(interval, node, ctx):
        interval.pending.add(value.lib)


@checks(ast.Assign)
def remember_array(node: ast.Assign, ctx: Context) -> None:
    # only JAX's fix needs a name to wait on
    if not ctx.imports.uses("jax") or not _interval(ctx).started:
        return
    if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        value = ctx.value(node.value)
        if value is not None and value.kind is Kind.GPU:
            _interval(ctx).last_array[value.lib] = node.targets[0].id


def _torch_sync(ctx: Context) -> str | None:
    """A wait for the device the code targets: `torch.cuda.synchronize()` only where every
    device the file chooses is CUDA; otherwise guarded, so that the line does nothing (and
    raises nothing) where the program runs on the CPU or another device."""
    torch = ctx.spelled("torch", "torch")
    if torch is None:
        return None
    if chooses_only_cuda(ctx):
        return f"{torch}.cuda.synchronize()"
    device = ctx.device_variable()
    if device is not None:
        return f'if {torch}.device({device}).type == "cuda": {torch}.cuda.synchronize({device})'
    return f"if {torch}.cuda.is_available(): {torch}.cuda.synchronize()"


def chooses_only_cuda(ctx: Context) -> bool:
    """Every device the file chooses is a CUDA device written out (`"cuda"`,
    `torch.device("cuda:1")`, `.cuda()`): none falls back to the CPU, comes from an argument
    or a setting, or names another accelerator. (Judged once per state of the imports.)"""
    key = ("chooses only cuda", ctx.imports.version)
    if key not in ctx.file_facts:
        ctx.file_facts[key] = _scan_devices(ctx)
    return bool(ctx.file_facts[key])


def _scan_devices(ctx: Context) -> bool:
    # a read of the whole module: the memo key holds its result for the imports a body
    # starts with; a body that changes them and asks again is not memoized
    for node in ast.walk(ctx.module_tree()):
        match node:
            case ast.Call(func=func, args=arguments):
                name = ctx.qualname(func) or ""
                if name.endswith("is_available"):
                    return False
                if name == "torch.device" and not (arguments and _cuda_literal(arguments[0])):
                    return False
            case ast.Assign(targets=targets, value=value):
                for target in targets:
                    last = target.attr if isinstance(target, ast.Attribute) else None
                    if isinstance(target, ast.Name):
                        last = target.id
                    if last and fw.DEVICE_NAME.match(last) and not _chosen_cuda(value, ctx):
                        return False
            case ast.arg(arg=name) if fw.DEVICE_NAME.match(name):
                return False  # the caller chooses
    return True


def may_choose_a_device(node: ast.AST, aliases: Iterable[str]) -> bool:
    """Whether ``node`` holds a node `_scan_devices` may stop at, whatever the imports:
    a call named like a device or an availability check, or of one of ``aliases`` (the
    local names imports bound to those), an assignment to a device name, a device
    parameter, an import. A superset: a body without any keeps the scan's answer whatever
    its other lines say (`regions`)."""
    names = frozenset(aliases)
    for child in ast.walk(node):
        match child:
            case ast.Call(func=func):
                name = simple_name(func)
                if name.endswith("is_available") or name in ("device", "current_device"):
                    return True
                if isinstance(func, ast.Name) and func.id in names:
                    return True
            case ast.Assign(targets=targets):
                for target in targets:
                    last = target.attr if isinstance(target, ast.Attribute) else None
                    if isinstance(target, ast.Name):
                        last = target.id
                    if last and fw.DEVICE_NAME.match(last):
                        return True
            case ast.arg(arg=name) if fw.DEVICE_NAME.match(name):
                return True
            case ast.Import() | ast.ImportFrom():
                return True  # it may bind a name the scan resolves
    return False


def _chosen_cuda(value: ast.expr, ctx: Context) -> bool:
    match value:
        case ast.Call(func=func, args=[first, *_]) if ctx.qualname(func) == "torch.device":
            return _cuda_literal(first)
        case ast.Call(func=func) if ctx.qualname(func) == "torch.cuda.current_device":
            return True
        case ast.Constant(value=int()):
            return True
    return _cuda_literal(value)


def _cuda_literal(node: ast.expr) -> bool:
    match node:
        case ast.Constant(value=str(text)):
            return text.startswith("cuda")
        case ast.JoinedStr(values=[ast.Constant(value=str(head)), *_]):
            return head.startswith("cuda")
    return False


def in_timed_region(node: ast.AST, ctx: Context) -> bool:
    """Whether ``node`` runs where the program measures time: between two host clock reads
    of the same function (or of the module's own code), or inside a timer's `with` block."""
    if ctx.timers:
        return True
    owner: ast.AST = ctx.function or ctx.module_tree()
    lines = ctx.clock_lines.get(id(owner))
    if lines is None:
        lines = ctx.clock_lines[id(owner)] = _clock_lines(owner, ctx)
    line = getattr(node, "lineno", 0)
    return any(first < line for first in lines) and any(line < last for last in lines)


def just_before_clock_read(node: ast.AST, ctx: Context) -> bool:
    """Whether a host clock is read within the few lines after ``node`` (a sync there is
    the barrier that makes the reading true, wherever the interval started)."""
    owner: ast.AST = ctx.function or ctx.module_tree()
    lines = ctx.clock_lines.get(id(owner))
    if lines is None:
        lines = ctx.clock_lines[id(owner)] = _clock_lines(owner, ctx)
    line = getattr(node, "lineno", 0)
    return any(line < clock <= line + _BARRIER_LINES for clock in lines)


# how close after a sync a clock read must be for the sync to be its barrier
_BARRIER_LINES = 3


def _clock_lines(owner: ast.AST, ctx: Context) -> tuple[int, ...]:
    body = (
        owner.body if isinstance(owner, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef) else []
    )
    found: list[int] = []
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Call) and ctx.qualname(node.func) in fw.HOST_CLOCKS:
            found.append(node.lineno)
        pending.extend(ast.iter_child_nodes(node))
    return tuple(found)


def _report(node: ast.Call, interval: _Interval, ctx: Context) -> None:
    ctx.report(
        UNSYNCED_TIMER,
        node,
        f"`{shown(ctx, node)}` reads the clock while GPU work is still queued: the time "
        "measured is how long Python took to launch the kernels, not how long they ran. "
        "Synchronize first (or time with CUDA events).",
        _sync_fix(interval, ctx),
    )


def _sync_fix(interval: _Interval, ctx: Context) -> tuple[Fix, ...]:
    statement = ctx.statement
    if not isinstance(statement, _SIMPLE):
        return ()
    lines = [_sync_line(lib, interval, ctx) for lib in sorted(interval.pending)]
    if not lines or None in lines:
        return ()  # a framework whose wait we cannot spell here
    edits = [insert_before(ctx, statement, line) for line in lines]  # type: ignore[arg-type]
    if None in edits:
        return ()  # the statement shares its line: no room for a line above it
    return (Fix("Synchronize before reading the clock", tuple(edits)),)  # type: ignore[arg-type]


def _sync_line(lib: str, interval: _Interval, ctx: Context) -> str | None:
    if lib == "torch":
        return _torch_sync(ctx)
    if lib == "cupy":
        cp = ctx.spelled("cupy", "cupy")
        return f"{cp}.cuda.Device().synchronize()" if cp else None
    if lib == "numba":
        cuda = ctx.spelled("numba.cuda", "numba")
        if cuda is None:
            return None
        return f"{cuda}.synchronize()" if cuda != "numba" else "numba.cuda.synchronize()"
    if lib == "jax":
        jax = ctx.spelled("jax", "jax")
        array = interval.last_array.get("jax")
        return f"{jax}.block_until_ready({array})" if jax and array else None
    return None
