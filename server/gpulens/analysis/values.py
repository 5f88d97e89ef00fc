"""Abstract evaluation: what an expression holds (a CUDA tensor, a module on the GPU, a
DataLoader, …) given the values bound to names where it stands.

It errs towards "unknown": a rule only fires on values this module is sure of, because a
linter that cries wolf gets switched off.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import replace

from gpulens.analysis import frameworks as fw
from gpulens.analysis.definitions import (
    Definitions,
    Function,
    flat_statements,
    is_property,
    is_static,
    recursive_groups,
)
from gpulens.analysis.symbols import (
    Imports,
    Kind,
    Scope,
    Value,
    dotted_name,
    keyword,
    merge,
    names_in,
    simple_name,
)

GPU_DEVICE = Value(Kind.DEVICE)
GPU_TYPE = Value(Kind.GPU_TYPE)
ARRAY_MODULE = Value(Kind.ARRAY_MODULE, "cupy")
# functions of an array library whose results are host values, or not arrays
_ARRAY_MODULE_HOST = frozenset({"asnumpy", "dtype", "finfo", "iinfo", "get_default_memory_pool"})
Parts = tuple[Value | None, ...] | None
# the parameters a function reads on the host on every call, each as (its position among
# the arguments a call passes, its name, the read: "`.item()`")
HostReads = tuple[tuple[int, str, str], ...]
# the records (NamedTuples, dataclasses) of the file a body builds, each field with what it is
# given: (class, field, value)
Built = tuple[tuple[str, str, Value], ...]
Judgment = tuple[Value | None, Parts, HostReads, Built]


class Evaluator:
    __slots__ = (
        "_cache",
        "_fields",
        "_groups",
        "_judging",
        "_open_groups",
        "_returns",
        "_static",
        "_sure",
        "definitions",
        "fastai",
        "foreign_records",
        "foreign_return",
        "helper_reads",
        "imports",
        "in_forward",
        "judgments_read",
        "loader_classes",
        "module_classes",
        "scope",
        "step_classes",
        "text_of",
    )

    def __init__(
        self, imports: Imports, scope: Scope, definitions: Definitions | None = None
    ) -> None:
        self.imports = imports
        self.scope = scope
        self.definitions = definitions or Definitions()
        # classes defined in the file that subclass nn.Module
        self.module_classes: set[str] = set()
        # classes defined in the file that subclass DataLoader
        self.loader_classes: set[str] = set()
        # classes of the file whose steps a framework runs: class -> "lightning", …
        self.step_classes: dict[str, str] = {}
        # the names the file cannot resolve are fastai's (set by the walker)
        self.fastai = False
        # walking a module's forward, whose inputs are guessed on the GPU (set by the walker)
        self.in_forward = False
        self._cache: dict[int, Value | None] = {}
        # what each function of the file returns (and the parts of the tuple it returns),
        # per state of the imports and classes it is judged by (see `state`)
        self._returns: dict[tuple[int, tuple[int, int, int]], Judgment] = {}
        # the judgments whose every return gives the value judged (no path returns an
        # unknown or a host value): what another module may take as proven
        self._sure: set[tuple[int, tuple[int, int, int]]] = set()
        # what the fields of each record class of the file hold, per state (`record_fields`)
        # (and the bodies judged for it: a body that reads a field read their judgments)
        self._fields: dict[
            tuple[int, tuple[int, int, int]], tuple[dict[str, Value], tuple[Function, ...]]
        ] = {}
        self._static: dict[str, Scope] = {}
        # the judgments asked for outside other judgments, in order: the function and the
        # state it was judged in (a memoized body may read only what its key holds)
        self.judgments_read: list[tuple[Function, tuple[int, int, int]]] = []
        self._judging = 0  # judgments under way
        # the source of a function of the file (set by the walker), to find which of them
        # may reach themselves through others: `recursive_groups`, read once per walk
        self.text_of: Callable[[Function], str] | None = None
        # what a call into another module of the project returns (set by the walker where
        # that module's walk knows it), given the called expression and whether a function
        # is being judged apart from its callers
        self.foreign_return: Callable[[ast.expr, bool], Value | None] | None = None
        # what a called function of another module of the project reads on the host of what
        # it is handed (set by the walker where the project's sources are known): its name
        # and its reads (`host_reads`), given the called expression
        self.helper_reads: Callable[[ast.expr], tuple[str, HostReads] | None] | None = None
        # the record classes the file imports from other modules of the project, with what
        # their modules build each field with (set by the walker): a stand-in class each
        self.foreign_records: dict[str, tuple[ast.ClassDef, dict[str, Value]]] = {}
        self._groups: dict[int, int] | None = None
        self._open_groups: list[int] = []  # the groups of the judgments under way

    def invalidate(self) -> None:
        """Bindings changed: cached values may be stale."""
        if self._cache:
            self._cache.clear()

    def value(self, node: ast.expr | None) -> Value | None:
        if node is None:
            return None
        key = id(node)
        if key in self._cache:
            return self._cache[key]
        result = self._evaluate(node)
        self._cache[key] = result
        return result

    def on_gpu(self, node: ast.expr | None) -> bool:
        value = self.value(node)
        return value is not None and value.kind is Kind.GPU

    # -- devices ------------------------------------------------------------------------

    def device_of(self, node: ast.expr | None) -> bool | None:
        """True for an expression naming a GPU device, False for the CPU, None if unsure."""
        match node:
            case None:
                return None
            case ast.Constant(value=str(text)):
                if fw.GPU_DEVICE_STRING.match(text):
                    return True
                return False if text.startswith("cpu") else None
            case ast.Constant(value=int()):
                return True  # `.to(0)` is cuda:0
            case ast.JoinedStr(values=[ast.Constant(value=str(head)), *_]):
                return True if head.startswith(("cuda", "mps", "xpu")) else None
            case ast.IfExp(body=body, orelse=orelse):
                return True if self.device_of(body) or self.device_of(orelse) else None
            case ast.Call(func=func, args=args):
                name = self.imports.qualname(func)
                if name == "torch.device":
                    return self.device_of(args[0]) if args else None
                if name in ("torch.cuda.current_device", "torch.get_default_device"):
                    return True
                return None
            case ast.Attribute() if self._is_own_device(node):
                return False  # a library object's own device: the CPU unless built otherwise
            case ast.Name() | ast.Attribute():
                value = self.value(node)
                if value is not None:
                    return True if value.kind is Kind.DEVICE else None
                last = node.id if isinstance(node, ast.Name) else node.attr
                return True if fw.DEVICE_NAME.match(last) else None
        return None

    def _is_own_device(self, node: ast.expr) -> bool:
        """`self._device` in a method of a library hook object that keeps its own device
        there (an ignite `Metric`'s): the CPU unless the object was built with another."""
        return (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr == fw.HOST_DEVICE_ATTRIBUTES.get(self.own_framework() or "")
        )

    def own_framework(self) -> str | None:
        """The framework whose hooks the class being walked defines (an ignite `Metric`
        subclass), where the walk is in one of its methods."""
        scope: Scope | None = self.scope
        while scope is not None and scope.kind != "class":
            scope = scope.parent
        return None if scope is None else self.step_classes.get(scope.name)

    def _guessed_device(self, device: ast.expr) -> bool:
        """`x.device` (or a name bound to it) of a value only guessed to be on the GPU (a
        library hook's data): what is made there is only guessed to be on the GPU too."""
        found = self.value(device)
        return found is not None and found.kind is Kind.DEVICE and found.guessed

    def _guessed_target(self, call: ast.Call) -> bool:
        """`x.to(y)`, `x.to(y.device)` where y is only guessed to be on the GPU."""
        target = target_device(call)
        if target is None:
            return False
        other = self.value(target)
        if other is not None and other.kind is Kind.GPU:
            return other.guessed
        return self._guessed_device(target)

    def moves_to_gpu(self, call: ast.Call) -> bool:
        """`x.to(device)`, `x.to("cuda")`, `x.cuda()`, `x.to(device=d, …)`, and the casts that
        copy: `x.type(torch.cuda.FloatTensor)`, `x.type(y.type())`, `x.type_as(y)` of a GPU y."""
        if not isinstance(call.func, ast.Attribute):
            return False
        if call.func.attr == "cuda":
            return True
        if call.func.attr == "type":  # `x.type(torch.cuda.HalfTensor)`, `x.type(y.type())`
            named = keyword(call, "dtype")
            target = call.args[0] if call.args else named.value if named is not None else None
            found = self.value(target) if target is not None else None
            return found is not None and found.kind is Kind.GPU_TYPE
        if call.func.attr == "type_as":  # takes the other tensor's device with its dtype
            other = self.value(call.args[0]) if len(call.args) == 1 else None
            return other is not None and other.kind is Kind.GPU and not other.guessed
        if call.func.attr != "to":
            return False
        device = keyword(call, "device")
        if device is not None:
            return bool(self.device_of(device.value))
        if not call.args:
            return False
        first = call.args[0]
        if self.device_of(first):
            return True
        other = self.value(first)  # `.to(other_tensor)`
        return other is not None and other.kind is Kind.GPU

    # -- evaluation ---------------------------------------------------------------------

    def _evaluate(self, node: ast.expr) -> Value | None:
        match node:
            case ast.Name(id=name):
                found = self.scope.lookup(name)
                if found is not None and not found.exact and fw.HOST_NAME.search(name):
                    return None  # `new_size`, `out_shape`: Python ints, whatever they came from
                return found
            case ast.Attribute():
                return self._attribute(node)
            case ast.Call():
                return self._call(node)
            case ast.BinOp(op=ast.Mod(), left=left) if is_text(left):
                return None  # `"%.4f" % loss`: a Python str (the read is GPU001's)
            case ast.BinOp(left=left, right=right):
                return self._array_of(left, right)
            case ast.Compare(ops=ops) if any(isinstance(op, _IDENTITY) for op in ops):
                return None  # `x is None`, `k in batch`: a Python bool, read on the host
            case ast.Compare(left=left, comparators=comparators):
                return self._array_of(left, *comparators)
            case ast.UnaryOp(op=ast.Not()):
                return None
            case ast.UnaryOp(operand=operand):
                return self._array_of(operand)
            case ast.Subscript(value=base):
                value = self.value(base)
                if value is not None and value.kind is Kind.HOST:
                    return value  # `preds[0]` of a copy on the CPU
                if value is None or value.kind not in (Kind.GPU, Kind.BATCH):
                    return None
                return Value(value.kind, value.lib, exact=False, guessed=value.guessed)
            case ast.IfExp(body=body, orelse=orelse):
                a, b = self.value(body), self.value(orelse)
                if a is not None and a.kind is Kind.GPU:
                    return a
                if b is not None and b.kind is Kind.GPU:
                    return b
                if a is not None and b is not None and a.kind is b.kind is Kind.GPU_TYPE:
                    return a  # `torch.cuda.HalfTensor if half else torch.cuda.FloatTensor`
                devices = [v for v in (a, b) if v is not None and v.kind is Kind.DEVICE]
                if devices:  # `"cuda" if torch.cuda.is_available() else "cpu"`
                    return Value(Kind.DEVICE, exact=all(d.exact for d in devices))
                return None
            case ast.Constant(value=str(text)) if fw.GPU_DEVICE_STRING.match(text):
                return Value(Kind.DEVICE, exact=text == "cuda")
            case ast.Constant(value=str(text)) if fw.CUDA_TENSOR_TYPE.match(text):
                return GPU_TYPE
            case ast.NamedExpr(value=value):
                return self.value(value)
            case ast.Await(value=value):
                return self.value(value)
            case ast.Starred(value=value):
                return self.value(value)
            case ast.Tuple(elts=elements) | ast.List(elts=elements) | ast.Set(elts=elements):
                return self._container_of(elements)
            case ast.Dict(values=elements):
                return self._container_of(elements)
            case (
                ast.ListComp(elt=element)
                | ast.GeneratorExp(elt=element)
                | ast.SetComp(elt=element)
                | ast.DictComp(value=element)
            ):
                # judged without the comprehension's names: what its items are moved to
                if _moves_each_item(element, self):
                    return Value(Kind.GPU, exact=False)
                return self._mapped_over_gpu(node, element) or self._computed_per_item(node)
        return None

    def _mapped_over_gpu(self, node: ast.expr, element: ast.expr) -> Value | None:
        """`[F.normalize(z) for z in views]`: an item expression that is a GPU value when the
        comprehension's one name is an item of a GPU value: a list of GPU values."""
        match node:
            case ast.ListComp(generators=[ast.comprehension(target=ast.Name(id=name), iter=it)]):
                pass
            case _:
                return None
        if not isinstance(element, ast.Call | ast.BinOp | ast.UnaryOp) or not all(
            self._maps_array(part, name) for part in ast.walk(element)
        ):
            return None  # `[x["prompt"] for x in inputs]`, `[t if t else None ...]`: no operation
        item = element_of(self.value(it))
        if item is None or item.kind is not Kind.GPU:
            return None
        return self._gpu_per_item(element, {name: item})

    def _computed_per_item(self, node: ast.expr) -> Value | None:
        """`[loss_func(est[:, p], targets) for p in perms]`: a function the code was handed
        (a parameter), or an array library's, applied to GPU values each time: a list of
        GPU values, as one such call gives one. Judged with the comprehension's names
        unknown, so that a name outside it does not stand in for them; a method or a
        function of another module (`tokenizer.decode(out[i])`) may make anything of them."""
        match node:
            case ast.ListComp(elt=ast.Call(func=func) as element, generators=[generator]):
                pass
            case _:
                return None
        if not self._handed_or_array_function(func):
            return None
        return self._gpu_per_item(element, dict.fromkeys(names_in(generator.target)))

    def _gpu_per_item(self, element: ast.expr, names: dict[str, Value | None]) -> Value | None:
        """A comprehension's item expression, judged in a scope of its own where its names
        hold ``names``: where that is a GPU value, the list holds GPU values (not one array)."""
        saved = self.scope, self._cache
        self.scope = Scope("comprehension", "<comprehension>", self.scope)
        for name, value in names.items():
            self.scope.bind(name, value)
        self._cache = {}
        try:
            item = self.value(element)
        finally:
            self.scope, self._cache = saved
        if item is None or item.kind is not Kind.GPU:
            return None
        return replace(item, exact=False)

    def _handed_or_array_function(self, func: ast.expr) -> bool:
        """A plain name of a function the function was handed (a parameter: nothing in the
        file or its imports says what it is), or of an array library's function."""
        qualified = self.imports.qualname(func)
        if qualified is not None:
            return qualified.split(".", 1)[0] in _ARRAY_LIBRARIES
        return isinstance(func, ast.Name) and self.scope.handed(func.id)

    def _maps_array(self, node: ast.AST, name: str) -> bool:
        """Not a call, or one an array library makes (`F.normalize(z)`) or a method of what
        the item becomes (`torch.relu(o).float()`): a function the file does not show may
        make anything of a GPU value (a message of a prompt, a processor's host output)."""
        if isinstance(node, ast.Subscript):
            # a field of a record (`x["prompt"]`) is what the record holds, no array's part
            return not isinstance(node.slice, ast.Constant) or not isinstance(node.slice.value, str)
        if not isinstance(node, ast.Call):
            return True
        qualified = self.imports.qualname(node.func)
        if qualified is not None:
            return qualified.split(".", 1)[0] in _ARRAY_LIBRARIES
        return isinstance(node.func, ast.Attribute) and name in names_in(node.func.value)

    def _container_of(self, elements: list[ast.expr]) -> Value | None:
        """A tuple, list or dict holding a GPU array: what indexing or unpacking it gives
        may be on the GPU."""
        found = self._gpu_among(elements)
        return None if found is None else replace(found, exact=False)

    def _gpu_among(self, nodes: Iterable[ast.expr]) -> Value | None:
        """The first GPU value among ``nodes`` that is not a guess, else the first guess."""
        guess: Value | None = None
        for node in nodes:
            value = self.value(node)
            if value is not None and value.kind is Kind.GPU:
                if not value.guessed:
                    return value
                guess = guess or value
        return guess

    def _array_of(self, *operands: ast.expr) -> Value | None:
        """Arithmetic and comparisons: on the GPU when an operand is."""
        found = self._gpu_among(operands)
        if found is None:
            return None
        if any(isinstance(o, _LITERAL_CONTAINERS) for o in operands):
            return replace(found, exact=False)  # `[t] * n`, `(x,) + rest`: a list, not an array
        return Value(Kind.GPU, found.lib, exact=True, guessed=found.guessed)

    def _attribute(self, node: ast.Attribute) -> Value | None:
        dotted = dotted_name(node)
        if dotted is not None and "." in dotted:
            bound = self.scope.lookup(dotted)
            if bound is not None:
                origin = bound.origin
                if (
                    bound.kind is Kind.FUNCTION
                    and isinstance(origin, Function)
                    and is_property(origin)
                ):
                    # `self.device` of a `@property`: what the method returns
                    returned = self.returned(origin)
                    return None if returned is None or returned.kind is Kind.HOST else returned
                return bound
        field = self._record_field(node)
        if field is not ...:
            return field if isinstance(field, Value) else None
        qualified = self.imports.qualname(node)
        if qualified in ("torch.float16", "torch.half", "torch.bfloat16"):
            return None
        if qualified is not None and fw.CUDA_TENSOR_TYPE.match(qualified):
            return GPU_TYPE
        if node.attr == "device" and self.is_framework(node.value):
            return GPU_DEVICE
        if node.attr == fw.ARRAY_MODULE_ATTRIBUTE:
            return ARRAY_MODULE  # `device.xp`
        base = self.value(node.value)
        if base is not None and base.kind is Kind.ARRAY_MODULE:
            return base  # `xp.linalg`, `xp.fft`: a submodule of the same library
        if (
            node.attr == "device"
            and base is not None
            and base.kind is Kind.GPU
            and base.guessed
            and not self.in_forward
        ):
            # the device of data only guessed to be on the GPU: what is made there is a guess
            # (in a forward, the device its inputs are on is the module's: read as the device
            # of an input the file does not place, below)
            return Value(Kind.DEVICE, guessed=True)
        if base is None or base.kind is not Kind.GPU or node.attr in fw.HOST_ATTRIBUTES:
            return None
        if node.attr in fw.ARRAY_ATTRIBUTES:
            return Value(Kind.GPU, base.lib, exact=True, guessed=base.guessed)
        if not base.exact and fw.OUTPUT_TENSOR_FIELD.match(node.attr):
            # a field of a model's outputs: `outputs.logits`
            return Value(Kind.GPU, base.lib, guessed=base.guessed)
        return None

    def _call(self, node: ast.Call) -> Value | None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _STR_METHODS and is_text(func.value):
            return None  # `"{:.4f}".format(loss)`: a Python str
        if simple_name(func) in fw.ARRAY_MODULE_FUNCTIONS and node.args:
            return ARRAY_MODULE
        if simple_name(func) in fw.ARRAY_DEVICE_FUNCTIONS and node.args:
            return None  # `get_device(x)`: which device x is on, an object of the host
        if self.fastai_to_host(node) is not None:
            return Value(Kind.HOST)  # `to_detach(learn.pred)`: a copy on the CPU
        if (
            isinstance(func, ast.Attribute)
            and func.attr == fw.FASTAI_PREDICTIONS
            and (self.fastai or self.imports.uses(fw.FASTAI_PACKAGE))
        ):
            return Value(Kind.HOST)  # `learn.get_preds(dl=dl)`: gathered with `to_detach`
        qualified = self.imports.cached_qualname(func)
        if qualified is not None:
            known = self._library_call(node, qualified)
            if known is not ...:
                return known if isinstance(known, Value) else None
        if isinstance(func, ast.Attribute):
            if func.attr in fw.PLACING_METHODS and self.is_framework(func.value):
                parts = self.placed_parts(node)
                return parts[0] if parts is not None and len(parts) == 1 else None
            receiver = self.value(func.value)
            if receiver is not None or func.attr in ("cuda", "to"):
                return self._method(node, func.attr, receiver)
        if isinstance(func, ast.Name):
            if func.id in self.module_classes:
                return Value(Kind.MODULE, origin=node)
            if func.id == "iter":
                return self.value(node.args[0]) if node.args else None
            if func.id == "next":
                return element_of(self.value(node.args[0])) if node.args else None
            if func.id in fw.HOST_BUILTINS and self.scope.lookup(func.id) is None:
                return None
            mapped = node.args[0] if func.id == "map" and node.args else None
            if isinstance(mapped, ast.Lambda) and is_host_expression(mapped.body):
                return None  # `map(lambda t: t.item(), (a, b))`: host values
            if fw.PREDICATE_NAME.match(func.id):
                return None  # `is_conversational(x)`, `has_nan(t)`: a Python bool
            if fw.SIZE_FUNCTION.search(func.id):
                return None  # `find_bs(yb)`, `get_batch_size(batch)`: a Python int
        if self._hands_cpu_default(node):
            # `gather(tensors, self._device)` with `device="cpu"`: what the callee makes on
            # the device it is handed is not known to be on a GPU, whatever its body says
            # of a device parameter it cannot see
            return None
        if self.foreign_return is not None and self.value(func) is None:
            returned = self.foreign_return(func, bool(self._judging))
            if returned is not None:
                return returned
        wrapped = self._wrapped_loader(node)
        if wrapped is not None:
            return wrapped
        if self.moves_batch(node):
            return Value(Kind.GPU, exact=False)  # `features = batch_to_device(features, device)`
        callee = self.value(func)
        if callee is not None:
            if callee.kind in (Kind.GPU_MODULE, Kind.GPU):
                return Value(Kind.GPU, callee.lib, guessed=callee.guessed)
            if callee.kind is Kind.FUNCTION and isinstance(callee.origin, Function):
                returned = self.returned(callee.origin)
                if returned is not None and returned.guessed:
                    # on the GPU by a guess from the body (a gradient norm of parameters it
                    # does not show): handed a GPU array, what it returns is surely there
                    handed = self._gpu_among((*node.args, *(k.value for k in node.keywords)))
                    if handed is not None and not handed.guessed:
                        return Value(Kind.GPU, handed.lib)
                if returned is not None:
                    return None if returned.kind is Kind.HOST else self._as_handed(returned, node)
            if callee.kind is Kind.CLASS:
                name = getattr(callee.origin, "name", "")
                if name in self.loader_classes:
                    return Value(Kind.LOADER, origin=node)
                return Value(Kind.INSTANCE, origin=callee.origin)
        if simple_name(func)[:1].isupper():
            return None  # a class of another file: it builds an object, not an array
        # an unknown function of GPU arrays usually returns GPU arrays (a loss, a metric)
        found = self._gpu_among((*node.args, *(k.value for k in node.keywords)))
        return None if found is None else Value(Kind.GPU, found.lib, guessed=found.guessed)

    def _hands_cpu_default(self, call: ast.Call) -> bool:
        """A call handed a device named so that defaults to the CPU (a `device="cpu"`
        parameter, or what it set)."""
        called = self.value(call.func)
        if called is not None and called.kind in (Kind.GPU_MODULE, Kind.GPU):
            return False  # a model on the GPU computes there, whatever it is handed
        for argument in (*call.args, *(k.value for k in call.keywords)):
            if fw.DEVICE_NAME.match(simple_name(argument)):
                held = self.value(argument)
                if held is not None and held.kind is Kind.HOST:
                    return True
        return False

    def _wrapped_loader(self, node: ast.Call) -> Value | None:
        """`CycleIterator(loader)`, `itertools.cycle(loader)`, `Prefetcher(loader)`: an
        iterator over a loader's batches is that loader, for what its items are."""
        if not node.args or not fw.LOADER_WRAPPER.search(simple_name(node.func)):
            return None
        value = self.value(node.args[0])
        if value is not None and value.kind in (Kind.LOADER, Kind.DEVICE_LOADER):
            return value
        return None

    # -- frameworks that place what they are given -------------------------------------

    def is_framework(self, node: ast.expr) -> bool:
        """An Accelerator or a Fabric: made here, or named so (`self.accelerator`)."""
        value = self.value(node)
        if value is not None:
            return value.kind is Kind.FRAMEWORK
        name = dotted_name(node)
        return (
            name is not None
            and self.imports.qualname(node) is None
            and bool(fw.FRAMEWORK_NAME.match(name.rsplit(".", 1)[-1]))
        )

    def parts_of(self, call: ast.Call) -> list[Value | None] | None:
        """What a call returns for each element of the tuple it returns: a framework's
        prepare(), or a function of the file whose every return is a tuple of one length."""
        placed = self.placed_parts(call)
        if placed is not None:
            return placed
        pair = self._array_pair(call)
        if pair is not None:
            return [pair, pair]
        callee = self.value(call.func)
        if callee is None or not isinstance(callee.origin, Function):
            return None
        parts = self.returned_parts(callee.origin)
        if parts is None:
            return None
        if self.returned(callee.origin) is not None:
            # the body told what it returns: a part it does not tell is unknown, not what
            # its other parts are (`return idx, population`)
            return list(parts)
        # a part the body does not tell (a parameter passed through) is what the call as a
        # whole is judged to give
        whole = element_of(self.value(call))
        return [part if part is not None else whole for part in parts]

    def _array_pair(self, call: ast.Call) -> Value | None:
        """What each of the two arrays `x.topk(k)`, `torch.sort(x)` or `x.max(dim=1)`
        return is, where ``x`` is one GPU array: (values, indices) on its device."""
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in _PAIR_METHODS:
            return None
        name = self.imports.qualname(func) or ""
        if name.startswith("torch."):
            array = call.args[0] if call.args else None
            dims = call.args[1:]
        else:
            array = func.value
            dims = call.args
        if func.attr in _REDUCTIONS and not dims and keyword(call, "dim") is None:
            return None  # `x.max()`: one value, no indices
        value = self.value(array) if array is not None else None
        if value is None or not value.array_on_gpu:
            return None
        return value

    def placed_parts(self, call: ast.Call) -> list[Value | None] | None:
        """What `accelerator.prepare(model, opt, loader)` or `fabric.setup(model, opt)`
        returns for each argument, in order; None when ``call`` is no such call."""
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr not in fw.PLACING_METHODS:
            return None
        if not self.is_framework(func.value):
            return None
        if any(isinstance(a, ast.Starred) for a in call.args):
            return None
        how = fw.PLACING_METHODS[func.attr]
        parts: list[Value | None] = []
        for index, argument in enumerate(call.args):
            role = how
            if how == "module first":
                role = "module" if index == 0 else "other"
            parts.append(self._placed(argument, role))
        return parts

    def _placed(self, argument: ast.expr, role: str) -> Value | None:
        value = self.value(argument)
        if role == "other":
            return None
        if value is not None:
            if value.kind in (Kind.MODULE, Kind.GPU_MODULE):
                return Value(Kind.GPU_MODULE, origin=value.origin)
            if value.kind in (Kind.LOADER, Kind.DEVICE_LOADER):
                return Value(Kind.DEVICE_LOADER)
            return value if value.kind is Kind.GPU else None
        if role == "module":
            return Value(Kind.GPU_MODULE)
        if role == "loader":
            return Value(Kind.DEVICE_LOADER)
        last = (dotted_name(argument) or "").rsplit(".", 1)[-1]
        if fw.LOADER_NAME.search(last):
            return Value(Kind.DEVICE_LOADER)
        if fw.MODEL_NAME.search(last):
            return Value(Kind.GPU_MODULE)
        return None

    # -- what the file's functions return ------------------------------------------------

    def returned(self, function: Function) -> Value | None:
        """What a call of ``function`` returns, judged from its own body with its parameters
        unknown: a GPU array, a module, Kind.HOST when every return is a host value, or None
        when the body does not tell. The same for every caller, so that a caller's result
        depends on the callee's text, not on the order functions are walked in."""
        return self._judged(function)[0]

    def returned_surely(self, function: Function) -> Value | None:
        """`returned`, where every return of the body gives that value (a function that
        returns its input unchanged on one path, or a host copy on another, gives None)."""
        returned = self.returned(function)
        return returned if (id(function), self.state()) in self._sure else None

    def returned_parts(self, function: Function) -> Parts:
        """The parts of the tuple ``function`` returns, where every return is a tuple of one
        length (`return train_loader, val_loader`); None otherwise."""
        return self._judged(function)[1]

    def host_reads(self, function: Function) -> HostReads:
        """The parameters whose values ``function`` reads on the host on every call
        (`return indices[pos].item()` of `indices = (table == t).nonzero()`): a GPU array
        passed there makes each call wait for the GPU."""
        return self._judged(function)[2]

    def records_built(self, function: Function) -> Built:
        """The GPU values ``function`` builds records of the file with, field by field."""
        return self._judged(function)[3]

    def state(self) -> tuple[int, int, int]:
        """What a judgment of a function's returns reads besides the file's definitions: the
        imports and the classes seen so far (these only grow during a walk)."""
        return self.imports.version, len(self.module_classes), len(self.loader_classes)

    def _judged(self, function: Function) -> Judgment:
        state = self.state()
        if not self._judging:
            self.judgments_read.append((function, state))
        # a call back into a recursion being judged returns "unknown": each function of the
        # recursion is judged with the others unknown, whichever of them is asked first
        # (what a caller's walk reads must not depend on the order functions are walked in)
        group = self._group_of(function)
        if group is not None and group in self._open_groups:
            return None, None, self._host_reads_of(function), ()
        key = (id(function), state)
        if key in self._returns:
            return self._returns[key]
        reads = self._host_reads_of(function)
        self._returns[key] = (None, None, reads, ())  # a recursive call returns "unknown"
        saved = self.scope, self._cache
        self.scope = Scope("function", function.name, self._static_scope(function))
        self._cache = {}
        self._judging += 1
        if group is not None:
            self._open_groups.append(group)
        try:
            returned, parts, sure, built = self._judge_returns(function)
            result = (returned, parts, reads, built)
            if sure:
                self._sure.add(key)
        finally:
            if group is not None:
                self._open_groups.pop()
            self._judging -= 1
            self.scope, self._cache = saved
        self._returns[key] = result
        return result

    def _host_reads_of(self, function: Function) -> HostReads:
        """`host_reads`, from the function's own text (the same in every state)."""
        may_read = None
        if self.text_of is not None:
            text = self.text_of(function)
            if not _HOST_READ.search(text):
                return ()  # (most functions read nothing: the text is quicker to search)
            lines = text.splitlines()
            first = function.lineno

            def may_read(statement: ast.stmt) -> bool:
                end = statement.end_lineno or statement.lineno
                return any(
                    _HOST_READ.search(line)
                    for line in lines[statement.lineno - first : end - first + 1]
                )

        positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        method = bool(self.definitions.owner.get(id(function)))
        if method and positional and not is_static(function):
            positional = positional[1:]  # a call passes no `self`
        return host_reads(function, positional, may_read)

    def _group_of(self, function: Function) -> int | None:
        if self._groups is None:
            text_of = self.text_of
            self._groups = {} if text_of is None else recursive_groups(self.definitions, text_of)
        return self._groups.get(id(function))

    def _static_scope(self, function: Function) -> Scope:
        """The names a function sees when judged alone: the file's functions, and for a
        method its class's other methods as `self.name`."""
        cls = self.definitions.owner.get(id(function), "")
        scope = self._static.get(cls)
        if scope is not None:
            return scope
        module = self._static.get("")
        if module is None:
            module = self._static[""] = Scope("module", "<definitions>")
            for name, definition in self.definitions.functions.items():
                module.bind(name, Value(Kind.FUNCTION, origin=definition))
        if not cls:
            return module
        scope = self._static[cls] = Scope("class", cls, module)
        for name, definition in self.definitions.methods_of(cls).items():
            scope.bind(f"self.{name}", Value(Kind.FUNCTION, origin=definition))
        return scope

    def _judge_returns(self, function: Function) -> tuple[Value | None, Parts, bool, Built]:
        """What the function returns, the parts of the tuple it returns, whether every
        return gives that value, and the GPU values it builds records of the file with."""
        returned: Value | None = None
        unknown = False
        hosts_returned = False
        generator = False
        parts: list[Value | None] | None = None
        tuples = True
        hosts: set[str] = set()  # locals holding host values: `lengths = [len(h) for h in hs]`
        records = self.record_classes() if self.definitions.classes else {}
        built: list[tuple[str, str, Value]] = []
        sentinels = False  # a return of a plain number (`return -1`): a path that computed nothing
        for statement in flat_statements(function.body):
            if records:
                built.extend(self._built(statement, records))
            match statement:
                case ast.Assign(targets=targets, value=value) if _is_number(value) and all(
                    self._holds_gpu(target) for target in targets
                ):
                    pass  # `error = -1.` on one branch: the name keeps what the others bound
                case ast.Assign(targets=targets, value=value):
                    for target in targets:
                        self._bind_quietly(target, value)
                        if isinstance(target, ast.Name):
                            host = self.value(value) is None and (
                                is_host_expression(value, hosts) or isinstance(value, _RECORDS)
                            )
                            (hosts.add if host else hosts.discard)(target.id)
                case ast.AnnAssign(target=target, value=value) if value is not None:
                    self._bind_quietly(target, value)
                case ast.AugAssign(target=ast.Name(id=name), value=value):
                    added = self.value(value)
                    if added is not None and added.on_gpu:
                        self.scope.bind(name, added)
                        self.invalidate()
                case ast.For(target=target, iter=iterated):
                    self._bind_names(target, element_of(self.value(iterated)))
                case ast.With(items=items):
                    for item in items:
                        if item.optional_vars is not None:
                            self._bind_quietly(item.optional_vars, item.context_expr)
                case ast.Return(value=value) if _is_number(value):
                    sentinels = True
                    tuples = False
                case ast.Return(value=value):
                    found = self.value(value)
                    if found is not None and found.kind is not Kind.HOST:
                        returned = merge(returned, found)
                    elif found is None and not (
                        is_host_expression(value, hosts) or isinstance(value, _RECORDS)
                    ):
                        unknown = True
                    else:
                        hosts_returned = True
                    if isinstance(value, ast.Tuple) and tuples:
                        values = [self.value(e) for e in value.elts]
                        if parts is None:
                            parts = values
                        elif len(parts) == len(values):
                            parts = [merge(a, b) for a, b in zip(parts, values, strict=True)]
                        else:
                            tuples = False
                    else:
                        tuples = False
                case ast.Expr(value=ast.Yield(value=value) | ast.YieldFrom(value=value)):
                    generator = True
                    found = self.value(value)
                    if found is not None and found.on_gpu:
                        returned = Value(Kind.DEVICE_LOADER, found.lib)
        split = tuple(parts) if tuples and parts is not None else None
        made = tuple(built)
        if sentinels and (returned is None or not returned.on_gpu):
            hosts_returned = True  # a number beside host or unknown returns is a host value
        if generator:
            return returned, None, not unknown and not hosts_returned, made
        if returned is not None:
            return returned, split, not unknown and not hosts_returned, made
        return (None if unknown else Value(Kind.HOST)), split, not unknown, made

    # -- records: the file's NamedTuples and dataclasses -----------------------------------

    def record_classes(self) -> dict[str, ast.ClassDef]:
        """The classes of the file whose objects keep what they are built with, field by
        field: NamedTuples and dataclasses."""
        return {
            name: cls
            for name, cls in self.definitions.classes.items()
            if self._is_record_class(cls)
        }

    def _is_record_class(self, cls: ast.ClassDef) -> bool:
        # (a name defined twice: which class an object is depends on where it was made)
        return is_record(cls) and f"class {cls.name}" not in self.definitions.duplicated

    def _built(self, statement: ast.stmt, records: dict[str, ast.ClassDef]) -> Built:
        """`Hypothesis(score=scores[j], yseq=seq)` in a statement's own expressions: each
        field of a record of the file given a GPU value, with that value."""
        found: list[tuple[str, str, Value]] = []
        for node in _expressions_in(statement):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in records
            ):
                continue
            fields = record_field_names(records[node.func.id])
            given = [
                *zip(fields, node.args, strict=False),
                *((k.arg, k.value) for k in node.keywords if k.arg in fields),
            ]
            for name, argument in given:
                if isinstance(argument, ast.Starred):
                    break
                value = self.value(argument)
                if value is not None and value.on_gpu:
                    found.append((node.func.id, name, value))
        return tuple(found)

    def record_fields(self, cls: ast.ClassDef) -> dict[str, Value]:
        """What each field of a record class of the file may hold: the GPU values the
        file's functions build its objects with, judged from each body (a field given a
        GPU value anywhere may hold one, as an attribute set by any method may)."""
        state = self.state()
        key = (id(cls), state)
        cached = self._fields.get(key)
        if cached is not None:
            found, judged = cached
            if not self._judging:
                # what a body read of the fields depends on those bodies, however many
                # walks ago they were judged: a memo of it must see them read (a builder
                # edited so that its field holds no GPU value any more)
                self.judgments_read.extend((function, state) for function in judged)
            return found
        found = {}
        definitions = self.definitions
        functions = [
            *definitions.functions.values(),
            *(f for methods in definitions.methods.values() for f in methods.values()),
        ]
        call = f"{cls.name}("
        builders = tuple(
            function
            for function in functions
            if self.text_of is None or call in self.text_of(function)
        )
        for function in builders:
            for name, field, value in self.records_built(function):
                if name == cls.name:
                    found[field] = merge(found.get(field), value) or value
        self._fields[key] = (found, builders)
        return found

    def _record_field(self, node: ast.Attribute) -> object:
        """`hyp.score` of an object of a record class of the file, `self.score` in one of
        its methods: what the file builds that field with (None: no GPU value); ``...``
        where the receiver is no such object. Judgments of function bodies do not read
        fields, so that what a body builds records with never depends on which record was
        judged first."""
        if self._judging:
            return ...
        cls: ast.ClassDef | None = None
        receiver = node.value
        if isinstance(receiver, ast.Name) and receiver.id == "self":
            owner = self.scope.enclosing_class()
            cls = self.definitions.classes.get(owner.name) if owner is not None else None
        else:
            held = self.value(receiver)
            if held is not None and held.kind is Kind.INSTANCE:
                cls = held.origin if isinstance(held.origin, ast.ClassDef) else None
        if cls is not None and self.foreign_records.get(cls.name, (None,))[0] is cls:
            return self.foreign_records[cls.name][1].get(node.attr, ...)
        if cls is None or not self._is_record_class(cls):
            return ...
        if node.attr not in record_field_names(cls):
            return ...
        return self.record_fields(cls).get(node.attr)

    def record_of(self, annotation: ast.expr | None, *, items: bool = False) -> Value | None:
        """An object of the record class an annotation names (`hyp: Hypothesis`), or with
        ``items``, that a sequence annotation names for its items (`hyps: List[Hypothesis]`)."""
        if items:
            match annotation:
                case ast.Subscript(value=container, slice=inner) if (
                    simple_name(container) in _SEQUENCES
                ):
                    if isinstance(inner, ast.Tuple) and inner.elts:
                        inner = inner.elts[0]  # `Tuple[Hypothesis, ...]`
                    return self.record_of(inner)
            return None
        if not isinstance(annotation, ast.Name):
            return None
        cls = self.definitions.classes.get(annotation.id)
        if cls is None and annotation.id in self.foreign_records:
            return Value(Kind.INSTANCE, origin=self.foreign_records[annotation.id][0])
        if cls is None or not self._is_record_class(cls):
            return None
        return Value(Kind.INSTANCE, origin=cls)

    def _holds_gpu(self, target: ast.expr) -> bool:
        found = self.value(target) if isinstance(target, ast.Name) else None
        return found is not None and found.on_gpu

    def _bind_quietly(self, target: ast.expr, value: ast.expr) -> None:
        if (
            isinstance(target, ast.Tuple | ast.List)
            and isinstance(value, ast.Tuple | ast.List)
            and len(target.elts) == len(value.elts)
        ):
            for sub_target, sub_value in zip(target.elts, value.elts, strict=True):
                self._bind_quietly(sub_target, sub_value)
            return
        parts = self.parts_of(value) if isinstance(value, ast.Call) else None
        if isinstance(target, ast.Tuple | ast.List) and parts and len(parts) == len(target.elts):
            for sub_target, part in zip(target.elts, parts, strict=True):
                self._bind_names(sub_target, part)
            return
        found = self.value(value)
        if isinstance(target, ast.Name):
            self.scope.bind(target.id, found)
            self.invalidate()
        elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
            self._bind_names(target, element_of(found))

    def _bind_names(self, target: ast.expr, value: Value | None) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.scope.bind(node.id, value)
        self.invalidate()

    def _method(self, node: ast.Call, method: str, receiver: Value | None) -> Value | None:
        if method in fw.MODULE_PARTS_METHODS:
            return None  # whole parameters and submodules, or their names
        if method == "cuda" or (method in _MOVES and self.moves_to_gpu(node)):
            if receiver is not None and receiver.kind in (Kind.MODULE, Kind.GPU_MODULE):
                return Value(Kind.GPU_MODULE, origin=receiver.origin)
            if receiver is None and _builds_module(node.func, self):  # type: ignore[arg-type]
                return Value(Kind.GPU_MODULE)
            if receiver is None and _named_model(node.func.value):  # type: ignore[attr-defined]
                return Value(Kind.GPU_MODULE)  # `model = model.to(self.device)`
            lib = receiver.lib if receiver is not None else "torch"
            exact = receiver is None or receiver.kind in (Kind.CPU_TENSOR, Kind.GPU)
            return Value(
                Kind.GPU,
                lib,
                exact=exact
                and (receiver is None or receiver.exact or receiver.kind is Kind.CPU_TENSOR),
                guessed=self._guessed_target(node),
            )
        if receiver is None:
            return None
        if receiver.kind is Kind.INSTANCE and isinstance(receiver.origin, ast.ClassDef):
            if method == "_replace" and self._is_record_class(receiver.origin):
                return receiver  # a NamedTuple's copy with fields replaced: the same record
            return self._instance_method(node, method, receiver.origin)
        if receiver.kind is Kind.ARRAY_MODULE:
            # `xp.linalg.norm(r)`: an array where the inputs are, on the GPU by a guess
            if method in fw.ARRAY_API_HOST_FUNCTIONS or method in _ARRAY_MODULE_HOST:
                return None
            if method[:1].isupper():
                return None  # a class
            return Value(Kind.GPU, "cupy", exact=True, guessed=True)
        if method == "to":  # a dtype or the CPU
            if receiver.kind is Kind.GPU and self.moves_to_cpu(node):
                return None
            return receiver
        kind = receiver.kind
        if kind is Kind.GPU:
            if method == "type" and not node.args and not node.keywords:
                return None if receiver.guessed else GPU_TYPE  # a string naming a CUDA type
            if method in fw.HOST_RESULT_METHODS or method in fw.EFFECT_METHODS:
                return None
            if method in _MAPPING_VIEWS:
                # no array has `.items()`: a dict or TensorDict of GPU values, whose items
                # are its keys and values, not an array's elements
                return Value(Kind.GPU, receiver.lib, guessed=receiver.guessed)
            return Value(Kind.GPU, receiver.lib, exact=receiver.exact, guessed=receiver.guessed)
        if kind in (Kind.MODULE, Kind.GPU_MODULE):
            if method in ("eval", "train", "half", "float", "bfloat16", "double", "requires_grad_"):
                return receiver
            if method == "cpu":
                return Value(Kind.MODULE, origin=receiver.origin)
            if kind is Kind.GPU_MODULE and method in ("forward", "generate", "encode", "decode"):
                return Value(Kind.GPU)
            return None
        if kind is Kind.BATCH:
            return receiver if method not in fw.HOST_RESULT_METHODS else None
        if kind is Kind.CPU_TENSOR and method in ("float", "half", "double", "long", "int"):
            return receiver
        if kind is Kind.HOST:
            return receiver  # `preds.argmax(1)` of a copy on the CPU: computed there
        return None

    def _as_handed(self, returned: Value, call: ast.Call) -> Value:
        """What a call returns, judged from the callee's body, where the call hands it only
        arrays guessed to be on the GPU: the body's GPU result (made on `x.device` of a
        parameter) is a guess too."""
        if returned.kind is not Kind.GPU or returned.guessed:
            return returned
        handed = self._gpu_among((*call.args, *(k.value for k in call.keywords)))
        return (
            replace(returned, guessed=True) if handed is not None and handed.guessed else returned
        )

    def _instance_method(self, node: ast.Call, method: str, cls: ast.ClassDef) -> Value | None:
        """`self.inference.logits(tokens)` on an object of a class of the file: what the
        method returns, judged from its body; where the body does not tell, what an unknown
        function of the arguments gives (a GPU array where one is passed)."""
        found = self.definitions.method(cls.name, method)
        if found is None:
            return None
        returned = self.returned(found[1])
        if returned is not None:
            return None if returned.kind is Kind.HOST else self._as_handed(returned, node)
        gpu = self._gpu_among((*node.args, *(k.value for k in node.keywords)))
        return None if gpu is None else Value(Kind.GPU, gpu.lib, guessed=gpu.guessed)

    def moves_batch(self, call: ast.Call) -> bool:
        """`batch_to_device(batch, device)`: a function named for moving a batch, given one
        and a device (a name that says so, for `self._device`)."""
        if len(call.args) < 2 or not fw.IN_PLACE_MOVER.search(simple_name(call.func)):
            return False
        device = call.args[1]
        return bool(self.device_of(device)) or simple_name(device).endswith("device")

    def fastai_to_host(self, node: ast.Call) -> ast.expr | None:
        """What fastai's `to_detach(b)` (or a learner's `learn.to_detach(b)`) copies to the
        CPU, as it does unless told `cpu=False`: a function of that name imported from
        fastai, or called in a method of a fastai callback or metric."""
        func = node.func
        if simple_name(func) != fw.FASTAI_TO_HOST:
            return None
        qualified = self.imports.cached_qualname(func) or ""
        if not qualified.startswith(fw.FASTAI_PACKAGE + "."):
            owner = self.scope.enclosing_class()
            if owner is None or self.step_classes.get(owner.name) not in fw.FASTAI_STEPS:
                return None
            if isinstance(func, ast.Name) and self.scope.lookup(func.id) is not None:
                return None  # a function of the file's own
        bound = keyword(node, "b")
        detached = node.args[0] if node.args else (bound.value if bound is not None else None)
        cpu = keyword(node, "cpu")
        flag = node.args[1] if len(node.args) > 1 else (cpu.value if cpu is not None else None)
        if flag is not None and not (isinstance(flag, ast.Constant) and flag.value is True):
            return None  # kept on the device, or a flag the call does not show
        return detached

    def moves_to_cpu(self, node: ast.Call) -> bool:
        """`x.to("cpu")`, `x.to(device="cpu")`: a copy to the host."""
        return self.device_of(target_device(node)) is False

    def own_device(self, node: ast.Call) -> ast.expr | None:
        """`self._device` of `x.to(self._device)` in a library hook object's method (an
        ignite `Metric`'s): the object's device, the CPU unless it was built with another."""
        target = target_device(node)
        return target if target is not None and self._is_own_device(target) else None

    def _library_call(self, node: ast.Call, name: str) -> Value | object | None:
        """The value of a call to a known library function; ``...`` when not one."""
        if (
            name in fw.TORCH_FACTORIES
            or name in fw.TORCH_LIKE_FACTORIES
            or name == "torch.from_numpy"
        ):
            bound = keyword(node, "device")
            device = bound.value if bound is not None else None
            if device is not None:
                if not self.device_of(device):
                    return None
                return Value(Kind.GPU, exact=True, guessed=self._guessed_device(device))
            if name in fw.TORCH_LIKE_FACTORIES and node.args:
                like = self.value(node.args[0])
                if like is None or not like.on_gpu:
                    return None
                return Value(Kind.GPU, exact=True, guessed=like.guessed)
            if any(bound.arg is None for bound in node.keywords):
                return None  # `torch.empty(n, **tkwargs)`: the device may be in the mapping
            return Value(Kind.CPU_TENSOR, origin=node)
        if name == "torch.device":
            if not self.device_of(node):
                first = node.args[0] if node.args else None
                held = self.value(first) if first is not None else None
                # `torch.device(device)` of a `device="cpu"` parameter: not a GPU's name
                return held if held is not None and held.kind is Kind.HOST else None
            first = node.args[0] if node.args else None
            chosen = self.value(first) if first is not None else None
            default = len(node.args) == 1 and chosen is not None and chosen.exact
            return Value(Kind.DEVICE, exact=default)
        if name in fw.DATALOADERS:
            return Value(Kind.LOADER, origin=node)
        if name in fw.GRADIENT_NORMS:
            # the total norm lives where the gradients do: on the model's device, which the
            # parameters show where they are a GPU module's (`model.parameters()`)
            owner = node.args[0] if node.args else None
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute):
                held = self.value(owner.func.value)
                if held is not None and held.kind is Kind.GPU_MODULE:
                    return Value(Kind.GPU, exact=True)
            return Value(Kind.GPU, exact=True, guessed=True)
        if fw.COLLECTOR.match(name):
            # a torchrl collector yields tensordicts on its storing device, which defaults
            # to its device: framework placement, like `accelerator.prepare`
            placed = keyword(node, "storing_device") or keyword(node, "device")
            on_gpu = placed is not None and self.device_of(placed.value)
            return Value(Kind.DEVICE_LOADER) if on_gpu else None
        if name in fw.FRAMEWORK_CLASSES:
            return Value(Kind.FRAMEWORK, name.split(".", 1)[0])
        if fw.is_module_class(name):
            return Value(Kind.MODULE, origin=node)
        if name.rsplit(".", 1)[-1] == "GradScaler" and name.startswith("torch."):
            enabled = keyword(node, "enabled")
            on = enabled is None or (
                isinstance(enabled.value, ast.Constant) and enabled.value.value is True
            )
            return Value(Kind.SCALER, exact=on)
        if (
            name.startswith(("torch.cuda.", "cupy.cuda.", "numba.cuda."))
            and name not in fw.NUMBA_TO_DEVICE
        ):
            # streams, events, devices, memory queries: not arrays
            return (
                None
                if not name.startswith("numba.cuda.device_array")
                else Value(Kind.GPU, "numba", exact=True)
            )
        if name in fw.NUMBA_TO_DEVICE:
            return Value(Kind.GPU, "numba", exact=True)
        if name.startswith(("cupy.", "cupyx.")):
            last = name.rsplit(".", 1)[-1]
            if name in fw.CUPY_HOST_FUNCTIONS or last in fw.ARRAY_API_HOST_FUNCTIONS:
                return None
            if last[:1].isupper() or "._" in name:
                return None  # a class, or a private helper: nothing known of what it returns
            return Value(Kind.GPU, "cupy", exact=True)
        if name.startswith("jax.numpy.") or name in fw.JAX_TO_DEVICE:
            return Value(Kind.GPU, "jax", exact=True)
        if name.startswith("numpy.") and name.count(".") <= 2:
            return self._dispatched(node, name)
        if name.startswith(("numpy.", "math.", "time.", "random.", "builtins.")):
            return None
        if name.rsplit(".", 1)[-1] in fw.DEVICE_PLACING_FUNCTIONS:
            return Value(Kind.GPU, exact=False)  # a batch (a tensor, dict or tuple) moved
        if name in fw.TORCH_HOST_FUNCTIONS:
            return None  # `torch.is_floating_point(t)`: a Python bool, read from metadata
        if name in fw.TORCH_READ_BOOLS:
            return None  # `torch.equal(a, b)`: a Python bool, the read is the call's own
        if name.startswith("torch.") and not fw.is_module_class(name):
            # torch.cat, torch.matmul, F.relu …: on the GPU when an argument is
            guess: Value | None = None
            for argument in (*node.args, *(k.value for k in node.keywords)):
                held = self._held_gpu(argument)
                if held is not None and not held.guessed:
                    return Value(Kind.GPU, exact=True)
                guess = guess or held
            return None if guess is None else Value(Kind.GPU, exact=True, guessed=True)
        return ...

    def _dispatched(self, node: ast.Call, name: str) -> Value | None:
        """`np.linalg.norm(x)` of a CuPy array runs CuPy's own (CuPy arrays implement
        NumPy's `__array_function__`): a CuPy array or scalar on the device, where the
        first argument is one. NumPy's conversions to host arrays refuse CuPy arrays."""
        last = name.rsplit(".", 1)[-1]
        if last in _NUMPY_CONVERSIONS or last in fw.ARRAY_API_HOST_FUNCTIONS or not node.args:
            return None
        if last[:1].isupper() or last in _ARRAY_MODULE_HOST:
            return None
        first = self.value(node.args[0])
        if first is None or first.kind is not Kind.GPU or first.lib != "cupy":
            return None
        return Value(Kind.GPU, "cupy", exact=True, guessed=first.guessed)

    def _held_gpu(self, node: ast.expr) -> Value | None:
        """The GPU value an argument holds (itself, or in a list or tuple written out)."""
        if isinstance(node, ast.List | ast.Tuple):
            return self._gpu_among(node.elts)
        if isinstance(node, ast.ListComp | ast.GeneratorExp):
            # judged where the comprehension is walked; a handed function's results here
            return self._computed_per_item(node)
        value = self.value(node)
        return value if value is not None and value.kind is Kind.GPU else None


def host_reads(
    function: Function,
    positional: list[str],
    may_read: Callable[[ast.stmt], bool] | None = None,
    *,
    converted: bool = False,
) -> HostReads:
    """The parameters of ``function`` (``positional``: those a call passes by position, in
    order) whose values reach, through its unconditional statements, a read on the host:
    `.item()`, `.tolist()`, `.cpu()`, `.numpy()`, `.nonzero()` and the like, `float()`,
    `int()`, `bool()`. Judged from the text alone: a parameter the caller fills with a GPU
    array makes each call wait. ``may_read``: False for a statement whose text holds no such
    read (a quicker test than its tree; the result is the same without it). ``converted``:
    only reads of the value itself, converted (`x.item()`, `x.detach().cpu().numpy()`,
    `float(x)`), not of what is computed from it (`bool(mask.any())`, `x[i].item()`,
    `np.max([t.shape for t in x]).tolist()`): a helper that hands back what it is given as
    host values."""
    statements = _unconditional(function.body)
    reading = [may_read is None or may_read(statement) for statement in statements]
    if True not in reading:
        return ()
    parameters = [*positional, *(a.arg for a in function.args.kwonlyargs)]
    # each local name, and the parameters its value was computed from
    sources: dict[str, frozenset[str]] = {p: frozenset((p,)) for p in parameters}
    found: dict[str, str] = {}
    last = len(reading) - 1 - reading[::-1].index(True)
    for statement, reads in zip(statements[: last + 1], reading, strict=False):
        nodes = _expressions_in(statement) if reads else []
        for node in nodes + (_tensor_branch_reads(statement, sources) if reads else []):
            match node:
                case ast.Call(func=ast.Attribute(attr=attr, value=receiver), args=[]) if (
                    attr in fw.SYNC_METHODS or attr in fw.SIZE_FROM_VALUES_METHODS
                ):
                    read, held = f"`.{attr}()`", receiver
                case ast.Call(func=ast.Name(id="float" | "int" | "bool" as builtin), args=[held]):
                    read = f"`{builtin}()`"
                case _:
                    continue
            if is_host_expression(held):
                continue
            if converted:
                root = _chain_root(held)
                names = {root} if root is not None else set()
            else:
                names = names_in(held)
            for name in names:
                for parameter in sources.get(name, ()):
                    found.setdefault(parameter, read)
        match statement:
            case ast.Assign(targets=targets, value=value):
                reached = (
                    frozenset()
                    if is_host_expression(value)
                    else frozenset(sources.get(_chain_root(value) or "", ()))
                    if converted
                    else frozenset().union(*(sources.get(n, ()) for n in names_in(value)))
                )
                for target in targets:
                    for name in names_in(target):
                        sources[name] = reached
    index = {name: position for position, name in enumerate(positional)}
    return tuple((index.get(parameter, -1), parameter, read) for parameter, read in found.items())


def _chain_root(node: ast.expr) -> str | None:
    """`x` of `x`, `x.data`, `x.detach().cpu()`: the name whose value ``node`` is, only
    converted; None where anything computes on it (`x.any()`, `x[mask]`, `np.max(x)`)."""
    while True:
        match node:
            case ast.Name(id=name):
                return name
            case ast.Attribute(value=inner, attr="data"):
                node = inner
            case ast.Call(func=ast.Attribute(value=inner, attr=attr), args=[], keywords=[]) if (
                attr in _CONVERSIONS
            ):
                node = inner
            case _:
                return None


# methods that hand back the same values, on the same device or copied to the host
_CONVERSIONS = frozenset(
    {"detach", "cpu", "numpy", "clone", "contiguous", "float", "double", "squeeze", "flatten"}
)


def _tensor_branch_reads(
    statement: ast.stmt, sources: Mapping[str, frozenset[str]]
) -> list[ast.AST]:
    """The nodes of `if isinstance(x, torch.Tensor): return x.cpu().numpy()` (a converter
    that takes anything) that read ``x`` itself: the branch a tensor passed as ``x`` takes
    on every call. Reads of other names there depend on what x is, not on the call."""
    match statement:
        case ast.If(
            test=ast.Call(func=ast.Name(id="isinstance"), args=[ast.Name(id=name), kind])
        ) if name in sources and _names_tensor(kind):
            pass
        case _:
            return []
    return [
        node
        for inner in _unconditional(statement.body)
        for node in _expressions_in(inner)
        if _reads_only(node, name)
    ]


def _reads_only(node: ast.AST, name: str) -> bool:
    match node:
        case ast.Call(func=ast.Attribute(value=held)) | ast.Call(func=ast.Name(), args=[held]):
            return names_in(held) <= {name}
    return False


def _names_tensor(kind: ast.expr) -> bool:
    """`torch.Tensor`, `Tensor`, or a tuple holding one of them."""
    match kind:
        case ast.Attribute(value=ast.Name(id="torch"), attr="Tensor") | ast.Name(id="Tensor"):
            return True
        case ast.Tuple(elts=elements):
            return any(_names_tensor(e) for e in elements)
    return False


# what `host_reads` looks for, in a function's text
_HOST_READ = re.compile(
    r"\.(item|tolist|cpu|numpy|nonzero|argwhere|masked_select|unique)\s*\("
    r"|(?<![.\w])(float|int|bool)\s*\("
)


def _unconditional(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a body that run on every call that gets past them: its own, and
    those of `with` blocks, up to the first that may return or raise."""
    found: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, ast.With | ast.AsyncWith):
            found.extend(_unconditional(statement.body))
            continue
        found.append(statement)
        if isinstance(statement, ast.Return | ast.Raise):
            break
    return found


def _expressions_in(statement: ast.stmt) -> list[ast.AST]:
    """The nodes of a statement's own expressions: not those of the blocks it holds, nor
    of functions, lambdas and classes it defines."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return []
    roots: list[ast.AST] = [
        child
        for field_name, child in ast.iter_fields(statement)
        if field_name not in ("body", "orelse", "finalbody", "handlers", "cases")
        for child in (child if isinstance(child, list) else [child])
        if isinstance(child, ast.AST)
    ]
    found: list[ast.AST] = []
    while roots:
        node = roots.pop()
        if isinstance(node, ast.Lambda):
            continue
        found.append(node)
        roots.extend(ast.iter_child_nodes(node))
    return found


def _moves_each_item(element: ast.expr, evaluator: Evaluator) -> bool:
    """`v.to(device)`, `t.cuda() if torch.is_tensor(t) else t`: a comprehension's item
    expression that puts each item on the GPU."""
    match element:
        case ast.Call(func=ast.Attribute()):
            return evaluator.moves_to_gpu(element)
        case ast.IfExp(body=body, orelse=orelse):
            return _moves_each_item(body, evaluator) or _moves_each_item(orelse, evaluator)
    return False


def _builds_module(func: ast.Attribute, evaluator: Evaluator) -> bool:
    """`Net().cuda()`, `nn.Linear(4, 4).to(device)`: the receiver constructs a module."""
    receiver = func.value
    if not isinstance(receiver, ast.Call):
        return False
    value = evaluator.value(receiver)
    if value is not None and value.kind is Kind.MODULE:
        return True
    name = simple_name(receiver.func)
    return name[:1].isupper()


def _named_model(node: ast.expr) -> bool:
    """A name that by convention holds a model (`model`, `self.net`): what moving it gives
    is a module on the device, not an array."""
    name = dotted_name(node)
    return name is not None and bool(fw.MODEL_NAME.search(name.rsplit(".", 1)[-1]))


# the libraries whose functions map an array to an array (`_mapped_over_gpu`)
_ARRAY_LIBRARIES = frozenset({"torch", "cupy", "cupyx", "numpy", "jax"})
_MAPPING_VIEWS = frozenset({"items", "keys", "values"})
# methods that copy their receiver to the GPU when their argument names it (`moves_to_gpu`)
_MOVES = frozenset({"to", "type", "type_as"})
# NumPy functions that make a host array of their input (a CuPy array raises there)
_NUMPY_CONVERSIONS = frozenset(
    {"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "frombuffer"}
)
# methods of an array that return (values, indices); the reductions only when given a dim
_REDUCTIONS = frozenset({"max", "min", "median"})
_PAIR_METHODS = _REDUCTIONS | {"topk", "sort", "kthvalue", "mode"}


def element_of(value: Value | None) -> Value | None:
    """What iterating or unpacking a value gives: the rows of an array, the parts of a
    model's outputs or of a batch."""
    if value is None:
        return None
    if value.kind in (Kind.LOADER, Kind.BATCH):
        return Value(Kind.BATCH)
    if value.kind in (Kind.GPU, Kind.DEVICE_LOADER):
        return Value(Kind.GPU, value.lib, exact=False, guessed=value.guessed)
    return None


def is_record(cls: ast.ClassDef) -> bool:
    """A NamedTuple or a dataclass: its objects hold what they are built with, as fields."""
    if any(simple_name(base) == "NamedTuple" for base in cls.bases):
        return True
    return any(
        simple_name(d.func if isinstance(d, ast.Call) else d) == "dataclass"
        for d in cls.decorator_list
    )


def record_field_names(cls: ast.ClassDef) -> list[str]:
    """The fields of a record class, in order: its annotated names."""
    return [
        s.target.id
        for s in cls.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.simple
    ]


# annotations of sequences whose item type is their (first) argument
_SEQUENCES = frozenset({"List", "list", "Sequence", "Iterable", "Iterator", "Tuple", "tuple"})


def is_text(node: ast.expr) -> bool:
    """A Python str as the expression's text shows: a literal, an f-string, their sums and
    repeats (`"%11s" * 2 + "%11.4g"`), and what formatting them gives."""
    match node:
        case ast.Constant(value=str()) | ast.JoinedStr():
            return True
        case ast.BinOp(op=ast.Add() | ast.Mult(), left=left, right=right):
            return is_text(left) or is_text(right)
        case ast.BinOp(op=ast.Mod(), left=left):
            return is_text(left)
        case ast.Call(func=ast.Attribute(attr=attr, value=receiver)) if attr in _STR_METHODS:
            return is_text(receiver)
    return False


def formatted_operands(node: ast.expr) -> list[ast.expr]:
    """The values a str formatting formats: `"%d %f" % (step, loss)` -> [step, loss] (a
    `*rest` among them stands for its items), `"{}".format(loss, k=v)` -> [loss, v]; [] for
    any other expression."""
    match node:
        case ast.BinOp(op=ast.Mod(), left=left, right=ast.Tuple(elts=elements)) if is_text(left):
            return list(elements)
        case ast.BinOp(op=ast.Mod(), left=left, right=right) if is_text(left):
            return [right]
        case ast.Call(func=ast.Attribute(attr="format", value=receiver), args=args) if is_text(
            receiver
        ):
            return [*args, *(k.value for k in node.keywords)]
    return []


# str methods whose result is a str again (what is formatted from a str literal stays text)
_STR_METHODS = frozenset({"format", "join", "strip", "ljust", "rjust", "center", "replace"})


def _is_number(node: ast.expr | None) -> bool:
    """A plain number, signed or not (`-1.`, `0`): what a function returns or binds on a
    path that computed nothing (an error code, an empty input)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    )


def is_host_expression(node: ast.expr | None, hosts: Container[str] = ()) -> bool:
    """An expression whose value is on the host whatever its names hold: identity and
    membership tests, metadata (`x.shape[0]`, `x.dtype`), `len()`, `isinstance()`, host
    reads (`t.item()`), names in ``hosts`` (locals known to hold host values), and
    arithmetic or logic of these."""
    match node:
        case None | ast.Constant() | ast.JoinedStr():
            return True
        case ast.Name(id=name):
            return name in hosts
        case ast.Compare(ops=ops) if any(isinstance(op, _IDENTITY) for op in ops):
            return True
        case ast.Compare(left=left, comparators=comparators):
            return all(is_host_expression(e, hosts) for e in (left, *comparators))
        case ast.UnaryOp(op=ast.Not()):
            return True  # a Python bool, whatever it tested
        case ast.UnaryOp(operand=operand):
            return is_host_expression(operand, hosts)
        case ast.BoolOp(values=values) | ast.Tuple(elts=values) | ast.List(elts=values):
            return all(is_host_expression(v, hosts) for v in values)
        case ast.BinOp(left=left, right=right):
            return is_host_expression(left, hosts) and is_host_expression(right, hosts)
        case ast.IfExp(body=body, orelse=orelse):
            return is_host_expression(body, hosts) and is_host_expression(orelse, hosts)
        case ast.Attribute(attr=attr):
            return attr in fw.HOST_ATTRIBUTES
        case ast.Subscript(value=value):
            return is_host_expression(value, hosts)
        case ast.Call(func=ast.Name(id=name)):
            return name in fw.HOST_BUILTINS
        case ast.Call(func=ast.Attribute(attr=attr)):
            return attr in fw.HOST_RESULT_METHODS
    return False


_LITERAL_CONTAINERS = (ast.List, ast.Tuple, ast.ListComp)
# a dict, list or set the function builds with no GPU value in sight: a record of host
# values (what it returns is judged, not guessed from its arguments)
_RECORDS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
# comparisons that test identity or membership: their result is a Python bool
_IDENTITY = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def target_device(call: ast.Call) -> ast.expr | None:
    """The device a `.to(...)` call names (`x.to(d)`, `x.to(device=d)`), else None."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr != "to":
        return None
    device = keyword(call, "device")
    return device.value if device is not None else call.args[0] if call.args else None
