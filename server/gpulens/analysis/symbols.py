"""Names: import aliases, and the abstract values bound to names in nested scopes."""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterable
from dataclasses import dataclass, replace


class Kind(enum.Enum):
    GPU = "gpu"  # an array on a GPU: CUDA tensor, CuPy array, JAX array, Numba device array
    GPU_MODULE = "gpu_module"  # an nn.Module whose parameters are on a GPU
    MODULE = "module"  # an nn.Module on the CPU
    CPU_TENSOR = "cpu_tensor"  # a torch tensor a factory made on the CPU (GPU003)
    DEVICE = "device"  # a GPU device: torch.device("cuda"), "cuda:1"
    LOADER = "loader"  # a torch DataLoader
    # batches already on the device: a loader a framework prepared (Accelerate, Fabric), a
    # generator of the file that moves what it yields
    DEVICE_LOADER = "device_loader"
    BATCH = "batch"  # what a loader yields: on the host until moved
    # an Accelerator or a Fabric: what its prepare()/setup() returns is on the device
    FRAMEWORK = "framework"
    FUNCTION = "function"  # a function defined in the analysed file
    CLASS = "class"  # a class defined in the analysed file
    INSTANCE = "instance"  # an object of a class defined in the file (origin: the class)
    # a value known to live on the host (a number, a string, a bool): what a function of
    # the file returns when every return is one (`def exists(v): return v is not None`)
    HOST = "host"
    # a mixed-precision GradScaler: its scale lives on the device, `get_scale()` reads it
    SCALER = "scaler"
    # the array library a device-agnostic function picked for its inputs (`xp =
    # cp.get_array_module(x)`, `xp = device.xp`): CuPy where they are on the GPU, so what
    # it computes is on the GPU by a guess only
    ARRAY_MODULE = "array_module"
    # a small whole number the text shows (a parameter's default of 2): a modulus by it
    # selects every other step or so, not one step in a period
    FEW = "few"
    # a CUDA tensor type (`torch.cuda.FloatTensor`, its name as a string, what `.type()` of a
    # GPU tensor returns): `x.type(it)` copies x to the GPU
    GPU_TYPE = "gpu_type"


@dataclass(frozen=True, slots=True)
class Value:
    kind: Kind
    lib: str = "torch"  # torch | cupy | jax | numba
    # the call that made it: the factory of a CPU_TENSOR, the DataLoader(...) of a LOADER,
    # the def of a FUNCTION
    origin: ast.AST | None = None
    # a GPU value known to be one array (not a tuple or dict a model returned); a DEVICE
    # known to be the one `.cuda()` picks (plain "cuda", with or without a CPU fallback); a
    # SCALER made enabled (no `enabled=flag`): its step reads found-inf flags on the host
    exact: bool = False
    # on the GPU by a guess only (a parameter fed to a model the function was handed): what
    # rules say of it is at most a hint
    guessed: bool = False

    @property
    def on_gpu(self) -> bool:
        return self.kind is Kind.GPU

    @property
    def array_on_gpu(self) -> bool:
        return self.kind is Kind.GPU and self.exact


def merge(a: Value | None, b: Value | None) -> Value | None:
    """The value a name holds after two paths join. A GPU value wins: the rules only ask
    "may this be on the GPU", and a name moved to the GPU on one path usually is on both."""
    if a is None or b is None:
        known = a or b
        # a small count on one path only: unknown (the other path may set any number)
        return None if known is not None and known.kind is Kind.FEW else known
    if a.kind is b.kind:
        if a.kind in (Kind.INSTANCE, Kind.CLASS, Kind.FUNCTION) and a.origin is not b.origin:
            return None  # one of two classes (or functions): unknown which
        kept = a if a.exact or not b.exact else b
        guessed = a.guessed and b.guessed  # sure on one path: sure
        return kept if kept.guessed == guessed else replace(kept, guessed=guessed)
    rank = (Kind.GPU, Kind.GPU_MODULE, Kind.DEVICE, Kind.DEVICE_LOADER, Kind.LOADER, Kind.BATCH)
    for kind in rank:
        if a.kind is kind:
            return a
        if b.kind is kind:
            return b
    return a


class Scope:
    """The names of one function (or the module, or a class body) and their values."""

    __slots__ = ("bindings", "kind", "name", "parameters", "parent", "state")

    def __init__(self, kind: str, name: str, parent: Scope | None = None) -> None:
        self.kind = kind  # module | function | class | comprehension
        self.name = name
        self.parent = parent
        self.bindings: dict[str, Value | None] = {}
        # a function's parameters: what its callers hand it, functions included
        self.parameters: frozenset[str] = frozenset()
        # what rules keep per function while it is walked (e.g. an open timing interval)
        self.state: dict[str, object] = {}

    def lookup(self, name: str) -> Value | None:
        scope: Scope | None = self
        attribute = name.startswith("self.")
        while scope is not None:
            if name in scope.bindings:
                return scope.bindings[name]
            # a class body's names are not visible from its methods; the attributes its
            # methods set on self (kept in the class's scope) are
            scope = scope.parent
            while (
                scope is not None
                and scope.kind == "class"
                and self.kind != "class"
                and not attribute
            ):
                scope = scope.parent
        return None

    def handed(self, name: str) -> bool:
        """Whether ``name`` is a parameter of the innermost function around this scope."""
        scope: Scope | None = self
        while scope is not None and scope.kind not in ("function", "module"):
            scope = scope.parent
        return scope is not None and name in scope.parameters

    def enclosing_class(self) -> Scope | None:
        """The scope of the class whose method (or a function nested in one) this is."""
        scope: Scope | None = self
        while scope is not None and scope.kind != "class":
            scope = scope.parent
        return scope

    def bind(self, name: str, value: Value | None) -> None:
        self.bindings[name] = value

    def snapshot(self) -> dict[str, Value | None]:
        return dict(self.bindings)

    def restore_merged(self, *branches: dict[str, Value | None]) -> None:
        names = set().union(*branches)
        self.bindings = {
            name: _merge_all([branch.get(name) for branch in branches]) for name in names
        }

    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


def _merge_all(values: list[Value | None]) -> Value | None:
    result: Value | None = None
    for value in values:
        result = merge(result, value)
    return result


class Imports:
    """Local name -> qualified name, as the file's imports bind them."""

    __slots__ = ("_cache", "aliases", "version")

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        # several rules ask for the name of the same call: resolve it once
        self._cache: dict[tuple[int, bool], str | None] = {}
        self.version = 0  # counts the import statements seen: what depends on them is redone

    def cached_qualname(self, node: ast.expr, through_calls: bool = False) -> str | None:
        key = (id(node), through_calls)
        cache = self._cache
        # not try/except: nearly half the lookups miss, and raising KeyError costs more
        # than looking twice
        if key in cache:
            return cache[key]
        name = cache[key] = self.qualname(node, through_calls=through_calls)
        return name

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        self._cache.clear()
        self.version += 1
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    self.aliases[top] = top
            return
        if node.level or node.module is None:
            return  # relative imports name the user's own modules
        for alias in node.names:
            if alias.name != "*":
                self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def bind_all(self, aliases: Iterable[tuple[str, str]]) -> None:
        """Bind local names as earlier imports did (replaying a memoized function body)."""
        self._cache.clear()
        self.version += 1
        self.aliases.update(aliases)

    def qualname(self, node: ast.expr, *, through_calls: bool = False) -> str | None:
        """`T.nn.functional.relu` -> "torch.nn.functional.relu" when `import torch as T`.

        With ``through_calls``, `cp.cuda.Device().synchronize` names
        "cupy.cuda.Device.synchronize"; without, a call in the chain gives None."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call) and through_calls:
            base = self.qualname(node.func, through_calls=True)
            if base is None:
                return None
            parts.append(base)
            return ".".join(reversed(parts))
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        parts.append(self.aliases[node.id])
        return ".".join(reversed(parts))

    def local_name(self, qualified: str) -> str | None:
        """How the file spells a module: "cp" for "cupy" after `import cupy as cp`."""
        for local, target in self.aliases.items():
            if target == qualified:
                return local
        return None

    def uses(self, top: str) -> bool:
        return any(t == top or t.startswith(top + ".") for t in self.aliases.values())


def dotted_name(node: ast.expr) -> str | None:
    """`self.model` -> "self.model"; None for anything that is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def simple_name(node: ast.expr) -> str:
    """The last name of `f` or `a.b.f`; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    """The `name=` argument of a call, if it has one."""
    return next((k for k in call.keywords if k.arg == name), None)
