"""GPU005 and GPU011: how data reaches the GPU, and in what portions."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Condition, Context
from gpulens.analysis.model import Finding, Fix, Severity
from gpulens.analysis.rules.common import add_keyword, fix, has_double_star, replace, shown
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import Kind, keyword, names_in, simple_name

SLOW_LOADER = rule(
    "GPU005",
    "unpinned-loader",
    Severity.WARNING,
    "DataLoader feeding a GPU without pinned memory or worker processes",
    """
With `num_workers=0` the training loop itself loads and collates every batch, so the GPU
waits while Python reads files and decodes samples. Without `pin_memory=True` each batch is
copied from pageable memory, which the driver must first stage through a pinned buffer:
host-to-device copies run slower than from pinned memory and cannot overlap with compute
(`non_blocking=True` needs pinned memory).

`pin_memory=True` is applied by "Fix all" only where the dataset is known to yield CPU
tensors (pinning CUDA tensors raises); worker processes are a quick-fix only (the dataset
must pickle, and an `IterableDataset` must split its items with `get_worker_info()` or every
worker yields every item). A dataset that keeps its samples on the GPU gets no finding.

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


@dataclass(frozen=True, slots=True)
class _Dataset:
    """What the analysis knows of the items a DataLoader's dataset yields."""

    # True: CPU tensors (pinning them is safe); False: CUDA tensors (they cannot be pinned
    # or made in worker processes); None: not known
    on_host: bool | None = None
    unsharded_iterable: bool = False  # an IterableDataset that ignores get_worker_info()


@checks(ast.Call)
def check_loader(node: ast.Call, ctx: Context) -> None:
    if ctx.qualname(node.func) not in fw.DATALOADERS or has_double_star(node):
        return
    dataset = _dataset_of(node, ctx)
    if dataset.on_host is False:
        return  # a dataset of CUDA tensors cannot be pinned or sent to workers
    findings = [*_loader_findings(node, dataset, ctx), *_batch_size_findings(node, ctx)]
    if findings:
        # whether the loader feeds a GPU is known only once the whole file is read
        ctx.report_if(Condition.USES_GPU, findings)


def _dataset_of(loader: ast.Call, ctx: Context) -> _Dataset:
    dataset = loader.args[0] if loader.args else getattr(keyword(loader, "dataset"), "value", None)
    if dataset is None:
        return _Dataset()
    collate = keyword(loader, "collate_fn")
    if collate is not None:
        # a collate function that moves batches to the GPU makes pinning raise
        function = ctx.value(collate.value)
        if function is None or function.kind is not Kind.FUNCTION:
            return _Dataset()
        if _places_on_gpu(ctx.definitions_read([function.origin]), ctx):  # type: ignore[list-item]
            return _Dataset(on_host=False)
    value = ctx.value(dataset)
    if value is not None and value.on_gpu:
        return _Dataset(on_host=False)
    if not isinstance(dataset, ast.Call):
        return _Dataset()
    made = ctx.qualname(dataset.func) or ""
    if made.rsplit(".", 1)[-1] == "TensorDataset":
        values = [ctx.value(a) for a in dataset.args]
        cpu = bool(values) and all(v is not None and v.kind is Kind.CPU_TENSOR for v in values)
        return _Dataset(on_host=True if cpu else None)
    cls = dataset.func.id if isinstance(dataset.func, ast.Name) else None
    definitions = ctx.evaluator.definitions
    if cls is None or cls not in definitions.methods:
        return _Dataset()
    methods = ctx.definitions_read(list(definitions.methods_of(cls).values()))
    if _places_on_gpu(methods, ctx):
        return _Dataset(on_host=False)
    iterable = _bases_include(cls, "IterableDataset", ctx)
    sharded = any(
        isinstance(n, ast.Attribute | ast.Name) and simple_name(n) == "get_worker_info"
        for method in methods
        for n in ast.walk(method)
    )
    return _Dataset(on_host=True, unsharded_iterable=iterable and not sharded)


def _bases_include(cls: str, base: str, ctx: Context) -> bool:
    definitions = ctx.evaluator.definitions
    pending, seen = [cls], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        names = definitions.bases.get(current, ())
        if base in names:
            return True
        pending.extend(names)
    return False


def _places_on_gpu(functions: list[ast.AST], ctx: Context) -> bool:
    """Whether these functions put data on a GPU (`.cuda()`, `.to(device)`, `device=`)."""
    evaluator = ctx.evaluator
    for function in functions:
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            match node.func:
                case ast.Attribute(attr="cuda"):
                    return True
                case ast.Attribute(attr="to") if any(evaluator.device_of(a) for a in node.args):
                    return True
            placed = keyword(node, "device")
            if placed is not None and evaluator.device_of(placed.value):
                return True
    return False


def _loader_findings(node: ast.Call, dataset: _Dataset, ctx: Context) -> list[Finding]:
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
        # pinning CPU tensors changes no value; pinning CUDA tensors raises
        changes = None if dataset.on_host else "raises if the dataset yields CUDA tensors"
        findings.append(
            Finding(
                SLOW_LOADER.code,
                SLOW_LOADER.severity,
                "This DataLoader hands out batches in pageable memory: the driver stages each "
                "copy to the GPU through a pinned buffer, slower than a copy from pinned memory "
                "and unable to overlap with compute. Add `pin_memory=True`.",
                span,
                (fix("Add pin_memory=True", (edit,), changes),),
            )
        )
    workers = keyword(node, "num_workers")
    if workers is None or (isinstance(workers.value, ast.Constant) and workers.value.value == 0):
        edit = (
            add_keyword(ctx, node, f"num_workers={DEFAULT_WORKERS}")
            if workers is None
            else replace(ctx, workers.value, str(DEFAULT_WORKERS))
        )
        message = (
            "This DataLoader loads and collates every batch in the training process "
            "(`num_workers=0`): the GPU waits while Python reads samples. Use worker "
            "processes (`num_workers>0`)."
        )
        fixes: tuple[Fix, ...] = (
            fix(
                f"Load with {DEFAULT_WORKERS} worker processes",
                (edit,),
                "runs the dataset in worker processes: it must pickle, and spawn platforms "
                "need a `__main__` guard",
            ),
        )
        if dataset.unsharded_iterable:
            message += (
                " This IterableDataset does not split its items by worker "
                "(`torch.utils.data.get_worker_info()`): as written, every worker would yield "
                "every item."
            )
            fixes = ()
        findings.append(Finding(SLOW_LOADER.code, SLOW_LOADER.severity, message, span, fixes))
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
