"""GPU001: the CPU waits for the GPU on every iteration of a loop."""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context, Loop
from gpulens.analysis.model import Fix, Severity
from gpulens.analysis.rules.common import after_loop, replace, shown
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import Value

SYNC_IN_LOOP = rule(
    "GPU001",
    "sync-in-loop",
    Severity.WARNING,
    "The CPU waits for the GPU on every iteration of a loop",
    """
GPU work is queued: a kernel launch returns at once and the CPU runs ahead, queuing the
next step while the GPU computes. Reading a GPU value on the host (`.item()`, `.cpu()`,
`.numpy()`, `.tolist()`, `float(t)`, `print(t)`, `if t > 0:`) or calling
`torch.cuda.synchronize()` makes the CPU wait until every queued kernel has finished, then
copy the value. Once per iteration, the queue runs dry each step: the GPU idles while
Python prepares the next launch. On launch-bound loops this costs 10–40 % of the step time.

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


@checks(ast.Call)
def check_sync_call(node: ast.Call, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None:
        return
    func = node.func
    if isinstance(func, ast.Attribute):
        receiver = ctx.value(func.value)
        on_gpu = receiver is not None and receiver.on_gpu
        if on_gpu and (func.attr in fw.SYNC_METHODS or ctx.evaluator.moves_to_cpu(node)):
            ctx.report(
                SYNC_IN_LOOP,
                node,
                f"`{shown(ctx, node)}` copies a GPU value to the host and waits for all queued "
                f"GPU work, on every iteration of {loop.describe()}: the CPU stops feeding the "
                "GPU. Accumulate on the device (`total += loss.detach()`) and read once after "
                "the loop, or every N steps.",
                _accumulate_fixes(node, func.value, receiver, loop, ctx),  # type: ignore[arg-type]
            )
            return
        if on_gpu and func.attr == "block_until_ready":
            _report_device_sync(node, loop, ctx)
            return
    name = ctx.qualname(func, through_calls=True)
    if name in fw.DEVICE_SYNC_CALLS:
        _report_device_sync(node, loop, ctx)
        return
    if isinstance(func, ast.Name) and ctx.scope.lookup(func.id) is None:
        _check_builtin(node, func.id, loop, ctx)


def _check_builtin(node: ast.Call, builtin: str, loop: Loop, ctx: Context) -> None:
    if builtin in ("max", "min") and len(node.args) >= 2:
        if any(ctx.on_gpu(a) for a in node.args):
            _report_bool(node, loop, ctx)
        return
    if builtin not in fw.SYNC_BUILTINS:
        return
    gpu_args = [a for a in node.args if ctx.on_gpu(a)]
    if not gpu_args:
        return
    if builtin == "print":
        ctx.report(
            SYNC_IN_LOOP,
            node,
            f"Printing a GPU value copies it to the host and waits for the GPU on every "
            f"iteration of {loop.describe()}. Print every N steps (`if step % 100 == 0:`) or "
            "after the loop.",
        )
        return
    argument = gpu_args[0]
    receiver = ctx.value(argument)
    fixes = _accumulate_fixes(node, argument, receiver, loop, ctx) if builtin == "float" else ()
    ctx.report(
        SYNC_IN_LOOP,
        node,
        f"`{shown(ctx, node)}` copies a GPU value to the host and waits for all queued GPU "
        f"work, on every iteration of {loop.describe()}. Keep the value on the device and "
        "convert once after the loop, or every N steps.",
        fixes,
    )


@checks(ast.FormattedValue)
def check_formatted(node: ast.FormattedValue, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is not None and ctx.on_gpu(node.value):
        ctx.report(
            SYNC_IN_LOOP,
            node.value,
            f"Formatting a GPU value (`{shown(ctx, node.value)}`) copies it to the host and "
            f"waits for the GPU on every iteration of {loop.describe()}. Format it every N "
            "steps or after the loop.",
        )


@checks(ast.If, ast.IfExp, ast.Assert)
def check_truth_test(node: ast.If | ast.IfExp | ast.Assert, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is not None and ctx.on_gpu(node.test):
        _report_bool(node.test, loop, ctx)


@checks(ast.While)
def check_while_test(node: ast.While, ctx: Context) -> None:
    if ctx.on_gpu(node.test):
        ctx.report(
            SYNC_IN_LOOP,
            node.test,
            f"The loop condition `{shown(ctx, node.test)}` is a GPU value: testing it copies "
            "it to the host and waits for the GPU on every iteration. Check it every N "
            "iterations, or run a fixed number of steps.",
        )


@checks(ast.BoolOp)
def check_bool_operands(node: ast.BoolOp, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None:
        return
    for operand in node.values[:-1]:  # the last operand is returned, not tested
        if ctx.on_gpu(operand):
            _report_bool(operand, loop, ctx)
            return


@checks(ast.UnaryOp)
def check_not(node: ast.UnaryOp, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is not None and isinstance(node.op, ast.Not) and ctx.on_gpu(node.operand):
        _report_bool(node, loop, ctx)


def _report_bool(node: ast.expr, loop: Loop, ctx: Context) -> None:
    ctx.report(
        SYNC_IN_LOOP,
        node,
        f"Using a GPU value as a Python bool (`{shown(ctx, node)}`) copies it to the host and "
        f"waits for the GPU on every iteration of {loop.describe()}. Keep the decision on the "
        "device (`torch.where`, `torch.maximum`) or take it every N steps.",
    )


def _report_device_sync(node: ast.Call, loop: Loop, ctx: Context) -> None:
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
    `values.append(x.item())` -> append `x.detach()` and stack once after the loop."""
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
            if after is None:
                return ()
            return (
                Fix(
                    f"Accumulate `{total}` on the device, read it once after the loop",
                    (replace(ctx, sync, kept), after),
                ),
            )
        case ast.Expr(
            value=ast.Call(
                func=ast.Attribute(value=ast.Name(id=values), attr="append"), args=[appended]
            )
        ) if appended is sync:
            stack = ctx.spelled("torch" if value.lib == "torch" else "cupy", value.lib)
            if (
                stack is None
                or value.lib not in ("torch", "cupy")
                or not _made_empty_before(values, loop)
            ):
                return ()
            after = after_loop(
                ctx,
                loop,
                f"{values} = {stack}.stack({values}).tolist() if {values} else []  # one sync",
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
