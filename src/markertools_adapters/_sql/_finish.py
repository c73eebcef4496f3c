# Owns: the end of a turn on both SQL adapters (TRN-9, CST-2), as a mixin over `self._db`
# and `self._tables`: `finish_turn` (the task's status, its cost row and the creator's
# quota charge in ONE write transaction, recorded once per (task, turn id) in the
# `finished_turns` table of migration step 6), and the two writers it is made of,
# `record_cost` (refuses a task the store lacks) and `charge_quota` (exact micro-dollars,
# added in SQL).
#
# Must never: write a cost row or a charge outside the transaction that records the
# finished turn; decide "first call" in Python without the key the database enforces.
#
# Invariants:
#   Rule 1: the finished-turn row is claimed FIRST (INSERT ... ON CONFLICT DO NOTHING):
#           of two concurrent calls for one (task, turn id) exactly one writes; the other
#           waits for its commit (PostgreSQL re-checks the key; SQLite's BEGIN IMMEDIATE
#           serialises writers), then reads its row and returns it as a replay.
#   Rule 2: the task row is read under the write lock (FOR UPDATE on PostgreSQL), so the
#           status change is compare-and-set from `running` (CTL-4's promise).
#   Rule 3: anything raised rolls the whole call back, its finished-turn row included: a
#           crash or an error leaves no half-finished turn, and calling again finishes it.
#   Rule 4 (CST-2): a charge is added in SQL (`used + ?`, exact integers), guarded so the
#           sum never passes MAX_MICROS: a charge that would is refused with the memory
#           model's ValueError, nothing changed.
#   Rule 5 (FLT-6): the stored entry keeps the call's `finish_digest`; a repeat with
#           another digest raises TurnFinishedDifferently (its transaction rolls back).
#   Rule 6 (FLT-1): with a claim, the claim is checked in the same transaction, after the
#           replay check (a replay writes nothing) and before any write sticks.
#   Rule 7 (FLT-2): `charge_turn` is Rules 1-6 for the cost of a turn that was not the
#           task's last, keyed in `charged_turns` (migration step 9); the task row is
#           only read.
from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from markertools import (
    MAX_MICROS,
    Claim,
    CostRow,
    FinishedTurn,
    InvalidType,
    Quota,
    TurnCost,
    TurnOutcome,
    add_micros,
    checked_finish,
    finish_digest,
    finish_replay,
    from_micros,
    is_priced,
    to_micros,
)
from markertools_adapters._sql._codec import Tables, quote, text_value
from markertools_adapters._sql._dialect import Database, Executor
from markertools_adapters._sql._fence import check_claim_in
from markertools_adapters.errors import UnknownTask


def finished_json(done: FinishedTurn) -> str:
    """The stored form of a finished turn (its key columns hold task and turn id)."""
    cost = done.cost
    charged = done.charged
    return json.dumps(
        {
            "status": done.status,
            "changed": done.changed,
            "cost": None
            if cost is None
            else [
                cost.round,
                None if cost.usd is None else to_micros(cost.usd),
                cost.tokens,
                cost.estimated,
                cost.priced,
                # additive (issue 39): only when set, so older entries read as before
                *([] if cost.priced_by is None else [cost.priced_by]),
            ],
            "charged": None
            if charged is None
            else [
                charged.user,
                None if charged.total_usd is None else to_micros(charged.total_usd),
                to_micros(charged.used_usd),
            ],
            "digest": done.digest,
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )


def finished_from_json(task_id: str, turn_id: str, text: str) -> FinishedTurn:
    data = json.loads(text)
    cost = data["cost"]
    charged = data["charged"]
    return FinishedTurn(
        task_id,
        turn_id,
        data["status"],
        data["changed"],
        None
        if cost is None
        else CostRow(
            task_id,
            cost[0],
            None if cost[1] is None else from_micros(cost[1]),
            cost[2],
            cost[3],
            cost[4],
            cost[5] if len(cost) > 5 else None,
        ),
        None
        if charged is None
        else Quota(
            charged[0],
            None if charged[1] is None else from_micros(charged[1]),
            from_micros(charged[2]),
        ),
        digest=data.get("digest"),
    )


class FinishMixin:
    _db: Database
    _tables: Tables

    # ---- RecordWriter: costs and quotas --------------------------------------------------

    def charge_quota(self, user: str, usd: Decimal | int | float | str) -> Quota | None:
        amount = to_micros(usd, "charge_quota usd")
        with self._db.write() as conn:
            return self._charge(conn, user, amount)

    def _charge(self, conn: Executor, user: str, micros: int) -> Quota | None:
        codec, d = self._tables.quotas, self._tables.dialect
        u = d.bind_text(text_value(user, "user"))
        cursor = conn.execute(  # Rule 4: added in SQL, never past MAX_MICROS
            d.sql(
                "UPDATE quotas SET used_usd_micros = used_usd_micros + ?"
                ' WHERE "user" = ? AND used_usd_micros <= ?'
            ),
            (micros, u, MAX_MICROS - micros),
        )
        row = conn.execute(d.sql(f'{codec.select_sql} WHERE "user" = ?'), (u,)).fetchone()
        if row is None:
            return None
        quota: Quota = codec.decode(row)
        if cursor.rowcount != 1:  # the sum would not fit: the same refusal as in memory
            add_micros(to_micros(quota.used_usd), micros, "charge_quota usd")
        return quota

    def record_cost(self, row: CostRow) -> None:
        costs = self._tables.costs
        values = costs.encode(row)  # a wrong type is refused before the database is asked
        with self._db.write() as conn:
            if not self._task_exists(conn, row.task_id):
                raise UnknownTask(row.task_id, "record_cost")
            conn.execute(costs.insert_sql, values)

    def _task_exists(self, conn: Executor, task_id: str) -> bool:
        d = self._tables.dialect
        found = conn.execute(
            d.sql("SELECT 1 FROM tasks WHERE id = ?"), (d.bind_text(task_id),)
        ).fetchone()
        return found is not None

    # ---- TurnFinisher (TRN-9) ------------------------------------------------------------

    def finish_turn(
        self,
        task_id: str,
        turn_id: str,
        *,
        outcome: TurnOutcome | str,
        result_text: str | None = None,
        error_text: str | None = None,
        cost: TurnCost | CostRow | None = None,
        requeue: bool = False,
        claim: Claim | None = None,
    ) -> FinishedTurn:
        status = checked_finish(task_id, turn_id, outcome, cost, requeue)
        digest = finish_digest(outcome, result_text, error_text, cost, requeue)
        tasks, d = self._tables.tasks, self._tables.dialect
        tid = d.bind_text(text_value(task_id, "task_id"))
        key = (tid, d.bind_text(text_value(turn_id, "turn_id")))
        changes: dict[str, Any] = {"status": status}
        if result_text is not None:
            changes["result_text"] = result_text
        if error_text is not None:
            changes["error_text"] = error_text
        sets = tasks.encode_changes(changes)  # wrong types refused before any write
        with self._db.write() as conn:
            first = self._first_of(conn, "finished_turns", key, task_id, turn_id)  # Rule 1
            if first is not None:
                return finish_replay(first, digest)  # Rule 5
            found = conn.execute(  # Rule 2
                d.sql(f"{tasks.select_sql} WHERE id = ?{d.lock_row}"), (tid,)
            ).fetchone()
            if found is None:
                raise UnknownTask(task_id, "finish_turn")  # Rule 3: rolls the claim back
            if claim is not None:  # Rule 6
                check_claim_in(conn, self._tables, claim)
            task = tasks.decode(found)
            changed = task.status == "running"
            if changed:
                assignments = ", ".join(f"{quote(name)} = ?" for name, _ in sets)
                conn.execute(
                    d.sql(f"UPDATE tasks SET {assignments} WHERE id = ? AND status = 'running'"),
                    (*(value for _, value in sets), tid),
                )
            row, charged = self._record_turn_cost(conn, task_id, task.created_by, cost)
            done = FinishedTurn(
                task_id,
                turn_id,
                status if changed else task.status,
                changed,
                row,
                charged,
                digest=digest,
            )
            conn.execute(
                d.sql("UPDATE finished_turns SET entry = ? WHERE task_id = ? AND turn_id = ?"),
                (d.bind_text(finished_json(done)), *key),
            )
        return done

    def _first_of(
        self, conn: Executor, table: str, key: tuple[str, str], task_id: str, turn_id: str
    ) -> FinishedTurn | None:
        """Rule 1: claim (task, turn id) in `table`, or read back the first call's result."""
        d = self._tables.dialect
        claimed = conn.execute(
            d.sql(
                f"INSERT INTO {table} (task_id, turn_id, entry) VALUES (?, ?, '')"
                " ON CONFLICT DO NOTHING"
            ),
            key,
        )
        if claimed.rowcount == 1:
            return None
        stored = conn.execute(
            d.sql(f"SELECT entry FROM {table} WHERE task_id = ? AND turn_id = ?"), key
        ).fetchone()
        assert stored is not None  # the conflicting row is committed (Rule 1)
        return finished_from_json(task_id, turn_id, d.stored_text(stored[0]))

    def charge_turn(
        self,
        task_id: str,
        turn_id: str,
        cost: TurnCost | CostRow,
        *,
        claim: Claim | None = None,
    ) -> FinishedTurn:
        checked_finish(task_id, turn_id, "completed", cost, False)
        if cost is None:
            raise InvalidType("cost: expected a TurnCost or a CostRow, got None")
        digest = finish_digest("charge", None, None, cost, False)
        tasks, d = self._tables.tasks, self._tables.dialect
        tid = d.bind_text(text_value(task_id, "task_id"))
        key = (tid, d.bind_text(text_value(turn_id, "turn_id")))
        with self._db.write() as conn:  # Rule 7
            first = self._first_of(conn, "charged_turns", key, task_id, turn_id)
            if first is not None:
                return finish_replay(first, digest)
            found = conn.execute(
                d.sql(f"{tasks.select_sql} WHERE id = ?{d.lock_row}"), (tid,)
            ).fetchone()
            if found is None:
                raise UnknownTask(task_id, "charge_turn")
            if claim is not None:
                check_claim_in(conn, self._tables, claim)
            task = tasks.decode(found)
            row, charged = self._record_turn_cost(conn, task_id, task.created_by, cost)
            done = FinishedTurn(task_id, turn_id, task.status, False, row, charged, digest=digest)
            conn.execute(
                d.sql("UPDATE charged_turns SET entry = ? WHERE task_id = ? AND turn_id = ?"),
                (d.bind_text(finished_json(done)), *key),
            )
        return done

    def _record_turn_cost(
        self,
        conn: Executor,
        task_id: str,
        creator: str | None,
        cost: TurnCost | CostRow | None,
    ) -> tuple[CostRow | None, Quota | None]:
        if cost is None:
            return None, None
        costs, d = self._tables.costs, self._tables.dialect
        if isinstance(cost, TurnCost):
            top = conn.execute(
                d.sql("SELECT max(round) FROM costs WHERE task_id = ?"), (d.bind_text(task_id),)
            ).fetchone()
            last = 0 if top is None or top[0] is None else int(top[0])
            row = cost.row(task_id, last + 1)
        else:
            row = cost
        conn.execute(costs.insert_sql, costs.encode(row))
        if creator is None or not is_priced(row):
            return row, None
        assert row.usd is not None
        return row, self._charge(conn, creator, to_micros(row.usd))


__all__ = ["FinishMixin", "finished_from_json", "finished_json"]
