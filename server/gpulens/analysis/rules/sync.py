"""GPU001: the CPU waits for the GPU on every iteration of a loop."""

from __future__ import annotations

import ast
import enum
from collections import Counter

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context, Loop
from gpulens.analysis.filled_lists import filled_list_items, host_names
from gpulens.analysis.guards import device_test, leaves_loop
from gpulens.analysis.model import Fix, Severity
from gpulens.analysis.module_forward import BACKWARD
from gpulens.analysis.rules.common import after_loop, fix, replace, shown
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.rules.timing import in_timed_region, just_before_clock_read
from gpulens.analysis.symbols import Kind, Value, dotted_name, keyword, names_in, simple_name
from gpulens.analysis.training import tested_name
from gpulens.analysis.values import formatted_operands, is_host_expression

SYNC_IN_LOOP = rule(
    "GPU001",
    "sync-in-loop",
    Severity.WARNING,
    "The CPU waits for the GPU on every iteration of a loop",
    """
GPU work is queued: a kernel launch returns at once and the CPU runs ahead, queuing the
next step while the GPU computes. Reading a GPU value on the host (`.item()`, `.cpu()`,
`.numpy()`, `.tolist()`, `float(t)`, `print(t)`, `if t > 0:`) or calling
`torch.cuda.synchronize()` makes the CPU wait until the kernels queued before it have
finished, then copy the value. Once per iteration, the queue runs dry each step: the GPU
idles while Python prepares the next launch, and the shorter the step, the larger the part
of it spent idle.

An operation whose result's size depends on the values waits the same way: the host must
know the size to allocate the result, so `x.nonzero()`, `torch.where(mask)` with one
argument, `torch.unique(x)`, `x[x > 0]` (a gather by a boolean mask) and
`x.repeat_interleave(counts)` without `output_size=` wait for the GPU to count. A result of
fixed size does not: `torch.where(mask, x, 0)`, a masked sum, an index known on the host.
A GPU value used where Python needs an int waits the same way: a slice's bound
(`x[:, : lengths.max()]`), a size (`torch.zeros(b, counts.max())`), `range(n)`.

A read that decides whether a loop stops (`if (tokens == eos).all(): break`), that hands
each result out as it is made (`yield t.item()`), or that sits inside a region the program
times is what the program means to do: it is reported as a hint, worded for what it does.
So is a read of a value the file does not show on a GPU (`.cpu()` of a value it never
placed, the inputs of a loss class): the hint says the wait happens if the value is there.
The test of an `assert` is a hint too (a check each time it runs, which `python -O` drops);
its message, evaluated only when the test fails, costs nothing per step.

A tensor built from a list of GPU values (`torch.tensor([x], device=d)`,
`torch.tensor([a, b])`) is built on the host: each element is read into a Python number, a
wait each, and the result copied back; `torch.stack`, `torch.cat` or `x.view(1)` keep it on
the device.

`torch.equal(a, b)` and `torch.allclose(a, b)` compare on the device and hand back a Python
bool: the call itself waits. A module's `forward` (and what it calls on `self`) runs once per
step of whoever trains it: a comparison of its inputs there (a kernel checking whether `x1`
and `x2` are the same points) or a read of a flag kept in a buffer (`self.initialized.item()`)
waits on every call. Where the file does not show the device (a library's module runs on what
its user hands it) that is a hint. `x1 is x2`, a flag the caller passes, or a Python
attribute costs nothing.

Sorting or picking by a key that is a GPU value (`sorted(hyps, key=lambda h: h.score)`,
`max(...)`, `min(...)`, `list.sort`) compares the keys on the host: every comparison copies
a bool back and waits. Stack the keys and sort on the device (`torch.argsort`, `topk`), or
read them once per step (`.tolist()`) and compare the Python numbers.

**Bad:**
```python
for x, y in loader:
    loss = criterion(model(x.to(device)), y.to(device))
    loss.backward()
    optimizer.step()
    total += loss.item()          # waits for the GPU, every step
```

**Good:** accumulate on the device and read once, or every N steps:
```python
total = torch.zeros((), device=device)
for step, (x, y) in enumerate(loader):
    ...
    total += loss.detach()
    if step % 100 == 0:
        print(f"step {step}: {loss.item():.3f}")
print(total.item())
```
""",
)


class Need(enum.Enum):
    """Why a sync in a loop may be what the program wants: then it is a hint, not a warning."""

    EXIT = "exit"  # the loop's stop condition: `if (tokens == eos).all(): break`
    STREAM = "stream"  # each result handed out as it is made: `yield t.item()`
    TIMED = "timed"  # inside a region the program times


# what a per-step read of a loss should become
_ACCUMULATE_ADVICE = (
    ": the CPU stops feeding the GPU. Accumulate on the device "
    "(`total += loss.detach()`) and read once after the loop, or every N steps."
)


def need_of(node: ast.AST, loop: Loop, ctx: Context) -> Need | None:
    if ctx.deciding_exit:
        return Need.EXIT
    if _streams(node, ctx):
        return Need.STREAM
    if not loop.over_loader and not loop.trains and in_timed_region(node, ctx):
        return Need.TIMED  # (a training loop timed per epoch is still a training loop)
    return None


def _streams(node: ast.AST, ctx: Context) -> bool:
    statement = ctx.statement
    match statement:
        case ast.Expr(value=ast.Yield() | ast.YieldFrom() as handed):
            return any(n is node for n in ast.walk(handed))
        case ast.Expr(value=ast.Call(func=ast.Name(id="print"), keywords=keywords)):
            return any(k.arg in ("flush", "end") for k in keywords)
    return False


def _report_guessed_read(
    node: ast.expr, loop: Loop, ctx: Context, *, advice: str, unsure: str
) -> None:
    """A read to the host of a value on the GPU by a guess only (`unsure` says whose):
    at most a hint."""
    report_sync(
        node,
        f"`{shown(ctx, node)}` copies the value to the host and waits for all queued GPU work",
        loop,
        ctx,
        advice=advice,
        subject=Value(Kind.GPU, guessed=True),
        unsure=unsure,
    )


def report_sync(
    node: ast.expr,
    what: str,
    loop: Loop,
    ctx: Context,
    *,
    advice: str,
    subject: Value | None,
    fixes: tuple[Fix, ...] = (),
    unsure: str | None = None,
) -> None:
    """Report ``what`` (a sentence start: "`x.item()` copies a GPU value to the host and
    waits for all queued GPU work") about the GPU value ``subject``: a warning, or a hint
    where the wait is needed or the value is on the GPU by a guess only."""
    where = loop.describe()
    match need_of(node, loop, ctx):
        case Need.EXIT if isinstance(ctx.statement, ast.Assert):
            # a check: it ends nothing while it holds, and `python -O` drops it
            ctx.report(
                SYNC_IN_LOOP,
                node,
                f"{what}, on every iteration of {where}, for an assert, which needs the value "
                "each time it runs. Checking every N iterations (or once after the loop) "
                "would save the other waits; `python -O` drops asserts altogether.",
                severity=Severity.HINT,
            )
        case Need.EXIT if loop.called_from is not None:
            # the body of a function called per iteration: its return or raise ends the
            # call, which the loop outside may well go on from
            ctx.report(
                SYNC_IN_LOOP,
                node,
                f"{what}, on every iteration of {where}, for a test that may end the call "
                "early (a return, a raise or an assert): the test needs the value. Testing "
                "every N calls (or once after the loop) would save the other waits.",
                severity=Severity.HINT,
            )
        case Need.EXIT:
            ctx.report(
                SYNC_IN_LOOP,
                node,
                f"{what}, on every iteration of {where}, to decide whether it stops: the loop "
                "cannot end without it. Testing every N iterations (or running a fixed number "
                "of them) would save the other waits.",
                severity=Severity.HINT,
            )
        case Need.STREAM:
            ctx.report(
                SYNC_IN_LOOP,
                node,
                f"{what}, on every iteration of {where}, to hand each result out as it is "
                "made. If the consumer can wait, collect on the device and read in batches.",
                severity=Severity.HINT,
            )
        case Need.TIMED:
            ctx.report(
                SYNC_IN_LOOP,
                node,
                f"{what}, on every iteration of {where}, inside a timed region: the time "
                "measured includes these waits. If they are not part of what you measure, "
                "read the values after the clock.",
                severity=Severity.HINT,
            )
        case None if subject is not None and subject.guessed:
            if unsure is None:
                if subject.lib == "cupy":
                    unsure = "as code written for NumPy or CuPy arrays allows"
                elif ctx.loops and ctx.loops[0].forward:
                    unsure = _forward_unsure(ctx.loops[0])
                elif ctx.loops and ctx.loops[0].per_step:
                    # a library's hook (or what it calls), handed data by the library's loop
                    unsure = "as the data a library's loop hands its step suggests"
                else:
                    unsure = "as its use with a model the code runs suggests"
            ctx.report(
                SYNC_IN_LOOP,
                node,
                f"{what}, on every iteration of {where}, if the value is on the GPU, {unsure}"
                f"{advice}",
                severity=Severity.HINT,
            )
        case None:
            ctx.report(SYNC_IN_LOOP, node, f"{what}, on every iteration of {where}{advice}", fixes)


def _forward_unsure(hook: Loop) -> str:
    """Why what a forward (or an autograd function's backward) reads may be on the GPU."""
    if getattr(hook.node, "name", None) == BACKWARD:
        return "as the tensors an autograd function's forward saves usually are"
    return "as the inputs of a module's forward usually are"


@checks(ast.Call)
def check_sync_call(node: ast.Call, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None:
        return
    func = node.func
    detached = ctx.evaluator.fastai_to_host(node)
    if detached is not None:
        copied = ctx.value(detached)
        if copied is not None and copied.on_gpu:
            report_sync(
                node,
                f"`{shown(ctx, node)}` copies GPU values to the host (`cpu=True` by default) and "
                "waits for all queued GPU work",
                loop,
                ctx,
                advice=". Detach with `cpu=False` to keep them on the device, and copy once "
                "after the loop (or every N steps).",
                subject=copied,
            )
        return
    if isinstance(func, ast.Attribute):
        receiver = ctx.value(func.value)
        on_gpu = receiver is not None and receiver.on_gpu
        if on_gpu and (func.attr in fw.SYNC_METHODS or ctx.evaluator.moves_to_cpu(node)):
            own = ctx.evaluator.own_device(node)
            where = (
                f"`{shown(ctx, own)}` (the CPU unless the object was built with another device)"
                if own is not None
                else "the host"
            )
            report_sync(
                node,
                f"`{shown(ctx, node)}` copies a GPU value to {where} and waits for all queued "
                "GPU work",
                loop,
                ctx,
                advice=_ACCUMULATE_ADVICE,
                subject=receiver,
                fixes=_accumulate_fixes(node, func.value, receiver, loop, ctx),
            )
            return
        if on_gpu and _sizes_by_values(node, func.attr, ctx):
            _report_sized_by_values(node, f"`{shown(ctx, node)}`", receiver, loop, ctx)
            return
        if receiver is not None and receiver.kind is Kind.SCALER and func.attr == "get_scale":
            report_sync(
                node,
                f"`{shown(ctx, node)}` reads the scaler's scale, kept on the GPU, and waits for "
                "all queued GPU work",
                loop,
                ctx,
                advice=". To learn whether the optimizer step was skipped, compare the scale "
                "every N steps, or keep the comparison on the device.",
                subject=Value(Kind.GPU),
            )
            return
        if on_gpu and func.attr == "block_until_ready":
            _report_device_sync(node, loop, ctx)
            return
        if receiver is None and func.attr == "cpu" and not node.args and _may_be_data(func.value):
            # nothing says where the value is, but `.cpu()` is only ever asked of a tensor
            # that may be on a device: at most a hint
            _report_guessed_read(
                node,
                loop,
                ctx,
                advice=": the CPU stops feeding the GPU. Keep the values on the device and copy "
                "them once after the loop (or once per batch).",
                unsure="as the call to `.cpu()` suggests",
            )
            return
        if (
            receiver is None
            and func.attr in ("item", "tolist")
            and not node.args
            and (loop.backward or loop.hook)
            and may_be_tensor(func.value, ctx)
        ):
            # a loop that runs a backward pass computes autograd tensors on the model's
            # device, and a framework's step hook computes on the data it is handed there: a
            # read of one is a wait per step, if that device is a GPU (a hint)
            _report_guessed_read(
                node,
                loop,
                ctx,
                advice=_ACCUMULATE_ADVICE,
                unsure=(
                    "as the backward pass in the loop suggests"
                    if not isinstance(loop.node, ast.FunctionDef | ast.AsyncFunctionDef)
                    else "as the backward pass in this step suggests"
                )
                if loop.backward
                else "as the data the framework hands this step suggests",
            )
            return
    if _check_str_format(node, ctx) or _check_logging(node, ctx):
        return
    if _reads_per_item(node, loop, ctx):
        return
    counted = _counted_array(node, ctx)
    if counted is not None:
        _report_sized_by_values(node, f"`{shown(ctx, node)}`", counted, loop, ctx)
        return
    name = ctx.qualname(func, through_calls=True)
    if name in fw.DEVICE_SYNC_CALLS:
        _report_device_sync(node, loop, ctx)
        return
    if name in fw.TORCH_DATA_BUILDERS and _built_from_gpu_values(node, loop, ctx):
        return
    if isinstance(func, ast.Name) and ctx.scope.lookup(func.id) is None:
        _check_builtin(node, func.id, loop, ctx)


def _reads_per_item(node: ast.Call, loop: Loop, ctx: Context) -> bool:
    """`[self.index_for_timestep(t) for t in timesteps]`: a function of the file that reads
    on the host the GPU value it is handed, called once per item with the item. Its own
    finding names the read; this one names the call, where the fix goes (one call for all
    the items)."""
    if not loop.per_sample:
        return False
    callee = ctx.value(node.func)
    if callee is None or callee.kind is not Kind.FUNCTION:
        return False
    function = callee.origin
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    for position, parameter, read in ctx.evaluator.host_reads(function):
        if 0 <= position < len(node.args):
            argument: ast.expr | None = node.args[position]
        else:
            argument = _keyword_value(node, parameter)
        if argument is None or isinstance(argument, ast.Starred):
            continue
        if not names_in(argument) & loop.targets:
            continue  # the same value on every call: not one per item
        value = ctx.value(argument)
        if value is None or not value.on_gpu:
            continue
        report_sync(
            node,
            f"`{shown(ctx, node)}` runs {function.name}(), which waits for the GPU on the "
            f"value it is given ({read} there)",
            loop,
            ctx,
            advice=": one wait per item. Hand the function all the items at once (one "
            "vectorized lookup), or copy them to the host in one read before the loop.",
            subject=value,
        )
        return True
    return False


def _sizes_by_values(node: ast.Call, method: str, ctx: Context) -> bool:
    """`x.nonzero()`, `x.unique()`, `x.repeat_interleave(counts)` of a GPU array: a result
    whose size the values decide."""
    if method in fw.SIZE_FROM_VALUES_METHODS:
        return True
    if method in fw.REPEAT_FUNCTIONS and keyword(node, "output_size") is None:
        repeats = node.args[0] if node.args else _keyword_value(node, "repeats")
        return ctx.on_gpu(repeats)
    return False


def _counted_array(node: ast.Call, ctx: Context) -> Value | None:
    """The GPU array whose values size the result of `torch.nonzero(x)`, `cp.where(mask)`
    (one argument), `xp.unique(x)`, `torch.repeat_interleave(x, counts)` (no
    `output_size`); None for any other call."""
    func = node.func
    name = ctx.qualname(func)
    if name is None:
        # `xp.nonzero(x)` of the array library a device-agnostic function picked
        module = ctx.value(func.value) if isinstance(func, ast.Attribute) else None
        if module is None or module.kind is not Kind.ARRAY_MODULE:
            return None
    elif name.rsplit(".", 1)[0] not in ("torch", "cupy"):
        return None
    function = simple_name(func)
    data = ctx.value(node.args[0]) if node.args else None
    if data is None or not data.on_gpu:
        return None
    if function in fw.SIZE_FROM_VALUES_FUNCTIONS:
        return data
    if function in fw.WHERE_FUNCTIONS and len(node.args) == 1 and not node.keywords:
        return data  # `where(mask)` is `nonzero(mask, as_tuple=True)`
    if function in fw.REPEAT_FUNCTIONS and keyword(node, "output_size") is None:
        if len(node.args) == 1 and not node.keywords:
            return data  # `repeat_interleave(counts)`
        repeats = node.args[1] if len(node.args) > 1 else _keyword_value(node, "repeats")
        return data if ctx.on_gpu(repeats) else None
    return None


def _keyword_value(node: ast.Call, name: str) -> ast.expr | None:
    bound = keyword(node, name)
    return bound.value if bound is not None else None


@checks(ast.Subscript)
def check_mask_index(node: ast.Subscript, ctx: Context) -> None:
    """`x[x > 0]`, `x[torch.isnan(x)]`: a gather by a boolean mask of a GPU array."""
    loop = ctx.hot_loop
    if loop is None or not isinstance(node.ctx, ast.Load):
        return
    index = node.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    masks = [part for part in parts if _is_mask(part, ctx)]
    # a name another binding of which comes from a function the file does not show
    likely = not masks
    if likely:
        masks = [part for part in parts if _is_mask(part, ctx, loose=True)]
    base = ctx.value(node.value)
    if base is None or not base.on_gpu:
        return
    if not masks and not base.guessed:
        # a mask of unknown device indexing a known GPU array: on the host or not, the
        # gather counts it on the GPU (a host mask is copied there first)
        masks = [part for part in parts if _mask_by_form(part, ctx)]
        likely = False
    if not masks or any(_tested_before(mask, node, ctx, loose=likely) for mask in masks):
        return
    _report_sized_by_values(
        node,
        f"Indexing with a boolean mask (`{shown(ctx, node)}`)",
        Value(Kind.GPU, base.lib, guessed=True) if likely else base,
        loop,
        ctx,
        unsure="and the index is the boolean mask that another assignment of it makes"
        if likely and not base.guessed
        else None,
    )


def _mask_by_form(node: ast.expr, ctx: Context) -> bool:
    """`sel = (obs > 0)` where nothing says where `obs` is: booleans by the expression's
    form, unless every comparison in it is of host values (`x[i == 0]` of a loop counter
    is a Python bool, a view)."""
    if ctx.value(node) is not None or not _mask_shaped(node, ctx, frozenset()):
        return False
    counters = frozenset().union(*(loop.targets for loop in ctx.loops))
    compared = [node] if isinstance(node, ast.Compare) else []
    if isinstance(node, ast.Name) and ctx.function is not None:
        compared = [v for v in _bindings(ctx.function, node.id) if isinstance(v, ast.Compare)]
    return not any(_scalar_test(c, ctx, counters) for c in compared)


def _scalar_test(compare: ast.Compare, ctx: Context, counters: frozenset[str]) -> bool:
    """A comparison whose operands are each a number, a loop's name or a known host value."""
    for operand in (compare.left, *compare.comparators):
        value = ctx.value(operand)
        if value is not None and value.kind is Kind.HOST:
            continue
        if not is_host_expression(operand, counters):
            return False
    return True


def _is_mask(node: ast.expr, ctx: Context, *, loose: bool = False) -> bool:
    """A boolean array on the GPU, as its expression shows: a comparison (`x > 0`), its
    negation or combination (`~m`, `a & b`), a test of each element (`torch.isnan(x)`), an
    array made or cast as booleans (`torch.eye(n, dtype=torch.bool)`, `x.bool()`), or a name
    the function binds only to such expressions (`keep = (y >= 0) & (y < n)`). ``loose``: a
    name may also be bound to what a function the file does not show returns."""
    return _mask_shaped(node, ctx, frozenset(), loose=loose) and ctx.on_gpu(node)


def _mask_shaped(
    node: ast.expr, ctx: Context, seen: frozenset[str], *, loose: bool = False
) -> bool:
    match node:
        case ast.Compare(ops=ops) if not any(isinstance(op, _IDENTITY) for op in ops):
            return True
        case ast.UnaryOp(op=ast.Invert(), operand=operand):
            return _mask_shaped(operand, ctx, seen, loose=loose)
        case ast.BinOp(op=ast.BitAnd() | ast.BitOr() | ast.BitXor(), left=left, right=right):
            return _mask_shaped(left, ctx, seen, loose=loose) or _mask_shaped(
                right, ctx, seen, loose=loose
            )
        case ast.Call(func=func) if simple_name(func) in fw.MASK_FUNCTIONS:
            return True
        case ast.Call() if _made_as_booleans(node, ctx):
            return True
        case ast.Call(func=ast.Attribute(attr=attr, value=receiver)) if attr in _MASK_KEEPING:
            return _mask_shaped(receiver, ctx, seen, loose=loose)  # `mask.triu(1)`, `.view(-1)`
        case ast.Name(id=name) if ctx.function is not None and name not in seen:
            bound = _bindings(ctx.function, name)
            shaped = [
                value is not None and _mask_shaped(value, ctx, seen | {name}) for value in bound
            ]
            if loose and any(shaped):
                return all(
                    is_mask or _unseen_call(value, ctx)
                    for is_mask, value in zip(shaped, bound, strict=True)
                )
            return bool(bound) and all(shaped)
    return False


def _made_as_booleans(call: ast.Call, ctx: Context) -> bool:
    """`torch.eye(n, dtype=torch.bool)`, `x.bool()`, `x.to(torch.bool)`: an array of
    booleans by its dtype."""
    dtype = _keyword_value(call, "dtype")
    if dtype is not None:
        return _is_bool_dtype(dtype, ctx)
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "bool":
        return not call.args and not call.keywords
    return func.attr in ("to", "type") and len(call.args) == 1 and _is_bool_dtype(call.args[0], ctx)


def _is_bool_dtype(node: ast.expr, ctx: Context) -> bool:
    if isinstance(node, ast.Name) and node.id == "bool":
        return True
    qualified = ctx.qualname(node)
    return qualified is not None and qualified.rsplit(".", 1)[-1] in ("bool", "bool_")


def _unseen_call(value: ast.expr | None, ctx: Context) -> bool:
    """What a function the file does not show returns (`dist.eye_rank(n)`, a parameter's
    call): not a library's, and not a def of the file."""
    if not isinstance(value, ast.Call):
        return False
    qualified = ctx.qualname(value.func)
    if qualified is not None and qualified.split(".", 1)[0] in _ARRAY_LIBRARIES:
        return False
    if isinstance(value.func, ast.Attribute) and qualified is None:
        return False  # `scores.argsort()`: a method of a value, not a module's function
    return ctx.value(value.func) is None and ctx.value(value) is None


_ARRAY_LIBRARIES = frozenset({"torch", "numpy", "cupy", "cupyx", "jax"})
# methods that give booleans of booleans: a mask reshaped, cut to a triangle or copied
_MASK_KEEPING = frozenset(
    {
        "triu",
        "tril",
        "view",
        "reshape",
        "expand",
        "expand_as",
        "flatten",
        "clone",
        "detach",
        "t",
        "transpose",
        "permute",
        "unsqueeze",
        "squeeze",
        "repeat",
        "contiguous",
        "flip",
    }
)


def _tested_before(mask: ast.expr, node: ast.expr, ctx: Context, *, loose: bool = False) -> bool:
    """Whether the function tests a mask held in a name, or gathers with it, between the
    name's last assignment and this gather (`if not keep.any(): return` … `x[keep]`;
    `y = y[keep]`, `p = p[keep]`): that earlier read waited for the GPU, and what is left
    here is a small count of its own."""
    function = ctx.function
    if function is None:
        return False
    held = {
        name
        for name in names_in(mask)
        if _mask_shaped(ast.Name(id=name, ctx=ast.Load()), ctx, frozenset(), loose=loose)
    }
    if not held:
        return False
    nodes = list(ast.walk(function))
    since = max(
        (
            target.lineno
            for target in nodes
            if isinstance(target, ast.Name)
            and target.id in held
            and isinstance(target.ctx, ast.Store)
            and target.lineno < node.lineno
        ),
        default=0,
    )
    for earlier in nodes:
        if isinstance(earlier, ast.If | ast.While | ast.Assert):
            read = since < earlier.lineno < node.lineno and bool(held & names_in(earlier.test))
        elif isinstance(earlier, ast.Subscript) and isinstance(earlier.ctx, ast.Load):
            read = (
                since < earlier.lineno < node.lineno
                and bool(held & names_in(earlier.slice))
                and ctx.on_gpu(earlier.value)
            )
        else:
            continue
        if read:
            return True
    return False


def _bindings(function: ast.AST, name: str) -> list[ast.expr | None]:
    """What each binding of ``name`` in a function assigns: the value of each `name = value`
    (or `name: T = value`), None for any other (a parameter, a loop target, an unpacking,
    `name += …`)."""
    found: list[ast.expr | None] = []
    plain: set[int] = set()
    arguments = getattr(function, "args", None)
    if arguments is not None and any(
        isinstance(a, ast.arg) and a.arg == name for a in ast.walk(arguments)
    ):
        found.append(None)
    nodes = list(ast.walk(function))
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    plain.add(id(target))
                    found.append(node.value)
        elif (
            isinstance(node, ast.AnnAssign)
            and node.value is not None
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            plain.add(id(node.target))
            found.append(node.value)
    for node in nodes:
        if (
            isinstance(node, ast.Name)
            and node.id == name
            and isinstance(node.ctx, ast.Store)
            and id(node) not in plain
        ):
            found.append(None)
    return found


def _report_sized_by_values(
    node: ast.expr,
    what: str,
    subject: Value | None,
    loop: Loop,
    ctx: Context,
    *,
    unsure: str | None = None,
) -> None:
    """A result whose size depends on the values of a GPU array: the host allocates it,
    so it waits for the GPU to count them."""
    if _read_at_once(node, ctx):
        return  # `x.nonzero().tolist()`: the read is reported, and it is the same wait
    library = "cupy" if subject is not None and subject.lib == "cupy" else "torch"
    report_sync(
        node,
        f"{what} makes a result whose size depends on the values: the host waits for the "
        "GPU to count them before it can allocate the result",
        loop,
        ctx,
        advice=". A result of fixed size keeps the work on the device: "
        f"`{library}.where(mask, x, 0)` with three arguments, a masked sum or mean, or an "
        "index known on the host.",
        subject=subject,
        unsure=unsure,
    )


def _read_at_once(node: ast.expr, ctx: Context) -> bool:
    """Whether the statement reads ``node``'s result on the host where it stands
    (`x.nonzero()[0].tolist()`)."""
    if ctx.statement is None:
        return False
    for call in ast.walk(ctx.statement):
        match call:
            case ast.Call(func=ast.Attribute(attr=attr, value=receiver)) if (
                attr in fw.SYNC_METHODS and receiver is not node
            ):
                if any(inner is node for inner in ast.walk(receiver)):
                    return True
    return False


_IDENTITY = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def _backward_loss(node: ast.Call, loop: Loop, ctx: Context) -> bool:
    """`float(loss)` in a loop (or a function that is one training step) that runs its
    backward pass on `loss` (`loss.backward()`, `optimizer.step(loss)`): a tensor, on the
    model's device, whatever the file says of that device."""
    if not loop.backward or len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
        return False
    if ctx.value(node.args[0]) is not None:
        return False
    return node.args[0].id in loop.backward_names()


def may_be_tensor(node: ast.expr, ctx: Context) -> bool:
    """Not a host value whatever its names hold (`len(x)`, `x.shape[0]`), nor the result
    of a NumPy or Python function, nor a model."""
    if is_host_expression(node):
        return False
    if isinstance(node, ast.Call):
        name = ctx.qualname(node.func)
        if name is not None and name.startswith(_HOST_LIBRARIES):
            return False
        if isinstance(node.func, ast.Name) and node.func.id in fw.HOST_BUILTINS:
            return False
    return _may_be_data(node)


_HOST_LIBRARIES = ("numpy.", "math.", "random.", "statistics.", "time.")


def _may_be_data(node: ast.expr) -> bool:
    """Not a model or module (whose `.cpu()` moves parameters, not a value to read)."""
    name = dotted_name(node)
    return name is None or not fw.MODEL_NAME.search(name.rsplit(".", 1)[-1])


def _check_builtin(node: ast.Call, builtin: str, loop: Loop, ctx: Context) -> None:
    if builtin in ("max", "min") and len(node.args) >= 2:
        if any(ctx.on_gpu(a) for a in node.args):
            _report_bool(node, loop, ctx)
        return
    if builtin not in fw.SYNC_BUILTINS:
        return
    gpu_args = [a for a in node.args if ctx.on_gpu(a)]
    if not gpu_args:
        if builtin == "float" and _backward_loss(node, loop, ctx):
            _report_guessed_read(
                node,
                loop,
                ctx,
                advice=_ACCUMULATE_ADVICE,
                unsure="as the backward pass run on it suggests",
            )
        return
    if builtin == "print":
        report_sync(
            node,
            "Printing a GPU value copies it to the host and waits for the GPU",
            loop,
            ctx,
            advice=". Print every N steps (`if step % 100 == 0:`) or after the loop.",
            subject=ctx.value(gpu_args[0]),
        )
        return
    argument = gpu_args[0]
    receiver = ctx.value(argument)
    fixes = _accumulate_fixes(node, argument, receiver, loop, ctx) if builtin == "float" else ()
    report_sync(
        node,
        f"`{shown(ctx, node)}` copies a GPU value to the host and waits for all queued GPU work",
        loop,
        ctx,
        advice=". Keep the value on the device and convert once after the loop, or every N steps.",
        subject=receiver,
        fixes=fixes,
    )


@checks(ast.Lambda)
def check_sort_key(node: ast.Lambda, ctx: Context) -> None:
    """`sorted(hyps, key=lambda h: h.score)` where the key is a GPU value: the call compares
    the keys on the host, one wait per comparison, each time the loop around it runs it."""
    key = ctx.loop
    if key is None or key.node is not node or key.key_of is None or len(ctx.loops) < 2:
        return
    loop = ctx.loops[-2]
    if loop.guarded or loop.per_epoch:
        return
    value = ctx.value(node.body)
    if value is None or value.kind is not Kind.GPU:
        return
    call = "sort()" if key.key_of == "sort" else f"{key.key_of}()"
    report_sync(
        node,
        f"`{call}` by the key `{shown(ctx, node.body)}`, a GPU value, compares the keys on "
        "the host: each comparison copies a bool back and waits for the GPU",
        loop,
        ctx,
        advice=". Stack the keys and sort or pick on the device (`torch.argsort`, `topk`), or "
        "read them once (`.tolist()`) and compare Python numbers.",
        subject=value,
    )


def _built_from_gpu_values(node: ast.Call, loop: Loop, ctx: Context) -> bool:
    """`torch.tensor([x], device=d)` where x is a GPU value: the list is read element by
    element into Python numbers on the host (a wait each), then copied to the device."""
    match node.args:
        case [ast.List(elts=elements) | ast.Tuple(elts=elements), *_]:
            pass
        case [ast.ListComp(elt=element) as made, *_]:
            # the items are judged where the comprehension binds its names, the wait
            # counted in the loops around the call (not per item: one read each either way)
            ctx.comprehension_checks[id(made)] = lambda: _built_from_items(
                node, made, element, loop, ctx
            )
            return False
        case [ast.Name(id=name) as filled, *_]:
            return _built_from_filled_list(node, filled, name, loop, ctx)
        case _:
            return False
    held = [e for e in elements if _gpu_item(e, ctx)]
    if not held:
        return False
    _report_built(node, held[0], loop, ctx)
    return True


def _built_from_filled_list(
    node: ast.Call, held: ast.Name, name: str, loop: Loop, ctx: Context
) -> bool:
    """`torch.tensor(values)` of a list the function started empty and filled by appends:
    read item by item like a list written out. Items the file shows on the GPU make the
    list a GPU value (the walker's `hold`); items a loop running a backward pass computes
    (not host numbers) are GPU values by a guess only."""
    items = filled_list_items(ctx.function, name) if ctx.function is not None else None
    if not items:
        return False
    value = ctx.value(held)
    if value is not None and value.kind is Kind.GPU:
        _report_built(node, held, loop, ctx)
        return True
    if not loop.backward or value is not None:
        return False
    hosts = host_names(ctx.function) if ctx.function is not None else frozenset()
    if not all(_computed_tensor(item, hosts, ctx) for item in items):
        return False
    report_sync(
        node,
        f"`{shown(ctx, node)}` reads each value of `{name}` on the host (a copy back and a wait "
        f"each) to build the tensor there, {_then(node)}",
        loop,
        ctx,
        advice=". Keep it on the device: `torch.stack(values)`.",
        subject=Value(Kind.GPU, guessed=True),
        unsure="as the backward pass in the loop that fills the list suggests",
    )
    return True


def _computed_tensor(item: ast.expr, hosts: frozenset[str], ctx: Context) -> bool:
    """An appended item that may be a tensor: not a host value (`float(loss)`, a name bound
    to one), nor a model."""
    return not is_host_expression(item, hosts) and may_be_tensor(item, ctx)


def _built_from_items(
    node: ast.Call, made: ast.ListComp, element: ast.expr, loop: Loop, ctx: Context
) -> None:
    """`torch.tensor([h.score for h in hyps])` where each item is a GPU value."""
    if _gpu_item(element, ctx):
        _report_built(node, element, loop, ctx)


def _gpu_item(element: ast.expr, ctx: Context) -> bool:
    # (`torch.equal(a, b)` is a Python bool already: the wait is the call's own)
    return ctx.on_gpu(element)


def _then(node: ast.Call) -> str:
    if keyword(node, "device") is not None:
        return "then copies it to the device it names"
    return "where the result stays"


def _report_built(node: ast.Call, held: ast.expr, loop: Loop, ctx: Context) -> None:
    report_sync(
        node,
        f"`{shown(ctx, node)}` reads each GPU value of its list on the host (a copy back and "
        f"a wait each) to build the tensor there, {_then(node)}",
        loop,
        ctx,
        advice=". Keep it on the device: `torch.stack([...])`, `torch.cat`, or `x.view(1)` for "
        "one value.",
        subject=ctx.value(held),
    )


@checks(ast.FormattedValue)
def check_formatted(node: ast.FormattedValue, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is not None and ctx.on_gpu(node.value):
        report_sync(
            node.value,
            f"Formatting a GPU value (`{shown(ctx, node.value)}`) copies it to the host and "
            "waits for the GPU",
            loop,
            ctx,
            advice=". Format it every N steps or after the loop.",
            subject=ctx.value(node.value),
        )


@checks(ast.BinOp)
def check_percent_format(node: ast.BinOp, ctx: Context) -> None:
    """`"loss=%.5f" % loss`: `%f` and `%d` call `float()` / `int()` on the value, `%s` and
    `%r` format the whole array; each is a read on the host."""
    if isinstance(node.op, ast.Mod) and ctx.hot_loop is not None:
        _report_formatted(formatted_operands(node), ctx, how="with `%`")


def _check_str_format(node: ast.Call, ctx: Context) -> bool:
    """`"{:.4f}".format(loss)`; whether the call is a str's `format`."""
    operands = formatted_operands(node)
    if operands:
        _report_formatted(operands, ctx, how="with `str.format`")
    return bool(operands)


def _report_formatted(operands: list[ast.expr], ctx: Context, *, how: str) -> None:
    loop = ctx.hot_loop
    if loop is None:
        return
    for operand in operands:
        if ctx.on_gpu(operand):
            report_sync(
                operand,
                f"Formatting a GPU value (`{shown(ctx, operand)}`) {how} copies it to the host "
                "and waits for the GPU",
                loop,
                ctx,
                advice=". Format it every N steps or after the loop.",
                subject=ctx.value(operand),
            )


def _check_logging(node: ast.Call, ctx: Context) -> bool:
    """`logger.info("loss %f", loss)`: the logging module formats its arguments when it emits
    the record, at the call, if the logger's level lets the record through. Whether the call
    is a logging call."""
    loop = ctx.hot_loop
    level = _logging_level(node.func, ctx)
    if loop is None or level is None:
        return level is not None
    argument = next((a for a in node.args[1:] if ctx.on_gpu(a)), None)
    if argument is not None:  # the first read waits; the rest find the GPU done
        what = (
            f"Logging a GPU value (`{shown(ctx, argument)}`) formats it when the record is "
            "emitted, which copies it to the host and waits for the GPU"
        )
        if level == "debug":
            # off unless someone turns debug logging on: a hint that says so
            ctx.report(
                SYNC_IN_LOOP,
                argument,
                f"{what}, on every iteration of {loop.describe()}, if debug logging is "
                "enabled (it is off by default). Log it every N steps or after the loop.",
                severity=Severity.HINT,
            )
        else:
            report_sync(
                argument,
                what,
                loop,
                ctx,
                advice=". Log it every N steps or after the loop.",
                subject=ctx.value(argument),
            )
    return True


def _logging_level(func: ast.expr, ctx: Context) -> str | None:
    """ "info" for `logging.info`, `logging.getLogger(__name__).info`, `logger.info` of a
    module-level `logger = logging.getLogger(...)` or loguru's `logger`; None for any other
    call."""
    if not isinstance(func, ast.Attribute) or func.attr not in fw.LOGGING_LEVELS:
        return None
    name = ctx.qualname(func.value, through_calls=True)
    if name in ("logging", "logging.getLogger", "loguru.logger"):
        return func.attr
    if isinstance(func.value, ast.Name) and func.value.id in module_loggers(ctx):
        return func.attr
    return None


def module_loggers(ctx: Context) -> frozenset[str]:
    """The names the module binds to `logging.getLogger(...)`. Judged once per state of
    the imports; a function's memo key holds them."""
    key = ("module loggers", ctx.imports.version)
    if key not in ctx.file_facts:
        ctx.file_facts[key] = frozenset(
            target.id
            for statement in ctx.module_tree().body
            if isinstance(statement, ast.Assign)
            and isinstance(statement.value, ast.Call)
            and ctx.qualname(statement.value.func) == "logging.getLogger"
            for target in statement.targets
            if isinstance(target, ast.Name)
        )
    found = ctx.file_facts[key]
    return found if isinstance(found, frozenset) else frozenset()


@checks(ast.If, ast.IfExp, ast.Assert)
def check_truth_test(node: ast.If | ast.IfExp | ast.Assert, ctx: Context) -> None:
    loop = ctx.hot_loop
    test = node.test
    if device_test(test) is False:
        return  # `x.device.type == "cpu" and x.any()`: read only where it is on the CPU
    while isinstance(test, ast.BoolOp):
        test = test.values[-1]  # `if a or t == 0:` tests the last operand's truth too
    if loop is None:
        return
    tested = _tests_an_array(test, ctx)
    if not tested and not _tests_backward_loss(test, loop, ctx):
        return
    # `if done.all(): break`, `assert not torch.isnan(loss)`: the test decides whether the
    # loop (or the program) goes on
    exits = isinstance(node, ast.Assert) or (isinstance(node, ast.If) and leaves_loop(node.body))
    saved, ctx.deciding_exit = ctx.deciding_exit, ctx.deciding_exit or exits
    try:
        if tested:
            _report_bool(test, loop, ctx)
        else:
            _report_guessed_read(
                test,
                loop,
                ctx,
                advice=". Keep the check on the device (`torch.where`, a flag read once per "
                "epoch) or take it every N steps.",
                unsure="as the backward pass run on it suggests",
            )
    finally:
        ctx.deciding_exit = saved


def _tests_backward_loss(test: ast.expr, loop: Loop, ctx: Context) -> bool:
    """`if not torch.isfinite(loss):`, `if loss > limit:` in a loop (or a step) that runs a
    backward pass on `loss`: the test reads an autograd tensor on the model's device,
    whatever the file says of that device, unless the name now holds a known value."""
    name = tested_name(test)
    if name is None or not loop.backward or ctx.value(name) is not None:
        return False
    if name.id not in loop.backward_names():
        return False
    # `loss = float(value)` in the same loop: the name may hold a host number by now
    return not any(is_host_expression(v) for v in _bindings(loop.node, name.id) if v is not None)


def _tests_an_array(test: ast.expr, ctx: Context) -> bool:
    """A GPU array used as a bool; a bare name of a GPU tuple or dict (`if outputs:`) may
    test only that it is not empty."""
    value = ctx.value(test)
    if value is None or not value.on_gpu:
        return False
    return value.exact or not isinstance(test, ast.Name | ast.Attribute | ast.Subscript)


@checks(ast.Assign)
def check_host_tensor_write(node: ast.Assign, ctx: Context) -> None:
    """`losses[k] = loss` into a tensor made on the host: a copy to the host and a wait."""
    loop = ctx.hot_loop
    if loop is None or not any(isinstance(t, ast.Subscript) for t in node.targets):
        return
    if not ctx.on_gpu(node.value):
        return
    for target in node.targets:
        if not isinstance(target, ast.Subscript):
            continue
        held = ctx.value(target.value)
        if held is not None and held.kind is Kind.CPU_TENSOR:
            report_sync(
                node.value,
                f"Writing a GPU value into the host tensor `{shown(ctx, target.value)}` copies "
                "it to the host and waits for the GPU",
                loop,
                ctx,
                advice=". Make the tensor on the device (`device=`) and copy it once after the "
                "loop.",
                subject=ctx.value(node.value),
            )
            return


@checks(ast.While)
def check_while_test(node: ast.While, ctx: Context) -> None:
    if _tests_an_array(node.test, ctx):
        ctx.report(
            SYNC_IN_LOOP,
            node.test,
            f"The loop condition `{shown(ctx, node.test)}` is a GPU value: testing it copies "
            "it to the host and waits for the GPU on every iteration, to decide whether the "
            "loop stops. Testing every N iterations (or running a fixed number of them) would "
            "save the other waits.",
            severity=Severity.HINT,
        )


@checks(ast.BoolOp)
def check_bool_operands(node: ast.BoolOp, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None or device_test(node) is False:
        return
    for operand in node.values[:-1]:  # the last operand is returned, not tested
        if _tests_an_array(operand, ctx):  # (`kwargs or None` tests a dict, not an array)
            _report_bool(operand, loop, ctx)
            return


@checks(ast.Compare)
def check_chained_comparison(node: ast.Compare, ctx: Context) -> None:
    """`a < b < c` is `a < b and b < c`: Python tests each link but the last as a bool to
    decide whether to go on, wherever the chain stands (`on_grid = t0 < t < t1`)."""
    loop = ctx.hot_loop
    if loop is None or len(node.ops) < 2 or any(isinstance(op, _MEMBERSHIP) for op in node.ops):
        return
    if ctx.statement is not None and _read_as_bool(node, ctx.statement):
        return  # the test reads the whole chain: one finding there (check_truth_test)
    operands = [node.left, *node.comparators]
    subject = next(
        (
            value
            for operand in operands[:-1]  # the last link's operands are not tested by it
            if (value := ctx.value(operand)) is not None and value.on_gpu
        ),
        None,
    )
    if subject is None:
        return
    report_sync(
        node,
        f"The chained comparison `{shown(ctx, node)}` tests its first link as a Python bool, "
        "which copies it to the host and waits for the GPU",
        loop,
        ctx,
        advice=". Combine the links on the device (`(a < b) & (b < c)`) or compare host numbers.",
        subject=subject,
    )


_MEMBERSHIP = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def _read_as_bool(node: ast.expr, statement: ast.stmt) -> bool:
    """Whether a truth-test check reads ``node`` whole in ``statement``: the test of an
    `if`, `while`, `assert` or conditional expression, an operand of `and`/`or` or `not`."""
    for candidate in ast.walk(statement):
        match candidate:
            case (
                ast.If(test=test)
                | ast.While(test=test)
                | ast.Assert(test=test)
                | ast.IfExp(test=test)
            ) if test is node:
                return True
            case ast.BoolOp(values=values) if any(v is node for v in values):
                return True
            case ast.UnaryOp(op=ast.Not(), operand=operand) if operand is node:
                return True
    return False


@checks(ast.UnaryOp)
def check_not(node: ast.UnaryOp, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None or not isinstance(node.op, ast.Not):
        return
    if _tests_an_array(node.operand, ctx):
        _report_bool(node, loop, ctx)  # (`not outputs` of a dict tests that it is empty)
        return
    operand = node.operand
    while isinstance(operand, ast.BoolOp):
        operand = operand.values[-1]  # `not (n1 == n2 and t.all())` tests the last's truth
    if operand is not node.operand and _tests_an_array(operand, ctx):
        _report_bool(operand, loop, ctx)


def _report_bool(node: ast.expr, loop: Loop, ctx: Context) -> None:
    report_sync(
        node,
        f"Using a GPU value as a Python bool (`{shown(ctx, node)}`) copies it to the host and "
        "waits for the GPU",
        loop,
        ctx,
        advice=". Keep the decision on the device (`torch.where`, `torch.maximum`) or take it "
        "every N steps.",
        subject=ctx.value(node.operand if isinstance(node, ast.UnaryOp) else node),
    )


def _report_device_sync(node: ast.Call, loop: Loop, ctx: Context) -> None:
    if in_timed_region(node, ctx) or just_before_clock_read(node, ctx):
        return  # the wait that makes a host clock read true
    ctx.report(
        SYNC_IN_LOOP,
        node,
        f"`{shown(ctx, node)}` waits for all queued GPU work on every iteration of "
        f"{loop.describe()}, so the CPU cannot queue the next step while the GPU runs. "
        "Synchronize once after the loop, or only around what you time.",
    )


def _accumulate_fixes(
    sync: ast.Call, array: ast.expr, value: Value | None, loop: Loop, ctx: Context
) -> tuple[Fix, ...]:
    """`total += loss.item()` -> `total += loss.detach()` and one `float(total)` after the loop;
    `values.append(x.item())` -> append `x.detach()` and concatenate once after the loop.

    Offered only where nothing else in the loop reads the total or the list (it holds a
    tensor, or tensors, until the loop ends)."""
    if value is None or (isinstance(sync.func, ast.Attribute) and sync.func.attr != "item"):
        return ()
    kept = ctx.text(array) if _is_atomic(array) else f"({ctx.text(array)})"
    if value.lib == "torch":
        kept += ".detach()"
    match ctx.statement:
        case ast.AugAssign(target=ast.Name(id=total), op=ast.Add(), value=added) if _in_sum(
            sync, added
        ):
            after = after_loop(ctx, loop, f"{total} = float({total})  # one sync, after the loop")
            if after is None or _read_elsewhere(total, loop, ctx):
                return ()
            # a Python float sums in double precision: so does a float64 tensor, operation
            # for operation, where the total starts as a float and the device has float64
            exact = _starts_as_float(total, loop) and value.lib in ("torch", "cupy")
            exact = exact and not mentions_mps(ctx)
            widened = kept + (".double()" if value.lib == "torch" else '.astype("float64")')
            return (
                fix(
                    f"Accumulate `{total}` on the device, read it once after the loop",
                    (replace(ctx, sync, widened if exact else kept), after),
                    None
                    if exact
                    else "sums in the array's dtype: the total's type or last digits may change",
                ),
            )
        case ast.Expr(
            value=ast.Call(
                func=ast.Attribute(value=ast.Name(id=values), attr="append"), args=[appended]
            )
        ) if appended is sync:
            library = ctx.spelled("torch" if value.lib == "torch" else "cupy", value.lib)
            if (
                library is None
                or value.lib not in ("torch", "cupy")
                or not _made_empty_before(values, loop)
                or _read_elsewhere(values, loop, ctx)
            ):
                return ()
            # each item held one element (`.item()` said so): one value per item, as before
            join = "cat" if value.lib == "torch" else "concatenate"
            after = after_loop(
                ctx,
                loop,
                f"{values} = {library}.{join}([v.reshape(1) for v in {values}]).tolist() "
                f"if {values} else []  # one sync",
            )
            if after is None:
                return ()
            return (
                Fix(
                    f"Collect `{values}` on the device, copy it once after the loop",
                    (replace(ctx, sync, kept), after),
                ),
            )
    return ()


def mentions_mps(ctx: Context) -> bool:
    """Whether the file names Apple's GPU anywhere (which has no float64). Read once per
    walk; a function's memo key holds it, since the accumulate fix depends on it."""
    key = ("mentions mps",)
    if key not in ctx.file_facts:
        ctx.file_facts[key] = "mps" in ctx.source.text
    return bool(ctx.file_facts[key])


def _read_elsewhere(name: str, loop: Loop, ctx: Context) -> bool:
    """Whether the loop's body uses ``name`` outside the statement being fixed."""
    if loop.statement is None or ctx.statement is None:
        return True
    if loop.names_used is None:  # counted once per loop, however many fixes ask
        loop.names_used = Counter(
            node.id
            for statement in getattr(loop.statement, "body", [])
            for node in ast.walk(statement)
            if isinstance(node, ast.Name)
        )
    here = sum(1 for n in ast.walk(ctx.statement) if isinstance(n, ast.Name) and n.id == name)
    return loop.names_used.get(name, 0) > here


def _is_atomic(node: ast.expr) -> bool:
    return isinstance(node, ast.Name | ast.Attribute | ast.Call | ast.Subscript)


def _in_sum(sync: ast.Call, added: ast.expr) -> bool:
    """Whether ``sync`` is a term (or a factor of a term) of the added expression."""
    if added is sync:
        return True
    if isinstance(added, ast.BinOp) and isinstance(
        added.op, ast.Add | ast.Sub | ast.Mult | ast.Div
    ):
        return _in_sum(sync, added.left) or _in_sum(sync, added.right)
    return False


def _starts_as_float(name: str, loop: Loop) -> bool:
    """`total = 0.0` stands before the loop in the same block, nothing rebinding it since."""
    if loop.block is None:
        return False
    body, index = loop.block
    for statement in reversed(body[:index]):
        match statement:
            case ast.Assign(targets=[ast.Name(id=bound)], value=ast.Constant(value=float())) if (
                bound == name
            ):
                return True
        if name in names_in(statement):
            return False
    return False


def _made_empty_before(name: str, loop: Loop) -> bool:
    """`values = []` stands before the loop in the same block: nothing else is in the list."""
    if loop.block is None:
        return False
    body, index = loop.block
    for statement in reversed(body[:index]):
        match statement:
            case ast.Assign(targets=[ast.Name(id=bound)], value=ast.List(elts=[])) if bound == name:
                return True
            case ast.Assign(targets=targets) if any(
                isinstance(t, ast.Name) and t.id == name for t in targets
            ):
                return False
    return False
