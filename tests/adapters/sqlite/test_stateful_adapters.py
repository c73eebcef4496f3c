"""The SQLite adapter against the in-memory reference model, step by step: a hypothesis
RuleBasedStateMachine applies the same random operation to both stores (creates,
cancels, retries, platform requeues, todo changes, automation claims, lineage queries,
listings with filters, audit and follow-ups) and asserts that both return the same value
(or raise the same exception type) and hold the same world after every step."""

from __future__ import annotations

import pytest
from support.stateful import AdapterAgreement

test_adapters_agree = pytest.mark.rule("CTL-4", "SCH-4", "SCH-5", "LIN-4", "ATT-2")(
    AdapterAgreement.TestCase
)


def test_the_machine_compares_every_storage_port_method() -> None:
    """Every method of every storage port is called on both stores by some rule (so the
    SQLite and PostgreSQL machines, which share these rules, cover every port)."""
    import inspect
    import re

    from markertools_adapters.wiring import storage_port_methods

    wanted = storage_port_methods()
    source = inspect.getsource(AdapterAgreement)
    compared = set(re.findall(r'self\.both\(\s*"(\w+)"', source))
    for group in re.findall(r"for method in \((.*?)\):", source, re.S):  # reads_by_task
        compared |= set(re.findall(r'"(\w+)"', group))
    assert wanted <= compared, sorted(wanted - compared)
