#!/usr/bin/env bash
# Installs what the Neovim test needs, once: Debian's neovim (0.7.2 on Debian 12) through apt,
# as extension/test/e2e/setup.sh installs Chromium. Prints the nvim to run on its last line.
# Cached runs take well under a second.
set -euo pipefail

log() { echo "neovim setup: $*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    log "need root for: $*"; return 1
  fi
}

if ! command -v nvim >/dev/null; then
  log "apt-get install neovim"
  as_root apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends neovim >&2
fi

command -v nvim
