"""A module's `forward`: torch runs it once per call of the model, and a model is called
once per training or evaluation step. What it is handed is the batch (or what an outer
module made of it), on the model's device if the model is on one: the file rarely shows
that device, so what the forward reads back of its inputs is a guess (a hint)."""

from __future__ import annotations

import ast

from gpulens.analysis.definitions import Definitions, Function, is_static
from gpulens.analysis.symbols import Imports

FORWARD = "forward"
# `torch.autograd.Function`: its static `forward(ctx, ...)` runs on every call of `apply`,
# its static `backward(ctx, *grads)` on every backward pass through that call
AUTOGRAD_FUNCTION = "torch.autograd.Function"
BACKWARD = "backward"
# what an autograd function's backward reads of what its forward saved: the tensors the
# forward computed with, on the device of its inputs
SAVED = ("saved_tensors", "saved_variables")
# what only a tensor (or an array) has: a parameter read so is one, not a size or a flag
_TENSOR_METHODS = frozenset(
    {
        "all", "any", "argmax", "argmin", "bool", "chunk", "clone", "contiguous",
        "cuda", "cumsum", "detach", "device", "dim", "dtype", "eq", "exp", "expand",
        "expand_as", "flatten", "float", "gather", "half", "index_select", "is_cuda",
        "log", "long", "masked_fill", "masked_select", "matmul", "max", "mean", "min", "ndim",
        "ne", "new_empty", "new_full", "new_ones", "new_zeros", "nonzero", "norm", "numel",
        "permute", "reshape", "shape", "size", "softmax", "split", "squeeze", "sum", "to",
        "transpose", "type_as", "unique", "unsqueeze", "view",
    }
)  # fmt: skip


def runs_per_call(
    function: Function,
    owner: str,
    module_classes: set[str],
    definitions: Definitions,
    imports: Imports,
    *,
    own: frozenset[str] = frozenset(),
) -> bool:
    """`forward` of a module class: one the file shows derives from `nn.Module`, or one whose
    bases (through the file's classes) come from the package's own modules (a project's
    base module, `class RBFKernel(Kernel)`, imported relatively or, ``own``, by the
    package's name) in a file that uses torch; or the static `forward(ctx, ...)` or
    `backward(ctx, *grads)` of an autograd function."""
    if function.name not in (FORWARD, BACKWARD) or not imports.uses("torch"):
        return False
    if is_static(function):
        return _derives(owner, definitions, imports, own, autograd=True)
    if function.name == BACKWARD:
        return False  # a module's own `backward` method: no hook torch runs
    return owner in module_classes or _derives(owner, definitions, imports, own, autograd=False)


def saved_by_forward(function: Function) -> list[str]:
    """`ctx.saved_tensors` in an autograd function's backward (`ctx` its first parameter):
    the names under which it reads what its forward saved."""
    if function.name != BACKWARD or not is_static(function):
        return []
    arguments = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    return [f"{arguments[0]}.{name}" for name in SAVED] if arguments else []


def tensor_inputs(function: Function, imports: Imports) -> list[str]:
    """The required parameters the forward uses as tensors (`mask.any()`, `x.shape`,
    `torch.equal(x1, x2)`): sizes, flags and options it is handed are left unknown."""
    arguments = function.args
    parameters = [a.arg for a in (*arguments.posonlyargs, *arguments.args)][1:]
    required = set(parameters[: len(parameters) - len(arguments.defaults)])
    if not required:
        return []
    used: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and node.attr in _TENSOR_METHODS:
            if isinstance(node.value, ast.Name):
                used.add(node.value.id)
        elif isinstance(node, ast.Call) and (imports.qualname(node.func) or "").startswith(
            "torch."
        ):
            used.update(a.id for a in node.args if isinstance(a, ast.Name))
    return [p for p in parameters if p in required and p in used]


def _derives(
    owner: str, definitions: Definitions, imports: Imports, own: frozenset[str], *, autograd: bool
) -> bool:
    """Whether the class's bases, followed through the file's own classes, reach an
    autograd function (``autograd``) or a class of the package's own modules."""
    seen: set[str] = set()
    pending = [owner]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        node = definitions.classes.get(name)
        if node is None:
            continue
        for base in node.bases:
            qualified = imports.qualname(base) or ""
            if autograd:
                if qualified == AUTOGRAD_FUNCTION:
                    return True
            elif isinstance(base, ast.Name) and (
                base.id in definitions.relatives or base.id in own
            ):
                return True
            if isinstance(base, ast.Name):
                pending.append(base.id)
    return False
