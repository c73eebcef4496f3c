# Owns: the small ports on SQLite - ProjectLookup, CostLookup, PermissionLookup
# (table-backed), AttemptLedger, AuditLog, FollowupQueue - as a mixin of SqliteStore.
#
# Must never: let latest_attempt raise (ATT-3); record an attempt without the requeue it
# belongs to, or requeue without recording (ATT-2: one transaction, all or nothing).
#
# Invariants:
#   Rule 1 (ATT-2): requeue_platform is one BEGIN IMMEDIATE transaction: read the task
#           under the write lock, INSERT OR IGNORE the ending attempt (the first row of a
#           key is kept), `UPDATE ... WHERE id = ? AND status = ?` + rowcount check; any
#           failure rolls everything back and is returned as RequeueResult(ok=False).
#   Rule 2: audit rows and follow-ups keep insertion order (an INTEGER PRIMARY KEY seq).
#   Rule 3: has_permission(None, ...) is False (a task without creator has no grants); the
#           grants are the table-backed lookup's rows (SqlitePermissions) in this file.
#   Rule 4: cost rows are returned by round, then insertion order (the memory model's
#           stable sort); "unpriced" is `not is_priced(row)` (priced false or no usd).
from __future__ import annotations

from typing import Final

from markertools._attempts import checked_attempt, ending_attempt, requeued_task
from markertools._deliver import summarize_error
from markertools._model import Attempt, AuditRecord, CostRow, Project, Quota
from markertools._ports import RequeueResult
from markertools_adapters.permissions import SqlitePermissions
from markertools_adapters.sqlite._codec import ATTEMPTS, AUDIT, COSTS, PROJECTS, QUOTAS, TASKS
from markertools_adapters.sqlite._conn import Connection

_ATTEMPT_INSERT: Final[str] = ATTEMPTS.insert_sql.replace("INSERT INTO", "INSERT OR IGNORE INTO")


class RecordsMixin:
    _db: Connection

    # ---- ProjectLookup ------------------------------------------------------------------

    def get_project(self, project_id: str) -> Project | None:
        row = self._db.read_one(
            f"SELECT {PROJECTS.select_list} FROM projects WHERE id = ?", (project_id,)
        )
        return None if row is None else PROJECTS.decode(row)

    # ---- CostLookup ---------------------------------------------------------------------

    def task_costs(self, task_id: str) -> tuple[CostRow, ...]:
        rows = self._db.read(
            f"SELECT {COSTS.select_list} FROM costs WHERE task_id = ? ORDER BY round, seq",
            (task_id,),
        )
        return tuple(COSTS.decode(row) for row in rows)

    def get_quota(self, user: str) -> Quota | None:
        row = self._db.read_one(f"SELECT {QUOTAS.select_list} FROM quotas WHERE user = ?", (user,))
        return None if row is None else QUOTAS.decode(row)

    def unpriced_tokens(self, user: str) -> int:
        row = self._db.read_one(
            "SELECT coalesce(sum(c.tokens), 0) FROM tasks AS t JOIN costs AS c"
            " ON c.task_id = t.id"
            " WHERE t.created_by = ? AND c.estimated = 0"
            " AND (c.priced = 0 OR c.usd IS NULL)",  # not is_priced(row)
            (user,),
        )
        return int(row[0]) if row is not None else 0

    # ---- PermissionLookup ---------------------------------------------------------------

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        """Direct grants or a role's grants on the project (markertools_adapters.permissions
        tables, in this database); a null user holds nothing."""
        with self._db.lock:
            return SqlitePermissions(self._db.db).has_permission(user, project_id, permission)

    # ---- AttemptLedger ------------------------------------------------------------------

    def requeue_platform(
        self, task_id: str, expected_status: str, kind: str, checkpoint_round: int, now: float
    ) -> RequeueResult:
        try:
            with self._db.write() as conn:
                row = conn.execute(
                    f"SELECT {TASKS.select_list} FROM tasks WHERE id = ?", (task_id,)
                ).fetchone()
                if row is None:
                    return RequeueResult(ok=False, error=f"task {task_id!r} not found")
                task = TASKS.decode(row)
                if task.status != expected_status:
                    return RequeueResult(
                        ok=False,
                        error=f"task {task_id!r} is {task.status!r}, not {expected_status!r}"
                        " (changed meanwhile)",
                    )
                attempt = ending_attempt(task, kind, checkpoint_round, now)
                requeued = requeued_task(task)
                conn.execute(_ATTEMPT_INSERT, ATTEMPTS.encode(attempt))
                cursor = conn.execute(
                    "UPDATE tasks SET status = ?, result_text = NULL, error_text = NULL,"
                    " interrupted_reason = NULL, auto_resume_count = ?"
                    " WHERE id = ? AND status = ?",
                    (requeued.status, requeued.auto_resume_count, task_id, expected_status),
                )
                if cursor.rowcount != 1:  # cannot happen under the write lock; stay safe
                    raise RuntimeError(f"task {task_id!r} changed during the requeue")
                kept = conn.execute(
                    f"SELECT {ATTEMPTS.select_list} FROM task_attempts"
                    " WHERE task_id = ? AND attempt_no = ?",
                    (task_id, attempt.attempt_no),
                ).fetchone()
            return RequeueResult(ok=True, attempt=ATTEMPTS.decode(kept))
        except Exception as exc:
            return RequeueResult(ok=False, error=summarize_error(exc))

    def latest_attempt(self, task_id: str) -> Attempt | None:
        try:
            row = self._db.read_one(
                f"SELECT {ATTEMPTS.select_list} FROM task_attempts WHERE task_id = ?"
                " ORDER BY attempt_no DESC LIMIT 1",
                (task_id,),
            )
            return None if row is None else checked_attempt(ATTEMPTS.decode(row))
        except Exception:
            return None

    def list_attempts(self, task_id: str) -> tuple[Attempt, ...]:
        rows = self._db.read(
            f"SELECT {ATTEMPTS.select_list} FROM task_attempts WHERE task_id = ?"
            " ORDER BY attempt_no",
            (task_id,),
        )
        return tuple(ATTEMPTS.decode(row) for row in rows)

    # ---- AuditLog / FollowupQueue -------------------------------------------------------

    def record_audit(self, record: AuditRecord) -> None:
        values = AUDIT.encode(record)
        with self._db.lock:
            self._db.conn.execute(AUDIT.insert_sql, values)

    def enqueue_followup(self, task_id: str, text: str) -> None:
        with self._db.lock:
            self._db.conn.execute(
                "INSERT INTO followups (task_id, text) VALUES (?, ?)", (task_id, text)
            )

    # ---- conveniences for embedding code and tests (not ports; as MemoryStore) ----------

    def followups_for(self, task_id: str) -> tuple[str, ...]:
        rows = self._db.read(
            "SELECT text FROM followups WHERE task_id = ? ORDER BY seq", (task_id,)
        )
        return tuple(str(row[0]) for row in rows)

    def audit_records(self) -> tuple[AuditRecord, ...]:
        rows = self._db.read(f"SELECT {AUDIT.select_list} FROM audit ORDER BY seq")
        return tuple(AUDIT.decode(row) for row in rows)
