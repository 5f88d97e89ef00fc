"""workspace/executeCommand handlers: `gpulens.selectDevice`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from gpulens.analysis.config import ConfigError, parse_device

if TYPE_CHECKING:
    from gpulens.lsp.server import GpulensServer

SELECT_DEVICE = "gpulens.selectDevice"


def device_argument(arguments: tuple[object, ...]) -> str:
    """The device of `[{"device": "cuda:1"}]` or `["cuda:1"]`, validated."""
    if len(arguments) != 1:
        raise JsonRpcInvalidParams(
            f'{SELECT_DEVICE} takes one argument, {{"device": "cuda:1"}} or "cuda:1"'
        )
    (argument,) = arguments
    value = argument.get("device") if isinstance(argument, Mapping) else argument
    try:
        return parse_device(value, SELECT_DEVICE)
    except ConfigError as error:
        raise JsonRpcInvalidParams(str(error)) from None


def register(server: GpulensServer) -> None:
    # pygls reads the handler's annotations at run time to convert its arguments, so they
    # may only name what exists then (GpulensServer is imported for type checking alone)
    @server.command(SELECT_DEVICE)
    def select_device(ls: Any, *arguments: object) -> dict[str, str]:
        device = device_argument(arguments)
        ls.settings.device_override = device
        # the quick-fixes and refactors of open documents now write another device
        ls.diagnostics.refresh_all()
        return {"device": device}
