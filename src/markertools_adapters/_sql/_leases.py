# Owns: the LeaseStore port on both SQL adapters (WRK-6 leases and affinity, WRK-7
# checkpoints, WRK-8 quota hold, WRK-10 fleet snapshot with APR-4's pending requests) over the step-8 tables
# `task_leases`, `task_affinity`, `task_checkpoints`, as a mixin over `self._db` and
# `self._tables`. The claim itself is _worker.py's (`lease_claim_sql` is its query).
#
# Must never: requeue a task whose lease another caller already handled; keep a lease of a
# task that left `running` (the step-8 trigger drops it in the same transaction).
#
# Invariants:
#   Rule 1 (WRK-6): requeue_expired is ONE write transaction: the task row is read locked
#           (SQLite: BEGIN IMMEDIATE; PostgreSQL: SELECT ... FOR UPDATE), then the lease is
#           checked (host, expiry), then the shared ATT-2 requeue (_requeue_in), the lease
#           delete and the affinity upsert. The second of two concurrent callers waits for
#           the row lock and then finds the task queued: exactly one succeeds.
#   Rule 2: renew / record_process_group / release only change a lease of the named host on
#           a running task (one UPDATE / DELETE with both conditions).
#   Rule 3: every float bound is a Python float (SQLite's STRICT typeof check).
from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Final

from markertools import (
    Affinity,
    Checkpoint,
    Claim,
    FleetSnapshot,
    HostLeases,
    Lease,
    Quota,
    QuotaHold,
    RequeueResult,
    RunningTask,
    UnleasedRun,
    host_engine,
    quota_hold_reason,
    summarize_error,
)
from markertools_adapters._sql._approvals import REQUEST_COLUMNS, request_of
from markertools_adapters._sql._codec import Tables, text_value
from markertools_adapters._sql._dialect import Database, Executor
from markertools_adapters._sql._fence import check_claim_in

# FLT-5 / WRK-6 / WRK-8: the claim order of `markertools.pick_claim` in SQL. Parameters:
# project_id, now, host, now, host. A quota is exhausted when its total is set and used
# >= it; a task is awaited when a queued or running task waits for it (task_waits).
LEASE_CLAIM_SQL: Final[str] = (
    "SELECT id FROM tasks WHERE project_id = ? AND status = 'queued'"
    " AND NOT EXISTS (SELECT 1 FROM task_affinity AS a WHERE a.task_id = tasks.id"
    " AND a.until_at > ? AND a.host <> ?)"
    ' AND NOT EXISTS (SELECT 1 FROM quotas AS q WHERE q."user" = tasks.created_by'
    " AND q.total_usd_micros IS NOT NULL AND q.used_usd_micros >= q.total_usd_micros)"
    " ORDER BY CASE WHEN EXISTS (SELECT 1 FROM task_waits AS w JOIN tasks AS wt"
    " ON wt.id = w.waiter_id WHERE w.target_id = tasks.id"
    " AND wt.status IN ('queued', 'running')) THEN 0 ELSE 1 END,"
    " CASE WHEN EXISTS (SELECT 1 FROM task_affinity AS b"
    " WHERE b.task_id = tasks.id AND b.until_at > ? AND b.host = ?) THEN 0 ELSE 1 END,"
    " created_at, id LIMIT 1"
)

_LEASE_COLS: Final[str] = (
    "task_id, host, expires_at, pgid, machine_id, started_at, epoch, engine"
)


class LeaseMixin:
    _db: Database
    _tables: Tables

    if TYPE_CHECKING:  # RecordsMixin's, next in the store's bases

        def _requeue_in(
            self,
            conn: Executor,
            task_id: str,
            expected_status: str,
            kind: str,
            checkpoint_round: int,
            now: float,
            reason: str | None = None,
        ) -> RequeueResult: ...

    def _lease_of(self, row: Sequence[Any]) -> Lease:
        d = self._tables.dialect
        return Lease(
            d.stored_text(row[0]),
            d.stored_text(row[1]),
            float(row[2]),
            None if row[3] is None else int(row[3]),
            None if row[4] is None else d.stored_text(row[4]),
            float(row[5]),
            int(row[6]),
            None if row[7] is None else d.stored_text(row[7]),
        )

    def renew_leases(
        self,
        host: str,
        task_ids: Collection[str | Claim],
        *,
        lease_seconds: float,
        now: float,
    ) -> tuple[str, ...]:
        d = self._tables.dialect
        held: list[str] = []
        with self._db.write() as conn:
            for item in task_ids:
                task_id = item.task.id if isinstance(item, Claim) else item
                fenced = " AND tasks.epoch = ?" if isinstance(item, Claim) else ""  # FLT-1
                params: list[object] = [
                    float(now + lease_seconds),
                    d.bind_text(text_value(task_id, "task_id")),
                    d.bind_text(text_value(host, "host")),
                ]
                if isinstance(item, Claim):
                    params.append(int(item.epoch))
                cursor = conn.execute(
                    d.sql(
                        "UPDATE task_leases SET expires_at = ? WHERE task_id = ? AND host = ?"
                        " AND EXISTS (SELECT 1 FROM tasks WHERE tasks.id = task_leases.task_id"
                        f" AND tasks.status = 'running'{fenced})"
                    ),
                    params,
                )
                if cursor.rowcount == 1:
                    held.append(task_id)
        return tuple(held)

    def record_process_group(
        self,
        task_id: str,
        host: str,
        pgid: int,
        *,
        machine_id: str | None,
        now: float,
        engine: str | None = None,
    ) -> None:
        d = self._tables.dialect
        with self._db.write() as conn:
            conn.execute(
                d.sql(
                    "UPDATE task_leases SET pgid = ?, machine_id = ?, engine = ?"
                    " WHERE task_id = ? AND host = ?"
                ),
                (
                    int(pgid),
                    None
                    if machine_id is None
                    else d.bind_text(text_value(machine_id, "machine_id")),
                    None if engine is None else d.bind_text(text_value(engine, "engine")),
                    d.bind_text(text_value(task_id, "task_id")),
                    d.bind_text(text_value(host, "host")),
                ),
            )

    def get_lease(self, task_id: str) -> Lease | None:
        d = self._tables.dialect
        row = self._db.read_one(
            d.sql(f"SELECT {_LEASE_COLS} FROM task_leases WHERE task_id = ?"),
            (d.bind_text(text_value(task_id, "task_id")),),
        )
        return None if row is None else self._lease_of(row)

    def expired_leases(self, now: float, project_id: str | None = None) -> tuple[Lease, ...]:
        d = self._tables.dialect
        cols = ", ".join(f"l.{c.strip()}" for c in _LEASE_COLS.split(","))
        query = (
            f"SELECT {cols} FROM task_leases AS l JOIN tasks AS t ON t.id = l.task_id"
            " WHERE t.status = 'running' AND l.expires_at <= ?"
        )
        params: list[object] = [float(now)]
        if project_id is not None:
            query += " AND t.project_id = ?"
            params.append(d.bind_text(text_value(project_id, "project_id")))
        rows = self._db.read(d.sql(query + " ORDER BY l.task_id"), params)
        return tuple(self._lease_of(r) for r in rows)

    def requeue_expired(
        self,
        task_id: str,
        expected_host: str,
        now: float,
        *,
        affinity_seconds: float,
        kind: str = "platform_fresh",
        checkpoint_round: int = -1,
        reason: str | None = None,
    ) -> RequeueResult:
        d = self._tables.dialect
        try:
            with self._db.write() as conn:  # Rule 1
                tid = d.bind_text(text_value(task_id, "task_id"))
                row = conn.execute(
                    d.sql(f"SELECT status FROM tasks WHERE id = ?{d.lock_row}"), (tid,)
                ).fetchone()
                if row is None or d.stored_text(row[0]) != "running":
                    return RequeueResult(ok=False, error=f"task {task_id!r} is not running")
                lease = conn.execute(
                    d.sql("SELECT host, expires_at FROM task_leases WHERE task_id = ?"), (tid,)
                ).fetchone()
                if (
                    lease is None
                    or d.stored_text(lease[0]) != expected_host
                    or float(lease[1]) > now
                ):
                    return RequeueResult(
                        ok=False,
                        error=f"task {task_id!r} has no expired lease of host {expected_host!r}",
                    )
                result = self._requeue_in(
                    conn, task_id, "running", kind, checkpoint_round, now, reason
                )
                if not result.ok:
                    return result
                conn.execute(d.sql("DELETE FROM task_leases WHERE task_id = ?"), (tid,))
                conn.execute(
                    d.sql(
                        "INSERT INTO task_affinity (task_id, host, until_at) VALUES (?, ?, ?)"
                        " ON CONFLICT (task_id) DO UPDATE SET host = excluded.host,"
                        " until_at = excluded.until_at"
                    ),
                    (tid, d.bind_text(expected_host), float(now + affinity_seconds)),
                )
                return result
        except Exception as exc:
            return RequeueResult(ok=False, error=summarize_error(exc))

    def unleased_running(self, project_id: str | None = None) -> tuple[str, ...]:
        d = self._tables.dialect
        query = (
            "SELECT t.id FROM tasks AS t WHERE t.status = 'running' AND NOT EXISTS"
            " (SELECT 1 FROM task_leases AS l WHERE l.task_id = t.id)"
        )
        params: list[object] = []
        if project_id is not None:
            query += " AND t.project_id = ?"
            params.append(d.bind_text(text_value(project_id, "project_id")))
        rows = self._db.read(d.sql(query + " ORDER BY t.id"), params)
        return tuple(d.stored_text(r[0]) for r in rows)

    def get_affinity(self, task_id: str) -> Affinity | None:
        d = self._tables.dialect
        row = self._db.read_one(
            d.sql("SELECT task_id, host, until_at FROM task_affinity WHERE task_id = ?"),
            (d.bind_text(text_value(task_id, "task_id")),),
        )
        if row is None:
            return None
        return Affinity(d.stored_text(row[0]), d.stored_text(row[1]), float(row[2]))

    def release_lease(self, task_id: str, host: str) -> None:
        d = self._tables.dialect
        self._db.run(
            d.sql("DELETE FROM task_leases WHERE task_id = ? AND host = ?"),
            (d.bind_text(text_value(task_id, "task_id")), d.bind_text(text_value(host, "host"))),
        )

    def cancelled_among(self, task_ids: Collection[str]) -> tuple[str, ...]:
        d = self._tables.dialect
        ids = [text_value(i, "task_id") for i in task_ids]
        running: set[str] = set()
        with self._db.snapshot() as conn:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                rows = conn.execute(
                    d.sql(
                        f"SELECT id FROM tasks WHERE status = 'running' AND id IN"
                        f" ({', '.join('?' for _ in chunk)})"
                    ),
                    [d.bind_text(i) for i in chunk],
                ).fetchall()
                running.update(d.stored_text(r[0]) for r in rows)
        return tuple(i for i in ids if i not in running)

    def record_checkpoint(
        self,
        task_id: str,
        round: int,
        *,
        thread_id: str | None,
        turn_id: str | None,
        now: float,
        claim: Claim | None = None,
    ) -> None:
        d = self._tables.dialect

        def opt(value: str | None, where: str) -> str | None:
            return None if value is None else d.bind_text(text_value(value, where))

        with self._db.write() as conn:
            if claim is not None:  # FLT-1
                check_claim_in(conn, self._tables, claim)
            self._write_checkpoint(
                conn, task_id, round, opt(thread_id, "thread_id"), opt(turn_id, "turn_id"), now
            )

    def _write_checkpoint(
        self,
        conn: Executor,
        task_id: str,
        round: int,
        thread_id: str | None,
        turn_id: str | None,
        now: float,
    ) -> None:
        d = self._tables.dialect
        conn.execute(
            d.sql(
                "INSERT INTO task_checkpoints (task_id, round, thread_id, turn_id, at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET"
                " round = excluded.round, thread_id = excluded.thread_id,"
                " turn_id = excluded.turn_id, at = excluded.at"
            ),
            (
                d.bind_text(text_value(task_id, "task_id")),
                int(round),
                thread_id,
                turn_id,
                float(now),
            ),
        )

    def last_checkpoint(self, task_id: str) -> Checkpoint | None:
        d = self._tables.dialect
        row = self._db.read_one(
            d.sql(
                "SELECT task_id, round, thread_id, turn_id, at FROM task_checkpoints"
                " WHERE task_id = ?"
            ),
            (d.bind_text(text_value(task_id, "task_id")),),
        )
        if row is None:
            return None
        return Checkpoint(
            d.stored_text(row[0]),
            int(row[1]),
            None if row[2] is None else d.stored_text(row[2]),
            None if row[3] is None else d.stored_text(row[3]),
            float(row[4]),
        )

    def fleet_snapshot(self, project_id: str | None, now: float) -> FleetSnapshot:
        d, quotas = self._tables.dialect, self._tables.quotas
        where, params = "", []
        if project_id is not None:
            where = " AND t.project_id = ?"
            params = [d.bind_text(text_value(project_id, "project_id"))]
        with self._db.snapshot() as conn:
            counts = conn.execute(
                d.sql(
                    "SELECT t.status, count(*) FROM tasks AS t WHERE 1 = 1"
                    f"{where} GROUP BY t.status ORDER BY t.status"
                ),
                params,
            ).fetchall()
            live = conn.execute(
                d.sql(
                    "SELECT l.host, l.task_id, l.expires_at, l.started_at, t.turn, l.engine"
                    " FROM task_leases AS l JOIN tasks AS t ON t.id = l.task_id"
                    f" WHERE t.status = 'running' AND l.expires_at > ?{where}"
                    " ORDER BY l.host, l.task_id"
                ),
                [float(now), *params],
            ).fetchall()
            # running tasks no live lease holds: an expired lease (a dead host) or none
            stale = conn.execute(
                d.sql(
                    "SELECT t.id, COALESCE(l.host, t.host), t.turn, l.started_at, l.expires_at"
                    " FROM tasks AS t LEFT JOIN task_leases AS l ON l.task_id = t.id"
                    " WHERE t.status = 'running'"
                    f" AND (l.expires_at IS NULL OR l.expires_at <= ?){where} ORDER BY t.id"
                ),
                [float(now), *params],
            ).fetchall()
            held_rows = conn.execute(
                d.sql(
                    "SELECT t.id, t.created_by FROM tasks AS t JOIN quotas AS q"
                    " ON q.\"user\" = t.created_by WHERE t.status = 'queued'"
                    " AND q.total_usd_micros IS NOT NULL"
                    f" AND q.used_usd_micros >= q.total_usd_micros{where} ORDER BY t.id"
                ),
                params,
            ).fetchall()
            cols = ", ".join(f"a.{c.strip()}" for c in REQUEST_COLUMNS.split(","))
            asking = conn.execute(  # APR-4
                d.sql(
                    f"SELECT {cols} FROM approvals AS a JOIN tasks AS t ON t.id = a.task_id"
                    f" WHERE a.status = 'pending' AND t.status = 'running'{where}"
                    " ORDER BY a.asked_at, a.id"
                ),
                params,
            ).fetchall()
            users: dict[str, Quota] = {}
            for _, user in held_rows:
                if user not in users:
                    row = conn.execute(
                        d.sql(f'{quotas.select_sql} WHERE "user" = ?'), (user,)
                    ).fetchone()
                    if row is not None:
                        users[user] = quotas.decode(row)
        by_host: dict[str, list[tuple[str, float, float, int, str | None]]] = {}
        for host, task_id, expires, started, turn, engine in live:
            by_host.setdefault(d.stored_text(host), []).append(
                (
                    d.stored_text(task_id),
                    float(expires),
                    float(started),
                    int(turn),
                    None if engine is None else d.stored_text(engine),
                )
            )
        hosts = tuple(
            HostLeases(
                host,
                max(r[1] for r in rows),
                tuple(RunningTask(r[0], r[3], r[2]) for r in rows),
                host_engine(r[4] for r in rows),
            )
            for host, rows in sorted(by_host.items())
        )
        held = tuple(
            QuotaHold(
                d.stored_text(task_id),
                d.stored_text(user),
                quota_hold_reason(d.stored_text(user), users[user]),
                users[user].used_usd,
                users[user].total_usd,
            )
            for task_id, user in held_rows
            if user in users
        )
        unleased = tuple(
            UnleasedRun(
                d.stored_text(task_id),
                None if host is None else d.stored_text(host),
                int(turn),
                None if started is None else float(started),
                None if expires is None else float(expires),
            )
            for task_id, host, turn, started, expires in stale
        )
        return FleetSnapshot(
            {d.stored_text(status): int(n) for status, n in counts},
            hosts,
            held,
            now,
            unleased,
            tuple(request_of(d, row) for row in asking),
        )
