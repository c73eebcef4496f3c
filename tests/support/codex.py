"""Test support for the real Codex CLI: the pinned binary (`MARKERTOOLS_CODEX_BIN`, set by
`make test` from scripts/install_codex.sh), an offline CODEX_HOME per test, the fake
Responses server, and an initialised app-server client.

Without a binary the tests that need it skip with SKIP_REASON - except under
`MARKERTOOLS_REQUIRE_REAL=1` (`make test`, CI), where a missing binary fails them: the
real-binary tests never pass by skipping there.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from markertools_adapters.codex.client import AppServerClient
from markertools_adapters.codex.fakemodel import FakeResponses
from markertools_adapters.codex.offline import codex_env, make_codex_home

PINNED_VERSION = "0.169.0"
SKIP_REASON = (
    "real Codex tests need the pinned CLI: set MARKERTOOLS_CODEX_BIN "
    "(make test installs it with scripts/install_codex.sh)"
)


def codex_bin() -> str:
    """The pinned native codex binary; skips (or, under MARKERTOOLS_REQUIRE_REAL, fails)."""
    path = os.environ.get("MARKERTOOLS_CODEX_BIN", "")
    if path and Path(path).is_file() and os.access(path, os.X_OK):
        return path
    if os.environ.get("MARKERTOOLS_REQUIRE_REAL") == "1":
        pytest.fail(f"MARKERTOOLS_REQUIRE_REAL=1 but no Codex binary: {SKIP_REASON}")
    pytest.skip(SKIP_REASON)


class OfflineCodex:
    """One offline Codex installation: a CODEX_HOME wired to a running fake server."""

    def __init__(self, home: Path, fake: FakeResponses, binary: str, models: tuple[str, ...]):
        self.home = home
        self.fake = fake
        self.binary = binary
        self.models = models
        make_codex_home(home, fake.base_url, models=list(models))

    @property
    def env(self) -> dict[str, str]:
        env = codex_env(self.home)
        if os.environ.get("PYTHONPATH"):  # a `markertools` child runs the code under test
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env

    def client(self, **kw: Any) -> AppServerClient:
        kw.setdefault("default_timeout", 30.0)
        return AppServerClient(self.binary, env=self.env, cwd=str(self.home), **kw)

    @asynccontextmanager
    async def started(self, **kw: Any) -> AsyncIterator[AppServerClient]:
        client = self.client(**kw)
        await client.start()
        try:
            await client.initialize({"name": "markertools-tests", "version": "0"})
            yield client
        finally:
            await client.close(grace=3.0)

    def rollouts(self) -> list[Path]:
        return sorted((self.home / "sessions").rglob("rollout-*.jsonl"))


@pytest.fixture
def offline_codex(tmp_path: Path) -> Iterator[OfflineCodex]:
    """A fresh offline Codex (fake server started, CODEX_HOME written) for one test."""
    binary = codex_bin()
    fake = FakeResponses().start()
    try:
        yield OfflineCodex(tmp_path / "codex-home", fake, binary, ("fake-model", "fake-mini"))
    finally:
        fake.stop()


@pytest.fixture(scope="session")
def codex_schema(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JSON Schema the pinned binary generates (`app-server generate-json-schema`)."""
    import subprocess

    out = tmp_path_factory.mktemp("codex-schema")
    subprocess.run(
        [codex_bin(), "app-server", "generate-json-schema", "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out
