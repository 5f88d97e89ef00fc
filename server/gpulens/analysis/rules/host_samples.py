"""Samples of a `torch.distributions` object whose parameters are host numbers: drawn in
host memory, as a random factory without `device=` draws them (GPU003 reads these)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from gpulens.analysis.definitions import CONSTRUCTORS
from gpulens.analysis.rules.common import written_number
from gpulens.analysis.symbols import keyword

if TYPE_CHECKING:
    from gpulens.analysis.context import Context

Function = ast.FunctionDef | ast.AsyncFunctionDef

_SAMPLERS = frozenset({"sample", "rsample", "sample_n"})
_DISTRIBUTIONS = "torch.distributions."
# what builds a tensor from Python numbers on the host when given no device (fastai's
# `tensor(x)` is torch's, re-exported)
_HOST_BUILDERS = frozenset({"torch.tensor", "torch.as_tensor", "torch.scalar_tensor"})
# keywords of a distribution that are no parameter of it
_OPTIONS = frozenset({"validate_args"})


def host_sample(call: ast.Call, ctx: Context) -> bool:
    """`dist.sample(shape)` where ``dist`` is a distribution built from host numbers: in the
    expression (`Uniform(0.0, 1.0).sample(n)`), or kept on the object by its constructor
    (`self.mix = Beta(torch.tensor(alpha), torch.tensor(alpha))` in `__init__`, the class's
    or a base's of the file) and never assigned elsewhere."""
    match call.func:
        case ast.Attribute(value=receiver, attr=attr) if attr in _SAMPLERS:
            pass
        case _:
            return False
    if isinstance(receiver, ast.Call):
        return ctx.function is not None and _host_distribution(receiver, ctx.function, ctx)
    made = _kept_distribution(receiver, ctx)
    return made is not None and _host_distribution(made[0], made[1], ctx)


def _kept_distribution(receiver: ast.expr, ctx: Context) -> tuple[ast.Call, Function] | None:
    """The one call that makes `self.<name>`, where a constructor of the class (or of a base
    of the file) makes it and no other method assigns it, and the constructor."""
    function = ctx.function
    match receiver:
        case ast.Attribute(value=ast.Name(id=owner), attr=name):
            pass
        case _:
            return None
    if function is None or not function.args.args or function.args.args[0].arg != owner:
        return None
    definitions = ctx.evaluator.definitions
    cls = definitions.owner.get(id(function))
    if cls is None:
        return None
    # every def of the class and its bases of the file, those it overrides too: a base's
    # `__init__` that its own calls through `super()` makes the attribute
    methods = [m for c in definitions.lineage(cls) for m in definitions.methods.get(c, {}).values()]
    found: list[tuple[ast.expr | None, Function]] = []
    for method in ctx.definitions_read(list(methods)):
        assert isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef)
        this = method.args.args[0].arg if method.args.args else None
        for node in ast.walk(method):
            for target, value in _assignments(node):
                match target:
                    case ast.Attribute(value=ast.Name(id=held), attr=attr) if (
                        held == this and attr == name
                    ):
                        found.append((value, method))
    if len(found) != 1:
        return None
    value, method = found[0]
    if method.name not in CONSTRUCTORS or not isinstance(value, ast.Call):
        return None
    return value, method


def _assignments(node: ast.AST) -> list[tuple[ast.expr, ast.expr | None]]:
    """The targets a statement assigns, each with its value (None: a part of an unpacked
    value, or a loop's item)."""
    match node:
        case ast.Assign(targets=targets, value=value):
            found: list[tuple[ast.expr, ast.expr | None]] = []
            for target in targets:
                if isinstance(target, ast.Tuple | ast.List):
                    found.extend((t, None) for t in _parts(target))
                else:
                    found.append((target, value))
            return found
        case (
            ast.For(target=target)
            | ast.AsyncFor(target=target)
            | ast.With(items=[ast.withitem(optional_vars=target), *_])
        ) if target is not None:
            return [(t, None) for t in _parts(target)]
        case ast.AnnAssign(target=target, value=value) | ast.AugAssign(target=target, value=value):
            return [(target, value)]
    return []


def _parts(target: ast.expr) -> list[ast.expr]:
    return [t for t in ast.walk(target) if isinstance(t, ast.expr)]


def _host_distribution(made: ast.Call, builder: Function, ctx: Context) -> bool:
    """A distribution class of torch called with host numbers only."""
    name = ctx.qualname(made.func)
    if name is None or not name.startswith(_DISTRIBUTIONS):
        return False
    if not name.rsplit(".", 1)[-1][:1].isupper() or not (made.args or made.keywords):
        return False
    given = [*made.args, *(k.value for k in made.keywords if k.arg not in _OPTIONS)]
    if any(k.arg is None for k in made.keywords):
        return False  # `**params`
    return all(_host_number(argument, builder, ctx) for argument in given)


def _host_number(node: ast.expr, builder: Function, ctx: Context) -> bool:
    """A number written in the code, a parameter of ``builder`` that holds one (annotated
    `float` or `int`, or a number by default), or a tensor built from those with no device."""
    if written_number(node):
        return True
    match node:
        case ast.Name(id=name):
            return _number_parameter(builder, name)
        case ast.Call(func=func, args=[argument]) if keyword(node, "device") is None:
            if not _builds_on_host(func, ctx):
                return False
            return _host_number(argument, builder, ctx)
    return False


def _builds_on_host(func: ast.expr, ctx: Context) -> bool:
    name = ctx.qualname(func)
    if name is not None:
        return name in _HOST_BUILDERS
    # a star import's `tensor` (`from fastai.basics import *`): torch's, re-exported
    return (
        isinstance(func, ast.Name)
        and func.id == "tensor"
        and "tensor" not in ctx.evaluator.definitions.functions
    )


def _number_parameter(function: Function, name: str) -> bool:
    """A parameter of ``function`` annotated `float` or `int`, or whose default is a number,
    that the function never assigns."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    pairs = [
        *zip(positional, [*defaults, *arguments.defaults], strict=True),
        *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True),
    ]
    for argument, default in pairs:
        if argument.arg != name:
            continue
        annotated = isinstance(argument.annotation, ast.Name) and argument.annotation.id in (
            "float",
            "int",
        )
        numbered = default is not None and written_number(default)
        return (annotated or numbered) and not _assigned_in(function, name)
    return False


def _assigned_in(function: Function, name: str) -> bool:
    return any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
        for node in ast.walk(function)
    )
