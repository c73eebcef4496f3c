"""Hypothesis strategies for whole worlds (markertools_adapters.world.World) in canonical
form: every keyed list sorted by its key with unique keys, grants sorted and unique.

Values are chosen to stress storage: unicode text (no surrogates: they cannot be UTF-8),
every finite float including -0.0 and subnormals, 64-bit integers, ids that collide so
parents may be missing or form cycles.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from markertools.domain.model import (
    PERMISSIONS,
    TASK_STATUSES,
    TODO_PRIORITIES,
    TODO_STATUSES,
    Attempt,
    AuditRecord,
    Automation,
    CostRow,
    Environment,
    Followup,
    PermissionGrant,
    Project,
    Quota,
    Task,
    Todo,
)
from markertools_adapters.world import World

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
# CST-2: money a record accepts and a world file carries exactly (a JSON number: 15
# significant digits, so micro-dollars up to $999,999,999.999999): floats (read as the
# decimal they print as), decimal strings with more than 6 places (rounded), and the edges
MONEY = (
    st.floats(0, 999_999_999, allow_nan=False)
    | st.decimals(0, 999_999_999, allow_nan=False, allow_infinity=False, places=9).map(str)
    | st.sampled_from([0, 0.1, 0.000001, "999999999.999999"])
)
TIMES = st.one_of(
    st.sampled_from([0.0, -0.0, 1798330000.0, 1798333200.5]),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
    FLOATS,
)
TEXT = st.text(max_size=12)
OPT_TEXT = st.none() | TEXT
TASK_IDS = st.sampled_from([f"t{i}" for i in range(8)] + ["T", "é", "t10", ""])
PROJECT_IDS = st.sampled_from(["p1", "p2", "P1"])
USERS = st.sampled_from(["u1", "u2", "ü"])
STATUS = st.sampled_from(TASK_STATUSES) | TEXT

environments = st.none() | st.builds(Environment, name=OPT_TEXT, branch=OPT_TEXT, status=OPT_TEXT)

projects = st.builds(
    Project, id=PROJECT_IDS, name=TEXT, repo_url=OPT_TEXT, environment=environments
)

tasks = st.builds(
    Task,
    id=TASK_IDS,
    project_id=PROJECT_IDS,
    status=STATUS,
    created_by=st.none() | USERS,
    parent_task_id=st.none() | TASK_IDS,
    executor=st.sampled_from(["local", "docker", "cloud"]),
    environment_id=OPT_TEXT,
    model=OPT_TEXT,
    effort=OPT_TEXT,
    goal_mode=st.booleans(),
    verify_command=OPT_TEXT,
    is_coordinator=st.booleans(),
    coordinator_part=st.none() | st.sampled_from(["", "part-a"]),
    prompt=TEXT,
    result_text=OPT_TEXT,
    error_text=OPT_TEXT,
    actual_model=OPT_TEXT,
    worktree=OPT_TEXT,
    host=OPT_TEXT,
    created_at=TIMES,
    goal=OPT_TEXT,
    interrupted_reason=OPT_TEXT,
    # below 2**62: a requeue adds one, and SQLite integers stop at 2**63 - 1
    auto_resume_count=st.integers(0, 5) | st.integers(0, 2**62),
    engine=st.none() | st.sampled_from(["codex", "claude-code", "gpt"]),
)

todos = st.builds(
    Todo,
    id=st.sampled_from(["d1", "d2", "d3", "D"]),
    project_id=PROJECT_IDS,
    title=TEXT,
    description=OPT_TEXT,
    status=st.sampled_from(TODO_STATUSES),
    priority=st.sampled_from(TODO_PRIORITIES),
    due_at=st.none() | TIMES,
    task_id=st.none() | TASK_IDS,
    sort_order=st.none() | INT64,
    completed_at=st.none() | TIMES,
    created_at=TIMES,
)

automations = st.builds(
    Automation,
    id=st.sampled_from(["a1", "a2", "a3"]),
    project_id=PROJECT_IDS,
    name=TEXT,
    prompt=TEXT,
    interval_seconds=st.sampled_from([60, 3600, 86400]) | INT64,
    first_run_at=st.none() | TIMES,
    run_once=st.booleans(),
    bind=st.none() | st.sampled_from(["cron", "heartbeat"]),
    bound_task_id=st.none() | TASK_IDS,
    repo_url=OPT_TEXT,
    status=st.sampled_from(["active", "paused", "deleted"]),
    created_by=st.none() | USERS,
    created_at=TIMES,
    last_run_at=st.none() | TIMES,
    run_count=st.integers(0, 3),
    last_slot_at=st.none() | TIMES,
)

costs = st.builds(
    CostRow,
    task_id=TASK_IDS,
    round=st.integers(0, 10),
    usd=st.none() | MONEY,
    tokens=st.integers(0, 10**6),
    estimated=st.booleans(),
    priced=st.booleans(),
)

quotas = st.builds(Quota, user=USERS, total_usd=st.none() | MONEY, used_usd=MONEY)

grants = st.builds(
    PermissionGrant,
    user=USERS,
    project=PROJECT_IDS,
    grants=st.lists(st.sampled_from(PERMISSIONS), unique=True).map(lambda g: tuple(sorted(g))),
)

attempts = st.builds(
    Attempt,
    task_id=TASK_IDS,
    attempt_no=st.integers(1, 4),
    kind=st.sampled_from(["goal_breakpoint", "platform_fresh"]),
    interrupted_reason=OPT_TEXT,
    checkpoint_round=st.integers(-1, 5),
    result_text=OPT_TEXT,
    error_text=OPT_TEXT,
    created_at=TIMES,
)

audit = st.builds(
    AuditRecord,
    sender=TASK_IDS,
    kind=st.sampled_from(["task-cancel", "turn"]),
    target=st.none() | TASK_IDS,
    outcome=st.sampled_from(["done", "rejected", "discarded"]),
    reason=TEXT,
    time=TIMES,
)

followups = st.builds(Followup, task_id=TASK_IDS, text=TEXT)


def _unique_sorted(
    strategy: st.SearchStrategy[Any], key: Any
) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.lists(strategy, unique_by=key, max_size=8).map(
        lambda rows: tuple(sorted(rows, key=key))
    )


def _distinct_active_names(rows: tuple[Automation, ...]) -> tuple[Automation, ...]:
    """AUT-3: a world never holds two active automations of one project with one name
    (stores refuse such a world), so later duplicates are paused."""
    import attrs

    seen: set[tuple[str, str]] = set()
    out = []
    for row in rows:
        key = (row.project_id, row.name)
        if row.status == "active" and key in seen:
            row = attrs.evolve(row, status="paused")
        elif row.status == "active":
            seen.add(key)
        out.append(row)
    return tuple(out)


worlds = st.builds(
    World,
    now=TIMES,
    projects=_unique_sorted(projects, lambda p: p.id),
    permissions=_unique_sorted(grants, lambda g: (g.user, g.project)),
    tasks=_unique_sorted(tasks, lambda t: t.id),
    todos=_unique_sorted(todos, lambda t: t.id),
    automations=_unique_sorted(automations, lambda a: a.id).map(_distinct_active_names),
    costs=st.lists(costs, max_size=6).map(
        lambda rows: tuple(sorted(rows, key=lambda c: (c.task_id, c.round)))
    ),
    quotas=_unique_sorted(quotas, lambda q: q.user),
    attempts=_unique_sorted(attempts, lambda a: (a.task_id, a.attempt_no)),
    audit=st.lists(audit, max_size=4).map(tuple),
    followups=st.lists(followups, max_size=4).map(tuple),
)


def _valid_record(record: Any) -> Any:
    """The nearest record a world FILE accepts (docs/cli.md enumerations, non-empty ids)."""
    import attrs

    from markertools.domain.model import EFFORTS, EXECUTORS

    changes: dict[str, Any] = {}
    for key in ("id", "project_id", "task_id", "user", "project"):
        value = getattr(record, key, None)
        if isinstance(value, str) and not value.strip():
            changes[key] = f"{key}-blank"
    if isinstance(record, Task):
        if record.status not in TASK_STATUSES:
            changes["status"] = "running"
        if record.effort not in (None, *EFFORTS):
            changes["effort"] = None
        if record.executor not in EXECUTORS:
            changes["executor"] = "local"
        if record.engine not in (None, "codex", "claude-code"):
            changes["engine"] = None
    if isinstance(record, Automation) and record.interval_seconds < 1:
        changes["interval_seconds"] = 60
    return attrs.evolve(record, **changes) if changes else record


def as_file_world(world: World) -> World:
    """`world` made acceptable to the world-file loader (markertools_adapters.world)."""
    import attrs

    fields = {}
    for name in (
        "projects",
        "permissions",
        "tasks",
        "todos",
        "automations",
        "costs",
        "quotas",
        "attempts",
        "audit",
        "followups",
    ):
        fields[name] = tuple(_valid_record(r) for r in getattr(world, name))
    fixed = attrs.evolve(world, **fields)

    # blanks renamed to "<key>-blank" may now collide: keep the first of each key
    def unique(rows: tuple[Any, ...], key: Any) -> tuple[Any, ...]:
        seen: set[Any] = set()
        out = []
        for row in rows:
            if key(row) not in seen:
                seen.add(key(row))
                out.append(row)
        return tuple(sorted(out, key=key))

    return attrs.evolve(
        fixed,
        tasks=unique(fixed.tasks, lambda t: t.id),
        todos=unique(fixed.todos, lambda t: t.id),
        quotas=unique(fixed.quotas, lambda q: q.user),
        permissions=unique(fixed.permissions, lambda g: (g.user, g.project)),
        attempts=unique(fixed.attempts, lambda a: (a.task_id, a.attempt_no)),
        costs=tuple(sorted(fixed.costs, key=lambda c: (c.task_id, c.round))),
    )


file_worlds = worlds.map(as_file_world)
