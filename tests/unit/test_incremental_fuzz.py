"""The incremental analysis against a fresh one, after every edit of random edit sessions.

The edits are the ones that break a function memo: syntax errors typed and taken back,
unclosed brackets and strings, indentation errors, imports and the device variable deleted,
lines moved, names renamed. After each one, `DocumentAnalyzer.analyze` must give exactly the
findings and fixes of `analyze()` on the same text.
"""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gpulens.analysis import DEFAULT_CONFIG, analyze
from gpulens.analysis.incremental import DocumentAnalyzer

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    *sorted((ROOT / "tests/unit/rules/cases").glob("*.py")),
    *sorted((ROOT / "examples").glob("*.py")),
]


def in_a_function(text: str) -> str:
    """The file's code after its imports as the body of `main()`, called at the end: the
    memo works on function bodies, and most case files are module-level code."""
    lines = text.splitlines(keepends=True)
    header = 0
    while header < len(lines) and re.match(r"(import|from) |\s*$|#", lines[header]):
        header += 1
    body = textwrap.indent("".join(lines[header:]), "    ", lambda line: bool(line.strip()))
    return "".join(lines[:header]) + "\n\ndef main():\n" + body + "\n\nmain()\n"


# Starting texts whose functions read what lies outside them: a helper's return, an import
# made in another function, a dotted name bound at module level, the device variable bound
# after the function, hard-coded devices in a file with no device variable, self attributes.
READS_OUTSIDE = """\
import torch
from torch.utils.data import DataLoader


def to_host(t):
    return float(t)


def use_cupy():
    import cupy as cp
    return cp


class Trainer(torch.nn.Module):
    def __init__(self, loader):
        super().__init__()
        self.loader = loader
        self.model = torch.nn.Linear(3, 3).to(device)

    def step(self, batch):
        return self.model(batch.to(device)).sum()

    def fit(self):
        for batch in self.loader:
            loss = self.step(batch)
            value = to_host(loss)
            if value > 0:
                print(loss)


def prepare():
    z = torch.zeros(3)
    z = z.to(device)
    return z


def run(loader):
    for batch in loader:
        total = cfg.scale.sum().item()
        host = cp.asnumpy(cp.zeros(3))
    return total, host


device = torch.device("cuda")
cfg.scale = torch.ones(3, device=device)
"""
NO_DEVICE_VARIABLE = """\
import torch
from torch.utils.data import DataLoader


def build():
    model = Net().cuda()
    x = load().cuda()
    y = torch.empty(3, device="cuda")
    return model, x, y


def train(model, loader):
    for batch in loader:
        out = model(batch.cuda())
        print(out.sum().item())


EPOCHS = 3
loader = DataLoader(dataset, batch_size=64)
if __name__ == "__main__":
    train(*build())
"""

# What the deeper analysis follows between functions: methods called on self and on objects
# of file classes, helpers held in attributes or passed on, tuples returned, a recursion, a
# loader class and a dataset class of the file, an import and a class made in a function.
FOLLOWS_CALLS = """\
import torch
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda")


def to_host(t):
    return float(t)


def loaders():
    return DataLoader(Items(), batch_size=8), DataLoader(Items(), batch_size=8)


def a(x):
    return b(x)


def b(x):
    if x:
        return a(x)
    return torch.ones(3, device=device)


class Items(Dataset):
    def __getitem__(self, i):
        return torch.zeros(3)

    def __len__(self):
        return 8


class Meter:
    def update(self, value):
        if value.sum() > 0:
            self.last = value.item()


class Trainer:
    def __init__(self, model):
        self.model = model.to(device)
        self.meter = Meter()
        self.read = to_host

    def step(self, batch):
        return self.model(batch.to(device)).sum()

    def fit(self, loader):
        for batch in loader:
            loss = self.step(batch)
            self.meter.update(loss)
            if self.read(loss) > 0:
                print(b(loss))


def run(fn, loader):
    for batch in loader:
        r = fn(batch.to(device))
        if r > 0:
            pass


def main():
    import cupy as cp

    class Head(torch.nn.Module):
        pass

    train, val = loaders()
    Trainer(Head()).fit(train)
    run(to_host, val)
    return cp.zeros(3)
"""

SOURCES = [
    READS_OUTSIDE,
    NO_DEVICE_VARIABLE,
    FOLLOWS_CALLS,
    *(text for path in FILES for text in (path.read_text(), in_a_function(path.read_text()))),
]

# what a person types on the way to valid code, and what breaks it
SNIPPETS = [
    "(",
    ")",
    "[",
    "{",
    ":",
    '"',
    "'",
    '"""',
    "\\",
    "\n",
    "    ",
    "\t",
    "def g(x):\n",
    "class C:\n",
    "else:\n",
    "x = (\n",
    "return x\n",
    ".item()",
    ".cuda()",
    '.to("cuda")',
    "import torch\n",
    "import cupy as cp\n",
    'device = torch.device("cuda")\n',
    "for b in loader:\n    ",
    "pass\n",
    "@decorator\n",
]
NAMES = ["device", "dev", "torch", "T", "model", "x", "loss", "cp", "loader", "step", "main"]

OPERATIONS = (
    "insert",
    "break",
    "break",
    "delete",
    "delete_line",
    "undo",
    "undo",
    "move_line",
    "rename",
    "indent",
)
BREAKERS = ["(", "[", "{", ":", '"', "'", '"""', " =", " def", "\\"]

steps = st.lists(
    st.tuples(
        st.sampled_from(OPERATIONS),
        st.floats(0, 1),
        st.floats(0, 1),
        st.sampled_from(SNIPPETS),
        st.sampled_from(NAMES),
    ),
    min_size=1,
    max_size=10,
)


def edited(text: str, history: list[str], step: tuple[str, float, float, str, str]) -> str:
    """``text`` after one edit; ``history`` holds the earlier versions (for undo)."""
    operation, where, other, snippet, name = step
    lines = text.splitlines(keepends=True)
    at = int(len(text) * where)
    line = min(int(len(lines) * where), max(len(lines) - 1, 0))
    if operation == "insert":
        return text[:at] + snippet + text[at:]
    if operation == "break" and lines:
        # typed at the end of a line: the usual way a file stops parsing for a while
        end = len("".join(lines[: line + 1]).rstrip("\r\n"))
        return text[:end] + BREAKERS[int(len(BREAKERS) * other) % len(BREAKERS)] + text[end:]
    if operation == "delete":
        return text[:at] + text[at + 1 + int(40 * other) :]
    if operation == "undo" and history:
        return history[int(len(history) * where) % len(history)]
    if not lines:
        return snippet
    if operation == "delete_line":
        # half the time a line that imports or binds the device, else any line
        wanted = [i for i, text in enumerate(lines) if re.search(r"import|device", text)]
        index = wanted[int(len(wanted) * other) % len(wanted)] if wanted and other < 0.5 else line
        return "".join(lines[:index] + lines[index + 1 :])
    if operation == "move_line":
        moved = lines.pop(line)
        lines.insert(int(len(lines) * other), moved)
        return "".join(lines)
    if operation == "rename":
        words = sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", text)))
        if not words:
            return text
        old = words[int(len(words) * other) % len(words)]
        return re.sub(rf"\b{re.escape(old)}\b", name, text)
    # indent: one line in or out by four spaces (an indentation error, or a moved block end)
    if other < 0.5:
        lines[line] = "    " + lines[line]
    else:
        lines[line] = re.sub(r"^ {1,4}", "", lines[line])
    return "".join(lines)


@pytest.mark.slow
@pytest.mark.timeout(600)  # 200 sessions: about 15 s alone, several times that on a busy machine
# new sessions on every developer run; the same sessions on every CI run
# (`GPULENS_FUZZ=fixed`, set by .ci/run): a change lands on what it was seen to pass, and a
# failure seen here becomes an @example below
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=os.environ.get("GPULENS_FUZZ") == "fixed",
)
@given(source=st.sampled_from(SOURCES), session=steps)
# a syntax error typed on a module-level line, then taken back
@example(NO_DEVICE_VARIABLE, [("break", 17.5 / 21, 0, "", ""), ("undo", 0, 0, "", "")])
@example(READS_OUTSIDE, [("break", 44.5 / 45, 0, "", ""), ("undo", 0, 0, "", "")])
# a record's builder broken: the method reading the field must not keep its memo
@example(
    (ROOT / "tests/unit/rules/cases/class61_records_keep_their_fields.py").read_text(),
    [*[("insert", 0, 0, "(", "")] * 4, ("delete_line", 0, 0, "", ""), ("insert", 0.5, 0, "(", "")],
)
# a line deleted above a lambda passed on: a replay must not report it where it stood before
@example(
    in_a_function(
        (ROOT / "tests/unit/rules/cases/class78_default_lambdas_run_by_the_step.py").read_text()
    ),
    [("insert", 0, 0, "(", ""), ("delete_line", 0, 0, "", "")],
)
def test_every_version_of_an_edit_session_matches_a_fresh_analysis(
    source: str, session: list[tuple[str, float, float, str, str]]
) -> None:
    analyzer = DocumentAnalyzer()
    text = source
    history: list[str] = []
    original = analyze(source)
    assert analyzer.analyze(text, DEFAULT_CONFIG) == original
    for step in session:
        history.append(text)
        text = edited(text, history, step)
        assert analyzer.analyze(text, DEFAULT_CONFIG) == analyze(text), (step, text)
        # and straight back to the first version, as an undo of everything would
        back = DocumentAnalyzer()
        back.analyze(text, DEFAULT_CONFIG)
        assert back.analyze(source, DEFAULT_CONFIG) == original, text
