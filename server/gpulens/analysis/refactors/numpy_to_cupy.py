""" "Port NumPy to CuPy": run the selected NumPy code on the GPU.

`port_numpy_to_cupy(text, selection)` returns the edits (``[]`` when the selection, the whole
file for ``None``, uses no NumPy name CuPy provides, when the file does not import NumPy, or
when it does not parse):

- every ``np.<name>`` (``np.linalg.norm``, ``np.random.rand``, ``np.float32``…) in the
  selected statements whose name is in CuPy's NumPy-compatible API (`_cupy_api.CUPY_NAMES`)
  becomes ``cp.<name>``; ``from numpy import zeros`` users become ``cp.zeros``. Other names
  stay NumPy;
- ``import cupy as cp`` goes after the NumPy import, unless the file imports cupy already
  (its name is reused); NumPy stays imported;
- the host boundary. Arrays a ported statement assigns (and names computed from them, in
  source order) are CuPy arrays from then on, until reassigned. Where NumPy would receive
  one, it gets ``cp.asnumpy(name)`` instead:
  * in a statement marked ``# gpulens: host`` (or ``# cupy: host``), which is not ported,
    every such name it reads;
  * as a direct argument of a call into a host library (NumPy names left unported,
    ``matplotlib``, ``pandas``, ``scipy``, ``sklearn``, ``seaborn``, ``PIL``,
    ``torch.from_numpy``), inside the selection or after it.
  A NumPy call written inside such a host call's arguments is not ported at all.
  Methods (``x.tolist()``, ``x.get()``), ``print(x)`` and attribute reads work on CuPy
  arrays and are left alone.
"""

from __future__ import annotations

import ast
import re

from gpulens.analysis.model import Edit, Span
from gpulens.analysis.refactors._cupy_api import CUPY_NAMES
from gpulens.analysis.refactors._document import Document, end_line

HOST_MARK = re.compile(r"#.*\b(gpulens|cupy):\s*host\b")
HOST_LIBRARIES = ("numpy.", "matplotlib.", "pandas.", "scipy.", "sklearn.", "seaborn.", "PIL.")
HOST_FUNCTIONS = frozenset({"torch.from_numpy"})
# a value computed by these is a host value (a number, a list, a NumPy array)
HOST_RESULTS = frozenset({"asnumpy", "get", "tolist", "item", "len", "int", "float", "bool", "str"})
METADATA = frozenset({"shape", "ndim", "size", "dtype", "itemsize", "nbytes"})


def port_numpy_to_cupy(text: str, selection: Span | None) -> list[Edit]:
    doc = Document.parse(text)
    if doc is None or not doc.imports.uses("numpy"):
        return []
    first, last = doc.line_range(selection)
    host = _host_statements(doc)
    host_nodes = {id(n) for stmt in host for n in ast.walk(stmt)}
    nodes = [n for n in doc.selected_nodes(first, last) if id(n) not in host_nodes]
    ported = _portable_references(doc, nodes)
    if not ported:
        return []
    cupy, import_edit = _cupy_alias(doc)
    edits = [Edit(doc.span(node), f"{cupy}.{name}") for node, name in ported]
    if import_edit is not None:
        edits.append(import_edit)
    ported_ids = {id(node) for node, _ in ported}
    devices = _device_events(doc, first, ported_ids)
    edits.extend(_host_boundary_edits(doc, (first, last), host, devices, cupy))
    return edits


def _host_statements(doc: Document) -> list[ast.stmt]:
    """Statements whose own lines carry a ``# gpulens: host`` mark."""
    marked_lines = {
        n for n, line in enumerate(doc.lines) if "host" in line and HOST_MARK.search(line)
    }
    if not marked_lines:
        return []
    marked: list[ast.stmt] = []
    for node in doc.of_type(ast.stmt):
        if isinstance(node, ast.stmt):
            begin, end = doc.own_lines(node)
            if not marked_lines.intersection(range(begin, end + 1)):
                continue
            if any(HOST_MARK.search(doc.lines[n]) for n in range(begin, end + 1)):
                marked.append(node)
    return marked


def _outermost(doc: Document, node: ast.AST) -> bool:
    parent = doc.parent(node)
    return not (isinstance(parent, ast.Attribute) and parent.value is node)


def _portable_references(
    doc: Document, nodes: list[ast.AST]
) -> list[tuple[ast.Name | ast.Attribute, str]]:
    """``np.<name>`` chains (and from-imported names) that CuPy provides, outermost only."""
    found: list[tuple[ast.Name | ast.Attribute, str]] = []
    for node in nodes:
        if not isinstance(node, ast.Name | ast.Attribute) or not _outermost(doc, node):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            continue
        qualified = doc.imports.resolve(node) or ""
        portable = qualified.startswith("numpy.") and qualified[6:] in CUPY_NAMES
        if portable and not _feeds_host_call(doc, node):
            found.append((node, qualified[6:]))
    return found


def _stays_on_host(doc: Document, call: ast.Call) -> bool:
    """A call into a host library that porting leaves on the host."""
    qualified = doc.imports.resolve(call.func) or ""
    if qualified.startswith("numpy.") and qualified[6:] in CUPY_NAMES:
        return False
    return _is_host_call(doc, call)


def _feeds_host_call(doc: Document, node: ast.AST) -> bool:
    """Whether ``node`` computes an argument of a host call (``plt.plot(np.linspace(…))``)."""
    child, parent = node, doc.parent(node)
    while parent is not None and not isinstance(parent, ast.stmt):
        if (
            isinstance(parent, ast.Call)
            and parent.func is not child
            and _stays_on_host(doc, parent)
        ):
            return True
        child, parent = parent, doc.parent(parent)
    return False


def _cupy_alias(doc: Document) -> tuple[str, Edit | None]:
    """The name cupy is bound to, and the import to add when the file has none."""
    alias = doc.imports.alias_of("cupy")
    if alias is not None:
        return alias, None
    taken = doc.bound_names()
    alias = "cp" if "cp" not in taken else "cupy"
    line = "import cupy as cp" if alias == "cp" else "import cupy"
    anchor = doc.import_insertion_line()
    for stmt in doc.tree.body:
        match stmt:
            case ast.Import(names=names) if any(a.name == "numpy" for a in names):
                # right under the NumPy import it stands beside
                anchor = end_line(stmt) + 1
                break
    return alias, doc.insert_lines(anchor, [line])


# --- which names hold CuPy arrays ------------------------------------------------------------
def _is_device_value(doc: Document, value: ast.AST, ported: set[int], devices: set[str]) -> bool:
    match value:
        case ast.Call(func=ast.Attribute(attr=attr)) | ast.Call(func=ast.Name(id=attr)) if (
            attr in HOST_RESULTS
        ):
            return False
        case ast.Attribute(attr=attr) if attr in METADATA:
            return False
        case ast.Subscript(value=ast.Attribute(attr=attr)) if attr in METADATA:
            return False
        case ast.Call(func=func) if id(func) not in ported and _is_host_call(doc, value):
            return False  # what a host library returns lives on the host
    for node in ast.walk(value):
        if id(node) in ported or (isinstance(node, ast.Name) and node.id in devices):
            return True
        if isinstance(node, ast.Attribute | ast.Name) and _outermost(doc, node):
            qualified = doc.imports.resolve(node) or ""
            if qualified.startswith("cupy."):
                return True
    return False


DeviceEvents = list[tuple[tuple[int, int], str, bool]]


def _device_events(doc: Document, first: int, ported: set[int]) -> DeviceEvents:
    """From the selection on, in source order: (position, name, holds a CuPy array now)."""
    assignments = [
        n
        for n in doc.of_type(ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For)
        if n.lineno - 1 >= first
    ]
    events: DeviceEvents = []
    devices: set[str] = set()
    for node in sorted(assignments, key=lambda n: (n.lineno, n.col_offset)):
        targets: list[ast.expr]
        value: ast.expr | None
        if isinstance(node, ast.For):
            targets, value = [node.target], None  # a loop variable is whatever it iterates
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets, value = [node.target], node.value
        else:
            continue
        on_device = value is not None and _is_device_value(doc, value, ported, devices)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            on_device = on_device or node.target.id in devices
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    (devices.add if on_device else devices.discard)(name.id)
                    events.append((doc.end(node), name.id, on_device))
    return events


def _devices_at(events: DeviceEvents, position: tuple[int, int]) -> set[str]:
    devices: set[str] = set()
    for where, name, on_device in events:
        if where > position:
            break
        (devices.add if on_device else devices.discard)(name)
    return devices


# --- where a CuPy array meets the host --------------------------------------------------------
def _already_converted(doc: Document, name: ast.Name) -> bool:
    parent = doc.parent(name)
    if isinstance(parent, ast.Call) and name in parent.args:
        qualified = doc.imports.resolve(parent.func) or ""
        return qualified == "cupy.asnumpy"
    return False


def _is_host_call(doc: Document, call: ast.Call) -> bool:
    qualified = doc.imports.resolve(call.func) or ""
    return qualified.startswith(HOST_LIBRARIES) or qualified in HOST_FUNCTIONS


def _host_boundary_edits(
    doc: Document, lines: tuple[int, int], host: list[ast.stmt], events: DeviceEvents, cupy: str
) -> list[Edit]:
    first, last = lines
    if not events:
        return []
    wrap: dict[int, ast.Name] = {}
    for stmt in host:
        if stmt.lineno - 1 < first:
            continue
        devices = _devices_at(events, doc.start(stmt))
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.id in devices
                and not _already_converted(doc, node)
            ):
                wrap[id(node)] = node
    ever = {name for _, name, on_device in events if on_device}
    for call in doc.of_type(ast.Call):
        if not isinstance(call, ast.Call) or call.lineno - 1 < first:
            continue
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if not any(isinstance(a, ast.Name) and a.id in ever for a in arguments):
            continue  # the cheap test first: most calls take no CuPy array
        if not _is_host_call(doc, call):
            continue
        qualified = doc.imports.resolve(call.func) or ""
        in_selection = call.lineno - 1 <= last
        if in_selection and qualified.startswith("numpy.") and qualified[6:] in CUPY_NAMES:
            continue  # ported: it takes CuPy arrays now
        devices = _devices_at(events, doc.start(call))
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(argument, ast.Name) and argument.id in devices:
                wrap[id(argument)] = argument
    return [
        Edit(doc.span(node), f"{cupy}.asnumpy({node.id})")
        for node in wrap.values()
        if not _already_converted(doc, node)
    ]
