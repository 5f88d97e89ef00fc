"""gpulens on real code: how many of its findings deserve a user's attention, and how many of
the pitfalls a reader finds by eye it reports.

The corpus is public code bases of different styles (training scripts, trainer libraries, a
fine-tuning toolkit, a speech model's decoding loop, diffusion samplers, CuPy code), fetched at
pinned versions from the package index pip uses and cached in `.cache/realworld/`. Only the
labels live in the repository: `benchmarks/realworld/labels/<package>.toml`, one file per
package, holding the pin, the files in scope, the split (`tuned`, `heldout`, `heldout2`,
`heldout3`, `heldout4`, `heldout5`, `heldout6`, `heldout7`, `heldout8`, `heldout9`, `heldout10`
or `heldout11`; the last eleven are held-out parts whose sites were listed before gpulens ran on
them and whose findings are judged once, later), a verdict for every finding gpulens printed
(`tp`: a GPU cost worth fixing; `negligible`: true but not worth a user's time; `fp`: wrong for
the code it sits on) and the *sites*: real pitfalls a reader finds by eye, each with the rule
that should report it.

    python benchmarks/realworld.py                    # the figures, and the unlabeled findings
    python benchmarks/realworld.py --split tuned      # only the packages analysis work may read
    python benchmarks/realworld.py --only timm --show-unlabeled   # each new finding in context
    python benchmarks/realworld.py --only sigpy --show-missed     # each missed site in context
    python benchmarks/realworld.py --json

Precision counts labeled findings: lenient = (tp + negligible) / labeled, strict = tp /
labeled. A site is found when a finding of the site's rule starts on the site's line and was not
judged fp (a false message finds nothing, even on the right line), or when a
finding of another rule starting there was judged tp (the same pitfall named otherwise: the
user was told, truly; the report says how many sites count that way); recall
counts only the sites listed by reading the code, not those added later because a finding on
them was judged tp (`from_finding = true`: every tp finding is a site). Findings
are counted once per (path, line, rule). Both figures come two ways: over all findings, and
over the findings shown by default (severity error, warning or info: what an editor's Problems
panel lists; `gpulens check` fails on error and warning), where only a shown finding finds a
site. Hints (severity hint) are judged like the rest and counted apart: how many, and their
tp / negligible / fp. Exit status: 0 whatever the figures, 1 on an error (a label file that
does not parse, a download that fails, gpulens failing on a file).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tomllib
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
LABELS = Path(__file__).resolve().parent / "realworld" / "labels"
CACHE = ROOT / ".cache" / "realworld"

VERDICTS = ("tp", "negligible", "fp")
SPLITS = (
    "tuned",
    "heldout",
    "heldout2",
    "heldout3",
    "heldout4",
    "heldout5",
    "heldout6",
    "heldout7",
    "heldout8",
    "heldout9",
    "heldout10",
    "heldout11",
)
RULES = tuple(f"GPU{n:03d}" for n in range(1, 12))
SEVERITIES = ("error", "warning", "info", "hint")
# Shown by default: what an editor's Problems panel lists (`gpulens check` fails on error and
# warning). A hint only marks the text, so it is scored apart.
SHOWN = frozenset({"error", "warning", "info"})
VIEWS = ("all", "shown", "hints")
CONTEXT_LINES = 4  # lines shown above and below an unlabeled finding


class CorpusError(Exception):
    """A problem a user must fix before the figures mean anything; the message says which."""


# --- labels ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Label:
    path: str
    line: int
    rule: str
    verdict: str
    reason: str

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.path, self.line, self.rule)


@dataclass(frozen=True, slots=True)
class Site:
    path: str
    line: int
    rule: str
    reason: str
    # added when a finding on it was judged tp, not listed by reading the code beforehand:
    # such a site keeps the tp finding countable but is left out of recall, which a site list
    # grown from the analysis's own findings would flatter
    from_finding: bool = False


@dataclass(frozen=True, slots=True)
class Package:
    name: str
    version: str
    file: str  # the exact file on the index: an sdist or a wheel
    sha256: str
    split: str
    style: str
    scope: tuple[str, ...]  # path prefixes inside the archive (its top folder stripped)
    findings: tuple[Label, ...]
    sites: tuple[Site, ...]
    source: Path  # the labels file


def load_corpus(folder: Path = LABELS) -> list[Package]:
    """Every package of the corpus, in name order; CorpusError names the file and entry at fault."""
    packages = [load_package(path) for path in sorted(folder.glob("*.toml"))]
    if not packages:
        raise CorpusError(f"{folder}: no label files (*.toml)")
    names = [p.name for p in packages]
    if len(set(names)) != len(names):
        raise CorpusError(f"{folder}: a package is labeled in two files")
    return packages


def load_package(path: Path) -> Package:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise CorpusError(f"{path}: {error}") from None

    def text(key: str) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise CorpusError(f"{path}: `{key}` must be a non-empty string")
        return value

    split = text("split")
    if split not in SPLITS:
        raise CorpusError(f"{path}: split {split!r} is not one of {', '.join(SPLITS)}")
    sha256 = text("sha256")
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise CorpusError(f"{path}: sha256 must be 64 lowercase hex digits")
    scope = data.get("scope")
    if not isinstance(scope, list) or not scope or not all(isinstance(s, str) for s in scope):
        raise CorpusError(f"{path}: `scope` must be a list of path prefixes")
    findings = tuple(_label(path, n, entry) for n, entry in enumerate(data.get("findings", []), 1))
    sites = tuple(_site(path, n, entry) for n, entry in enumerate(data.get("sites", []), 1))
    seen: set[tuple[str, int, str]] = set()
    for label in findings:
        if label.key in seen:
            raise CorpusError(f"{path}: {label.path}:{label.line} {label.rule} is labeled twice")
        seen.add(label.key)
    site_keys = [(s.path, s.line, s.rule) for s in sites]
    if len(set(site_keys)) != len(site_keys):
        raise CorpusError(f"{path}: a site is listed twice")
    for label in findings:
        if label.verdict == "tp" and label.key not in set(site_keys):
            raise CorpusError(
                f"{path}: {label.path}:{label.line} {label.rule} is a tp finding but not a site "
                "(every pitfall worth fixing is a site, found or not)"
            )
    return Package(
        name=text("name"),
        version=text("version"),
        file=text("file"),
        sha256=sha256,
        split=split,
        style=text("style"),
        scope=tuple(scope),
        findings=findings,
        sites=sites,
        source=path,
    )


def _fields(path: Path, what: str, n: int, entry: object, keys: Sequence[str]) -> dict:
    if not isinstance(entry, dict):
        raise CorpusError(f"{path}: {what} {n} is not a table")
    missing = [k for k in keys if k not in entry]
    extra = [k for k in entry if k not in keys]
    if missing or extra:
        raise CorpusError(
            f"{path}: {what} {n} needs exactly {', '.join(keys)}"
            + (f" (missing {', '.join(missing)})" if missing else "")
            + (f" (unknown {', '.join(extra)})" if extra else "")
        )
    if not isinstance(entry["line"], int) or entry["line"] < 1:
        raise CorpusError(f"{path}: {what} {n}: line must be a positive integer")
    if entry["rule"] not in RULES:
        raise CorpusError(f"{path}: {what} {n}: rule {entry['rule']!r} is not GPU001–GPU011")
    if not isinstance(entry["reason"], str) or len(entry["reason"].strip()) < 8:
        raise CorpusError(f"{path}: {what} {n}: give a one-line reason")
    if "\n" in entry["reason"]:
        raise CorpusError(f"{path}: {what} {n}: the reason must be one line")
    if not isinstance(entry["path"], str) or not entry["path"].endswith((".py", ".ipynb")):
        raise CorpusError(f"{path}: {what} {n}: path must name a .py or .ipynb file")
    return entry


def _label(path: Path, n: int, entry: object) -> Label:
    keys: tuple[str, ...] = ("path", "line", "rule", "verdict", "reason")
    if isinstance(entry, dict) and "by" in entry:
        # who judged it (a round of analysis work, a reviewer): kept for re-judging
        keys = (*keys, "by")
        if not isinstance(entry["by"], str) or not entry["by"].strip():
            raise CorpusError(f"{path}: finding {n}: by must be a non-empty string")
    fields = _fields(path, "finding", n, entry, keys)
    if fields["verdict"] not in VERDICTS:
        allowed = ", ".join(VERDICTS)
        raise CorpusError(
            f"{path}: finding {n}: verdict {fields['verdict']!r} is not one of {allowed}"
        )
    return Label(**{k: v for k, v in fields.items() if k != "by"})


def _site(path: Path, n: int, entry: object) -> Site:
    keys = ("path", "line", "rule", "reason")
    if isinstance(entry, dict) and "from_finding" in entry:
        keys = (*keys, "from_finding")
        if not isinstance(entry["from_finding"], bool):
            raise CorpusError(f"{path}: site {n}: from_finding must be true or false")
    return Site(**_fields(path, "site", n, entry, keys))


# --- fetching ----------------------------------------------------------------------------------


def index_url() -> str:
    """The simple index pip uses here: PIP_INDEX_URL, then pip's configuration, then pip's own
    default. The archives are fetched through its JSON API rather than `pip download`, which
    builds an sdist's metadata first: that runs the package's setup code (CuPy's needs CUDA)."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"].split()[0]
    found = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode == 0 and found.stdout.strip():
        return found.stdout.strip()
    from pip._internal.models.index import PyPI  # pip's default index

    return PyPI.simple_url


def ensure_source(package: Package, cache: Path = CACHE) -> Path:
    """The folder holding the package's Python files, fetched and unpacked on first use."""
    folder = cache / f"{package.name}-{package.version}"
    stamp = folder / ".complete"
    if stamp.exists() and stamp.read_text() == package.sha256:
        return folder
    archive = _download(package, cache / "archives")
    _unpack(archive, folder)
    # one config for every file: the defaults, whatever pyproject.toml a package ships
    (cache / "pyproject.toml").write_text("[tool.gpulens]\n")
    stamp.write_text(package.sha256)
    return folder


def cached_archive(package: Package, folder: Path) -> Path | None:
    """The package's archive in ``folder`` if it is there with the pinned hash."""
    target = folder / package.file
    if target.is_file() and _sha256(target.read_bytes()) == package.sha256:
        return target
    return None


def _download(package: Package, folder: Path) -> Path:
    cached = cached_archive(package, folder)
    if cached is not None:
        return cached
    target = folder / package.file
    folder.mkdir(parents=True, exist_ok=True)
    url = _file_url(package)
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            data = response.read()
    except OSError as error:
        raise CorpusError(f"{package.file}: download failed ({error})") from None
    if _sha256(data) != package.sha256:
        raise CorpusError(f"{package.file}: sha256 differs from the pinned one; not used")
    target.write_bytes(data)
    return target


def _file_url(package: Package) -> str:
    project = package.name.lower().replace("_", "-").replace(".", "-")
    request = urllib.request.Request(
        index_url().rstrip("/") + f"/{project}/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            listing = json.load(response)
    except (OSError, ValueError) as error:
        raise CorpusError(f"{package.name}: the package index did not answer ({error})") from None
    for entry in listing.get("files", []):
        if entry.get("filename") == package.file:
            return urllib.parse.urljoin(request.full_url, entry["url"])  # may be relative
    raise CorpusError(f"{package.name}: the index has no file {package.file}")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _unpack(archive: Path, folder: Path) -> None:
    """Only the Python files, at paths relative to the archive's top (an sdist's
    `name-version/` folder stripped); members that would land outside ``folder`` are skipped."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in _members(archive):
        parts = PurePosixPath(name).parts
        if not archive.name.endswith(".whl"):
            parts = parts[1:]
        if not parts or any(p in ("", ".", "..") for p in parts) or parts[0].startswith("/"):
            continue
        target = folder.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _members(archive: Path) -> Iterable[tuple[str, bytes]]:
    wanted = (".py", ".ipynb")
    if archive.name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as zipped:
            for info in zipped.infolist():
                if not info.is_dir() and info.filename.endswith(wanted):
                    yield info.filename, zipped.read(info)
        return
    with tarfile.open(archive, "r:gz") as tarred:
        for member in tarred:
            if member.isfile() and member.name.endswith(wanted):
                handle = tarred.extractfile(member)
                if handle is not None:
                    yield member.name, handle.read()


def scope_files(package: Package, source: Path) -> list[str]:
    """The package's files in scope, as paths relative to ``source``, sorted."""
    files = []
    for path in source.rglob("*"):
        relative = path.relative_to(source).as_posix()
        if path.suffix in (".py", ".ipynb") and relative.startswith(package.scope):
            files.append(relative)
    return sorted(files)


# --- running gpulens ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Observed:
    """One finding gpulens printed, counted once per (path, line, rule)."""

    path: str
    line: int
    column: int
    rule: str
    severity: str
    message: str

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.path, self.line, self.rule)


def run_gpulens(source: Path, files: Sequence[str]) -> list[Observed]:
    """Today's `gpulens check` with every rule selected, over ``files`` (relative to ``source``)."""
    command = [sys.executable, "-m", "gpulens", "check", "--format", "json", "--select", "GPU"]
    done = subprocess.run(
        [*command, *files], cwd=source, capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode not in (0, 1):
        raise CorpusError(f"gpulens check failed in {source}: {done.stderr.strip()[-500:]}")
    try:
        raw = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise CorpusError(f"gpulens check printed no JSON in {source}") from None
    return parse_findings(raw)


def parse_findings(raw: Sequence[dict]) -> list[Observed]:
    """`gpulens check --format json` output as findings, once per (path, line, rule); a severity
    the scoring does not know is an error rather than a finding counted in the wrong column."""
    unknown = {item["severity"] for item in raw} - set(SEVERITIES)
    if unknown:
        names = ", ".join(sorted(unknown))
        raise CorpusError(f"gpulens check printed an unknown severity: {names}")
    return dedupe(
        Observed(
            path=item["path"],
            line=item["line"],
            column=item["column"],
            rule=item["code"],
            severity=item["severity"],
            message=item["message"],
        )
        for item in raw
    )


def dedupe(findings: Iterable[Observed]) -> list[Observed]:
    """One finding of each (path, line, rule), in (path, line, rule) order: the first shown one
    if any is shown (the line then shows in the Problems panel), else the first."""
    first: dict[tuple[str, int, str], Observed] = {}
    for finding in findings:
        kept = first.get(finding.key)
        if kept is None or (kept.severity not in SHOWN and finding.severity in SHOWN):
            first[finding.key] = finding
    return [first[key] for key in sorted(first)]


# --- scoring (pure) ----------------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    findings: int = 0
    tp: int = 0
    negligible: int = 0
    fp: int = 0
    sites: int = 0
    sites_found: int = 0
    found_otherwise: int = 0  # of sites_found: by a tp finding of another rule on the line

    @property
    def labeled(self) -> int:
        return self.tp + self.negligible + self.fp

    @property
    def unlabeled(self) -> int:
        return self.findings - self.labeled

    @property
    def lenient(self) -> float | None:
        return (self.tp + self.negligible) / self.labeled if self.labeled else None

    @property
    def strict(self) -> float | None:
        return self.tp / self.labeled if self.labeled else None

    @property
    def recall(self) -> float | None:
        return self.sites_found / self.sites if self.sites else None

    def add(self, other: Tally) -> None:
        for name in (
            "findings",
            "tp",
            "negligible",
            "fp",
            "sites",
            "sites_found",
            "found_otherwise",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int | float | None]:
        return {
            "findings": self.findings,
            "labeled": self.labeled,
            "unlabeled": self.unlabeled,
            "tp": self.tp,
            "negligible": self.negligible,
            "fp": self.fp,
            "precision_lenient": self.lenient,
            "precision_strict": self.strict,
            "sites": self.sites,
            "sites_found": self.sites_found,
            "sites_found_by_another_rule": self.found_otherwise,
            "recall": self.recall,
        }


@dataclass(slots=True)
class Score:
    """The figures two ways: over every finding (`all`) and over the findings shown by default
    (`shown`: severity error, warning or info), with the hints (`hints`) counted apart. A site
    is found in `shown` only when a shown finding reports it; `hints` holds no sites (the sites
    only a hint reports are the gap between the two recalls)."""

    all: Tally = field(default_factory=Tally)
    shown: Tally = field(default_factory=Tally)
    hints: Tally = field(default_factory=Tally)

    def add(self, other: Score) -> None:
        for view in VIEWS:
            getattr(self, view).add(getattr(other, view))

    def as_dict(self) -> dict:
        return {**self.all.as_dict(), "shown": self.shown.as_dict(), "hints": self.hints.as_dict()}


@dataclass(slots=True)
class PackageScore:
    package: Package
    total: Score
    by_rule: dict[str, Score]
    unlabeled: list[Observed]
    stale: list[Label]  # labels no finding matches now (gone after an analysis change)
    missed: list[Site]  # sites no finding reports, shown or hint


@dataclass(slots=True)
class Report:
    packages: list[PackageScore]
    by_split: dict[str, Score] = field(default_factory=dict)
    by_rule: dict[str, Score] = field(default_factory=dict)
    total: Score = field(default_factory=Score)


def score_package(package: Package, observed: Sequence[Observed]) -> PackageScore:
    labels = {label.key: label for label in package.findings}
    by_rule: dict[str, Score] = {}
    unlabeled = []
    findings = dedupe(observed)
    for finding in findings:
        score = by_rule.setdefault(finding.rule, Score())
        label = labels.get(finding.key)
        if label is None:
            unlabeled.append(finding)
        for tally in (score.all, score.shown if finding.severity in SHOWN else score.hints):
            tally.findings += 1
            if label is not None:
                setattr(tally, label.verdict, getattr(tally, label.verdict) + 1)
    # A finding judged fp told the user something false: it finds no site, even its own.
    reported = {f.key for f in findings if _verdict(labels, f) != "fp"}
    reported_shown = {f.key for f in findings if f.severity in SHOWN and f.key in reported}
    # A tp finding of another rule on a site's line told the user of that pitfall, truly.
    tp_lines = {f.key[:2] for f in findings if _verdict(labels, f) == "tp"}
    tp_lines_shown = {f.key[:2] for f in findings if f.severity in SHOWN and f.key[:2] in tp_lines}
    missed = []
    for site in package.sites:
        if site.from_finding:
            continue  # not a site a reader listed first: no part of recall
        score = by_rule.setdefault(site.rule, Score())
        key = (site.path, site.line, site.rule)
        views = ((score.all, reported, tp_lines), (score.shown, reported_shown, tp_lines_shown))
        for tally, found, told in views:
            tally.sites += 1
            otherwise = key not in found and key[:2] in told
            tally.sites_found += key in found or otherwise
            tally.found_otherwise += otherwise
        if key not in reported and key[:2] not in tp_lines:
            missed.append(site)
    total = Score()
    for score in by_rule.values():
        total.add(score)
    printed = {f.key for f in findings}
    stale = [label for key, label in labels.items() if key not in printed]
    return PackageScore(package, total, dict(sorted(by_rule.items())), unlabeled, stale, missed)


def _verdict(labels: dict[tuple[str, int, str], Label], finding: Observed) -> str | None:
    label = labels.get(finding.key)
    return None if label is None else label.verdict


def build_report(scores: Sequence[PackageScore]) -> Report:
    report = Report(list(scores))
    for score in scores:
        report.by_split.setdefault(score.package.split, Score()).add(score.total)
        report.total.add(score.total)
        for rule, rule_score in score.by_rule.items():
            report.by_rule.setdefault(rule, Score()).add(rule_score)
    report.by_rule = dict(sorted(report.by_rule.items()))
    return report


# --- output ------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "    –" if value is None else f"{100 * value:5.1f}"


HEADER = (
    f"{'':<38} {'findings':>8} {'tp':>4} {'neg':>4} {'fp':>4} {'new':>4}"
    f" {'lenient%':>8} {'strict%':>7} {'sites':>5} {'found':>5} {'recall%':>7}"
)


def _row(name: str, t: Tally) -> str:
    return (
        f"{name:<38} {t.findings:>8} {t.tp:>4} {t.negligible:>4} {t.fp:>4} {t.unlabeled:>4}"
        f" {_pct(t.lenient):>8} {_pct(t.strict):>7} {t.sites:>5} {t.sites_found:>5}"
        f" {_pct(t.recall):>7}"
    )


VIEW_TITLES = {
    "all": "all findings",
    "shown": "shown (error, warning, info)",
    "hints": "hints",
}


def format_text(report: Report) -> str:
    lines = [
        "Precision and recall of gpulens on real code (benchmarks/realworld.py)",
        "all: every finding. shown: severity error, warning or info, what an editor's Problems",
        "panel lists (`gpulens check` fails on error and warning); a site counts as found only by",
        "a shown finding. hints: severity hint, counted apart (no sites of their own).",
        "",
        HEADER,
    ]
    for view in VIEWS:
        for split in SPLITS:
            if split in report.by_split:
                lines.append(_row(f"{view}, {split} part", getattr(report.by_split[split], view)))
        lines.append(_row(f"{view}, all parts", getattr(report.total, view)))
    for view in ("all", "shown"):
        lines += ["", f"per package, {VIEW_TITLES[view]}", HEADER]
        for score in report.packages:
            p = score.package
            lines.append(_row(f"{p.name} ({p.split})", getattr(score.total, view)))
    for view in VIEWS:
        lines += ["", f"per rule, {VIEW_TITLES[view]}", HEADER]
        for rule, score in report.by_rule.items():
            tally = getattr(score, view)
            if tally.findings or tally.sites:
                lines.append(_row(rule, tally))
    unlabeled = [(s.package.name, f) for s in report.packages for f in s.unlabeled]
    if unlabeled:
        lines += ["", f"{len(unlabeled)} unlabeled findings (judge them: --show-unlabeled):"]
        lines += [
            f"  {name} {f.path}:{f.line}:{f.column} {f.rule} ({f.severity}) {f.message[:100]}"
            for name, f in unlabeled
        ]
    otherwise = report.total.all.found_otherwise
    if otherwise:
        lines += [
            "",
            f"{otherwise} sites count as found by a tp finding of another rule on their line"
            f" ({report.total.shown.found_otherwise} of them shown): the same pitfall named"
            " otherwise",
        ]
    stale = sum(len(s.stale) for s in report.packages)
    if stale:
        lines += ["", f"{stale} labels match no finding now (kept: they judge it if it returns)"]
    return "\n".join(lines)


def format_json(report: Report) -> str:
    def package(score: PackageScore) -> dict:
        p = score.package
        return {
            "name": p.name,
            "version": p.version,
            "split": p.split,
            **score.total.as_dict(),
            "by_rule": {rule: s.as_dict() for rule, s in score.by_rule.items()},
            "unlabeled": [
                {
                    "path": f.path,
                    "line": f.line,
                    "rule": f.rule,
                    "severity": f.severity,
                    "message": f.message,
                }
                for f in score.unlabeled
            ],
            "stale": [{"path": s.path, "line": s.line, "rule": s.rule} for s in score.stale],
            "missed_sites": [
                {"path": s.path, "line": s.line, "rule": s.rule, "reason": s.reason}
                for s in score.missed
            ],
        }

    payload = {
        "schema": "gpulens.realworld/2",
        "total": report.total.as_dict(),
        "by_split": {split: s.as_dict() for split, s in report.by_split.items()},
        "by_rule": {rule: s.as_dict() for rule, s in report.by_rule.items()},
        "packages": [package(s) for s in report.packages],
    }
    return json.dumps(payload, indent=2)


def _around(source: Path, path: str, line: int) -> list[str]:
    """The lines of `path` around `line`, numbered, `line` marked."""
    text = (source / path).read_text(encoding="utf-8", errors="replace").splitlines()
    first, last = max(1, line - CONTEXT_LINES), min(len(text), line + CONTEXT_LINES)
    return [f"{'>' if n == line else ' '}{n:5d}  {text[n - 1]}" for n in range(first, last + 1)]


def format_unlabeled(score: PackageScore, source: Path) -> str:
    """Each unlabeled finding with the code around it, and a label line to fill in."""
    out = []
    for f in score.unlabeled:
        out.append(f"── {score.package.name} {f.path}:{f.line}:{f.column} {f.rule} ({f.severity})")
        out.append(f"   {f.message}")
        out.extend(_around(source, f.path, f.line))
        out.append(
            f'  {{ path = "{f.path}", line = {f.line}, rule = "{f.rule}", '
            f'verdict = "", reason = "" }},'
        )
        out.append("")
    return "\n".join(out)


def format_missed(score: PackageScore, source: Path) -> str:
    """Each site no finding reports, shown or hint, with the code around it and the reason the
    reader gave."""
    out = []
    for site in score.missed:
        out.append(f"── {score.package.name} {site.path}:{site.line} {site.rule} (missed)")
        out.append(f"   {site.reason}")
        out.extend(_around(source, site.path, site.line))
        out.append("")
    return "\n".join(out)


# --- command line ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", metavar="PKG", help="only this package")
    parser.add_argument("--split", choices=SPLITS, help="only this part of the corpus")
    parser.add_argument("--json", action="store_true", help="machine output (gpulens.realworld/2)")
    parser.add_argument(
        "--show-unlabeled", action="store_true", help="print each unlabeled finding in context"
    )
    parser.add_argument(
        "--show-missed", action="store_true", help="print each site no finding reports, in context"
    )
    args = parser.parse_args(argv)
    try:
        packages = load_corpus()
        known = {p.name for p in packages}
        for name in args.only or ():
            if name not in known:
                raise CorpusError(f"--only {name}: no such package ({', '.join(sorted(known))})")
        packages = [
            p
            for p in packages
            if (not args.only or p.name in args.only) and (not args.split or p.split == args.split)
        ]
        scores, sources = [], {}
        for package in packages:
            source = ensure_source(package)
            sources[package.name] = source
            scores.append(score_package(package, run_gpulens(source, scope_files(package, source))))
    except CorpusError as error:
        print(f"realworld: {error}", file=sys.stderr)
        return 1
    report = build_report(scores)
    if args.show_unlabeled:
        for score in scores:
            print(format_unlabeled(score, sources[score.package.name]), end="")
    elif args.show_missed:
        for score in scores:
            print(format_missed(score, sources[score.package.name]), end="")
    elif args.json:
        print(format_json(report))
    else:
        print(format_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
