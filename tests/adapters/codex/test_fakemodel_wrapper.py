"""The fake-model wrapper of the README's orchestration demo (`python -m
markertools_adapters.codex.fakemodel [--home DIR] -- COMMAND ...`), as a person runs it
at a terminal (issue 24 item 4): Ctrl-C reaches the wrapped command, which handles it;
the wrapper waits for it, exits with its code and never prints a traceback. Only the
leading `--` separator is removed: a `--` inside the command is the command's own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.terminal import WRAPPER, Terminal

# The wrapped command: says whether it was started with Ctrl-C handled (not ignored),
# then waits; Ctrl-C makes it say so and exit 7.
CHILD = """
import signal, sys, time
print("child starts; SIGINT handled by default:", signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
try:
    time.sleep(600)
except KeyboardInterrupt:
    print("child got Ctrl-C and exits 7", flush=True)
    sys.exit(7)
"""


def test_ctrl_c_reaches_the_command_and_the_wrapper_exits_with_its_code(tmp_path: Path) -> None:
    term = Terminal([*WRAPPER, "--home", str(tmp_path / "home"), "--", sys.executable, "-c", CHILD])
    term.wait_for("child starts; SIGINT handled by default: True")
    term.ctrl_c()
    code = term.exit_code()
    screen = term.screen()
    assert code == 7, screen
    assert "child got Ctrl-C and exits 7" in screen
    assert "Traceback" not in screen and "KeyboardInterrupt" not in screen


def test_a_command_ended_by_ctrl_c_gives_128_plus_the_signal(tmp_path: Path) -> None:
    child = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); print('ready', flush=True); time.sleep(600)"
    term = Terminal([*WRAPPER, "--home", str(tmp_path / "home"), "--", sys.executable, "-c", child])
    term.wait_for("ready")
    term.ctrl_c()
    code = term.exit_code()
    screen = term.screen()
    assert code == 130, screen
    assert "Traceback" not in screen


def test_only_the_leading_separator_is_removed(tmp_path: Path) -> None:
    show = "import sys; print(sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, *WRAPPER, "--home", str(tmp_path / "home"), "--",
         sys.executable, "-c", show, "a", "--", "b", "--"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['a', '--', 'b', '--']"


def test_a_command_that_cannot_run_is_one_line(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-program")
    done = subprocess.run(
        [sys.executable, *WRAPPER, "--home", str(tmp_path / "home"), "--", missing],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 127
    assert done.stderr == f"fakemodel: cannot run {missing}: No such file or directory\n"
