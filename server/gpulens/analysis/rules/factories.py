"""GPU003: a tensor made in host memory only to be copied to the GPU."""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context
from gpulens.analysis.model import Edit, Fix, Severity, Span
from gpulens.analysis.rules.common import (
    add_keyword,
    fix,
    has_double_star,
    methods_called_on_self,
    shown,
    starts_line,
    written_number,
)
from gpulens.analysis.rules.host_samples import host_sample
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
    if isinstance(source, ast.Call | ast.Subscript):
        factory, steps = _under_host_steps(source, ctx)
        if factory is None:
            return
        if host_sample(factory, ctx):
            _report_host_sample(node, factory, ctx)
            return
        if not is_cpu_factory(factory, ctx):
            _report_constant(node, factory, ctx)
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
            device_fixes(
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
        made = value.origin if value is not None and value.kind is Kind.CPU_TENSOR else None
        if not (
            isinstance(made, ast.Call)
            and is_cpu_factory(made, ctx)
            and _untouched_since(source.id, made, ctx)
        ):
            # made lines above and reshaped or combined with numbers in between?
            _report_made_earlier(node, source.id, device, ctx)
            return
        ctx.report(
            CPU_THEN_MOVED,
            node,
            f"`{source.id}` is made in host memory by `{shown(ctx, made)}` above, then "
            "copied to the GPU here. Pass `device=` to the made so the GPU creates it in "
            "place: no host allocation, no transfer.",
            # removing `x = x.type_as(t)` would lose the dtype it names
            () if func.attr in _CASTS_THAT_MOVE else _named_fix(node, source.id, made, device, ctx),
        )


def _report_constant(move: ast.Call, made: ast.Call, ctx: Context) -> None:
    """`torch.FloatTensor([0.5]).to(x.device)` per step: numbers written in the code, built
    into a host tensor and copied to the GPU each time (no `device=` fix: the data is the
    host's either way; a Python number or a buffer made once needs no copy)."""
    if ctx.qualname(made.func) not in fw.TORCH_DATA_BUILDERS:
        return
    if isinstance(move.func, ast.Attribute) and move.func.attr in _CASTS_THAT_MOVE:
        return  # `torch.tensor([1, 2]).type_as(t)`: a cast first, as class 48 reads it
    if len(made.args) != 1 or made.keywords or not _literal_numbers(made.args[0]):
        return
    severity = None
    loop = ctx.hot_loop
    if loop is not None and loop.forward and loop.node is ctx.function:
        loop = None  # the forward's own body, run once per step: as said below
    if loop is not None and loop.per_step and loop.called_from is not None:
        return  # once per step of a framework's step, in a helper of it: a copy of a scalar
    if loop is None:
        if not _in_module_forward(ctx):
            return
        severity = Severity.HINT
    suffix = _one_line(ctx.text(move)[len(ctx.text(made)) :])
    ctx.report(
        CPU_THEN_MOVED,
        move,
        f"`{shown(ctx, made)}` builds a constant in host memory, then `{suffix}` "
        "copies it to the GPU every time this runs. Use the Python number in the "
        "arithmetic, or register the constant once as a buffer that moves with the module.",
        severity=severity,
    )


def _report_host_sample(move: ast.Call, sample: ast.Call, ctx: Context) -> None:
    """`self.mix.sample((n,)).to(x.device)`: a distribution of host numbers draws on the
    host (no `device=` to add: the distribution's parameters decide where it samples)."""
    assert isinstance(sample.func, ast.Attribute)
    suffix = _one_line(ctx.text(move)[len(ctx.text(sample)) :])
    ctx.report(
        CPU_THEN_MOVED,
        move,
        f"`{shown(ctx, sample)}` draws from a distribution of host numbers, so the tensor is "
        f"filled in host memory; then `{suffix}` copies it to the GPU. Build the distribution "
        "from tensors on the device (`torch.tensor(a, device=d)`) and it samples there: no "
        "host allocation, no transfer.",
    )


def _in_module_forward(ctx: Context) -> bool:
    """In the `forward` of a module class of the file: it runs per step when the module
    trains, which the file does not show (a hint)."""
    function = ctx.function
    owner = ctx.scope.enclosing_class()
    if function is None or function.name != "forward" or owner is None:
        return False
    return owner.name in ctx.evaluator.module_classes


def _literal_numbers(node: ast.expr) -> bool:
    """A number, or a list or tuple of numbers, written in the code."""
    if isinstance(node, ast.List | ast.Tuple):
        return bool(node.elts) and all(_literal_numbers(e) for e in node.elts)
    return written_number(node)


def is_cpu_factory(call: ast.Call, ctx: Context) -> bool:
    """A factory that takes a shape, called without `device=`: the GPU could make its tensor.
    Data factories (`torch.tensor(data)`) build on the host and copy whatever `device=` says."""
    name = ctx.qualname(call.func)
    if name not in fw.TORCH_FACTORIES or name in fw.TORCH_DATA_FACTORIES:
        return False
    if keyword(call, "device") is not None or keyword(call, "pin_memory") is not None:
        return False
    return not has_double_star(call) and keyword(call, "out") is None


def device_fixes(
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
    if _made_on_host_while_building(target, ctx):
        return None  # construction code: the buffer it casts to is still in host memory
    return f"{ctx.text(target)}.device"


def _made_on_host_while_building(target: ast.expr, ctx: Context) -> bool:
    """`self.bank` of `.type_as(self.bank)` in a class's construction code (its `__init__`,
    or a method only `__init__` calls: `self._init_bank()`, `self.reset_parameters()`),
    where `__init__` made `bank` without naming a device (`register_buffer("bank",
    torch.empty(n))`, `self.bank = nn.Parameter(torch.randn(n))`): nothing has moved the
    object yet, so the cast copies to no GPU."""
    function = ctx.function
    match target:
        case ast.Attribute(value=ast.Name(id=owner_name), attr=attribute):
            pass
        case _:
            return False
    if function is None or not function.args.args or function.args.args[0].arg != owner_name:
        return False
    definitions = ctx.evaluator.definitions
    cls = definitions.owner.get(id(function))
    methods = definitions.methods.get(cls, {}) if cls is not None else {}
    init = methods.get("__init__")
    if init is None or methods.get(function.name) is not function:
        return False
    others = ctx.definitions_read([m for m in methods.values() if m is not function])
    if function is not init:
        callers = [m for m in others if function.name in methods_called_on_self(m)]
        if callers != [init]:
            return False  # also run later (or by nobody the class shows)
    return _host_made_in(init, attribute)


def _keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    bound = keyword(call, name)
    return bound.value if bound is not None else None


def _host_made_in(init: ast.AST, attribute: str) -> bool:
    """Whether every way ``init`` makes ``attribute`` (assigned on itself, or registered as
    a buffer or parameter by that name) builds it by a call that names no device and moves
    nothing (`.to(...)`, `.cuda()`), and there is at least one."""
    made: list[ast.expr] = []
    for node in ast.walk(init):
        match node:
            case ast.Assign(targets=targets, value=value) if any(
                isinstance(t, ast.Attribute) and t.attr == attribute for t in targets
            ):
                made.append(value)
            case ast.Call(func=ast.Attribute(attr="register_buffer" | "register_parameter")):
                name = node.args[0] if node.args else _keyword_value(node, "name")
                given = (
                    node.args[1]
                    if len(node.args) > 1
                    else _keyword_value(node, "tensor") or _keyword_value(node, "param")
                )
                if isinstance(name, ast.Constant) and name.value == attribute:
                    if given is None:
                        return False
                    made.append(given)
    return bool(made) and all(
        isinstance(value, ast.Call)
        and not any(
            (isinstance(n, ast.keyword) and n.arg == "device")
            or (isinstance(n, ast.Attribute) and n.attr in ("to", "cuda"))
            for n in ast.walk(value)
        )
        for value in made
    )


def host_made(node: ast.Call | ast.Subscript, ctx: Context) -> ast.Call | None:
    """The call a chain of host steps starts from (see `_under_host_steps`)."""
    return _under_host_steps(node, ctx)[0]


def _under_host_steps(
    node: ast.Call | ast.Subscript, ctx: Context
) -> tuple[ast.Call | None, frozenset[str]]:
    """The call a chain of host steps starts from, and the steps' names: `torch.ones(n)` of
    `torch.ones(n).float()`, `torch.arange(n).type(dtype)`, `torch.arange(t).unsqueeze(0)
    .repeat(b, 1)`, `torch.zeros(1, n).fill_(s)`, `torch.zeros(shape)[:, None]`. Casts,
    reshapes, views and fills compute the same values on either side of the copy (fills
    that draw random numbers, from another generator). None when the chain starts from
    no call (an index into a name, a pick by values)."""
    steps: set[str] = set()
    current: ast.expr = node
    while True:
        if isinstance(current, ast.Subscript):
            if not _is_view(current.slice, ctx):
                return None, frozenset()
            current = current.value
        elif (
            isinstance(current, ast.Call)
            and isinstance(current.func, ast.Attribute)
            and isinstance(current.func.value, ast.Call | ast.Subscript)
            and _is_host_step(current, ctx)
        ):
            steps.add(current.func.attr)
            current = current.func.value
        else:
            break
    return (current if isinstance(current, ast.Call) else None), frozenset(steps)


def host_factory_of(
    node: ast.Call | ast.Subscript, ctx: Context
) -> tuple[ast.Call, frozenset[str]] | None:
    """The factory without `device=` that a chain of host steps starts from, and the
    steps: `torch.arange(n)` of `torch.arange(n).unsqueeze(1)`."""
    factory, steps = _under_host_steps(node, ctx)
    if factory is None or not is_cpu_factory(factory, ctx):
        return None
    return factory, steps


def _is_view(index: ast.expr, ctx: Context) -> bool:
    """An index that only reshapes or narrows (`[:, :, None]`, `[..., 0]`, `[:n]`), the
    same on either device; not a pick by an index or a mask."""
    if isinstance(index, ast.Tuple):
        return all(_is_view(element, ctx) for element in index.elts)
    if isinstance(index, ast.Slice):
        bounds = (index.lower, index.upper, index.step)
        return not any(b is not None and ctx.on_gpu(b) for b in bounds)
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        index = index.operand  # `[-1]`
    return isinstance(index, ast.Constant) and (
        index.value is None or index.value is Ellipsis or type(index.value) is int
    )


def _is_host_step(call: ast.Call, ctx: Context) -> bool:
    """A cast, reshape or fill of its receiver that computes the same values on either
    device (a random fill, from another generator)."""
    if not isinstance(call.func, ast.Attribute):
        return False
    step = call.func.attr
    if step in _CASTS:
        return not call.keywords and len(call.args) <= (1 if step == "type" else 0)
    if step in _RESHAPES or step in _FILLS or step in _RANDOM_FILLS:
        return not any(ctx.on_gpu(a) for a in (*call.args, *(k.value for k in call.keywords)))
    return False


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
    return device_fixes(
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


# -- made lines above, moved through a name ------------------------------------------------


def _report_made_earlier(move: ast.Call, name: str, device: str, ctx: Context) -> None:
    """`mask = 1.0 - torch.eye(n)`, `mask = mask.unsqueeze(0)`, then `mask.to(x.device)`:
    reported on the factory, where `device=` belongs. The fix passes `device=` there and
    keeps the move (then a no-op): safe where the device is known at the factory's line and
    no read of the name outside the steps sees the moved tensor where it saw the host one."""
    traced = made_earlier(name, ctx)
    if traced is None:
        return
    factory, made, steps = traced
    why_not = _why_no_fix(name, device, made, ctx)
    fixes = (
        ()
        if why_not
        else device_fixes(
            factory,
            f"Create `{name}` on the device (`device={device}`)",
            (add_keyword(ctx, factory, f"device={device}"),),
            ctx,
            steps,
        )
    )
    ctx.report(
        CPU_THEN_MOVED,
        factory,
        f"`{shown(ctx, factory)}` makes `{name}` in host memory; "
        f"`{_one_line(ctx.text(move))}` below copies it to the GPU. Pass `device=` here so "
        f"the GPU creates it in place: no host allocation, no transfer.{why_not}",
        fixes,
    )


def made_earlier(name: str, ctx: Context) -> tuple[ast.Call, ast.stmt, frozenset[str]] | None:
    """The factory whose host tensor ``name`` holds at the current statement, the statement
    of this block that makes it, and the host steps between: each statement between that
    mentions the name rebinds it to a cast, reshape or fill of itself or to itself plus,
    minus or times a number (alone, or under an `if` that reads only its shape or whether
    it is None). The current statement reads the name once, in the move."""
    if ctx.statements is None:
        return None
    body, index = ctx.statements
    if _loads(body[index], name) != 1:
        return None
    steps: set[str] = set()
    for earlier in reversed(body[:index]):
        if name not in names_in(earlier):
            continue
        inner = earlier
        if isinstance(earlier, ast.If):
            if earlier.orelse or len(earlier.body) != 1 or not _metadata_only(earlier.test, name):
                return None
            inner = earlier.body[0]
        match inner:
            case ast.Assign(targets=[ast.Name(id=target)], value=value) if target == name:
                base, more = _host_chain(value, ctx)
            case _:
                return None
        steps |= more
        if isinstance(base, ast.Name) and base.id == name and _loads(value, name) == 1:
            continue
        if isinstance(base, ast.Call) and is_cpu_factory(base, ctx) and name not in names_in(value):
            return base, earlier, frozenset(steps)
        return None
    return None


def _host_chain(expr: ast.expr, ctx: Context) -> tuple[ast.expr, set[str]]:
    """What a chain of host steps starts from: `torch.eye(n)` of `1.0 - torch.eye(n)`,
    `mask` of `mask.unsqueeze(0).repeat(b, 1, 1)`. Adding, subtracting or multiplying by a
    number rounds once, alike on either device; a division by one may not (the GPU
    multiplies by the reciprocal)."""
    steps: set[str] = set()
    while True:
        match expr:
            case ast.BinOp(left=left, op=ast.Add() | ast.Sub() | ast.Mult(), right=right) if (
                written_number(left) or written_number(right)
            ):
                expr = right if written_number(left) else left
            case ast.Call(func=ast.Attribute(value=inner, attr=step)) if _is_host_step(expr, ctx):
                steps.add(step)
                expr = inner
            case _:
                return expr, steps


def _loads(node: ast.AST, name: str) -> int:
    return sum(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
        for n in ast.walk(node)
    )


def _metadata_only(test: ast.expr, name: str) -> bool:
    """``test`` reads of ``name`` only what stays the same on either device: its shape, its
    dtype, whether it is None."""
    parents = {
        id(child): parent for parent in ast.walk(test) for child in ast.iter_child_nodes(parent)
    }
    for node in ast.walk(test):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        parent = parents.get(id(node))
        match parent:
            case ast.Attribute(attr=attr) if attr in _METADATA:
                continue
            case ast.Call(func=ast.Name(id="len"), args=[_]):
                continue
            case ast.Compare(left=left, ops=[ast.Is() | ast.IsNot()], comparators=[other]) if (
                left is node and isinstance(other, ast.Constant) and other.value is None
            ):
                continue
        return False
    return True


_METADATA = frozenset({"shape", "ndim", "dtype"})


def _why_no_fix(name: str, device: str, made: ast.stmt, ctx: Context) -> str:
    """Why passing `device=` at the factory might change what the program does, as a
    sentence for the message; "" where it cannot."""
    assert ctx.statements is not None
    body, index = ctx.statements
    start = body.index(made)
    root = _device_root(device)
    scope: ast.AST = (
        ctx.function if ctx.function is not None else ast.Module(body=body, type_ignores=[])
    )
    # a device named by a string is known anywhere; one held in a name, where it is bound
    known = (
        device.startswith(('"', "'"))
        if root is None
        else _bound_before(root, scope, body, start, index)
    )
    if not known:
        return f" No safe fix: `{device}` is not known at this line; pass the device it names."
    move = body[index]
    rebinds = any(isinstance(t, ast.Name) and t.id == name for t in getattr(move, "targets", ()))
    loop = any(
        isinstance(n, ast.For | ast.AsyncFor | ast.While) and any(s is made for s in ast.walk(n))
        for n in ast.walk(scope)
    )
    first, last = made.lineno, move.end_lineno or move.lineno
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            if node.lineno > last and not rebinds:
                return f" No safe fix: `{name}` is read on the host after the copy too."
            if node.lineno < first and loop:
                return f" No safe fix: a loop reads `{name}` before it is made."
    return ""


def _device_root(device: str) -> str | None:
    """The name a device expression starts from: `x` of `x.device`; None for anything but
    a name or a chain of attributes of one."""
    try:
        node: ast.expr = ast.parse(device, mode="eval").body
    except SyntaxError:
        return None
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _bound_before(root: str, scope: ast.AST, body: list[ast.stmt], start: int, end: int) -> bool:
    """``root`` holds the same object from before ``body[start]`` to ``body[end]``: a
    parameter never rebound, or one assignment earlier in this block; and nothing between
    assigns to an attribute of it."""
    stores = [
        n
        for n in ast.walk(scope)
        if isinstance(n, ast.Name) and n.id == root and isinstance(n.ctx, ast.Store)
    ]
    arguments = scope.args if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) else None
    parameter = arguments is not None and any(
        a.arg == root for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    )
    if parameter:
        bound = not stores
    else:
        bound = len(stores) == 1 and any(
            any(n is stores[0] for n in ast.walk(s)) for s in body[:start]
        )
    if not bound:
        return False
    return not any(
        isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and _device_root(ast.unparse(n)) == root
        for s in body[start : end + 1]
        for n in ast.walk(s)
    )
