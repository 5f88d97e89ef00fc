"""GPU009: Python loops that touch a GPU array one element at a time."""

from __future__ import annotations

import ast

from gpulens.analysis.context import Context
from gpulens.analysis.model import Severity
from gpulens.analysis.rules.common import shown
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import dotted_name, names_in

ELEMENTWISE_LOOP = rule(
    "GPU009",
    "elementwise-python-loop",
    Severity.WARNING,
    "Python loop over the elements of a GPU array",
    """
Each `x[i]` or `x[i] = v` on a GPU array is a separate kernel launch (and a read of a value
is a copy to the host): a loop over a million elements makes a million launches of a few
microseconds each, where one vectorized operation would take microseconds in total.

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
    _check_iterated(node.iter, ctx)


@checks(ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
def check_comprehension(node: ast.ListComp, ctx: Context) -> None:
    _check_iterated(node.generators[0].iter, ctx)


def _check_iterated(iterated: ast.expr, ctx: Context) -> None:
    value = ctx.value(iterated)
    if value is None or not value.array_on_gpu:
        return
    ctx.report(
        ELEMENTWISE_LOOP,
        iterated,
        f"Iterating over the GPU array `{shown(ctx, iterated)}` launches one indexing kernel "
        "per element. Express the loop body as operations on the whole array.",
    )


@checks(ast.Assign, ast.AugAssign)
def check_element_write(node: ast.Assign | ast.AugAssign, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None or not loop.targets:
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if not isinstance(target, ast.Subscript):
            continue
        if not (names_in(target.slice) & loop.targets) or not ctx.on_gpu(target.value):
            continue
        name = dotted_name(target.value) or shown(ctx, target.value)
        if f"write:{name}" in loop.reported:
            continue
        loop.reported.add(f"write:{name}")
        ctx.report(
            ELEMENTWISE_LOOP,
            target,
            f"`{shown(ctx, target)} = …` writes one element of a GPU array per iteration of "
            f"{loop.describe()}: one kernel launch each. Compute all elements with one "
            "array operation.",
        )
