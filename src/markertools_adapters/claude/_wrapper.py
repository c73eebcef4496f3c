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
# Must never: die of the Ctrl-C its COMMAND handles (the Codex wrapper's `_run_child`).
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from markertools_adapters.claude._replies import Text
from markertools_adapters.claude.offline import claude_env, find_claude, make_claude_home
from markertools_adapters.codex.fakemodel import _run_child, read_replies

WRAPPED_BY = "MARKERTOOLS_WRAPPED_BY"


def default_home() -> Path:
    """`fake-claude-home` under the per-user state path (kept between runs, so a session
    of a run under the wrapper can be resumed under it)."""
    try:
        import platformdirs
    except ImportError:  # stdlib only: the Linux default
        return Path("~/.local/state/markertools/fake-claude-home").expanduser()
    return Path(platformdirs.user_state_dir("markertools", appauthor=False)) / "fake-claude-home"


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
    import shlex

    parser = argparse.ArgumentParser(prog="python -m markertools_adapters.claude.fakemessages")
    parser.add_argument(
        "--home",
        help="the offline Claude Code home to write and keep (default: fake-claude-home "
        "under the per-user state path, e.g. ~/.local/state/markertools/fake-claude-home)",
    )
    parser.add_argument(
        "--replies",
        metavar="FILE",
        help="the model's reply to each turn, in order: text separated by lines '%%%%', "
        "or JSON lines (*.jsonl); then an echo",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run")
    args = parser.parse_args(argv)
    command = list(args.command or [])
    if command[:1] == ["--"]:  # only the separator; a `--` inside the command is its own
        command = command[1:]
    try:
        replies = read_replies(args.replies) if args.replies else []
    except ValueError as exc:
        sys.stderr.write(f"fakemessages: {exc}\n")
        return 2
    fake = server([Text(reply) for reply in replies], default_reply=None)
    fake.reply_for = lambda body: echo_reply(last_user_text(body))
    fake.start()
    try:
        home = (Path(args.home).expanduser() if args.home else default_home()).absolute()
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
        wrapper = [
            sys.executable,
            "-m",
            "markertools_adapters.claude.fakemessages",
            "--home",
            str(home),
        ]
        if args.replies:
            wrapper += ["--replies", os.path.abspath(args.replies)]
        env[WRAPPED_BY] = shlex.join([*wrapper, "--"])
        if not command:
            sys.stdout.write(
                f"fake Messages API at {fake.base_url}\nHOME={home}\n"
                f"CLAUDE_CONFIG_DIR={env['CLAUDE_CONFIG_DIR']}\n"
            )
            sys.stdout.flush()
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                return 0
        return _run_child(command, env)
    finally:
        fake.stop()


__all__ = ["default_home", "echo_reply", "main"]
