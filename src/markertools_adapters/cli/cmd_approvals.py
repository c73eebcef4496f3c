# Owns: `markertools approvals list|show|approve|deny` and `markertools approvals rules
# add|list|rm` (docs/cli.md "Additions (turn 5)", docs/rules.md APR-2, APR-3) on an
# existing database. Thin: options -> the approvals port of the store and the pure gate
# (`markertools.person_answer_refusal`, `deny_covering`, `remember_prefix`) -> output.
#
# Must never: create a database (every command opens with must_exist); approve a request
# that is answered, expired, whose task left `running`, or that a deny rule covers; add a
# rule for an answer that did not go through.
#
# Invariants:
#   Rule 1: an answer is the store's compare-and-set (APR-3); a refusal - unknown id,
#           answered already, expired, task not running, a deny rule, a --remember with no
#           plain command - is one stderr line naming which, exit 2, nothing changed.
#   Rule 2: `list --json` prints {"approvals": [REQUEST...]}, `show --json` one REQUEST,
#           with the keys of `request_json`; `rules list --json` prints {"rules": [RULE...]}
#           in the order the rules are tried.
#   Rule 3: `--remember` adds, after the answer went through, the allow rule of the
#           command's plain words (`remember_prefix`) at the end of the project's rules.
from __future__ import annotations

import getpass
import shlex
import sys
import time
from contextlib import AbstractContextManager
from typing import Annotated, Any

import typer

from markertools import (
    ApprovalRequest,
    ApprovalRule,
    deny_covering,
    describe_request,
    person_answer,
    person_answer_refusal,
    remember_prefix,
    rule_text,
    shanghai_iso,
)
from markertools_adapters.cli._app import UsageFailure, WordsTyper, app, fail
from markertools_adapters.cli._io import emit_json
from markertools_adapters.clock import SystemRandom

approvals_app = WordsTyper(
    help="Approval requests of tasks' agents: list and show them, approve or deny one, and "
    "manage a project's approval rules (docs/rules.md APR).",
    no_args_is_help=True,
)
rules_app = WordsTyper(
    help="A project's approval rules: tried in order, the first match answers (APR-2).",
    no_args_is_help=True,
)
approvals_app.add_typer(rules_app, name="rules")
app.add_typer(approvals_app, name="approvals")

DbOption = Annotated[
    str, typer.Option("--db", help="The database (a SQLite file or a postgresql:// URL).")
]
IdArgument = Annotated[str, typer.Argument(help="The approval request's id (apr-...).")]
ByOption = Annotated[
    str | None,
    typer.Option("--by", help="Who answers, as the record names them (default: your user name)."),
]


def _opened(db: str) -> AbstractContextManager[Any]:
    from markertools_adapters.cli._io import opened_store

    return opened_store(db)


def request_json(r: ApprovalRequest) -> dict[str, Any]:
    """Rule 2: one request as `approvals list --json` / `show --json` print it."""
    return {
        "id": r.id,
        "task_id": r.task_id,
        "project_id": r.project_id,
        "kind": r.kind,
        "command": None if r.command is None else list(r.command),
        "cwd": r.cwd,
        "paths": list(r.paths),
        "diff_summary": r.diff_summary,
        "reason": r.reason,
        "asked_at": r.asked_at,
        "expires_at": r.expires_at,
        "status": r.status,
        "answered_by": r.answered_by,
        "answer_reason": r.answer_reason,
        "answered_at": r.answered_at,
    }


def rule_json(r: ApprovalRule) -> dict[str, Any]:
    """Rule 2: one rule as `approvals rules list --json` prints it."""
    return {
        "id": r.id,
        "project_id": r.project_id,
        "position": r.position,
        "action": r.action,
        "kind": r.kind,
        "prefix": None if r.prefix is None else list(r.prefix),
        "path": r.path_glob,
        "created_at": r.created_at,
        "created_by": r.created_by,
    }


def _line(r: ApprovalRequest, now: float) -> str:
    if r.status == "pending" and r.expires_at <= now:
        state = f"pending, past its expiry by {round(now - r.expires_at)} s"
    elif r.status == "pending":
        state = f"pending, expires in {round(r.expires_at - now)} s"
    else:
        state = f"{r.status} by {r.answered_by}"
    return f"{r.id}  task {r.task_id}  {r.kind}  {describe_request(r)}  [{state}]"


def _who(by: str | None) -> str:
    if by is not None:
        if not by.strip():
            raise UsageFailure("--by: give a name")
        return by.strip()
    try:
        return getpass.getuser() or "person"
    except Exception:  # no user name in this environment
        return "person"


@approvals_app.command("list")
def approvals_list(
    db: DbOption,
    project: Annotated[
        str | None, typer.Option("--project", help="Only this project's requests.")
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="Also the approved, denied and expired requests.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The pending approval requests (with --all, every request), oldest first."""
    try:
        with _opened(db) as store:
            rows = store.list_approvals(project, statuses=None if every else ("pending",))
    except UsageFailure as exc:
        fail(str(exc))
    if as_json:
        emit_json({"approvals": [request_json(r) for r in rows]})
        return
    if not rows:
        sys.stdout.write("no approval requests\n" if every else "no pending approval requests\n")
    now = time.time()
    for r in rows:
        sys.stdout.write(_line(r, now) + "\n")


@approvals_app.command("show")
def approvals_show(
    approval_id: IdArgument,
    db: DbOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """One request: its task, what it asks for, the agent's reason, when it was asked and
    expires, and its answer."""
    try:
        with _opened(db) as store:
            r = store.get_approval(approval_id)
    except UsageFailure as exc:
        fail(str(exc))
    if r is None:
        fail(f"approval request {approval_id} does not exist")
    if as_json:
        emit_json(request_json(r))
        return
    lines = [
        f"{r.id}: {r.kind} request of task {r.task_id} (project {r.project_id}), {r.status}",
        f"  asks for: {describe_request(r, paths=50)}",
        f"  reason: {r.reason if r.reason else '-'}",
        f"  asked at {shanghai_iso(r.asked_at)}, expires at {shanghai_iso(r.expires_at)}",
    ]
    if r.answered_by is not None:
        when = shanghai_iso(r.answered_at) if r.answered_at is not None else "?"
        lines.append(f"  answered: {r.status} by {r.answered_by} at {when}")
        if r.answer_reason:
            lines.append(f"  answer reason: {r.answer_reason}")
    sys.stdout.write("\n".join(" ".join(line.split("\n")) for line in lines) + "\n")


def _answer(
    db: str, approval_id: str, decision: str, by: str | None, reason: str | None, remember: bool
) -> None:
    """Rule 1 and Rule 3."""
    try:
        who = _who(by)
        with _opened(db) as store:
            request = store.get_approval(approval_id)
            task = store.get_task(request.task_id) if request is not None else None
            deny = None
            if request is not None and decision == "approve":
                root = (task.worktree if task is not None else None) or request.cwd
                deny = deny_covering(store.approval_rules(request.project_id), request, root)
            now = time.time()
            refused = person_answer_refusal(
                request, task, approval_id=approval_id, decision=decision, deny_rule=deny, now=now
            )
            if refused is not None:
                raise UsageFailure(refused.render("en"))
            assert request is not None
            prefix = remember_prefix(request) if remember else None
            if remember and prefix is None:
                raise UsageFailure(
                    f"--remember: approval request {request.id} is not a plain command (a "
                    "file change, a permission, or shell syntax such as ; && | $( ) > <), so no "
                    "allow rule could match it; nothing was answered"
                )
            status = "approved" if decision == "approve" else "denied"
            answered = store.answer_approval(
                request.id, status, answered_by=person_answer(who), reason=reason, now=now
            )
            if answered is None:  # another answer, the expiry or the task came first
                again = store.get_approval(request.id)
                current = store.get_task(request.task_id)
                why = person_answer_refusal(
                    again, current, approval_id=request.id, decision=decision, deny_rule=None,
                    now=time.time(),
                )  # fmt: skip
                raise UsageFailure(why.render("en") if why is not None else "changed meanwhile")
            added = None
            if prefix is not None:
                added = store.add_approval_rule(
                    ApprovalRule(
                        "r-" + SystemRandom().token_hex(4),
                        request.project_id,
                        "allow",
                        prefix=prefix,
                        created_at=now,
                        created_by=who,
                    )
                )
    except UsageFailure as exc:
        fail(str(exc))
    sys.stdout.write(
        f"{status} {answered.id} (task {answered.task_id}: {describe_request(answered)})\n"
    )
    if added is not None:
        sys.stdout.write(f"added {rule_text(added).render('en')} at position {added.position}\n")


ReasonOption = Annotated[
    str | None, typer.Option("--reason", help="Why, in a sentence: the task's agent is told.")
]


@approvals_app.command("approve")
def approvals_approve(
    approval_id: IdArgument,
    db: DbOption,
    remember: Annotated[
        bool,
        typer.Option(
            "--remember",
            help="Also add the allow rule of this command (its words, any further arguments).",
        ),
    ] = False,
    by: ByOption = None,
    reason: ReasonOption = None,
) -> None:
    """Approve a pending request once (APR-3): the first answer wins."""
    _answer(db, approval_id, "approve", by, reason, remember)


@approvals_app.command("deny")
def approvals_deny(
    approval_id: IdArgument,
    db: DbOption,
    reason: ReasonOption = None,
    by: ByOption = None,
) -> None:
    """Deny a pending request once (APR-3): the first answer wins."""
    _answer(db, approval_id, "deny", by, reason, False)


# ---- rules (APR-2) ----------------------------------------------------------------------


@rules_app.command("add")
def rules_add(
    db: DbOption,
    project: Annotated[str, typer.Option("--project", help="The project the rule is for.")],
    allow: Annotated[bool, typer.Option("--allow", help="Approve what the rule matches.")] = False,
    deny: Annotated[
        bool,
        typer.Option("--deny", help="Deny what the rule matches (final: no answer overrides it)."),
    ] = False,
    prefix: Annotated[
        str | None,
        typer.Option(
            "--prefix",
            help='An argv prefix, written as a shell would split it ("uv run pytest"): that '
            "command with any further arguments.",
        ),
    ] = None,
    path: Annotated[
        str | None,
        typer.Option(
            "--path",
            help="A path glob inside the task's directory (src/**, *.md) for file changes.",
        ),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            help="command, file_change or permission: alone, every request of that kind.",
        ),
    ] = None,
) -> None:
    """Add a rule at the end of the project's rules (tried in order; the first match answers)."""
    try:
        if allow == deny:
            raise UsageFailure("give exactly one of --allow and --deny")
        if prefix is not None and path is not None:
            raise UsageFailure("give --prefix or --path, not both")
        if prefix is None and path is None and kind is None:
            raise UsageFailure("give --prefix ARGV, --path GLOB or --kind KIND")
        words: tuple[str, ...] | None = None
        if prefix is not None:
            try:
                words = tuple(shlex.split(prefix))
            except ValueError as exc:
                raise UsageFailure(f"--prefix {prefix!r}: {exc}") from None
            if not words:
                raise UsageFailure("--prefix: give at least one word")
        rule = ApprovalRule(
            "r-" + SystemRandom().token_hex(4),
            project,
            "allow" if allow else "deny",
            kind=kind,
            prefix=words,
            path_glob=path,
            created_at=time.time(),
            created_by=_who(None),
        )
        with _opened(db) as store:
            if store.get_project(project) is None:
                raise UsageFailure(f"--project {project}: no such project in this database")
            try:
                added = store.add_approval_rule(rule)
            except ValueError as exc:
                raise UsageFailure(str(exc)) from None
    except UsageFailure as exc:
        fail(str(exc))
    sys.stdout.write(f"added {rule_text(added).render('en')} at position {added.position}\n")


@rules_app.command("list")
def rules_list(
    db: DbOption,
    project: Annotated[str, typer.Option("--project", help="The project whose rules to list.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The project's rules in the order they are tried."""
    try:
        with _opened(db) as store:
            rules = store.approval_rules(project)
    except UsageFailure as exc:
        fail(str(exc))
    if as_json:
        emit_json({"rules": [rule_json(r) for r in rules]})
        return
    if not rules:
        sys.stdout.write(f"no approval rules for project {project}\n")
    for r in rules:
        sys.stdout.write(f"{r.position}. {rule_text(r).render('en')}\n")


@rules_app.command("rm")
def rules_rm(
    rule_id: Annotated[str, typer.Argument(help="The rule's id (r-...).")],
    db: DbOption,
) -> None:
    """Remove a rule."""
    try:
        with _opened(db) as store:
            removed = store.remove_approval_rule(rule_id)
    except UsageFailure as exc:
        fail(str(exc))
    if not removed:
        fail(f"no approval rule {rule_id}")
    sys.stdout.write(f"removed rule {rule_id}\n")


__all__ = ["approvals_app", "request_json", "rule_json", "rules_app"]
