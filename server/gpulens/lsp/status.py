"""LSP `gpulens/status`: a notification every ``gpulens.statusIntervalSeconds`` and a request.

How this attaches to a server someone else builds (``register(server)`` is the only contract):
pygls 2 keeps one *user* handler per method (a second ``@server.feature(INITIALIZED)`` raises
``FeatureAlreadyRegisteredError``), but it dispatches a method to its *builtin* handler first,
and its builtins are generators that ``yield`` to the user handler (see
``LanguageServerProtocol.lsp_initialized``). So we wrap the builtin handlers of ``initialize``,
``initialized``, ``workspace/didChangeConfiguration`` and ``shutdown`` in generators that do our
part and then delegate with ``yield from`` to what was there before. The server builder keeps
every ``@server.feature`` for itself, whatever order the registrations come in. Only
``gpulens/status`` (the request) is registered as a feature: that method is ours.

The poller is a daemon thread that sleeps on an Event between reads (no busy loop); payloads are
handed to the event loop with ``call_soon_threadsafe``, so request handling never waits on it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
import threading
from collections.abc import Callable, Generator, Mapping
from typing import Any

from lsprotocol import types

from gpulens.device.frameworks import FrameworkProbeCache
from gpulens.device.status import StatusSource
from gpulens.lsp.trust import probe_interpreter, workspace_trust

STATUS_METHOD = "gpulens/status"
SETTINGS_SECTION = "gpulens"
DEFAULT_INTERVAL_S = 2.0
# Faster than this is noise for a status bar and only costs the user's CPU.
MIN_INTERVAL_S = 0.25

logger = logging.getLogger(__name__)


# --- settings (pure) ----------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """pygls hands unknown JSON objects over as namedtuples; turn them back into dicts."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def gpulens_section(settings: Any) -> dict[str, Any] | None:
    """The ``gpulens`` settings from a didChangeConfiguration/initializationOptions payload.

    Accepts ``{"gpulens": {...}}`` and the already-unwrapped section (which holds
    ``statusIntervalSeconds`` itself); ``None`` when the payload does not carry it.
    """
    settings = plain(settings)
    if not isinstance(settings, dict):
        return None
    if isinstance(settings.get(SETTINGS_SECTION), dict):
        return settings[SETTINGS_SECTION]
    if "statusIntervalSeconds" in settings or "profile" in settings:
        return settings
    return None


def read_interval(section: Mapping[str, Any] | None, current: float) -> float:
    """``statusIntervalSeconds`` from the section, clamped; ``current`` when absent or invalid."""
    if not section or "statusIntervalSeconds" not in section:
        return current
    value = section["statusIntervalSeconds"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return current
    return max(MIN_INTERVAL_S, float(value))


def read_python(section: Mapping[str, Any] | None) -> str | None:
    profile = (section or {}).get("profile")
    if isinstance(profile, Mapping) and isinstance(profile.get("python"), str):
        return profile["python"] or None
    return None


# --- the poller -----------------------------------------------------------------------------------


class StatusPoller:
    """Publishes ``snapshot()`` every ``interval_s`` on a daemon thread; ``poke`` publishes now."""

    def __init__(
        self,
        snapshot: Callable[[], dict[str, Any]],
        publish: Callable[[dict[str, Any]], None],
        interval_s: float = DEFAULT_INTERVAL_S,
    ) -> None:
        self._snapshot = snapshot
        self._publish = publish
        self._interval_s = interval_s
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.published = 0

    @property
    def interval_s(self) -> float:
        return self._interval_s

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gpulens-status", daemon=True)
            self._thread.start()

    def set_interval(self, interval_s: float) -> None:
        if interval_s != self._interval_s:
            self._interval_s = interval_s
            self._wake.set()  # the new interval applies now, not after the old one runs out

    def poke(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._publish(self._snapshot())
                self.published += 1
            except Exception:  # a failed read must not end the status bar's updates
                logger.exception("gpulens status poll failed")
            self._wake.wait(self._interval_s)
            self._wake.clear()


# --- wiring -------------------------------------------------------------------------------------


def _chain_builtin(
    server: Any,
    method: str,
    before: Callable[..., None] | None = None,
    after: Callable[..., None] | None = None,
) -> None:
    """Run ``before``/``after`` around whatever handles ``method`` now (see the module doc)."""
    fm = server.protocol.fm
    original = fm.builtin_features.get(method)

    def chained(*args: Any) -> Generator[Any, Any, Any]:
        if before is not None:
            _quietly(before, *args)
        result = None
        if original is not None and inspect.isgeneratorfunction(original):
            result = yield from original(*args)
        elif original is not None:
            result = original(*args)
        elif (user_handler := fm.features.get(method)) is not None:
            result = yield user_handler, args, None
        if after is not None:
            _quietly(after, *args)
        return result

    fm.add_builtin_feature(method, chained)


def _quietly(hook: Callable[..., None], *args: Any) -> None:
    try:
        hook(*args)
    except Exception:  # our hook must never break the other handlers of this message
        logger.exception("gpulens status hook failed")


class _StatusFeature:
    """The state behind one server's status: settings, poller, source."""

    def __init__(self, server: Any, source: StatusSource | None) -> None:
        self.server = server
        self.source = source or StatusSource(probes=FrameworkProbeCache())
        self.loop: asyncio.AbstractEventLoop | None = None
        self.poller = StatusPoller(self.source.snapshot, self._publish)
        self.init_options: Any = None
        # what the client said in initialize; the probes run a configured interpreter only
        # in a trusted folder (`gpulens.lsp.trust`)
        self.trusted: bool | None = None

    def _publish(self, payload: dict[str, Any]) -> None:
        notify = self.server.protocol.notify
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(notify, STATUS_METHOD, payload)
        elif loop is None:
            notify(STATUS_METHOD, payload)

    def apply_settings(self, section: Mapping[str, Any] | None) -> None:
        if section is None:
            return
        python = probe_interpreter(read_python(section), self.trusted)
        self.source.probes.set_python(python or sys.executable)
        self.poller.set_interval(read_interval(section, self.poller.interval_s))

    def pull_settings(self) -> None:
        """Ask the client for the ``gpulens`` section when it supports workspace/configuration."""
        capabilities = getattr(self.server.protocol, "client_capabilities", None)
        workspace = getattr(capabilities, "workspace", None)
        if not getattr(workspace, "configuration", False):
            return

        def received(future: Any) -> None:
            try:
                values = future.result()
            except Exception:  # a client that fails the request keeps the current settings
                return
            if values:
                self.apply_settings(gpulens_section({SETTINGS_SECTION: plain(values[0])}))

        params = types.ConfigurationParams(
            items=[types.ConfigurationItem(section=SETTINGS_SECTION)]
        )
        future = self.server.protocol.send_request(types.WORKSPACE_CONFIGURATION, params)
        future.add_done_callback(received)

    def _publish_when_probed(self) -> None:
        self.source.probes.get(block=True)
        self.poller.poke()

    # hooks

    def on_initialize(self, params: types.InitializeParams, *_: Any) -> None:
        self.trusted = workspace_trust(params.initialization_options)
        self.apply_settings(gpulens_section(params.initialization_options))

    def on_initialized(self, *_: Any) -> None:
        try:
            self.loop = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None
        # Probe frameworks in the background now, and publish again the moment they are known.
        threading.Thread(
            target=self._publish_when_probed, name="gpulens-probe-wait", daemon=True
        ).start()
        self.poller.start()  # its first pass publishes at once: the status right after initialized
        self.pull_settings()

    def on_did_change_configuration(
        self, params: types.DidChangeConfigurationParams, *_: Any
    ) -> None:
        section = gpulens_section(params.settings)
        if section is not None:
            self.apply_settings(section)
        else:  # pull-model clients send an empty change: fetch the section ourselves
            self.pull_settings()
        if not self.poller.running:
            self.on_initialized()

    def on_shutdown(self, *_: Any) -> None:
        self.poller.stop()


def register(server: Any, source: StatusSource | None = None) -> _StatusFeature:
    """Attach status polling and the `gpulens/status` request to ``server`` (call once)."""
    feature = _StatusFeature(server, source)
    _chain_builtin(server, types.INITIALIZE, before=feature.on_initialize)
    _chain_builtin(server, types.INITIALIZED, after=feature.on_initialized)
    _chain_builtin(
        server,
        types.WORKSPACE_DID_CHANGE_CONFIGURATION,
        before=feature.on_did_change_configuration,
    )
    _chain_builtin(server, types.SHUTDOWN, before=feature.on_shutdown)

    @server.feature(STATUS_METHOD)
    async def status_request(params: Any = None) -> dict[str, Any]:
        # Off the event loop: the first NVML init can take a while on a many-GPU machine.
        params = plain(params) or {}
        if isinstance(params, dict) and params.get("refreshFrameworks"):
            feature.source.probes.refresh()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, feature.source.snapshot)

    server.gpulens_status = feature  # lets tests and benchmarks reach the poller
    return feature


def build_bare_server() -> Any:
    """A language server with only the status feature: for benchmarks and tests of this module."""
    from pygls.lsp.server import LanguageServer

    from gpulens import __version__

    server = LanguageServer("gpulens-status", __version__)
    register(server)
    return server


if __name__ == "__main__":
    build_bare_server().start_io()
