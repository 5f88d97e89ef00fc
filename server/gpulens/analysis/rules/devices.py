"""GPU007: the device written into the code instead of chosen once."""

from __future__ import annotations

import ast
from collections.abc import Callable

from gpulens.analysis import frameworks as fw
from gpulens.analysis.context import Condition, Context
from gpulens.analysis.model import Edit, Finding, Severity, Span
from gpulens.analysis.refactors.move_to_device import device_preamble
from gpulens.analysis.rules.common import fix
from gpulens.analysis.rules.registry import checks, rule
from gpulens.analysis.symbols import Kind

HARD_CODED_DEVICE = rule(
    "GPU007",
    "hard-coded-device",
    Severity.INFO,
    "Device written into the code where a device variable would serve",
    """
`.cuda()` and `"cuda"` scattered through a program pin it to the current CUDA device: it
fails on a machine without one, cannot be pointed at `cuda:1` or `mps`, and mixes with code
that uses the `device` variable the program already has. Choose the device once and pass it
along. The fix is applied by "Fix all" only where the variable names the same device as
`.cuda()` (plain `"cuda"`, with or without a CPU fallback). Not reported under
`if torch.cuda.is_available():`, a branch that runs only where CUDA is and exists to use it.

**Bad:**
```python
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().cuda()
x = torch.zeros(8, 3, device="cuda")
```

**Good:**
```python
model = Net().to(device)
x = torch.zeros(8, 3, device=device)
```
""",
)


@checks(ast.Call)
def check_hard_coded(node: ast.Call, ctx: Context) -> None:
    if not ctx.config.enabled(HARD_CODED_DEVICE.code) or ctx.cuda_only:
        return  # (under `if torch.cuda.is_available():` the GPU is the branch's point)
    func = node.func
    match func:
        case ast.Attribute(value=ast.Call(func=ast.Name(id="super"))):
            return  # an override of Module.cuda()/to() handing the device on
    if isinstance(func, ast.Attribute) and func.attr == "cuda" and not node.args:
        suffix = Span(
            ctx.span(func.value).end_line, ctx.span(func.value).end_column, *_end(node, ctx)
        )
        extra = ", ".join(ctx.text(k) for k in node.keywords)
        # where a factory could make it there, GPU003 says the better thing, and its fix
        # uses the device variable; with none, its fix writes `device="cuda"`, as
        # hard-coded as `.cuda()`: the site stays one of the file's hard-coded devices
        if _is_cpu_factory_call(func.value, ctx) and ctx.device_variable() is not None:
            return
        _site(suffix, lambda name: f".to({name}{', ' + extra if extra else ''})", ctx)
        return
    if ctx.qualname(func) == "torch.device":
        return  # that is where the device is chosen
    candidates: list[ast.expr] = [k.value for k in node.keywords if k.arg == "device"]
    if isinstance(func, ast.Attribute) and func.attr == "to" and node.args:
        candidates.append(node.args[0])
    for literal in candidates:
        match literal:
            case ast.Constant(value=str(device)) if device.startswith("cuda") and (
                fw.GPU_DEVICE_STRING.match(device)
            ):
                _site(ctx.span(literal), lambda name: name, ctx)


def _end(node: ast.AST, ctx: Context) -> tuple[int, int]:
    span = ctx.span(node)
    return span.end_line, span.end_column


def _is_cpu_factory_call(node: ast.expr, ctx: Context) -> bool:
    from gpulens.analysis.rules.factories import is_cpu_factory as _is_cpu_factory

    return isinstance(node, ast.Call) and _is_cpu_factory(node, ctx)


def _site(span: Span, spelled: Callable[[str], str], ctx: Context) -> None:
    """Report the hard-coded text at ``span`` (`.cuda()`, `"cuda"`), which the fix replaces
    by ``spelled(variable)``."""
    variable = ctx.device_variable()
    text = " ".join(ctx.source.segment(span).split())
    if variable is not None:
        chosen = ctx.scope.lookup(variable)
        # the same device as `.cuda()` only where the variable names plain "cuda"
        same = chosen is not None and chosen.kind is Kind.DEVICE and chosen.exact
        changes = None if same else f"the device `{variable}` names may be another GPU or the CPU"
        ctx.report(
            HARD_CODED_DEVICE,
            span,
            f"`{text}` hard-codes the GPU while `{variable}` holds the chosen device. Use "
            f"`{variable}` so the program follows one choice.",
            (fix(f"Use `{variable}`", (Edit(span, spelled(variable)),), changes),),
        )
        return
    if ctx.spelled("torch", "torch") is None:
        return
    # the same preamble "Move to device" writes: a free name, `import torch` if missing
    made = device_preamble(ctx.module_text(), ctx.config.device)
    if made is None:
        return  # the file does not parse as a whole: no edit after its imports
    name, preamble = made
    changes = None if ctx.config.device == "cuda" else f"uses {ctx.config.device} as configured"
    finding = Finding(
        HARD_CODED_DEVICE.code,
        HARD_CODED_DEVICE.severity,
        f"`{text}` hard-codes the GPU, as do other places in this file. Choose the device "
        f"once (`{name} = torch.device(...)`) and use it everywhere.",
        span,
        (
            fix(
                f"Define `{name}` once and use it here",
                (preamble, Edit(span, spelled(name))),
                changes,
            ),
        ),
    )
    ctx.report_if(Condition.MANY_HARD_CODED_DEVICES, [finding])
