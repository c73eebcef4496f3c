# Owns: what the two fake servers' command-line wrappers share (docs/fake-model.md):
# `python -m markertools_adapters.codex.fakemodel` and `... .claude.fakemessages`, both
# `[--home DIR] [--replies FILE] [--] COMMAND ...` - the arguments, the home kept under
# the per-user state path, the wrapper's own command line (MARKERTOOLS_WRAPPED_BY), and
# running COMMAND (or, without one, serving until Ctrl-C).
#
# Must never: die of the Ctrl-C its COMMAND handles (`run_child`); take a `--` inside the
# command for its own.
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

WRAPPED_BY = "MARKERTOOLS_WRAPPED_BY"  # the wrapper's own command (shell words), for COMMAND


def state_home(name: str) -> Path:
    """`name` under the per-user state path (platformdirs; `~/.local/state/markertools/`
    on Linux), the same every time, so a run paused under a wrapper finds its threads or
    sessions when it is resumed under it."""
    try:
        import platformdirs
    except ImportError:  # stdlib only: the Linux default
        return Path(f"~/.local/state/markertools/{name}").expanduser()
    return Path(platformdirs.user_state_dir("markertools", appauthor=False)) / name


@dataclass(frozen=True)
class WrapperArgs:
    """A wrapper's command line: the home to write and keep, the `--replies` file (and
    its replies), the command to run (empty: serve until Ctrl-C)."""

    home: Path
    replies_path: str | None
    replies: list[str]
    command: list[str]


def parse_wrapper_args(
    argv: list[str] | None,
    *,
    prog: str,
    home_help: str,
    default_home: Path,
    read_replies: Callable[[str], list[str]],
    name: str,
) -> WrapperArgs | int:
    """The parsed command line, or 2 after one line on stderr (an unreadable --replies)."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--home", help=home_help)
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
        sys.stderr.write(f"{name}: {exc}\n")
        return 2
    home = (Path(args.home).expanduser() if args.home else default_home).absolute()
    return WrapperArgs(home, args.replies, replies, command)


def wrapper_line(module: str, args: WrapperArgs) -> str:
    """The wrapper's own command, shell-quoted and ending in `--` (MARKERTOOLS_WRAPPED_BY:
    what a paused run prints to be taken back under the same fake)."""
    wrapper = [sys.executable, "-m", module, "--home", str(args.home)]
    if args.replies_path:
        wrapper += ["--replies", os.path.abspath(args.replies_path)]
    return shlex.join([*wrapper, "--"])


def serve_or_run(command: list[str], env: dict[str, str], banner: str, name: str) -> int:
    """Run `command` with `env` and return its exit code; without a command, print
    `banner` and serve until Ctrl-C (exit 0)."""
    if not command:
        sys.stdout.write(banner)
        sys.stdout.flush()
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0
    return run_child(command, env, name)


def run_child(command: list[str], env: dict[str, str], name: str = "fakemodel") -> int:
    """Run `command` and return its exit code (128 + N when signal N ended it).

    Ctrl-C reaches the child directly (same foreground process group), which handles
    it (`dots run` pauses its run): meanwhile this process only waits for it. A
    Python-level no-op handler, not SIG_IGN: exec resets a handled signal to its
    default in the child, while an ignored one would stay ignored there."""
    import signal
    import subprocess

    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        try:
            child = subprocess.Popen(command, env=env)
        except OSError as exc:
            sys.stderr.write(f"{name}: cannot run {command[0]}: {exc.strerror or exc}\n")
            return 127
        code = child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code
