# Owns: the dialect-neutral half of the two SQL storage adapters (markertools_adapters.
# sqlite and markertools_adapters.postgres): record <-> row codecs driven by one table of
# record types, the row operations and compare-and-set updates, the small ports, the
# AutomationStore, the end of a turn (finish_turn, cost rows, quota charges), world
# load / export, the money columns' migration, the migration runner and the schema errors
# (`SchemaError`, `SchemaTooNew`, one pair for both engines). Each adapter package keeps
# only what is genuinely its engine's: its `Dialect` (placeholders, types, text escaping),
# connection and transactions, schema DDL, listings and lineage queries,
# the permission lookup and (PostgreSQL) LISTEN/NOTIFY.
#
# Must never: import sqlite3, sqlite_utils or psycopg (a difference between the engines
# is a `Dialect` field, or it stays in the adapter).
"""Shared SQL building blocks of the SQLite and PostgreSQL storage adapters."""

from __future__ import annotations

from markertools_adapters._sql._approvals import ApprovalMixin
from markertools_adapters._sql._automations import (
    AutomationMixin,
    active_name_clashes,
    refresh_all_next_run_at,
    stored_next_run_at,
)
from markertools_adapters._sql._codec import RecordCodec, Tables, quote, text_value
from markertools_adapters._sql._ddl import (
    ACTIVE_NAME_INDEX,
    CLAIM_INDEX,
    COSTS_INDEX,
    DUE_INDEX,
    LOOKUP_INDEXES,
)
from markertools_adapters._sql._dialect import Database, Dialect, Executor, Statement
from markertools_adapters._sql._errors import SchemaError, SchemaTooNew
from markertools_adapters._sql._fence import FenceMixin
from markertools_adapters._sql._finish import FinishMixin
from markertools_adapters._sql._journal import JournalMixin
from markertools_adapters._sql._leases import LEASE_CLAIM_SQL, LeaseMixin
from markertools_adapters._sql._migrate import Step, apply_migration
from markertools_adapters._sql._money import MONEY_COLUMNS, fill_micros
from markertools_adapters._sql._records import RecordsMixin
from markertools_adapters._sql._rows import TaskRows, TodoRows, compare_and_set
from markertools_adapters._sql._tools import ToolsMixin
from markertools_adapters._sql._worker import WorkerMixin
from markertools_adapters._sql._world import WORLD_TABLES, WorldMixin

__all__ = [
    "ACTIVE_NAME_INDEX",
    "CLAIM_INDEX",
    "COSTS_INDEX",
    "DUE_INDEX",
    "LEASE_CLAIM_SQL",
    "LOOKUP_INDEXES",
    "MONEY_COLUMNS",
    "WORLD_TABLES",
    "ApprovalMixin",
    "AutomationMixin",
    "Database",
    "Dialect",
    "Executor",
    "FenceMixin",
    "FinishMixin",
    "JournalMixin",
    "LeaseMixin",
    "RecordCodec",
    "RecordsMixin",
    "SchemaError",
    "SchemaTooNew",
    "Statement",
    "Step",
    "Tables",
    "TaskRows",
    "TodoRows",
    "ToolsMixin",
    "WorkerMixin",
    "WorldMixin",
    "active_name_clashes",
    "apply_migration",
    "compare_and_set",
    "fill_micros",
    "quote",
    "refresh_all_next_run_at",
    "stored_next_run_at",
    "text_value",
]
