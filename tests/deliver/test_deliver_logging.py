"""The library's logging: `logging.getLogger("markertools")`, a NullHandler, one INFO record
per delivered turn (sender, turn id, counts per outcome, the report queued or not, ms),
a WARNING per failing port call; nothing at import."""

from __future__ import annotations

import logging
import subprocess
import sys

import attrs
import pytest
from support.exactly_once import TURN, ports_for, world

from markertools import deliver_turn
from markertools_adapters.memory import MemoryStore


def test_one_info_record_per_delivered_turn(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore.from_world(world())
    with caplog.at_level(logging.INFO, logger="markertools"):
        deliver_turn(TURN, sender="t-s", outcome="completed", ports=ports_for(store), turn_id="x1")
    infos = [r for r in caplog.records if r.name == "markertools" and r.levelno == logging.INFO]
    assert len(infos) == 1
    text = infos[0].getMessage()
    assert text.startswith("delivered turn of t-s (turn id x1): done 6; report queued; ")
    assert text.endswith(" ms")
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("markertools").handlers)


@pytest.mark.rule("TRN-8")
def test_a_warning_per_failing_port_call(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryStore.from_world(world())

    class Down:
        def insert_todo(self, todo: object) -> None:
            raise OSError("disk full")

        def __getattr__(self, name: str) -> object:
            return getattr(store, name)

    ports = attrs.evolve(ports_for(store), todos=Down())
    with caplog.at_level(logging.WARNING, logger="markertools"):
        deliver_turn(TURN, sender="t-s", outcome="completed", ports=ports)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["port call failed: todo-create (line 7): OSError: disk full"]


def test_importing_markertools_logs_nothing_and_configures_nothing() -> None:
    code = (
        "import logging, markertools\n"
        "markertools.parse_turn('```task-list\\n{}\\n```\\n')\n"
        "print(logging.getLogger('markertools').handlers, logging.getLogger().handlers)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] []" and out.stderr == ""
