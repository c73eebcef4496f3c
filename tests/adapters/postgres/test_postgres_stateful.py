"""The PostgreSQL adapter against the in-memory reference model, step by step: the SQLite
helper's RuleBasedStateMachine (tests/adapters/sqlite/test_stateful_adapters.py) with the PostgreSQL store
in the adapter's seat - every rule applies the same operation to both stores and asserts
equal answers (or the same exception type) and equal worlds after every step. Each run
gets a fresh schema of its own on the server MARKERTOOLS_PG_DSN names."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import initialize
from support.postgres import SKIP_REASON, pg_dsn, throwaway_store
from support.stateful import AdapterAgreement
from support.strategies.sqlite import worlds

from markertools_adapters.memory import MemoryStore
from markertools_adapters.world import World

pytestmark = [pytest.mark.postgres, pytest.mark.skipif(pg_dsn() is None, reason=SKIP_REASON)]


class PostgresAgreement(AdapterAgreement):
    """`self.sqlite` is the adapter under test (the name comes from the parent machine)."""

    @initialize(world=worlds)
    def load(self, world: World) -> None:
        self.memory = MemoryStore.from_world(world)
        store: Any = throwaway_store(world)
        self.sqlite = store


PostgresAgreement.TestCase.settings = settings(
    max_examples=int(os.environ.get("MT_PG_STATEFUL_EXAMPLES", "25")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
test_postgres_agrees_with_memory = pytest.mark.rule("CTL-4", "SCH-4", "SCH-5", "LIN-4", "ATT-2")(
    PostgresAgreement.TestCase
)
