"""What a function of another module of the project reads on the host of the values it is
handed (`to_numpy(x)`, whose body does `x.detach().cpu().numpy()`), read from that module's
source on disk: the module need not be among the files checked (a package's converters and
utilities usually are not where its training code is). A call of such a helper in hot code
waits for the GPU as the read itself would, at the call, where the fix goes.

Only functions defined at a module's top level count, found by their name in the module or
through the imports that re-export it (`from .utils.converter import to_numpy` in a
package's `__init__.py`), a few hops at most. Read once per process and module: the files do
not change while they are checked.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from gpulens.analysis.project import absolute
from gpulens.analysis.values import HostReads, host_reads

# re-exports followed from the module a file imports a helper from to the one defining it
_HOPS = 4
# a module larger than this is not read for a helper (a generated table, a vendored library)
_MAX_BYTES = 1_000_000


@functools.lru_cache(maxsize=1024)
def helper_reads(root: str, module: str, member: str) -> HostReads:
    """The parameters the top-level function ``member`` of ``module`` (a module under the
    folder ``root``) reads on the host on every call; () where it is not found."""
    for _ in range(_HOPS):
        found = _module(root, module)
        if found is None:
            return ()
        tree, is_package = found
        function, source = _binding(tree, member)
        if function is not None:
            positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
            return host_reads(function, positional, converted=True)
        if source is None:
            return ()
        package = module if is_package else module.rpartition(".")[0]
        target = absolute(source[0], package)
        if target is None:
            return ()
        module, member = target, source[1]
    return ()


def _binding(
    tree: ast.Module, member: str
) -> tuple[ast.FunctionDef | None, tuple[ast.ImportFrom, str] | None]:
    """What binds ``member`` last at the module's top level: its def (an `@overload` stub
    before it is replaced), or the import it comes from with the name imported."""
    function: ast.FunctionDef | None = None
    imported: tuple[ast.ImportFrom, str] | None = None
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == member:
            function, imported = statement, None
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if (alias.asname or alias.name) == member and alias.name != "*":
                    function, imported = None, (statement, alias.name)
        elif _rebinds(statement, member):
            function, imported = None, None
    return function, imported


def _rebinds(statement: ast.stmt, member: str) -> bool:
    """An assignment, class or async def of ``member``: not a function read here."""
    match statement:
        case ast.ClassDef(name=name) | ast.AsyncFunctionDef(name=name):
            return name == member
        case ast.Assign(targets=targets):
            return any(isinstance(t, ast.Name) and t.id == member for t in targets)
    return False


@functools.lru_cache(maxsize=256)
def _module(root: str, module: str) -> tuple[ast.Module, bool] | None:
    """The parsed source of ``module`` under ``root``, and whether it is a package's
    `__init__.py`; None where there is no such file or it does not parse."""
    base = Path(root).joinpath(*module.split("."))
    for path, is_package in ((base.with_suffix(".py"), False), (base / "__init__.py", True)):
        try:
            if not path.is_file() or path.stat().st_size > _MAX_BYTES:
                continue
            return ast.parse(path.read_bytes()), is_package
        except (OSError, SyntaxError, ValueError):
            return None
    return None
