"""Typing inside a function walks that function alone, and every version's findings are
still exactly what a fresh analysis gives.

Each session types a statement into a function body one character at a time (half its
states do not parse), then erases it. After every keystroke the document's analysis is
compared with `analyze()` on the same text, and the functions whose keys were computed
are counted: after the first keystroke in a body, only that body's (and its nested
functions') are. The statements typed include ones that change what other functions read:
a call passing a GPU value to another function, an attribute set on self, an import, a
device chosen, a return another function's loop reads.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gpulens.analysis import DEFAULT_CONFIG, analyze
from gpulens.analysis.function_results import FunctionResultsMixin
from gpulens.analysis.incremental import DocumentAnalyzer
from gpulens.analysis.source import split_lines

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    *sorted((ROOT / "tests/unit/rules/cases").glob("*.py")),
    *sorted((ROOT / "examples").glob("*.py")),
]

TRAINER = """\
import time

import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")


def helper(x):
    return float(x)


def to_device(batch):
    return batch


class Trainer:
    def __init__(self, model, loader):
        self.model = model.to(device)
        self.loader = loader

    def step(self, batch):
        out = self.model(to_device(batch))
        return out.sum()

    def fit(self, epochs):
        for epoch in range(epochs):
            for batch in self.loader:
                loss = self.step(batch)
                if helper(loss) > 0:
                    pass


def evaluate(model, loader):
    total = 0.0
    for batch in loader:
        total += model(batch.to(device)).sum()
    return total


def main():
    trainer = Trainer(torch.nn.Linear(3, 3), DataLoader(range(3), batch_size=1))
    trainer.fit(3)
"""

# statements typed into a body; each one either stays inside it or changes what others read
STATEMENTS = [
    "total = total + 1",
    "print(loss.detach().cpu().numpy(), epoch)",
    "x = torch.randn(3).cuda()",
    "self.cache = batch.to(device)",  # an attribute the other methods read
    "helper(batch.to(device))",  # what `helper` is passed
    "to_device(batch.cuda())",
    "import cupy as cp",  # an import later functions see
    "dev = torch.device('cuda:1')",  # a device choice every key holds
    "return batch.to(device)",  # what `to_device` returns, read by `step`
    "t0 = time.perf_counter()",
]


@contextmanager
def keys_counted() -> Iterator[list[str]]:
    """The names of the functions whose memo keys are computed, as they are computed."""
    counted: list[str] = []
    original = FunctionResultsMixin.memo_key

    def memo_key(self: FunctionResultsMixin, function: ast.AST, *args: object) -> object:
        counted.append(getattr(function, "name", "?"))
        return original(self, function, *args)  # type: ignore[arg-type]

    FunctionResultsMixin.memo_key = memo_key  # type: ignore[assignment,method-assign]
    try:
        yield counted
    finally:
        FunctionResultsMixin.memo_key = original  # type: ignore[method-assign]


def bodies(text: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The defs (methods and nested ones included) whose body starts on a line of its own."""
    return [
        node
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body[0].lineno > node.lineno
    ]


def type_into(text: str, line: int, indent: str, statement: str) -> Iterator[tuple[str, str]]:
    """Types ``statement`` on a new line before ``line`` (0-based), then erases it: the
    text after each keystroke, with what was typed so far."""
    lines = text.splitlines(keepends=True)
    lines.insert(line, indent + "\n")
    typed = ""
    for key in [*statement, *[None] * len(statement)]:
        typed = typed + key if key else typed[:-1]
        lines[line] = indent + typed + "\n"
        yield "".join(lines), typed


def test_typing_in_a_body_walks_only_that_body_and_gives_a_fresh_analysis() -> None:
    analyzer = DocumentAnalyzer()
    analyzer.analyze(TRAINER, DEFAULT_CONFIG)
    analyzer.warm()
    functions = bodies(TRAINER)
    walked_alone = keystrokes = 0
    for number, statement in enumerate(STATEMENTS * 2):
        function = functions[number % len(functions)]
        line = function.body[-1].end_lineno or function.body[-1].lineno
        indent = " " * function.body[0].col_offset
        nested = {n.name for n in ast.walk(function) if isinstance(n, ast.FunctionDef)}
        for keystroke, (text, typed) in enumerate(type_into(TRAINER, line, indent, statement)):
            with keys_counted() as counted:
                found = analyzer.analyze(text, DEFAULT_CONFIG)
            assert found == analyze(text), f"{function.name}: {typed!r}"
            if keystroke:  # the first keystroke in a body walks the file
                keystrokes += 1
                walked_alone += set(counted) <= nested
        analyzer.analyze(TRAINER, DEFAULT_CONFIG)
    # most keystrokes change nothing the other functions read: they walk the body alone
    assert walked_alone > keystrokes // 2, (walked_alone, keystrokes)


def test_a_body_that_changes_what_others_read_gives_a_fresh_analysis() -> None:
    """Whole statements at once: each changes another function's findings or fixes."""
    analyzer = DocumentAnalyzer()
    analyzer.analyze(TRAINER, DEFAULT_CONFIG)
    lines = TRAINER.splitlines(keepends=True)
    for function in bodies(TRAINER):
        line = function.body[-1].end_lineno or function.body[-1].lineno
        indent = " " * function.body[0].col_offset
        for statement in STATEMENTS:
            edited = "".join([*lines[:line], f"{indent}{statement}\n", *lines[line:]])
            assert analyzer.analyze(edited, DEFAULT_CONFIG) == analyze(edited), statement
            assert analyzer.analyze(TRAINER, DEFAULT_CONFIG) == analyze(TRAINER), statement


READS_PER_ITEM = """\
import torch


def noise(samples, timesteps, table):
    table = table.to(samples.device)
    return [lookup(t, table) for t in timesteps.to(samples.device)]


def lookup(t, table):
    found = (table == t).long()
    return found.numel()
"""


def test_a_body_that_starts_reading_what_it_is_handed_gives_a_fresh_analysis() -> None:
    """The callers' findings depend on what a body reads on the host of its parameters:
    typing the read into the body alone must bring the finding at the call."""
    analyzer = DocumentAnalyzer()
    analyzer.analyze(READS_PER_ITEM, DEFAULT_CONFIG)
    edited = READS_PER_ITEM.replace(".long()", ".nonzero()")  # it returns a host int still
    fresh = analyze(edited)
    assert any(f.span.line == 5 for f in fresh.findings)  # the call, per item (0-based)
    assert analyzer.analyze(edited, DEFAULT_CONFIG) == fresh
    assert analyzer.analyze(READS_PER_ITEM, DEFAULT_CONFIG) == analyze(READS_PER_ITEM)


@pytest.mark.parametrize("seed", range(4))
def test_random_typing_sessions_in_the_case_files(seed: int) -> None:
    rng = random.Random(seed)
    for path in FILES[seed::4]:
        text = path.read_text()
        try:
            functions = bodies(text)
        except SyntaxError:
            continue
        if not functions:
            continue
        analyzer = DocumentAnalyzer()
        analyzer.analyze(text, DEFAULT_CONFIG)
        for _ in range(2):
            function = rng.choice(functions)
            line = rng.randint(function.body[0].lineno - 1, function.end_lineno or 0)
            indent = " " * function.body[0].col_offset
            for edited, typed in type_into(text, line, indent, rng.choice(STATEMENTS)):
                assert analyzer.analyze(edited, DEFAULT_CONFIG) == analyze(edited), (
                    f"{path.name}: {function.name}: {typed!r}"
                )


# what a random edit inserts: brackets, strings opened and closed, decorators, new
# top-level lines, indentation, line continuations
INSERTED = ["x", " ", "\n", "(", ")", '"""', "'", "#", "@", "def f():\n", "    ", "\t"]
INSERTED += ["class A:\n", ":", "\\\n", "]", "= 1\n"]


@pytest.mark.parametrize("seed", range(2))
def test_a_text_read_again_from_the_edit_on_parses_as_a_fresh_one(seed: int) -> None:
    from gpulens.analysis.incremental import BlockParser

    rng = random.Random(seed)
    for path in FILES[seed::2]:
        parser = BlockParser()
        text = path.read_text()
        parser.parse(text)
        for _ in range(40):
            at = rng.randint(0, len(text))
            if rng.random() < 0.5:
                text = text[:at] + text[at + rng.randint(1, 5) :]
            else:
                text = text[:at] + rng.choice(INSERTED) + text[at:]
            tree, problem, repaired = parser.parse(text)
            fresh = BlockParser()
            assert (problem, repaired) == fresh.parse(text)[1:], path.name
            dump = ast.dump(tree, include_attributes=True)
            assert dump == ast.dump(fresh.parse(text)[0], include_attributes=True), path.name
            assert parser.lines == fresh.lines
            assert [(first, key) for first, key, _ in parser.order] == [
                (first, key) for first, key, _ in fresh.order
            ]
            assert parser.statement_starts(text) == fresh.statement_starts(text)
            assert parser.lines_of(text) == split_lines(text)
            assert parser.lines_of(text + "\n") is None


DECORATED_HOOK_AFTER_AN_EDIT = """import torch


class A(torch.autograd.Function):
    @staticmethod
    def other(ctx, g):
        g = g * 2
        return g


class B(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, grad):
        largest = logits.abs().max().item()
        return grad / largest
"""


def test_a_decorated_function_walked_alone_is_replayed_where_it_moved() -> None:
    """A body walked alone (typed into, then restored) is remembered from its decorator's
    line, as a whole-file walk remembers it: an edit above it later moves its findings."""
    text = DECORATED_HOOK_AFTER_AN_EDIT
    lines = text.splitlines(keepends=True)

    def typed(line: int, statement: str) -> str:
        return "".join([*lines[:line], f"        {statement}\n", *lines[line:]])

    analyzer = DocumentAnalyzer()
    analyzer.analyze(text, DEFAULT_CONFIG)
    for edited in (typed(14, "total = 1"), text, typed(7, "d")):
        assert analyzer.analyze(edited, DEFAULT_CONFIG) == analyze(edited)
