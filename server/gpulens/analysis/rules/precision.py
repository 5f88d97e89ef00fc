"""GPU010: layer sizes that keep half-precision matrix products off the tensor cores."""

from __future__ import annotations

import ast

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Condition, Context
from gpulens.analysis.model import Edit, Finding, Fix, Severity
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import keyword

UNALIGNED_SIZE = rule(
    "GPU010",
    "unaligned-half-precision-size",
    Severity.INFO,
    "Layer size not a multiple of 8 under half precision",
    """
Tensor cores multiply fp16/bf16 matrices in tiles: cuBLAS and cuDNN use them at full speed
when the inner and outer dimensions are multiples of 8 (16 bytes). A `Linear(1000, 500)`
under autocast runs its products on padded tiles or slower kernels; rounding hidden sizes
up to a multiple of 8 (or 64) often makes the layer faster despite the extra work.

**Bad:**
```python
self.fc = nn.Linear(1000, 500)
with torch.autocast("cuda", dtype=torch.bfloat16):
    y = model(x)
```

**Good:**
```python
self.fc = nn.Linear(1000, 504)
```
Changing a size changes the model: pad an output layer and slice its result if the number
of outputs is fixed.
""",
)

# small sizes (3 input channels, 10 classes) cost little whatever their alignment
SMALLEST_SIZE = 32
ALIGNMENT = 8


@checks(ast.Attribute, ast.Name)
def note_reduced_precision(node: ast.Attribute | ast.Name, ctx: Context) -> None:
    if not ctx.facts.reduced_precision and ctx.qualname(node) in fw.REDUCED_PRECISION:
        ctx.facts.reduced_precision = True


@checks(ast.Call)
def check_layer(node: ast.Call, ctx: Context) -> None:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in fw.REDUCED_PRECISION_METHODS:
        ctx.facts.reduced_precision = True
        return
    name = ctx.qualname(func)
    if name not in fw.SIZED_LAYERS or not ctx.config.enabled(UNALIGNED_SIZE.code):
        return
    findings: list[Finding] = []
    for position, keyword_name in enumerate(fw.SIZED_LAYERS[name]):
        argument = node.args[position] if len(node.args) > position else None
        if argument is None:
            bound = keyword(node, keyword_name)
            argument = bound.value if bound is not None else None
        if not (isinstance(argument, ast.Constant) and type(argument.value) is int):
            continue
        size = argument.value
        if size < SMALLEST_SIZE or size % ALIGNMENT == 0:
            continue
        rounded = -(-size // ALIGNMENT) * ALIGNMENT
        findings.append(
            Finding(
                UNALIGNED_SIZE.code,
                UNALIGNED_SIZE.severity,
                f"`{keyword_name}={size}` is not a multiple of {ALIGNMENT}: under half "
                "precision this layer's matrix products miss the tensor cores' fast path. "
                f"{rounded} would fit.",
                ctx.span(argument),
                # a different size is a different model: never applied without the user
                (
                    Fix(
                        f"Round {size} up to {rounded}",
                        (Edit(ctx.span(argument), str(rounded)),),
                        safe=False,
                    ),
                ),
            )
        )
    if findings:
        ctx.report_if(Condition.REDUCED_PRECISION, findings)
