# Owns: the SQL DeliveryJournal (TRN-9) shared by SQLite and PostgreSQL: the rows of
# turns delivered with a turn id (`delivery_blocks`, migration step 4: each applied
# block, the queued report, the finished report and the digest of the turn's input - a
# position row, so no schema change: older databases keep working as they are), and
# `atomic()`, the store's one transaction around a block's effect and its journal row
# (the connection layer's `atomic`).
#
# Invariants:
#   Rule 1: a block's row is written inside the same transaction as its effect (the
#           delivery loop calls `record_block` inside `atomic()`), so after a crash both
#           exist or neither does.
#   Rule 2: a second write for the same key keeps the first (INSERT ... ON CONFLICT DO
#           NOTHING), so a racing duplicate delivery can not overwrite an outcome.
from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager

from markertools_adapters._sql._codec import Tables, text_value
from markertools_adapters._sql._dialect import Database


class JournalMixin:
    _db: Database
    _tables: Tables

    def block_entries(self, sender: str, turn_id: str) -> Mapping[int, str]:
        d = self._tables.dialect
        rows = self._db.read(
            d.sql("SELECT position, entry FROM delivery_blocks WHERE sender = ? AND turn_id = ?"),
            (d.bind_text(sender), d.bind_text(turn_id)),
        )
        return {int(r[0]): d.stored_text(r[1]) for r in rows}

    def record_block(self, sender: str, turn_id: str, position: int, entry: str) -> None:
        d = self._tables.dialect
        self._db.run(
            d.sql(
                "INSERT INTO delivery_blocks (sender, turn_id, position, entry) "
                "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
            ),
            (
                d.bind_text(text_value(sender, "delivery_blocks.sender")),
                d.bind_text(text_value(turn_id, "delivery_blocks.turn_id")),
                position,
                d.bind_text(entry),
            ),
        )

    def atomic(self) -> AbstractContextManager[None]:
        return self._db.atomic()
