""" "Move to device…": put the selected PyTorch code on one chosen device.

`move_to_device(text, selection, device)` returns the edits (``[]`` when nothing in the
selection needs moving, when the file does not import torch, or when it does not parse).
Inside the statements the selection touches (the whole file for ``None``):

- torch factories (``randn``, ``zeros``, ``arange``, ``tensor(<literal>)``, ``*_like``…)
  without ``device=`` get ``device=<var>``: the tensor is born on the device, no copy;
- a module assigned to a name (``model = nn.Linear(…)``, ``model = Net()`` for a local
  ``nn.Module`` subclass, or ``X(…)`` later called like a model) gets ``.to(<var>)``,
  unless the file moves that name somewhere already;
- CPU tensors (``torch.from_numpy(a)``, ``torch.tensor(var)``, ``torch.as_tensor(var)``,
  and names bound to such tensors outside the selection when passed to a model) get
  ``.to(<var>)``;
- ``.cuda(…)`` becomes ``.to(<var>, …)`` and ``.to("cuda[:N]")`` becomes ``.to(<var>)``.

``<var>`` is the file's device variable (a top-level ``device``/``dev``/``*_device`` bound
to ``torch.device(…)`` or a device string, or such a parameter of the enclosing function);
when there is none, one ``device = torch.device(…)`` line goes after the import header.
Tensors that already have a device, or that a chain sends to the host (``.cpu()``,
``.numpy()``, ``.item()``…), and ``torch.device(…)`` calls themselves are left alone.
"""

from __future__ import annotations

import ast
import json
import re

from gpulens.analysis import frameworks as fw
from gpulens.analysis.model import Edit, Span
from gpulens.analysis.refactors._document import Document, fresh_name

# factories that take a shape (torch.tensor and torch.as_tensor take data: COPYING below)
FACTORIES = (fw.TORCH_FACTORIES - fw.TORCH_DATA_FACTORIES) | fw.TORCH_LIKE_FACTORIES
# these copy their argument: a literal is a factory, anything else a CPU tensor to move
COPYING = frozenset({"torch.tensor", "torch.as_tensor"})
FROM_HOST = frozenset({"torch.from_numpy"})
# a method chain holding one of these already places its tensor (or wants it on the host)
PLACED = frozenset({"to", "cuda", "cpu", "numpy", "tolist", "item", "pin_memory", "share_memory_"})
# calls on a name that only a module answers (optimizers also have zero_grad/state_dict)
MODULE_METHODS = frozenset({"parameters", "named_parameters", "eval", "forward", "modules"})
DEVICE_NAME = re.compile(r"^(device|dev|\w+_device)$")
DEVICE_STRING = re.compile(r"^(cuda|cpu|mps|xpu|xla|hip|meta)(:\d+)?$")
CUDA_STRING = re.compile(r"^cuda(:\d+)?$")


def move_to_device(text: str, selection: Span | None, device: str = "cuda") -> list[Edit]:
    doc = Document.parse(text)
    if doc is None or not doc.imports.uses("torch"):
        return []
    first, last = doc.line_range(selection)
    nodes = doc.selected_nodes(first, last)
    variable, preamble = _device_variable(doc, first, device)
    edits: list[Edit] = []
    models = _module_names(doc)
    for node in nodes:
        if isinstance(node, ast.Call):
            edit = _call_edit(doc, node, variable)
            if edit is not None:
                edits.append(edit)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            edit = _module_edit(doc, node, variable)
            if edit is not None:
                edits.append(edit)
    edits.extend(_model_argument_edits(doc, nodes, first, models, variable))
    if edits and preamble:
        edits.append(doc.insert_lines(doc.import_insertion_line(), preamble))
    return edits


# --- the device variable ------------------------------------------------------------------
def _is_device_value(doc: Document, value: ast.AST | None) -> bool:
    match value:
        case ast.Constant(value=str(text)):
            return DEVICE_STRING.match(text) is not None
        case ast.Call(func=func):
            return doc.imports.resolve(func) == "torch.device"
        case ast.IfExp(body=body, orelse=orelse):
            return _is_device_value(doc, body) or _is_device_value(doc, orelse)
    return False


def _assigned_device(doc: Document, body: list[ast.stmt]) -> str | None:
    for stmt in body:
        match stmt:
            case (
                ast.Assign(targets=[ast.Name(id=name)], value=value)
                | ast.AnnAssign(target=ast.Name(id=name), value=value)
            ) if DEVICE_NAME.match(name) and _is_device_value(doc, value):
                return name
    return None


def _device_variable(doc: Document, first: int, device: str) -> tuple[str, list[str]]:
    """The name to move things to, and the preamble lines to insert (none when it exists)."""
    function = doc.enclosing_function(first)
    if function is not None:
        arguments = function.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            if DEVICE_NAME.match(arg.arg):
                return arg.arg, []
        local = _assigned_device(doc, function.body)
        if local is not None:
            return local, []
    name = _assigned_device(doc, doc.tree.body)
    if name is not None:
        return name, []
    return _new_device_variable(doc, device)


def device_preamble(text: str, device: str) -> tuple[str, Edit] | None:
    """A new module-level device variable for ``text``: its name and the edit that defines
    it after the import header (with `import torch` if the header lacks it). None when the
    text does not parse."""
    doc = Document.parse(text)
    if doc is None:
        return None
    name, lines = _new_device_variable(doc, device)
    return name, doc.insert_lines(doc.import_insertion_line(), lines)


def _new_device_variable(doc: Document, device: str) -> tuple[str, list[str]]:
    taken = doc.bound_names()
    name = "device" if "device" not in taken else fresh_name(taken, "torch_device")
    lines: list[str] = []
    torch = doc.header_binds("torch")
    if torch is None:
        # the header binds no `torch` (only `from torch import …`, or a later import)
        lines.append("import torch")
        torch = "torch"
    if device == "cuda":
        value = f'{torch}.device("cuda" if {torch}.cuda.is_available() else "cpu")'
    else:
        value = f"{torch}.device({json.dumps(device)})"
    lines.append(f"{name} = {value}")
    return name, lines


# --- calls ---------------------------------------------------------------------------------
def _chain_methods(doc: Document, node: ast.AST) -> list[str]:
    """The attributes read on the result of ``node`` through method chains and indexing."""
    methods: list[str] = []
    current = node
    while True:
        parent = doc.parent(current)
        if isinstance(parent, ast.Attribute) and parent.value is current:
            methods.append(parent.attr)
        elif not (
            (isinstance(parent, ast.Call) and parent.func is current)
            or (isinstance(parent, ast.Subscript) and parent.value is current)
        ):
            return methods
        current = parent


def _is_placed(doc: Document, node: ast.AST) -> bool:
    return any(method in PLACED for method in _chain_methods(doc, node))


def _is_literal(node: ast.AST) -> bool:
    match node:
        case ast.Constant():
            return True
        case ast.UnaryOp(operand=operand):
            return _is_literal(operand)
        case ast.List(elts=elts) | ast.Tuple(elts=elts):
            return all(_is_literal(e) for e in elts)
    return False


def _has_device(call: ast.Call) -> bool:
    # `**options` may carry a device: not ours to guess
    return any(k.arg in (None, "device") for k in call.keywords)


def _append_device_keyword(doc: Document, call: ast.Call, variable: str) -> Edit | None:
    if len(call.args) == 1 and isinstance(call.args[0], ast.GeneratorExp) and not call.keywords:
        return None  # `f(x for x in y, device=…)` is not valid Python
    arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    if not arguments:
        line, column = doc.end(call)
        return Edit(Span.point(line, column - 1), f"device={variable}")
    line, column = max(doc.end(a) for a in arguments)
    return Edit(Span.point(line, column), f", device={variable}")


def _append_to(doc: Document, node: ast.expr, variable: str) -> Edit:
    return Edit(Span.point(*doc.end(node)), f".to({variable})")


def _call_edit(doc: Document, call: ast.Call, variable: str) -> Edit | None:
    name = doc.imports.resolve(call.func)
    if name == "torch.device":
        return None
    if name in FACTORIES or (name in COPYING and call.args and _is_literal(call.args[0])):
        if _has_device(call) or _is_placed(doc, call):
            return None
        return _append_device_keyword(doc, call, variable)
    if name in FROM_HOST or name in COPYING:
        if _has_device(call) or _is_placed(doc, call) or not call.args:
            return None
        return _append_to(doc, call, variable)
    if not isinstance(call.func, ast.Attribute):
        return None
    receiver = call.func.value
    if doc.imports.resolve(receiver) is not None and call.func.attr == "cuda":
        return None  # `torch.cuda(...)` or a module attribute, not a tensor method
    if call.func.attr == "cuda" and len(call.args) <= 1:
        extra = "".join(f", {doc.segment(k)}" for k in call.keywords)
        begin, end = doc.end(receiver), doc.end(call)
        return Edit(Span(*begin, *end), f".to({variable}{extra})")
    if call.func.attr == "to":
        for argument in [*call.args[:1], *(k.value for k in call.keywords if k.arg == "device")]:
            match argument:
                case ast.Constant(value=str(spelled)) if CUDA_STRING.match(spelled):
                    return Edit(doc.span(argument), variable)
    return None


# --- modules -------------------------------------------------------------------------------
def _module_classes(doc: Document) -> set[str]:
    """Classes of this file that derive, directly or not, from ``torch.nn.Module``."""
    return doc.cached(_find_module_classes)


def _find_module_classes(doc: Document) -> set[str]:
    classes = doc.of_type(ast.ClassDef)
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in found:
                continue
            for base in cls.bases:
                qualified = doc.imports.resolve(base) or ""
                if qualified.startswith("torch.nn.") or (
                    isinstance(base, ast.Name) and base.id in found
                ):
                    found.add(cls.name)
                    changed = True
                    break
    return found


def _moved_names(doc: Document) -> set[str]:
    """Names the file sends somewhere with ``name.to(…)`` / ``name.cuda(…)`` already."""
    return doc.cached(_find_moved_names)


def _find_moved_names(doc: Document) -> set[str]:
    moved: set[str] = set()
    for node in doc.of_type(ast.Call):
        match node:
            case ast.Call(func=ast.Attribute(value=ast.Name(id=name), attr="to" | "cuda")):
                moved.add(name)
    return moved


def _last_model_use(doc: Document) -> dict[str, int]:
    """For each name called like a model (``m(x)``, ``m.parameters()``), its last line."""
    return doc.cached(_find_model_uses)


def _find_model_uses(doc: Document) -> dict[str, int]:
    uses: dict[str, int] = {}
    for node in doc.of_type(ast.Call):
        match node:
            case ast.Call(func=ast.Name(id=name)):
                pass
            case ast.Call(func=ast.Attribute(value=ast.Name(id=name), attr=attr)) if (
                attr in MODULE_METHODS
            ):
                pass
            case _:
                continue
        uses[name] = max(uses.get(name, 0), node.lineno)
    return uses


def _used_like_model(doc: Document, name: str, after: int) -> bool:
    return _last_model_use(doc).get(name, 0) > after


def _local_classes(doc: Document) -> set[str]:
    return {n.name for n in doc.of_type(ast.ClassDef)}


def _is_module_constructor(doc: Document, call: ast.Call, target: str, line: int) -> bool:
    qualified = doc.imports.resolve(call.func)
    last = (qualified or "").rpartition(".")[2]
    if qualified is not None and qualified.startswith("torch."):
        # torch.nn.Parameter is a tensor: `.to()` would return a plain, non-parameter tensor
        return qualified.startswith("torch.nn.") and last[:1].isupper() and last != "Parameter"
    if isinstance(call.func, ast.Name) and call.func.id in _module_classes(doc):
        return True
    local_class = isinstance(call.func, ast.Name) and call.func.id in _local_classes(doc)
    if local_class:
        return False  # a class of this file that is no nn.Module
    spelled = qualified or ""
    if isinstance(call.func, ast.Attribute):
        last = call.func.attr
    elif isinstance(call.func, ast.Name):
        last = call.func.id
    model_like = (
        last[:1].isupper()
        or last == "from_pretrained"
        or spelled.startswith(("torchvision.models.", "timm.create_model"))
    )
    return model_like and _used_like_model(doc, target, line)


def _module_edit(doc: Document, stmt: ast.Assign | ast.AnnAssign, variable: str) -> Edit | None:
    match stmt:
        case (
            ast.Assign(targets=[ast.Name(id=target)], value=ast.Call() as call)
            | ast.AnnAssign(target=ast.Name(id=target), value=ast.Call() as call)
        ):
            pass
        case _:
            return None
    if target in _moved_names(doc):
        return None
    if not _is_module_constructor(doc, call, target, stmt.lineno):
        return None
    return _append_to(doc, call, variable)


def _module_names(doc: Document) -> set[str]:
    names: set[str] = set()
    for node in doc.of_type(ast.Assign):
        match node:
            case ast.Assign(targets=[ast.Name(id=target)], value=ast.Call() as call) if (
                _is_module_constructor(doc, call, target, node.lineno)
            ):
                names.add(target)
    return names


# --- CPU tensors bound outside the selection -------------------------------------------------
def _cpu_tensor_names(doc: Document, first: int) -> set[str]:
    """Names bound, before the selected lines, to tensors made on the host."""
    names: set[str] = set()
    assignments = doc.of_type(ast.Assign)
    for node in sorted(assignments, key=lambda n: (n.lineno, n.col_offset)):
        match node:
            case ast.Assign(targets=[ast.Name(id=target)], value=ast.Call() as call):
                pass
            case _:
                continue
        if node.lineno - 1 >= first:
            break
        qualified = doc.imports.resolve(call.func)
        made_on_host = qualified in FACTORIES | FROM_HOST | COPYING and not _has_device(call)
        if made_on_host:
            names.add(target)
        else:
            names.discard(target)
    return names - _moved_names(doc)


def _model_argument_edits(
    doc: Document, nodes: list[ast.AST], first: int, models: set[str], variable: str
) -> list[Edit]:
    if not models:
        return []
    cpu = _cpu_tensor_names(doc, first)
    edits: list[Edit] = []
    for node in nodes:
        match node:
            case ast.Call(func=ast.Name(id=model), args=args) if model in models:
                edits.extend(
                    _append_to(doc, a, variable)
                    for a in args
                    if isinstance(a, ast.Name) and a.id in cpu
                )
    return edits
