# Owns: the AutomationStore port on both SQL adapters (get / active names / insert / due
# listing / claim), as a mixin over `self._db` and `self._tables`; the derived
# `next_run_at` column that makes the due listing an index range scan; and the rule that
# no two active automations of one project share a name (AUT-3), which a partial unique
# index enforces (migration step 3 of both schemas).
#
# Must never: compute a schedule itself - the pure markertools.domain.schedule decides when an
# automation is due; this module only stores its answer and re-asks it.
#
# Invariants:
#   Rule 1 (SCH-5): `next_run_at` is written from `markertools.domain.schedule.next_run_at` in
#           the same statement as every change to the row (NULL when never due again, or
#           when the pure schedule cannot compute it - OverflowError on absurd times),
#           and due_automations re-checks every candidate with the pure `is_due`, so the
#           listing agrees with is_due on every row.
#   Rule 2 (SCH-4): claim_automation is one write transaction: read the row (under the
#           SQLite write lock / PostgreSQL FOR UPDATE), the pure `apply_claim` for exactly
#           `slot`, `UPDATE ... WHERE id = ? AND status = 'active' AND run_count = ?` +
#           rowcount check: of concurrent claimers of one slot exactly one wins.
#   Rule 3 (AUT-3): insert_automation is ONE statement, `INSERT ... ON CONFLICT (project_id,
#           name) WHERE status = 'active' DO NOTHING`: of concurrent inserts of one active
#           name exactly one row is written; every other gets AutomationNameTaken, never a
#           second active automation of that name. An existing id is a ValueError (also
#           when the name clashes too: the id is checked first, as in the memory model).
from __future__ import annotations

from typing import Final

from markertools import (
    Automation,
    AutomationNameTaken,
    InvalidArgument,
    apply_claim,
    is_due,
    next_run_at,
)
from markertools_adapters._sql._codec import RecordCodec, Tables
from markertools_adapters._sql._dialect import Database, Executor
from markertools_adapters._sql._rows import get_by_id
from markertools_adapters.errors import StoreError

_NAME_CLASH: Final[str] = " ON CONFLICT (project_id, name) WHERE status = 'active' DO NOTHING"


def stored_next_run_at(automation: Automation) -> float | None:
    """The value of the derived column: the pure schedule's next run, or NULL when the
    automation can never be due again (not active, or a `once` that has run)."""
    if automation.status != "active":
        return None
    try:
        value = next_run_at(automation)
    except OverflowError:  # times near the float limit: the pure schedule has no answer
        return None
    return None if value is None else float(value)


def automation_insert_sql(codec: RecordCodec[Automation]) -> str:
    """INSERT of a whole row: the record's columns, then the derived next_run_at."""
    params = codec.dialect.params(len(codec.names) + 1)
    return f"INSERT INTO automations ({codec.select_list}, next_run_at) VALUES ({params})"


def automation_row(codec: RecordCodec[Automation], automation: Automation) -> tuple[object, ...]:
    return (*codec.encode(automation), stored_next_run_at(automation))


def refresh_all_next_run_at(conn: Executor, tables: Tables) -> None:
    """Recompute the derived column for every row (migration step 2; in its transaction)."""
    codec, d = tables.automations, tables.dialect
    rows = conn.execute(codec.select_sql).fetchall()
    d.execute_many(
        conn,
        d.sql("UPDATE automations SET next_run_at = ? WHERE id = ?"),
        [(stored_next_run_at(a), d.bind_text(a.id)) for a in map(codec.decode, rows)],
    )


def active_name_clashes(conn: Executor, tables: Tables) -> str | None:
    """Before migration step 3: which active automations share a name (None = none do),
    described for the error that stops the migration (data is never changed to fit)."""
    d = tables.dialect
    rows = conn.execute(
        "SELECT project_id, name, count(*) FROM automations WHERE status = 'active'"
        " GROUP BY project_id, name HAVING count(*) > 1 ORDER BY project_id, name LIMIT 5"
    ).fetchall()
    if not rows:
        return None
    clashes = "; ".join(
        f"project {d.stored_text(p)!r}: {int(n)} named {d.stored_text(name)!r}"
        for p, name, n in rows
    )
    return (
        "active automations must have distinct names within a project (AUT-3), but this "
        f"{d.container} has {clashes}; pause or rename all but one of each (e.g. UPDATE "
        "automations SET status = 'paused' WHERE id = '...') with the previous markertools "
        "or any SQL client, then open it again"
    )


class AutomationMixin:
    _db: Database
    _tables: Tables

    def get_automation(self, automation_id: str) -> Automation | None:
        return get_by_id(self._db, self._tables.automations, automation_id)

    def active_automation_names(self, project_id: str) -> frozenset[str]:
        d = self._tables.dialect
        rows = self._db.read(
            d.sql("SELECT name FROM automations WHERE project_id = ? AND status = 'active'"),
            (d.bind_text(project_id),),
        )
        return frozenset(d.stored_text(row[0]) for row in rows)

    def insert_automation(self, automation: Automation) -> None:
        codec = self._tables.automations
        row = automation_row(codec, automation)
        try:
            written = self._db.run(automation_insert_sql(codec) + _NAME_CLASH, row)
        except StoreError as exc:
            if not codec.dialect.is_duplicate_key(exc):
                raise
            raise InvalidArgument(f"automation id {automation.id!r} already exists") from exc
        if written != 1:  # Rule 3: the partial unique index kept the other active row
            if self.get_automation(automation.id) is not None:  # the id, as in memory
                raise InvalidArgument(f"automation id {automation.id!r} already exists")
            raise AutomationNameTaken(automation.project_id, automation.name)

    def due_automations(self, now: float) -> tuple[Automation, ...]:
        codec, d = self._tables.automations, self._tables.dialect
        rows = self._db.read(
            d.sql(f"{codec.select_sql} WHERE status = 'active' AND next_run_at <= ? ORDER BY id"),
            (float(now),),
        )
        return tuple(a for a in map(codec.decode, rows) if is_due(a, now))

    def claim_automation(self, automation_id: str, slot: float, now: float) -> bool:
        codec, d = self._tables.automations, self._tables.dialect
        with self._db.write() as conn:
            row = conn.execute(
                d.sql(f"{codec.select_sql} WHERE id = ?{d.lock_row}"),
                (d.bind_text(automation_id),),
            ).fetchone()
            if row is None:
                return False
            current = codec.decode(row)
            claimed = apply_claim(current, slot, now)
            if claimed is None:
                return False
            cursor = conn.execute(
                d.sql(
                    "UPDATE automations SET last_run_at = ?, last_slot_at = ?, run_count = ?,"
                    " next_run_at = ? WHERE id = ? AND status = 'active' AND run_count = ?"
                ),
                (
                    *(
                        codec.encode_value(name, getattr(claimed, name))
                        for name in ("last_run_at", "last_slot_at", "run_count")
                    ),
                    stored_next_run_at(claimed),
                    d.bind_text(automation_id),
                    current.run_count,
                ),
            )
            return cursor.rowcount == 1
