# Owns: the ApprovalStore port on both SQL adapters (APR-1..5) over the step-10 tables
# `approvals` and `approval_rules`, as a mixin over `self._db` and `self._tables`; the row
# codec of a request and of a rule (argv, paths and prefixes are JSON arrays of strings);
# and `expire_for_requeue_in`, which the shared requeue (_records._requeue_in) runs in
# its own transaction (APR-5).
#
# Must never: change a request other than by one compare-and-set UPDATE whose WHERE holds
# every condition (house rule 6); store a request for a task that is not running.
#
# Invariants:
#   Rule 1 (APR-3): answer_approval is one UPDATE ... WHERE status = 'pending' AND
#           expires_at > now AND its task is running (EXISTS); of two answers exactly
#           one changes the row, the other finds it answered (rowcount 0).
#   Rule 2 (APR-1): insert_approval reads the task row locked (SQLite: BEGIN IMMEDIATE;
#           PostgreSQL: SELECT ... FOR UPDATE) and inserts in the same transaction, with
#           the task's project and auto_resume_count.
#   Rule 3 (APR-2): a new rule's position is one above its project's highest, in the
#           insert's transaction; two concurrent adds that read the same highest collide
#           on the unique (project_id, position) index and the later one tries again.
#   Rule 4: every float is bound as a Python float (SQLite's STRICT typeof check); every
#           text through the dialect (PostgreSQL's NUL escape).
from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import attrs

from markertools import (
    ANSWERED_BY_REQUEUE,
    ApprovalRequest,
    ApprovalRule,
    InvalidArgument,
    InvalidType,
    check_request,
    check_rule,
    requeue_expiry_reason,
)
from markertools_adapters._sql._codec import Tables, text_value
from markertools_adapters._sql._dialect import Database, Dialect, Executor

REQUEST_COLUMNS: Final[str] = (
    "id, task_id, project_id, kind, command, cwd, paths, diff_summary, reason, asked_at,"
    " expires_at, status, answered_by, answer_reason, answered_at, attempt"
)
RULE_COLUMNS: Final[str] = (
    "id, project_id, position, action, kind, prefix, path_glob, created_at, created_by"
)
ANSWERS: Final[tuple[str, ...]] = ("approved", "denied")
_ADD_TRIES: Final[int] = 8  # Rule 3


def _strings_out(d: Dialect, stored: Any) -> tuple[str, ...]:
    data = json.loads(d.stored_text(stored))
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise InvalidType("approvals: expected a JSON array of strings")
    return tuple(data)


def _strings_in(d: Dialect, values: Sequence[str]) -> str:
    return d.bind_text(json.dumps(list(values), ensure_ascii=False, separators=(",", ":")))


def _opt_in(d: Dialect, value: str | None, where: str) -> str | None:
    return None if value is None else d.bind_text(text_value(value, where))


def _opt_out(d: Dialect, stored: Any) -> str | None:
    return None if stored is None else d.stored_text(stored)


def request_row(d: Dialect, r: ApprovalRequest) -> tuple[object, ...]:
    """A request as bound for the columns of REQUEST_COLUMNS."""
    return (
        d.bind_text(text_value(r.id, "approvals.id")),
        d.bind_text(text_value(r.task_id, "approvals.task_id")),
        d.bind_text(text_value(r.project_id, "approvals.project_id")),
        d.bind_text(r.kind),
        None if r.command is None else _strings_in(d, r.command),
        _opt_in(d, r.cwd, "approvals.cwd"),
        _strings_in(d, r.paths),
        _opt_in(d, r.diff_summary, "approvals.diff_summary"),
        _opt_in(d, r.reason, "approvals.reason"),
        float(r.asked_at),
        float(r.expires_at),
        d.bind_text(r.status),
        _opt_in(d, r.answered_by, "approvals.answered_by"),
        _opt_in(d, r.answer_reason, "approvals.answer_reason"),
        None if r.answered_at is None else float(r.answered_at),
        int(r.attempt),
    )


def request_of(d: Dialect, row: Sequence[Any]) -> ApprovalRequest:
    return ApprovalRequest(
        id=d.stored_text(row[0]),
        task_id=d.stored_text(row[1]),
        project_id=d.stored_text(row[2]),
        kind=d.stored_text(row[3]),
        command=None if row[4] is None else _strings_out(d, row[4]),
        cwd=_opt_out(d, row[5]),
        paths=_strings_out(d, row[6]),
        diff_summary=_opt_out(d, row[7]),
        reason=_opt_out(d, row[8]),
        asked_at=float(row[9]),
        expires_at=float(row[10]),
        status=d.stored_text(row[11]),
        answered_by=_opt_out(d, row[12]),
        answer_reason=_opt_out(d, row[13]),
        answered_at=None if row[14] is None else float(row[14]),
        attempt=int(row[15]),
    )


def rule_of(d: Dialect, row: Sequence[Any]) -> ApprovalRule:
    return ApprovalRule(
        id=d.stored_text(row[0]),
        project_id=d.stored_text(row[1]),
        position=int(row[2]),
        action=d.stored_text(row[3]),
        kind=_opt_out(d, row[4]),
        prefix=None if row[5] is None else _strings_out(d, row[5]),
        path_glob=_opt_out(d, row[6]),
        created_at=float(row[7]),
        created_by=_opt_out(d, row[8]),
    )


def expire_for_requeue_in(
    conn: Executor, d: Dialect, task_id: str, reason: str | None, now: float
) -> None:
    """APR-5: inside the requeue's transaction, expire the task's pending requests."""
    conn.execute(
        d.sql(
            "UPDATE approvals SET status = 'expired', answered_by = ?, answer_reason = ?,"
            " answered_at = ? WHERE task_id = ? AND status = 'pending'"
        ),
        (
            d.bind_text(ANSWERED_BY_REQUEUE),
            d.bind_text(requeue_expiry_reason(reason)),
            float(now),
            d.bind_text(text_value(task_id, "task_id")),
        ),
    )


class ApprovalMixin:
    _db: Database
    _tables: Tables

    # ---- requests --------------------------------------------------------------------

    def insert_approval(self, request: ApprovalRequest) -> ApprovalRequest:
        check_request(request)
        d = self._tables.dialect
        with self._db.write() as conn:  # Rule 2
            tid = d.bind_text(text_value(request.task_id, "task_id"))
            task = conn.execute(
                d.sql(
                    f"SELECT status, project_id, auto_resume_count FROM tasks WHERE id = ?"
                    f"{d.lock_row}"
                ),
                (tid,),
            ).fetchone()
            if task is None or d.stored_text(task[0]) != "running":
                status = "missing" if task is None else repr(d.stored_text(task[0]))
                raise InvalidArgument(
                    f"approval request for task {request.task_id!r}: the task is {status}, "
                    "not running"
                )
            taken = conn.execute(
                d.sql("SELECT 1 FROM approvals WHERE id = ?"),
                (d.bind_text(text_value(request.id, "approvals.id")),),
            ).fetchone()
            if taken is not None:
                raise InvalidArgument(f"approval request {request.id!r} already exists")
            stored = attrs.evolve(request, project_id=d.stored_text(task[1]), attempt=int(task[2]))
            conn.execute(
                d.sql(f"INSERT INTO approvals ({REQUEST_COLUMNS}) VALUES ({d.params(16)})"),
                request_row(d, stored),
            )
        return stored

    def get_approval(self, approval_id: str) -> ApprovalRequest | None:
        d = self._tables.dialect
        row = self._db.read_one(
            d.sql(f"SELECT {REQUEST_COLUMNS} FROM approvals WHERE id = ?"),
            (d.bind_text(text_value(approval_id, "approval_id")),),
        )
        return None if row is None else request_of(d, row)

    def list_approvals(
        self,
        project_id: str | None = None,
        *,
        statuses: Collection[str] | None = None,
        task_id: str | None = None,
    ) -> tuple[ApprovalRequest, ...]:
        d = self._tables.dialect
        where: list[str] = []
        params: list[object] = []
        if project_id is not None:
            where.append("project_id = ?")
            params.append(d.bind_text(text_value(project_id, "project_id")))
        if task_id is not None:
            where.append("task_id = ?")
            params.append(d.bind_text(text_value(task_id, "task_id")))
        if statuses is not None:
            wanted = sorted({text_value(s, "status") for s in statuses})
            if not wanted:
                return ()
            where.append(f"status IN ({', '.join('?' for _ in wanted)})")
            params.extend(d.bind_text(s) for s in wanted)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._db.read(
            d.sql(f"SELECT {REQUEST_COLUMNS} FROM approvals{clause} ORDER BY asked_at, id"),
            params,
        )
        return tuple(request_of(d, row) for row in rows)

    def pending_approvals(
        self, task_ids: Sequence[str]
    ) -> Mapping[str, tuple[ApprovalRequest, ...]]:
        d = self._tables.dialect
        ids = sorted({text_value(i, "task_id") for i in task_ids})
        if not ids:
            return {}
        cols = ", ".join(f"a.{c.strip()}" for c in REQUEST_COLUMNS.split(","))
        rows = self._db.read(
            d.sql(
                f"SELECT {cols} FROM approvals AS a JOIN tasks AS t ON t.id = a.task_id"
                " WHERE a.status = 'pending' AND t.status = 'running'"
                f" AND a.task_id IN ({', '.join('?' for _ in ids)})"
                " ORDER BY a.asked_at, a.id"
            ),
            [d.bind_text(i) for i in ids],
        )
        found: dict[str, list[ApprovalRequest]] = {}
        for row in rows:
            request = request_of(d, row)
            found.setdefault(request.task_id, []).append(request)
        return {k: tuple(v) for k, v in found.items()}

    def _update_request(
        self,
        approval_id: str,
        changes: Sequence[tuple[str, object]],
        where_sql: str = "",
        where_params: Sequence[object] = (),
    ) -> ApprovalRequest | None:
        """One compare-and-set UPDATE of a pending request (Rule 1); the new row or None."""
        d = self._tables.dialect
        aid = d.bind_text(text_value(approval_id, "approval_id"))
        set_sql = ", ".join(f"{column} = ?" for column, _ in changes)
        with self._db.write() as conn:
            cursor = conn.execute(
                d.sql(
                    f"UPDATE approvals SET {set_sql} WHERE id = ? AND status = 'pending'{where_sql}"
                ),
                [*(value for _, value in changes), aid, *where_params],
            )
            if cursor.rowcount != 1:
                return None
            row = conn.execute(
                d.sql(f"SELECT {REQUEST_COLUMNS} FROM approvals WHERE id = ?"), (aid,)
            ).fetchone()
        return None if row is None else request_of(d, row)

    def answer_approval(
        self,
        approval_id: str,
        status: str,
        *,
        answered_by: str,
        reason: str | None,
        now: float,
    ) -> ApprovalRequest | None:
        if status not in ANSWERS:
            raise InvalidArgument(
                f"an answer's status must be one of {', '.join(ANSWERS)}; got {status!r}"
            )
        d = self._tables.dialect
        return self._update_request(  # Rule 1
            approval_id,
            [
                ("status", d.bind_text(status)),
                ("answered_by", d.bind_text(text_value(answered_by, "answered_by"))),
                ("answer_reason", _opt_in(d, reason, "answer_reason")),
                ("answered_at", float(now)),
            ],
            " AND expires_at > ? AND EXISTS (SELECT 1 FROM tasks AS t"
            " WHERE t.id = approvals.task_id AND t.status = 'running')",
            [float(now)],
        )

    def expire_approval(
        self, approval_id: str, *, answered_by: str, reason: str, now: float
    ) -> ApprovalRequest | None:
        d = self._tables.dialect
        return self._update_request(
            approval_id,
            [
                ("status", d.bind_text("expired")),
                ("answered_by", d.bind_text(text_value(answered_by, "answered_by"))),
                ("answer_reason", d.bind_text(text_value(reason, "answer_reason"))),
                ("answered_at", float(now)),
            ],
        )

    # ---- rules -------------------------------------------------------------------------

    def add_approval_rule(self, rule: ApprovalRule) -> ApprovalRule:
        check_rule(rule)
        d = self._tables.dialect
        rid = d.bind_text(text_value(rule.id, "rule id"))
        project = d.bind_text(text_value(rule.project_id, "project_id"))
        for attempt in range(_ADD_TRIES):  # Rule 3
            try:
                with self._db.write() as conn:
                    taken = conn.execute(
                        d.sql("SELECT 1 FROM approval_rules WHERE id = ?"), (rid,)
                    ).fetchone()
                    if taken is not None:
                        raise InvalidArgument(f"approval rule {rule.id!r} already exists")
                    top = conn.execute(
                        d.sql("SELECT max(position) FROM approval_rules WHERE project_id = ?"),
                        (project,),
                    ).fetchone()
                    position = (int(top[0]) if top is not None and top[0] is not None else 0) + 1
                    stored = attrs.evolve(rule, position=position)
                    conn.execute(
                        d.sql(
                            f"INSERT INTO approval_rules ({RULE_COLUMNS}) VALUES ({d.params(9)})"
                        ),
                        (
                            rid,
                            project,
                            position,
                            d.bind_text(rule.action),
                            _opt_in(d, rule.kind, "kind"),
                            None if rule.prefix is None else _strings_in(d, rule.prefix),
                            _opt_in(d, rule.path_glob, "path_glob"),
                            float(rule.created_at),
                            _opt_in(d, rule.created_by, "created_by"),
                        ),
                    )
                return stored
            except ValueError:
                raise
            except Exception as exc:
                if not d.is_duplicate_key(exc) or attempt == _ADD_TRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def approval_rules(self, project_id: str) -> tuple[ApprovalRule, ...]:
        d = self._tables.dialect
        rows = self._db.read(
            d.sql(
                f"SELECT {RULE_COLUMNS} FROM approval_rules WHERE project_id = ?"
                " ORDER BY position, id"
            ),
            (d.bind_text(text_value(project_id, "project_id")),),
        )
        return tuple(rule_of(d, row) for row in rows)

    def get_approval_rule(self, rule_id: str) -> ApprovalRule | None:
        d = self._tables.dialect
        row = self._db.read_one(
            d.sql(f"SELECT {RULE_COLUMNS} FROM approval_rules WHERE id = ?"),
            (d.bind_text(text_value(rule_id, "rule id")),),
        )
        return None if row is None else rule_of(d, row)

    def remove_approval_rule(self, rule_id: str) -> bool:
        d = self._tables.dialect
        return (
            self._db.run(
                d.sql("DELETE FROM approval_rules WHERE id = ?"),
                (d.bind_text(text_value(rule_id, "rule id")),),
            )
            == 1
        )
