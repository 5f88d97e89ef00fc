"""What the user chose: rule selection, severities, the device fixes write, suppressions."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePath
from types import MappingProxyType, ModuleType

from gpulens.analysis.model import Edit, Finding, Severity, Span


class ConfigError(ValueError):
    """A `[tool.gpulens]` table or a setting the user wrote is not what we understand."""


@dataclass(frozen=True, slots=True)
class Config:
    # None selects every rule; codes may be prefixes ("GPU00" selects GPU001..GPU009)
    select: frozenset[str] | None = None
    ignore: frozenset[str] = frozenset()
    severity: Mapping[str, Severity] = field(default_factory=lambda: MappingProxyType({}))
    # what "Move to device" and the device fixes write when the file has no device variable
    device: str = "cuda"
    exclude: tuple[str, ...] = ()
    # test files (`tests/`, `test_*.py`, `*_test.py`, `conftest.py`) get findings too
    tests: bool = False

    def enabled(self, code: str) -> bool:
        # asked thousands of times an analysis, mostly with nothing ignored
        if self.ignore and any(code.startswith(prefix) for prefix in self.ignore):
            return False
        return self.select is None or any(code.startswith(prefix) for prefix in self.select)

    def severity_of(self, code: str, default: Severity) -> Severity:
        return self.severity.get(code, default)

    def merged(self, **changes: object) -> Config:
        return replace(self, **changes)  # type: ignore[arg-type]

    def for_file(self, path: str | PurePath) -> Config:
        """The config one file is checked with: performance advice in a unit test is noise,
        so a test file gets no findings unless `tests = true`. ``path`` is best relative to
        the project (a folder named `tests` above the project does not make a test file)."""
        if self.tests or not is_test_file(path):
            return self
        return self.merged(select=frozenset())


_TEST_FILE = re.compile(r"^(test_.+|.+_test|conftest)\.py$")
_TEST_FOLDERS = frozenset({"tests", "test"})


def is_test_file(path: str | PurePath) -> bool:
    """`tests/…`, `test/…`, `test_*.py`, `*_test.py`, `conftest.py`."""
    path = PurePath(path)
    return bool(_TEST_FILE.match(path.name)) or any(p in _TEST_FOLDERS for p in path.parts[:-1])


DEFAULT_CONFIG = Config()

_CODE = re.compile(r"^GPU\d{0,3}$")
# torch device strings the fixes may write; an index only where the backend has several
_DEVICE = re.compile(r"^(?:cpu|mps|meta|(?:cuda|xpu|hpu|npu|xla|mtia|privateuseone)(?::\d+)?)$")


def parse_device(value: object, what: str = "device") -> str:
    """A device string the fixes may write (``cuda:1``), stripped; ConfigError otherwise."""
    if not isinstance(value, str) or not _DEVICE.match(value.strip()):
        raise ConfigError(
            f"{what}: {value!r} is not a device gpulens can write; "
            "use cpu, cuda, cuda:N, mps or xpu"
        )
    return value.strip()


def parse_codes(values: Iterable[str] | str | None, what: str) -> frozenset[str] | None:
    """Codes from a setting or a `--select GPU001,GPU004` option; None when absent."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [v for v in values.split(",")]
    if not isinstance(values, list | tuple | frozenset | set) or not all(
        isinstance(v, str) for v in values
    ):
        raise ConfigError(f'{what} must be a list of rule codes such as ["GPU001", "GPU004"]')
    codes = frozenset(v.strip().upper() for v in values if v.strip())
    bad = sorted(c for c in codes if not _CODE.match(c) and c != "ALL")
    if bad:
        raise ConfigError(f"{what}: {', '.join(bad)} is not a gpulens rule code (GPU001..GPU011)")
    return None if "ALL" in codes else codes


def parse_severities(table: Mapping[str, object] | None, what: str) -> Mapping[str, Severity]:
    if not table:
        return MappingProxyType({})
    result: dict[str, Severity] = {}
    for code, value in table.items():
        try:
            result[code.upper()] = Severity(str(value).lower())
        except ValueError:
            raise ConfigError(
                f"{what}: severity of {code} must be one of error, warning, info, hint; "
                f"got {value!r}"
            ) from None
    return MappingProxyType(result)


def config_from_mapping(table: Mapping[str, object], what: str = "[tool.gpulens]") -> Config:
    """Build a Config from `[tool.gpulens]` or the editor's `gpulens.rules` settings."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{what} must be a table")
    known = {"select", "ignore", "severity", "device", "exclude", "extend-exclude", "tests"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"{what}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    select = parse_codes(table.get("select"), f"{what}.select")  # type: ignore[arg-type]
    ignore = parse_codes(table.get("ignore"), f"{what}.ignore") or frozenset()  # type: ignore[arg-type]
    severity = parse_severities(table.get("severity"), f"{what}.severity")  # type: ignore[arg-type]
    device = table.get("device", "cuda")
    if not isinstance(device, str) or not device:
        raise ConfigError(f'{what}.device must be a device string such as "cuda:1"')
    patterns: list[str] = []
    for key in ("exclude", "extend-exclude"):
        value = table.get(key, [])
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{what}.{key} must be a list of path patterns")
        patterns.extend(str(v) for v in value)
    exclude = tuple(patterns)
    tests = table.get("tests", False)
    if not isinstance(tests, bool):
        raise ConfigError(f"{what}.tests must be true or false")
    return Config(
        select=select,
        ignore=ignore,
        severity=severity,
        device=device,
        exclude=exclude,
        tests=tests,
    )


def find_pyproject(start: Path, within: Path | None = None) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a `[tool.gpulens]` table;
    with ``within``, only folders inside it are looked in."""
    # os.path's tests never raise: a folder we may not enter simply holds no pyproject.toml
    here = start if os.path.isdir(start) else start.parent
    folders = (here, *here.parents)
    if within is not None:
        folders = tuple(f for f in folders if f.is_relative_to(within))
    for folder in folders:
        candidate = folder / "pyproject.toml"
        if os.path.isfile(candidate):
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "gpulens" not in text:
                continue
            try:
                data = _toml().loads(text)
            except _toml().TOMLDecodeError as error:
                raise ConfigError(
                    f"{candidate} is not valid TOML ({error}); fix it or remove [tool.gpulens]"
                ) from None
            if "gpulens" in data.get("tool", {}):
                return candidate
    return None


def load_config(start: Path, within: Path | None = None) -> Config:
    """Config from the nearest pyproject.toml with a `[tool.gpulens]` table (at or above
    ``start``, inside ``within`` when given), else defaults."""
    path = find_pyproject(start, within)
    if path is None:
        return DEFAULT_CONFIG
    data = _toml().loads(path.read_text(encoding="utf-8"))
    return config_from_mapping(data["tool"]["gpulens"], f"{path}: [tool.gpulens]")


# `# gpulens: ignore` silences every rule on its line, `# gpulens: ignore[GPU001, GPU004]` some
_SUPPRESSION = re.compile(r"#\s*gpulens:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")


def suppressions(lines: list[str]) -> dict[int, frozenset[str] | None]:
    """Line (0-based) -> codes suppressed there; None means every code."""
    found: dict[int, frozenset[str] | None] = {}
    for index, line in enumerate(lines):
        if "gpulens" not in line:
            continue
        match = _SUPPRESSION.search(line)
        if match is None:
            continue
        codes = match.group("codes")
        found[index] = (
            None
            if codes is None
            else frozenset(c.strip().upper() for c in codes.split(",") if c.strip())
        )
    return found


def suppression_edit(line_text: str, line: int, code: str) -> Edit:
    """The edit that silences ``code`` on a line: the code added to the line's
    `# gpulens: ignore[...]`, or such a comment appended."""
    content = line_text.rstrip("\r\n")
    match = _SUPPRESSION.search(content)
    if match is not None and match.group("codes") is None:
        return Edit(Span.point(line, len(content)), "")  # a bare ignore silences every code
    if match is not None:
        end = match.end("codes")
        joiner = ", " if match.group("codes").strip() else ""
        return Edit(Span.point(line, end), f"{joiner}{code}")
    end = len(content.rstrip())
    return Edit(Span(line, end, line, len(content)), f"  # gpulens: ignore[{code}]")


def is_suppressed(finding: Finding, table: Mapping[int, frozenset[str] | None]) -> bool:
    # a finding spanning several lines may be silenced on its first or its last line
    for line in {finding.span.line, finding.span.end_line}:
        if line in table:
            codes = table[line]
            if codes is None or finding.code in codes:
                return True
    return False


def _toml() -> ModuleType:
    """tomllib, imported when a pyproject.toml is read: the language server starts without it."""
    import tomllib

    return tomllib
