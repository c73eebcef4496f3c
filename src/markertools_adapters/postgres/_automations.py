# Owns: the AutomationStore port on PostgreSQL (get / active names / insert / due listing
# / claim), as a mixin of PostgresStore over `self._db`, and the derived `next_run_at`
# column that makes the due listing an index range scan (as in the SQLite adapter).
#
# Must never: compute a schedule itself - the pure markertools._schedule decides when an
# automation is due; this module only stores its answer and re-asks it.
#
# Invariants:
#   Rule 1 (SCH-5): `next_run_at` is written from `markertools._schedule.next_run_at` in
#           the same statement as every change to the row (NULL when never due again),
#           and due_automations re-checks every candidate with the pure `is_due`.
#   Rule 2 (SCH-4): claim_automation is one transaction: SELECT ... FOR UPDATE (a
#           concurrent claimer waits for the row lock and then sees the claimed row), the
#           pure `apply_claim` for exactly `slot`, and `UPDATE ... WHERE id = %s AND
#           status = 'active' AND run_count = %s` + rowcount check: of concurrent
#           claimers of one slot exactly one wins.
from __future__ import annotations

from typing import Any, Final

import psycopg

from markertools._model import Automation
from markertools._schedule import apply_claim, is_due, next_run_at
from markertools_adapters.postgres._codec import AUTOMATIONS, encode_value
from markertools_adapters.postgres._conn import Conn, Database
from markertools_adapters.postgres._text import dec, enc

_SELECT: Final[str] = f"SELECT {AUTOMATIONS.select_list} FROM automations"
_INSERT: Final[str] = (
    f"INSERT INTO automations ({AUTOMATIONS.select_list}, next_run_at) "
    f"VALUES ({', '.join('%s' for _ in AUTOMATIONS.names)}, %s)"
)


def stored_next_run_at(automation: Automation) -> float | None:
    """The derived column: the pure schedule's next run, NULL when never due again."""
    if automation.status != "active":
        return None
    value = next_run_at(automation)
    return None if value is None else float(value)


def automation_row(automation: Automation) -> tuple[object, ...]:
    return (*AUTOMATIONS.encode(automation), stored_next_run_at(automation))


def refresh_all_next_run_at(conn: Conn) -> None:
    """Recompute the derived column for every row (migration step; inside its transaction)."""
    rows = conn.execute(f"{_SELECT}").fetchall()
    with conn.cursor() as cur:
        cur.executemany(
            "UPDATE automations SET next_run_at = %s WHERE id = %s",
            [(stored_next_run_at(a), enc(a.id)) for a in map(AUTOMATIONS.decode, rows)],
        )


def insert_automation_rows(conn: Conn, automations: list[tuple[object, ...]]) -> None:
    with conn.cursor() as cur:
        cur.executemany(_INSERT, automations)


class AutomationMixin:
    _db: Database

    def get_automation(self, automation_id: str) -> Automation | None:
        row = self._db.read_one(f"{_SELECT} WHERE id = %s", (enc(automation_id),))
        return None if row is None else AUTOMATIONS.decode(row)

    def active_automation_names(self, project_id: str) -> frozenset[str]:
        rows = self._db.read(
            "SELECT name FROM automations WHERE project_id = %s AND status = 'active'",
            (enc(project_id),),
        )
        return frozenset(dec(str(row[0])) for row in rows)

    def insert_automation(self, automation: Automation) -> None:
        try:
            self._db.run(_INSERT, automation_row(automation))
        except psycopg.errors.UniqueViolation as exc:
            raise ValueError(f"automation id {automation.id!r} already exists") from exc

    def due_automations(self, now: float) -> tuple[Automation, ...]:
        rows = self._db.read(
            f"{_SELECT} WHERE status = 'active' AND next_run_at <= %s ORDER BY id",
            (float(now),),
        )
        return tuple(a for a in map(AUTOMATIONS.decode, rows) if is_due(a, now))

    def claim_automation(self, automation_id: str, slot: float, now: float) -> bool:
        with self._db.write() as conn:
            row = conn.execute(
                f"{_SELECT} WHERE id = %s FOR UPDATE", (enc(automation_id),)
            ).fetchone()
            if row is None:
                return False
            current = AUTOMATIONS.decode(row)
            claimed = apply_claim(current, slot, now)
            if claimed is None:
                return False
            values: list[Any] = [
                encode_value(AUTOMATIONS.by_name[name], getattr(claimed, name), name)
                for name in ("last_run_at", "last_slot_at", "run_count")
            ]
            cursor = conn.execute(
                "UPDATE automations SET last_run_at = %s, last_slot_at = %s, run_count = %s,"
                " next_run_at = %s WHERE id = %s AND status = 'active' AND run_count = %s",
                [*values, stored_next_run_at(claimed), enc(automation_id), current.run_count],
            )
            return cursor.rowcount == 1
