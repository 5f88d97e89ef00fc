#!/usr/bin/env bash
# Installs what the end-to-end test needs, once, into the repository's .cache/:
#   - code-server (a real VS Code build served to a browser), keyed by version;
#   - Debian's Chromium for Playwright (never a downloaded browser).
# Usage: extension/test/e2e/setup.sh REPO_ROOT
# Prints the code-server entry point on its last line. Cached runs take well under a second.
set -euo pipefail

ROOT=$(cd "${1:?usage: setup.sh REPO_ROOT}" && pwd)
VERSION=${CODE_SERVER_VERSION:-4.100.3}  # the last line that runs on Node 20
CACHE="$ROOT/.cache/code-server/$VERSION"
ENTRY="$CACHE/node_modules/code-server/out/node/entry.js"
STAMP="$CACHE/.installed"

log() { echo "e2e setup: $*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    log "need root for: $*"; return 1
  fi
}

apt_install() {
  local missing=()
  for package in "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  as_root apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

if [ ! -x /usr/bin/chromium ]; then
  apt_install chromium
fi

if [ ! -f "$STAMP" ] || [ ! -f "$ENTRY" ]; then
  started=$(date +%s)
  # native modules of code-server (kerberos, native-keymap, keytar) and rg for the ripgrep cache
  apt_install libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config ripgrep build-essential python3
  rm -rf "$CACHE"
  mkdir -p "$CACHE/tmp"
  # @vscode/ripgrep's postinstall downloads rg from GitHub; hand it Debian's rg through the
  # download cache it reads first (os.tmpdir()/vscode-ripgrep-cache-<its version>/).
  for rg_version in 1.15.11 1.15.9 1.15.10 1.15.12 1.15.13 1.15.14; do
    rg_cache="$CACHE/tmp/vscode-ripgrep-cache-$rg_version"
    mkdir -p "$rg_cache/pack"
    cp "$(command -v rg)" "$rg_cache/pack/rg"
    for name in ripgrep-v13.0.0-10-x86_64-unknown-linux-musl ripgrep-v13.0.0-13-x86_64-unknown-linux-musl; do
      tar -C "$rg_cache/pack" -czf "$rg_cache/$name.tar.gz" rg
    done
    rm -rf "$rg_cache/pack"
  done
  echo '{"private": true}' >"$CACHE/package.json"
  log "npm install code-server@$VERSION into $CACHE (first run: several minutes)"
  TMPDIR="$CACHE/tmp" npm_config_unsafe_perm=true npm_config_yes=true \
    npm install --prefix "$CACHE" --no-save --no-audit --no-fund --loglevel=error \
    "code-server@$VERSION" >&2
  [ -f "$ENTRY" ] || { log "code-server did not install: $ENTRY missing"; exit 1; }
  rm -rf "$CACHE/tmp"
  touch "$STAMP"
  log "code-server $VERSION installed in $(( $(date +%s) - started )) s"
fi

echo "$ENTRY"
