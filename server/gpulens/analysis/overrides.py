"""Calls a class makes on itself that run a subclass's override: `self._update(...)` in a
base's `update` runs the `_update` of whatever subclass the object is, in the file or in
another module of the project that imports the base."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from gpulens.analysis.definitions import Definitions

Function = ast.FunctionDef | ast.AsyncFunctionDef

# between the method a class calls on itself and the method that calls it, in the key of
# such a call as the project's index keeps it (`Counted._accumulate<update`)
CALLED_BY = "<"


def overrides_reached(
    definitions: Definitions, cls: str, name: str, caller: Function | None
) -> list[str]:
    """`self.name(...)` in ``caller``, a method of ``cls``: on an object of a subclass of
    the file that overrides ``name`` and inherits ``caller``, the call runs the override."""
    if caller is None or definitions.method(cls, caller.name) != (cls, caller):
        return []
    return [
        f"{sub}.{name}"
        for sub in definitions.defining.get(name, ())
        if sub != cls
        and definitions.method(sub, caller.name) == (cls, caller)
        and definitions.method(sub, name) == (sub, definitions.methods[sub][name])
    ]


def builds_itself(definitions: Definitions, cls: str, base: str | None) -> bool:
    """Whether ``cls`` or a class of the file between it and ``base`` (a base of the file,
    or None: one of another module) has a constructor of its own: the object may then be
    built otherwise than the base's code assumes (`super().__init__(device="cpu")`), and
    what the base's call passes its override is not known for it."""
    seen: set[str] = set()
    pending = [cls]
    while pending:
        current = pending.pop()
        if current == base or current in seen:
            continue
        seen.add(current)
        if "__init__" in definitions.methods.get(current, {}):
            return True
        pending.extend(b for b in definitions.bases.get(current, ()) if b in definitions.methods)
    return False


def self_call_key(definitions: Definitions, caller: Function | None, target: str) -> str | None:
    """The key under which a call on self from ``caller`` to the method ``target`` (a key
    of the file, `Class.method`) reaches subclasses in other modules: `Class.method<caller`
    where ``caller`` is a method of that class itself."""
    if caller is None:
        return None
    cls = definitions.owner.get(id(caller))
    if cls is None or target.rpartition(".")[0] != cls:
        return None
    if definitions.methods.get(cls, {}).get(caller.name) is not caller:
        return None
    return f"{target}{CALLED_BY}{caller.name}"


def overriding(
    definitions: Definitions,
    imported: Mapping[str, tuple[str, str | None]],
    module: str,
    key: str,
) -> Iterator[tuple[str, bool]]:
    """The methods of the file a base's call on itself runs (`module`'s `Base.name<caller`):
    those named ``name`` of the file's classes whose base is that class, imported by name
    (``imported``: a local name -> its module and member), which do not define
    ``caller`` themselves (theirs would run instead of the base's); each with whether what
    the call passes holds for it (`builds_itself`)."""
    called, _, caller = key.partition(CALLED_BY)
    base, _, name = called.rpartition(".")
    if not (base and name and caller):
        return
    for cls, bases in definitions.bases.items():
        if not any(imported.get(b) == (module, base) for b in bases):
            continue
        own = definitions.methods.get(cls, {})
        if name in own and definitions.method(cls, caller) is None:
            yield f"{cls}.{name}", not builds_itself(definitions, cls, None)
