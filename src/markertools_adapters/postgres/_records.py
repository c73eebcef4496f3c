# Owns: the small ports on PostgreSQL - ProjectLookup, CostLookup, AttemptLedger,
# AuditLog, FollowupQueue - as a mixin of PostgresStore (PermissionLookup: _permissions).
#
# Must never: let latest_attempt raise (ATT-3); record an attempt without the requeue it
# belongs to, or requeue without recording (ATT-2: one transaction, all or nothing).
#
# Invariants:
#   Rule 1 (ATT-2): requeue_platform is one transaction: SELECT ... FOR UPDATE on the
#           task, the pure ending_attempt / requeued_task, INSERT ... ON CONFLICT DO
#           NOTHING (the first row of a key is kept), `UPDATE ... WHERE id = %s AND status
#           = %s` + rowcount check; any failure rolls everything back and is returned as
#           RequeueResult(ok=False), never raised.
#   Rule 2: audit rows and follow-ups keep insertion order (an identity `seq`).
#   Rule 3: task_costs lists a task's rows by round, then insertion order (the memory
#           model's order).
from __future__ import annotations

from typing import Final

from markertools._attempts import checked_attempt, ending_attempt, requeued_task
from markertools._deliver import summarize_error
from markertools._model import Attempt, AuditRecord, CostRow, Project, Quota
from markertools._ports import RequeueResult
from markertools_adapters.postgres._codec import (
    ATTEMPTS,
    AUDIT,
    COSTS,
    PROJECTS,
    QUOTAS,
    TASKS,
)
from markertools_adapters.postgres._conn import Database
from markertools_adapters.postgres._text import dec, enc

_ATTEMPT_INSERT: Final[str] = ATTEMPTS.insert_sql + " ON CONFLICT (task_id, attempt_no) DO NOTHING"


class RecordsMixin:
    _db: Database

    # ---- ProjectLookup ------------------------------------------------------------------

    def get_project(self, project_id: str) -> Project | None:
        row = self._db.read_one(
            f"SELECT {PROJECTS.select_list} FROM projects WHERE id = %s", (enc(project_id),)
        )
        return None if row is None else PROJECTS.decode(row)

    # ---- CostLookup ---------------------------------------------------------------------

    def task_costs(self, task_id: str) -> tuple[CostRow, ...]:
        rows = self._db.read(
            f"SELECT {COSTS.select_list} FROM costs WHERE task_id = %s ORDER BY round, seq",
            (enc(task_id),),
        )
        return tuple(COSTS.decode(row) for row in rows)

    def get_quota(self, user: str) -> Quota | None:
        row = self._db.read_one(
            f'SELECT {QUOTAS.select_list} FROM quotas WHERE "user" = %s', (enc(user),)
        )
        return None if row is None else QUOTAS.decode(row)

    def unpriced_tokens(self, user: str) -> int:
        row = self._db.read_one(
            "SELECT coalesce(sum(c.tokens), 0) FROM tasks AS t JOIN costs AS c"
            " ON c.task_id = t.id"
            " WHERE t.created_by = %s AND NOT c.estimated AND NOT (c.priced AND c.usd IS NOT NULL)",
            (enc(user),),
        )
        return int(row[0]) if row is not None else 0

    # ---- AttemptLedger ------------------------------------------------------------------

    def requeue_platform(
        self, task_id: str, expected_status: str, kind: str, checkpoint_round: int, now: float
    ) -> RequeueResult:
        try:
            with self._db.write() as conn:
                row = conn.execute(
                    f"SELECT {TASKS.select_list} FROM tasks WHERE id = %s FOR UPDATE",
                    (enc(task_id),),
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
                    "UPDATE tasks SET status = %s, result_text = NULL, error_text = NULL,"
                    " interrupted_reason = NULL, auto_resume_count = %s"
                    " WHERE id = %s AND status = %s",
                    (
                        enc(requeued.status),
                        requeued.auto_resume_count,
                        enc(task_id),
                        enc(expected_status),
                    ),
                )
                if cursor.rowcount != 1:  # cannot happen under the row lock; stay safe
                    raise RuntimeError(f"task {task_id!r} changed during the requeue")
                kept = conn.execute(
                    f"SELECT {ATTEMPTS.select_list} FROM task_attempts"
                    " WHERE task_id = %s AND attempt_no = %s",
                    (enc(task_id), attempt.attempt_no),
                ).fetchone()
                if kept is None:
                    raise RuntimeError(
                        f"attempt {attempt.attempt_no} of {task_id!r} was not recorded"
                    )
            return RequeueResult(ok=True, attempt=ATTEMPTS.decode(kept))
        except Exception as exc:
            return RequeueResult(ok=False, error=summarize_error(exc))

    def latest_attempt(self, task_id: str) -> Attempt | None:
        try:
            row = self._db.read_one(
                f"SELECT {ATTEMPTS.select_list} FROM task_attempts WHERE task_id = %s"
                " ORDER BY attempt_no DESC LIMIT 1",
                (enc(task_id),),
            )
            return None if row is None else checked_attempt(ATTEMPTS.decode(row))
        except Exception:
            return None

    def list_attempts(self, task_id: str) -> tuple[Attempt, ...]:
        rows = self._db.read(
            f"SELECT {ATTEMPTS.select_list} FROM task_attempts WHERE task_id = %s"
            " ORDER BY attempt_no",
            (enc(task_id),),
        )
        return tuple(ATTEMPTS.decode(row) for row in rows)

    # ---- AuditLog / FollowupQueue -------------------------------------------------------

    def record_audit(self, record: AuditRecord) -> None:
        self._db.run(AUDIT.insert_sql, AUDIT.encode(record))

    def enqueue_followup(self, task_id: str, text: str) -> None:
        self._db.run(
            "INSERT INTO followups (task_id, text) VALUES (%s, %s)",
            (enc(_text(task_id)), enc(_text(text))),
        )

    # ---- conveniences for embedding code and tests (not ports) ---------------------------

    def followups_for(self, task_id: str) -> tuple[str, ...]:
        """The task's queued follow-up texts, in queue order."""
        rows = self._db.read(
            "SELECT text FROM followups WHERE task_id = %s ORDER BY seq", (enc(_text(task_id)),)
        )
        return tuple(dec(row[0]) for row in rows)

    def audit_records(self) -> tuple[AuditRecord, ...]:
        rows = self._db.read(f"SELECT {AUDIT.select_list} FROM audit ORDER BY seq")
        return tuple(AUDIT.decode(row) for row in rows)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value
