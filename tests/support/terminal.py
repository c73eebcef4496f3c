"""Test support for terminal programs driven as a person drives them: a pseudo-terminal
(pexpect) running `markertools` (optionally under the README's fake-model wrapper), the
person's typing and Ctrl-C (SIGINT to the foreground process group, from the terminal
driver), and what the screen showed, without the escape sequences of the live view."""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path
from typing import Any

import pexpect

from support.paths import REPO

PLAN = REPO / "examples" / "plans" / "reader-fixer.json"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
MARKERTOOLS = ("-m", "markertools")
WRAPPER = ("-m", "markertools_adapters.codex.fakemodel")


class Terminal:
    """One program on a pseudo-terminal; `screen()` is everything it printed so far."""

    def __init__(
        self,
        args: list[str],
        env: dict[str, str] | None = None,
        timeout: float = 120,
        columns: int = 250,
    ):
        self._log = io.StringIO()
        given = env if env is not None else dict(os.environ)
        # the terminal's own size decides (rich and shutil read COLUMNS / LINES first, and a
        # test runner's worker process may carry its own)
        child_env = {k: v for k, v in given.items() if k not in ("COLUMNS", "LINES")}
        self.child = pexpect.spawn(
            sys.executable,
            args,
            env=child_env,
            encoding="utf-8",
            timeout=timeout,
            dimensions=(50, columns),
        )
        self.child.logfile_read = self._log

    def wait_for(self, text: str) -> None:
        self.child.expect_exact(text)

    def wait_for_pattern(self, pattern: str) -> re.Match[str]:
        self.child.expect(pattern)
        match = self.child.match
        assert isinstance(match, re.Match)
        return match

    def type(self, line: str) -> None:
        self.child.sendline(line)

    def answer(self, prompt: str, line: str) -> None:
        self.wait_for(prompt)
        self.type(line)

    def ctrl_c(self) -> None:
        self.child.sendintr()  # the terminal's INTR character: SIGINT to the foreground group

    def exit_code(self) -> int | None:
        """Wait for the program to end; its exit status (None when a signal ended it)."""
        self.child.expect(pexpect.EOF)
        self.child.close()
        return self.child.exitstatus  # type: ignore[no-any-return]

    def screen(self) -> str:
        return ANSI.sub("", self._log.getvalue())


def markertools(*args: str, env: dict[str, str] | None = None, columns: int = 250) -> Terminal:
    return Terminal([*MARKERTOOLS, *args], env, columns=columns)


def wrapped(home: Path, *args: str, env: dict[str, str] | None = None) -> Terminal:
    """`python -m markertools_adapters.codex.fakemodel --home HOME -- python -m markertools
    ARGS`: the README's orchestration demo, keeping one CODEX_HOME across commands."""
    return Terminal(
        [*WRAPPER, "--home", str(home), "--", sys.executable, *MARKERTOOLS, *args], env
    )


def dots_run_args(state: Path, codex: str, *extra: Any) -> list[str]:
    return ["dots", "run", *map(str, extra), "--codex-bin", codex, "--state-dir", str(state)]
