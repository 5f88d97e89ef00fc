"""What marks code as a training step: a backward pass and an optimizer step, read from the
code itself (no framework needed)."""

from __future__ import annotations

import ast
import re

from gpulens.analysis.symbols import dotted_name

# what steps an optimizer: `optimizer.step()`, `self.actor_optim.step()`, `scaler.step(opt)`
_OPTIMIZER = re.compile(r"optim|^opt(_\w+)?$|scaler", re.IGNORECASE)
_BACKWARD_METHODS = frozenset({"backward", "manual_backward"})
# bodies of their own: a loop's step is the loop's, a nested function's is its own
_OWN_SCOPES = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
)


def one_training_step(body: list[ast.stmt]) -> bool:
    """The body, outside loops of its own, runs a backward pass and steps an optimizer (or
    hands the optimizer the loss, `self.optim.step(loss)`): it is one training step."""
    backward = stepped = False
    pending: list[ast.AST] = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attribute = node.func.attr
            if attribute in _BACKWARD_METHODS:
                backward = True
            elif attribute == "step" and _OPTIMIZER.search(_last_name(node.func.value)):
                stepped = True
                backward = backward or (bool(node.args) and _hands_the_loss(node))
        if not isinstance(node, _OWN_SCOPES):
            pending.extend(ast.iter_child_nodes(node))
    return backward and stepped


def backward_losses(node: ast.AST) -> frozenset[str]:
    """The names a loop or function runs a backward pass on: `loss` in `loss.backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)`, `self.optim.step(loss)`.
    Each is a tensor, on the device of the model it trains."""
    names: set[str] = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        receiver = call.func.value
        if call.func.attr in _BACKWARD_METHODS:
            if isinstance(receiver, ast.Call) and len(receiver.args) == 1:
                receiver = receiver.args[0]  # `scaler.scale(loss).backward()`
            if isinstance(receiver, ast.Name):
                names.add(receiver.id)
            names.update(a.id for a in call.args[:1] if isinstance(a, ast.Name))
        elif call.func.attr == "step" and _hands_the_loss(call):
            names.update(a.id for a in call.args[:1] if isinstance(a, ast.Name))
    return frozenset(names)


def _hands_the_loss(call: ast.Call) -> bool:
    """`self.optim.step(loss)`: an optimizer (not a scaler, which is handed the optimizer)
    given something to step on, the loss or a closure that computes it."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and bool(call.args)
        and "optim" in _last_name(func.value).lower()
    )


def _last_name(node: ast.expr) -> str:
    name = dotted_name(node)
    return name.rsplit(".", 1)[-1] if name else ""


# element tests a loss is checked with: `torch.isfinite(loss)`, `loss.isnan()`
_ELEMENT_TESTS = frozenset({"isfinite", "isnan", "isinf", "isposinf", "isneginf"})
_REDUCTIONS = frozenset({"any", "all"})


def tested_name(test: ast.expr) -> ast.Name | None:
    """The name a truth test reads through element tests, their reductions and an order
    comparison: `loss` in `not torch.isfinite(loss)`, `torch.isnan(loss).any()`,
    `loss.isinf()`, `loss > limit`; None for anything else (`loss is None` reads nothing)."""
    node = test
    while True:
        match node:
            case ast.UnaryOp(op=ast.Not(), operand=inner):
                node = inner
            case ast.Compare(left=left, ops=[ast.Lt() | ast.LtE() | ast.Gt() | ast.GtE()]):
                node = left
            case ast.Call(func=ast.Attribute(attr=attr, value=inner), args=[]) if (
                attr in _REDUCTIONS or attr in _ELEMENT_TESTS
            ):
                node = inner
            case ast.Call(func=ast.Attribute(attr=attr), args=[inner]) if attr in _ELEMENT_TESTS:
                node = inner  # `torch.isnan(loss)`
            case ast.Name():
                return node
            case _:
                return None
