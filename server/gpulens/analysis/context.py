"""What a rule sees while the walker stands on a node: values, loops, the statement, and
a way to report."""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from gpulens.analysis.config import Config
from gpulens.analysis.model import Finding, Fix, Severity, Span
from gpulens.analysis.rules.registry import Rule
from gpulens.analysis.source import SourceText
from gpulens.analysis.symbols import Imports, Kind, Scope, Value
from gpulens.analysis.training import backward_losses
from gpulens.analysis.values import Evaluator

_LOADERS = (Kind.LOADER, Kind.DEVICE_LOADER, Kind.BATCH)
# rules whose cost is a wait for the GPU or a kernel launch: none where the data is on the CPU;
# and a `.cuda()` there brings the branch's own results back (a fallback after running out of
# device memory): the code that chose the CPU chose the GPU too
_DEVICE_COSTS = frozenset({"GPU001", "GPU007", "GPU008", "GPU009"})


@dataclass(slots=True)
class Loop:
    """A loop the walker is inside: a `for`, a `while`, a comprehension, or the body of a
    function that the file calls from inside a loop."""

    node: ast.AST
    line: int  # 0-based line of the loop header (or of the call)
    targets: frozenset[str]  # names the loop binds per iteration
    iterates: Value | None  # what it iterates: a loader, a GPU array, …
    # inside a periodic guard (`if step % 100 == 0`) or a branch that leaves the loop
    guarded: bool = False
    # the branch that guards it returns from the function the loop stands for (a helper
    # run per step): one path of each call, whose calls still run per call
    returning: bool = False
    called_from: str | None = None  # "the loop that calls train_step()"
    statement: ast.stmt | None = None  # the loop statement (None for comprehensions)
    # the statement list holding the loop statement, and its index there
    block: tuple[list[ast.stmt], int] | None = None
    # what rules already reported for this loop (one finding per array and loop)
    reported: set[str] = field(default_factory=set)
    label: str | None = None  # how messages name it, when not by its node's type
    # its body holds a loop over a loader: it runs once per epoch, and what it does outside
    # that inner loop is no per-step cost
    per_epoch: bool = False
    # its body takes a training step (`loss.backward()`) or draws a batch (`next(it)`):
    # a training loop, even when the program times it
    trains: bool = False
    # its body runs a backward pass (`loss.backward()`): the tensors it reads are autograd
    # tensors on the model's device, wherever the file does not show that device
    backward: bool = False
    # names the body uses, with their counts (filled when a fix first asks)
    names_used: dict[str, int] | None = None
    # names the body runs a backward pass on (`backward_names`, read when first asked)
    losses: frozenset[str] | None = None
    # its items are whole batches or a few distinct tensors (`for t in (x, mask)`,
    # `for k, v in batch.items()`, `for chunk in x.split(n)`), not the samples of one batch
    whole_items: bool = False
    # it runs once per training step: a framework's step hook, or a function a training
    # step calls (whatever loops of its own it has)
    per_step: bool = False
    # it is a framework's hook, run once per step by the framework's own loop: what it
    # computes is computed on the data the framework hands it, on the model's device
    hook: bool = False
    # it is a module's forward (see `module_forward`): its own reads are per step, but
    # what it hands its helpers is only guessed to be tensors, so their calls are not
    forward: bool = False
    # a key function's items (`sorted(xs, key=f)`, `max`, `min`, `xs.sort`): the call named
    # here compares what the key returns, on the host
    key_of: str | None = None

    @property
    def over_loader(self) -> bool:
        return self.iterates is not None and self.iterates.kind in _LOADERS

    @property
    def per_sample(self) -> bool:
        """Each iteration handles one sample (or one element) of some data."""
        return bool(self.targets) and not self.over_loader and not self.whole_items

    def backward_names(self) -> frozenset[str]:
        """The names the loop (or the step it stands for) runs its backward pass on, read
        once per loop however many reads ask."""
        if self.losses is None:
            self.losses = backward_losses(self.node)
        return self.losses

    def describe(self) -> str:
        # no line numbers: in a notebook they would count from the first cell
        if self.called_from:
            return self.called_from
        if self.label:
            return self.label
        if isinstance(self.node, ast.For | ast.AsyncFor):
            return "the enclosing `for` loop"
        if isinstance(self.node, ast.While):
            return "the enclosing `while` loop"
        return "the comprehension"


class Condition(enum.Enum):
    USES_GPU = "the file feeds a GPU"  # GPU005, GPU011
    REDUCED_PRECISION = "the file computes in half precision"  # GPU010
    MANY_HARD_CODED_DEVICES = "the file hard-codes the device often"  # GPU007


# with no device variable, a file must hard-code the device this often before we suggest one
MANY_HARD_CODED_DEVICES = 3


@dataclass(slots=True)
class ModuleFacts:
    """What the whole file does, for rules that decide at its end (GPU005, GPU010)."""

    uses_gpu: bool = False
    reduced_precision: bool = False
    device_names: set[str] = field(default_factory=set)  # top-level device variables


def borne_out(pending: list[tuple[Condition, Finding]], facts: ModuleFacts) -> list[Finding]:
    """The pending findings whose condition the whole file bears out."""
    hard_coded = sum(c is Condition.MANY_HARD_CODED_DEVICES for c, _ in pending)
    holds = {
        Condition.USES_GPU: facts.uses_gpu,
        Condition.REDUCED_PRECISION: facts.reduced_precision,
        Condition.MANY_HARD_CODED_DEVICES: hard_coded >= MANY_HARD_CODED_DEVICES,
    }
    return [finding for condition, finding in pending if holds[condition]]


class Context:
    __slots__ = (
        "_tree",
        "clock_lines",
        "comprehension_checks",
        "config",
        "cuda_only",
        "deciding_exit",
        "evaluator",
        "facts",
        "file_facts",
        "findings",
        "function",
        "host_only",
        "imports",
        "likely",
        "loops",
        "outside_reads",
        "pending",
        "source",
        "statement",
        "statements",
        "timers",
    )

    def __init__(self, source: SourceText, config: Config, tree: ast.Module) -> None:
        self._tree = tree
        # how often a rule read the whole module (see `module_tree`): a function body whose
        # walk did cannot be replayed from the memo, which keys only what the body reads
        self.outside_reads = 0
        self.source = source
        self.config = config
        self.imports = Imports()
        self.evaluator = Evaluator(self.imports, Scope("module", "<module>"))
        self.facts = ModuleFacts()
        self.findings: list[Finding] = []
        self.loops: list[Loop] = []
        self.statement: ast.stmt | None = None
        # the statement list the current statement belongs to, and its index there
        self.statements: tuple[list[ast.stmt], int] | None = None
        self.function: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        # walking the test that decides whether a loop stops (`if done.all(): break`)
        self.deciding_exit = False
        self.timers = 0  # `with Timer():` blocks the walk is inside
        # branches the walk is inside that run only where the data is on the CPU
        # (`if x.device.type == "cpu":`): nothing there waits for a GPU
        self.host_only = 0
        # branches that run only where CUDA is (`if torch.cuda.is_available():`)
        self.cuda_only = 0
        # walking a function that only guessed calls reach: its warnings are hints
        self.likely = False
        self.clock_lines: dict[int, tuple[int, ...]] = {}  # per function: host clock reads
        # what rules judge of the whole file, once per walk (keyed by what it depends on)
        self.file_facts: dict[tuple[object, ...], object] = {}
        # findings that stand only if the whole file bears them out (plain data, so that a
        # function's results can be cached and replayed)
        self.pending: list[tuple[Condition, Finding]] = []
        # checks of a comprehension's items, run where its names are bound (keyed by the
        # id of the comprehension, alive for the walk): `torch.tensor([h.score for h in hs])`
        self.comprehension_checks: dict[int, Callable[[], object]] = {}

    # -- the whole file -----------------------------------------------------------------

    def module_tree(self) -> ast.Module:
        """The whole module's tree. Rules reach past the current node's function only
        through this and `module_text`, so that the function's result is not memoized."""
        self.outside_reads += 1
        return self._tree

    def module_text(self) -> str:
        """The whole file's text (see `module_tree`)."""
        self.outside_reads += 1
        return self.source.text

    def definitions_read(self, nodes: list[ast.AST]) -> list[ast.AST]:
        """Definitions elsewhere in the file whose bodies a rule reads (a dataset class's
        methods, a collate function): as with `module_tree`, not memoized."""
        self.outside_reads += 1
        return nodes

    # -- values -------------------------------------------------------------------------

    @property
    def scope(self) -> Scope:
        return self.evaluator.scope

    def value(self, node: ast.expr | None) -> Value | None:
        return self.evaluator.value(node)

    def on_gpu(self, node: ast.expr | None) -> bool:
        return self.evaluator.on_gpu(node)

    def qualname(self, node: ast.expr, *, through_calls: bool = False) -> str | None:
        return self.imports.cached_qualname(node, through_calls)

    # -- loops --------------------------------------------------------------------------

    @property
    def loop(self) -> Loop | None:
        return self.loops[-1] if self.loops else None

    @property
    def hot_loop(self) -> Loop | None:
        """The innermost loop when the current node runs on every one of its iterations."""
        loop = self.loop
        return None if loop is None or loop.guarded or loop.per_epoch else loop

    @property
    def returning_loop(self) -> Loop | None:
        """The innermost loop, a function run per call of a loop, when the current node is
        in a branch that returns from it: the calls there run once per call."""
        loop = self.loop
        return loop if loop is not None and loop.returning and not loop.per_epoch else None

    def loop_binding(self, node: ast.AST) -> Loop | None:
        """The innermost hot loop whose per-iteration names ``node`` uses."""
        loop = self.hot_loop
        if loop is None or not loop.targets:
            return None
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        return loop if names & loop.targets else None

    # -- reporting ----------------------------------------------------------------------

    def span(self, node: ast.AST) -> Span:
        return self.source.span(node)

    def text(self, node: ast.AST) -> str:
        return self.source.segment(self.source.span(node))

    def report(
        self,
        rule: Rule,
        node: ast.AST | Span,
        message: str,
        fixes: tuple[Fix, ...] = (),
        severity: Severity | None = None,
    ) -> None:
        """Report a finding at the rule's severity, or at ``severity`` (a hint where the
        analysis is not sure the cost is worth fixing)."""
        if not self.config.enabled(rule.code):
            return
        if self.host_only and rule.code in _DEVICE_COSTS:
            return
        span = node if isinstance(node, Span) else self.source.span(node)
        severity = severity or rule.severity
        if self.likely and severity.blocks:
            severity = Severity.HINT  # what only a guess says is at most a hint
        self.findings.append(Finding(rule.code, severity, message, span, fixes))

    def report_if(self, condition: Condition, findings: list[Finding]) -> None:
        """Keep ``findings`` if ``condition`` holds once the whole file has been walked."""
        if self.host_only:
            findings = [f for f in findings if f.code not in _DEVICE_COSTS]
        self.pending.extend((condition, finding) for finding in findings)

    def finish(self) -> None:
        self.findings.extend(borne_out(self.pending, self.facts))
        self.pending.clear()

    # -- spelling -----------------------------------------------------------------------

    def spelled(self, qualified: str, default: str) -> str | None:
        """How the file refers to a module (`cp` for cupy); None when it is not imported."""
        local = self.imports.local_name(qualified)
        return local if local is not None else (default if self.imports.uses(default) else None)

    def device_variable(self) -> str | None:
        """A name in scope that holds the GPU device the program chose."""
        scope: Scope | None = self.scope
        while scope is not None:
            for name, value in scope.bindings.items():
                if value is not None and value.kind is Kind.DEVICE and "." not in name:
                    return name
            scope = scope.parent
        if self.function is not None:
            for argument in self.function.args.args + self.function.args.kwonlyargs:
                if argument.arg in ("device", "dev"):
                    return argument.arg
        return None
