"""Fixes that "Fix all" applies keep what the program does: each leaves a file that parses,
adds no finding, and a second fix-all changes nothing; the waits GPU004 inserts use the
device the code targets."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulens.analysis import analyze
from gpulens.analysis.edits import apply_edits, first_safe_fix, fix_all_edits

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted((ROOT / "tests/unit/rules/cases").glob("*.py")) + sorted(
    (ROOT / "examples").glob("*.py")
)


def codes(text: str) -> Counter[str]:
    return Counter(f.code for f in analyze(text).findings)


def check_safe_fixes(text: str) -> None:
    """Every safe fix alone, then fix-all to its end: valid Python, no new finding."""
    before = codes(text)
    for finding in analyze(text).findings:
        fix = first_safe_fix(finding)
        if fix is None:
            continue
        fixed = apply_edits(text, fix.edits)
        ast.parse(fixed)
        added = codes(fixed) - before
        assert not added, f"{fix.title!r} on {finding.code} added {dict(added)}:\n{fixed}"
    fixed = text
    for _ in range(5):
        edits = fix_all_edits(analyze(fixed).findings)
        if not edits:
            break
        fixed = apply_edits(fixed, edits)
        ast.parse(fixed)
        added = codes(fixed) - before
        assert not added, f"fix-all added {dict(added)}:\n{fixed}"
    again = apply_edits(fixed, fix_all_edits(analyze(fixed).findings))
    assert again == fixed, f"a second fix-all changed the file:\n{fixed}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_safe_fixes_of_the_case_files_and_examples(path: Path) -> None:
    check_safe_fixes(path.read_text())


IMPORTS = "import time\n\nimport torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
HEADERS = [
    IMPORTS + 'device = torch.device("cuda")\n',
    IMPORTS + 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
    IMPORTS + "device = torch.device(DEVICE_NAME)\n",
]
FRAGMENTS = [
    # a training loop: per-step reads, blocking copies, a periodic log
    """
def train(model, loader, optimizer):
    total = 0.0
    losses = []
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
        losses.append(loss.item())
        if step % 10 == 0:
            print(loss.item())
    return total, losses
""",
    # timing: an unsynchronized clock read, in a loop and not
    """
def bench(model, x):
    start = time.perf_counter()
    y = model(x.to(device))
    elapsed = time.perf_counter() - start
    for _ in range(10):
        begin = time.perf_counter()
        y = model(y)
        times = time.perf_counter() - begin
    return elapsed, times
""",
    # factories moved after the fact
    """
noise = torch.randn(4, 4).to(device)
zeros = torch.zeros(3).cuda()
steps = torch.arange(10).to(device)
weights = torch.ones(10)
weights = weights.to(device)
""",
    # a loader without pinned memory or workers
    """
loader = DataLoader(TensorDataset(torch.randn(8, 2), torch.randn(8, 1)), batch_size=1)
""",
    # per-item copies
    """
def stack(samples):
    return torch.stack([torch.tensor(s).to(device) for s in samples])
""",
    # hard-coded devices
    """
a = torch.nn.Linear(4, 4).cuda()
b = load().cuda()
c = torch.empty(3, device="cuda")
""",
    # a decoding loop that stops on a condition
    """
def decode(model, tokens, eos):
    for _ in range(32):
        logits = model(tokens.to(device))
        token = logits.argmax(-1)
        if (token == eos).all():
            break
        tokens = torch.cat([tokens, token[:, None]], dim=-1)
    return tokens
""",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=st.sampled_from(HEADERS),
    fragments=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4, unique=True),
)
def test_safe_fixes_of_generated_programs(header: str, fragments: list[str]) -> None:
    check_safe_fixes(header + "".join(fragments))


TIMED = """
def bench(model, x):
    for _ in range(10):
        start = time.perf_counter()
        y = model(x)
        print(time.perf_counter() - start)
"""


def fix_all(text: str) -> str:
    return apply_edits(text, fix_all_edits(analyze(text).findings))


def test_a_cuda_only_file_waits_for_cuda() -> None:
    text = 'import time\nimport torch\nmodel = torch.nn.Linear(4, 4).to("cuda")\n' + TIMED
    fixed = fix_all(text.replace("model(x)", 'model(x.to("cuda"))'))
    assert "        torch.cuda.synchronize()\n        print(time.perf_counter()" in fixed


def test_a_device_agnostic_file_waits_only_where_the_device_is_cuda() -> None:
    text = (
        "import time\nimport torch\n"
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "model = torch.nn.Linear(4, 4).to(device)\n"
        + TIMED.replace("model(x)", "model(x.to(device))")
    )
    fixed = fix_all(text)
    wait = 'if torch.device(device).type == "cuda": torch.cuda.synchronize(device)'
    assert f"        {wait}\n        print(time.perf_counter()" in fixed
    assert "\n        torch.cuda.synchronize()" not in fixed


def test_a_device_chosen_elsewhere_gets_a_guarded_wait() -> None:
    text = "import time\nimport torch\n" + TIMED.replace("model(x)", "model(x.to(dev))")
    text = text.replace("def bench(model, x):", "def bench(model, x, dev):")
    fixed = fix_all(text)
    assert 'if torch.device(dev).type == "cuda": torch.cuda.synchronize(dev)' in fixed


def test_the_inserted_wait_is_no_sync_finding() -> None:
    text = 'import time\nimport torch\nmodel = torch.nn.Linear(4, 4).to("cuda")\n' + TIMED
    text = text.replace("model(x)", 'model(x.to("cuda"))')
    fixed = fix_all(text)
    assert fixed != text
    assert [f.code for f in analyze(fixed).findings if f.code in ("GPU001", "GPU004")] == []
