# Owns: the PostgreSQL schema as an ordered list of forward migration steps - the same
# steps as the SQLite adapter's (same tables, columns and indexes, PostgreSQL types) - the
# `schema_version` table that records how many a schema has applied, and `migrate(conn)`.
#
# Must never: edit a step that has shipped (add a new one); run a step outside the
# migration transaction; downgrade; touch tables that are not markertools' own.
#
# Invariants:
#   Rule 1: version N means steps 1..N have been applied. Each step runs in one
#           transaction together with its version bump, under a transaction-scoped
#           advisory lock keyed by the target schema, so hosts starting at once migrate a
#           fresh schema exactly once (PostgreSQL DDL is transactional: a failed step
#           leaves nothing behind).
#   Rule 2: a schema whose version is above LATEST_VERSION is refused (SchemaTooNew).
#   Rule 3: every text column is COLLATE "C": equality, ORDER BY and indexes follow code
#           point order (Python's str order) whatever the database's default collation,
#           and lower() folds ASCII only (see _fold.py).
#   Rule 4: step 1 also installs the task-status NOTIFY trigger (PgChangeWaiter): every
#           status change of a task, by markertools or by any other writer, notifies
#           channel `markertools_task_status` with {"schema", "id", "status"} on commit.
#           Step 10 adds the same for approval requests (made, or their status changed),
#           with the request's task as "id" and "approval:<status>" as "status".
#   Rule 5: running a step and recording it is the shared
#           markertools_adapters._sql.apply_migration (as on SQLite).
from __future__ import annotations

from typing import Final

import psycopg
from psycopg import sql

from markertools_adapters._sql import (
    ACTIVE_NAME_INDEX,
    CLAIM_INDEX,
    DUE_INDEX,
    LOOKUP_INDEXES,
    WORLD_TABLES,
    SchemaError,
    SchemaTooNew,
    Step,
    active_name_clashes,
    apply_migration,
    fill_micros,
    refresh_all_next_run_at,
)
from markertools_adapters.postgres._codec import POSTGRES, TABLES

NOTIFY_CHANNEL: Final[str] = "markertools_task_status"
# every table of a markertools schema: a world's, the clock, the permission roles
MARKERTOOLS_TABLES: Final[tuple[str, ...]] = (
    *WORLD_TABLES,
    "finished_turns",
    "turn_uses",
    "held_followups",
    "task_tokens",
    "task_leases",
    "task_affinity",
    "task_checkpoints",
    "charged_turns",
    "task_waits",
    "approvals",
    "approval_rules",
    "world_clock",
    "role_grants",
    "user_roles",
)


T = 'TEXT COLLATE "C"'
F = "DOUBLE PRECISION"

# ---- step 1: the tables of a world (+ the status notification trigger) ---------------

_STEP1: Final[tuple[str, ...]] = (
    f"""CREATE TABLE projects (
        id {T} PRIMARY KEY,
        name {T} NOT NULL,
        repo_url {T},
        environment JSONB  -- {{"name","branch","status"}} or NULL (no environment)
    )""",
    f"""CREATE TABLE tasks (
        id {T} PRIMARY KEY,
        project_id {T} NOT NULL,
        status {T} NOT NULL,
        created_by {T},
        parent_task_id {T},
        executor {T} NOT NULL,
        environment_id {T},
        model {T},
        effort {T},
        goal_mode BOOLEAN NOT NULL,
        verify_command {T},
        is_coordinator BOOLEAN NOT NULL,
        coordinator_part {T},
        prompt {T} NOT NULL,
        result_text {T},
        error_text {T},
        actual_model {T},
        worktree {T},
        host {T},
        created_at {F} NOT NULL,
        goal {T},
        interrupted_reason {T},
        auto_resume_count BIGINT NOT NULL
    )""",
    f"""CREATE TABLE todos (
        id {T} PRIMARY KEY,
        project_id {T} NOT NULL,
        title {T} NOT NULL,
        description {T},
        status {T} NOT NULL,
        priority {T} NOT NULL,
        due_at {F},
        task_id {T},
        sort_order BIGINT,
        completed_at {F},
        created_at {F} NOT NULL
    )""",
    f"""CREATE TABLE automations (
        id {T} PRIMARY KEY,
        project_id {T} NOT NULL,
        name {T} NOT NULL,
        prompt {T} NOT NULL,
        interval_seconds BIGINT NOT NULL,
        first_run_at {F},
        run_once BOOLEAN NOT NULL,
        bind {T},
        bound_task_id {T},
        repo_url {T},
        status {T} NOT NULL,
        created_by {T},
        created_at {F} NOT NULL,
        last_run_at {F},
        run_count BIGINT NOT NULL,
        last_slot_at {F}
    )""",
    f"""CREATE TABLE costs (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id {T} NOT NULL,
        round BIGINT NOT NULL,
        usd {F},
        tokens BIGINT NOT NULL,
        estimated BOOLEAN NOT NULL,
        priced BOOLEAN NOT NULL
    )""",
    f"""CREATE TABLE quotas (
        "user" {T} PRIMARY KEY,
        total_usd {F},
        used_usd {F} NOT NULL
    )""",
    f"""CREATE TABLE task_attempts (
        task_id {T} NOT NULL,
        attempt_no BIGINT NOT NULL,
        kind {T} NOT NULL,
        interrupted_reason {T},
        checkpoint_round BIGINT NOT NULL,
        result_text {T},
        error_text {T},
        created_at {F} NOT NULL,
        PRIMARY KEY (task_id, attempt_no)
    )""",
    f"""CREATE TABLE audit (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        sender {T} NOT NULL,
        kind {T} NOT NULL,
        target {T},
        outcome {T} NOT NULL,
        reason {T} NOT NULL,
        "time" {F} NOT NULL
    )""",
    f"""CREATE TABLE followups (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id {T} NOT NULL,
        text {T} NOT NULL
    )""",
    # The virtual time of a schema made from a world file (`world load`): `world dump`
    # writes it back as `now`, and `deliver --db` continues from it. No row = real time.
    f"""CREATE TABLE world_clock (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        now {F} NOT NULL
    )""",
    # The world file's permission entries, one per (user, project), so an entry with no
    # grants survives a round trip. The grants live in the lookup tables below.
    f"""CREATE TABLE permission_entries (
        "user" {T} NOT NULL,
        project {T} NOT NULL,
        PRIMARY KEY ("user", project)
    )""",
    # The table-backed PermissionLookup (as markertools_adapters.permissions on SQLite):
    # a user holds a permission on a project through a direct grant or one of its roles.
    f"""CREATE TABLE permission_grants (
        "user" {T} NOT NULL,
        project {T} NOT NULL,
        "grant" {T} NOT NULL,
        PRIMARY KEY ("user", project, "grant")
    )""",
    f"""CREATE TABLE role_grants (
        role {T} NOT NULL,
        "grant" {T} NOT NULL,
        PRIMARY KEY (role, "grant")
    )""",
    f"""CREATE TABLE user_roles (
        "user" {T} NOT NULL,
        project {T} NOT NULL,
        role {T} NOT NULL,
        PRIMARY KEY ("user", project, role)
    )""",
    # Rule 4. A payload over NOTIFY's 8000-byte limit (a huge id or status) is replaced
    # by {"schema", "id": null}: waiters of that schema wake ("something changed")
    # instead of the status change failing.
    f"""CREATE FUNCTION markertools_task_status_notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE payload text;
    BEGIN
        payload := json_build_object(
            'schema', TG_TABLE_SCHEMA, 'id', NEW.id, 'status', NEW.status)::text;
        IF octet_length(payload) > 7900 THEN
            payload := json_build_object('schema', TG_TABLE_SCHEMA, 'id', NULL)::text;
        END IF;
        PERFORM pg_notify('{NOTIFY_CHANNEL}', payload);
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER tasks_status_notify
    AFTER UPDATE OF status ON tasks
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION markertools_task_status_notify()""",
)

# ---- step 2: lookup indexes and the derived schedule column -------------------------

_STEP2: Final[tuple[str, ...]] = (
    *LOOKUP_INDEXES,
    # SCH-5: written from markertools.domain.schedule.next_run_at with every change of the row.
    f"ALTER TABLE automations ADD COLUMN next_run_at {F}",
    DUE_INDEX,
)


def _fill_next_run_at(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    refresh_all_next_run_at(conn, TABLES)


# ---- step 3: AUT-3, one active automation per (project, name) -----------------------


def _refuse_active_name_clashes(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Existing duplicates stop the migration with a SchemaError (never renamed here)."""
    problem = active_name_clashes(conn, TABLES)
    if problem is not None:
        raise SchemaError(problem)


_STEP3: Final[tuple[str, ...]] = (ACTIVE_NAME_INDEX,)

# ---- step 4: the delivery journal (TRN-9) ---------------------------------------------

_STEP4: Final[tuple[str, ...]] = (
    f"""CREATE TABLE delivery_blocks (
        sender {T} NOT NULL,
        turn_id {T} NOT NULL,
        position INTEGER NOT NULL,  -- execution order; -1 the queued report, -2 the finished one
        entry {T} NOT NULL,  -- the row (JSON)
        PRIMARY KEY (sender, turn_id, position)
    )""",
)

# ---- step 5: the worker loop (claim_next_task, take_followups, a task's repo_url) ---

_STEP5: Final[tuple[str, ...]] = (
    f"ALTER TABLE tasks ADD COLUMN repo_url {T}",
    "ALTER TABLE tasks ADD COLUMN retried_after_attempt BIGINT",
    "ALTER TABLE followups ADD COLUMN consumed BOOLEAN NOT NULL DEFAULT false",
    CLAIM_INDEX,
)

# ---- step 6: money in whole micro-dollars (CST-2), finished turns (TRN-9) -----------
# The `*_micros` BIGINT columns are added, filled by the shared fill_micros (the same
# conversion as on SQLite) and the float columns dropped: the same columns, in the same
# order, as SQLite's rebuilt tables.

_STEP6_ADD: Final[tuple[str, ...]] = (
    "ALTER TABLE costs ADD COLUMN usd_micros BIGINT CHECK (usd_micros >= 0)",
    "ALTER TABLE quotas ADD COLUMN total_usd_micros BIGINT CHECK (total_usd_micros >= 0)",
    "ALTER TABLE quotas ADD COLUMN used_usd_micros BIGINT NOT NULL DEFAULT 0"
    " CHECK (used_usd_micros >= 0)",
)


def _convert_amounts(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    fill_micros(conn, POSTGRES, {"costs": "costs", "quotas": "quotas"})


_STEP6_DROP: Final[tuple[str, ...]] = (
    "ALTER TABLE quotas ALTER COLUMN used_usd_micros DROP DEFAULT",
    "ALTER TABLE costs DROP COLUMN usd",
    "ALTER TABLE quotas DROP COLUMN total_usd, DROP COLUMN used_usd",
    # TRN-9: what finish_turn did, once per (task, turn id); `entry` is JSON
    f"""CREATE TABLE finished_turns (
        task_id {T} NOT NULL,
        turn_id {T} NOT NULL,
        entry {T} NOT NULL,
        PRIMARY KEY (task_id, turn_id)
    )""",
)

# ---- step 7: same-turn tools (TOL-3, TOL-4, TOL-7), a task's turn and thread -----------

_STEP7: Final[tuple[str, ...]] = (
    "ALTER TABLE tasks ADD COLUMN turn BIGINT NOT NULL DEFAULT 0",
    f"ALTER TABLE tasks ADD COLUMN thread_id {T}",
    f"ALTER TABLE audit ADD COLUMN source {T} NOT NULL DEFAULT 'block'",
    # TOL-4: tool calls per (task, turn, canonical kind)
    f"""CREATE TABLE turn_uses (
        task_id {T} NOT NULL,
        turn BIGINT NOT NULL,
        kind {T} NOT NULL,
        uses BIGINT NOT NULL,
        PRIMARY KEY (task_id, turn, kind)
    )""",
    # TOL-7: a call's "/goal ..." held until its turn's report is queued
    f"""CREATE TABLE held_followups (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id {T} NOT NULL,
        turn BIGINT NOT NULL,
        text {T} NOT NULL
    )""",
    "CREATE INDEX held_followups_task ON held_followups (task_id)",
    # TOL-3: only the SHA-256 of a token is stored
    f"""CREATE TABLE task_tokens (
        token_hash {T} PRIMARY KEY,
        task_id {T} NOT NULL,
        expires_at {F} NOT NULL,
        revoked BOOLEAN NOT NULL
    )""",
    "CREATE INDEX task_tokens_task ON task_tokens (task_id)",
    # TOL-3: a task leaving `running` - by any statement - revokes its tokens in the same
    # transaction (the function resolves task_tokens in the schema it was created in)
    """CREATE FUNCTION markertools_revoke_task_tokens() RETURNS trigger
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        UPDATE task_tokens SET revoked = true WHERE task_id = NEW.id AND NOT revoked;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER task_tokens_revoke
    AFTER UPDATE OF status ON tasks
    FOR EACH ROW WHEN (OLD.status = 'running' AND NEW.status <> 'running')
    EXECUTE FUNCTION markertools_revoke_task_tokens()""",
)

# ---- step 8: leases, affinity and goal checkpoints (WRK-6, WRK-7) -----------------------

_STEP8: Final[tuple[str, ...]] = (
    # WRK-6: a running task's lease; started_at is the claim time (WRK-10)
    f"""CREATE TABLE task_leases (
        task_id {T} PRIMARY KEY,
        host {T} NOT NULL,
        expires_at {F} NOT NULL,
        started_at {F} NOT NULL,
        pgid BIGINT,
        machine_id {T}
    )""",
    "CREATE INDEX task_leases_expiry ON task_leases (expires_at)",
    # WRK-6: after a crash requeue the task belongs to its host until until_at
    f"""CREATE TABLE task_affinity (
        task_id {T} PRIMARY KEY,
        host {T} NOT NULL,
        until_at {F} NOT NULL
    )""",
    # WRK-7: the last goal round a task completed
    f"""CREATE TABLE task_checkpoints (
        task_id {T} PRIMARY KEY,
        round BIGINT NOT NULL,
        thread_id {T},
        turn_id {T},
        at {F} NOT NULL
    )""",
    # WRK-6: a task leaving `running` - by any statement - drops its lease in the same
    # transaction
    """CREATE FUNCTION markertools_drop_task_lease() RETURNS trigger
    LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
        DELETE FROM task_leases WHERE task_id = NEW.id;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER task_leases_drop
    AFTER UPDATE OF status ON tasks
    FOR EACH ROW WHEN (OLD.status = 'running' AND NEW.status <> 'running')
    EXECUTE FUNCTION markertools_drop_task_lease()""",
)

# ---- step 9: fleet safety (FLT-1 fencing, FLT-2 charged turns, FLT-5 who waits) -------

_STEP9: Final[tuple[str, ...]] = (
    # FLT-1: every claim raises a task's epoch; the lease keeps the claim's
    "ALTER TABLE tasks ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0",
    "ALTER TABLE task_leases ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0",
    # FLT-2: the cost row and charge of a turn that was not the task's last, once
    f"""CREATE TABLE charged_turns (
        task_id {T} NOT NULL,
        turn_id {T} NOT NULL,
        entry {T} NOT NULL,
        PRIMARY KEY (task_id, turn_id)
    )""",
    # FLT-5: which tasks a task waits for (claimed first)
    f"""CREATE TABLE task_waits (
        waiter_id {T} NOT NULL,
        target_id {T} NOT NULL,
        PRIMARY KEY (waiter_id, target_id)
    )""",
    "CREATE INDEX task_waits_target ON task_waits (target_id)",
)

# ---- step 10: approvals (APR-1..5) and a task's engine (ENG-1) ------------------------

_STEP10: Final[tuple[str, ...]] = (
    # ENG-1: the engine a task runs on (NULL: the host's --engine)
    f"ALTER TABLE tasks ADD COLUMN engine {T}",
    # ENG-1 / WRK-10: the `--engine` of the host holding a lease (worker status)
    f"ALTER TABLE task_leases ADD COLUMN engine {T}",
    # APR-1: a task's requests for approval; `command` and `paths` are JSON arrays of
    # strings (as text, as on SQLite); answered_by/answer_reason/answered_at record who
    # answered (APR-3)
    f"""CREATE TABLE approvals (
        id {T} PRIMARY KEY,
        task_id {T} NOT NULL,
        project_id {T} NOT NULL,
        kind {T} NOT NULL,
        command {T},
        cwd {T},
        paths {T} NOT NULL,
        diff_summary {T},
        reason {T},
        asked_at {F} NOT NULL,
        expires_at {F} NOT NULL,
        status {T} NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
        answered_by {T},
        answer_reason {T},
        answered_at {F},
        attempt BIGINT NOT NULL
    )""",
    "CREATE INDEX approvals_task ON approvals (task_id, status)",
    "CREATE INDEX approvals_project ON approvals (project_id, status)",
    # APR-2: a project's rules, tried in (position, id) order; `prefix` a JSON array
    f"""CREATE TABLE approval_rules (
        id {T} PRIMARY KEY,
        project_id {T} NOT NULL,
        position BIGINT NOT NULL,
        action {T} NOT NULL CHECK (action IN ('allow', 'deny')),
        kind {T},
        prefix {T},
        path_glob {T},
        created_at {F} NOT NULL,
        created_by {T}
    )""",
    "CREATE UNIQUE INDEX approval_rules_position ON approval_rules (project_id, position)",
    # APR-1/4 (Rule 4): a request made or answered notifies the task-status channel with
    # its task's id, so a poll or wait of that task and a broker waiting for the answer
    # wake at once (PgChangeWaiter)
    f"""CREATE FUNCTION markertools_approval_notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
    DECLARE payload text;
    BEGIN
        payload := json_build_object(
            'schema', TG_TABLE_SCHEMA, 'id', NEW.task_id,
            'status', 'approval:' || NEW.status, 'approval', NEW.id)::text;
        IF octet_length(payload) > 7900 THEN
            payload := json_build_object('schema', TG_TABLE_SCHEMA, 'id', NULL)::text;
        END IF;
        PERFORM pg_notify('{NOTIFY_CHANNEL}', payload);
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER approvals_notify
    AFTER INSERT OR UPDATE OF status ON approvals
    FOR EACH ROW EXECUTE FUNCTION markertools_approval_notify()""",
)

# ---- step 11: who priced a cost row (issue 39) -----------------------------------------

_STEP11: Final[tuple[str, ...]] = (
    # "claude-code" (Claude Code's own dollars), "table" (the host's price table), NULL
    # not said (every row written before this step)
    f"ALTER TABLE costs ADD COLUMN priced_by {T}",
)

MIGRATIONS: Final[tuple[tuple[Step, ...], ...]] = (
    (_STEP1,),
    (_STEP2, _fill_next_run_at),
    (_refuse_active_name_clashes, _STEP3),
    (_STEP4,),
    (_STEP5,),
    (_STEP6_ADD, _convert_amounts, _STEP6_DROP),
    (_STEP7,),
    (_STEP8,),
    (_STEP9,),
    (_STEP10,),
    (_STEP11,),
)
LATEST_VERSION: Final[int] = len(MIGRATIONS)


def _table_exists(conn: psycopg.Connection[tuple[object, ...]], name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = %s",
        (name,),
    ).fetchone()
    return row is not None


def read_version(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    """The schema's version (0 = no markertools tables yet)."""
    if not _table_exists(conn, "schema_version"):
        return 0
    row = conn.execute("SELECT version FROM schema_version WHERE id = 1").fetchone()
    if row is None or not isinstance(row[0], int):
        raise SchemaError("schema_version table holds no valid version row")
    return int(row[0])


def current_schema(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    row = conn.execute("SELECT current_schema()").fetchone()
    if row is None or row[0] is None:
        raise SchemaError(
            "no schema selected: the search_path names no existing schema "
            "(create it, or pass schema= to open_store)"
        )
    return str(row[0])


MIGRATION_LOCK: Final[str] = (
    "SELECT pg_advisory_xact_lock(hashtext('markertools-migrate'), hashtext(%s))"
)


def create_schema_once(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> None:
    """CREATE SCHEMA IF NOT EXISTS, safe when several hosts open a new schema at once: two
    sessions racing on a bare IF NOT EXISTS can both miss the other's uncommitted schema
    and one fails with a unique violation (pg_namespace). Under the schema's migration
    lock (Rule 1) the second one sees the first one's commit and skips."""
    with conn.transaction():
        conn.execute(MIGRATION_LOCK, (schema,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))


def migrate(conn: psycopg.Connection[tuple[object, ...]], *, target: int = LATEST_VERSION) -> int:
    """Apply the missing steps up to `target` in the connection's current schema.

    `conn` must be in autocommit mode. Raises SchemaTooNew for a schema written by a newer
    markertools, SchemaError when markertools' table names are taken by foreign tables."""
    schema = current_schema(conn)
    current = read_version(conn)
    if current > LATEST_VERSION:
        raise SchemaTooNew(
            f"schema {schema!r} has markertools schema version {current}, newer than this "
            f"markertools supports ({LATEST_VERSION}); upgrade markertools to use it"
        )
    while current < target:
        with conn.transaction():
            conn.execute(MIGRATION_LOCK, (schema,))
            current = read_version(conn)  # another host may have migrated meanwhile
            if current >= target:
                break
            if current == 0:
                taken = [name for name in MARKERTOOLS_TABLES if _table_exists(conn, name)]
                if taken:
                    raise SchemaError(
                        f"schema {schema!r} already has tables named {', '.join(taken)} but no "
                        "markertools schema_version: not a markertools schema (use another "
                        "schema, e.g. open_store(dsn, schema='markertools'))"
                    )
            apply_migration(conn, POSTGRES, MIGRATIONS[current], current + 1)
            current += 1
    return current
