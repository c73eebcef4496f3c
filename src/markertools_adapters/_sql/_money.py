# Owns: migration step 6's data half on both SQL adapters (CST-2): the float dollar
# columns of a version-5 database (`costs.usd`, `quotas.total_usd`, `quotas.used_usd`)
# converted to the integer micro-dollar columns that replace them (`*_micros`), with the
# same conversion the records use (markertools.to_micros: the float's printed decimal,
# rounded half-even to micro-dollars), so an old database reads back the amounts it
# showed before.
#
# Must never: open or end a transaction (the adapter's migration holds one); change a
# value to make it fit - an amount the records refuse (negative, NaN, an infinity, too
# large) stops the migration with a SchemaError naming the rows, and nothing is written.
from __future__ import annotations

from typing import Final

from markertools import to_micros
from markertools_adapters._sql._dialect import Dialect, Executor
from markertools_adapters._sql._errors import SchemaError

# table -> (its key column, [(old float column, new micro-dollar column)])
MONEY_COLUMNS: Final[dict[str, tuple[str, tuple[tuple[str, str], ...]]]] = {
    "costs": ("seq", (("usd", "usd_micros"),)),
    "quotas": ('"user"', (("total_usd", "total_usd_micros"), ("used_usd", "used_usd_micros"))),
}
_SHOWN: Final[int] = 5  # refused rows named in the error


def fill_micros(conn: Executor, dialect: Dialect, targets: dict[str, str]) -> None:
    """For each table of MONEY_COLUMNS, read its old float columns and write the
    micro-dollar columns of `targets[table]` (the same table, or its rebuilt copy) row by
    row, matched on the key. Raises SchemaError listing every row it cannot convert."""
    problems: list[str] = []
    updates: dict[str, list[tuple[object, ...]]] = {}
    for table, (key, pairs) in MONEY_COLUMNS.items():
        old = ", ".join(name for name, _ in pairs)
        rows = conn.execute(f"SELECT {key}, {old} FROM {table}").fetchall()
        changed: list[tuple[object, ...]] = []
        for row in rows:
            values: list[int | None] = []
            for (name, _), value in zip(pairs, row[1:], strict=True):
                try:
                    values.append(None if value is None else to_micros(value, name))
                except (TypeError, ValueError) as exc:
                    problems.append(f"{table} {key.strip(chr(34))}={row[0]!r}: {exc}")
                    values.append(None)
            changed.append((*values, row[0]))
        updates[table] = changed
    if problems:
        shown = "; ".join(problems[:_SHOWN])
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        raise SchemaError(
            f"cannot convert {len(problems)} amount(s) to exact micro-dollars: {shown}{more}; "
            "correct them with an older markertools, then open the database again"
        )
    for table, changed in updates.items():
        key, pairs = MONEY_COLUMNS[table]
        if not changed:
            continue
        sets = ", ".join(f"{new} = ?" for _, new in pairs)
        dialect.execute_many(
            conn, dialect.sql(f"UPDATE {targets[table]} SET {sets} WHERE {key} = ?"), changed
        )


__all__ = ["MONEY_COLUMNS", "fill_micros"]
