"""The layers of ARCHITECTURE.md, held against the code: every import of every module of
`server/gpulens` (those inside functions too) is read from its source, and each layer may
import only what the rules below let it.

The pure cores (analysis, device, profiler) know nothing of LSP, Jupyter, IPython or the
command line; the edges (lsp, jupyter, magic, commands, cli) translate between the cores and
the outside world.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "gpulens"

CORES = ("analysis", "device", "profiler", "safe_path")
# what each layer may import of gpulens: its own modules, and these
ALLOWED: dict[str, set[str]] = {
    "analysis": set(),
    "device": {"safe_path"},
    # the source text and its encoding, to show profiled lines; findings and fixes, to merge
    # a profile into them and to measure a fix
    "profiler": {"analysis"},
    "safe_path": set(),
    "lsp": {"gpulens", "analysis", "device", "profiler"},
    "jupyter": {"analysis", "device", "profiler", "lsp.schema"},  # the settings schema: no pygls
    "magic": {"device", "profiler"},
    "commands": {"analysis", "device", "profiler", "lsp.server"},  # `serve` starts it
    "cli": {"gpulens", "commands"},
    "__main__": {"cli"},
    "gpulens": {"magic"},  # `%load_ext gpulens`, imported when IPython asks
}
# the outside world, which only the edges may import
EDGE_LIBRARIES = {"pygls", "lsprotocol", "cattrs", "jupyter_server", "tornado", "IPython"}


def layer_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return "gpulens" if parts == ("__init__",) else parts[0]


def imports_of(path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module name) of each import in the module at ``path`` (its ``text``,
    read from the file when not given), wherever in the module it stands."""
    package = ["gpulens", *path.relative_to(PACKAGE).parent.parts]
    source = path.read_text(encoding="utf-8") if text is None else text
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *filter(None, [node.module])])
            found.append((node.lineno, module))
    return sorted(found)


def is_allowed(layer: str, module: str) -> bool:
    if not module.startswith("gpulens"):
        return layer not in CORES or module.partition(".")[0] not in EDGE_LIBRARIES
    target = module.removeprefix("gpulens").removeprefix(".") or "gpulens"
    if target.partition(".")[0] == layer and layer != "gpulens":
        return True
    return any(target == rule or target.startswith(f"{rule}.") for rule in ALLOWED[layer])


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "labextension" not in p.parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_module_imports_only_what_its_layer_may(path: Path) -> None:
    layer = layer_of(path)
    assert layer in ALLOWED, f"{layer} is a layer ARCHITECTURE.md and this test do not know"
    wrong = [f"line {n}: {m}" for n, m in imports_of(path) if not is_allowed(layer, m)]
    assert not wrong, f"{layer} may not import these (see ARCHITECTURE.md): {wrong}"


def test_the_rules_see_imports_inside_functions_and_relative_ones() -> None:
    text = "def f():\n    from gpulens.lsp import server\nfrom ..lsp import wire\nimport pygls\n"
    found = imports_of(PACKAGE / "analysis" / "any.py", text)
    assert found == [(2, "gpulens.lsp"), (3, "gpulens.lsp"), (4, "pygls")]
    assert not any(is_allowed("analysis", module) for _, module in found)
    assert all(is_allowed("lsp", module) for _, module in found)
