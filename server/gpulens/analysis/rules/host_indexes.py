"""GPU003, read at an index: a tensor of positions made in host memory (`torch.arange(n)`,
`torch.randperm(n)`, `torch.randint(...)` without `device=`) that indexes a GPU tensor is
copied to the GPU by the indexing itself, every time it runs: the same host fill and
transfer as `torch.arange(n).cuda()`, written where the copy does not show."""

from __future__ import annotations

import ast

from gpulens.analysis.context import Context
from gpulens.analysis.model import Severity
from gpulens.analysis.rules.common import shown
from gpulens.analysis.rules.factories import CPU_THEN_MOVED, host_made, is_cpu_factory
from gpulens.analysis.rules.registry import checks
from gpulens.analysis.symbols import Kind, Value

# factories whose tensors are positions: made to index with
_INDEX_FACTORIES = frozenset({"torch.arange", "torch.randperm", "torch.randint"})


@checks(ast.Subscript)
def check_host_index(node: ast.Subscript, ctx: Context) -> None:
    if ctx.hot_loop is None and ctx.returning_loop is None:
        return  # once per call of code no loop shows: one small copy
    elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    indexed = _indexed_on_gpu(node, elements, ctx)
    if indexed is None:
        return
    for element in elements:
        factory = _index_made_on_host(element, ctx)
        if factory is None:
            continue
        tensor = shown(ctx, node.value)
        named = "" if element is factory else f" (`{shown(ctx, element)}`)"
        where = f", if `{tensor}` is on the GPU" if indexed.guessed else ""
        # reported at the factory, where `device=` goes
        ctx.report(
            CPU_THEN_MOVED,
            factory,
            f"`{shown(ctx, factory)}` fills an index in host memory, and indexing `{tensor}` "
            f"with it{named} copies it to the GPU every time this runs{where}. Pass "
            "`device=` (the indexed tensor's) so the GPU creates it in place.",
            severity=Severity.HINT if indexed.guessed or ctx.likely else None,
        )
        return


def _indexed_on_gpu(node: ast.Subscript, elements: list[ast.expr], ctx: Context) -> Value | None:
    """The GPU tensor ``node`` indexes: its value, or what another of its indices shows
    (`scores[torch.arange(n), targets]` with `targets` on the GPU: a CPU tensor cannot be
    indexed with GPU indices, so `scores` is there too)."""
    indexed = ctx.value(node.value)
    if indexed is not None:
        # (only an array takes an array of positions: a GPU value so indexed is one)
        return indexed if indexed.kind is Kind.GPU else None
    for element in elements:
        index = ctx.value(element)
        if index is not None and index.array_on_gpu:
            return index
    return None


def _index_made_on_host(index: ast.expr, ctx: Context) -> ast.Call | None:
    """The host factory an index comes from: the index itself (`x[torch.arange(n)]`), or
    what the assignment of its name before it made (`perm = torch.arange(n).view(k, m)
    .t().reshape(-1)`), through steps that keep it on the host, where every binding of
    the name in the function is such an assignment."""
    if isinstance(index, ast.Name):
        made = _assigned_before(index, ctx)
        return None if made is None else _host_index_factory(made, ctx)
    return _host_index_factory(index, ctx)


def _host_index_factory(made: ast.expr, ctx: Context) -> ast.Call | None:
    if not isinstance(made, ast.Call | ast.Subscript):
        return None
    factory = host_made(made, ctx)
    if (
        factory is None
        or ctx.qualname(factory.func) not in _INDEX_FACTORIES
        or not is_cpu_factory(factory, ctx)
    ):
        return None
    return factory


def _assigned_before(name: ast.Name, ctx: Context) -> ast.expr | None:
    """The value of the last statement before ``name`` that binds it, where the walked
    function binds it only by plain assignments, each a host index (`pi = torch.arange
    (n)...` in each branch); None otherwise."""
    function = ctx.function
    if function is None:
        return None
    values: list[ast.expr] = []
    stores = 0
    for node in ast.walk(function):
        match node:
            case ast.Assign(targets=[ast.Name(id=target)], value=value) if target == name.id:
                values.append(value)
            case ast.Name(id=target, ctx=ast.Store() | ast.Del()) if target == name.id:
                stores += 1  # bound here, or by something else too (a loop, a tuple)
            case ast.arg(arg=target) if target == name.id:
                return None
    if not values or len(values) != stores:
        return None
    if any(_host_index_factory(value, ctx) is None for value in values):
        return None
    before = [v for v in values if v.lineno <= name.lineno]
    return max(before, key=lambda v: (v.lineno, v.col_offset)) if before else None
