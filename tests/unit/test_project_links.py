"""The project's links read a file's statements without walking its expressions: the same
statements, in the same order, as `ast.walk` finds (a later import or assignment of a name
wins, so the order is part of the result)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpulens.analysis.project import _statements

ROOT = Path(__file__).resolve().parents[2]
# statements under every kind of holder: bodies, else branches, handlers, match cases, nested
# functions and classes, a lambda (an expression: nothing under it)
NESTED = """
import a
try:
    import b
except ImportError as error:
    import c as b
else:
    x = 1
finally:
    y = 2
match x:
    case 1:
        import d
    case _:
        z = lambda: 3
class C:
    def f(self):
        self.p = b.P()
        def g():
            import e
        for i in range(3):
            while i:
                with open("f") as h:
                    q = i
"""


def _walked(tree: ast.AST) -> list[ast.AST]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def test_nested_holders_give_every_statement_in_walk_order() -> None:
    tree = ast.parse(NESTED)
    assert [n for n in _statements(tree) if isinstance(n, ast.stmt)] == _walked(tree)
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    assert [n for n in _statements(function) if isinstance(n, ast.stmt)][1:] == _walked(function)[
        1:
    ]


@pytest.mark.parametrize("folder", ["server", "tests", "benchmarks", "examples"])
def test_the_statements_of_real_files_are_those_walk_finds(folder: str) -> None:
    files = sorted((ROOT / folder).rglob("*.py"))
    assert files
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert [n for n in _statements(tree) if isinstance(n, ast.stmt)] == _walked(tree), path


def test_helper_reads_follow_re_exports_to_the_last_def(tmp_path: Path) -> None:
    """A helper found through a package's relative re-export under another name, its
    `@overload` stubs replaced by the def that runs; a name rebound to something else is
    no helper."""
    from gpulens.analysis.helper_reads import helper_reads

    package = tmp_path / "pkg"
    (package / "util").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "util" / "__init__.py").write_text(
        "from .convert import to_float as as_float, to_float\nto_float = None\n"
    )
    (package / "util" / "convert.py").write_text(
        "import torch\nfrom typing import overload\n\n"
        "@overload\ndef to_float(x: torch.Tensor) -> float: ...\n"
        "@overload\ndef to_float(x: None) -> None: ...\n"
        "def to_float(x, scale=1):\n"
        "    if isinstance(x, torch.Tensor):\n"
        "        return x.detach().item()\n"
        "    return x\n"
    )
    root = str(tmp_path)
    assert helper_reads(root, "pkg.util", "as_float") == ((0, "x", "`.item()`"),)
    assert helper_reads(root, "pkg.util", "to_float") == ()
    assert helper_reads(root, "pkg.missing", "to_float") == ()
