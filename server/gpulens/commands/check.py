"""`gpulens check`: report GPU performance pitfalls in files, folders and notebooks; `--fix`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # the analysis is imported when the command runs, not by `gpulens --help`
    from gpulens.analysis import Config
    from gpulens.commands._check_file import FileResult, Job
    from gpulens.commands._files import Patterns

HELP = "Report GPU performance pitfalls in Python files and notebooks (and fix them with --fix)."

_EPILOG = """\
output:
  text   one line per finding: PATH:LINE:COL: CODE message (1-based; [*] marks a fix that
         --fix applies), then a summary line. In notebooks the position is inside the cell:
         NB.ipynb:cell N:LINE:COL, where N counts every cell of the notebook (code and
         markdown) from 1, as the notebook shows them from top to bottom.
  json   one array of {path, cell (notebooks only), line, column, end_line, end_column, code,
         severity, message, fixes: [{title, safe, edits: [{line, column, end_line,
         end_column, new_text}]}]}, 1-based, sorted by path, cell, line, column, code.

--profile merges a saved profile (`gpulens profile -o OUT --format json`, or a %%gpulens
output) into the findings of the file it profiled: a finding on a profiled line carries its
measured cost, or drops to a hint where that cost was negligible; lines that measured
repeated syncs, small copies in a loop or pageable copies get findings of their own, marked
"(measured)" in text and "origin": "profile" in JSON (every finding then has an "origin").

Syntax errors are reported on stderr; the parts of the file that parse are still checked.
A path that could not be read (missing, unreadable, a broken link, a FIFO, not UTF-8 nor of
a declared encoding, a notebook that is not JSON) is reported on stderr in one line and
skipped; the other files are still checked. --fix leaves read-only files unchanged.
exit status: 0 no finding of severity warning or error, 1 some, 2 usage or configuration
error, or a file that could not be read or written. Settings come from [tool.gpulens] in the
nearest pyproject.toml; options win.
"""

# Worker processes pay off once there is enough source: forking the pool and pickling the
# results back costs a few tens of ms, the analysis ~16 ms per 1k lines (~35 KB). Measured
# whole process, pinned to 2 cores, on subsets of the timm corpus (benchmarks/), best of 7
# sequential -> 2 workers: 171 KB 346 -> 462 ms (loses), 240 KB 566 -> 377 ms, 275 KB
# 599 -> 440 ms, 451 KB 682 -> 494 ms (16 files) and 509 -> 448 ms (65 files). Break-even
# lies around 200 KB; below the threshold the files are checked in this process.
PARALLEL_MIN_BYTES = 256 * 1024
PARALLEL_MIN_FILES = 4
# a worker earns its start-up with about this much source
_BYTES_PER_WORKER = 128 * 1024
# Tasks per worker: a few, so that pickling is not per file and one large file at the end
# does not leave the other workers idle.
_CHUNKS_PER_WORKER = 4


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or folders to check (default: .); folders are searched for *.py and "
        "*.ipynb, honouring .gitignore; - reads stdin",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--select", metavar="CODES", help="comma-separated codes or prefixes")
    parser.add_argument("--ignore", metavar="CODES", help="comma-separated codes or prefixes")
    parser.add_argument(
        "--fix", action="store_true", help="apply the safe fixes and write the files back"
    )
    parser.add_argument("--explain", metavar="CODE", help="describe a rule and exit")
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="FILE.profile.json",
        help="merge a saved profile's measurements into the findings of the file it profiled "
        "(repeat for several cells)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="gitignore-style pattern of paths to skip, adding to [tool.gpulens] exclude "
        "(repeat or comma-separate)",
    )
    parser.add_argument(
        "--force-exclude",
        action="store_true",
        help="skip excluded files even when named on the command line (for pre-commit)",
    )
    parser.add_argument(
        "--stdin-filename", metavar="NAME", help="the name to show and configure stdin's text by"
    )


class UsageError(Exception):
    """A bad option or setting: printed as one sentence, exit status 2."""


def run(args: argparse.Namespace) -> int:
    try:
        if args.explain:
            return _explain(args.explain, sys.stdout)
        return _check(args)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


# ---- --explain ------------------------------------------------------------------------------


def _explain(code: str, out: TextIO) -> int:
    from gpulens.analysis.rules import RULES

    rule = RULES.get(code.strip().upper())
    if rule is None:
        known = ", ".join(sorted(RULES)) or "none are registered in this build"
        raise UsageError(f"{code} is not a gpulens rule code; known codes: {known}")
    out.write(f"{rule.code}: {rule.name} ({rule.severity})\n\n{rule.summary}\n\n{rule.doc}\n")
    return 0


# ---- configuration --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Options:
    select: str | None
    ignore: str | None


class _Settings:
    """Config and exclude patterns per folder: the nearest `[tool.gpulens]`, then the options."""

    def __init__(self, options: _Options, excludes: Sequence[str], cwd: Path) -> None:
        from gpulens.commands._files import InvalidPattern, Patterns

        self._options = options
        patterns = [p.strip() for value in excludes for p in value.split(",") if p.strip()]
        try:
            self._cli_excludes = Patterns.of(patterns, cwd)
        except InvalidPattern as error:
            raise UsageError(f"--exclude: {error}; correct the pattern") from None
        self._by_folder: dict[Path, tuple[Config, tuple[Patterns, ...]]] = {}
        self._by_file: dict[Path | None, tuple[Config, tuple[Patterns, ...]]] = {}

    def for_folder(self, folder: Path) -> tuple[Config, tuple[Patterns, ...]]:
        if folder not in self._by_folder:
            self._by_folder[folder] = self._for_pyproject(_find_pyproject(folder))
        return self._by_folder[folder]

    def excludes(self, folder: Path) -> tuple[Patterns, ...]:
        return self.for_folder(folder)[1]

    def _for_pyproject(self, pyproject: Path | None) -> tuple[Config, tuple[Patterns, ...]]:
        if pyproject not in self._by_file:
            from gpulens.analysis import DEFAULT_CONFIG
            from gpulens.commands._files import InvalidPattern, Patterns

            base = DEFAULT_CONFIG if pyproject is None else _load(pyproject)
            config = _with_options(base, self._options)
            try:
                found = None if pyproject is None else Patterns.of(config.exclude, pyproject.parent)
            except InvalidPattern as error:
                raise UsageError(
                    f"{pyproject}: [tool.gpulens] exclude: {error}; correct the pattern"
                ) from None
            patterns = tuple(p for p in (found, self._cli_excludes) if p is not None)
            self._by_file[pyproject] = (config, patterns)
        return self._by_file[pyproject]


def _find_pyproject(folder: Path) -> Path | None:
    """The nearest pyproject.toml with a `[tool.gpulens]` table, as the server finds it."""
    from gpulens.analysis.config import ConfigError, find_pyproject

    try:
        return find_pyproject(folder)
    except ConfigError as error:
        raise UsageError(str(error)) from None


def _load(pyproject: Path) -> Config:
    from gpulens.analysis.config import ConfigError, config_from_mapping

    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        # it was read a moment ago to find [tool.gpulens]: it changed since
        raise UsageError(f"{pyproject}: cannot read it ({error}); check the file") from None
    try:
        return config_from_mapping(data["tool"]["gpulens"], f"{pyproject}: [tool.gpulens]")
    except (ConfigError, TypeError, AttributeError) as error:
        raise UsageError(f"{error}; correct the setting in {pyproject}") from None


def _with_options(config: Config, options: _Options) -> Config:
    """As ruff does: `--select` starts the selection afresh (the config's select and ignore
    no longer count), `--ignore` alone adds to the config's ignore."""
    select = _codes(options.select, "--select")
    ignore = _codes(options.ignore, "--ignore")
    if options.select is not None:
        return config.merged(select=select, ignore=ignore or frozenset())
    if options.ignore is not None:
        return config.merged(ignore=config.ignore | (ignore or frozenset()))
    return config


def _codes(value: str | None, what: str) -> frozenset[str] | None:
    from gpulens.analysis.config import ConfigError, parse_codes
    from gpulens.analysis.rules import RULES

    try:
        codes = parse_codes(value, what)
    except ConfigError as error:
        raise UsageError(f"{error}; see `gpulens check --explain CODE`") from None
    unknown = sorted(c for c in codes or () if RULES and not any(r.startswith(c) for r in RULES))
    if unknown:
        raise UsageError(
            f"{what}: {', '.join(unknown)} names no gpulens rule; known codes: "
            f"{', '.join(sorted(RULES))}"
        )
    return codes


# ---- checking -------------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> int:
    cwd = Path.cwd()
    options = _Options(args.select, args.ignore)
    _with_options(_default_config(), options)  # bad codes are a usage error before any work
    settings = _Settings(options, args.exclude, cwd)
    # as ruff: a stdin name with no paths means the text comes on stdin
    paths = args.paths or (["-"] if args.stdin_filename else ["."])
    if "-" in paths:
        if len(paths) > 1:
            raise UsageError("- (stdin) cannot be combined with other paths; check them apart")
        return _check_stdin(args, settings, cwd)

    from gpulens.commands._files import discover

    found = discover(paths, settings.excludes, force_exclude=args.force_exclude)
    for problem in found.problems:
        print(f"error: {problem}", file=sys.stderr)
    jobs = [_job(str(t.path), str(t.absolute), settings, args.fix) for t in found.files]
    jobs = _with_profiles(jobs, _load_profiles(args.profile))
    if not jobs and not found.problems:
        print("warning: no Python files or notebooks found under the given paths", file=sys.stderr)
    results = run_project(jobs)
    return _report(results, args, sys.stdout, unreadable=len(found.problems))


def _default_config() -> Config:
    from gpulens.analysis import DEFAULT_CONFIG

    return DEFAULT_CONFIG


def _job(shown: str, absolute: str | None, settings: _Settings, fix: bool) -> Job:
    from gpulens.commands._check_file import Job

    folder = Path(absolute).parent if absolute else Path.cwd()
    config, _ = settings.for_folder(folder)
    return Job(shown, absolute, config.for_file(_relative(shown)), fix, shown.endswith(".ipynb"))


def _relative(shown: str) -> Path:
    """The path as the project sees it: relative to the working folder where it lies there."""
    path = Path(shown)
    if path.is_absolute():
        try:
            return path.relative_to(Path.cwd())
        except ValueError:
            return Path(path.name)
    return path


def _check_stdin(args: argparse.Namespace, settings: _Settings, cwd: Path) -> int:
    from gpulens.commands._check_file import check_file

    name = args.stdin_filename or "-"
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{name}: stdin is not valid UTF-8 (byte 0x{data[error.start]:02x} at offset "
            f"{error.start}); send UTF-8 text"
        ) from None
    absolute = (cwd / name).resolve() if args.stdin_filename else cwd / "-"
    config, _ = settings.for_folder(absolute.parent)
    config = config.for_file(_relative(name))
    from gpulens.commands._check_file import Job

    profiles = tuple(payload for _, payload in _load_profiles(args.profile))
    job = Job(name, None, config, args.fix, name.endswith(".ipynb"), text, profiles)
    result = check_file(job)
    if args.fix and result.fixed_text is not None:
        # the fixed text goes to stdout, as editors and formatters expect; the report to stderr
        sys.stdout.write(result.fixed_text)
        return _report([result], args, sys.stderr)
    return _report([result], args, sys.stdout)


# ---- saved profiles -------------------------------------------------------------------------


def _load_profiles(paths: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """Each saved profile named by --profile, read; a UsageError for one that is not."""
    loaded = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                payload = json.load(handle)
        except (OSError, UnicodeDecodeError, ValueError) as error:
            reason = getattr(error, "strerror", None) or error
            raise UsageError(
                f"--profile {path}: cannot read it as a saved profile ({reason}); save one with "
                "`gpulens profile FILE -o OUT --format json`"
            ) from None
        if not isinstance(payload, dict) or not str(payload.get("schema", "")).startswith(
            "gpulens.profile/"
        ):
            raise UsageError(f"--profile {path}: not a gpulens profile (no gpulens.profile schema)")
        loaded.append((path, payload))
    return loaded


def _with_profiles(jobs: list[Job], profiles: Sequence[tuple[str, dict[str, Any]]]) -> list[Job]:
    """The jobs, each with the profiles of its file: a script's by its path (as it was given
    to `gpulens profile`, from this folder, or the one file checked of that name), a
    notebook cell's (which names no file) the one notebook checked."""
    if not profiles:
        return jobs
    given: dict[int, list[dict[str, Any]]] = {}
    for path, payload in profiles:
        index = _profiled_job(jobs, payload)
        if index is None:
            source = payload.get("source") or {}
            what = source.get("path") or "a notebook cell"
            raise UsageError(
                f"--profile {path} is a profile of {what}, which is not among the files "
                "checked (or not the only one it could be); check that file with it"
            )
        given.setdefault(index, []).append(payload)
    return [
        replace(job, profiles=tuple(given[index])) if index in given else job
        for index, job in enumerate(jobs)
    ]


def _profiled_job(jobs: Sequence[Job], payload: dict[str, Any]) -> int | None:
    profiled = (payload.get("source") or {}).get("path")
    if not isinstance(profiled, str):
        notebooks = [i for i, job in enumerate(jobs) if job.notebook]
        return notebooks[0] if len(notebooks) == 1 else None
    target = Path(profiled).resolve()
    for index, job in enumerate(jobs):
        if job.absolute and Path(job.absolute).resolve() == target:
            return index
    named = [
        i for i, job in enumerate(jobs) if not job.notebook and Path(job.path).name == target.name
    ]
    return named[0] if len(named) == 1 else None


def run_project(jobs: Sequence[Job]) -> list[FileResult]:
    """`run_jobs`, where each Python file is analysed knowing what the other files checked
    with it pass its functions (`analysis.project.settle`). With --fix, the fixes are made
    in a last round, once every call is known."""
    from gpulens.analysis.project import ProjectView, module_name, settle

    linked = {
        job.path: index for index, job in enumerate(jobs) if not job.notebook and job.absolute
    }
    if len(linked) < 2:
        return run_jobs(jobs)
    modules = {path: module_name(Path(jobs[i].absolute or path)) for path, i in linked.items()}

    def walk(batch: Sequence[tuple[str, ProjectView]]) -> list[FileResult]:
        return run_jobs([replace(jobs[linked[p]], fix=False, project=v) for p, v in batch])

    views, walked = settle(
        modules, walk, lambda result: result.calls, lambda result: result.returns
    )
    if any(job.fix for job in jobs):
        return run_jobs(
            [
                replace(job, project=replace(views[job.path], record=False))
                if job.path in views
                else job
                for job in jobs
            ]
        )
    others = [i for i, job in enumerate(jobs) if job.path not in linked]
    results = dict(zip(others, run_jobs([jobs[i] for i in others]), strict=True))
    return [walked[job.path] if job.path in linked else results[i] for i, job in enumerate(jobs)]


def run_jobs(jobs: Sequence[Job], workers: int | None = None) -> list[FileResult]:
    """Check every job, in worker processes when there is enough source to pay for them.
    Results come back in the order of ``jobs``."""
    from gpulens.commands._check_file import check_file, check_files

    sizes = [_source_bytes(job) for job in jobs]
    if workers is None:
        workers = _worker_count(sizes)
    if workers <= 1:
        return [check_file(job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: the workers start with the analysis already imported (a fresh interpreter would
    # pay gpulens' import again in each); this process runs no threads to inherit
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    # largest files first, so that the last tasks are short ones
    order = sorted(range(len(jobs)), key=lambda i: -sizes[i])
    ready = _picklable(jobs)
    size = max(1, -(-len(jobs) // (workers * _CHUNKS_PER_WORKER)))
    chunks = [[ready[i] for i in order[k : k + size]] for k in range(0, len(order), size)]
    results: list[FileResult | None] = [None] * len(jobs)
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        done = (result for chunk in pool.map(check_files, chunks) for result in chunk)
        for index, result in zip(order, done, strict=True):
            results[index] = result
    return [result for result in results if result is not None]


def _source_bytes(job: Job) -> int:
    if job.text is not None:
        return len(job.text)
    try:
        return os.stat(job.absolute or job.path).st_size
    except OSError:
        return 0  # reported when the file is read


def _picklable(jobs: Sequence[Job]) -> list[Job]:
    """Config's severity table is a read-only mapping proxy, which pickle refuses: hand the
    workers a plain dict (each distinct config converted once)."""
    converted: dict[int, Config] = {}
    result = []
    for job in jobs:
        key = id(job.config)
        if key not in converted:
            converted[key] = replace(job.config, severity=dict(job.config.severity))
        result.append(replace(job, config=converted[key]))
    return result


def _worker_count(sizes: Sequence[int]) -> int:
    total = sum(sizes)
    if len(sizes) < PARALLEL_MIN_FILES or total < PARALLEL_MIN_BYTES:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, len(sizes) // 2, total // _BYTES_PER_WORKER))


def _report(
    results: Sequence[FileResult], args: argparse.Namespace, out: TextIO, unreadable: int = 0
) -> int:
    """Print the findings and the closing line; the exit status. ``unreadable`` paths were
    reported already and left out."""
    from gpulens.commands import _output

    failed = unreadable > 0
    for result in sorted(results, key=lambda r: r.path):
        if result.error:
            print(f"error: {result.error}", file=sys.stderr)
            failed = True
        for cell, problem in result.syntax_problems:
            place = _output.where(result.path, cell, problem.line, problem.column)
            print(
                f"{place}: syntax error: {problem.message} (checked the parts that parse)",
                file=sys.stderr,
            )
        for note in result.notes:
            print(f"warning: {result.path}: {note}", file=sys.stderr)
    findings = _output.ordered(results)
    if args.format == "json":
        _output.write_json(findings, out, origins=bool(getattr(args, "profile", None)))
    else:
        _output.write_text(findings, out)
        fixed = sum(r.fixed for r in results)
        closing = _output.summary(findings, fixed, args.fix)
        if failed and not findings:
            closing = "No problems found in the files that could be read."
        # with nothing read, the errors say it all
        if findings or not failed or any(not r.error for r in results):
            out.write(closing + "\n")
    if failed:
        return 2
    return 1 if any(located.finding.severity.blocks for _, located in findings) else 0
