"""Whether the server may run an interpreter named in the editor's settings.

Editors take settings from the project folder too (VS Code's workspace settings, Neovim's
exrc, Helix's and Zed's project config), so `gpulens.profile.python` may be the repository's
choice rather than the user's: running it would run code the user never asked to run. The rule:

- ``workspaceTrusted: true`` in ``initializationOptions`` (the VS Code client sends it once the
  user trusts the folder): the settings are the user's; `profile.python` runs the status probes
  and the profiles.
- ``workspaceTrusted: false``: nothing the settings name is ever executed. Status probes run the
  server's own interpreter, and `gpulens.profileCell` is refused with the reason.
- no flag (most editors): status probes run the server's own interpreter, so opening a folder
  runs nothing it chose; `profile.python` runs only when the user asks for a profile, which
  runs the folder's code anyway.

Only ``initializationOptions`` carry the flag. `workspace/configuration` answers and
`workspace/didChangeConfiguration` carry settings a folder may set, so they never raise trust.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TRUST_OPTION = "workspaceTrusted"

UNTRUSTED_PROFILE = (
    "the workspace is not trusted, so gpulens runs none of its code; trust the folder in "
    "your editor, then profile again"
)
UNTRUSTED_LENS = "Profile cell (trust the folder to run it)"


def workspace_trust(initialization_options: Any) -> bool | None:
    """What the client said about the folder's trust: True, False, or None (it did not say)."""
    if hasattr(initialization_options, "_asdict"):  # pygls' namedtuple for a JSON object
        initialization_options = initialization_options._asdict()
    if not isinstance(initialization_options, Mapping):
        return None
    value = initialization_options.get(TRUST_OPTION)
    return value if isinstance(value, bool) else None


def probe_interpreter(configured: str | None, trusted: bool | None) -> str | None:
    """The interpreter the status probes may run: the configured one only in a trusted folder;
    None means the server's own."""
    return configured if trusted is True else None


def may_profile(trusted: bool | None) -> bool:
    """Profiling runs the folder's code: refused only where the client said it is untrusted."""
    return trusted is not False
