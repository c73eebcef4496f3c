"""`markertools approvals ...` as a person uses it (docs/cli.md "Additions (turn 5)"): list
and show requests (text and JSON), approve or deny one exactly once - an unknown,
answered or expired id, a task no longer running or a deny rule is one stderr line and
exit 2, never a traceback - `--remember` adding the allow rule of a plain command, and
the project's rules (add, list, rm)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from support.cli import cli, one_line_failure

from markertools import ApprovalRequest, ApprovalRule, Task, TaskChange
from markertools.domain.model import Project
from markertools_adapters.sqlite import SqliteStore
from markertools_adapters.world import World


def _db(tmp_path: Path) -> tuple[str, float]:
    path = tmp_path / "a.db"
    now = time.time()
    with SqliteStore(path) as store:
        store.load_world(
            World(
                now=now,
                projects=(Project("p1", "shop"), Project("p2", "other")),
                tasks=(
                    Task("t1", "p1", status="running", created_by="u1", worktree="/w/h1/t1"),
                    Task("t2", "p1", status="running", created_by="u1", parent_task_id="t1"),
                    Task("t9", "p2", status="running", created_by="u1"),
                ),
            )
        )
        for rid, task, argv, at in (
            ("apr-1", "t1", ("uv", "run", "pytest", "-x"), now - 30),
            ("apr-2", "t2", ("bash", "-lc", "make test && make lint"), now - 20),
            ("apr-9", "t9", ("ls",), now - 10),
        ):
            store.insert_approval(
                ApprovalRequest(
                    rid,
                    task,
                    "?",
                    "command",
                    argv,
                    "/w/h1/" + task,
                    reason="to check",
                    asked_at=at,
                    expires_at=at + 900,
                )
            )
        store.insert_approval(
            ApprovalRequest(
                "apr-old",
                "t1",
                "?",
                "file_change",
                None,
                "/w/h1/t1",
                ("/w/h1/t1/a.py",),
                "+1 -1",
                asked_at=now - 2000,
                expires_at=now - 1100,
            )
        )
    return str(path), now


def _json(done: object) -> object:
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    return json.loads(done.stdout)  # type: ignore[attr-defined]


@pytest.mark.rule("APR-3", "APR-4")
def test_list_and_show_the_requests(tmp_path: Path) -> None:
    db, now = _db(tmp_path)
    listed = _json(cli("approvals", "list", "--db", db, "--json"))
    assert [a["id"] for a in listed["approvals"]] == ["apr-old", "apr-1", "apr-2", "apr-9"]  # type: ignore[index]
    first = listed["approvals"][1]  # type: ignore[index]
    assert first == {
        "id": "apr-1", "task_id": "t1", "project_id": "p1", "kind": "command",
        "command": ["uv", "run", "pytest", "-x"], "cwd": "/w/h1/t1", "paths": [],
        "diff_summary": None, "reason": "to check", "asked_at": now - 30,
        "expires_at": now + 870, "status": "pending", "answered_by": None,
        "answer_reason": None, "answered_at": None,
    }  # fmt: skip
    only_p2 = _json(cli("approvals", "list", "--db", db, "--project", "p2", "--json"))
    assert [a["id"] for a in only_p2["approvals"]] == ["apr-9"]  # type: ignore[index]
    text = cli("approvals", "list", "--db", db, "--project", "p1")
    lines = text.stdout.splitlines()
    assert lines[1].startswith(
        "apr-1  task t1  command  uv run pytest -x  (in /w/h1/t1)  [pending, expires in "
    )
    assert lines[2].startswith(
        "apr-2  task t2  command  bash -lc 'make test && make lint'  (in /w/h1/t2)"
    )
    shown = cli("approvals", "show", "apr-1", "--db", db)
    assert shown.returncode == 0
    assert shown.stdout.splitlines()[:3] == [
        "apr-1: command request of task t1 (project p1), pending",
        "  asks for: uv run pytest -x  (in /w/h1/t1)",
        "  reason: to check",
    ]
    assert _json(cli("approvals", "show", "apr-1", "--db", db, "--json")) == first
    one_line_failure(
        cli("approvals", "show", "apr-404", "--db", db), "approval request apr-404 does not exist"
    )
    one_line_failure(cli("approvals", "list", "--db", str(tmp_path / "nope.db")), "cannot open")


@pytest.mark.rule("APR-3")
def test_a_request_is_answered_once_and_every_refusal_names_why(tmp_path: Path) -> None:
    db, _ = _db(tmp_path)
    done = cli("approvals", "approve", "apr-1", "--db", db, "--by", "ana", "--reason", "tests only")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "approved apr-1 (task t1: uv run pytest -x  (in /w/h1/t1))\n"
    answered = _json(cli("approvals", "show", "apr-1", "--db", db, "--json"))
    assert (answered["status"], answered["answered_by"], answered["answer_reason"]) == (  # type: ignore[index]
        "approved",
        "person:ana",
        "tests only",
    )
    one_line_failure(
        cli("approvals", "deny", "apr-1", "--db", db),
        "approval request apr-1 was answered already (approved, by person:ana); the first "
        "answer stands",
    )
    one_line_failure(
        cli("approvals", "approve", "apr-nope", "--db", db),
        "approval request apr-nope does not exist",
    )
    late = one_line_failure(
        cli("approvals", "approve", "apr-old", "--db", db), "approval request apr-old expired "
    )
    assert late.endswith("s ago; it can no longer be answered")
    with SqliteStore(Path(db)) as store:
        store.transition_task("t2", "running", TaskChange(status="interrupted"))
    one_line_failure(
        cli("approvals", "deny", "apr-2", "--db", db, "--reason", "no"),
        "the task t2 of approval request apr-2 is 'interrupted', no longer running; the "
        "request can no longer be answered",
    )
    denied = cli("approvals", "deny", "apr-9", "--db", db, "--reason", "not now", "--by", "bo")
    assert denied.stdout == "denied apr-9 (task t9: ls  (in /w/h1/t9))\n"
    assert len(_json(cli("approvals", "list", "--db", db, "--all", "--json"))["approvals"]) == 4  # type: ignore[index]
    still = cli("approvals", "list", "--db", db).stdout.splitlines()  # never answered
    assert [line.split()[0] for line in still] == ["apr-old", "apr-2"]
    assert still[0].endswith("[pending, past its expiry by 1100 s]") or "past its expiry by 110" in still[0]
    assert cli("approvals", "list", "--db", db, "--project", "p2").stdout == "no pending approval requests\n"


@pytest.mark.rule("APR-2", "APR-3")
def test_remember_adds_the_allow_rule_and_a_deny_rule_is_final(tmp_path: Path) -> None:
    db, _ = _db(tmp_path)
    refused = cli("approvals", "approve", "apr-2", "--db", db, "--remember")
    one_line_failure(
        refused,
        "--remember: approval request apr-2 is not a plain command (a file change, a "
        "permission, or shell syntax such as ; && | $( ) > <), so no allow rule could match "
        "it; nothing was answered",
    )
    done = cli("approvals", "approve", "apr-1", "--db", db, "--remember", "--by", "ana")
    assert done.returncode == 0, done.stderr
    second = done.stdout.splitlines()[1]
    assert second.startswith("added rule r-") and second.endswith(
        ' (allow commands starting with "uv run pytest -x") at position 1'
    )
    rules = _json(cli("approvals", "rules", "list", "--db", db, "--project", "p1", "--json"))[
        "rules"
    ]  # type: ignore[index]
    assert [(r["action"], r["prefix"], r["created_by"], r["position"]) for r in rules] == [
        ("allow", ["uv", "run", "pytest", "-x"], "ana", 1)
    ]
    added = cli(
        "approvals",
        "rules",
        "add",
        "--db",
        db,
        "--project",
        "p1",
        "--deny",
        "--prefix",
        "make lint",
    )
    assert added.returncode == 0, added.stderr
    rid = added.stdout.split()[2]
    assert (
        added.stdout
        == f'added rule {rid} (deny commands starting with "make lint") at position 2\n'
    )
    one_line_failure(
        cli("approvals", "approve", "apr-2", "--db", db),
        f'approval request apr-2 is covered by rule {rid} (deny commands starting with "make '
        'lint"); a deny rule is final, so the request cannot be approved',
    )
    assert cli("approvals", "deny", "apr-2", "--db", db).returncode == 0


@pytest.mark.rule("APR-2")
def test_rules_add_list_rm_and_their_usage_errors(tmp_path: Path) -> None:
    db, _ = _db(tmp_path)
    base = ("approvals", "rules")
    assert (
        cli(*base, "list", "--db", db, "--project", "p1").stdout
        == "no approval rules for project p1\n"
    )
    for args in (
        ("--allow", "--path", "src/**"),
        ("--deny", "--kind", "permission"),
        ("--allow", "--prefix", "uv run 'py test'"),
    ):
        assert cli(*base, "add", "--db", db, "--project", "p1", *args).returncode == 0
    listed = cli(*base, "list", "--db", db, "--project", "p1").stdout.splitlines()
    assert [line.split(" (", 1)[1] for line in listed] == [
        'allow file changes matching "src/**" in the task\'s directory)',
        "deny every permission request)",
        "allow commands starting with \"uv run 'py test'\")",
    ]
    assert [line.split(".")[0] for line in listed] == ["1", "2", "3"]
    first = listed[0].split()[2]
    assert cli(*base, "rm", first, "--db", db).stdout == f"removed rule {first}\n"
    one_line_failure(cli(*base, "rm", first, "--db", db), f"no approval rule {first}")
    for args, needle in (
        (("--allow", "--deny", "--kind", "command"), "give exactly one of --allow and --deny"),
        (("--allow",), "give --prefix ARGV, --path GLOB or --kind KIND"),
        (("--allow", "--prefix", "ls", "--path", "x"), "give --prefix or --path, not both"),
        (("--allow", "--prefix", "ls ';'"), "rule prefix: ';' holds shell syntax or is blank"),
        (("--allow", "--prefix", "ls 'x"), '--prefix "ls \'x": No closing quotation'),
        (("--allow", "--path", "../x"), "rule path: a path glob has no empty, . or .. segment"),
        (
            ("--allow", "--kind", "network"),
            "rule kind must be one of command, file_change, permission; got 'network'",
        ),
        (
            ("--deny", "--prefix", "ls", "--kind", "file_change"),
            "rule kind: an argv prefix matches commands, not file_change",
        ),
    ):
        one_line_failure(cli(*base, "add", "--db", db, "--project", "p1", *args), needle)
    one_line_failure(
        cli(*base, "add", "--db", db, "--project", "p404", "--allow", "--kind", "command"),
        "--project p404: no such project in this database",
    )
    with SqliteStore(Path(db)) as store:
        assert [r.id for r in store.approval_rules("p1")] == [
            line.split()[2] for line in listed[1:]
        ]
        assert isinstance(store.approval_rules("p1")[0], ApprovalRule)
