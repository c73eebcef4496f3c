#!/usr/bin/env bash
# Owns: installing the pinned Codex CLI (tools/codex/package.json, npm `@openai/codex`)
# under .cache/codex (ignored by git), with Node.js from Debian when the machine has none.
# Prints the path of the native `codex` executable on stdout (the npm wrapper is a Node
# script that, on Node < 22.15, runs the binary as a child: signals would miss it).
#   scripts/install_codex.sh            -> /abs/.cache/codex/node_modules/.../bin/codex
# Exits non-zero, with one line on stderr, when it cannot install.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.cache/codex"
pin="$root/tools/codex"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "install_codex: installing Node.js and npm from Debian" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
    else
        echo "install_codex: Node.js and npm are needed for the Codex CLI (install them, or set MARKERTOOLS_CODEX_BIN to a codex 0.169.0 binary)" >&2
        exit 3
    fi
fi

find_bin() { ls "$dest"/node_modules/@openai/codex-*/vendor/*/bin/codex 2>/dev/null | head -n 1; }

stamp="$dest/.installed"
if [ ! -f "$stamp" ] || ! cmp -s "$pin/package-lock.json" "$stamp" || [ -z "$(find_bin)" ]; then
    mkdir -p "$dest"
    cp "$pin/package.json" "$pin/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --no-audit --no-fund --loglevel=error >&2)
    cp "$pin/package-lock.json" "$stamp"
fi
bin="$(find_bin)"
if [ -z "$bin" ]; then
    echo "install_codex: npm installed @openai/codex but no native binary for this platform was found under $dest" >&2
    exit 3
fi
version="$("$bin" --version 2>/dev/null || true)"
case "$version" in
    *0.169.0*) ;;
    *) echo "install_codex: $bin reports '$version', expected 0.169.0" >&2; exit 3 ;;
esac
echo "$bin"
