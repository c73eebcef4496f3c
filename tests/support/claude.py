"""Test support for the real Claude Code CLI: the pinned binary (`MARKERTOOLS_CLAUDE_BIN`,
set by `make test` from scripts/install_claude.sh), an offline Claude Code home per test
wired to the fake Messages API, a fake-model router for the worker host (by the agent
tag in a task's prompt, as tests/support/worker.py does for Codex) and host settings.

Without a binary - or without the command sandbox Claude Code needs on Linux
(bubblewrap, socat) - the tests that need it skip with SKIP_REASON, except under
`MARKERTOOLS_REQUIRE_REAL=1` (`make test`, CI), where they fail: the real-binary tests
never pass by skipping there.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from markertools_adapters.claude.fakemessages import FakeMessages, last_user_text, request_texts
from markertools_adapters.claude.offline import claude_env, config_dir, make_claude_home
from markertools_adapters.worker import WorkerSettings

PINNED_VERSION = "2.1.332"
SKIP_REASON = (
    "real Claude Code tests need the pinned CLI and its sandbox (bubblewrap, socat): set "
    "MARKERTOOLS_CLAUDE_BIN (make test installs them with scripts/install_claude.sh)"
)


def claude_bin() -> str:
    """The pinned native claude binary; skips (or, under MARKERTOOLS_REQUIRE_REAL, fails)."""
    path = os.environ.get("MARKERTOOLS_CLAUDE_BIN", "")
    sandbox = sys.platform != "linux" or (shutil.which("bwrap") and shutil.which("socat"))
    if path and Path(path).is_file() and os.access(path, os.X_OK) and sandbox:
        return path
    if os.environ.get("MARKERTOOLS_REQUIRE_REAL") == "1":
        pytest.fail(f"MARKERTOOLS_REQUIRE_REAL=1 but no Claude Code: {SKIP_REASON}")
    pytest.skip(SKIP_REASON)


class OfflineClaude:
    """One offline Claude Code: a home (HOME, CLAUDE_CONFIG_DIR) wired to a running fake."""

    def __init__(self, home: Path, fake: FakeMessages, binary: str) -> None:
        self.home = make_claude_home(home)
        self.fake = fake
        self.binary = binary

    @property
    def config(self) -> Path:
        return config_dir(self.home)

    @property
    def env(self) -> dict[str, str]:
        env = claude_env(self.home, self.fake.base_url)
        if os.environ.get("PYTHONPATH"):  # a `markertools` child runs the code under test
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env

    def transcripts(self) -> list[Path]:
        return sorted((self.config / "projects").glob("*/*.jsonl"))


@pytest.fixture
def offline_claude(tmp_path: Path) -> Iterator[OfflineClaude]:
    """A fresh offline Claude Code (fake Messages API started, home written) for one test."""
    binary = claude_bin()
    fake = FakeMessages().start()
    try:
        yield OfflineClaude(tmp_path / "claude-home", fake, binary)
    finally:
        fake.stop()


def routed_claude(claude: OfflineClaude) -> Any:
    """A support.worker Router answering every model request of `claude`'s fake."""
    from support.worker import Router

    router = Router(texts=request_texts, last=last_user_text)
    claude.fake.default_reply = None
    claude.fake.reply_for = router
    return router


def claude_settings_for(claude: OfflineClaude, tmp_path: Path, **kw: Any) -> WorkerSettings:
    """A host whose engine is Claude Code against the offline home (cf. settings_for)."""
    kw.setdefault("host", "h1")
    kw.setdefault("until_idle", True)
    kw.setdefault("max_concurrent", 3)
    kw.setdefault("poll_seconds", 0.1)
    kw.setdefault("request_timeout", 60.0)
    kw.setdefault("engine", "claude-code")
    return WorkerSettings(
        project="p1",
        claude_bin=claude.binary,
        codex_env=claude.env,
        worktrees=tmp_path / "worktrees",
        **kw,
    )
