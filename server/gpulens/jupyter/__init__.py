"""The jupyter-server extension: `GET /gpulens/status`, `GET /gpulens/doctor` and
`POST /gpulens/analyze` (a notebook's findings, fixes and refactors as edits).

Enabled on install by ``jupyter_server_config.d/gpulens.json`` (shipped in the wheel), or by
hand with ``--ServerApp.jpserver_extensions="{'gpulens.jupyter': True}"``.
"""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "gpulens.jupyter"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from gpulens.jupyter.handlers import setup_handlers

    setup_handlers(serverapp)
    serverapp.log.info("gpulens: serving /gpulens/status, /gpulens/doctor and /gpulens/analyze")
