#!/usr/bin/env bash
# Owns: making sure a headless Chromium is there for the browser tests of the views
# (tests/views/, VEW-1..3): MARKERTOOLS_CHROMIUM_BIN when set, else Debian's `chromium`,
# installed with apt-get when it is missing and we are root on Debian.
# Prints the path of the browser on stdout.
#   scripts/install_chromium.sh            -> /usr/bin/chromium
# Exits non-zero, with one line on stderr, when it cannot provide one.
set -euo pipefail

if [ -n "${MARKERTOOLS_CHROMIUM_BIN:-}" ]; then
    if [ -x "$MARKERTOOLS_CHROMIUM_BIN" ]; then
        echo "$MARKERTOOLS_CHROMIUM_BIN"
        exit 0
    fi
    echo "install_chromium: MARKERTOOLS_CHROMIUM_BIN=$MARKERTOOLS_CHROMIUM_BIN is not an executable file" >&2
    exit 3
fi

find_bin() { command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true; }

bin="$(find_bin)"
if [ -z "$bin" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "install_chromium: installing chromium from Debian" >&2
        apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2
        bin="$(find_bin)"
    else
        echo "install_chromium: the browser tests need Chromium: install Debian's chromium (as root: apt-get install chromium), or set MARKERTOOLS_CHROMIUM_BIN to a Chromium binary" >&2
        exit 3
    fi
fi
if [ -z "$bin" ]; then
    echo "install_chromium: apt-get ran but no chromium is on PATH" >&2
    exit 3
fi
echo "$bin"
