# Owns: fleet safety on both SQL adapters (FLT-1, FLT-2, FLT-5), as a mixin over `self._db`
# and `self._tables`: `fenced(claim)` - the store's one transaction (`atomic()`) that
# first checks, inside itself, that the claim still holds its task; `check_claim_in`, the
# same check inside a write transaction a method already holds (finish_turn,
# take_followups, ...); `pending_turns` (the journal's pending rows without a finished
# row, step 4's table); and who waits for whom (`task_waits`, migration step 9).
#
# Must never: check a claim outside the transaction of the write it guards (a check then
# a write is the race fencing exists to close).
#
# Invariants:
#   Rule 1: the check reads the task row with the dialect's row lock (PostgreSQL: FOR
#           UPDATE, held to the end of the transaction, so a concurrent requeue or claim
#           waits for it; SQLite: BEGIN IMMEDIATE already holds the database's write lock)
#           and raises LeaseLost - the transaction rolls back - unless the task is
#           `running` with the claim's epoch.
#   Rule 2: mark_awaited replaces the waiter's rows in one write transaction.
from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator

from markertools import (
    FINISHED_POSITION,
    PENDING_POSITION,
    Claim,
    LeaseLost,
    PendingTurn,
    pending_turn_of,
)
from markertools_adapters._sql._codec import Tables, text_value
from markertools_adapters._sql._dialect import Database, Executor


def check_claim_in(conn: Executor, tables: Tables, claim: Claim) -> None:
    """Rule 1 inside the caller's write transaction."""
    d = tables.dialect
    row = conn.execute(
        d.sql(f"SELECT status, epoch FROM tasks WHERE id = ?{d.lock_row}"),
        (d.bind_text(text_value(claim.task.id, "task_id")),),
    ).fetchone()
    if row is None:
        raise LeaseLost(claim.task.id, claim.epoch, None, None)
    status, epoch = d.stored_text(row[0]), int(row[1])
    if status != "running" or epoch != claim.epoch:
        raise LeaseLost(claim.task.id, claim.epoch, epoch, status)


class FenceMixin:
    _db: Database
    _tables: Tables

    @contextlib.contextmanager
    def fenced(self, claim: Claim) -> Iterator[None]:
        with self._db.atomic():
            with self._db.write() as conn:  # a savepoint of the atomic transaction
                check_claim_in(conn, self._tables, claim)
            yield

    def pending_turns(self, task_id: str) -> tuple[PendingTurn, ...]:
        d = self._tables.dialect
        rows = self._db.read(
            d.sql(
                "SELECT b.turn_id, b.entry FROM delivery_blocks AS b WHERE b.sender = ?"
                " AND b.position = ? AND NOT EXISTS (SELECT 1 FROM delivery_blocks AS f"
                " WHERE f.sender = b.sender AND f.turn_id = b.turn_id AND f.position = ?)"
            ),
            (d.bind_text(text_value(task_id, "task_id")), PENDING_POSITION, FINISHED_POSITION),
        )
        found = [
            p
            for turn_id, entry in rows
            if (p := pending_turn_of(task_id, d.stored_text(turn_id), d.stored_text(entry)))
        ]
        return tuple(sorted(found, key=lambda p: (p.recorded_at, p.turn_id)))

    def mark_awaited(self, waiter_id: str, target_ids: Collection[str]) -> None:
        d = self._tables.dialect
        waiter = d.bind_text(text_value(waiter_id, "waiter_id"))
        targets = sorted({text_value(t, "target_id") for t in target_ids})
        with self._db.write() as conn:  # Rule 2
            conn.execute(d.sql("DELETE FROM task_waits WHERE waiter_id = ?"), (waiter,))
            if targets:
                d.execute_many(
                    conn,
                    d.sql("INSERT INTO task_waits (waiter_id, target_id) VALUES (?, ?)"),
                    [(waiter, d.bind_text(t)) for t in targets],
                )

    def clear_awaited(self, waiter_id: str) -> None:
        d = self._tables.dialect
        self._db.run(
            d.sql("DELETE FROM task_waits WHERE waiter_id = ?"),
            (d.bind_text(text_value(waiter_id, "waiter_id")),),
        )


__all__ = ["FenceMixin", "check_claim_in"]
