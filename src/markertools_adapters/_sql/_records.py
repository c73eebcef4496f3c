# Owns: the small ports on both SQL adapters - ProjectLookup, CostLookup, AttemptLedger,
# AuditLog, FollowupQueue (PermissionLookup stays in each adapter: SQLite reads the
# sqlite-utils permission tables, PostgreSQL its own) - as a mixin over `self._db` (the
# adapter's Database) and `self._tables` (its codecs).
#
# Must never: let latest_attempt raise (ATT-3); record an attempt without the requeue it
# belongs to, or requeue without recording (ATT-2: one transaction, all or nothing).
#
# Invariants:
#   Rule 1 (ATT-2): requeue_platform is one write transaction: read the task (SQLite: under
#           the BEGIN IMMEDIATE write lock; PostgreSQL: SELECT ... FOR UPDATE), the pure
#           ending_attempt / requeued_task, INSERT ... ON CONFLICT DO NOTHING (the first
#           row of a key is kept), `UPDATE ... WHERE id = ? AND status = ?` +
#           rowcount check; any failure rolls everything back and is returned as
#           RequeueResult(ok=False), never raised.
#   Rule 2: audit rows and follow-ups keep insertion order (their `seq` column).
#   Rule 3: cost rows are returned by round, then insertion order (the memory model's
#           stable sort); "unpriced" is `not is_priced(row)` (priced false or no usd).
#   Rule 4 (APR-5): the requeue expires the task's pending approval requests in its own
#           transaction (so requeue_expired, which runs it, does too).
from __future__ import annotations

from markertools import (
    Attempt,
    AuditRecord,
    CostRow,
    Project,
    Quota,
    RequeueResult,
    checked_attempt,
    ending_attempt,
    requeued_task,
    summarize_error,
)
from markertools_adapters._sql._approvals import expire_for_requeue_in
from markertools_adapters._sql._codec import Tables, text_value
from markertools_adapters._sql._dialect import Database, Executor
from markertools_adapters._sql._rows import get_by_id
from markertools_adapters.errors import OperationFailed


class RecordsMixin:
    _db: Database
    _tables: Tables

    # ---- ProjectLookup ------------------------------------------------------------------

    def get_project(self, project_id: str) -> Project | None:
        return get_by_id(self._db, self._tables.projects, project_id)

    # ---- CostLookup ---------------------------------------------------------------------

    def task_costs(self, task_id: str) -> tuple[CostRow, ...]:
        costs, d = self._tables.costs, self._tables.dialect
        rows = self._db.read(
            d.sql(f"{costs.select_sql} WHERE task_id = ? ORDER BY round, seq"),
            (d.bind_text(task_id),),
        )
        return tuple(costs.decode(row) for row in rows)

    def get_quota(self, user: str) -> Quota | None:
        quotas, d = self._tables.quotas, self._tables.dialect
        row = self._db.read_one(
            d.sql(f'{quotas.select_sql} WHERE "user" = ?'), (d.bind_text(user),)
        )
        return None if row is None else quotas.decode(row)

    def unpriced_tokens(self, user: str) -> int:
        d = self._tables.dialect
        row = self._db.read_one(
            d.sql(
                "SELECT coalesce(sum(c.tokens), 0) FROM tasks AS t JOIN costs AS c"
                " ON c.task_id = t.id WHERE t.created_by = ? AND NOT c.estimated"
                " AND NOT (c.priced AND c.usd_micros IS NOT NULL)"  # not is_priced(row)
            ),
            (d.bind_text(user),),
        )
        return int(row[0]) if row is not None else 0

    # ---- AttemptLedger ------------------------------------------------------------------

    def requeue_platform(
        self,
        task_id: str,
        expected_status: str,
        kind: str,
        checkpoint_round: int,
        now: float,
        *,
        reason: str | None = None,
    ) -> RequeueResult:
        try:
            with self._db.write() as conn:
                return self._requeue_in(
                    conn, task_id, expected_status, kind, checkpoint_round, now, reason
                )
        except Exception as exc:
            return RequeueResult(ok=False, error=summarize_error(exc))

    def _requeue_in(
        self,
        conn: Executor,
        task_id: str,
        expected_status: str,
        kind: str,
        checkpoint_round: int,
        now: float,
        reason: str | None = None,
    ) -> RequeueResult:
        """Rule 1 inside the caller's write transaction (requeue_expired uses it too); a
        refusal is returned, a failure raises (the caller rolls back)."""
        tasks, attempts, d = self._tables.tasks, self._tables.attempts, self._tables.dialect
        row = conn.execute(
            d.sql(f"{tasks.select_sql} WHERE id = ?{d.lock_row}"), (d.bind_text(task_id),)
        ).fetchone()
        if row is None:
            return RequeueResult(ok=False, error=f"task {task_id!r} not found")
        task = tasks.decode(row)
        if task.status != expected_status:
            return RequeueResult(
                ok=False,
                error=f"task {task_id!r} is {task.status!r}, not {expected_status!r}"
                " (changed meanwhile)",
            )
        attempt = ending_attempt(task, kind, checkpoint_round, now, reason)
        requeued = requeued_task(task)
        conn.execute(
            f"{attempts.insert_sql} ON CONFLICT (task_id, attempt_no) DO NOTHING",
            attempts.encode(attempt),
        )
        cursor = conn.execute(
            d.sql(
                "UPDATE tasks SET status = ?, result_text = NULL, error_text = NULL,"
                " interrupted_reason = NULL, auto_resume_count = ?"
                " WHERE id = ? AND status = ?"
            ),
            (
                d.bind_text(requeued.status),
                requeued.auto_resume_count,
                d.bind_text(task_id),
                d.bind_text(expected_status),
            ),
        )
        if cursor.rowcount != 1:  # cannot happen under the write lock; stay safe
            raise OperationFailed(f"task {task_id!r} changed during the requeue")
        expire_for_requeue_in(conn, d, task_id, attempt.interrupted_reason, now)  # APR-5
        kept = conn.execute(
            d.sql(f"{attempts.select_sql} WHERE task_id = ? AND attempt_no = ?"),
            (d.bind_text(task_id), attempt.attempt_no),
        ).fetchone()
        if kept is None:
            raise OperationFailed(f"attempt {attempt.attempt_no} of {task_id!r} was not recorded")
        return RequeueResult(ok=True, attempt=attempts.decode(kept))

    def latest_attempt(self, task_id: str) -> Attempt | None:
        attempts, d = self._tables.attempts, self._tables.dialect
        try:
            row = self._db.read_one(
                d.sql(f"{attempts.select_sql} WHERE task_id = ? ORDER BY attempt_no DESC LIMIT 1"),
                (d.bind_text(task_id),),
            )
            return None if row is None else checked_attempt(attempts.decode(row))
        except Exception:
            return None

    def list_attempts(self, task_id: str) -> tuple[Attempt, ...]:
        attempts, d = self._tables.attempts, self._tables.dialect
        rows = self._db.read(
            d.sql(f"{attempts.select_sql} WHERE task_id = ? ORDER BY attempt_no"),
            (d.bind_text(task_id),),
        )
        return tuple(attempts.decode(row) for row in rows)

    # ---- AuditLog / FollowupQueue -------------------------------------------------------

    def record_audit(self, record: AuditRecord) -> None:
        audit = self._tables.audit
        self._db.run(audit.insert_sql, audit.encode(record))

    def enqueue_followup(self, task_id: str, text: str) -> None:
        d = self._tables.dialect
        self._db.run(
            d.sql("INSERT INTO followups (task_id, text) VALUES (?, ?)"),
            (
                d.bind_text(text_value(task_id, "followups.task_id")),
                d.bind_text(text_value(text, "followups.text")),
            ),
        )

    # ---- conveniences for embedding code and tests (not ports; as MemoryStore) ----------

    def followups_for(self, task_id: str) -> tuple[str, ...]:
        """The task's queued follow-up texts, in queue order."""
        d = self._tables.dialect
        rows = self._db.read(
            d.sql("SELECT text FROM followups WHERE task_id = ? ORDER BY seq"),
            (d.bind_text(text_value(task_id, "task_id")),),
        )
        return tuple(d.stored_text(row[0]) for row in rows)

    def audit_records(self) -> tuple[AuditRecord, ...]:
        audit = self._tables.audit
        rows = self._db.read(f"{audit.select_sql} ORDER BY seq")
        return tuple(audit.decode(row) for row in rows)
