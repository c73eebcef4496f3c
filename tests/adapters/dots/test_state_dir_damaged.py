"""Issue 26, item 1: one damaged file in the state directory and nothing started. Each
attack is a real file-system state made by the test - a record truncated to `{`, a
record with an unknown status, a damaged line in the middle of a log, `run-pw.json` a
link to /etc/passwd, a run's log a link to a file outside the directory, a directory and
a FIFO named like runs, a link at `host.lock` - then the supervisor starts on it:
`Supervisor.open()`, `markertools dots serve` over stdio with the MCP SDK client, and
`markertools dots status` before and after. What can be loaded loads; what cannot is
moved to `<state>/quarantine/` (never opened, never deleted), reported by `dots status`
(text and JSON) and, where the record still names its conversation, in that
conversation's `dots_status`. A read-only or full directory is one line and exit 2."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from support.codex import OfflineCodex
from support.dots import plan, role, workdir
from support.statedir import fill, immutable, read_only, tmpfs
from test_mcp_support import LEGACY, Answers, call, ok

from markertools.plans import Pause, StartRun, new_run, validate_proposal
from markertools_adapters import planstore
from markertools_adapters.dots import DotsError, Supervisor
from markertools_adapters.planstore import RunJournal

MARKERTOOLS = str(Path(sys.executable).parent / "markertools")
OWNER = "chat-7"
HERE = {"PYTHONPATH": os.pathsep.join(sys.path)}  # the child runs this checkout's code


def make_run(root: Path, tmp: Path, run_id: str, owner: str = OWNER) -> None:
    """A real run in `root` (record and log as the supervisor writes them), started and
    paused, so a supervisor that loads it launches nothing."""
    check = validate_proposal(plan(role("reader", workdir(tmp, "work"))))
    assert check.proposal is not None
    with planstore.host(root) as (store, lock):
        journal = RunJournal.create(store, lock, new_run(run_id, check.proposal, 1.0, owner=owner))
        journal.submit(StartRun("start"), 2.0)
        journal.submit(Pause("pause"), 3.0)
        journal.submit(Pause("pause-again"), 4.0)  # refused, logged: a third line
        store.close()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


Attack = Callable[[Path, Path], tuple[str, str, str | None]]


def truncated(root: Path, tmp: Path) -> tuple[str, str, str | None]:
    (root / "run-x.json").write_text("{")
    return (
        "run-x.json",
        "not a valid run record (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1))",
        None,
    )


def unknown_status(root: Path, tmp: Path) -> tuple[str, str, str | None]:
    make_run(root, tmp, "odd")
    record = root / "run-odd.json"
    body = json.loads(record.read_text())
    body["status"] = "exploded"
    record.write_text(json.dumps(body))
    return (
        "run-odd.json",
        "not a valid run record ($.status: exploded not in literal typing.Literal['ready', "
        "'running', 'paused', 'completed', 'cancelled'])",
        OWNER,
    )


def damaged_line(root: Path, tmp: Path) -> tuple[str, str, str | None]:
    make_run(root, tmp, "torn")
    log = root / "run-torn.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    assert len(lines) == 3
    lines[1] = '{"seq": 2, "at": 3.0, "outcome": "appl\n'
    log.write_text("".join(lines))
    return (
        "run-torn.jsonl",
        "line 2 is damaged (Unterminated string starting at: line 1 column 34 (char 33))",
        OWNER,
    )


def record_link(root: Path, tmp: Path) -> tuple[str, str, str | None]:
    (root / "run-pw.json").symlink_to("/etc/passwd")
    return "run-pw.json", "a symbolic link to /etc/passwd, never followed", None


def log_link(root: Path, tmp: Path) -> tuple[str, str, str | None]:
    make_run(root, tmp, "away")
    outside = tmp / "outside.jsonl"
    (root / "run-away.jsonl").rename(outside)
    (root / "run-away.jsonl").symlink_to(outside)
    return "run-away.jsonl", f"a symbolic link to {outside}, never followed", OWNER


def directory(root: Path, tmp: Path) -> tuple[str, str, str | None]:
    (root / "run-dir.json").mkdir()
    return "run-dir.json", "a directory, not a regular file (never opened)", None


def fifo(root: Path, tmp: Path) -> tuple[str, str, str | None]:
    os.mkfifo(root / "run-fifo.json")  # opened for reading it would wait for a writer forever
    return "run-fifo.json", "a FIFO, not a regular file (never opened)", None


def lock_link(root: Path, tmp: Path) -> tuple[str, str, str | None]:
    victim = tmp / "victim"
    victim.write_text("keep me\n")
    (root / "host.lock").symlink_to(victim)
    return "host.lock", f"a symbolic link to {victim}, never followed", None


ATTACKS: dict[str, Attack] = {
    "truncated": truncated,
    "unknown-status": unknown_status,
    "damaged-line": damaged_line,
    "record-link": record_link,
    "log-link": log_link,
    "directory": directory,
    "fifo": fifo,
    "lock-link": lock_link,
}


def outside_files(tmp: Path) -> dict[str, str]:
    found = {"/etc/passwd": sha(Path("/etc/passwd"))}
    for name in ("outside.jsonl", "victim"):
        if (tmp / name).exists():
            found[name] = sha(tmp / name)
    return found


@pytest.mark.rule("DOT-11", "DOT-2")
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_supervisor_open_sets_a_damaged_run_aside_and_loads_the_rest(
    tmp_path: Path, attack: str
) -> None:
    root = tmp_path / "state"
    root.mkdir()
    make_run(root, tmp_path, "good")
    file, reason, owner = ATTACKS[attack](root, tmp_path)
    kind = stat.S_IFMT(os.lstat(root / file).st_mode)
    outside = outside_files(tmp_path)

    async def scenario() -> tuple[list[str], list[Any], list[Any], list[Any]]:
        sup = Supervisor(root)
        await sup.open()
        try:
            views = sup.status(owner=OWNER)
            return (
                sorted(sup.runs),
                [v.state for v in views],
                sup.quarantined,
                sup.quarantined_of("someone-else"),
            )
        finally:
            await sup.close()

    runs, states, aside, others = asyncio.run(scenario())
    assert runs == ["good"] and states == ["paused"]
    (entry,) = aside
    assert (entry.file, entry.reason, entry.owner) == (file, reason, owner)
    assert others == []
    moved = Path(entry.moved_to)
    assert moved.parent == root / "quarantine" and moved.name.endswith(f"-{file}")
    assert not os.path.lexists(root / file)
    assert stat.S_IFMT(os.lstat(moved / file).st_mode) == kind  # moved as it was
    note = json.loads((moved / "reason.json").read_text())
    assert note["reason"] == entry.reason and note["file"] == file
    assert outside_files(tmp_path) == outside


@pytest.mark.rule("DOT-11", "DOT-13", "DOT-15", "DOT-2")
def test_dots_serve_starts_on_a_damaged_directory_and_reports_what_it_set_aside(
    offline_codex: OfflineCodex, tmp_path: Path
) -> None:
    """Every attack at once, beside one good run: the server answers the handshake,
    the good run is there, the conversation a damaged record named sees it as
    quarantined, another conversation sees nothing of it; `dots status` reports the
    damaged files before (never moving them) and the quarantine after."""
    root = tmp_path / "state"
    root.mkdir()
    make_run(root, tmp_path, "good")
    expected: dict[str, tuple[str, str | None]] = {}
    for attack in ATTACKS.values():
        file, reason, owner = attack(root, tmp_path)
        expected[file] = (reason, owner)
    outside = outside_files(tmp_path)
    env = {**offline_codex.env, **HERE}

    def status(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [MARKERTOOLS, "dots", "status", "--state-dir", str(root), *extra],
            capture_output=True, text=True, timeout=60, env=env,
        )

    before = status("--json")
    assert before.returncode == 0, before.stderr
    damaged = {d["file"]: d["reason"] for d in json.loads(before.stdout)["damaged"]}
    run_files = {f: r for f, (r, _) in expected.items() if f != "host.lock"}
    assert damaged == run_files  # reported, and left where they are
    assert all(os.path.lexists(root / f) for f in expected)

    errors = tmp_path / "serve.stderr"

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], str]:
        args = ["dots", "serve", "--state-dir", str(root), "--codex-bin", offline_codex.binary]
        params = StdioServerParameters(command=MARKERTOOLS, args=args, env=env)
        with open(errors, "w") as errlog:
            async with Client(
                stdio_client(params, errlog=errlog), mode=LEGACY, elicitation_callback=Answers(),
                read_timeout_seconds=60,
            ) as c:
                mine = await call(c, "dots_status", {}, OWNER)
                theirs = ok(await call(c, "dots_status", {}, "chat-8"))
                text = mine.content[0].text  # type: ignore[union-attr]
                return ok(mine), theirs, text

    mine, theirs, text = asyncio.run(scenario())
    assert [r["runId"] for r in mine["runs"]] == ["good"]
    seen = {q["file"]: (q["reason"], q["runId"]) for q in mine["quarantined"]}
    assert seen == {
        "run-odd.json": (expected["run-odd.json"][0], "odd"),
        "run-torn.jsonl": (expected["run-torn.jsonl"][0], "torn"),
        "run-away.jsonl": (expected["run-away.jsonl"][0], "away"),
    }
    assert f"set aside (quarantine): run-torn.jsonl: {expected['run-torn.jsonl'][0]}" in text
    assert theirs == {"runs": [], "quarantined": [], "pendingDecisions": []}
    said = errors.read_text()
    assert "Traceback" not in said
    for file, (reason, _) in expected.items():
        assert f"quarantined {file}: {reason} (moved to {root}/quarantine/" in said, said

    after = status()
    assert after.returncode == 0, after.stderr
    lines = after.stdout.splitlines()
    assert lines[0] == "run good: paused (0/12 turns)"
    aside = [line for line in lines if line.startswith("quarantined ")]
    assert len(aside) == len(expected)
    torn = next(line for line in aside if line.startswith("quarantined run-torn.jsonl at "))
    assert f": {expected['run-torn.jsonl'][0]} (in {root}/quarantine/" in torn
    listed = json.loads(status("--json").stdout)
    assert listed["damaged"] == []
    assert {q["file"] for q in listed["quarantined"]} == set(expected)
    assert {q["file"]: q["owner"] for q in listed["quarantined"]} == {
        f: owner for f, (_, owner) in expected.items()
    }
    assert outside_files(tmp_path) == outside
    one = status("torn")
    assert one.returncode == 2
    assert one.stderr.startswith(f"markertools: no run 'torn' in {root}: it was set aside at ")
    assert "(line 2 is damaged (" in one.stderr and "Traceback" not in one.stderr


def serve_refused(root: Path, tmp: Path) -> tuple[int, str, str, str]:
    """`dots serve` on `root`: once through the SDK client (which sees the connection
    close before the handshake), once as a plain process for its exit code."""
    errors = tmp / "serve.stderr"
    params = StdioServerParameters(
        command=MARKERTOOLS, args=["dots", "serve", "--state-dir", str(root)],
        env={"PATH": os.environ.get("PATH", ""), **HERE},
    )

    async def handshake() -> str:
        with open(errors, "w") as errlog:
            try:
                async with Client(stdio_client(params, errlog=errlog), mode=LEGACY) as c:
                    await c.list_tools()
            except BaseException as exc:  # the SDK's connection-closed error (a group)
                return type(exc).__name__
        return "connected"

    outcome = asyncio.run(handshake())
    done = subprocess.run(
        [MARKERTOOLS, "dots", "serve", "--state-dir", str(root)],
        input="", capture_output=True, text=True, timeout=60, env={**os.environ, **HERE},
    )
    return done.returncode, done.stdout, done.stderr, f"{outcome}|{errors.read_text()}"


@pytest.mark.rule("DOT-1")
def test_a_read_only_state_directory_is_one_line_at_start(tmp_path: Path) -> None:
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    make_run(root, tmp_path, "kept")
    expected = (
        f"markertools: {root}/host.lock: the host lock cannot be taken (Read-only file "
        f"system); the supervisor did not start (dots status --state-dir {root} reads the "
        "runs without writing)\n"
    )
    with read_only(root):
        code, out, err, client = serve_refused(root, tmp_path)

        async def opened() -> DotsError:
            with pytest.raises(DotsError) as refused:
                await Supervisor(root).open()
            return refused.value

        refused = asyncio.run(opened())
        shown = subprocess.run(
            [MARKERTOOLS, "dots", "status", "--state-dir", str(root)],
            capture_output=True, text=True, timeout=60, env={**os.environ, **HERE},
        )
    assert (code, out, err) == (2, "", expected)
    outcome, said = client.split("|", 1)
    assert outcome != "connected" and said == expected
    assert refused.field == "stateDir" and f"markertools: {refused.message}\n" == expected
    assert shown.returncode == 0 and shown.stdout.startswith("run kept: paused")


@pytest.mark.rule("DOT-1")
def test_a_directory_that_takes_no_new_file_is_one_line_at_start(tmp_path: Path) -> None:
    """The lock file exists and can be written, but the directory takes no new file
    (immutable, which stops root too): the start's write check says so."""
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    make_run(root, tmp_path, "kept")
    (root / "host.lock").touch(mode=0o600)
    with immutable(root):
        code, out, err, _ = serve_refused(root, tmp_path)
    assert (code, out) == (2, "")
    assert err == (
        f"markertools: {root}: the state directory is not writable (Operation not permitted); "
        f"the supervisor did not start (dots status --state-dir {root} reads the runs without "
        "writing)\n"
    )


@pytest.mark.rule("DOT-1")
def test_a_full_state_directory_is_one_line_at_start(tmp_path: Path) -> None:
    root = tmp_path / "state"
    with tmpfs(root, "64k"):
        fill(root)
        code, out, err, client = serve_refused(root, tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith("markertools: ") and err.count("\n") == 1
    assert "(No space left on device); the supervisor did not start" in err
    assert "Traceback" not in client
