"""GPU002 and GPU006: host-to-device copies made one item at a time, or made blocking."""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context
from gpulens.analysis.model import Edit, Fix, Severity, Span
from gpulens.analysis.rules.common import add_keyword, replace, shown
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import Kind, dotted_name, keyword, names_in, simple_name

PER_ITEM_COPIES = rule(
    "GPU002",
    "per-item-copies",
    Severity.WARNING,
    "One host-to-device copy per item of a loop",
    """
Every host-to-device copy pays a fixed cost before the first byte moves: a driver call, a
transfer setup and, from pageable memory, a staging copy. Copying items one by one in a
loop or comprehension pays it for each item and keeps the copy engine busy with small
transfers, where one large copy would run at the bus's full bandwidth. (A loop over whole
batches, or over a few different tensors, copies each once: no finding.)

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


# -- GPU002 -------------------------------------------------------------------------------


@checks(ast.Call)
def check_per_item_copy(node: ast.Call, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None or not loop.per_sample:
        return
    if loop.iterates is not None and loop.iterates.kind is Kind.GPU:
        return  # the items are on the device already
    if _result_dropped(node, ctx):
        return  # `members[i].to(device)`: a module moved in place, once per device change
    copied = _host_to_device_source(node, ctx)
    if copied is None or not (names_in(copied) & loop.targets) or _field_of_iterated(copied, ctx):
        return
    ctx.report(
        PER_ITEM_COPIES,
        node,
        f"`{shown(ctx, node)}` makes one host-to-device copy per item of {loop.describe()}: "
        "each pays the fixed cost of a copy, however small the item. Build the batch on the "
        "host and copy it once.",
        _stack_then_copy_fix(node, copied, ctx),
    )


def _result_dropped(node: ast.Call, ctx: Context) -> bool:
    """`self.members[i].to(device)` as a statement of its own: a tensor's move returns a copy,
    so one whose result is dropped only does something if it moves its receiver in place, as
    a module does. Reached through an attribute of the object (`self.members[i]`, `for m in
    self.members`), it is a part the object holds, moved once per device change with it, not
    one item of data (the items of the object itself, `for token in self`, may be data)."""
    match ctx.statement:
        case ast.Expr(value=value) if value is node and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
        case _:
            return False
    if _through_an_attribute(receiver):
        return True
    loop = ctx.loop
    if loop is None or not isinstance(loop.node, ast.For | ast.AsyncFor):
        return False
    return (
        isinstance(receiver, ast.Name)
        and receiver.id in loop.targets
        and _through_an_attribute(loop.node.iter)
    )


def _through_an_attribute(node: ast.expr) -> bool:
    """`self.members[i]`, `self.pipeline.steps`: reached through an attribute of `self`."""
    return any(
        isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
        for n in ast.walk(node)
    )


def _field_of_iterated(copied: ast.expr, ctx: Context) -> bool:
    """`for name in batch: batch[name].to(device)`: each field of a mapping, moved once."""
    loop = ctx.loop
    if loop is None or not isinstance(loop.node, ast.For | ast.AsyncFor):
        return False
    match copied:
        case ast.Subscript(value=mapping, slice=ast.Name(id=key)) if key in loop.targets:
            iterated = dotted_name(loop.node.iter)
            return iterated is not None and iterated == dotted_name(mapping)
    return False


def _host_to_device_source(node: ast.Call, ctx: Context) -> ast.expr | None:
    """The host data a call copies to the GPU, or None if it is not such a copy."""
    func = node.func
    if isinstance(func, ast.Attribute) and ctx.evaluator.moves_to_gpu(node):
        receiver = ctx.value(func.value)
        if receiver is not None and receiver.kind in (Kind.GPU, Kind.GPU_MODULE, Kind.MODULE):
            return None
        if fw.MODEL_NAME.search(simple_name(func.value)):
            return None  # a module moved: its parameters, not data
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
