"""Incremental analysis gives exactly what a fresh analysis gives, version after version."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpulens.analysis import DEFAULT_CONFIG, Config, analyze
from gpulens.analysis.incremental import BlockParser, DocumentAnalyzer, block_starts
from gpulens.analysis.source import split_lines

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    p.read_text()
    for p in [
        *sorted((ROOT / "tests/unit/rules/cases").glob("*.py")),
        ROOT / "examples/train_pitfalls.py",
        ROOT / "examples/train_fixed.py",
    ]
]


def test_blocks_keep_decorators_else_and_brackets_with_their_statement() -> None:
    text = (
        "import torch\n@decorator\n\n@other\ndef f():\n    pass\nif a:\n    pass\nelse:\n"
        "    pass\nx = f(\n    1,\n)\n# comment\ny = 2\n"
    )
    lines = split_lines(text)
    assert [lines[i].strip() for i in block_starts(lines)] == [
        "import torch",
        "@decorator",
        "if a:",
        "x = f(",
        "y = 2",
    ]


def test_an_unchanged_block_is_not_parsed_again() -> None:
    parser = BlockParser()
    first, _, _ = parser.parse("a = 1\ndef f():\n    return 2\n")
    second, _, _ = parser.parse("a = 10\n\ndef f():\n    return 2\n")
    assert first.body[1] is second.body[1]  # the same tree, moved one line down
    assert second.body[1].lineno == 3


def test_a_string_with_lines_at_column_zero_is_one_block() -> None:
    text = 'import torch\ns = """\nx = 1\n  y\n"""\nz = 2\n'
    tree, problem, _ = BlockParser().parse(text)
    assert problem is None
    assert [type(n).__name__ for n in tree.body] == ["Import", "Assign", "Assign"]


def test_a_wrong_split_is_merged_back() -> None:
    text = "x = f(\n1,\n)\ny = 2\n"
    tree, problem, _ = BlockParser().parse(text)
    assert problem is None and [n.lineno for n in tree.body] == [1, 4]


def test_a_syntax_error_costs_only_its_block() -> None:
    text = "import torch\ndef broken(:\n    pass\nx = torch.randn(3, device='cuda')\n"
    tree, problem, _ = BlockParser().parse(text)
    assert problem is not None and problem.line == 1
    assert isinstance(tree.body[0], ast.Import)
    assert tree.body[-1].lineno == 4


def test_cached_function_moves_with_its_findings() -> None:
    source = (ROOT / "tests/unit/rules/cases/gpu001_training_loop.py").read_text()
    analyzer = DocumentAnalyzer()
    analyzer.analyze(source, DEFAULT_CONFIG)
    moved = "# a new first line\n\n" + source
    assert analyzer.analyze(moved, DEFAULT_CONFIG) == analyze(moved)
    assert analyzer.memo.results  # function results were kept and reused


def test_configuration_change_is_honoured() -> None:
    source = SOURCES[0]
    analyzer = DocumentAnalyzer()
    analyzer.analyze(source, DEFAULT_CONFIG)
    quiet = Config(ignore=frozenset({"GPU001"}))
    assert analyzer.analyze(source, quiet) == analyze(source, quiet)


# Versions of one document in which a function's text stays the same while something it
# depends on outside its body changes: each must be walked again, not replayed.
HARD_CODED_IN_A_FUNCTION = """\
import torch


def build():
    model = Net().cuda()
    x = load().cuda()
    y = torch.empty(3, device="cuda")
    return model, x, y
"""
HELPER = """\
import torch

model = torch.nn.Linear(3, 3).cuda()


def helper(x):
    return float(x)


def train(loader):
    for batch in loader:
        r = helper(model(batch))
        if r > 0:
            pass
"""
IMPORT_IN_A_FUNCTION = """\
def g():
    x = cp.zeros(3)
    for i in range(10):
        y = cp.asnumpy(x)
    return y


def f():
    import cupy as cp
    return cp
"""
DOTTED_BINDING = """\
import numpy as np
import torch

cfg.x = torch.randn(3).cuda()


def f():
    for i in range(3):
        cfg.x.item()
"""
DEVICE_BEFORE = """\
import torch
device = torch.device("cuda")


def f():
    y = torch.zeros(3)
    y = y.to(device)
    return y
"""
DEVICE_AFTER = DEVICE_BEFORE.replace('device = torch.device("cuda")\n', "") + (
    'device = torch.device("cuda")\n'
)
TWO_DEVICES = """\
import torch
dev = torch.device("cuda:0")
device = torch.device("cuda:1")


def f():
    return Net().cuda()
"""
TWO_SPELLINGS = """\
import time
import torch as T
import torch

x = torch.randn(64, 64, device="cuda")


def bench():
    begin = time.monotonic()
    out = x @ x
    return time.monotonic() - begin
"""
SHADOWED_BY_A_CLASS = """\
import numpy as np
import torch
x = torch.randn(3).cuda()


class A:
    x = 1

    def f(self):
        for i in range(3):
            x.item()
"""
# what a function of the file returns, read where the key does not name it: through an
# alias, through a function another returns, after the body's own import
ALIASED_HELPER = """\
import torch
model = torch.nn.Linear(3, 3).cuda()


def helper(x):
    return float(x)


def train(loader):
    g = helper
    for batch in loader:
        r = g(model(batch))
        if r > 0:
            pass
"""
RETURNED_HELPER = """\
import torch
model = torch.nn.Linear(3, 3).cuda()


def helper(x):
    return float(x)


def pick():
    return helper


def train(loader):
    fn = pick()
    for batch in loader:
        r = fn(model(batch))
        if r > 0:
            pass
"""
JUDGED_AFTER_AN_IMPORT = """\
def helper():
    return cp.zeros(3)


def f():
    import cupy as cp
    for i in range(10):
        y = helper()
        if y.sum() > 0:
            pass
"""
# bodies GPU005 reads to judge a DataLoader's items: its dataset class's, its collate
# function's
DATASET_CLASS = """\
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda")


class Items(Dataset):
    def __getitem__(self, i):
        return torch.zeros(3)

    def __len__(self):
        return 3


def make():
    model = torch.nn.Linear(3, 3).to(device)
    return model, DataLoader(Items(), batch_size=4)
"""
COLLATE_FUNCTION = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")


def collate(items):
    return torch.stack(items)


def make(dataset):
    model = torch.nn.Linear(3, 3).to(device)
    return model, DataLoader(dataset, batch_size=4, collate_fn=collate)
"""
# the accumulate fix sums in float64 only where the file never names Apple's GPU
ACCUMULATE = """\
import torch


def train(model, loader, device):
    total = 0.0
    for batch in loader:
        loss = model(batch.to(device)).sum()
        total += loss.item()
    return total
"""
# two functions that call each other: what each returns must not depend on which one the
# walk (or a memo key) asks for first
MUTUAL_RECURSION = """\
import torch


def a(x):
    return b(x)


def b(x):
    if x:
        return a(x)
    return torch.ones(3).cuda()


def train(loader):
    for batch in loader:
        y = b(batch)
        z = a(batch)
        if z.sum() > 0:
            pass
"""
# the same method text in two classes: `self.step(...)` calls each class's own step
SAME_METHOD_IN_TWO_CLASSES = """\
import torch


class A:
    def step(self, b):
        return float(b)

    def fit(self, loader, device):
        for b in loader:
            self.step(b.to(device))


class B:
    def step(self, b):
        return b.sum().item()

    def fit(self, loader, device):
        for b in loader:
            self.step(b.to(device))
"""
# a value a replayed body hands on names a def outside it: the def of the current version
# must stand in it, not the one the body was first walked with
HELPER_IN_AN_ATTRIBUTE = """\
import torch


def helper(x):
    return float(x)


class M:
    def __init__(self):
        self.fn = helper

    def fit(self, loader, device):
        for b in loader:
            r = self.fn(b.to(device))
            if r > 0:
                pass
"""
CALLBACK = """\
import torch


def helper(x):
    return float(x)


def run(fn, loader, device):
    for b in loader:
        r = fn(b.to(device))
        if r > 0:
            pass


def main(loader, device):
    run(helper, loader, device)
"""
# a helper that reads on the host the value it is handed, called once per item: the call's
# finding depends on what the helper reads, not only on what it returns (a host int in both)
READS_PER_ITEM = """
import torch


def noise(samples, timesteps, table):
    table = table.to(samples.device)
    return [lookup(t, table) for t in timesteps.to(samples.device)]


def lookup(t, table):
    found = (table == t).nonzero()
    return found.numel()
"""
# what a method of an object of the file's class returns, read at the call on the object
METHOD_OF_AN_OBJECT = """
import torch


def decode(features, steps):
    scorer = Scorer()
    for _ in range(steps):
        score = scorer.best(features.cuda())
        if score > 0:
            pass


class Scorer:
    def best(self, x):
        return x.max()
"""
RECORD_BY_A_CALL = """
import collections
import torch

Stages = collections.namedtuple("Stages", "weights, order")


def combine(y, stages):
    for w in stages.weights:
        if w == 0.0:
            y = y + 1
    return y


def run(y, device):
    stages = Stages(weights=torch.ones(3, device="cuda"), order=[1, 2])
    for _ in range(10):
        y = combine(y, stages)
    return y
"""

BACKWARD_OF_A_FUNCTION = """
import torch


class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(0, 1)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        inside = (x > 0) & (x < 1)
        if inside.sum() > 0:
            grad = grad * inside
        return grad
"""


OUTSIDE_CHANGES = {
    # the case: a syntax error elsewhere hid a finding, and the repair did not bring
    # it back (the fix's preamble needs a file that parses)
    "a syntax error elsewhere, repaired": [
        HARD_CODED_IN_A_FUNCTION + "\nx = (\n",
        HARD_CODED_IN_A_FUNCTION,
    ],
    "a helper that now returns a GPU value": [
        HELPER,
        HELPER.replace("return float(x)", "return x * 2"),
    ],
    "an import made in another function": [
        IMPORT_IN_A_FUNCTION,
        IMPORT_IN_A_FUNCTION.replace("return y", "return y  # edited"),
    ],
    "a dotted name bound at module level": [
        DOTTED_BINDING,
        DOTTED_BINDING.replace("torch.randn(3).cuda()", "np.zeros(3)"),
    ],
    "the device variable moved below the function": [DEVICE_BEFORE, DEVICE_AFTER],
    "two device variables swapped": [
        TWO_DEVICES,
        TWO_DEVICES.replace("dev = ", "DEV = ")
        .replace("device = ", "dev = ")
        .replace("DEV = ", "device = "),
    ],
    # a method sees the module's `x`, not its class's
    "a module name that a class attribute shadows": [
        SHADOWED_BY_A_CLASS,
        SHADOWED_BY_A_CLASS.replace("torch.randn(3).cuda()", "np.zeros(3)"),
    ],
    "a helper called through an alias": [
        ALIASED_HELPER,
        ALIASED_HELPER.replace("return float(x)", "return x * 2"),
    ],
    "a helper another function returns": [
        RETURNED_HELPER,
        RETURNED_HELPER.replace("return float(x)", "return x * 2"),
    ],
    # before the import, both helpers return what nobody knows; after it, only one a GPU array
    "a helper judged after the body's import": [
        JUDGED_AFTER_AN_IMPORT,
        JUDGED_AFTER_AN_IMPORT.replace("return cp.zeros(3)", "return np.zeros(3)"),
    ],
    "a dataset class that now yields CUDA tensors": [
        DATASET_CLASS,
        DATASET_CLASS.replace("torch.zeros(3)", "torch.zeros(3).cuda()"),
    ],
    "a collate function that now moves batches to the GPU": [
        COLLATE_FUNCTION,
        COLLATE_FUNCTION.replace("torch.stack(items)", "torch.stack(items).cuda()"),
    ],
    "Apple's GPU named in a comment": [ACCUMULATE, ACCUMULATE + "\n# also runs on mps\n"],
    "two functions that call each other": [
        MUTUAL_RECURSION,
        MUTUAL_RECURSION.replace("            pass", "            pass  # edited"),
    ],
    "the same method text in two classes": [
        SAME_METHOD_IN_TWO_CLASSES,
        SAME_METHOD_IN_TWO_CLASSES + "\n",
    ],
    "a helper held in an attribute": [
        HELPER_IN_AN_ATTRIBUTE,
        HELPER_IN_AN_ATTRIBUTE.replace("return float(x)", "return x * 2"),
    ],
    "a helper passed as a callback": [
        CALLBACK,
        CALLBACK.replace("return float(x)", "return x * 2"),
    ],
    "a helper that no longer reads its argument on the host": [
        READS_PER_ITEM,
        READS_PER_ITEM.replace(".nonzero()", ".long()"),
        READS_PER_ITEM,
    ],
    "a method of an object that now returns a host number": [
        METHOD_OF_AN_OBJECT,
        METHOD_OF_AN_OBJECT.replace("return x.max()", "return x.max().item()"),
        METHOD_OF_AN_OBJECT,
    ],
    "a record made by a call whose field list changes": [
        RECORD_BY_A_CALL,
        RECORD_BY_A_CALL.replace('"weights, order"', '"order, weights"'),
        RECORD_BY_A_CALL.replace('"weights, order"', '"order"'),
        RECORD_BY_A_CALL,
    ],
    "an autograd function whose base is no longer one": [
        BACKWARD_OF_A_FUNCTION,
        BACKWARD_OF_A_FUNCTION.replace("(torch.autograd.Function)", "(object)"),
        BACKWARD_OF_A_FUNCTION,
    ],
    "two spellings of one import swapped": [
        TWO_SPELLINGS,
        TWO_SPELLINGS.replace(
            "import torch as T\nimport torch\n", "import torch\nimport torch as T\n"
        ),
    ],
}


@pytest.mark.parametrize("versions", OUTSIDE_CHANGES.values(), ids=OUTSIDE_CHANGES.keys())
def test_a_function_is_walked_again_when_what_it_reads_outside_changes(
    versions: list[str],
) -> None:
    analyzer = DocumentAnalyzer()
    assert analyzer.analyze(versions[0], DEFAULT_CONFIG) == analyze(versions[0])
    for text in versions[1:]:
        assert analyzer.analyze(text, DEFAULT_CONFIG) == analyze(text)


def test_what_a_recursion_returns_does_not_depend_on_which_call_comes_first() -> None:
    swapped = MUTUAL_RECURSION.replace(
        "        y = b(batch)\n        z = a(batch)\n",
        "        z = a(batch)\n        y = b(batch)\n",
    )
    assert swapped != MUTUAL_RECURSION
    assert [f.code for f in analyze(swapped).findings] == [
        f.code for f in analyze(MUTUAL_RECURSION).findings
    ]


def test_a_repaired_function_is_not_remembered_by_its_text() -> None:
    # the broken line is blanked to `pass` for the parse: what was walked is not the text
    text = "import torch\n\n\ndef f(x):\n    for b in x:\n        b.cuda().item(\n"
    analyzer = DocumentAnalyzer()
    assert analyzer.analyze(text, DEFAULT_CONFIG) == analyze(text)
    analyzer.warm()
    assert not analyzer.memo.results


def test_the_memo_forgets_function_texts_of_old_versions() -> None:
    analyzer = DocumentAnalyzer()
    for count in range(20):
        analyzer.analyze(f"def f():\n    return {count}\n", DEFAULT_CONFIG)
    assert len(analyzer.memo.names) == 1


def test_a_body_that_calls_a_function_it_defines_is_remembered() -> None:
    # what the nested function returns is judged from the body's own text
    text = (
        "def main(loader, device):\n"
        "    def step(b):\n"
        "        return b.to(device)\n"
        "\n"
        "    for b in loader:\n"
        "        x = step(b)\n"
        "        print(x.sum().item())\n"
    )
    analyzer = DocumentAnalyzer()
    assert analyzer.analyze(text, DEFAULT_CONFIG) == analyze(text)
    analyzer.warm()
    assert any(key[0].startswith("def main") for key in analyzer.memo.results)


def test_a_decorator_lost_to_a_syntax_error_is_not_read_from_the_memo() -> None:
    # the array-module case file as one function's body, walked; a bracket typed at the top;
    # `@numba.njit(` left open: the repair drops the decorator, so `gather_blocks`' loop is
    # a Python loop again (a GPU009 hint), though its def and body are the text the memo
    # held them under
    case = Path(__file__).parent / "rules" / "cases" / "class20_array_module_code.py"
    lines = case.read_text().splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if line.startswith('"""'))
    body = "".join("    " + line if line.strip() else line for line in lines[header:])
    source = "\n\ndef main():\n" + body + "\n\nmain()\n"
    opened = "(" + source
    broken = opened.replace("    @numba.njit\n", "    @numba.njit(\n")
    assert broken != opened
    analyzer = DocumentAnalyzer()
    for version in (source, opened):
        assert analyzer.analyze(version, DEFAULT_CONFIG) == analyze(version)
    fresh = analyze(broken)
    assert any(f.code == "GPU009" and "output[i]" in f.message for f in fresh.findings)
    assert analyzer.analyze(broken, DEFAULT_CONFIG) == fresh
