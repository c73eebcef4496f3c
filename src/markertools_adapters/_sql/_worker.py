# Owns: the worker-loop ports on both SQL adapters - TaskClaimer (claim_next_task),
# FollowupTaker (take_followups), AutomationAdmin (SCH-7) and RecordWriter (projects,
# permissions, quotas; cost rows and charges are _finish.py's) - as a mixin over
# `self._db` and `self._tables`.
#
# Must never: decide a claim in Python outside the write transaction; hand one task or one
# follow-up to two callers.
#
# Invariants:
#   Rule 1: claim_next_task is one write transaction: SELECT the queued task of the project
#           `markertools.pick_claim` names (LEASE_CLAIM_SQL: affinity of another host and
#           quota hold skipped, own affinity first, then created_at, id) with the dialect's
#           `skip_locked` (PostgreSQL: FOR UPDATE SKIP LOCKED - concurrent claimers skip
#           each other's row instead of waiting for it; SQLite: BEGIN IMMEDIATE already
#           serialises writers), then `UPDATE ... WHERE id = ? AND status = 'queued'`.
#   Rule 2: take_followups is one write transaction: the unconsumed rows (locked) in seq
#           order, then each marked consumed; a concurrent taker waits for the lock and
#           then sees them consumed (READ COMMITTED re-checks the WHERE).
#   Rule 4 (INJ-1): claim_task is Rules 1 and 2 and the latest attempt's read in ONE write
#           transaction; the start comes from the pure `claim_of`. A failed claim takes
#           nothing (the transaction rolls back).
#   Rule 5 (WRK-6): with lease_seconds the claim writes the task's lease (host, now +
#           lease_seconds, claim time) in the same transaction.
#   Rule 3 (SCH-5, AUT-3): every automation change rewrites `next_run_at` from the pure
#           schedule in the same statement; becoming active against the partial unique
#           index raises AutomationNameTaken, never a duplicate-key error.
from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from typing import Any

import attrs

from markertools import (
    Attempt,
    Automation,
    AutomationNameTaken,
    Claim,
    InvalidArgument,
    Project,
    Quota,
    Task,
    checked_attempt,
    claim_of,
)
from markertools_adapters._sql._automations import stored_next_run_at
from markertools_adapters._sql._codec import Tables, quote, text_value
from markertools_adapters._sql._dialect import Database, Executor
from markertools_adapters._sql._fence import check_claim_in
from markertools_adapters._sql._leases import LEASE_CLAIM_SQL
from markertools_adapters._sql._rows import get_by_id
from markertools_adapters._sql._tools import release_held_in
from markertools_adapters.errors import StoreError

_AUTOMATION_CHANGES = frozenset({"prompt", "interval_seconds", "first_run_at", "run_once"})


class WorkerMixin:
    _db: Database
    _tables: Tables

    # ---- TaskClaimer -------------------------------------------------------------------

    def claim_next_task(self, project_id: str, host: str) -> Task | None:
        with self._db.write() as conn:
            return self._claim_in(conn, project_id, host, time.time(), None)

    def claim_task(
        self,
        project_id: str,
        host: str,
        *,
        now: float | None = None,
        lease_seconds: float | None = None,
    ) -> Claim | None:
        at = time.time() if now is None else float(now)
        with self._db.write() as conn:  # Rule 4: one transaction
            task = self._claim_in(conn, project_id, host, at, lease_seconds)
            if task is None:
                return None
            followups = self._take_in(conn, task.id, advance=False)  # the claim advanced it
            attempt = self._latest_attempt_in(conn, task.id)
        return claim_of(task, attempt, followups)

    def _claim_in(
        self,
        conn: Executor,
        project_id: str,
        host: str,
        now: float,
        lease_seconds: float | None,
    ) -> Task | None:
        """Rule 1, inside the caller's write transaction."""
        tasks, d = self._tables.tasks, self._tables.dialect
        pid = d.bind_text(text_value(project_id, "project_id"))
        bound_host = tasks.encode_value("host", host)
        text_host = d.bind_text(text_value(host, "host"))
        row = conn.execute(
            d.sql(f"{LEASE_CLAIM_SQL}{d.skip_locked}"),
            (pid, float(now), text_host, float(now), text_host),
        ).fetchone()
        if row is None:
            return None
        cursor = conn.execute(  # FLT-1: every claim a larger epoch
            d.sql(
                "UPDATE tasks SET status = 'running', host = ?, turn = turn + 1,"
                " epoch = epoch + 1 WHERE id = ? AND status = 'queued'"
            ),
            (bound_host, row[0]),
        )
        if cursor.rowcount != 1:  # the row is locked by this transaction; stay safe
            return None
        if lease_seconds is not None:  # Rule 5 (WRK-6): the lease, same transaction
            conn.execute(
                d.sql(
                    "INSERT INTO task_leases (task_id, host, expires_at, started_at, epoch)"
                    " SELECT id, ?, ?, ?, epoch FROM tasks WHERE id = ?"
                    " ON CONFLICT (task_id) DO UPDATE SET"
                    " host = excluded.host, expires_at = excluded.expires_at,"
                    " started_at = excluded.started_at, epoch = excluded.epoch,"
                    " pgid = NULL, machine_id = NULL"
                ),
                (text_host, float(now + lease_seconds), float(now), row[0]),
            )
        claimed = conn.execute(d.sql(f"{tasks.select_sql} WHERE id = ?"), (row[0],)).fetchone()
        return None if claimed is None else tasks.decode(claimed)

    def _latest_attempt_in(self, conn: Executor, task_id: str) -> Attempt | None:
        """ATT-3 inside the caller's transaction: a malformed row is None."""
        attempts, d = self._tables.attempts, self._tables.dialect
        row = conn.execute(
            d.sql(f"{attempts.select_sql} WHERE task_id = ? ORDER BY attempt_no DESC LIMIT 1"),
            (d.bind_text(task_id),),
        ).fetchone()
        if row is None:
            return None
        try:
            return checked_attempt(attempts.decode(row))
        except Exception:  # a row the codec cannot read is malformed (ATT-3)
            return None

    # ---- FollowupTaker -----------------------------------------------------------------

    def take_followups(self, task_id: str, *, claim: Claim | None = None) -> tuple[str, ...]:
        with self._db.write() as conn:
            if claim is not None:  # FLT-1
                check_claim_in(conn, self._tables, claim)
            return self._take_in(conn, task_id)

    def _take_in(self, conn: Executor, task_id: str, *, advance: bool = True) -> tuple[str, ...]:
        """Rule 2, inside the caller's write transaction: held follow-ups are queued first
        (TOL-7), and handing out at least one starts a new turn when `advance` (TOL-4)."""
        d = self._tables.dialect
        release_held_in(conn, self._tables, text_value(task_id, "task_id"))
        tid = d.bind_text(text_value(task_id, "task_id"))
        rows = conn.execute(
            d.sql(
                "SELECT seq, text FROM followups WHERE task_id = ? AND NOT consumed"
                f" ORDER BY seq{d.lock_row}"
            ),
            (tid,),
        ).fetchall()
        if rows:
            d.execute_many(
                conn,
                d.sql("UPDATE followups SET consumed = ? WHERE seq = ?"),
                [(d.bool_in(True), seq) for seq, _ in rows],
            )
            if advance:
                conn.execute(d.sql("UPDATE tasks SET turn = turn + 1 WHERE id = ?"), (tid,))
        return tuple(d.stored_text(text) for _, text in rows)

    # ---- AutomationAdmin ---------------------------------------------------------------

    def list_automations(self, project_id: str | None) -> tuple[Automation, ...]:
        codec, d = self._tables.automations, self._tables.dialect
        if project_id is None:
            rows = self._db.read(f"{codec.select_sql} WHERE status <> 'deleted' ORDER BY id")
        else:
            rows = self._db.read(
                d.sql(
                    f"{codec.select_sql} WHERE project_id = ? AND status <> 'deleted' ORDER BY id"
                ),
                (d.bind_text(text_value(project_id, "project_id")),),
            )
        return tuple(codec.decode(row) for row in rows)

    def _rewrite_automation(self, automation_id: str, check: Any, change: Any) -> Automation | None:
        """Read the row under the write lock, `check(current)` -> bool, write `change(current)`
        with its derived next_run_at; the new row or None."""
        codec, d = self._tables.automations, self._tables.dialect
        aid = d.bind_text(text_value(automation_id, "automation_id"))
        try:
            with self._db.write() as conn:
                row = conn.execute(
                    d.sql(f"{codec.select_sql} WHERE id = ?{d.lock_row}"), (aid,)
                ).fetchone()
                if row is None:
                    return None
                current = codec.decode(row)
                if not check(current):
                    return None
                updated: Automation = change(current)
                sets = codec.encode_changes(
                    {
                        name: getattr(updated, name)
                        for name in (
                            "prompt",
                            "interval_seconds",
                            "first_run_at",
                            "run_once",
                            "status",
                        )
                    }
                )
                assignments = ", ".join(f"{quote(name)} = ?" for name, _ in sets)
                conn.execute(
                    d.sql(f"UPDATE automations SET {assignments}, next_run_at = ? WHERE id = ?"),
                    (*(value for _, value in sets), stored_next_run_at(updated), aid),
                )
        except StoreError as exc:  # the partial unique index of step 3 (AUT-3)
            if not d.is_duplicate_key(exc):
                raise
            current_row = get_by_id(self._db, codec, automation_id)
            project = current_row.project_id if current_row is not None else "?"
            name = current_row.name if current_row is not None else "?"
            raise AutomationNameTaken(project, name) from exc
        return updated

    def set_automation_status(
        self, automation_id: str, expected_status: str, status: str
    ) -> Automation | None:
        text_value(status, "status")
        return self._rewrite_automation(
            automation_id,
            lambda a: a.status == expected_status,
            lambda a: attrs.evolve(a, status=status),
        )

    def update_automation(
        self, automation_id: str, changes: Mapping[str, object]
    ) -> Automation | None:
        unknown = set(changes) - _AUTOMATION_CHANGES
        if unknown:
            raise InvalidArgument(f"cannot change automation field(s) {sorted(unknown)}")
        fields: dict[str, Any] = dict(changes)
        return self._rewrite_automation(
            automation_id, lambda a: a.status != "deleted", lambda a: attrs.evolve(a, **fields)
        )

    # ---- RecordWriter ------------------------------------------------------------------

    def put_project(self, project: Project) -> None:
        codec, d = self._tables.projects, self._tables.dialect
        values = codec.encode(project)
        with self._db.write() as conn:
            conn.execute(d.sql("DELETE FROM projects WHERE id = ?"), (d.bind_text(project.id),))
            conn.execute(codec.insert_sql, values)

    def set_permissions(self, user: str, project_id: str, grants: Collection[str]) -> None:
        d = self._tables.dialect
        u = d.bind_text(text_value(user, "user"))
        p = d.bind_text(text_value(project_id, "project_id"))
        names = sorted({text_value(g, "grant") for g in grants})
        with self._db.write() as conn:
            conn.execute(
                d.sql('DELETE FROM permission_grants WHERE "user" = ? AND project = ?'), (u, p)
            )
            if names:
                d.execute_many(
                    conn,
                    d.sql(
                        'INSERT INTO permission_grants ("user", project, "grant") VALUES (?, ?, ?)'
                    ),
                    [(u, p, d.bind_text(g)) for g in names],
                )
            conn.execute(
                d.sql(
                    'INSERT INTO permission_entries ("user", project) VALUES (?, ?)'
                    " ON CONFLICT DO NOTHING"
                ),
                (u, p),
            )

    def put_quota(self, quota: Quota) -> None:
        codec, d = self._tables.quotas, self._tables.dialect
        values = codec.encode(quota)
        with self._db.write() as conn:
            conn.execute(d.sql('DELETE FROM quotas WHERE "user" = ?'), (d.bind_text(quota.user),))
            conn.execute(codec.insert_sql, values)
