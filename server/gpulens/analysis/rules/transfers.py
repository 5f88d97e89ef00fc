"""Copies between host and device: too many, too small, or made where none was needed."""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context
from gpulens.analysis.model import Edit, Fix, Severity, Span
from gpulens.analysis.rules.common import add_keyword, keyword, replace, shown, starts_line
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import Kind, names_in

PER_ITEM_COPIES = rule(
    "GPU002",
    "per-item-copies",
    Severity.WARNING,
    "One host-to-device copy per item of a loop",
    """
Every host-to-device copy costs a driver call, a DMA setup and, from pageable memory, a
staging copy: about 10–20 µs before the first byte moves. Copying items one by one in a
loop or comprehension pays that for each item and keeps the copy engine busy with tiny
transfers, where one large copy would run at full PCIe/NVLink bandwidth.

**Bad:**
```python
batch = torch.stack([torch.tensor(s).to(device) for s in samples])
```

**Good:** build the batch on the host, copy it once:
```python
batch = torch.stack([torch.tensor(s) for s in samples]).to(device)
```
""",
)

CPU_THEN_MOVED = rule(
    "GPU003",
    "cpu-tensor-moved",
    Severity.WARNING,
    "Tensor created on the CPU, then copied to the GPU",
    """
`torch.zeros(n).cuda()` allocates and fills the tensor in host memory, then copies it to
the GPU: a host allocation, a host fill and a host-to-device transfer where the GPU could
have made the tensor in place with one kernel. Factories take a `device=` argument.

**Bad:**
```python
noise = torch.randn(batch, 128).to(device)
```

**Good:**
```python
noise = torch.randn(batch, 128, device=device)
```
""",
)

BLOCKING_COPY = rule(
    "GPU006",
    "blocking-batch-copy",
    Severity.INFO,
    "Batch copied to the GPU without non_blocking=True",
    """
`.to(device)` of a batch from pinned memory (`DataLoader(pin_memory=True)`) can return at
once and let the copy overlap with the GPU's work on the previous step, but only with
`non_blocking=True`; without it the CPU waits for each copy to finish before it queues the
next kernel.

**Bad:**
```python
for x, y in loader:
    x, y = x.to(device), y.to(device)
```

**Good:**
```python
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
```
""",
)

HOST_ROUND_TRIP = rule(
    "GPU008",
    "host-round-trip-in-loop",
    Severity.WARNING,
    "GPU array copied back to the host inside a loop",
    """
`cp.asnumpy(a)`, `a.get()` and NumPy functions applied to JAX arrays copy the array to host
memory and wait for the GPU to finish computing it. Inside a loop that is one device-to-host
copy and one synchronization per iteration. Keep the computation on the device (CuPy and
`jax.numpy` mirror NumPy's API) and convert once, after the loop.

**Bad:**
```python
for step in range(steps):
    u = stencil(u)
    energy.append(np.sum(cp.asnumpy(u) ** 2))
```

**Good:**
```python
for step in range(steps):
    u = stencil(u)
    energy.append(cp.sum(u ** 2))
energy = cp.asnumpy(cp.stack(energy))
```
""",
)


# -- GPU002 -------------------------------------------------------------------------------


@checks(ast.Call)
def check_per_item_copy(node: ast.Call, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None or not loop.targets or loop.over_loader:
        return
    if loop.iterates is not None and loop.iterates.kind is Kind.GPU:
        return  # the items are on the device already
    copied = _host_to_device_source(node, ctx)
    if copied is None or not (names_in(copied) & loop.targets):
        return
    ctx.report(
        PER_ITEM_COPIES,
        node,
        f"`{shown(ctx, node)}` makes one host-to-device copy per item of {loop.describe()}: "
        "each pays ~10–20 µs of setup and moves a few bytes. Build the batch on the host and "
        "copy it once.",
        _stack_then_copy_fix(node, copied, ctx),
    )


def _host_to_device_source(node: ast.Call, ctx: Context) -> ast.expr | None:
    """The host data a call copies to the GPU, or None if it is not such a copy."""
    func = node.func
    if isinstance(func, ast.Attribute) and ctx.evaluator.moves_to_gpu(node):
        receiver = ctx.value(func.value)
        if receiver is not None and receiver.kind in (Kind.GPU, Kind.GPU_MODULE, Kind.MODULE):
            return None
        return func.value
    name = ctx.qualname(func)
    if name is None or not node.args:
        return None
    if name in fw.TORCH_DATA_FACTORIES or name == "torch.from_numpy":
        device = keyword(node, "device")
        return (
            node.args[0] if device is not None and ctx.evaluator.device_of(device.value) else None
        )
    if name in fw.CUPY_TO_DEVICE or name in fw.JAX_TO_DEVICE or name in fw.NUMBA_TO_DEVICE:
        argument = node.args[0]
        return None if ctx.on_gpu(argument) else argument
    return None


def _stack_then_copy_fix(node: ast.Call, copied: ast.expr, ctx: Context) -> tuple[Fix, ...]:
    """`torch.stack([f(s).to(d) for s in xs])` -> `torch.stack([f(s) for s in xs]).to(d)`."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and ctx.evaluator.moves_to_gpu(node)):
        return ()
    statement = ctx.statement
    if statement is None:
        return ()
    for outer in ast.walk(statement):
        if not (isinstance(outer, ast.Call) and len(outer.args) == 1):
            continue
        name = ctx.qualname(outer.func)
        if name not in ("torch.stack", "torch.cat", "torch.vstack", "torch.hstack"):
            continue
        comprehension = outer.args[0]
        if not isinstance(comprehension, ast.ListComp | ast.GeneratorExp):
            continue
        if comprehension.elt is not node or outer.keywords:
            continue
        move = ctx.source.segment(ctx.span(node))[len(ctx.text(func.value)) :]
        return (
            Fix(
                "Stack on the host, copy once",
                (
                    replace(ctx, node, ctx.text(func.value)),
                    Edit(Span.point(ctx.span(outer).end_line, ctx.span(outer).end_column), move),
                ),
            ),
        )
    return ()


# -- GPU003 -------------------------------------------------------------------------------


@checks(ast.Call)
def check_cpu_then_moved(node: ast.Call, ctx: Context) -> None:
    func = node.func
    if not isinstance(func, ast.Attribute) or not ctx.evaluator.moves_to_gpu(node):
        return
    device = _device_text(node, ctx)
    if device is None:
        return
    source = func.value
    if isinstance(source, ast.Call):
        factory = source
        if not _is_cpu_factory(factory, ctx):
            return
        suffix = ctx.source.segment(ctx.span(node))[len(ctx.text(factory)) :]
        ctx.report(
            CPU_THEN_MOVED,
            node,
            f"`{shown(ctx, factory)}` fills the tensor in host memory, then `{suffix.strip()}` "
            "copies it to the GPU. Pass `device=` so the GPU creates it in place: no host "
            "allocation, no transfer.",
            (
                Fix(
                    f"Create it on the device (`device={device}`)",
                    (
                        add_keyword(ctx, factory, f"device={device}"),
                        Edit(_suffix_span(node, factory, ctx), ""),
                    ),
                ),
            ),
        )
        return
    if isinstance(source, ast.Name):
        value = ctx.scope.lookup(source.id)
        if value is None or value.kind is not Kind.CPU_TENSOR:
            return
        factory = value.origin
        if not isinstance(factory, ast.Call) or not _is_cpu_factory(factory, ctx):
            return
        if not _untouched_since(source.id, factory, ctx):
            return  # filled or read on the host in between: the copy may be the point
        ctx.report(
            CPU_THEN_MOVED,
            node,
            f"`{source.id}` is made in host memory by `{shown(ctx, factory)}` above, then "
            "copied to the GPU here. Pass `device=` to the factory so the GPU creates it in "
            "place: no host allocation, no transfer.",
            _named_fix(node, source.id, factory, device, ctx),
        )


def _is_cpu_factory(call: ast.Call, ctx: Context) -> bool:
    name = ctx.qualname(call.func)
    if name not in fw.TORCH_FACTORIES or keyword(call, "device") is not None:
        return False
    if name in fw.TORCH_DATA_FACTORIES:
        # torch.tensor(numpy_array) must copy anyway; only literal data is worth a finding
        return bool(call.args) and _is_literal(call.args[0])
    return not any(k.arg is None for k in call.keywords)


def _is_literal(node: ast.expr) -> bool:
    match node:
        case ast.Constant():
            return True
        case ast.List(elts=elements) | ast.Tuple(elts=elements):
            return all(_is_literal(e) for e in elements)
        case ast.UnaryOp(operand=operand):
            return _is_literal(operand)
    return False


def _device_text(node: ast.Call, ctx: Context) -> str | None:
    """The device argument as source text: `device`, `"cuda"`, `"cuda:1"`."""
    func = node.func
    assert isinstance(func, ast.Attribute)
    if func.attr == "cuda":
        if not node.args and not node.keywords:
            return ctx.device_variable() or '"cuda"'
        if len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and not node.keywords:
            return f'"cuda:{node.args[0].value}"'
        return None
    if len(node.args) == 1 and not node.keywords:
        argument = node.args[0]
        if ctx.evaluator.device_of(argument) and not ctx.on_gpu(argument):
            return ctx.text(argument)
    if not node.args and len(node.keywords) == 1 and node.keywords[0].arg == "device":
        return ctx.text(node.keywords[0].value)
    return None


def _suffix_span(node: ast.Call, inner: ast.expr, ctx: Context) -> Span:
    start, end = ctx.span(inner), ctx.span(node)
    return Span(start.end_line, start.end_column, end.end_line, end.end_column)


def _named_fix(
    node: ast.Call, name: str, factory: ast.Call, device: str, ctx: Context
) -> tuple[Fix, ...]:
    """Only `x = x.to(device)` right after `x = torch.zeros(...)`, with no use of x between."""
    statement = ctx.statement
    if not (
        isinstance(statement, ast.Assign)
        and statement.value is node
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
    ):
        return ()
    if device.isidentifier() and not _defined_before(device, factory, ctx):
        return ()
    span = ctx.span(statement)
    lines = ctx.source.lines
    rest = lines[span.end_line][span.end_column :].strip()
    if not starts_line(ctx, statement) or (rest and not rest.startswith("#")):
        return ()  # other code shares the line: removing it would lose that code
    removal = Edit(
        Span(span.line, 0, span.end_line + 1, 0)
        if span.end_line + 1 < len(lines)
        else Span(span.line, 0, span.end_line, len(lines[span.end_line])),
        "",
    )
    return (
        Fix(
            f"Create `{name}` on the device (`device={device}`)",
            (add_keyword(ctx, factory, f"device={device}"), removal),
        ),
    )


def _untouched_since(name: str, factory: ast.Call, ctx: Context) -> bool:
    """The factory's statement stands earlier in this block, and nothing between uses ``name``."""
    if ctx.statements is None:
        return False
    body, index = ctx.statements
    for earlier in reversed(body[:index]):
        if any(n is factory for n in ast.walk(earlier)):
            return True
        if name in names_in(earlier):
            return False
    return False


def _defined_before(name: str, factory: ast.Call, ctx: Context) -> bool:
    """The device variable the fix moves up is bound before the factory's line."""
    for node in ast.walk(ctx.tree):
        match node:
            case ast.Name(id=bound, ctx=ast.Store()) | ast.arg(arg=bound) if (
                bound == name and node.lineno < factory.lineno
            ):
                return True
    return False


# -- GPU006 -------------------------------------------------------------------------------


@checks(ast.Call)
def check_blocking_batch_copy(node: ast.Call, ctx: Context) -> None:
    loop = ctx.loop
    func = node.func
    if loop is None or not isinstance(func, ast.Attribute):
        return
    if not ctx.evaluator.moves_to_gpu(node) or keyword(node, "non_blocking") is not None:
        return
    receiver = ctx.value(func.value)
    if receiver is None or receiver.kind is not Kind.BATCH:
        return
    if func.attr == "to" and len(node.args) > 1:
        return  # `.to(device, dtype)`: positional non_blocking would be third; leave it
    ctx.report(
        BLOCKING_COPY,
        node,
        f"`{shown(ctx, node)}` waits for the copy to finish before the CPU queues more work. "
        "With `non_blocking=True` (and a loader with `pin_memory=True`) the copy overlaps "
        "with the GPU's work.",
        (Fix("Add non_blocking=True", (add_keyword(ctx, node, "non_blocking=True"),)),),
    )


# -- GPU008 -------------------------------------------------------------------------------


@checks(ast.Call)
def check_host_round_trip(node: ast.Call, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None:
        return
    func = node.func
    name = ctx.qualname(func)
    if name in fw.DEVICE_TO_HOST_CALLS and node.args and ctx.on_gpu(node.args[0]):
        _report_round_trip(node, ctx, loop.describe())
        return
    if isinstance(func, ast.Attribute) and func.attr in ("get", "copy_to_host") and not node.args:
        receiver = ctx.value(func.value)
        if receiver is not None and receiver.on_gpu and receiver.lib in ("cupy", "numba"):
            _report_round_trip(node, ctx, loop.describe())
        return
    if name is not None and name.startswith("numpy."):
        for argument in node.args:
            value = ctx.value(argument)
            if value is not None and value.on_gpu and value.lib == "jax":
                jnp = ctx.spelled("jax.numpy", "jnp")
                fixes: tuple[Fix, ...] = ()
                if jnp is not None and isinstance(func, ast.Attribute):
                    fixes = (
                        Fix(
                            f"Use {jnp}.{func.attr}",
                            (replace(ctx, func.value, jnp),),
                        ),
                    )
                _report_round_trip(node, ctx, loop.describe(), fixes)
                return


def _report_round_trip(
    node: ast.Call, ctx: Context, where: str, fixes: tuple[Fix, ...] = ()
) -> None:
    ctx.report(
        HOST_ROUND_TRIP,
        node,
        f"`{shown(ctx, node)}` copies a GPU array to the host and waits for the GPU, on every "
        f"iteration of {where}. Keep the work on the device and convert once after the loop.",
        fixes,
    )
