# Owns: the Claude Code side of `markertools demo --live --engine claude-code` (ENG-3):
# the same story as the Codex demo (the `answer` of `_demo_live`, passed in), told by
# the bundled fake of the Anthropic Messages API to the REAL pinned Claude Code CLI in an
# offline home under the demo's directory; the host settings' engine fields; finding the
# binary (--claude-bin, else MARKERTOOLS_CLAUDE_BIN, else the pinned install under
# .cache/claude, else `claude` on PATH).
#
# Must never: reach the network (the home's ANTHROPIC_BASE_URL is the local fake; the
# proxies point at a dead loopback port).
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Final

CLAUDE_INSTALL_HINT: Final[str] = (
    "demo --live --engine claude-code needs the pinned Claude Code CLI: run `make demo-live "
    "ENGINE=claude-code` (it installs it with scripts/install_claude.sh), or pass "
    "--claude-bin / set MARKERTOOLS_CLAUDE_BIN"
)


def claude_model(
    answer: Callable[[list[str], str, int], Any],
) -> Callable[[Path, str], AbstractContextManager[dict[str, Any]]]:
    """The story's model for Claude Code: `answer(texts, last)` (the Codex demo's) says
    what each agent replies; entered with the demo's directory and the binary, it runs
    the fake with an offline home under that directory and yields the WorkerSettings
    fields."""

    @contextmanager
    def running(work: Path, binary: str) -> Iterator[dict[str, Any]]:
        from markertools_adapters.claude.fakemessages import (
            BashCall,
            FakeMessages,
            Text,
            last_user_text,
            request_texts,
            tool_results,
        )
        from markertools_adapters.claude.offline import claude_env, make_claude_home

        def reply_for(body: Any) -> Any:
            said = answer(request_texts(body), last_user_text(body) or "", len(tool_results(body)))
            if isinstance(said, str):
                return Text(said)
            return BashCall(said.command, unsandboxed=True)  # a ShellAsk: asks to leave

        with FakeMessages(default_reply=None) as fake:
            fake.reply_for = reply_for
            home = make_claude_home(work / "claude-home")
            env = claude_env(home, fake.base_url)
            yield {"engine": "claude-code", "claude_bin": binary, "codex_env": env}

    return running


def find_claude_bin(option: str | None) -> str | None:
    from markertools_adapters.claude.offline import find_claude

    return find_claude(option)


__all__ = ["CLAUDE_INSTALL_HINT", "claude_model", "find_claude_bin"]
