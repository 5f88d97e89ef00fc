"""Lists a function builds by appends (`values = []` … `values.append(x)`), read from its
text: what goes in, and which of its names hold host values only."""

from __future__ import annotations

import ast

from gpulens.analysis.definitions import Function, own_nodes
from gpulens.analysis.values import is_host_expression


def filled_list_items(function: Function, name: str) -> list[ast.expr] | None:
    """What ``function`` appends to its local ``name``, where every binding of the name is
    an empty list and nothing but `append` changes it (no `extend`, no `+=`, no item
    writes: items that would not be seen); None otherwise."""
    items: list[ast.expr] = []
    bound = False
    for node in own_nodes(function, lambdas=True):
        match node:
            case ast.Assign(targets=targets, value=value) if _names(targets, name):
                if len(targets) != 1 or not (isinstance(value, ast.List) and not value.elts):
                    return None
                bound = True
            case (
                ast.AugAssign(target=ast.Name(id=target))
                | ast.AnnAssign(target=ast.Name(id=target))
            ) if target == name:
                return None
            case ast.For(target=target) | ast.With(items=[ast.withitem(optional_vars=target)]) if (
                target is not None and _names([target], name)
            ):
                return None
            case ast.Call(
                func=ast.Attribute(value=ast.Name(id=receiver), attr=method), args=arguments
            ) if receiver == name:
                if method != "append" or len(arguments) != 1:
                    return None
                items.append(arguments[0])
            case ast.Subscript(value=ast.Name(id=receiver), ctx=ast.Store() | ast.Del()) if (
                receiver == name
            ):
                return None
    return items if bound else None


def host_names(function: Function) -> frozenset[str]:
    """The locals of ``function`` whose every assignment is a host value (`x = loss.item()`,
    `n = len(batch)`, `v = out.cpu().numpy()`), whatever the names they read hold."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in own_nodes(function, lambdas=True):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for held in ast.walk(target):
                    if isinstance(held, ast.Name):
                        value = node.value if isinstance(target, ast.Name) else None
                        assigned.setdefault(held.id, []).append(value or target)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.NamedExpr):
            for held in ast.walk(node.target):
                if isinstance(held, ast.Name):
                    assigned.setdefault(held.id, []).append(node.target)
    hosts: set[str] = set()
    grew = True
    while grew:  # a name bound from host names is one too
        grew = False
        for name, values in assigned.items():
            if name not in hosts and all(is_host_expression(v, hosts) for v in values):
                hosts.add(name)
                grew = True
    return frozenset(hosts)


def _names(targets: list[ast.expr], name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))
