"""The step-by-step agreement machine between a store under test and the in-memory
reference model (hypothesis RuleBasedStateMachine), shared by the SQLite and PostgreSQL
stateful tests."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from markertools import ApprovalRequest, ApprovalRule
from markertools.domain.model import (
    RETRYABLE_STATUSES,
    TASK_STATUSES,
    TODO_STATUSES,
    AuditRecord,
    Automation,
    Task,
    Todo,
)
from markertools.domain.schedule import next_run_at
from markertools_adapters.memory import MemoryStore
from markertools_adapters.sqlite import SqliteStore, create_store_from_world
from markertools_adapters.world import World
from support.strategies.sqlite import FLOATS, PROJECT_IDS, TASK_IDS, TEXT, TIMES, USERS, worlds

# FLT-5: a task's created_at of 0 means "not given": each store stamps its own clock's
# now, so the models would differ by the microseconds between them - the machine draws
# given times only (the stamping has its own contract test)
TASK_TIMES = TIMES.filter(lambda t: t != 0.0)

ALL_TASK_IDS = (*(f"t{i}" for i in range(8)), "T", "é", "t10", "", "n1", "n2", "n3")
TODO_IDS = st.sampled_from(["d1", "d2", "d3", "D", "d9"])
AUTOMATION_IDS = st.sampled_from(["a1", "a2", "a3", "a9"])
APPROVAL_IDS = st.sampled_from(["apr-1", "apr-2", "apr-3"])
STATUS = st.sampled_from(TASK_STATUSES)
HOSTS = st.sampled_from(["h1", "h2"])
LEASES = st.sampled_from([0.0, 30.0, 1e6])


def _call(store: Any, method: str, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return ("ok", getattr(store, method)(*args, **kwargs))
    except Exception as exc:  # both adapters must fail the same way
        return ("raised", type(exc).__name__)


def _normal(value: Any) -> Any:
    """Mappings and sets compare sorted; everything else as repr (exact floats)."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "ok":
        inner = value[1]
        if hasattr(inner, "items") and not isinstance(inner, tuple):
            return ("ok", repr(sorted(inner.items())))
        if isinstance(inner, (set, frozenset)):  # equal sets may iterate in other orders
            return ("ok", repr(sorted(inner)))
        return ("ok", repr(inner))
    return value


class AdapterAgreement(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory()
        self.memory: Any = None
        self.sqlite: SqliteStore | None = None

    @initialize(world=worlds)
    def load(self, world: World) -> None:
        self.memory = MemoryStore.from_world(world)
        self.sqlite = create_store_from_world(world, Path(self._dir.name) / "s.db")

    def both(self, method: str, *args: Any, **kwargs: Any) -> Any:
        mine = _call(self.sqlite, method, *args, **kwargs)
        reference = _call(self.memory, method, *args, **kwargs)
        assert _normal(mine) == _normal(reference), (method, args, kwargs)
        return reference[1]

    # ---- writes -------------------------------------------------------------------------

    @rule(
        tid=TASK_IDS | st.sampled_from(["n1", "n2", "n3"]),
        parent=st.none() | TASK_IDS,
        project=PROJECT_IDS,
        creator=st.none() | USERS,
        prompt=TEXT,
        created_at=TASK_TIMES,
        part=st.none() | st.sampled_from(["", "part"]),
        engine=st.none() | st.sampled_from(["codex", "claude-code", "gpt"]),
    )
    def create(
        self,
        tid: str,
        parent: str | None,
        project: str,
        creator: str | None,
        prompt: str,
        created_at: float,
        part: str | None,
        engine: str | None,
    ) -> None:
        task = Task(
            id=tid,
            project_id=project,
            status="queued",
            created_by=creator,
            parent_task_id=parent,
            prompt=prompt,
            created_at=created_at,
            coordinator_part=part,
            engine=engine,
        )
        self.both("insert_task", task)

    @rule(tid=TASK_IDS, expected=STATUS, reason=st.none() | TEXT)
    def cancel(self, tid: str, expected: str, reason: str | None) -> None:
        self.both(
            "transition_task",
            tid,
            expected,
            {"status": "interrupted", "interrupted_reason": reason},
        )

    @rule(tid=TASK_IDS, expected=st.sampled_from(sorted(RETRYABLE_STATUSES)) | STATUS)
    def retry(self, tid: str, expected: str) -> None:
        self.both(
            "transition_task",
            tid,
            expected,
            {"status": "queued", "result_text": None, "error_text": None, "actual_model": None},
        )

    @rule(tid=TASK_IDS, expected=STATUS, status=STATUS, text=st.none() | TEXT)
    def finish(self, tid: str, expected: str, status: str, text: str | None) -> None:
        self.both(
            "transition_task",
            tid,
            expected,
            {"status": status, "result_text": text, "error_text": text},
        )

    @rule(
        tid=TASK_IDS,
        expected=STATUS,
        kind=st.sampled_from(["platform_fresh", "goal_breakpoint", "bogus"]),
        checkpoint=st.integers(-1, 5),
        now=TIMES,
    )
    def requeue(self, tid: str, expected: str, kind: str, checkpoint: int, now: float) -> None:
        self.both("requeue_platform", tid, expected, kind, checkpoint, now)

    @rule(
        did=TODO_IDS,
        project=PROJECT_IDS,
        title=TEXT,
        status=st.sampled_from(TODO_STATUSES),
        sort_order=st.none() | st.integers(-3, 3),
        created_at=TIMES,
    )
    def create_todo(
        self,
        did: str,
        project: str,
        title: str,
        status: str,
        sort_order: int | None,
        created_at: float,
    ) -> None:
        self.both(
            "insert_todo",
            Todo(
                id=did,
                project_id=project,
                title=title,
                status=status,
                sort_order=sort_order,
                created_at=created_at,
            ),
        )

    @rule(
        did=TODO_IDS,
        expected=st.sampled_from(TODO_STATUSES),
        status=st.sampled_from(TODO_STATUSES),
        title=st.none() | TEXT,
        completed_at=st.none() | TIMES,
        bad_field=st.booleans(),
    )
    def update_todo(
        self,
        did: str,
        expected: str,
        status: str,
        title: str | None,
        completed_at: float | None,
        bad_field: bool,
    ) -> None:
        changes: dict[str, object] = {"status": status, "completed_at": completed_at}
        if title is not None:
            changes["title"] = title
        if bad_field:
            changes["project_id"] = "elsewhere"
        self.both("update_todo", did, expected, changes)

    @rule(
        aid=AUTOMATION_IDS,
        project=PROJECT_IDS,
        name=st.sampled_from(["n", "m"]),
        interval=st.sampled_from([60, 3600]),
        first=st.none() | TIMES,
        once=st.booleans(),
        created_at=TIMES,
    )
    def create_automation(
        self,
        aid: str,
        project: str,
        name: str,
        interval: int,
        first: float | None,
        once: bool,
        created_at: float,
    ) -> None:
        self.both(
            "insert_automation",
            Automation(
                id=aid,
                project_id=project,
                name=name,
                prompt="p",
                interval_seconds=interval,
                first_run_at=first,
                run_once=once,
                created_at=created_at,
            ),
        )

    @rule(aid=AUTOMATION_IDS, now=TIMES, use_next=st.booleans(), slot=TIMES)
    def claim(self, aid: str, now: float, use_next: bool, slot: float) -> None:
        current = self.memory.get_automation(aid)
        if use_next and current is not None:
            nxt = next_run_at(current)
            slot = nxt if nxt is not None else slot
        self.both("claim_automation", aid, slot, now)

    @rule(sender=TASK_IDS, kind=TEXT, about=st.none() | TASK_IDS, time=TIMES)
    def audit(self, sender: str, kind: str, about: str | None, time: float) -> None:
        self.both("record_audit", AuditRecord(sender, kind, about, "done", "r", time))
        self.both("record_audit", AuditRecord(sender, kind, about, "done", "r", time, "tool"))

    @rule(tid=TASK_IDS, text=TEXT)
    def followup(self, tid: str, text: str) -> None:
        self.both("enqueue_followup", tid, text)

    # ---- the worker-loop ports, automation management, record writers (issue 18) -------

    @rule(project=PROJECT_IDS, host=TEXT)
    def claim_next(self, project: str, host: str) -> None:
        self.both("claim_next_task", project, host)

    @rule(project=PROJECT_IDS, host=TEXT)
    def claim_with_start(self, project: str, host: str) -> None:  # INJ-1: the Claim, start included
        self.both("claim_task", project, host)

    @rule(tid=TASK_IDS)
    def take_followups(self, tid: str) -> None:
        self.both("take_followups", tid)

    # ---- leases, affinity, checkpoints, the fleet snapshot (issue 29, WRK-6/7/10) -------

    @rule(project=PROJECT_IDS, host=HOSTS, now=TIMES, lease=LEASES)
    def claim_with_lease(self, project: str, host: str, now: float, lease: float) -> None:
        self.both("claim_task", project, host, now=now, lease_seconds=lease)

    @rule(host=HOSTS, ids=st.lists(TASK_IDS, max_size=4), lease=LEASES, now=TIMES)
    def renew_leases(self, host: str, ids: list[str], lease: float, now: float) -> None:
        self.both("renew_leases", host, ids, lease_seconds=lease, now=now)

    @rule(tid=TASK_IDS, host=HOSTS, pgid=st.integers(1, 2**31), machine=st.none() | TEXT)
    def process_group(self, tid: str, host: str, pgid: int, machine: str | None) -> None:
        self.both("record_process_group", tid, host, pgid, machine_id=machine, now=0.0)
        self.both("get_lease", tid)

    @rule(
        tid=TASK_IDS,
        host=HOSTS,
        now=TIMES,
        affinity=LEASES,
        kind=st.sampled_from(["platform_fresh", "goal_breakpoint"]),
    )
    def requeue_expired(self, tid: str, host: str, now: float, affinity: float, kind: str) -> None:
        self.both("expired_leases", now)
        self.both("requeue_expired", tid, host, now, affinity_seconds=affinity, kind=kind)
        self.both("get_affinity", tid)

    @rule(tid=TASK_IDS, host=HOSTS)
    def release_lease(self, tid: str, host: str) -> None:
        self.both("release_lease", tid, host)
        self.both("get_lease", tid)

    @rule(tid=TASK_IDS, rnd=st.integers(0, 5), thread=st.none() | TEXT, now=TIMES)
    def checkpoint(self, tid: str, rnd: int, thread: str | None, now: float) -> None:
        self.both("record_checkpoint", tid, rnd, thread_id=thread, turn_id=None, now=now)
        self.both("last_checkpoint", tid)

    @rule(ids=st.lists(TASK_IDS, max_size=5), project=st.none() | PROJECT_IDS, now=TIMES)
    def fleet(self, ids: list[str], project: str | None, now: float) -> None:
        self.both("cancelled_among", ids)
        self.both("fleet_snapshot", project, now)

    # ---- same-turn tools (issue 28): the call ledger, held follow-ups, task tokens -------

    @rule(tid=TASK_IDS, turn=st.integers(0, 3), kind=st.sampled_from(["task-poll", "wait-threads"]))
    def turn_use(self, tid: str, turn: int, kind: str) -> None:
        self.both("record_turn_use", tid, turn, kind)
        self.both("turn_usage", tid, turn)

    @rule(tid=TASK_IDS, turn=st.integers(0, 3), text=TEXT, release=st.booleans())
    def held_followup(self, tid: str, turn: int, text: str, release: bool) -> None:
        self.both("hold_followup", tid, turn, text)
        if release:
            self.both("release_held_followups", tid)

    @rule(tid=TASK_IDS, thread=st.none() | TEXT)
    def thread_id(self, tid: str, thread: str | None) -> None:
        self.both("set_thread_id", tid, thread)

    @rule(tid=TASK_IDS, n=st.integers(0, 5), expires=TIMES, revoke=st.booleans())
    def task_token(self, tid: str, n: int, expires: float, revoke: bool) -> None:
        digest = f"{n:064x}"
        self.both("insert_task_token", digest, tid, expires)
        self.both("task_token", digest)
        if revoke:
            self.both("revoke_task_tokens", tid)
        self.both("task_token", digest)

    @rule(
        aid=AUTOMATION_IDS,
        expected=st.sampled_from(["active", "paused", "deleted"]),
        status=st.sampled_from(["active", "paused", "deleted"]),
    )
    def automation_status(self, aid: str, expected: str, status: str) -> None:
        self.both("set_automation_status", aid, expected, status)

    @rule(
        aid=AUTOMATION_IDS,
        prompt=st.none() | TEXT,
        interval=st.none() | st.integers(60, 2592000),
        first=st.none() | TIMES,
        once=st.none() | st.booleans(),
    )
    def update_automation(
        self,
        aid: str,
        prompt: str | None,
        interval: int | None,
        first: float | None,
        once: bool | None,
    ) -> None:
        changes: dict[str, object] = {}
        for name, value in (
            ("prompt", prompt),
            ("interval_seconds", interval),
            ("first_run_at", first),
            ("run_once", once),
        ):
            if value is not None:
                changes[name] = value
        self.both("update_automation", aid, changes)
        self.both("list_automations", None)

    @rule(
        user=USERS,
        project=PROJECT_IDS,
        grants=st.sets(st.sampled_from(["read", "create_task", "approve_merge"])),
    )
    def set_permissions(self, user: str, project: str, grants: set[str]) -> None:
        self.both("set_permissions", user, project, sorted(grants))

    @rule(
        user=USERS,
        total=st.none() | st.floats(0, 100),
        used=st.floats(0, 100),
        charge=st.floats(0, 10),
    )
    def quotas(self, user: str, total: float | None, used: float, charge: float) -> None:
        from markertools.domain.model import Quota

        self.both("put_quota", Quota(user, total, used))
        self.both("charge_quota", user, charge)

    @rule(tid=TASK_IDS, rnd=st.integers(0, 5), tokens=st.integers(0, 10**6), priced=st.booleans())
    def cost(self, tid: str, rnd: int, tokens: int, priced: bool) -> None:
        from markertools.domain.model import CostRow

        self.both("record_cost", CostRow(tid, rnd, 0.25 if priced else None, tokens, False, priced))

    @rule(
        tid=TASK_IDS,
        turn=st.sampled_from(["turn-1", "turn-2"]),
        outcome=st.sampled_from(["completed", "failed", "cancelled", "bogus"]),
        requeue=st.booleans(),
        usd=st.none() | st.sampled_from([0, "0.1", 0.2, "1.000001"]),
        tokens=st.integers(0, 5000),
        given_round=st.none() | st.integers(0, 3),
        text=st.none() | TEXT,
    )
    def finish_turn(
        self,
        tid: str,
        turn: str,
        outcome: str,
        requeue: bool,
        usd: object,
        tokens: int,
        given_round: int | None,
        text: str | None,
    ) -> None:
        """TRN-9: the unit of work at the end of a turn, replays included."""
        from markertools.domain.model import CostRow, TurnCost

        cost = (
            TurnCost(usd, tokens)  # type: ignore[arg-type]
            if given_round is None
            else CostRow(tid, given_round, usd, tokens)  # type: ignore[arg-type]
        )
        self.both(
            "finish_turn",
            tid,
            turn,
            outcome=outcome,
            result_text=text,
            error_text=text,
            cost=cost,
            requeue=requeue,
        )

    # ---- approvals (issue 38: APR-1..5) ------------------------------------------------

    @rule(
        aid=APPROVAL_IDS,
        tid=TASK_IDS,
        kind=st.sampled_from(["command", "file_change", "permission", "bogus"]),
        argv=st.none() | st.lists(TEXT, min_size=1, max_size=3).map(tuple),
        paths=st.lists(TEXT, max_size=2).map(tuple),
        reason=st.none() | TEXT,
        asked=TIMES,
        span=st.sampled_from([0.0, 30.0, 900.0]),
    )
    def ask_approval(
        self,
        aid: str,
        tid: str,
        kind: str,
        argv: tuple[str, ...] | None,
        paths: tuple[str, ...],
        reason: str | None,
        asked: float,
        span: float,
    ) -> None:
        request = ApprovalRequest(
            aid, tid, "ignored", kind, argv, "/w", paths, None, reason, asked, asked + span
        )
        self.both("insert_approval", request)
        self.both("get_approval", aid)

    @rule(
        aid=APPROVAL_IDS,
        status=st.sampled_from(["approved", "denied", "expired"]),
        who=st.sampled_from(["person:a", "task:t1"]),
        reason=st.none() | TEXT,
        now=TIMES,
        expire=st.booleans(),
    )
    def answer_approval(
        self, aid: str, status: str, who: str, reason: str | None, now: float, expire: bool
    ) -> None:
        if expire:
            self.both(
                "expire_approval", aid, answered_by="expiry", reason=reason or "late", now=now
            )
        else:
            self.both("answer_approval", aid, status, answered_by=who, reason=reason, now=now)
        self.both("get_approval", aid)

    @rule(
        rid=st.sampled_from(["r1", "r2", "r3"]),
        project=PROJECT_IDS,
        action=st.sampled_from(["allow", "deny", "maybe"]),
        prefix=st.none()
        | st.lists(st.sampled_from(["uv", "run", "a;b", " "]), max_size=3).map(tuple),
        kind=st.none() | st.sampled_from(["command", "file_change", "permission"]),
        remove=st.booleans(),
    )
    def approval_rule(
        self,
        rid: str,
        project: str,
        action: str,
        prefix: tuple[str, ...] | None,
        kind: str | None,
        remove: bool,
    ) -> None:
        if remove:
            self.both("remove_approval_rule", rid)
        else:
            self.both("add_approval_rule", ApprovalRule(rid, project, action, kind, prefix))
        self.both("approval_rules", project)
        self.both("get_approval_rule", rid)

    @rule(
        ids=st.lists(TASK_IDS, max_size=4),
        project=st.none() | PROJECT_IDS,
        statuses=st.none() | st.sets(st.sampled_from(["pending", "approved", "expired"])),
        now=TIMES,
    )
    def approval_reads(
        self, ids: list[str], project: str | None, statuses: set[str] | None, now: float
    ) -> None:
        self.both("pending_approvals", ids)
        self.both("list_approvals", project, statuses=statuses)
        self.both("fleet_snapshot", project, now)

    # ---- reads --------------------------------------------------------------------------

    @rule(steps=st.integers(-1, 40))
    def lineage(self, steps: int) -> None:
        for tid in ALL_TASK_IDS:
            for bound in (steps, -1, 0, 1, 32):
                self.both("lineage", tid, bound)

    @rule(ids=st.lists(TASK_IDS, max_size=10))
    def get_tasks(self, ids: list[str]) -> None:
        self.both("get_tasks", ids)

    @rule(tid=TASK_IDS)
    def reads_by_task(self, tid: str) -> None:
        for method in (
            "get_task",
            "count_children",
            "task_costs",
            "latest_attempt",
            "list_attempts",
            "followups_for",
        ):
            self.both(method, tid)

    @rule(
        project=PROJECT_IDS,
        status=st.none() | STATUS,
        q=st.none() | TEXT,
        limit=st.integers(-1, 12),
    )
    def list_tasks(self, project: str, status: str | None, q: str | None, limit: int) -> None:
        self.both("list_tasks", project, status=status, q=q, limit=limit)

    @rule(
        project=PROJECT_IDS,
        statuses=st.sets(st.sampled_from(TODO_STATUSES)),
        q=st.none() | TEXT,
        limit=st.integers(0, 5),
    )
    def list_todos(self, project: str, statuses: set[str], q: str | None, limit: int) -> None:
        self.both("list_todos", project, statuses=statuses, q=q, limit=limit)
        for did in ("d1", "d2", "D"):
            self.both("get_todo", did)

    @rule(now=TIMES | FLOATS, project=PROJECT_IDS, aid=AUTOMATION_IDS)
    def automations(self, now: float, project: str, aid: str) -> None:
        self.both("due_automations", now)
        self.both("active_automation_names", project)
        self.both("get_automation", aid)

    @rule(
        user=st.none() | USERS,
        project=PROJECT_IDS,
        permission=st.sampled_from(["read", "create_task", "approve_merge"]),
    )
    def lookups(self, user: str | None, project: str, permission: str) -> None:
        self.both("has_permission", user, project, permission)
        if user is not None:
            self.both("get_quota", user)
            self.both("unpriced_tokens", user)
        self.both("get_project", project)

    # ---- the whole state ---------------------------------------------------------------

    @invariant()
    @precondition(lambda self: self.sqlite is not None)
    def same_world(self) -> None:
        assert self.sqlite is not None
        mine = self.sqlite.export_world(0.0)
        reference = self.memory.export_world(0.0)
        assert mine == reference
        assert repr(mine) == repr(reference)

    def teardown(self) -> None:
        if self.sqlite is not None:
            self.sqlite.close()
        self._dir.cleanup()


AdapterAgreement.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
