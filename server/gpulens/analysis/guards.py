"""Conditions under which code in a loop does not run on every iteration."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from gpulens.analysis.symbols import Kind, simple_name

if TYPE_CHECKING:
    from gpulens.analysis.context import Context

# flags by which programs log or evaluate now and then: `if verbose:`, `if args.log_every`
_OCCASIONAL = re.compile(
    r"log|print|verbose|debug|every|eval|valid|save|checkpoint|last|first|report", re.I
)


def runs_once_per_period(test: ast.expr, ctx: Context) -> bool:
    """`step % N == 0`, `i == last`, `i in checkpoints`, `if verbose` … inside a loop."""
    match test:
        case ast.BoolOp(op=ast.And(), values=values):
            return any(runs_once_per_period(v, ctx) for v in values)
        case ast.BoolOp(op=ast.Or(), values=values):
            return all(runs_once_per_period(v, ctx) for v in values)
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return _has_modulo(operand) and not _by_few(operand, ctx)
        case ast.BinOp(op=ast.Mod()):
            # `if step % N:` runs N-1 times in N, but says "periodic"
            return not _by_few(test, ctx)
        case ast.Compare() if _has_modulo(test):
            # `(i + 1) % grad_accum_steps == 0` is the optimizer step: every step of training;
            # `step % policy_delay == 0` with a delay of 2 is every other step
            return not _per_optimizer_step(test) and not _by_few(test, ctx)
        case ast.Compare(
            left=left, ops=[ast.Eq() | ast.LtE() | ast.Lt() as op], comparators=[right]
        ) if _first_steps(left, op, right):
            return True  # `batch_idx == 0`: the first batch of each epoch
        case ast.Compare(left=left, ops=[ast.Eq() | ast.In() | ast.Is()], comparators=[right]):
            loop_names = _loop_names(ctx)
            used = _names(left) | _names(right)
            return bool(used & loop_names) or _occasional(left) or _occasional(right)
        case ast.Name() | ast.Attribute():
            return _occasional(test)
        case ast.Call(func=func):
            return _occasional(func)
    return False


def exits_unless_periodic(statement: ast.stmt, ctx: Context) -> bool:
    """`if batch_idx > 0: return`, `if step % 100 != 0: continue`: what follows in the block
    runs only where the test is false, and that happens once per period."""
    if not isinstance(statement, ast.If) or statement.orelse or not statement.body:
        return False
    if not isinstance(statement.body[-1], ast.Return | ast.Continue | ast.Break):
        return False
    return _periodic(negated(statement.test), ctx)


def _periodic(test: ast.expr, ctx: Context) -> bool:
    """`runs_once_per_period` read from the test's form alone (a modulo, a step's index at
    one value, a loop's own name at one value), not from names that sound occasional: where
    `if not valid: return` falls through is the usual case, whatever its names say."""
    match test:
        case ast.BoolOp(op=ast.And(), values=values):
            return any(_periodic(v, ctx) for v in values)
        case ast.BoolOp(op=ast.Or(), values=values):
            return all(_periodic(v, ctx) for v in values)
        case ast.Compare(left=left, ops=[op], comparators=[right]) if _first_steps(left, op, right):
            return True
        case _ if _has_modulo(test):
            return runs_once_per_period(test, ctx)
        case ast.Compare(left=left, ops=[ast.Eq()], comparators=[right]):
            return bool((_names(left) | _names(right)) & _loop_names(ctx))
    return False


def negated(test: ast.expr) -> ast.expr:
    """The test that holds where ``test`` does not, with `not` pushed inwards (De Morgan,
    comparisons turned round), so that the forms `_periodic` reads show through."""
    match test:
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return operand
        case ast.BoolOp(op=op, values=values):
            other: ast.boolop = ast.Or() if isinstance(op, ast.And) else ast.And()
            return ast.BoolOp(op=other, values=[negated(v) for v in values])
        case ast.Compare(left=left, ops=[op], comparators=[right]) if type(op) in _OPPOSITES:
            return ast.Compare(left=left, ops=[_OPPOSITES[type(op)]()], comparators=[right])
    return ast.UnaryOp(op=ast.Not(), operand=test)


_OPPOSITES: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


def _first_steps(left: ast.expr, op: ast.cmpop, right: ast.expr) -> bool:
    """`batch_idx == 0`, `step == 10`, `batch_idx < 1`: a step's index at one value (or
    below 1), true on one step of an epoch or a run."""
    if not (isinstance(right, ast.Constant) and type(right.value) is int):
        return False
    if not isinstance(op, ast.Eq) and right.value > (0 if isinstance(op, ast.LtE) else 1):
        return False
    return bool(_STEP_INDEX.match(simple_name(left)))


# names of a step's index: Lightning's `batch_idx` (`batch_nb` in older code), a counter
_STEP_INDEX = re.compile(r"^(batch_?(idx|id|index|nb|num)|(global_)?step|iteration)$", re.I)


def leaves_loop(body: list[ast.stmt]) -> bool:
    """A branch that ends in break/return/raise runs at most once per loop."""
    return bool(body) and isinstance(body[-1], ast.Break | ast.Return | ast.Raise)


def _per_optimizer_step(test: ast.expr) -> bool:
    """A modulo by the gradient-accumulation count: the branch of each optimizer step."""
    return any(
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mod)
        and _ACCUMULATION.search(simple_name(n.right))
        for n in ast.walk(test)
    )


def _by_few(test: ast.AST, ctx: Context) -> bool:
    """A modulus by a small whole number (`% 2`, `% self.policy_delay` whose default is 2):
    the branch runs every other step or so, as good as every step."""
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            divisor = node.right
            if isinstance(divisor, ast.Constant) and is_few(divisor.value):
                return True
            value = ctx.value(divisor)
            if value is not None and value.kind is Kind.FEW:
                return True
    return False


def is_few(value: object) -> bool:
    """A small whole number (2 to 4): a step modulo it is every other step or so."""
    return type(value) is int and 2 <= value <= _FEW


_FEW = 4


def _has_modulo(node: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(node))


# names of the number of micro-batches per optimizer step
_ACCUMULATION = re.compile(r"accum", re.I)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _loop_names(ctx: Context) -> set[str]:
    names: set[str] = set()
    for loop in ctx.loops:
        names |= loop.targets
    return names


def _occasional(node: ast.expr) -> bool:
    match node:
        case ast.Name(id=name) | ast.Attribute(attr=name):
            return bool(_OCCASIONAL.search(name))
    return False


def device_test(test: ast.expr) -> bool | None:
    """What a test says of where a tensor is: True for a GPU (`x.is_cuda`, `x.device.type ==
    "cuda"`, `… in ("cuda", "npu")`, `torch.cuda.is_available()`), False where no CUDA GPU
    is (`x.device.type == "cpu"`, `== "mps"`, `!= "cuda"`, `not x.is_cuda`, `mode == "cpu"`,
    `args.device != "cpu"`'s else), None when it says neither. An `and` says no CUDA if one
    operand does."""
    match test:
        case ast.Call(func=func, args=[]) if cuda_availability(func):
            return True
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            said = device_test(operand)
            return None if said is None else not said
        case ast.BoolOp(op=ast.And(), values=values):
            parts = [device_test(v) for v in values]
            return False if False in parts else (True if True in parts else None)
        case ast.Attribute(attr="is_cuda"):
            return True
        case ast.Compare(left=left, ops=[op], comparators=[named]):
            if isinstance(left, ast.Constant):
                left, named = named, left  # `"cpu" == mode`
            names = [
                n.value
                for n in (
                    named.elts if isinstance(named, ast.List | ast.Tuple | ast.Set) else [named]
                )
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            ]
            if not names:
                return None
            if not _is_device_type(left) and not all(_DEVICE_WORD.match(n) for n in names):
                return None  # `mode == "fast"` says nothing of devices
            cuda = [bool(_CUDA_WORD.match(n)) for n in names]
            if isinstance(op, ast.Eq | ast.In):
                if not any(cuda):
                    return False  # `== "cpu"`, `== "mps"`: never a CUDA GPU
                return True if "cpu" not in names else None  # `in ("cpu", "cuda")`: either
            if isinstance(op, ast.NotEq | ast.NotIn):
                if any(cuda):
                    return False  # `!= "cuda"`: anything but a CUDA GPU
                return True if "cpu" in names else None  # `!= "mps"`: the CPU or CUDA
    return None


def needs_cuda(test: ast.expr) -> bool:
    """A test that holds only where CUDA is: `torch.cuda.is_available()`, alone or in an
    `and`."""
    match test:
        case ast.BoolOp(op=ast.And(), values=values):
            return any(needs_cuda(v) for v in values)
        case ast.Call(func=func, args=[]):
            return cuda_availability(func)
    return False


def cuda_availability(func: ast.expr) -> bool:
    """`torch.cuda.is_available`: the test by which a program chooses a CUDA GPU."""
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "is_available"
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "cuda"
    )


# the device kinds a program names in a string: `mode == "cpu"`, `args.device == "cuda:0"`
_DEVICE_WORD = re.compile(r"^(cpu|gpu|cuda|mps|xpu|npu|hpu|hip|xla)(:\d+)?$")
# the kinds a CUDA GPU (or ROCm's, which PyTorch calls "cuda") goes by
_CUDA_WORD = re.compile(r"^(gpu|cuda|hip)(:\d+)?$")


def _is_device_type(node: ast.expr) -> bool:
    """`x.device.type`: a string that can only name a device kind."""
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "type"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "device"
    )


# builtin types whose objects live on the host: a list of tensors is no tensor
_HOST_TYPES = frozenset({"list", "tuple", "dict", "set", "str", "bytes", "int", "float", "bool"})


# of those, the ones that hold no array at all (a float is a float, a list may hold tensors)
_SCALAR_TYPES = frozenset({"str", "bytes", "int", "float", "bool"})
# mappings: iterating one gives its keys
_MAPPING_TYPES = frozenset({"dict", "Mapping", "MutableMapping", "OrderedDict", "defaultdict"})


def narrowed_to_host(test: ast.expr) -> list[str]:
    """The names a test proves hold Python containers or numbers where it holds:
    `isinstance(a, list)`, `isinstance(x, (int, float))`, alone or in an `and`."""
    return _narrowed(test, _HOST_TYPES)


def narrowed_to_scalar(test: ast.expr) -> list[str]:
    """The names a test proves hold Python numbers or text where it holds
    (`isinstance(x, float)`): no array, whatever they held before."""
    return _narrowed(test, _SCALAR_TYPES)


def narrowed_to_mapping(test: ast.expr) -> list[str]:
    """The names a test proves hold dicts where it holds (`isinstance(x, dict)`)."""
    return _narrowed(test, _MAPPING_TYPES)


def scalar_unless(test: ast.expr) -> list[str]:
    """The names that hold Python numbers or text where a test fails:
    `if not isinstance(x, float): ...` (its `else`, or the path that skips it)."""
    match test:
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return narrowed_to_scalar(operand)
    return []


def tensor_unless(test: ast.expr) -> list[str]:
    """The names that hold no tensor where a test fails: `if isinstance(x, torch.Tensor):
    return x.unsqueeze(0)` leaves a number (or a list) to the code after it."""
    tested = _isinstance_test(test)
    if tested is not None and "Tensor" in tested[1]:
        return [tested[0]]
    return []


def _narrowed(test: ast.expr, types: frozenset[str]) -> list[str]:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [name for value in test.values for name in _narrowed(value, types)]
    tested = _isinstance_test(test)
    if tested is not None and tested[1] and all(k in types for k in tested[1]):
        return [tested[0]]
    return []


def _isinstance_test(test: ast.expr) -> tuple[str, list[str | None]] | None:
    """`isinstance(x, (int, float))`: the name tested and the types' own names."""
    match test:
        case ast.Call(func=ast.Name(id="isinstance"), args=[ast.Name(id=name), tested]):
            kinds = tested.elts if isinstance(tested, ast.Tuple) else [tested]
            return name, [_type_name(k) for k in kinds]
    return None


def _type_name(node: ast.expr) -> str | None:
    """`dict`, `collections.abc.Mapping`: the type's own name."""
    match node:
        case ast.Name(id=name) | ast.Attribute(attr=name):
            return name
    return None


def falls_through(body: list[ast.stmt]) -> bool:
    """Whether running a block may go on to the statement after it: not where it ends in
    `raise` or `return` (or an `if` each of whose branches does)."""
    if not body:
        return True
    last = body[-1]
    if isinstance(last, ast.Raise | ast.Return):
        return False
    if isinstance(last, ast.If) and last.orelse:
        return falls_through(last.body) or falls_through(last.orelse)
    return True
