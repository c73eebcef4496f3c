# Owns: the same-turn tool ports on both SQL adapters, as a mixin over `self._db` and
# `self._tables`: CallLedger (turn_uses, held_followups: TOL-4, TOL-7), TaskTokenStore
# (task_tokens: TOL-3) and set_thread_id; plus `release_held_in`, which take_followups /
# claim_task run inside their own transaction. Tables of migration step 7.
#
# Must never: store a token's secret (only its hash arrives here); decide a count in
# Python outside the write transaction.
#
# Invariants:
#   Rule 1: record_turn_use is one upsert returning the new count (ON CONFLICT ... DO
#           UPDATE ... RETURNING): concurrent calls get distinct positions.
#   Rule 2: insert_task_token inserts only when the task row is running, in one
#           statement (INSERT ... SELECT ... WHERE status = 'running').
#   Rule 3: a task leaving running revokes its tokens through the step-7 trigger, in the
#           transaction of whatever statement changed the status.
from __future__ import annotations

from collections.abc import Mapping

from markertools import InvalidArgument, StoredToken
from markertools_adapters._sql._codec import Tables, text_value
from markertools_adapters._sql._dialect import Database, Executor
from markertools_adapters.errors import StoreError, UnknownTask


def release_held_in(conn: Executor, tables: Tables, task_id: str) -> tuple[str, ...]:
    """TOL-7 inside the caller's write transaction: queue the task's held follow-ups (in
    the order held) after what is queued, and delete them."""
    d = tables.dialect
    tid = d.bind_text(task_id)
    rows = conn.execute(
        d.sql(f"SELECT seq, text FROM held_followups WHERE task_id = ? ORDER BY seq{d.lock_row}"),
        (tid,),
    ).fetchall()
    if not rows:
        return ()
    d.execute_many(
        conn,
        d.sql("INSERT INTO followups (task_id, text) VALUES (?, ?)"),
        [(tid, text) for _, text in rows],
    )
    d.execute_many(
        conn, d.sql("DELETE FROM held_followups WHERE seq = ?"), [(seq,) for seq, _ in rows]
    )
    return tuple(d.stored_text(text) for _, text in rows)


class ToolsMixin:
    _db: Database
    _tables: Tables

    # ---- CallLedger ----------------------------------------------------------------------

    def turn_usage(self, task_id: str, turn: int) -> Mapping[str, int]:
        d = self._tables.dialect
        rows = self._db.read(
            d.sql("SELECT kind, uses FROM turn_uses WHERE task_id = ? AND turn = ?"),
            (d.bind_text(text_value(task_id, "task_id")), int(turn)),
        )
        return {d.stored_text(kind): int(uses) for kind, uses in rows}

    def record_turn_use(self, task_id: str, turn: int, kind: str) -> int:
        d = self._tables.dialect
        with self._db.write() as conn:
            row = conn.execute(
                d.sql(
                    "INSERT INTO turn_uses (task_id, turn, kind, uses) VALUES (?, ?, ?, 1)"
                    " ON CONFLICT (task_id, turn, kind) DO UPDATE SET uses = turn_uses.uses + 1"
                    " RETURNING uses"
                ),
                (
                    d.bind_text(text_value(task_id, "task_id")),
                    int(turn),
                    d.bind_text(text_value(kind, "kind")),
                ),
            ).fetchone()
        return int(row[0])

    def hold_followup(self, task_id: str, turn: int, text: str) -> None:
        d = self._tables.dialect
        with self._db.write() as conn:
            conn.execute(
                d.sql("INSERT INTO held_followups (task_id, turn, text) VALUES (?, ?, ?)"),
                (
                    d.bind_text(text_value(task_id, "task_id")),
                    int(turn),
                    d.bind_text(text_value(text, "text")),
                ),
            )

    def release_held_followups(self, task_id: str) -> tuple[str, ...]:
        with self._db.write() as conn:
            return release_held_in(conn, self._tables, text_value(task_id, "task_id"))

    # ---- TaskTokenStore ------------------------------------------------------------------

    def insert_task_token(self, token_hash: str, task_id: str, expires_at: float) -> bool:
        d = self._tables.dialect
        try:
            return self._insert_token(token_hash, task_id, expires_at)
        except StoreError as exc:  # the primary key: as the memory store, a ValueError
            if not d.is_duplicate_key(exc):
                raise
            raise InvalidArgument("a token with this hash is stored already") from exc

    def _insert_token(self, token_hash: str, task_id: str, expires_at: float) -> bool:
        d = self._tables.dialect
        with self._db.write() as conn:
            cursor = conn.execute(
                d.sql(
                    "INSERT INTO task_tokens (token_hash, task_id, expires_at, revoked)"
                    " SELECT ?, id, ?, ? FROM tasks WHERE id = ? AND status = 'running'"
                ),
                (
                    d.bind_text(text_value(token_hash, "token_hash")),
                    float(expires_at),
                    d.bool_in(False),
                    d.bind_text(text_value(task_id, "task_id")),
                ),
            )
            return cursor.rowcount == 1

    def task_token(self, token_hash: str) -> StoredToken | None:
        d = self._tables.dialect
        row = self._db.read_one(
            d.sql(
                "SELECT token_hash, task_id, expires_at, revoked FROM task_tokens"
                " WHERE token_hash = ?"
            ),
            (d.bind_text(text_value(token_hash, "token_hash")),),
        )
        if row is None:
            return None
        return StoredToken(
            d.stored_text(row[0]), d.stored_text(row[1]), float(row[2]), bool(row[3])
        )

    def revoke_task_tokens(self, task_id: str) -> int:
        d = self._tables.dialect
        with self._db.write() as conn:
            cursor = conn.execute(
                d.sql("UPDATE task_tokens SET revoked = ? WHERE task_id = ? AND revoked = ?"),
                (
                    d.bool_in(True),
                    d.bind_text(text_value(task_id, "task_id")),
                    d.bool_in(False),
                ),
            )
            return max(cursor.rowcount, 0)

    # ---- the worker host's thread --------------------------------------------------------

    def set_thread_id(self, task_id: str, thread_id: str | None) -> None:
        d = self._tables.dialect
        bound = None if thread_id is None else d.bind_text(text_value(thread_id, "thread_id"))
        with self._db.write() as conn:
            cursor = conn.execute(
                d.sql("UPDATE tasks SET thread_id = ? WHERE id = ?"),
                (bound, d.bind_text(text_value(task_id, "task_id"))),
            )
            if cursor.rowcount != 1:
                raise UnknownTask(task_id, "set_thread_id")
