"""A corpus of realistic PyTorch model code for the benchmarks, built from a PyPI wheel.

The device and benchmark machines reach PyPI and nothing else, so the corpus is the model code
of timm (a pure-Python wheel), extracted once into `.cache/bench/corpus` and reused.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "bench"
PACKAGE = "timm==1.0.15"
MEMBER_PREFIX = "timm/models/"


def ensure_corpus(target_lines: int = 12_000, python: str = sys.executable) -> Path:
    """The folder of model files, at least ``target_lines`` lines in all (built on first use)."""
    corpus = CACHE / f"corpus-{target_lines}"
    if (corpus / ".complete").exists():
        return corpus
    wheel = _download(python)
    corpus.mkdir(parents=True, exist_ok=True)
    lines = 0
    with zipfile.ZipFile(wheel) as archive:
        # sorted names: the same files every time, whatever the order inside the zip
        for name in sorted(archive.namelist()):
            if lines >= target_lines:
                break
            if not name.startswith(MEMBER_PREFIX) or not name.endswith(".py"):
                continue
            if name.count("/") != 2 or Path(name).name.startswith("_"):
                continue  # model definitions only, not layers/ or the package's machinery
            data = archive.read(name)
            (corpus / Path(name).name).write_bytes(data)
            lines += data.count(b"\n")
    (corpus / ".complete").write_text(f"{lines}\n")
    return corpus


def corpus_lines(corpus: Path) -> int:
    return sum(path.read_bytes().count(b"\n") for path in corpus.glob("*.py"))


def _download(python: str) -> Path:
    folder = CACHE / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    found = sorted(folder.glob("timm-*.whl"))
    if found:
        return found[0]
    subprocess.run(
        [python, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         PACKAGE, "-d", str(folder)],
        check=True,
    )  # fmt: skip
    return sorted(folder.glob("timm-*.whl"))[0]


if __name__ == "__main__":
    path = ensure_corpus()
    print(f"{path}: {corpus_lines(path)} lines in {len(list(path.glob('*.py')))} files")
