"""GPU005 and GPU011: how data reaches the GPU, and in what portions."""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Condition, Context
from gpulens.analysis.model import Finding, Fix, Severity
from gpulens.analysis.rules.common import add_keyword, has_double_star, replace, shown
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import Kind, keyword, names_in

SLOW_LOADER = rule(
    "GPU005",
    "unpinned-loader",
    Severity.WARNING,
    "DataLoader feeding a GPU without pinned memory or worker processes",
    """
With `num_workers=0` the training loop itself loads and collates every batch, so the GPU
waits while Python reads files and decodes samples. Without `pin_memory=True` each batch is
copied from pageable memory, which the driver must first stage through a pinned buffer:
host-to-device copies run at a fraction of the bus's bandwidth and cannot overlap with
compute (`non_blocking=True` needs pinned memory).

**Bad:**
```python
loader = DataLoader(dataset, batch_size=256, shuffle=True)
```

**Good:**
```python
loader = DataLoader(dataset, batch_size=256, shuffle=True,
                    num_workers=4, pin_memory=True, persistent_workers=True)
```
""",
)

TINY_BATCHES = rule(
    "GPU011",
    "one-sample-at-a-time",
    Severity.INFO,
    "One sample per GPU call",
    """
A GPU runs thousands of threads at once; a model called on one sample at a time fills a
sliver of it and pays the launch cost of every layer for each sample. `batch_size=1`, or a
Python loop calling the model per item, leaves most of the GPU idle. Batch the samples and
call the model once per batch.

**Bad:**
```python
preds = [model(x.unsqueeze(0)) for x in samples]
```

**Good:**
```python
preds = model(torch.stack(samples))
```
""",
)

DEFAULT_WORKERS = 4


@checks(ast.Call)
def check_loader(node: ast.Call, ctx: Context) -> None:
    if ctx.qualname(node.func) not in fw.DATALOADERS or has_double_star(node):
        return
    dataset = node.args[0] if node.args else getattr(keyword(node, "dataset"), "value", None)
    if dataset is not None and ctx.on_gpu(dataset):
        return  # a dataset of CUDA tensors cannot be pinned or sent to workers
    findings = [*_loader_findings(node, ctx), *_batch_size_findings(node, ctx)]
    if findings:
        # whether the loader feeds a GPU is known only once the whole file is read
        ctx.report_if(Condition.USES_GPU, findings)


def _loader_findings(node: ast.Call, ctx: Context) -> list[Finding]:
    """One finding per problem, so that each quick-fix resolves its own finding."""
    if not ctx.config.enabled(SLOW_LOADER.code):
        return []
    findings: list[Finding] = []
    span = ctx.span(node.func)
    pin = keyword(node, "pin_memory")
    if pin is None or (isinstance(pin.value, ast.Constant) and pin.value.value is False):
        edit = (
            add_keyword(ctx, node, "pin_memory=True")
            if pin is None
            else replace(ctx, pin.value, "True")
        )
        findings.append(
            Finding(
                SLOW_LOADER.code,
                SLOW_LOADER.severity,
                "This DataLoader hands out batches in pageable memory: each copy to the GPU is "
                "staged through a pinned buffer at a fraction of the bus's bandwidth and cannot "
                "overlap with compute. Add `pin_memory=True`.",
                span,
                (Fix("Add pin_memory=True", (edit,)),),
            )
        )
    workers = keyword(node, "num_workers")
    if workers is None or (isinstance(workers.value, ast.Constant) and workers.value.value == 0):
        edit = (
            add_keyword(ctx, node, f"num_workers={DEFAULT_WORKERS}")
            if workers is None
            else replace(ctx, workers.value, str(DEFAULT_WORKERS))
        )
        findings.append(
            Finding(
                SLOW_LOADER.code,
                SLOW_LOADER.severity,
                "This DataLoader loads and collates every batch in the training process "
                "(`num_workers=0`): the GPU waits while Python reads samples. Use worker "
                "processes (`num_workers>0`).",
                span,
                # workers need a picklable dataset and, on spawn platforms, a __main__ guard:
                # the user applies this one knowingly
                (Fix(f"Load with {DEFAULT_WORKERS} worker processes", (edit,), safe=False),),
            )
        )
    return findings


def _batch_size_findings(node: ast.Call, ctx: Context) -> list[Finding]:
    size = keyword(node, "batch_size")
    if size is None and len(node.args) > 1:
        size_node: ast.expr | None = node.args[1]
    else:
        size_node = size.value if size is not None else None
    if not (isinstance(size_node, ast.Constant) and size_node.value == 1):
        return []
    if not ctx.config.enabled(TINY_BATCHES.code):
        return []
    return [
        Finding(
            TINY_BATCHES.code,
            TINY_BATCHES.severity,
            "`batch_size=1` sends one sample per step: each kernel fills a sliver of the GPU "
            "and every layer pays its launch cost per sample. Use a larger batch.",
            ctx.span(size_node),
        )
    ]


@checks(ast.Call)
def check_per_sample_call(node: ast.Call, ctx: Context) -> None:
    loop = ctx.hot_loop
    if loop is None or not loop.per_sample or loop.called_from:
        return
    callee = ctx.value(node.func)
    if callee is None or callee.kind is not Kind.GPU_MODULE:
        return
    arguments = [*node.args, *(k.value for k in node.keywords)]
    used = set().union(*(names_in(a) for a in arguments)) if arguments else set()
    if not used & loop.targets:
        return
    # `h = cell(x[t], h)`: each step needs the last one; that loop cannot be batched
    statement = ctx.statement
    if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if set().union(*(names_in(t) for t in targets)) & used:
            return
    if "model-call" in loop.reported:
        return
    loop.reported.add("model-call")
    ctx.report(
        TINY_BATCHES,
        node,
        f"`{shown(ctx, node)}` calls the model once per item of {loop.describe()}: each call "
        "fills a sliver of the GPU and pays every layer's launch cost. Stack the items and "
        "call the model once per batch.",
    )
