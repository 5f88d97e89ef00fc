"""Which files `gpulens check` reads: named files always, directories walked for `*.py` and
`*.ipynb`, minus what `.gitignore` files, the default skips and exclude patterns leave out."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from gpulens.commands._paths import not_regular, unreachable

SOURCE_SUFFIXES = (".py", ".ipynb")
# folders that hold someone else's code, caches or build output; skipped unless named
DEFAULT_SKIPS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        "build",
        "dist",
        ".tox",
        ".nox",
        "site-packages",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
    }
)


class InvalidPattern(ValueError):
    """A gitignore-style pattern that does not compile; the message names it."""


@dataclass(frozen=True, slots=True)
class Patterns:
    """Gitignore-style patterns anchored at ``base``, an absolute folder."""

    base: Path
    spec: pathspec.GitIgnoreSpec

    @staticmethod
    def of(lines: Sequence[str], base: Path) -> Patterns | None:
        """Raises InvalidPattern for the first line that is not a valid pattern."""
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(lines)
        except (ValueError, re.error) as error:
            bad = next((line for line in lines if not _valid(line)), "")
            raise InvalidPattern(
                f"{bad!r} is not a valid gitignore-style pattern ({error})"
            ) from None
        return Patterns(base, spec) if len(spec) else None

    @staticmethod
    def lenient(lines: Sequence[str], base: Path) -> Patterns | None:
        """`of`, leaving out the lines that are not valid patterns (a .gitignore's typo
        must not stop the walk)."""
        try:
            return Patterns.of(lines, base)
        except InvalidPattern:
            return Patterns.of([line for line in lines if _valid(line)], base)

    def verdict(self, absolute: Path, is_dir: bool) -> bool | None:
        """True: excluded, False: re-included by a `!` pattern, None: no pattern matches."""
        try:
            relative = absolute.relative_to(self.base).as_posix()
        except ValueError:
            return None
        return self.spec.check_file(relative + ("/" if is_dir else "")).include


# folder (absolute) -> the exclude patterns that apply there (config and --exclude)
ExcludeLookup = Callable[[Path], tuple[Patterns, ...]]


@dataclass(frozen=True, slots=True)
class Target:
    path: Path  # as the user will see it: the argument joined with the walked names
    absolute: Path


@dataclass(slots=True)
class Discovery:
    files: list[Target] = field(default_factory=list)
    # paths that could not be read (missing, unreadable, not a regular file), each as the
    # one line that says so; the other files are still checked
    problems: list[str] = field(default_factory=list)


def discover(
    arguments: Sequence[str], excludes_for: ExcludeLookup, force_exclude: bool = False
) -> Discovery:
    """Files to check, in a stable order, each once.

    Named files are checked even when ignored or excluded, unless ``force_exclude`` (pre-commit
    names every staged file, and excluded ones should stay quiet there too).
    """
    result = Discovery()
    seen: set[Path] = set()
    for argument in arguments:
        path = Path(os.path.normpath(argument))
        try:
            mode = os.stat(path).st_mode
        except OSError as error:
            result.problems.append(unreachable(argument, str(path), error))
            continue
        absolute = Path(os.path.realpath(path))
        if stat.S_ISDIR(mode):
            found: Iterator[Target] = _walk(path, absolute, excludes_for, result.problems)
        elif stat.S_ISREG(mode):
            if force_exclude and _excluded(absolute, False, excludes_for(absolute.parent)):
                continue
            found = iter([Target(path, absolute)])
        else:
            result.problems.append(not_regular(argument, mode))
            continue
        for target in found:
            if target.absolute not in seen:
                seen.add(target.absolute)
                result.files.append(target)
    return result


def _walk(
    root: Path, absolute: Path, excludes_for: ExcludeLookup, problems: list[str]
) -> Iterator[Target]:
    ignores = _ancestor_ignores(absolute)
    if _ignored(absolute, True, ignores, ()):
        # the user named an ignored folder (`gpulens check build/`): check it, and let only
        # the .gitignore files inside it decide
        ignores = []
    yield from _walk_folder(root, absolute, ignores, excludes_for, problems)


def _walk_folder(
    folder: Path,
    absolute: Path,
    ignores: list[Patterns],
    excludes_for: ExcludeLookup,
    problems: list[str],
) -> Iterator[Target]:
    own = _read_ignore_file(absolute / ".gitignore", absolute)
    if own is not None:
        ignores = [*ignores, own]
    excludes = excludes_for(absolute)
    try:
        entries = sorted(os.scandir(absolute), key=lambda e: e.name)
    except OSError as error:
        problems.append(
            f"{folder}: cannot list the folder ({error.strerror or error}), so nothing in it "
            "was checked; allow reading it or exclude it"
        )
        return
    for entry in entries:
        child = absolute / entry.name
        try:
            is_folder = entry.is_dir(follow_symlinks=False)  # links to folders are not followed
        except OSError as error:
            problems.append(unreachable(str(folder / entry.name), entry.path, error))
            continue
        if is_folder:
            if entry.name in DEFAULT_SKIPS or _ignored(child, True, ignores, excludes):
                continue
            yield from _walk_folder(folder / entry.name, child, ignores, excludes_for, problems)
        elif entry.name.endswith(SOURCE_SUFFIXES) and not _ignored(child, False, ignores, excludes):
            shown = folder / entry.name
            try:
                # follows a link; a plain file's type comes with the listing, at no cost
                regular = entry.is_file()
                mode = 0 if regular else os.stat(entry.path).st_mode
            except OSError as error:
                problems.append(unreachable(str(shown), entry.path, error))
                continue
            if regular:
                yield Target(shown, child)
            elif not stat.S_ISDIR(mode):  # a link to a folder named x.py is not followed
                advice = "it was not checked: exclude it or rename it"
                problems.append(not_regular(str(shown), mode, advice))


def _excluded(absolute: Path, is_dir: bool, excludes: tuple[Patterns, ...]) -> bool:
    return any(p.verdict(absolute, is_dir) for p in excludes)


def _ignored(
    absolute: Path, is_dir: bool, ignores: list[Patterns], excludes: tuple[Patterns, ...]
) -> bool:
    if _excluded(absolute, is_dir, excludes):
        return True
    # as git does: the deepest .gitignore with a matching pattern decides
    verdict = False
    for level in ignores:
        found = level.verdict(absolute, is_dir)
        if found is not None:
            verdict = found
    return verdict


def _valid(pattern: str) -> bool:
    try:
        pathspec.GitIgnoreSpec.from_lines([pattern])
    except (ValueError, re.error):
        return False
    return True


def _read_ignore_file(path: Path, base: Path) -> Patterns | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return Patterns.lenient(text.splitlines(), base)


def _ancestor_ignores(root: Path) -> list[Patterns]:
    """`.git/info/exclude` and the `.gitignore` files above ``root`` up to its repository's
    top: a walk of `src/` still honours the top-level `.gitignore`."""
    chain: list[Path] = []
    for folder in (root, *root.parents):
        if folder != root:
            chain.append(folder)
        if os.path.exists(folder / ".git"):  # never raises, unlike Path.exists
            top = folder
            break
    else:
        return []  # not in a repository: only the .gitignore files inside root count
    levels = [_read_ignore_file(top / ".git" / "info" / "exclude", top)]
    levels.extend(_read_ignore_file(folder / ".gitignore", folder) for folder in reversed(chain))
    return [level for level in levels if level is not None]
