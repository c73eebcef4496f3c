# Owns: the SQLite schema as an ordered list of forward migration steps, the
# `schema_version` table that records how many of them a database has applied, and
# `migrate(conn)` which brings any database up to date (or refuses a newer one).
#
# Must never: edit a step that has shipped (a database that applied it would silently
# differ from a fresh one) - add a new step instead; run a step outside the migration
# transaction; downgrade.
#
# Invariants:
#   Rule 1: version N means steps 1..N have been applied, in order, each in the same
#           BEGIN IMMEDIATE transaction as the version bump - so concurrent openers of a
#           fresh file migrate it exactly once, and a crash leaves a whole step or none.
#   Rule 2: a database whose version is above LATEST_VERSION is refused (SchemaTooNew),
#           never opened and never "repaired".
#   Rule 3: every table is STRICT; float columns are `ANY` with a typeof check (exact
#           round-trip, see _codec Rule 1); booleans are INTEGER with a 0/1 check; money
#           is INTEGER micro-dollars with a `>= 0` check (step 6, CST-2).
#   Rule 4: every lookup a port does has an index (checked by EXPLAIN QUERY PLAN tests).
#   Rule 5: the steps are the PostgreSQL schema's steps (same tables, columns, indexes;
#           tests/adapters/postgres/test_postgres_schema.py compares them); running a step and recording
#           it is the shared markertools_adapters._sql.apply_migration.
from __future__ import annotations

import sqlite3
from typing import Final

import sqlite_utils

from markertools_adapters._sql import (
    ACTIVE_NAME_INDEX,
    CLAIM_INDEX,
    COSTS_INDEX,
    DUE_INDEX,
    LOOKUP_INDEXES,
    SchemaError,
    SchemaTooNew,
    Step,
    active_name_clashes,
    apply_migration,
    fill_micros,
    refresh_all_next_run_at,
)
from markertools_adapters.permissions import PERMISSION_TABLES, ensure_permission_tables
from markertools_adapters.sqlite._codec import SQLITE, TABLES


def _real(name: str, *, null: bool) -> str:
    check = f"typeof({name}) = 'real'" + (f" OR {name} IS NULL" if null else "")
    return f"{name} ANY{'' if null else ' NOT NULL'} CHECK ({check})"


def _bool(name: str) -> str:
    return f"{name} INTEGER NOT NULL CHECK ({name} IN (0, 1))"


# ---- step 1: the tables of a world --------------------------------------------------

_STEP1: Final[tuple[str, ...]] = (
    """CREATE TABLE projects (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        repo_url TEXT,
        environment TEXT  -- JSON {"name","branch","status"} or NULL (no environment)
    ) STRICT""",
    f"""CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        status TEXT NOT NULL,
        created_by TEXT,
        parent_task_id TEXT,
        executor TEXT NOT NULL,
        environment_id TEXT,
        model TEXT,
        effort TEXT,
        {_bool("goal_mode")},
        verify_command TEXT,
        {_bool("is_coordinator")},
        coordinator_part TEXT,
        prompt TEXT NOT NULL,
        result_text TEXT,
        error_text TEXT,
        actual_model TEXT,
        worktree TEXT,
        host TEXT,
        {_real("created_at", null=False)},
        goal TEXT,
        interrupted_reason TEXT,
        auto_resume_count INTEGER NOT NULL
    ) STRICT""",
    f"""CREATE TABLE todos (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        title TEXT NOT NULL,
        description TEXT,
        status TEXT NOT NULL,
        priority TEXT NOT NULL,
        {_real("due_at", null=True)},
        task_id TEXT,
        sort_order INTEGER,
        {_real("completed_at", null=True)},
        {_real("created_at", null=False)}
    ) STRICT""",
    f"""CREATE TABLE automations (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        name TEXT NOT NULL,
        prompt TEXT NOT NULL,
        interval_seconds INTEGER NOT NULL,
        {_real("first_run_at", null=True)},
        {_bool("run_once")},
        bind TEXT,
        bound_task_id TEXT,
        repo_url TEXT,
        status TEXT NOT NULL,
        created_by TEXT,
        {_real("created_at", null=False)},
        {_real("last_run_at", null=True)},
        run_count INTEGER NOT NULL,
        {_real("last_slot_at", null=True)}
    ) STRICT""",
    f"""CREATE TABLE costs (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        round INTEGER NOT NULL,
        {_real("usd", null=True)},
        tokens INTEGER NOT NULL,
        {_bool("estimated")},
        {_bool("priced")}
    ) STRICT""",
    f"""CREATE TABLE quotas (
        user TEXT PRIMARY KEY,
        {_real("total_usd", null=True)},
        {_real("used_usd", null=False)}
    ) STRICT""",
    f"""CREATE TABLE task_attempts (
        task_id TEXT NOT NULL,
        attempt_no INTEGER NOT NULL,
        kind TEXT NOT NULL,
        interrupted_reason TEXT,
        checkpoint_round INTEGER NOT NULL,
        result_text TEXT,
        error_text TEXT,
        {_real("created_at", null=False)},
        PRIMARY KEY (task_id, attempt_no)
    ) STRICT""",
    f"""CREATE TABLE audit (
        seq INTEGER PRIMARY KEY,
        sender TEXT NOT NULL,
        kind TEXT NOT NULL,
        target TEXT,
        outcome TEXT NOT NULL,
        reason TEXT NOT NULL,
        {_real("time", null=False)}
    ) STRICT""",
    """CREATE TABLE followups (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        text TEXT NOT NULL
    ) STRICT""",
    # The virtual time of a database made from a world file (`world load`): `world dump`
    # writes it back as `now`, and `deliver --db` continues from it. No row = real time.
    f"""CREATE TABLE world_clock (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        {_real("now", null=False)}
    ) STRICT""",
    # The world file's permission entries, one per (user, project), so an entry with no
    # grants survives a round trip. The grants themselves live in the table-backed
    # lookup's tables (markertools_adapters.permissions), created by _permission_tables.
    """CREATE TABLE permission_entries (
        user TEXT NOT NULL,
        project TEXT NOT NULL,
        PRIMARY KEY (user, project)
    ) STRICT""",
)

# ---- step 2: lookup indexes and the derived schedule column -------------------------

_STEP2: Final[tuple[str, ...]] = (
    *LOOKUP_INDEXES,
    # SCH-5: `next_run_at` is derived from the row by the pure schedule
    # (markertools.domain.schedule.next_run_at) whenever the row is written; NULL = never due.
    f"ALTER TABLE automations ADD COLUMN {_real('next_run_at', null=True)}",
    DUE_INDEX,
)


def _permission_tables(conn: sqlite3.Connection) -> None:
    """permission_grants / role_grants / user_roles, shared with SqlitePermissions."""
    ensure_permission_tables(sqlite_utils.Database(conn, execute_plugins=False))


def _fill_next_run_at(conn: sqlite3.Connection) -> None:
    refresh_all_next_run_at(conn, TABLES)


# ---- step 3: AUT-3, one active automation per (project, name) -----------------------


def _refuse_active_name_clashes(conn: sqlite3.Connection) -> None:
    """Existing duplicates stop the migration with a SchemaError (never renamed here)."""
    problem = active_name_clashes(conn, TABLES)
    if problem is not None:
        raise SchemaError(problem)


_STEP3: Final[tuple[str, ...]] = (ACTIVE_NAME_INDEX,)

# ---- step 4: the delivery journal (TRN-9) ---------------------------------------------

_STEP4: Final[tuple[str, ...]] = (
    """CREATE TABLE delivery_blocks (
        sender TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        position INTEGER NOT NULL,  -- execution order; -1 the queued report, -2 the finished one
        entry TEXT NOT NULL,  -- the row (JSON)
        PRIMARY KEY (sender, turn_id, position)
    ) STRICT""",
)

# ---- step 5: the worker loop (claim_next_task, take_followups, a task's repo_url) ---

_STEP5: Final[tuple[str, ...]] = (
    "ALTER TABLE tasks ADD COLUMN repo_url TEXT",
    "ALTER TABLE tasks ADD COLUMN retried_after_attempt INTEGER",
    "ALTER TABLE followups ADD COLUMN consumed INTEGER NOT NULL DEFAULT 0"
    " CHECK (consumed IN (0, 1))",
    CLAIM_INDEX,
)

# ---- step 6: money in whole micro-dollars (CST-2), finished turns (TRN-9) -----------
# SQLite cannot change a column's type or CHECK in place (nor drop a column before 3.35),
# so `costs` and `quotas` are rebuilt with the `*_micros` integer columns in place of the
# float ones - in the column order PostgreSQL's ALTER TABLE ... ADD / DROP COLUMN gives -
# the amounts converted by the shared fill_micros.


def _micros(name: str, *, null: bool) -> str:
    return f"{name} INTEGER{'' if null else ' NOT NULL'} CHECK ({name} >= 0)"


_STEP6_NEW_TABLES: Final[tuple[str, ...]] = (
    f"""CREATE TABLE costs_micros (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        round INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        {_bool("estimated")},
        {_bool("priced")},
        {_micros("usd_micros", null=True)}
    ) STRICT""",
    "INSERT INTO costs_micros (seq, task_id, round, tokens, estimated, priced)"
    " SELECT seq, task_id, round, tokens, estimated, priced FROM costs",
    f"""CREATE TABLE quotas_micros (
        user TEXT PRIMARY KEY,
        {_micros("total_usd_micros", null=True)},
        {_micros("used_usd_micros", null=False)}
    ) STRICT""",
    "INSERT INTO quotas_micros (user, used_usd_micros) SELECT user, 0 FROM quotas",
)


def _convert_amounts(conn: sqlite3.Connection) -> None:
    fill_micros(conn, SQLITE, {"costs": "costs_micros", "quotas": "quotas_micros"})


_STEP6_SWAP: Final[tuple[str, ...]] = (
    "DROP TABLE costs",
    "ALTER TABLE costs_micros RENAME TO costs",
    COSTS_INDEX,
    "DROP TABLE quotas",
    "ALTER TABLE quotas_micros RENAME TO quotas",
    # TRN-9: what finish_turn did, once per (task, turn id); `entry` is JSON
    """CREATE TABLE finished_turns (
        task_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (task_id, turn_id)
    ) STRICT""",
)

# ---- step 7: same-turn tools (TOL-3, TOL-4, TOL-7), a task's turn and thread -----------

_STEP7: Final[tuple[str, ...]] = (
    "ALTER TABLE tasks ADD COLUMN turn INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE tasks ADD COLUMN thread_id TEXT",
    "ALTER TABLE audit ADD COLUMN source TEXT NOT NULL DEFAULT 'block'",
    # TOL-4: tool calls per (task, turn, canonical kind)
    """CREATE TABLE turn_uses (
        task_id TEXT NOT NULL,
        turn INTEGER NOT NULL,
        kind TEXT NOT NULL,
        uses INTEGER NOT NULL,
        PRIMARY KEY (task_id, turn, kind)
    ) STRICT""",
    # TOL-7: a call's "/goal ..." held until its turn's report is queued
    """CREATE TABLE held_followups (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        turn INTEGER NOT NULL,
        text TEXT NOT NULL
    ) STRICT""",
    "CREATE INDEX held_followups_task ON held_followups (task_id)",
    # TOL-3: only the SHA-256 of a token is stored
    f"""CREATE TABLE task_tokens (
        token_hash TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        {_real("expires_at", null=False)},
        {_bool("revoked")}
    ) STRICT""",
    "CREATE INDEX task_tokens_task ON task_tokens (task_id)",
    # TOL-3: a task leaving `running` - by any statement - revokes its tokens in the same
    # transaction
    """CREATE TRIGGER task_tokens_revoke AFTER UPDATE OF status ON tasks
    FOR EACH ROW WHEN OLD.status = 'running' AND NEW.status <> 'running'
    BEGIN
        UPDATE task_tokens SET revoked = 1 WHERE task_id = NEW.id AND revoked = 0;
    END""",
)

# ---- step 8: leases, affinity and goal checkpoints (WRK-6, WRK-7) -----------------------

_STEP8: Final[tuple[str, ...]] = (
    # WRK-6: a running task's lease; started_at is the claim time (WRK-10)
    f"""CREATE TABLE task_leases (
        task_id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        {_real("expires_at", null=False)},
        {_real("started_at", null=False)},
        pgid INTEGER,
        machine_id TEXT
    ) STRICT""",
    "CREATE INDEX task_leases_expiry ON task_leases (expires_at)",
    # WRK-6: after a crash requeue the task belongs to its host until until_at
    f"""CREATE TABLE task_affinity (
        task_id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        {_real("until_at", null=False)}
    ) STRICT""",
    # WRK-7: the last goal round a task completed
    f"""CREATE TABLE task_checkpoints (
        task_id TEXT PRIMARY KEY,
        round INTEGER NOT NULL,
        thread_id TEXT,
        turn_id TEXT,
        {_real("at", null=False)}
    ) STRICT""",
    # WRK-6: a task leaving `running` - by any statement - drops its lease in the same
    # transaction
    """CREATE TRIGGER task_leases_drop AFTER UPDATE OF status ON tasks
    FOR EACH ROW WHEN OLD.status = 'running' AND NEW.status <> 'running'
    BEGIN
        DELETE FROM task_leases WHERE task_id = NEW.id;
    END""",
)

# Each migration is a list of steps (SQL text or a callable run on the connection).
# ---- step 9: fleet safety (FLT-1 fencing, FLT-2 charged turns, FLT-5 who waits) -------

_STEP9: Final[tuple[str, ...]] = (
    # FLT-1: every claim raises a task's epoch; the lease keeps the claim's
    "ALTER TABLE tasks ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE task_leases ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0",
    # FLT-2: the cost row and charge of a turn that was not the task's last, once
    """CREATE TABLE charged_turns (
        task_id TEXT NOT NULL,
        turn_id TEXT NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (task_id, turn_id)
    ) STRICT""",
    # FLT-5: which tasks a task waits for (claimed first)
    """CREATE TABLE task_waits (
        waiter_id TEXT NOT NULL,
        target_id TEXT NOT NULL,
        PRIMARY KEY (waiter_id, target_id)
    ) STRICT""",
    "CREATE INDEX task_waits_target ON task_waits (target_id)",
)

# ---- step 10: approvals (APR-1..5) and a task's engine (ENG-1) ------------------------

_STEP10: Final[tuple[str, ...]] = (
    # ENG-1: the engine a task runs on (NULL: the host's --engine)
    "ALTER TABLE tasks ADD COLUMN engine TEXT",
    # ENG-1 / WRK-10: the `--engine` of the host holding a lease (worker status)
    "ALTER TABLE task_leases ADD COLUMN engine TEXT",
    # APR-1: a task's requests for approval; `command` and `paths` are JSON arrays of
    # strings; answered_by/answer_reason/answered_at record who answered (APR-3)
    f"""CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        command TEXT,
        cwd TEXT,
        paths TEXT NOT NULL,
        diff_summary TEXT,
        reason TEXT,
        {_real("asked_at", null=False)},
        {_real("expires_at", null=False)},
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
        answered_by TEXT,
        answer_reason TEXT,
        {_real("answered_at", null=True)},
        attempt INTEGER NOT NULL
    ) STRICT""",
    "CREATE INDEX approvals_task ON approvals (task_id, status)",
    "CREATE INDEX approvals_project ON approvals (project_id, status)",
    # APR-2: a project's rules, tried in (position, id) order; `prefix` a JSON array
    f"""CREATE TABLE approval_rules (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        action TEXT NOT NULL CHECK (action IN ('allow', 'deny')),
        kind TEXT,
        prefix TEXT,
        path_glob TEXT,
        {_real("created_at", null=False)},
        created_by TEXT
    ) STRICT""",
    "CREATE UNIQUE INDEX approval_rules_position ON approval_rules (project_id, position)",
)

# ---- step 11: who priced a cost row (issue 39) -----------------------------------------

_STEP11: Final[tuple[str, ...]] = (
    # "claude-code" (Claude Code's own dollars), "table" (the host's price table), NULL
    # not said (every row written before this step)
    "ALTER TABLE costs ADD COLUMN priced_by TEXT",
)

MIGRATIONS: Final[tuple[tuple[Step, ...], ...]] = (
    (_STEP1, _permission_tables),
    (_STEP2, _fill_next_run_at),
    (_refuse_active_name_clashes, _STEP3),
    (_STEP4,),
    (_STEP5,),
    (_STEP6_NEW_TABLES, _convert_amounts, _STEP6_SWAP),
    (_STEP7,),
    (_STEP8,),
    (_STEP9,),
    (_STEP10,),
    (_STEP11,),
)
LATEST_VERSION: Final[int] = len(MIGRATIONS)


def read_version(conn: sqlite3.Connection) -> int:
    """The database's schema version (0 = empty / never migrated)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT version FROM schema_version WHERE id = 1").fetchone()
    if row is None or not isinstance(row[0], int):
        raise SchemaError("schema_version table holds no valid version row")
    return int(row[0])


def _foreign_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    return [str(row[0]) for row in rows]


def migrate(conn: sqlite3.Connection, *, target: int = LATEST_VERSION) -> int:
    """Apply the missing steps up to `target` (default: all). Returns the version reached.

    `conn` must be in autocommit mode (isolation_level=None). Raises SchemaTooNew for a
    database written by a newer markertools and SchemaError for a file that holds tables
    but no schema_version (not a markertools database)."""
    current = read_version(conn)
    if current > LATEST_VERSION:
        raise SchemaTooNew(
            f"database schema version {current} is newer than this markertools supports "
            f"({LATEST_VERSION}); upgrade markertools to open it"
        )
    while current < target:
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = read_version(conn)  # another process may have migrated meanwhile
            if current >= target:
                conn.execute("COMMIT")
                break
            if current == 0:
                # the permission tables may have been created first by the permissions
                # helpers (grant_permissions on a new file); anything else is foreign
                others = [t for t in _foreign_tables(conn) if t not in PERMISSION_TABLES]
                if others:
                    raise SchemaError(
                        "not a markertools database: it has tables "
                        f"({', '.join(sorted(others)[:5])}) but no schema_version"
                    )
            apply_migration(conn, SQLITE, MIGRATIONS[current], current + 1)
            current += 1
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return current
