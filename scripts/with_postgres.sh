#!/usr/bin/env bash
# Owns: running one command against a throwaway PostgreSQL server.
#   scripts/with_postgres.sh CMD [ARGS...]
# Starts a fresh cluster (scripts/pg_test_server.py), exports MARKERTOOLS_PG_DSN, runs CMD,
# stops and deletes the cluster (also when CMD fails or the script is interrupted) and
# exits with CMD's status. Exits 3 without running CMD when the server cannot be started.
#
# MARKERTOOLS_PG_DSN already set: that existing server is used as it is (nothing is
# started or stopped) - the way to run the tests without root, where PostgreSQL cannot
# be installed. The tests create and drop their own schemas in it.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-python3}"

if [ "$#" -eq 0 ]; then
    echo "usage: scripts/with_postgres.sh CMD [ARGS...]" >&2
    exit 2
fi

if [ -n "${MARKERTOOLS_PG_DSN:-}" ]; then
    echo "with_postgres: using the existing PostgreSQL server of MARKERTOOLS_PG_DSN" >&2
    exec "$@"
fi

if ! assignments="$("$py" "$here/pg_test_server.py" start)"; then
    cat >&2 <<'EOF'
with_postgres: could not start a PostgreSQL test server (see above), so the tests do
with_postgres: not run: the PostgreSQL tests never silently skip here. Either install
with_postgres: PostgreSQL (as root on Debian this script does it: apt-get install
with_postgres: postgresql), or point MARKERTOOLS_PG_DSN at an existing server you may
with_postgres: create schemas in, e.g.
with_postgres:   MARKERTOOLS_PG_DSN=postgresql://me@localhost:5432/scratch make test
EOF
    exit 3
fi
eval "$assignments"
export MARKERTOOLS_PG_DSN MARKERTOOLS_PG_DIR

cleanup() {
    "$py" "$here/pg_test_server.py" stop "$MARKERTOOLS_PG_DIR" || \
        echo "with_postgres: could not stop the server in $MARKERTOOLS_PG_DIR" >&2
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "with_postgres: PostgreSQL at $MARKERTOOLS_PG_DSN" >&2
"$@"
status=$?
exit "$status"
