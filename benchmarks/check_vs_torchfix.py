"""`gpulens check` against TorchFix 0.7 on the same ~12k lines of PyTorch model code.

Budget (DESIGN.md): whole process, same run, gpulens >= 20x faster. TorchFix goes into its own
venv under `.cache/bench/` so gpulens' venv stays clean; the corpus is timm's model files
(benchmarks/corpus.py). Exit codes are ignored: both tools exit non-zero when they find things.

    python benchmarks/check_vs_torchfix.py [--runs 5] [--torchfix-runs 3] [--lines 12000]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CACHE, corpus_lines, ensure_corpus

TORCHFIX = "torchfix==0.7.0"
TARGET_RATIO = 20.0


def ensure_torchfix() -> Path:
    venv = CACHE / "torchfix-venv"
    executable = venv / "bin" / "torchfix"
    if not executable.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", TORCHFIX]
        subprocess.run(pip, check=True)
    return executable


def compile_gpulens() -> None:
    """Writes gpulens' bytecode, as installing it does (TorchFix's venv has its own from pip):
    a checkout run with PYTHONDONTWRITEBYTECODE set would otherwise compile every module it
    imports again at each start (~0.1 s of the ~0.6 s measured on the VM)."""
    import compileall

    import gpulens

    compileall.compile_dir(Path(gpulens.__file__).parent, quiet=1)


def time_command(command: Sequence[str], runs: int) -> list[float]:
    """Wall seconds of each run of the whole process, output discarded."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def time_call(function: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def describe(name: str, times: list[float]) -> str:
    return f"{name:<34} best {min(times):7.3f} s   median {statistics.median(times):7.3f} s"


def in_process(corpus: Path, lines: int, runs: int) -> None:
    from gpulens.analysis import analyze

    texts = [path.read_text(encoding="utf-8") for path in sorted(corpus.glob("*.py"))]
    parse = time_call(lambda: [_parse_and_walk(t) for t in texts], runs)
    analysis = time_call(lambda: [analyze(t) for t in texts], runs)
    findings = sum(len(analyze(t).findings) for t in texts)
    per_k = 1000 / lines * 1000
    print(f"in process, per 1k lines: analyze {min(analysis) * per_k:.2f} ms "
          f"(ast.parse + walk {min(parse) * per_k:.2f} ms); {findings} findings")  # fmt: skip


def _parse_and_walk(text: str) -> int:
    return sum(1 for _ in ast.walk(ast.parse(text)))


def workers_command(corpus: Path, workers: int) -> list[str]:
    """`gpulens check` as a whole process with the worker count forced, to see what the
    process pool costs and brings at this size."""
    code = (
        "import sys; from gpulens.commands import check; "
        f"check._worker_count = lambda sizes: {workers}; "
        f"from gpulens.cli import main; sys.exit(main(['check', {str(corpus)!r}]))"
    )
    return [sys.executable, "-c", code]


def startup(runs: int) -> None:
    empty = time_command([sys.executable, "-c", "pass"], runs)
    help_ = time_command([sys.executable, "-m", "gpulens", "check", "--help"], runs)
    imports = time_command([sys.executable, "-c", "import gpulens.analysis.walker"], runs)
    print(describe("python -c pass", empty))
    print(describe("gpulens check --help", help_))
    print(describe("import the analysis", imports))
    slowest = _slowest_imports(["gpulens.cli", "gpulens.analysis.walker"])
    print("slowest imports (cumulative):", ", ".join(f"{n} {ms:.0f} ms" for n, ms in slowest))


def _slowest_imports(modules: list[str], count: int = 6) -> list[tuple[str, float]]:
    code = "; ".join(f"import {m}" for m in modules)
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    )
    rows = []
    for line in result.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((parts[2].strip(), int(parts[1]) / 1000))
    top_level = [(name, ms) for name, ms in rows if not name.startswith(" ")]
    return sorted(top_level, key=lambda row: -row[1])[:count]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--torchfix-runs", type=int, default=3)
    parser.add_argument("--lines", type=int, default=12_000)
    args = parser.parse_args()

    corpus = ensure_corpus(args.lines)
    torchfix = ensure_torchfix()
    lines = corpus_lines(corpus)
    files = len(list(corpus.glob("*.py")))
    print(f"corpus: {files} files, {lines} lines of timm model code ({corpus})")

    compile_gpulens()
    gpulens = time_command([sys.executable, "-m", "gpulens", "check", str(corpus)], args.runs)
    reference = time_command([str(torchfix), str(corpus)], args.torchfix_runs)
    print(describe("gpulens check (whole process)", gpulens))
    print(describe("torchfix 0.7 (whole process)", reference))
    best = min(reference) / min(gpulens)
    median = statistics.median(reference) / statistics.median(gpulens)
    verdict = "meets" if best >= TARGET_RATIO else "MISSES"
    print(
        f"ratio: {best:.1f}x best, {median:.1f}x median ({verdict} the {TARGET_RATIO:.0f}x budget)"
    )

    in_process(corpus, lines, args.runs)
    for workers in (1, 2):
        times = time_command(workers_command(corpus, workers), args.runs)
        print(describe(f"gpulens check, {workers} worker(s)", times))
    startup(args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
