"""GPU003: a tensor made in host memory only to be copied to the GPU."""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context
from gpulens.analysis.model import Edit, Fix, Severity, Span
from gpulens.analysis.rules.common import add_keyword, fix, has_double_star, shown, starts_line
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import Kind, keyword, names_in

CPU_THEN_MOVED = rule(
    "GPU003",
    "cpu-tensor-moved",
    Severity.WARNING,
    "Tensor created on the CPU, then copied to the GPU",
    """
`torch.zeros(n).cuda()` allocates and fills the tensor in host memory, then copies it to
the GPU: a host allocation, a host fill and a host-to-device transfer where the GPU could
have made the tensor in place with one kernel. Factories that take a shape (`zeros`, `ones`,
`empty`, `full`, `arange`, `randn`, …) take a `device=` argument. (`torch.tensor(data)` is
not among them: with `device=` it still builds the tensor on the host and copies it.)

The fix is applied by "Fix all" only where the values cannot change: a random factory
(`randn`, `rand`, `randint`, …) given `device=` draws from the GPU's generator, so the same
seed gives other numbers, and `linspace`/`logspace` computed on the GPU may differ in their
last bits.

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


# -- GPU003 -------------------------------------------------------------------------------


@checks(ast.Call)
def check_cpu_then_moved(node: ast.Call, ctx: Context) -> None:
    func = node.func
    if not isinstance(func, ast.Attribute):
        return
    if func.attr in _CASTS_THAT_MOVE:
        device = _cast_device_text(node, ctx)
    elif ctx.evaluator.moves_to_gpu(node):
        device = _device_text(node, ctx)
    else:
        return
    if device is None:
        return
    source = func.value
    if isinstance(source, ast.Call):
        factory, steps = _under_host_steps(source, ctx)
        if not is_cpu_factory(factory, ctx):
            return
        suffix = ctx.source.segment(ctx.span(node))[len(ctx.text(factory)) :]
        # `torch.ones(n).float().to(d)` -> `torch.ones(n, device=d).float()`; a cast that
        # moves stays, on the device, so the tensor keeps the dtype it names
        moves = (
            () if func.attr in _CASTS_THAT_MOVE else (Edit(_suffix_span(node, source, ctx), ""),)
        )
        ctx.report(
            CPU_THEN_MOVED,
            node,
            f"`{shown(ctx, factory)}` fills the tensor in host memory, then `{_one_line(suffix)}` "
            "copies it to the GPU. Pass `device=` so the GPU creates it in place: no host "
            "allocation, no transfer.",
            _device_fixes(
                factory,
                f"Create it on the device (`device={device}`)",
                (add_keyword(ctx, factory, f"device={device}"), *moves),
                ctx,
                steps,
            ),
        )
        return
    if isinstance(source, ast.Name):
        value = ctx.scope.lookup(source.id)
        if value is None or value.kind is not Kind.CPU_TENSOR:
            return
        made = value.origin
        if not isinstance(made, ast.Call) or not is_cpu_factory(made, ctx):
            return
        if not _untouched_since(source.id, made, ctx):
            return  # filled or read on the host in between: the copy may be the point
        ctx.report(
            CPU_THEN_MOVED,
            node,
            f"`{source.id}` is made in host memory by `{shown(ctx, made)}` above, then "
            "copied to the GPU here. Pass `device=` to the made so the GPU creates it in "
            "place: no host allocation, no transfer.",
            # removing `x = x.type_as(t)` would lose the dtype it names
            () if func.attr in _CASTS_THAT_MOVE else _named_fix(node, source.id, made, device, ctx),
        )


def is_cpu_factory(call: ast.Call, ctx: Context) -> bool:
    """A factory that takes a shape, called without `device=`: the GPU could make its tensor.
    Data factories (`torch.tensor(data)`) build on the host and copy whatever `device=` says."""
    name = ctx.qualname(call.func)
    if name not in fw.TORCH_FACTORIES or name in fw.TORCH_DATA_FACTORIES:
        return False
    if keyword(call, "device") is not None or keyword(call, "pin_memory") is not None:
        return False
    return not has_double_star(call) and keyword(call, "out") is None


def _device_fixes(
    factory: ast.Call,
    title: str,
    edits: tuple[Edit, ...],
    ctx: Context,
    steps: frozenset[str] = frozenset(),
) -> tuple[Fix, ...]:
    """The fix that passes `device=`, marked with what it changes where it changes values
    (``steps``: the methods run on the host between the factory and the copy)."""
    name = (ctx.qualname(factory.func) or "").rsplit(".", 1)[-1]
    changes = None
    if name in fw.RANDOM_FACTORIES or steps & _RANDOM_FILLS:
        changes = "draws from the GPU's random generator: other numbers for the same seed"
    elif name in ("linspace", "logspace") or (name == "arange" and _has_float(factory)):
        changes = "the GPU computes the values: they may differ in the last bits"
    elif keyword(factory, "requires_grad") is not None:
        changes = "the tensor becomes a leaf: its .grad fills where the copy's did not"
    return (fix(title, edits, changes),)


def _has_float(call: ast.Call) -> bool:
    return (
        any(
            isinstance(n, ast.Constant) and isinstance(n.value, float)
            for argument in (*call.args, *(k.value for k in call.keywords))
            for n in ast.walk(argument)
        )
        or keyword(call, "dtype") is not None
    )


def _device_text(node: ast.Call, ctx: Context) -> str | None:
    """The device argument as source text: `device`, `"cuda"`, `"cuda:1"`."""
    func = node.func
    assert isinstance(func, ast.Attribute)
    if func.attr == "cuda":
        if not node.args and not node.keywords:
            return ctx.device_variable() or '"cuda"'
        index = node.args[0] if len(node.args) == 1 and not node.keywords else None
        if isinstance(index, ast.Constant) and isinstance(index.value, int):
            return f'"cuda:{index.value}"'
        return None
    if len(node.args) == 1 and not node.keywords:
        argument = node.args[0]
        if ctx.evaluator.device_of(argument) and not ctx.on_gpu(argument):
            return ctx.text(argument)
    if not node.args and len(node.keywords) == 1 and node.keywords[0].arg == "device":
        return ctx.text(node.keywords[0].value)
    return None


def _one_line(chain: str) -> str:
    """A method chain written over several lines, as one: `.fill_(s).type_as(x)`."""
    return "".join(part.strip() for part in chain.splitlines())


def _cast_device_text(node: ast.Call, ctx: Context) -> str | None:
    """The device a cast copies to, as source text: `t.device` of `.type_as(t)` and
    `.type(t.type())`, `"cuda"` of `.type(torch.cuda.FloatTensor)`. Where `t` is not known to
    be on the GPU it is taken as `.to(t.device)` is (and where it is known to be on the host,
    not at all)."""
    func = node.func
    assert isinstance(func, ast.Attribute)
    if len(node.args) != 1 or node.keywords:
        return None
    target = node.args[0]
    if func.attr == "type":
        match target:
            case ast.Call(func=ast.Attribute(value=other, attr="type"), args=[], keywords=[]):
                target = other
            case _:
                return '"cuda"' if ctx.evaluator.moves_to_gpu(node) else None
    other_value = ctx.value(target)
    if other_value is not None and other_value.kind in (Kind.CPU_TENSOR, Kind.HOST):
        return None
    return f"{ctx.text(target)}.device"


def _under_host_steps(call: ast.Call, ctx: Context) -> tuple[ast.Call, frozenset[str]]:
    """The call a chain of host steps starts from, and the steps' names: `torch.ones(n)` of
    `torch.ones(n).float()`, `torch.arange(n).type(dtype)`, `torch.arange(t).unsqueeze(0)
    .repeat(b, 1)`, `torch.zeros(1, n).fill_(s)`. Casts, reshapes and fills compute the same
    values on either side of the copy (fills that draw random numbers, from another
    generator)."""
    steps: set[str] = set()
    while isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Call):
        step = call.func.attr
        if step in _CASTS:
            if call.keywords or len(call.args) > (1 if step == "type" else 0):
                break
        elif step in _RESHAPES or step in _FILLS or step in _RANDOM_FILLS:
            if any(ctx.on_gpu(a) for a in (*call.args, *(k.value for k in call.keywords))):
                break
        else:
            break
        steps.add(step)
        call = call.func.value
    return call, frozenset(steps)


_CASTS = frozenset({"float", "double", "half", "bfloat16", "long", "int", "short", "bool", "type"})
# casts that copy to the device their argument names (`.type(torch.cuda.FloatTensor)`)
_CASTS_THAT_MOVE = frozenset({"type", "type_as"})
_RESHAPES = frozenset(
    {
        "unsqueeze",
        "squeeze",
        "view",
        "reshape",
        "repeat",
        "expand",
        "flatten",
        "t",
        "transpose",
        "permute",
        "contiguous",
    }
)
_FILLS = frozenset({"fill_", "zero_"})
_RANDOM_FILLS = frozenset(
    {"uniform_", "normal_", "random_", "bernoulli_", "exponential_", "cauchy_", "log_normal_"}
)


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
    return _device_fixes(
        factory,
        f"Create `{name}` on the device (`device={device}`)",
        (add_keyword(ctx, factory, f"device={device}"), removal),
        ctx,
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
    for node in ast.walk(ctx.module_tree()):
        match node:
            case ast.Name(id=bound, ctx=ast.Store()) | ast.arg(arg=bound) if (
                bound == name and node.lineno < factory.lineno
            ):
                return True
    return False
