"""The `gpulens` settings section (`gpulens.lsp.schema`): read from the editor, validated,
merged with pyproject.toml. The one place the server reads it: the status poller and the
profiler take their settings from here.

Sources, later ones winning: `[tool.gpulens]` of the document's pyproject.toml, the editor's
settings (initializationOptions, then the workspace's: `workspace/configuration`, asked once
per change, or a section pushed in `workspace/didChangeConfiguration`), then the device picked
with the `gpulens.selectDevice` command. A bad value is reported once and ignored; the rest
of the settings still apply.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from gpulens.analysis.config import (
    DEFAULT_CONFIG,
    Config,
    ConfigError,
    load_config,
    parse_codes,
    parse_device,
    parse_severities,
)
from gpulens.analysis.model import Severity
from gpulens.lsp.schema import (
    DEFAULT_STATUS_INTERVAL_S,
    MAX_RANKS,
    PROFILE_MEMORY_VIEWS,
    SECTION,
)
from gpulens.lsp.trust import workspace_trust

if TYPE_CHECKING:
    from gpulens.lsp.server import GpulensServer

logger = logging.getLogger(__name__)

# pyproject.toml is read again when its cached config is older than this: edits to
# `[tool.gpulens]` apply without a restart, at the cost of one small file read per interval.
PROJECT_RECHECK_S = 2.0

# How long a document waits for the first `workspace/configuration` answer before it is
# analysed with defaults: long enough for a live client, short enough for a silent one.
FIRST_SETTINGS_TIMEOUT_S = 2.0


@dataclass(frozen=True, slots=True)
class EditorSettings:
    """What the editor set; None means "not set here" (pyproject.toml or the default applies)."""

    device: str | None = None
    status_interval_seconds: float = DEFAULT_STATUS_INTERVAL_S
    select: frozenset[str] | None = None
    ignore: frozenset[str] | None = None
    severity: Mapping[str, Severity] = field(default_factory=lambda: MappingProxyType({}))
    profile_python: str | None = None
    profile_timeout_seconds: float | None = None
    # ranks a cell that calls `init_process_group` runs as; None: one per visible GPU
    profile_ranks: int | None = None
    # the GPU memory views a profile records (`schema.PROFILE_MEMORY_VIEWS`)
    profile_memory: str = "reserved"


def _flatten(raw: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested and dotted forms alike: {"rules": {"ignore": x}} == {"rules.ignore": x}."""
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name != "rules.severity":
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _positive_number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{what} must be a positive number of seconds, got {value!r}")
    return float(value)


def _ranks(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RANKS:
        raise ConfigError(
            f"gpulens.profile.ranks must be a whole number from 1 to {MAX_RANKS} (unset: one "
            f"per GPU), got {value!r}"
        )
    return value


def _memory_views(value: object) -> str:
    if value is None:
        return "reserved"
    if value not in PROFILE_MEMORY_VIEWS:
        raise ConfigError(
            f"gpulens.profile.memory must be one of {', '.join(PROFILE_MEMORY_VIEWS)}, "
            f"got {value!r}"
        )
    return str(value)


def plain(value: object) -> object:
    """JSON-like data as dicts and lists (pygls may hand over namedtuples for JSON objects)."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


# each setting's parser: its value to the EditorSettings fields it sets
_PARSERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "device": lambda v: {"device": None if v in (None, "") else parse_device(v, "gpulens.device")},
    "statusIntervalSeconds": lambda v: {
        "status_interval_seconds": _positive_number(v, "gpulens.statusIntervalSeconds")
    },
    "rules.select": lambda v: {"select": _codes(v, "gpulens.rules.select")},
    "rules.ignore": lambda v: {"ignore": _codes(v, "gpulens.rules.ignore", empty=True)},
    "rules.severity": lambda v: {"severity": _severities(v)},
    "profile.python": lambda v: {"profile_python": _optional_text(v, "gpulens.profile.python")},
    "profile.timeoutSeconds": lambda v: {
        "profile_timeout_seconds": None
        if v is None
        else _positive_number(v, "gpulens.profile.timeoutSeconds")
    },
    "profile.ranks": lambda v: {"profile_ranks": _ranks(v)},
    "profile.memory": lambda v: {"profile_memory": _memory_views(v)},
}


def known_settings() -> frozenset[str]:
    """The settings of the section the server reads, named as in it ("rules.ignore")."""
    return frozenset(_PARSERS)


# a flat section ("rules.ignore" -> value), each value with where it came from
Layer = dict[str, tuple[Any, str]]


def _layer(raw: object, origin: str) -> tuple[Layer, list[str]]:
    """The section as a layer, and what was wrong with its shape. None is no section, and
    so is `[]`: Neovim sends an empty table (`gpulens = {}`) as a JSON array."""
    raw = plain(raw)
    if raw is None or raw == []:
        return {}, []
    if not isinstance(raw, Mapping):
        problem = (
            f"gpulens: the gpulens settings must be an object, got {type(raw).__name__} "
            f"(in {origin}); using the defaults."
        )
        return {}, [problem]
    return {key: (value, origin) for key, value in _flatten(raw).items()}, []


def _parse_layer(layer: Layer) -> tuple[EditorSettings, list[str]]:
    settings = EditorSettings()
    problems: list[str] = []
    for key, (value, origin) in layer.items():
        parse = _PARSERS.get(key)
        if parse is None:
            continue  # settings of newer clients, or ones the server does not use
        try:
            settings = replace(settings, **parse(value))
        except (ConfigError, TypeError, AttributeError) as error:
            problems.append(f"gpulens: {error} (in {origin}); keeping the default for it.")
    return settings, problems


def parse_settings(raw: object, origin: str = "settings") -> tuple[EditorSettings, list[str]]:
    """Settings from the editor's `gpulens` object, and one message per value left out."""
    layer, problems = _layer(raw, origin)
    settings, more = _parse_layer(layer)
    return settings, problems + more


def _codes(value: object, what: str, empty: bool = False) -> frozenset[str] | None:
    if value is None:
        return None
    if not isinstance(value, str | list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{what} must be a list of rule codes such as ["GPU001"]')
    codes = parse_codes(value, what)
    # "ALL" selects every rule (None); in ignore it would mean nothing, so keep it out
    return frozenset() if empty and codes is None else codes


def _severities(value: object) -> Mapping[str, Severity]:
    if value is None or value == []:  # Neovim's empty table
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise ConfigError(
            'gpulens.rules.severity must map codes to severities, e.g. {"GPU006": "warning"}'
        )
    return parse_severities(value, "gpulens.rules.severity")


def _optional_text(value: object, what: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{what} must be a path, got {value!r}")
    return value


def settings_from_initialization_options(options: object) -> object:
    """The `gpulens` section inside initializationOptions, in the shapes clients send it."""
    options = plain(options)
    if not isinstance(options, Mapping):
        return None
    for key in (SECTION, "settings"):
        inner = options.get(key)
        if isinstance(inner, Mapping):
            return inner.get(SECTION, inner) if isinstance(inner.get(SECTION), Mapping) else inner
    known = {"device", "statusIntervalSeconds", "rules", "profile"}
    return options if known & set(options) else None


def merge(project: Config, editor: EditorSettings, device_override: str | None) -> Config:
    """pyproject.toml's config with the editor's settings over it."""
    changes: dict[str, Any] = {}
    if editor.select is not None:
        changes["select"] = editor.select
    if editor.ignore is not None:
        changes["ignore"] = editor.ignore
    if editor.severity:
        changes["severity"] = MappingProxyType({**project.severity, **editor.severity})
    device = device_override or editor.device
    if device is not None:
        changes["device"] = device
    return project.merged(**changes) if changes else project


class SettingsStore:
    """The settings in force, and the Config each document is analysed with.

    The editor's settings come in two layers, each parsed by `parse_settings` alone: the
    section in initializationOptions, and over it the workspace's (the answer to
    `workspace/configuration`, or a section pushed in `workspace/didChangeConfiguration`).
    A workspace without the section (an answer of null) leaves the first layer alone in
    force: removing the section restores what the editor started with.
    """

    def __init__(self, server: GpulensServer, on_change: Callable[[], None] | None = None) -> None:
        self._server = server
        self._on_change = on_change
        self.editor = EditorSettings()
        # from initializationOptions only (`gpulens.lsp.trust`): None when the client did not say
        self.workspace_trusted: bool | None = None
        self.device_override: str | None = None
        self._initial: tuple[Layer, list[str]] = ({}, [])
        self._workspace: tuple[Layer, list[str]] = ({}, [])
        self._problems: frozenset[str] = frozenset()
        self._project: dict[Path, tuple[Config, float]] = {}
        self._reported: set[str] = set()
        self.ready = asyncio.Event()

    def config_for(self, uri: str) -> Config:
        path = _path_of(uri)
        project = DEFAULT_CONFIG if path is None else self._project_config(path)
        config = merge(project, self.editor, self.device_override)
        return config if path is None else config.for_file(self._in_workspace(path))

    def _in_workspace(self, path: Path) -> Path:
        """The path relative to the workspace folder holding it (its name, outside any)."""
        for folder in self._server.workspace.folders.values():
            root = _path_of(folder.uri)
            if root is not None and path.is_relative_to(root):
                return path.relative_to(root)
        root_path = self._server.workspace.root_path
        if root_path and path.is_relative_to(root_path):
            return path.relative_to(root_path)
        return Path(path.name)

    def device_for(self, uri: str) -> str:
        return self.config_for(uri).device

    def _project_config(self, path: Path) -> Config:
        folder = path.parent
        now = time.monotonic()
        cached = self._project.get(folder)
        if cached is not None and now - cached[1] < PROJECT_RECHECK_S:
            return cached[0]
        try:
            config = load_config(path)
        except Exception as error:  # a broken pyproject.toml must not stop diagnostics
            self.warn_once(f"gpulens: {error}; using the default rules for {folder}.")
            config = DEFAULT_CONFIG
        self._project[folder] = (config, now)
        return config

    def forget_project_configs(self) -> None:
        self._project.clear()

    def initialize(self, options: object) -> None:
        """Take initializationOptions: the folder's trust and the first layer of settings."""
        options = plain(options)
        self.workspace_trusted = workspace_trust(options)
        origin = "initializationOptions"
        self._initial = _layer(settings_from_initialization_options(options), origin)
        self._apply()

    def take_workspace_section(self, section: object, origin: str) -> bool:
        """Take the workspace's `gpulens` section (None: it has none); whether the settings
        in force changed."""
        self._workspace = _layer(section, origin)
        return self._apply()

    def can_pull(self) -> bool:
        """Whether the client answers `workspace/configuration` (Neovim 0.7 does not say so,
        and only pushes its settings)."""
        workspace = self._server.client_capabilities.workspace
        return workspace is not None and bool(workspace.configuration)

    async def pull(self) -> bool:
        """Ask the client for the workspace's section, in one `workspace/configuration`
        request, where it can answer; whether the settings in force changed."""
        if not self.can_pull():
            return False
        params = types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
        try:
            answer = await asyncio.wait_for(
                self._server.workspace_configuration_async(params), timeout=10
            )
        except Exception as error:  # a client that fails to answer keeps the settings we have
            logger.warning("workspace/configuration failed: %s", error)
            return False
        section = answer[0] if isinstance(answer, list | tuple) and answer else None
        return self.take_workspace_section(section, "workspace/configuration")

    def _apply(self) -> bool:
        (initial, shape), (workspace, more_shape) = self._initial, self._workspace
        settings, problems = _parse_layer({**initial, **workspace})
        problems = shape + more_shape + problems
        for problem in sorted(set(problems) - self._problems):
            self.warn(problem)  # once while it stays: a re-read must not pop it up again
        self._problems = frozenset(problems)
        changed = settings != self.editor
        self.editor = settings
        if changed and self._on_change is not None:
            self._on_change()
        return changed

    def warn(self, message: str) -> None:
        logger.warning(message)
        self._server.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message)
        )

    def warn_once(self, message: str) -> None:
        if message not in self._reported:
            self._reported.add(message)
            self.warn(message)


def _path_of(uri: str) -> Path | None:
    try:
        path = to_fs_path(uri)
    except Exception:
        return None
    return None if path is None or not uri.startswith("file:") else Path(path)


def register(server: GpulensServer) -> None:
    """Read the settings again whenever the client says they changed."""

    # Sent by clients that watch pyproject.toml for us (the VS Code client's fileEvents);
    # others see an edited `[tool.gpulens]` within PROJECT_RECHECK_S, at the next analysis.
    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def on_watched_files(ls: GpulensServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith("pyproject.toml") for change in params.changes):
            ls.settings.forget_project_configs()
            ls.diagnostics.refresh_all()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_did_change_configuration(
        ls: GpulensServer, params: types.DidChangeConfigurationParams
    ) -> None:
        ls.settings.forget_project_configs()
        pushed = plain(params.settings)
        origin = "workspace/didChangeConfiguration"
        if isinstance(pushed, Mapping) and SECTION in pushed:
            ls.settings.take_workspace_section(pushed[SECTION], origin)
        elif ls.settings.can_pull():
            await ls.settings.pull()  # the modern way: the notification only says "changed"
        elif pushed is not None:
            # all the settings of a client that cannot be asked, ours not among them (Neovim
            # sends an empty table as []): the section was removed
            ls.settings.take_workspace_section(None, origin)
        # pyproject.toml may have changed too, so re-publish even when the editor's did not
        ls.diagnostics.refresh_all()
