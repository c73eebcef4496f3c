"""Every `dots` command that takes `--state-dir`, on a machine where the state directory
does not exist yet (issue 24 item 2: `dots probe` and `dots threads` crashed there with
"internal error: FileNotFoundError"). `dots run` (and `dots serve`) create it (mode
0700, one shared helper); the inspection commands - `dots status`, `dots probe`,
`dots threads` - create nothing (issue 36 item 9: probe and threads used to create it,
status did not); status reports no runs, threads says it found none and where it
looked. Both with a fresh HOME (the default per-user path) and with an explicit
`--state-dir` that does not exist."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.codex import OfflineCodex


def fresh_env(codex: OfflineCodex, home: Path) -> dict[str, str]:
    env = {**os.environ, **codex.env, "HOME": str(home)}
    env.pop("XDG_STATE_HOME", None)
    return env


def default_dir(home: Path) -> Path:
    return home / ".local" / "state" / "markertools" / "dots"


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "markertools", *args], capture_output=True, text=True, timeout=120, env=env
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.rule("DOT-1", "DOT-13")
@pytest.mark.parametrize("where", ["default", "explicit"])
def test_probe_and_threads_answer_on_first_use_and_create_nothing(
    offline_codex: OfflineCodex, tmp_path: Path, where: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = fresh_env(offline_codex, home)
    root = default_dir(home) if where == "default" else tmp_path / "new" / "state"
    opts = ["--codex-bin", offline_codex.binary]
    if where == "explicit":
        opts += ["--state-dir", str(root)]
    assert not root.exists()
    probe = cli(env, "dots", "probe", *opts)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith("model: fake-model (effort ")
    assert probe.stderr == ""
    threads = cli(env, "dots", "threads", "--json", *opts)
    assert threads.returncode == 0, threads.stderr
    assert json.loads(threads.stdout)["threads"] == []
    text = cli(env, "dots", "threads", "--cwd", "/srv/x", *opts)
    assert (text.returncode, text.stderr) == (0, "")
    assert text.stdout == f"no threads in the Codex home {env['CODEX_HOME']}, --cwd '/srv/x'\n"
    assert not root.exists() and not root.parent.exists()


@pytest.mark.rule("DOT-1")
def test_status_on_a_missing_directory_reports_no_runs_and_creates_nothing(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = fresh_env(offline_codex, home)
    root = default_dir(home)
    text = cli(env, "dots", "status")
    assert (text.returncode, text.stdout, text.stderr) == (
        0, f"no runs in {root} (the directory does not exist yet)\n", ""
    )
    as_json = cli(env, "dots", "status", "--json", "--state-dir", str(tmp_path / "nowhere"))
    assert as_json.returncode == 0
    assert json.loads(as_json.stdout) == {"runs": [], "quarantined": [], "damaged": []}
    one = cli(env, "dots", "status", "abc123", "--state-dir", str(tmp_path / "nowhere"))
    assert (one.returncode, one.stderr) == (
        2, f"markertools: no run 'abc123' in {tmp_path / 'nowhere'} (the directory does not exist)\n"
    )
    bad = cli(env, "dots", "status", "../etc", "--state-dir", str(tmp_path / "nowhere"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert not root.exists() and not (tmp_path / "nowhere").exists()


@pytest.mark.rule("DOT-1")
def test_status_refuses_a_malformed_run_id_in_one_line(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    done = cli(dict(os.environ), "dots", "status", "../etc", "--state-dir", str(state))
    assert (done.returncode, done.stderr) == (
        2, "markertools: invalid run id '../etc': use letters, digits, '.', '_' or '-'\n"
    )


@pytest.mark.rule("DOT-1")
def test_run_creates_the_state_directory_like_the_others(offline_codex: OfflineCodex, tmp_path: Path) -> None:
    """`dots run` on a missing directory (declined at once: nothing is started, but the
    supervisor opened the directory, as `dots serve` does)."""
    home = tmp_path / "home"
    home.mkdir()
    env = fresh_env(offline_codex, home)
    plan = Path(__file__).resolve().parents[2] / "examples" / "plans" / "reader-fixer.json"
    done = subprocess.run(
        [sys.executable, "-m", "markertools", "dots", "run", str(plan), "--codex-bin", offline_codex.binary],
        input="n\n", capture_output=True, text=True, timeout=120, env=env,
    )
    assert done.returncode == 1
    assert "the user did not confirm the plan (decline); nothing was started" in done.stderr
    root = default_dir(home)
    assert root.is_dir() and mode(root) == 0o700
    assert list(root.glob("run-*")) == []
