"""GPU009: Python loops that touch a GPU array one element at a time."""

from __future__ import annotations

import ast
import builtins
from dataclasses import replace

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Context, Loop
from gpulens.analysis.mappings import gives_keys, mapping_names, may_give_keys
from gpulens.analysis.model import Severity
from gpulens.analysis.rules.common import shown
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import Kind, Value, dotted_name, names_in, simple_name

ELEMENTWISE_LOOP = rule(
    "GPU009",
    "elementwise-python-loop",
    Severity.WARNING,
    "Python loop over the elements of a GPU array",
    """
A Python loop over a GPU array works on one element at a time: every operation on an
element (`x[i] * 2`, `y[i] = v`) is a kernel launch of its own, doing a few bytes of work,
and reading an element's value (`float(x[i])`, `if x[i] > 0:`) copies it to the host and
waits for the GPU. A loop over a million elements makes millions of launches where one
operation on the whole array would make one. (A loop that runs a model or a function per
element, such as a sampler's steps over its schedule, a filter per sigma or a solve per label,
is a sequence of steps; one that writes a chunk per pass works chunk by chunk: no finding.)

**Bad:**
```python
for i in range(len(x)):
    y[i] = x[i] * 2 + 1
```

**Good:**
```python
y = x * 2 + 1
```
""",
)


@checks(ast.For)
def check_iteration(node: ast.For, ctx: Context) -> None:
    _check_iterated(node.iter, node.body, ctx)
    _check_indexed(node, ctx)


def _check_indexed(node: ast.For, ctx: Context) -> None:
    """`for i in range(len(x)): … x[i] …`: the loop walks a GPU array by index, one
    element (or row) per iteration, as iterating over it would."""
    match node.iter, node.target:
        case ast.Call(func=ast.Name(id="range"), args=[*_] as bounds), ast.Name(id=index) if (
            1 <= len(bounds) <= 3
        ):
            pass
        case _:
            return
    if len(bounds) == 3 and not (
        isinstance(bounds[2], ast.Constant) and bounds[2].value in (1, -1)
    ):
        return  # `range(0, n, chunk)`: the starts of chunks
    if ctx.scope.lookup(index) is not None or _runs_a_model(node.body, ctx):
        return
    reads = _element_reads(node.body, index)
    if not reads or _steps_or_writes(node, ctx):
        return
    for read in reads:
        value = ctx.value(read.value)
        if value is None or not value.array_on_gpu:
            continue
        array = shown(ctx, read.value)
        ctx.report(
            ELEMENTWISE_LOOP,
            node.iter,
            f"The loop reads the {_array(value)} `{array}` one element at a time "
            f"(`{shown(ctx, read)}`): every operation on it is a kernel launch of its own. "
            "Express the loop body as operations on the whole array.",
            severity=_severity(value),
        )
        return


def _steps_or_writes(node: ast.For, ctx: Context) -> bool:
    """A body that runs a whole-array algorithm per index (a filter, a solve, a function of
    the file), or writes elements of a GPU array (reported where it writes)."""
    index = node.target.id if isinstance(node.target, ast.Name) else ""
    for statement in node.body:
        for inner in ast.walk(statement):
            if isinstance(inner, ast.Call) and (
                _whole_operation(inner, ctx) or _calls_a_function(inner, ctx)
            ):
                return True
            if isinstance(inner, ast.Call) and _reads_on_host(inner, index):
                return True  # GPU001 reports the wait per element where it happens
            if isinstance(inner, ast.Assign | ast.AugAssign):
                targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                for target in targets:
                    if isinstance(target, ast.Subscript):
                        held = ctx.value(target.value)
                        if held is not None and held.array_on_gpu:
                            return True
    return False


def _calls_a_function(call: ast.Call, ctx: Context) -> bool:
    """`interp(x, xp, fp)`: a function the file imports from elsewhere than an array
    library, run per index: a step on whole arrays, as far as the file tells."""
    if not isinstance(call.func, ast.Name) or call.func.id in _BUILTINS:
        return False
    name = ctx.qualname(call.func)
    return name is not None and not name.startswith(_ARRAY_LIBRARIES)


def _reads_on_host(call: ast.Call, index: str) -> bool:
    """`x[i].item()`, `int(x[i])`: an element read on the host at the loop's index."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in fw.SYNC_METHODS:
        return index in names_in(func.value)
    if isinstance(func, ast.Name) and func.id in fw.SYNC_BUILTINS:
        return any(index in names_in(a) for a in call.args)
    return False


_ARRAY_LIBRARIES = ("torch.", "numpy.", "cupy.", "jax.", "math.")


def _single_element(index: ast.expr, name: str) -> bool:
    """`x[i]`, `x[i, j]`, `x[i + 1]`: positions only, one of them the loop's; not `x[..., i]`
    or `x[:, i]`, a whole plane or column per iteration."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    if any(isinstance(n, ast.Slice | ast.Starred) for n in parts):
        return False
    if any(isinstance(n, ast.Constant) and n.value is Ellipsis for n in parts):
        return False
    return any(name in names_in(n) for n in parts)


def _element_reads(body: list[ast.stmt], index: str) -> list[ast.Subscript]:
    """The subscripts at the loop's index (`x[i]`, `x[i, j]`) the body computes with, as an
    operand or an argument, in order; not slices it takes per iteration (`x[i : i + n]`),
    views it only keeps (`x[i].detach()`), nor what nested definitions read."""
    found: list[ast.Subscript] = []
    pending: list[ast.AST] = list(reversed(body))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        match node:
            case ast.BinOp(left=left, right=right):
                operands: list[ast.expr] = [left, right]
            case ast.UnaryOp(operand=operand):
                operands = [operand]
            case ast.Compare(left=left, comparators=comparators):
                operands = [left, *comparators]
            case ast.Call(args=arguments, keywords=keywords):
                operands = [*arguments, *(k.value for k in keywords)]
            case _:
                operands = []
        found.extend(
            o for o in operands if isinstance(o, ast.Subscript) and _single_element(o.slice, index)
        )
        pending.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


@checks(ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
def check_comprehension(node: ast.ListComp, ctx: Context) -> None:
    results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    _check_iterated(node.generators[0].iter, results, ctx)


Body = list[ast.stmt] | list[ast.expr]


def _check_iterated(iterated: ast.expr, body: Body, ctx: Context) -> None:
    if isinstance(iterated, ast.Call) and simple_name(iterated.func) in _CHUNKING:
        return  # `for part in torch.split(x, sizes)`: a tuple of whole chunks, not elements
    zipped = _zipped_array(iterated, ctx)
    value = zipped or ctx.value(iterated)
    if value is None or not value.array_on_gpu or _runs_a_model(body, ctx):
        return
    if _iterates_keys(iterated, ctx) or (value.guessed and _reduces_along_a_dim(body)):
        return
    if zipped is not None and (_calls_an_item(body, ctx) or not _reads_on_host_per_item(body)):
        return
    if zipped is not None:
        arrays = "arrays, if on the GPU," if value.guessed else "GPU arrays"
        what = f"`{shown(ctx, iterated)}` hands out the elements of {arrays} one by one"
    else:
        what = f"Iterating over the {_array(value)} `{shown(ctx, iterated)}` hands out its "
        what += "elements one by one"
    ctx.report(
        ELEMENTWISE_LOOP,
        iterated,
        f"{what}: every operation on them is a kernel launch of its own, and reading one "
        "waits for the GPU. Express the loop body as operations on the whole array.",
        severity=_severity(value),
    )


def _reduces_along_a_dim(body: Body) -> bool:
    """A body that reduces along a dimension (`torch.logsumexp(row, dim=-1)`): what it
    iterates are rows or chunks, handled whole, by design (to bound the memory a batch
    takes); of an array only guessed on the GPU that is no evidence of element reads."""
    nodes = body if isinstance(body, list) else [body]
    return any(
        isinstance(node, ast.keyword) and node.arg == "dim"
        for statement in nodes
        for node in ast.walk(statement)
    )


def _iterates_keys(iterated: ast.expr, ctx: Context) -> bool:
    """`for color in areas` where `areas: dict[tuple, Tensor]`: a mapping's keys, not its
    GPU values."""
    return (
        ctx.function is not None
        and may_give_keys(iterated)
        and gives_keys(iterated, mapping_names(ctx.function))
    )


def _zipped_array(iterated: ast.expr, ctx: Context) -> Value | None:
    """The GPU array a `zip` walks in step with others: `zip(values, ids)` of arrays, or
    `zip(*pair)` of what `topk`/`sort`/`max(dim)` return (a tuple of arrays of one length:
    unpacking it hands out their elements side by side)."""
    if not isinstance(iterated, ast.Call) or simple_name(iterated.func) != "zip":
        return None
    arrays: list[Value] = []
    rows: list[Value] = []
    for argument in iterated.args:
        if isinstance(argument, ast.Starred):
            value = ctx.value(argument.value)
            if value is not None and value.kind is Kind.GPU:
                return value if value.exact else replace(value, exact=True)
            return None
        if isinstance(argument, ast.Call) and simple_name(argument.func) in _CHUNKING:
            return None  # `zip(torch.split(a, sizes), …)`: whole chunks, not elements
        value = ctx.value(argument)
        if value is not None and value.array_on_gpu:
            arrays.append(value)
        elif value is not None and value.kind is Kind.GPU and _by_position(argument):
            rows.append(value)  # `pair[0][i]`: a row of an array, with one beside it
        elif value is not None:
            return None  # beside a batch or a model's outputs: items, not elements
    if arrays:
        return arrays[0]
    if len(rows) >= 2 and len(rows) == len(iterated.args):  # `zip(ids[q], scores[q])`
        return replace(rows[0], exact=True)
    return None


_CHUNKING = frozenset({"split", "chunk", "tensor_split", "array_split"})


def _reads_on_host_per_item(body: Body) -> bool:
    """A body that reads values on the host (`float(v)`, `.item()`, a test): the cost of
    walking elements. One that only runs whole-row operations per item (a row at a time to
    bound memory) launches per row, by design."""
    for statement in body:
        for node in ast.walk(statement):
            match node:
                case ast.If(test=ast.Compare()) | ast.IfExp(test=ast.Compare()):
                    return True
                case ast.Call(func=ast.Name(id=name)) if name in fw.SYNC_BUILTINS:
                    return True
                case ast.Call(func=ast.Attribute(attr=attr)) if attr in fw.SYNC_METHODS:
                    return True
    return False


def _by_position(node: ast.expr) -> bool:
    """`pair[0][i]`, `x[:, 1:]`: indexed by position, not a mapping's field by name."""
    if not isinstance(node, ast.Subscript):
        return False
    while isinstance(node, ast.Subscript):
        if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            return False
        node = node.value
    return True


def _calls_an_item(body: Body, ctx: Context) -> bool:
    """A body that calls what the loop handed it (`for mask, expert in zip(masks,
    self.experts): … expert(x[idx])`): a step per item, not element-wise work."""
    for statement in body:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id not in _BUILTINS
                and ctx.qualname(node.func) is None
                and ctx.value(node.func) is None
            ):
                return True
    return False


def _array(value: Value) -> str:
    """How a message names an array that is on the GPU, or may be (a guess)."""
    return "array, if on the GPU," if value.guessed else "GPU array"


def _severity(value: Value) -> Severity | None:
    return Severity.HINT if value.guessed else None


def _runs_a_model(body: Body, ctx: Context) -> bool:
    """A body that calls a model or a function of the file per element (a sampler's step
    per sigma): that loop is a sequence of steps, not element-wise arithmetic to vectorize."""
    return any(
        isinstance(node, ast.Call) and _runs_a_step(node, ctx)
        for statement in body
        for node in ast.walk(statement)
    )


def _runs_a_step(call: ast.Call, ctx: Context) -> bool:
    """A call of a model, a module, a function of the file or a method of the object."""
    callee = ctx.value(call.func)
    if callee is not None and callee.kind in _STEP_CALLEES:
        return True
    match call.func:
        case ast.Attribute(value=ast.Name(id="self")):
            return True  # a method of the file
    return False


_STEP_CALLEES = (Kind.GPU_MODULE, Kind.MODULE, Kind.GPU, Kind.FUNCTION)
# libraries whose functions each run a whole-array algorithm (a filter, a solve, a transform)
_BUILTINS = frozenset(dir(builtins))
_FROM_HOST_DATA = fw.TORCH_DATA_FACTORIES | fw.CUPY_TO_DEVICE
_WHOLE_ARRAY_LIBRARIES = ("cupyx.scipy.", "scipy.", "cucim.", "skimage.")


def _strided(loop: Loop) -> bool:
    """A loop over the starts of chunks: `for start in range(0, n, chunk_size)`."""
    match loop.node:
        case ast.For(iter=ast.Call(func=ast.Name(id="range"), args=[_, _, _])):
            return True
    return False


def _element_index(index: ast.expr, targets: frozenset[str]) -> bool:
    """Whether a loop's names pick single positions in ``index``: `x[i]`, `x[:, i]`; not
    `x[start:end]`, where each iteration writes a whole chunk."""
    pending: list[ast.AST] = [index]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Slice):
            continue
        if isinstance(node, ast.Name) and node.id in targets:
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _columns_of_loop_arrays(index: ast.expr, targets: frozenset[str]) -> bool:
    """`mask[pairs[:, 0], pairs[:, 1]]`: each loop name in the index is an array the loop
    hands out, sliced (`pairs[:, 0]`, `rows[a:b]`): the write scatters into all the positions
    it lists at once, one operation per iteration, not one element."""
    sliced: set[int] = set()
    for node in ast.walk(index):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(isinstance(part, ast.Slice) for part in parts):
                sliced.add(id(node.value))
    uses = [n for n in ast.walk(index) if isinstance(n, ast.Name) and n.id in targets]
    return bool(uses) and all(id(n) in sliced for n in uses)


def _interleaved(index: ast.expr, targets: frozenset[str]) -> bool:
    """`x[i::n]`: a loop's name only in the start of a slice with a fixed step, each
    iteration writing every n-th row (n parts interleaved into one array)."""
    if _element_index(index, targets):
        return False
    return any(
        isinstance(node, ast.Slice)
        and node.step is not None
        and node.lower is not None
        and bool(names_in(node.lower) & targets)
        and not names_in(node.step) & targets
        for node in ast.walk(index)
    )


def _whole_operation(value: ast.expr, ctx: Context) -> bool:
    """A value computed per iteration by a whole-array algorithm: a function of the file, a
    function the code was handed or imported from its own package (`gaussian(image, s)`,
    `denoise(image)`), or a SciPy-like library's (`ndi.binary_erosion(u)`); or an array
    built from host data. Writing it is one step per iteration, not one element's arithmetic."""
    for node in ast.walk(value):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name | ast.Attribute):
            continue
        name = ctx.qualname(node.func)
        if name is not None:
            # (an array built from host data is a copy, GPU002's concern, not arithmetic)
            if name.startswith(_WHOLE_ARRAY_LIBRARIES) or name in _FROM_HOST_DATA:
                return True
            continue
        if not isinstance(node.func, ast.Name) or node.func.id in _BUILTINS:
            continue
        callee = ctx.value(node.func)
        if callee is None or callee.kind is Kind.FUNCTION:
            return True
    return False


def _column_of_a_step(target: ast.Subscript, value: ast.expr, loop: Loop, ctx: Context) -> bool:
    """`samples[:, i] = Categorical(logits=self.net(samples)[:, i]).sample()`: a whole column
    written with what a step of the pass computed over the batch: a network run, a module of a
    container (`self.embeds[k](x)`), a method of each object the loop hands out
    (`density.log_prob(theta)` over a list of densities) or a function of the file or imported
    from elsewhere than an array library. The loop is a sequence of such steps (one per
    variable, feature or proposal), and the column's write is one small launch beside each."""
    statement = loop.statement
    if not isinstance(statement, ast.For | ast.While) or not _column(target.slice, loop.targets):
        return False
    objects = loop.targets
    if isinstance(statement, ast.While) or (loop.iterates is not None and loop.iterates.on_gpu):
        objects = frozenset()
    return any(
        isinstance(node, ast.Call) and _is_step(node, objects, ctx)
        for source in _sources(value, statement.body)
        for node in ast.walk(source)
    )


def _column(index: ast.expr, targets: frozenset[str]) -> bool:
    """`x[:, i]`, `x[..., k]`: a whole dimension (`:` or `...`) before the loop's position."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    for part in parts:
        if names_in(part) & targets:
            return False
        whole = isinstance(part, ast.Slice) and part.lower is part.upper is part.step is None
        if whole or (isinstance(part, ast.Constant) and part.value is Ellipsis):
            return True
    return False


def _sources(value: ast.expr, body: list[ast.stmt]) -> list[ast.expr]:
    """``value`` and what the loop body assigns to the names it reads, transitively."""
    assigned: list[tuple[set[str], ast.expr]] = []
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Assign):
                bound = set().union(*(names_in(t) for t in node.targets))
                assigned.append((bound, node.value))
    sources, wanted = [value], set(names_in(value))
    grown = True
    while grown:
        grown = False
        for bound, source in assigned:
            if bound & wanted and all(source is not s for s in sources):
                sources.append(source)
                wanted |= names_in(source)
                grown = True
    return sources


def _is_step(call: ast.Call, objects: frozenset[str], ctx: Context) -> bool:
    if _runs_a_step(call, ctx):
        return True
    match call.func:
        case ast.Subscript(value=ast.Attribute(value=ast.Name(id="self"))):
            return True  # `self.embeds[k](x)`: a module of a container
        case ast.Attribute(value=ast.Name(id=name)) if name in objects:
            return True  # `density.log_prob(theta)`: a method of the object handed out
    return _calls_a_function(call, ctx)


@checks(ast.Assign, ast.AugAssign)
def check_element_write(node: ast.Assign | ast.AugAssign, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None or not loop.targets:
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if not isinstance(target, ast.Subscript):
            continue
        if not (names_in(target.slice) & loop.targets):
            continue
        if _strided(loop) and not _element_index(target.slice, loop.targets):
            continue  # `for start in range(0, n, chunk): x[start:end] += …`: chunk by chunk
        if _interleaved(target.slice, loop.targets):
            continue  # `out[i::n] = parts[i]`: one strided copy per part, not an element
        if _columns_of_loop_arrays(target.slice, loop.targets):
            continue  # `mask[pairs[:, 0], pairs[:, 1]] = True`: one scatter per iteration
        held = ctx.value(target.value)
        # a list or dict of tensors (`outputs[i] = …`, `losses[k] += v`) is no GPU array
        if held is None or not held.array_on_gpu:
            continue
        if isinstance(node, ast.Assign) and _whole_operation(node.value, ctx):
            continue
        if isinstance(node, ast.Assign) and _column_of_a_step(target, node.value, loop, ctx):
            continue  # `samples[:, i] = sample(self.net(samples))`: a model step per pass
        name = dotted_name(target.value) or shown(ctx, target.value)
        if f"write:{name}" in loop.reported:
            continue
        loop.reported.add(f"write:{name}")
        ctx.report(
            ELEMENTWISE_LOOP,
            target,
            f"`{shown(ctx, target)} = …` writes one element of a{'n' if held.guessed else ''} "
            f"{_array(held)} per iteration of {loop.describe()}: one kernel launch each. "
            "Compute all elements with one array operation.",
            severity=_severity(held),
        )
