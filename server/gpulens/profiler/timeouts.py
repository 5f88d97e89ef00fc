"""How long a profile may run: imported alone by the settings schema, which the language
server reads before it answers `initialize` (the runner itself loads on the first profile)."""

DEFAULT_TIMEOUT_S = 600.0
