"""How often the GPU status is polled: imported alone by the settings schema, which the
language server reads before it answers `initialize` (the poller itself loads later)."""

DEFAULT_INTERVAL_S = 2.0
# Faster than this is noise for a status bar and only costs the user's CPU.
MIN_INTERVAL_S = 0.25
