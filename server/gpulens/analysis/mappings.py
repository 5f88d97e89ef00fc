"""Names a function's own text proves to be mappings (or sets of a mapping's keys): iterating
one gives keys, not the values a dict of tensors holds (`for color in areas`, where `areas:
dict[tuple, Tensor]` maps host tuples to GPU counts).

Read from annotations and assignments only: a parameter annotated as a mapping
(`dict[K, V]`, `Dict`, `Mapping`), a name assigned through `cast(dict[K, V], …)` or
annotated so, and the key sets made of one (`set(areas) - matched`, `areas.keys()`). A name
assigned anything else anywhere in the function is none of them. Keys annotated as arrays
(`dict[Tensor, V]`) are not host keys: such a mapping is left out.
"""

from __future__ import annotations

import ast

from gpulens.analysis.definitions import Function, own_nodes
from gpulens.analysis.symbols import simple_name

_MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "defaultdict"})
_ARRAYS = frozenset({"Tensor", "ndarray", "Array"})


def mapping_names(function: Function) -> frozenset[str]:
    """The names of ``function`` whose iteration gives a mapping's keys (module docstring)."""
    every = (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
    found = {a.arg for a in every if a.annotation is not None and _mapping_type(a.annotation)}
    assigned: dict[str, list[ast.expr | None]] = {}
    for node in own_nodes(function, lambdas=False):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        simple = isinstance(target, ast.Name)
                        assigned.setdefault(name.id, []).append(node.value if simple else None)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotation = node.annotation if _mapping_type(node.annotation) else None
            assigned.setdefault(node.target.id, []).append(annotation)
        elif isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
            targets = (
                [node.target]
                if isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor)
                else [i.optional_vars for i in node.items if i.optional_vars is not None]
            )
            for target in targets:
                for held in ast.walk(target):
                    if isinstance(held, ast.Name) and not isinstance(node, ast.AugAssign):
                        assigned.setdefault(held.id, []).append(None)
        elif isinstance(node, ast.NamedExpr):
            assigned.setdefault(node.target.id, []).append(None)
    found -= assigned.keys()  # a parameter rebound is whatever it is rebound to
    changed = True
    while changed:
        changed = False
        for bound, values in assigned.items():
            if bound not in found and values and all(_keyed(v, found) for v in values):
                found.add(bound)
                changed = True
    return frozenset(found)


def may_give_keys(iterated: ast.expr) -> bool:
    """Whether ``iterated`` has a form `gives_keys` can accept (a name, a key set made of
    one): the others (`range(n)`, `self.blocks`) need no reading of the function."""
    match iterated:
        case ast.Name():
            return True
        case ast.Call(func=ast.Name(id="cast" | "set" | "frozenset")):
            return True
        case ast.Call(func=ast.Attribute(attr="keys")) | ast.BinOp(op=ast.Sub() | ast.BitAnd()):
            return True
    return False


def gives_keys(iterated: ast.expr, names: frozenset[str]) -> bool:
    """Whether iterating ``iterated`` gives keys: one of ``names`` (`mapping_names`), or a
    key set made of one (`set(areas) - matched`)."""
    if isinstance(iterated, ast.Name):
        return iterated.id in names
    return _keyed(iterated, set(names))


def _keyed(value: ast.expr | None, mappings: set[str]) -> bool:
    """Whether an assigned value is a mapping or a set of a mapping's keys."""
    match value:
        case None:
            return False
        case ast.Call(func=ast.Name(id="cast"), args=[annotation, _]):
            return _mapping_type(annotation)
        case ast.Call(func=ast.Name(id="set" | "frozenset"), args=[ast.Name(id=name)]):
            return name in mappings
        case ast.Call(func=ast.Attribute(value=ast.Name(id=name), attr="keys"), args=[]):
            return name in mappings
        case ast.BinOp(op=ast.Sub() | ast.BitAnd(), left=left):
            return _keyed(left, mappings)
    return False


def _mapping_type(annotation: ast.expr) -> bool:
    """`dict[K, V]`, `Dict[K, V]`, `Mapping[K, V]` (dotted or quoted) whose keys are no array."""
    match annotation:
        case ast.Constant(value=str() as text):
            try:
                parsed = ast.parse(text, mode="eval").body
            except SyntaxError:
                return False
            return _mapping_type(parsed)
        case ast.Subscript(value=container, slice=ast.Tuple(elts=[key, _])):
            return simple_name(container) in _MAPPINGS and not _names_array(key)
    return False


def _names_array(annotation: ast.expr) -> bool:
    return any(isinstance(n, ast.expr) and simple_name(n) in _ARRAYS for n in ast.walk(annotation))
