# Owns: the AutomationStore port on SQLite (get / active names / insert / due listing /
# claim), as a mixin of SqliteStore over `self._db`, and the derived `next_run_at`
# column that makes the due listing an index range scan.
#
# Must never: compute a schedule itself - the pure markertools._schedule decides when an
# automation is due; this module only stores its answer and re-asks it.
#
# Invariants:
#   Rule 1 (SCH-5): `next_run_at` is written from `markertools._schedule.next_run_at` in
#           the same statement as every change to the row (NULL when never due again),
#           and due_automations re-checks every candidate with the pure `is_due`, so the
#           listing agrees with is_due on every row.
#   Rule 2 (SCH-4): claim_automation is BEGIN IMMEDIATE + the pure `apply_claim` for
#           exactly `slot` + `UPDATE ... WHERE id = ? AND status = 'active' AND run_count = ?` +
#           rowcount check: of concurrent claimers of one slot exactly one wins.
from __future__ import annotations

import sqlite3
from typing import Final

from markertools._model import Automation
from markertools._schedule import apply_claim, is_due, next_run_at
from markertools_adapters.sqlite._codec import AUTOMATIONS, encode_value
from markertools_adapters.sqlite._conn import Connection

_SELECT: Final[str] = f"SELECT {AUTOMATIONS.select_list} FROM automations"
_INSERT: Final[str] = (
    f"INSERT INTO automations ({AUTOMATIONS.select_list}, next_run_at) "
    f"VALUES ({', '.join('?' for _ in AUTOMATIONS.names)}, ?)"
)


def stored_next_run_at(automation: Automation) -> float | None:
    """The value of the derived column: the pure schedule's next run, or NULL when the
    automation can never be due again (not active, or a `once` that has run)."""
    if automation.status != "active":
        return None
    value = next_run_at(automation)
    return None if value is None else float(value)


def refresh_all_next_run_at(conn: sqlite3.Connection) -> None:
    """Recompute the derived column for every row (migration step; inside its transaction)."""
    rows = conn.execute(f"{_SELECT}").fetchall()
    for row in rows:
        automation = AUTOMATIONS.decode(row)
        conn.execute(
            "UPDATE automations SET next_run_at = ? WHERE id = ?",
            (stored_next_run_at(automation), automation.id),
        )


def insert_automation_row(conn: sqlite3.Connection, automation: Automation) -> None:
    conn.execute(_INSERT, (*AUTOMATIONS.encode(automation), stored_next_run_at(automation)))


class AutomationMixin:
    _db: Connection

    def get_automation(self, automation_id: str) -> Automation | None:
        row = self._db.read_one(f"{_SELECT} WHERE id = ?", (automation_id,))
        return None if row is None else AUTOMATIONS.decode(row)

    def active_automation_names(self, project_id: str) -> frozenset[str]:
        rows = self._db.read(
            "SELECT name FROM automations WHERE project_id = ? AND status = 'active'",
            (project_id,),
        )
        return frozenset(str(row[0]) for row in rows)

    def insert_automation(self, automation: Automation) -> None:
        try:
            with self._db.lock:
                insert_automation_row(self._db.conn, automation)
        except sqlite3.IntegrityError as exc:
            raise ValueError(f"automation {automation.id!r} already exists") from exc

    def due_automations(self, now: float) -> tuple[Automation, ...]:
        rows = self._db.read(
            f"{_SELECT} WHERE status = 'active' AND next_run_at <= ? ORDER BY id", (float(now),)
        )
        candidates = (AUTOMATIONS.decode(row) for row in rows)
        return tuple(a for a in candidates if is_due(a, now))

    def claim_automation(self, automation_id: str, slot: float, now: float) -> bool:
        with self._db.write() as conn:
            row = conn.execute(f"{_SELECT} WHERE id = ?", (automation_id,)).fetchone()
            if row is None:
                return False
            current = AUTOMATIONS.decode(row)
            claimed = apply_claim(current, slot, now)
            if claimed is None:
                return False
            cursor = conn.execute(
                "UPDATE automations SET last_run_at = ?, last_slot_at = ?, run_count = ?,"
                " next_run_at = ? WHERE id = ? AND status = 'active' AND run_count = ?",
                (
                    *(
                        encode_value(AUTOMATIONS.by_name[name], getattr(claimed, name), name)
                        for name in ("last_run_at", "last_slot_at", "run_count")
                    ),
                    stored_next_run_at(claimed),
                    automation_id,
                    current.run_count,
                ),
            )
            return cursor.rowcount == 1
