# Owns: the command-line wrapper of the fake Messages API (docs/fake-model.md):
# `python -m markertools_adapters.claude.fakemessages [--home DIR] [--replies FILE] [--]
# COMMAND ...` starts the fake on 127.0.0.1, writes an offline Claude Code home wired to
# it and keeps it (`--home DIR`, by default `fake-claude-home` under the per-user state
# path), and runs COMMAND with that environment (HOME, CLAUDE_CONFIG_DIR,
# ANTHROPIC_BASE_URL, the fake key, the offline switches, and MARKERTOOLS_CLAUDE_BIN
# when the pinned install is found), exiting with its code. Turn N is answered with
# reply N of `--replies FILE` (the Codex wrapper's format), later turns with an echo of
# the instruction. Without a command it prints the environment and serves until Ctrl-C.
#
# Must never: die of the Ctrl-C its COMMAND handles (`_fakewrap.run_child`).
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from markertools_adapters._fakewrap import (
    WRAPPED_BY,
    parse_wrapper_args,
    serve_or_run,
    state_home,
    wrapper_line,
)
from markertools_adapters.claude._replies import Text
from markertools_adapters.claude.offline import claude_env, find_claude, make_claude_home
from markertools_adapters.codex.fakemodel import read_replies


def default_home() -> Path:
    """`fake-claude-home` under the per-user state path (kept between runs, so a session
    of a run under the wrapper can be resumed under it)."""
    return state_home("fake-claude-home")


def echo_reply(last: str | None) -> Text:
    """The default reply to an instruction: an answer naming it (no marker block)."""
    text = (last or "").strip().splitlines()
    first = text[0][:200] if text else "(no instruction)"
    return Text(f"(fake model) Done: {first}\nNothing else to report.")


def main(
    argv: list[str] | None,
    *,
    server: Callable[..., Any],
    last_user_text: Callable[[Any], str | None],
) -> int:
    """The wrapper; `server` is `FakeMessages`, `last_user_text` its reading of a
    request (passed in by `fakemessages.main`, which this module does not import)."""
    args = parse_wrapper_args(
        argv,
        prog="python -m markertools_adapters.claude.fakemessages",
        home_help="the offline Claude Code home to write and keep (default: fake-claude-home "
        "under the per-user state path, e.g. ~/.local/state/markertools/fake-claude-home)",
        default_home=default_home(),
        read_replies=read_replies,
        name="fakemessages",
    )
    if isinstance(args, int):
        return args
    fake = server([Text(reply) for reply in args.replies], default_reply=None)
    fake.reply_for = lambda body: echo_reply(last_user_text(body))
    fake.start()
    try:
        home = args.home
        try:
            make_claude_home(home)
        except OSError as exc:
            sys.stderr.write(f"fakemessages: --home {home}: cannot write: {exc.strerror or exc}\n")
            return 2
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))},
            **claude_env(home, fake.base_url, block_proxy=False, base={}),
        }
        binary = find_claude()
        if binary is not None:
            env.setdefault("MARKERTOOLS_CLAUDE_BIN", binary)
        env[WRAPPED_BY] = wrapper_line("markertools_adapters.claude.fakemessages", args)
        banner = (
            f"fake Messages API at {fake.base_url}\nHOME={home}\n"
            f"CLAUDE_CONFIG_DIR={env['CLAUDE_CONFIG_DIR']}\n"
        )
        return serve_or_run(args.command, env, banner, "fakemessages")
    finally:
        fake.stop()


__all__ = ["default_home", "echo_reply", "main"]
