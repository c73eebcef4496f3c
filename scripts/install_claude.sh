#!/usr/bin/env bash
# Owns: installing the pinned Claude Code CLI (tools/claude/package.json, npm
# `@anthropic-ai/claude-code`) under .cache/claude (ignored by git), with Node.js/npm from
# Debian when the machine has none, and the command sandbox Claude Code needs on Linux
# (bubblewrap and socat, from Debian when missing: the worker host runs Claude Code with
# `sandbox.failIfUnavailable`, so without them a task fails instead of running unconfined).
# Prints the path of the native `claude` executable on stdout (the platform package's
# binary; npm's install script, which only copies it over the wrapper's placeholder, is
# not run).
#   scripts/install_claude.sh            -> /abs/.cache/claude/node_modules/@anthropic-ai/claude-code-linux-x64/claude
# Exits non-zero, with one line on stderr, when it cannot install.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.cache/claude"
pin="$root/tools/claude"
want="2.1.332"

debian_install() {  # debian_install WHAT PACKAGE...
    local what="$1"
    shift
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "install_claude: installing $what from Debian" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
    else
        echo "install_claude: $what needed for Claude Code (install: $*), or set MARKERTOOLS_CLAUDE_BIN to a claude $want binary" >&2
        exit 3
    fi
}

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    debian_install "Node.js and npm are" nodejs npm
fi
if [ "$(uname -s)" = Linux ] && { ! command -v bwrap >/dev/null 2>&1 || ! command -v socat >/dev/null 2>&1; }; then
    debian_install "bubblewrap and socat (Claude Code's command sandbox) are" bubblewrap socat
fi

find_bin() { ls "$dest"/node_modules/@anthropic-ai/claude-code-*/claude 2>/dev/null | head -n 1; }

stamp="$dest/.installed"
if [ ! -f "$stamp" ] || ! cmp -s "$pin/package-lock.json" "$stamp" || [ -z "$(find_bin)" ]; then
    mkdir -p "$dest"
    cp "$pin/package.json" "$pin/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
    cp "$pin/package-lock.json" "$stamp"
fi
bin="$(find_bin)"
if [ -z "$bin" ]; then
    echo "install_claude: npm installed @anthropic-ai/claude-code but no native binary for this platform was found under $dest" >&2
    exit 3
fi
version="$("$bin" --version 2>/dev/null || true)"
case "$version" in
    *"$want"*) ;;
    *) echo "install_claude: $bin reports '$version', expected $want" >&2; exit 3 ;;
esac
echo "$bin"
