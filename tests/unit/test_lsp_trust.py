"""The trust rule's pieces: what counts as the client vouching for its settings."""

from __future__ import annotations

from collections import namedtuple

import pytest

from gpulens.lsp.trust import may_profile, probe_interpreter, workspace_trust


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"workspaceTrusted": True}, True),
        ({"workspaceTrusted": False, "gpulens": {}}, False),
        ({"gpulens": {"workspaceTrusted": True}}, None),  # inside the settings: a folder's to set
        ({"workspaceTrusted": "true"}, None),
        ({"workspaceTrusted": 1}, None),
        (None, None),
        ([True], None),
    ],
)
def test_only_a_boolean_beside_the_settings_says_trust(options: object, expected: bool | None):
    assert workspace_trust(options) is expected


def test_pygls_namedtuples_are_read_like_dicts() -> None:
    options = namedtuple("Object", ["workspaceTrusted"])(workspaceTrusted=False)
    assert workspace_trust(options) is False


def test_the_configured_interpreter_probes_only_in_a_trusted_folder() -> None:
    assert probe_interpreter("/repo/python", True) == "/repo/python"
    assert probe_interpreter("/repo/python", False) is None
    assert probe_interpreter("/repo/python", None) is None


def test_profiling_is_refused_only_where_the_client_said_untrusted() -> None:
    assert may_profile(True) and may_profile(None)
    assert not may_profile(False)
