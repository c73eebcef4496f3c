"""Shared helpers of the `tools serve` store-outage tests (no tests of its own): a
PostgreSQL server of the test's own (scripts/pg_test_server.py), which the test halts
(every connection cut, the data kept) and resumes on the same port."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]


def _script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "pg_test_server", REPO / "scripts" / "pg_test_server.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PrivatePostgres:
    """A server `start`ed by scripts/pg_test_server.py: `halt()` stops it (fast shutdown:
    connections cut), `resume()` starts it again on the same port with the same data."""

    def __init__(self, script: Any, dsn: str, base: Path) -> None:
        self._script = script
        self.dsn = dsn
        self.base = base

    def _ctl(self, *args: str) -> None:
        bindir = self._script._find_bindir()
        data = self.base / "data"
        done = self._script._run(
            [str(bindir / "pg_ctl"), "-D", str(data), "-w", "-t", "60", *args],
            self._script._os_user(),
        )
        assert done.returncode == 0, done.stderr

    def halt(self) -> None:
        self._ctl("-m", "fast", "stop")

    def resume(self) -> None:
        self._ctl("-l", str(self.base / "server.log"), "start")


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    script = _script()
    dsn, base = script.start()
    try:
        yield PrivatePostgres(script, dsn, Path(base))
    finally:
        script.stop(base)
