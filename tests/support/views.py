"""Inputs for the views (issue 30): runs written by the real plan store through the
pure core (`journal`: every event must be accepted, so a scripted run is a run the
supervisor could have written), the demo run the README's picture shows, a 200-turn
run, fleets of any size, and hostile inputs (names, replies and reasons that try to run
a script: each sets `window.__pwned` if it ever executes)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from markertools import Attempt, AuditRecord, CostRow, PermissionGrant, Project, Quota, Task
from markertools.plans import (
    Dispatch,
    Event,
    Finish,
    Halt,
    Launch,
    Pause,
    QuotaObserved,
    QuotaWindow,
    Refused,
    Resume,
    StartRun,
    TurnEnded,
    TurnStarted,
    new_run,
    validate_proposal,
)
from markertools.plans import Dispatch as _Dispatch  # noqa: F401  (re-exported for tests)
from markertools_adapters.planstore import RunJournal, host
from markertools_adapters.world import World

AT = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC
CANARY = "window.__pwned"
HOSTILE = (
    "<script>window.__pwned=1</script>",
    "</style><script>window.__pwned=2</script>",
    "javascript:window.__pwned=3",
    '" onmouseover="window.__pwned=4" x="',
    "' onclick='window.__pwned=5' y='",
    "</script><script>window.__pwned=6</script>",
    "<!--<script>window.__pwned=7</script>-->",
    "<img src=x onerror=window.__pwned=8>",
    "<svg onload=window.__pwned=9></svg>",
    "\u2028</title><a href=\"javascript:window.__pwned=10\">click</a>\u2029",
    "{{ 7*7 }}{% raw %}<b onmouseover=window.__pwned=11>x</b>",
)
MEGABYTE = 1_000_000


def role(name: str, cwd: str = "/work/project", **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": name,
        "backend": "codex",
        "cwd": cwd,
        "role": f"the {name}",
        "instruction": f"{name}: do your part",
        "sandbox": "read-only",
    }
    body.update(kw)
    return body


def plan(*workers: dict[str, Any], **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "goal": "fix the module",
        "plan": "reader finds the fault, fixer fixes it",
        "workers": list(workers),
        "quota": {"stopAtLeftPercent": 10, "bucket": "codex", "windowMinutes": 10080},
        "maxTurns": 12,
        "timeoutMs": 600_000,
        "allowedModels": [],
        "supervision": {"decisionTimeoutMs": 60_000, "maxDecisionRetries": 2, "maxTotalReminders": 8},
    }
    body.update(kw)
    return body


def journal(
    root: Path, raw: dict[str, Any], steps: Sequence[tuple[float, Event]], run_id: str | None = None
) -> str:
    """A run in the state directory `root`: `raw` confirmed, then every (seconds after
    AT, event) applied through the real journal. Every event must be accepted."""
    check = validate_proposal(raw)
    assert check.proposal is not None, check.issues
    run_id = run_id or uuid.uuid4().hex[:12]
    with host(root) as (store, lock):
        run = RunJournal.create(store, lock, new_run(run_id, check.proposal, AT, owner="terminal"))
        for offset, event in steps:
            step = run.submit(event, AT + offset, durable=False)  # one fsync at the end
            assert not isinstance(step.outcome, Refused), (event, step.outcome)
        run.sync(checkpoint=True)
        store.close()
    return run_id


class Ids:
    """Fresh event and decision ids."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str = "e") -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def demo_steps() -> list[tuple[float, Event]]:
    """Three roles over about twelve minutes: two turns of the reader (one dispatch
    between them), the docs role in parallel, the fixer's failed turn, a reminder, a
    dispatch, a pause on request during its second turn, a resume, and a third turn
    still running when the page is made."""
    e = Ids()
    return [
        (0, StartRun(e())),
        (2, Launch(e(), "reader")),
        (4, TurnStarted(e(), "reader", "thr-reader", "turn-r1")),
        (5, Launch(e(), "docs")),
        (7, TurnStarted(e(), "docs", "thr-docs", "turn-d1")),
        (95, TurnEnded(e(), "reader", "d1", "The fault is in parse.py line 3: an off-by-one in the\nrange end. Evidence: tests/test_parse.py::test_last_line fails.", "completed")),
        (118, Dispatch(e(), "reader", "d1", "Show the failing test output and the smallest fix.")),
        (120, Launch(e(), "reader")),
        (122, TurnStarted(e(), "reader", "thr-reader", "turn-r2")),
        (150, QuotaObserved(e(), (QuotaWindow(62.0, "codex", 10080), QuotaWindow(88.0, "codex", 300)))),
        (171, TurnEnded(e(), "docs", "d2", "Updated docs/parse.md: the range end is exclusive.", "completed")),
        (200, Finish(e(), "docs", "docs updated and reviewed", "d2")),
        (236, TurnEnded(e(), "reader", "d3", "FAILED test_last_line: expected 3 lines, got 2.\nFix: range(0, n + 1).", "completed")),
        (262, Finish(e(), "reader", "parse.py:3 off by one; fix: range(0, n + 1)", "d3")),
        (264, Launch(e(), "fixer")),
        (266, TurnStarted(e(), "fixer", "thr-fixer", "turn-f1")),
        (401, TurnEnded(e(), "fixer", "d4", "Changed parse.py, but two tests still fail.", "failed")),
        (465, Dispatch(e(), "fixer", "d4", "Fix only the off-by-one in parse.py line 3; run tests/test_parse.py.")),
        (467, Launch(e(), "fixer")),
        (469, TurnStarted(e(), "fixer", "thr-fixer", "turn-f2")),
        (480, QuotaObserved(e(), (QuotaWindow(41.0, "codex", 10080),))),
        (505, Pause(e())),
        (540, TurnEnded(e(), "fixer", "d5", "Stopped on request after editing parse.py.", "interrupted")),
        (610, Resume(e(), (("fixer", "d6"),))),
        (640, Dispatch(e(), "fixer", "d6", "Continue: run the tests and report.")),
        (642, Launch(e(), "fixer")),
        (644, TurnStarted(e(), "fixer", "thr-fixer", "turn-f3")),
    ]


def demo_plan() -> dict[str, Any]:
    return plan(
        role("reader", instruction="Find the fault in the parser and the smallest fix; end the turn when done."),
        role("fixer", dependsOn=["reader"], sandbox="workspace-write", instruction="Apply the fix the reader proposed, nothing else."),
        role("docs", instruction="Update docs/parse.md to match the parser's behaviour."),
        goal="fix the off-by-one in the parser, with docs",
        plan="reader locates the fault; fixer changes only parse.py once the reader's conclusion is accepted; docs updates the page meanwhile.",
    )


def demo_run(root: Path, run_id: str | None = None) -> str:
    """The README's run (in progress: the fixer's third turn is live)."""
    return journal(root, demo_plan(), demo_steps(), run_id)


def long_steps(turns: int = 200, roles: Sequence[str] = ("reader", "fixer", "verifier")) -> list[tuple[float, Event]]:
    """`turns` turns spread over the roles (independent roles, each turn dispatched after
    the previous one ended), a quota observation every 10 turns, all finished at the end."""
    e = Ids()
    steps: list[tuple[float, Event]] = [(0, StartRun(e()))]
    t = 1.0
    decision: dict[str, str] = {}
    for n in range(turns):
        name = roles[n % len(roles)]
        if name in decision:
            steps.append((t, Dispatch(e(), name, decision[name], f"{name}: turn {n}: carry on")))
            t += 1
        steps.append((t, Launch(e(), name)))
        steps.append((t + 1, TurnStarted(e(), name, f"thr-{name}", f"turn-{n}")))
        outcome = ("completed", "completed", "completed", "failed", "interrupted")[n % 5]
        decision[name] = e("d")
        steps.append((t + 20 + n % 7, TurnEnded(e(), name, decision[name], f"{name} reply {n}\n" + "details " * 20, outcome)))
        t += 24 + n % 7
        if n % 10 == 9:
            steps.append((t, QuotaObserved(e(), (QuotaWindow(100.0 - n / 4, "codex", 10080),))))
    for name in roles:
        steps.append((t, Finish(e(), name, f"{name} done", decision[name])))
        t += 1
    return steps


def long_run(root: Path, turns: int = 200) -> str:
    roles = ("reader", "fixer", "verifier")
    return journal(root, plan(*(role(r) for r in roles), maxTurns=200), long_steps(turns, roles))


def hostile_run(root: Path) -> str:
    """Role names, instructions, replies, conclusions, the goal and a halt detail that
    each try to run a script; one reply is 1 MB."""
    names = [HOSTILE[0], HOSTILE[3], HOSTILE[5]]
    workers = [
        role(n, role=HOSTILE[(k + 4) % len(HOSTILE)], instruction=HOSTILE[(k + 1) % len(HOSTILE)])
        for k, n in enumerate(names)
    ]
    raw = plan(*workers, goal=" ".join(HOSTILE), plan="\n".join(HOSTILE))
    e = Ids()
    steps: list[tuple[float, Event]] = [(0, StartRun(e()))]
    t = 1.0
    for k, n in enumerate(names):
        steps += [
            (t, Launch(e(), n)),
            (t + 1, TurnStarted(e(), n, HOSTILE[k], HOSTILE[k + 1])),
            (t + 30, TurnEnded(e(), n, f"d{k}", "\n".join(HOSTILE) + ("x" * MEGABYTE if k == 0 else ""), "completed")),
        ]
        t += 40
    steps += [
        (t, Dispatch(e(), names[0], "d0", " ".join(HOSTILE))),
        (t + 1, Finish(e(), names[1], HOSTILE[2] + HOSTILE[1], "d1")),
        (t + 2, QuotaObserved(e(), (QuotaWindow(50.0, HOSTILE[0], 300),))),
        (t + 3, Launch(e(), names[0])),
    ]
    from markertools import msg  # a halt's detail, as the supervisor writes one

    steps.append((t + 4, Halt(e(), "approval", msg("plan.paused.user"), names[0])))
    return journal(root, raw, steps)


# ---- fleets -----------------------------------------------------------------------------

STATUSES = ("running", "queued", "completed", "failed", "interrupted", "merged", "merge-failed")


def fleet_world(tasks: int, *, project: str = "p-fleet", creators: int = 12, now: float = AT) -> World:
    """`tasks` tasks in lineages as the caps allow them (generation <= 3, at most 20
    direct children), mixed statuses and creators, with audit records (two turns per
    spawning task), attempts, costs and quotas."""
    rows: list[Task] = []
    audit: list[AuditRecord] = []
    costs: list[CostRow] = []
    attempts: list[Attempt] = []
    frontier: list[tuple[str, int]] = []  # (id, generation) of tasks that may still spawn
    children: dict[str, int] = {}
    n = 0
    while n < tasks:
        if not frontier or n % 9 == 0:
            parent, generation = None, 0
        else:
            parent, generation = frontier[0]
            generation += 1
        tid = f"t{n:05d}"
        creator = f"user{n % creators:02d}"
        status = STATUSES[n % len(STATUSES)]
        rows.append(
            Task(
                id=tid,
                project_id=project,
                status=status,
                created_by=creator,
                parent_task_id=parent,
                prompt=f"task {n}: {('build', 'test', 'review', 'profile', 'document')[n % 5]} part {n % 97}\nmore detail",
                result_text="done" if status == "completed" else None,
                error_text="exit 1" if status == "failed" else None,
                interrupted_reason="platform restart" if status == "interrupted" else None,
                created_at=now - tasks + n,
            )
        )
        if parent is not None:
            children[parent] = children.get(parent, 0) + 1
            if children[parent] >= 20:
                frontier.pop(0)
            audit.append(AuditRecord(parent, "task-create", tid, "done", f"created {tid}", now - tasks + n))
        if generation < 3:
            frontier.append((tid, generation))
        if n % 3 == 0:
            costs.append(CostRow(tid, 1, 0.01 * (n % 17), 1000 + n, False, True))
        if status == "interrupted":
            attempts.append(Attempt(tid, 1, "platform_fresh", "worker restarted", -1, None, "lost", now - 5))
        n += 1
    for row in rows[: max(1, tasks // 10)]:  # a second turn: a poll, then a rejected cancel
        audit.append(AuditRecord(row.id, "task-poll", row.id, "done", "snapshot taken", now))
        audit.append(AuditRecord(row.id, "task-cancel", "t-other", "rejected", "not in your lineage", now + 1))
    return World(
        now=now,
        projects=(Project(id=project, name="fleet"),),
        permissions=(PermissionGrant("user00", project, ("read", "create_task")),),
        tasks=tuple(rows),
        costs=tuple(costs),
        quotas=tuple(Quota(f"user{k:02d}", 50.0 if k % 2 else None, 1.5 * k) for k in range(creators)),
        attempts=tuple(attempts),
        audit=tuple(audit),
    )


def hostile_world() -> World:
    """Every text a task, an agent or a worker writes tries to run a script; one prompt
    and one creator name are 1 MB."""
    project = HOSTILE[0]
    tasks: list[Task] = []
    for k, text in enumerate(HOSTILE):
        tasks.append(
            Task(
                id=f"{text}#{k}",
                project_id=project,
                status="running" if k % 2 else "failed",
                created_by=HOSTILE[(k + 1) % len(HOSTILE)],
                parent_task_id=None if k == 0 else f"{HOSTILE[0]}#0",
                prompt=text + "\n" + HOSTILE[(k + 2) % len(HOSTILE)],
                result_text=text,
                error_text=HOSTILE[(k + 3) % len(HOSTILE)],
                interrupted_reason=text,
                worktree="javascript:window.__pwned=12",
                host=text,
                created_at=AT + k,
            )
        )
    tasks.append(Task(id="big", project_id=project, status="queued", created_by="x" * MEGABYTE,
                      prompt="y" * MEGABYTE, created_at=AT + 100))
    audit = tuple(
        AuditRecord(f"{HOSTILE[0]}#0", "task-create", text, "rejected", text, AT + k)
        for k, text in enumerate(HOSTILE)
    )
    return World(
        now=AT + 200,
        projects=(Project(id=project, name=HOSTILE[1], repo_url="javascript:window.__pwned=13"),),
        tasks=tuple(tasks),
        audit=audit,
        attempts=(Attempt(f"{HOSTILE[0]}#0", 1, "platform_fresh", HOSTILE[5], -1, HOSTILE[6], HOSTILE[7], AT),),
        costs=(CostRow(f"{HOSTILE[0]}#0", 1, 0.5, 100, False, True),),
        quotas=(Quota(HOSTILE[1], 10.0, 2.0),),
    )
