#!/usr/bin/env bash
# Owns: running one command against a throwaway PostgreSQL server.
#   scripts/with_postgres.sh CMD [ARGS...]
# Starts a fresh cluster (scripts/pg_test_server.py), exports MARKERTOOLS_PG_DSN, runs CMD,
# stops and deletes the cluster (also when CMD fails or the script is interrupted) and
# exits with CMD's status. Exits 3 without running CMD when the server cannot be started.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-python3}"

if [ "$#" -eq 0 ]; then
    echo "usage: scripts/with_postgres.sh CMD [ARGS...]" >&2
    exit 2
fi

if ! assignments="$("$py" "$here/pg_test_server.py" start)"; then
    echo "with_postgres: could not start a PostgreSQL test server (see above)" >&2
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
