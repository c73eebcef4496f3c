# Owns: the page model of the fleet view (VEW-1): from a `World` (what a store's
# `export_world` returns) to the lineage tree as rows in display order, each task's
# marker actions grouped into turns (from the audit records), attempts, cost and the
# creator's quota, optional extras a newer store may carry (thread id, turn, host,
# lease), and the summary (tasks per status, spend per creator, depth and fan-out as
# the caps count them: LIN-1 generation, LIN-3 direct children).
#
# Must never: do I/O or read a clock; produce markup (every text stays plain data for
# the render step to escape, VEW-3); fail on a world a store can hold (missing parents,
# parent cycles, unknown statuses, audit records of senders that are not tasks).
#
# Invariants:
#   Rule 1: `nodes` hold every task of the view exactly once, in pre-order: a parent
#           before its children, a subtree contiguous (`subtree` rows from the node
#           on), siblings by creation time then id. A task whose parent is not in the
#           view is a root; a parent cycle is broken at its smallest id.
#   Rule 2: `generation` is LIN-1 computed over the whole world exactly as delivery
#           computes it (a parent walk of at most 32 steps; a missing parent row is a
#           root; a walk that does not end is 32); `children` is LIN-3's count (direct
#           children that are not coordinator subtasks).
#   Rule 3: every text is cut to a bound (ids, names, reasons, prompts), so a page
#           stays usable whatever a task, an agent or a worker wrote.
#   Rule 4: audit records become turns per sender in log order: a new turn starts at
#           the sender's first record, when a record's kind comes earlier in the TRN-1
#           execution order than the one before it, after a discarded turn, or after
#           more than TURN_GAP_SECONDS; a record that carries a turn id (a newer store)
#           is grouped by it instead.
#   Rule 5: the page's time (`as_of`) is the latest of the world's clock and the times
#           its records carry, never the world file's clock alone.
#   Rule 6 (APR-4): a task's approval requests (given beside the world: a store keeps
#           them outside it) are listed in its detail, newest first, at most
#           APPROVALS_SHOWN; `pending` counts those still waiting for an answer while the
#           task runs, and the summary counts them for the whole view.
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from markertools import (
    TASK_STATUSES,
    ApprovalRequest,
    Attempt,
    AuditRecord,
    CostRow,
    Quota,
    Task,
    describe_request,
)
from markertools_adapters.views._text import cut, first_line, usd, utc
from markertools_adapters.world import World

ID_CHARS: Final[int] = 120
NAME_CHARS: Final[int] = 120
PROMPT_CHARS: Final[int] = 400
RESULT_CHARS: Final[int] = 300
REASON_CHARS: Final[int] = 400
EXTRA_CHARS: Final[int] = 200
LINEAGE_MAX_STEPS: Final[int] = 32  # LIN-1 walks at most this many parent steps
MAX_GENERATION: Final[int] = 3  # LIN-2: a task of this generation may not spawn
MAX_DIRECT_CHILDREN: Final[int] = 20  # LIN-3
TURN_GAP_SECONDS: Final[float] = 600.0  # the default bound of one delivery (TRN-11)
APPROVALS_SHOWN: Final[int] = 50  # Rule 6: a task's approval requests in its detail
# TRN-1: the order in which the kinds of one turn run (each audit record is one ran block)
EXECUTION_ORDER: Final[tuple[str, ...]] = (
    "task-create",
    "todo-create",
    "todo-update",
    "automation-create",
    "task-cancel",
    "task-retry",
    "approval-answer",
    "task-list",
    "todo-list",
    "task-cost",
    "quota-status",
    "task-files",
    "task-poll",
    "wait-threads",
    "goal-convert",
)
_RANK: Final[dict[str, int]] = {kind: n for n, kind in enumerate(EXECUTION_ORDER)}
DISCARD_KIND: Final[str] = "turn"  # the audit kind of a turn discarded whole (TRN-3/10)
# optional task fields a newer store adds (the worker host: issue 27); shown when present
EXTRA_TASK_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("thread_id", "thread"),
    ("turn", "turn"),
    ("host", "host"),
    ("lease_host", "lease host"),
    ("lease_expires_at", "lease expires"),
    ("worktree", "worktree"),
    ("actual_model", "model used"),
)
_TIME_EXTRAS: Final[frozenset[str]] = frozenset({"lease_expires_at"})
_TURN_ID_FIELDS: Final[tuple[str, ...]] = ("turn_id", "turn")


@attrs.frozen
class Action:
    """One marker action of a turn: an audit record (TRN-7)."""

    kind: str
    outcome: str
    target: str
    reason: str
    at: float


@attrs.frozen
class TurnActions:
    """The actions of one turn of a task (Rule 4), in log order."""

    number: int
    at: float
    actions: tuple[Action, ...]


@attrs.frozen
class AttemptRow:
    """One attempts-ledger row (ATT-1) with its resume reason."""

    attempt_no: int
    kind: str
    reason: str
    checkpoint_round: int
    at: float
    error: str
    result: str


@attrs.frozen
class Spend:
    """A task's cost rows added up: USD of the priced rows, tokens, rows, unpriced rows."""

    usd: float = 0.0
    tokens: int = 0
    rows: int = 0
    unpriced: int = 0
    estimated: bool = False

    @property
    def priced(self) -> int:
        """Rows with a price: when none has one, no dollar figure is shown (WRK-8)."""
        return self.rows - self.unpriced


@attrs.frozen
class ApprovalRow:
    """One approval request of a task (APR-4): what it asks for and how it was answered."""

    id: str
    kind: str
    what: str  # the command and its directory, or the paths (describe_request)
    status: str
    answered_by: str
    asked_at: float
    reason: str  # the agent's reason, then the answer's


@attrs.frozen
class TaskNode:
    """One task as a row of the lineage tree, with what its detail pane shows."""

    id: str
    project_id: str
    name: str  # the head of the prompt (first non-blank line)
    status: str
    creator: str | None
    parent_id: str | None  # as stored (cut to ID_CHARS)
    parent: int  # index of the parent row in `nodes`, -1 for a root of the view
    depth: int  # depth in the view's tree
    generation: int  # LIN-1
    children: int  # LIN-3: direct children that are not coordinator subtasks
    subtree: int  # rows of this subtree, the node included (Rule 1)
    created_at: float
    prompt: str
    result: str
    error: str
    interrupted_reason: str
    executor: str
    model: str
    auto_resumes: int
    parent_missing: bool  # has a parent id, but that task is not in the view
    in_cycle: bool  # the task is in, or below, a loop of parent links (Rule 1)
    turns: tuple[TurnActions, ...] = ()
    attempts: tuple[AttemptRow, ...] = ()
    spend: Spend = Spend()
    extras: tuple[tuple[str, str], ...] = ()
    approvals: tuple[ApprovalRow, ...] = ()  # Rule 6
    pending: int = 0  # requests waiting for an answer while the task runs


@attrs.frozen
class CreatorSpend:
    """What one creator's tasks in the view cost, and the creator's quota (DOM-7)."""

    creator: str | None
    tasks: int
    usd: float
    tokens: int
    unpriced: int
    quota_total: float | None
    quota_used: float | None
    has_quota: bool
    priced: int = 0  # cost rows with a price (none: the spend is shown as unpriced)


@attrs.frozen
class FleetSummary:
    """The summary block: counts per status, spend per creator, depth and fan-out."""

    tasks: int
    per_status: tuple[tuple[str, int], ...]
    per_creator: tuple[CreatorSpend, ...]
    usd: float
    tokens: int
    max_generation: int
    max_children: int
    at_generation_limit: int  # tasks of generation >= 3: they may not spawn (LIN-2)
    at_children_cap: int  # tasks with 20 direct children (LIN-3)
    roots: int
    actions: int
    other_senders: int  # audit records of senders that are not tasks of the view
    priced: int = 0  # cost rows with a price, of every task in the view
    unpriced: int = 0  # cost rows without one (tokens never shown as $0, WRK-8)
    approvals_pending: int = 0  # Rule 6: requests waiting for an answer (APR-4)


@attrs.frozen
class FleetModel:
    """The whole fleet page: its heading, the rows of the tree and the summary."""

    title: str
    scope: str  # "project p1 (shop)" or "every project (2)"
    now: float
    nodes: tuple[TaskNode, ...]
    summary: FleetSummary
    statuses: tuple[str, ...]  # every status shown, TASK_STATUSES order first
    creators: tuple[str, ...]  # "" stands for no creator
    as_of: float | None = None  # the page's time: the latest of `now` and any record's (Rule 5)

    def to_data(self) -> dict[str, Any]:
        """The JSON island of the page: compact rows (short keys, statuses and creators
        as indexes into `statuses` / `creators`) that the page's script reads once."""
        status_at = {s: n for n, s in enumerate(self.statuses)}
        creator_at = {c: n for n, c in enumerate(self.creators)}
        rows = [_row(node, status_at, creator_at) for node in self.nodes]
        return {
            "statuses": list(self.statuses),
            "creators": list(self.creators),
            "limits": {"generation": MAX_GENERATION, "children": MAX_DIRECT_CHILDREN},
            "tasks": rows,
        }


def _row(node: TaskNode, status_at: Mapping[str, int], creator_at: Mapping[str, int]) -> Any:
    row: dict[str, Any] = {
        "i": node.id,
        "n": node.name,
        "s": status_at[node.status],
        "c": creator_at[node.creator or ""],
        "p": node.parent,
        "d": node.depth,
        "g": node.generation,
        "k": node.children,
        "z": node.subtree,
        "t": utc(node.created_at),
    }
    detail: dict[str, Any] = {}
    for key, value in (
        ("pr", node.project_id),
        ("pi", node.parent_id),
        ("q", node.prompt if node.prompt != node.name else ""),
        ("r", node.result),
        ("e", node.error),
        ("ir", node.interrupted_reason),
        ("x", node.executor),
        ("m", node.model),
    ):
        if value:
            detail[key] = value
    if node.auto_resumes:
        detail["ar"] = node.auto_resumes
    if node.parent_missing:
        detail["pm"] = 1
    if node.in_cycle:
        detail["cy"] = 1
    if node.turns:
        detail["tu"] = [
            [t.number, utc(t.at), [[a.kind, a.outcome, a.target, a.reason] for a in t.actions]]
            for t in node.turns
        ]
    if node.attempts:
        detail["at"] = [
            [a.attempt_no, a.kind, a.reason, a.checkpoint_round, utc(a.at), a.error, a.result]
            for a in node.attempts
        ]
    if node.spend.rows:
        s = node.spend  # no priced row: no dollar figure ("" - never "$0.00", WRK-8)
        detail["co"] = [usd(s.usd) if s.priced else "", s.tokens, s.rows, s.unpriced, s.estimated]
    if node.extras:
        detail["ex"] = [list(pair) for pair in node.extras]
    if node.pending:
        row["ap"] = node.pending
    if node.approvals:
        detail["ap"] = [
            [a.id, a.kind, a.what, a.status, a.answered_by, utc(a.asked_at), a.reason]
            for a in node.approvals
        ]
    if detail:
        row["x"] = detail
    return row


# ---- building -------------------------------------------------------------------------


def fleet_model(
    world: World,
    project: str | None = None,
    *,
    extras: Mapping[str, Mapping[str, object]] | None = None,
    title: str = "markertools fleet",
    approvals: Iterable[ApprovalRequest] = (),
) -> FleetModel:
    """The page model of `world`'s tasks (of `project` only, when given). `extras` adds
    fields per task id (e.g. a host lease a store keeps beside the task); fields a newer
    Task carries (`EXTRA_TASK_FIELDS`) are picked up by themselves. `approvals`: the
    approval requests of the store (`list_approvals`), shown with their tasks (Rule 6)."""
    every = {t.id: t for t in world.tasks}
    tasks = [t for t in world.tasks if project is None or t.project_id == project]
    generations = _generations(every)
    children = _direct_children(world.tasks)
    order = _preorder(tasks)
    index = {tid: n for n, (tid, _, _) in enumerate(order)}
    in_view = {t.id for t in tasks}
    turns = _turns(world.audit, in_view)
    attempts = _attempts(world.attempts, in_view)
    spends = _spends(world.costs, in_view)
    asked = _approvals(approvals, in_view)
    extra_rows = extras or {}
    subtree = _subtree_sizes(order)
    nodes: list[TaskNode] = []
    for n, (tid, depth, cycle) in enumerate(order):
        task = every[tid]
        parent_row = index.get(task.parent_task_id or "", -1) if depth > 0 else -1
        nodes.append(
            TaskNode(
                id=cut(task.id, ID_CHARS),
                project_id=cut(task.project_id, ID_CHARS),
                name=first_line(task.prompt, NAME_CHARS),
                status=task.status,
                creator=None if task.created_by is None else cut(task.created_by, ID_CHARS),
                parent_id=None
                if task.parent_task_id is None
                else cut(task.parent_task_id, ID_CHARS),
                parent=parent_row,
                depth=depth,
                generation=generations[tid],
                children=children.get(tid, 0),
                subtree=subtree[n],
                created_at=task.created_at,
                prompt=cut(task.prompt.strip(), PROMPT_CHARS),
                result=cut(task.result_text, RESULT_CHARS),
                error=cut(task.error_text, RESULT_CHARS),
                interrupted_reason=cut(task.interrupted_reason, REASON_CHARS),
                executor=cut(task.executor, ID_CHARS),
                model=cut(task.model, ID_CHARS),
                auto_resumes=task.auto_resume_count,
                parent_missing=task.parent_task_id is not None
                and task.parent_task_id not in in_view,
                in_cycle=cycle,
                turns=turns.get(tid, ()),
                attempts=attempts.get(tid, ()),
                spend=spends.get(tid, Spend()),
                extras=_extras(task, extra_rows.get(tid, {})),
                approvals=asked.get(tid, ((), 0))[0],
                pending=asked.get(tid, ((), 0))[1] if task.status == "running" else 0,
            )
        )
    statuses = tuple(
        [s for s in TASK_STATUSES if any(t.status == s for t in tasks)]
        + sorted({t.status for t in tasks} - set(TASK_STATUSES))
    )
    creators = tuple(sorted({cut(t.created_by, ID_CHARS) if t.created_by else "" for t in tasks}))
    summary = _summary(world, tasks, nodes, statuses, spends, in_view)
    return FleetModel(
        title=title,
        scope=_scope(world, project),
        now=world.now,
        as_of=_latest(world),
        nodes=tuple(nodes),
        summary=summary,
        statuses=statuses,
        creators=creators,
    )


def _scope(world: World, project: str | None) -> str:
    if project is None:
        count = len({t.project_id for t in world.tasks} | {p.id for p in world.projects})
        return f"every project ({count})"
    name = next((p.name for p in world.projects if p.id == project), "")
    shown = cut(project, ID_CHARS)
    return f"project {shown} ({cut(name, NAME_CHARS)})" if name else f"project {shown}"


def _generations(every: Mapping[str, Task]) -> dict[str, int]:
    """LIN-1 for every task (Rule 2): memoised parent walks, iterative."""
    known: dict[str, int] = {}
    for start in every:
        path: list[str] = []
        position: dict[str, int] = {}
        tid = start
        while True:
            if tid in known:
                base = known[tid]
                break
            if tid in position:  # a cycle: its members never reach a root
                for member in path[position[tid] :]:
                    known[member] = LINEAGE_MAX_STEPS
                path = path[: position[tid]]
                base = LINEAGE_MAX_STEPS
                break
            task = every[tid]
            if task.coordinator_part or task.parent_task_id is None:
                known[tid] = base = 0
                break
            if task.parent_task_id not in every:  # a missing parent row is a root
                known[tid] = base = 1
                break
            position[tid] = len(path)
            path.append(tid)
            tid = task.parent_task_id
        for member in reversed(path):
            base = min(base + 1, LINEAGE_MAX_STEPS)
            known[member] = base
    return known


def _direct_children(tasks: Iterable[Task]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for t in tasks:
        if t.parent_task_id is not None and not t.coordinator_part:
            counts[t.parent_task_id] += 1
    return counts


def _preorder(tasks: Sequence[Task]) -> list[tuple[str, int, bool]]:
    """(id, depth, in a cycle) in display order (Rule 1), iteratively."""
    ids = {t.id for t in tasks}
    kids: dict[str, list[Task]] = defaultdict(list)
    roots: list[Task] = []
    for t in tasks:
        if t.parent_task_id is not None and t.parent_task_id in ids and t.parent_task_id != t.id:
            kids[t.parent_task_id].append(t)
        else:
            roots.append(t)

    def key(t: Task) -> tuple[float, str]:
        return (t.created_at if math.isfinite(t.created_at) else 0.0, t.id)

    for group in kids.values():
        group.sort(key=key)
    out: list[tuple[str, int, bool]] = []
    seen: set[str] = set()

    def walk(root: Task, cycle: bool) -> None:
        stack = [(root, 0)]
        while stack:
            task, depth = stack.pop()
            if task.id in seen:
                continue
            seen.add(task.id)
            out.append((task.id, depth, cycle))
            stack.extend((child, depth + 1) for child in reversed(kids.get(task.id, [])))

    for root in sorted(roots, key=key):
        walk(root, root.parent_task_id == root.id)
    if len(seen) < len(ids):  # what is left hangs off parent cycles: break each at its smallest id
        by_id = {t.id: t for t in tasks}
        for tid in sorted(ids - seen):
            if tid in seen:
                continue
            # climb to the cycle this task hangs from, then start at its smallest member
            path: list[str] = []
            cur = tid
            while cur not in path:
                path.append(cur)
                cur = by_id[cur].parent_task_id or cur
            cycle_members = path[path.index(cur) :]
            walk(by_id[min(cycle_members)], True)
    return out


def _subtree_sizes(order: Sequence[tuple[str, int, bool]]) -> list[int]:
    """Rows of each node's subtree (pre-order: the rows after it with a greater depth)."""
    sizes = [1] * len(order)
    stack: list[int] = []
    for n, (_, depth, _) in enumerate(order):
        while stack and order[stack[-1]][1] >= depth:
            stack.pop()
        for parent in stack:
            sizes[parent] += 1
        stack.append(n)
    return sizes


def _turn_key(record: AuditRecord) -> object:
    for name in _TURN_ID_FIELDS:
        value = getattr(record, name, None)
        if value is not None:
            return value
    return None


def _turns(audit: Sequence[AuditRecord], in_view: set[str]) -> dict[str, tuple[TurnActions, ...]]:
    """Rule 4."""
    grouped: dict[str, list[list[AuditRecord]]] = defaultdict(list)
    for record in audit:
        if record.sender not in in_view:
            continue
        turns = grouped[record.sender]
        last = turns[-1][-1] if turns else None
        if last is None or _new_turn(last, record):
            turns.append([record])
        else:
            turns[-1].append(record)
    out: dict[str, tuple[TurnActions, ...]] = {}
    for sender, turns in grouped.items():
        out[sender] = tuple(
            TurnActions(
                number=n,
                at=records[0].time,
                actions=tuple(
                    Action(
                        kind=cut(r.kind, ID_CHARS),
                        outcome=cut(r.outcome, ID_CHARS),
                        target=cut(r.target, ID_CHARS),
                        reason=cut(r.reason, REASON_CHARS),
                        at=r.time,
                    )
                    for r in records
                ),
            )
            for n, records in enumerate(turns, start=1)
        )
    return out


def _new_turn(last: AuditRecord, record: AuditRecord) -> bool:
    key_last, key_now = _turn_key(last), _turn_key(record)
    if key_last is not None or key_now is not None:
        return bool(key_last != key_now)
    if last.kind == DISCARD_KIND or record.kind == DISCARD_KIND:
        return True
    if not (record.time - last.time <= TURN_GAP_SECONDS):  # NaN counts as a gap
        return True
    return _RANK.get(record.kind, len(_RANK)) < _RANK.get(last.kind, len(_RANK))


def _attempts(rows: Sequence[Attempt], in_view: set[str]) -> dict[str, tuple[AttemptRow, ...]]:
    grouped: dict[str, list[Attempt]] = defaultdict(list)
    for a in rows:
        if a.task_id in in_view:
            grouped[a.task_id].append(a)
    return {
        tid: tuple(
            AttemptRow(
                attempt_no=a.attempt_no,
                kind=cut(a.kind, ID_CHARS),
                reason=cut(a.interrupted_reason, REASON_CHARS),
                checkpoint_round=a.checkpoint_round,
                at=a.created_at,
                error=cut(a.error_text, RESULT_CHARS),
                result=cut(a.result_text, RESULT_CHARS),
            )
            for a in sorted(group, key=lambda a: a.attempt_no)
        )
        for tid, group in grouped.items()
    }


def _approvals(
    requests: Iterable[ApprovalRequest], in_view: set[str]
) -> dict[str, tuple[tuple[ApprovalRow, ...], int]]:
    """Rule 6: per task of the view, its requests newest first (at most APPROVALS_SHOWN)
    and how many are pending."""
    mine: dict[str, list[ApprovalRequest]] = defaultdict(list)
    for r in requests:
        if r.task_id in in_view:
            mine[r.task_id].append(r)
    found: dict[str, tuple[tuple[ApprovalRow, ...], int]] = {}
    for tid, rows in mine.items():
        rows.sort(key=lambda r: (r.asked_at, r.id), reverse=True)
        shown = tuple(
            ApprovalRow(
                id=cut(r.id, ID_CHARS),
                kind=cut(r.kind, ID_CHARS),
                what=cut(describe_request(r), EXTRA_CHARS),
                status=cut(r.status, ID_CHARS),
                answered_by=cut(r.answered_by, ID_CHARS),
                asked_at=r.asked_at,
                reason=cut(
                    " / ".join(x for x in (r.reason, r.answer_reason) if x and x.strip()),
                    REASON_CHARS,
                ),
            )
            for r in rows[:APPROVALS_SHOWN]
        )
        found[tid] = (shown, sum(1 for r in rows if r.status == "pending"))
    return found


def _dollars(amount: object) -> float | None:
    """An exact amount (CST-2: Decimal micro-dollars) as the float a page shows."""
    return None if amount is None else float(amount)  # type: ignore[arg-type]


def _spends(rows: Sequence[CostRow], in_view: set[str]) -> dict[str, Spend]:
    out: dict[str, Spend] = {}
    for c in rows:
        if c.task_id not in in_view:
            continue
        s = out.get(c.task_id, Spend())
        priced = c.usd is not None and math.isfinite(c.usd) and c.priced
        out[c.task_id] = Spend(
            usd=s.usd + (float(c.usd) if priced and c.usd is not None else 0.0),
            tokens=s.tokens + c.tokens,
            rows=s.rows + 1,
            unpriced=s.unpriced + (0 if priced else 1),
            estimated=s.estimated or c.estimated,
        )
    return out


def _extras(task: Task, more: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for name, label in EXTRA_TASK_FIELDS:
        value = more.get(name, getattr(task, name, None))
        seen.add(name)
        if value is None or value == "" or (name == "turn" and value == 0):
            continue  # turn 0: the task never started a turn (TOL-4), nothing to show
        shown: object = value
        if name in _TIME_EXTRAS and isinstance(value, int | float) and _is_number(value):
            shown = utc(float(value))
        out.append((label, cut(shown, EXTRA_CHARS)))
    for name in sorted(set(more) - seen):
        value = more[name]
        if value is not None and value != "":
            out.append((cut(name, ID_CHARS).replace("_", " "), cut(value, EXTRA_CHARS)))
    return tuple(out)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _summary(
    world: World,
    tasks: Sequence[Task],
    nodes: Sequence[TaskNode],
    statuses: Sequence[str],
    spends: Mapping[str, Spend],
    in_view: set[str],
) -> FleetSummary:
    per_status = tuple((s, sum(1 for t in tasks if t.status == s)) for s in statuses)
    quotas: dict[str, Quota] = {q.user: q for q in world.quotas}
    by_creator: dict[str | None, list[Task]] = defaultdict(list)
    for t in tasks:
        by_creator[t.created_by].append(t)
    per_creator: list[CreatorSpend] = []
    for creator, group in by_creator.items():
        spent = [spends[t.id] for t in group if t.id in spends]
        quota = quotas.get(creator) if creator is not None else None
        per_creator.append(
            CreatorSpend(
                creator=None if creator is None else cut(creator, ID_CHARS),
                tasks=len(group),
                usd=sum(s.usd for s in spent),
                tokens=sum(s.tokens for s in spent),
                unpriced=sum(s.unpriced for s in spent),
                quota_total=_dollars(quota.total_usd) if quota else None,
                quota_used=_dollars(quota.used_usd) if quota else None,
                has_quota=quota is not None,
                priced=sum(s.priced for s in spent),
            )
        )
    per_creator.sort(key=lambda c: (-c.usd, -c.tasks, c.creator or ""))
    actions = sum(len(turn.actions) for node in nodes for turn in node.turns)
    other = sum(1 for r in world.audit if r.sender not in in_view)
    return FleetSummary(
        tasks=len(tasks),
        per_status=per_status,
        per_creator=tuple(per_creator),
        usd=sum(c.usd for c in per_creator),
        tokens=sum(c.tokens for c in per_creator),
        max_generation=max((n.generation for n in nodes), default=0),
        max_children=max((n.children for n in nodes), default=0),
        at_generation_limit=sum(1 for n in nodes if n.generation >= MAX_GENERATION),
        at_children_cap=sum(1 for n in nodes if n.children >= MAX_DIRECT_CHILDREN),
        roots=sum(1 for n in nodes if n.depth == 0),
        actions=actions,
        other_senders=other,
        priced=sum(c.priced for c in per_creator),
        unpriced=sum(c.unpriced for c in per_creator),
        approvals_pending=sum(n.pending for n in nodes),
    )


def _latest(world: World) -> float:
    """Rule 5: the page's time - the world's clock, or the newest time a record carries
    (a task created, an audit record, an attempt, an automation's run) when later: a
    database loaded from a world file keeps the file's `now` while real activity goes
    on, and the page is never dated before what it shows."""
    times = [world.now]
    times += [t.created_at for t in world.tasks]
    times += [r.time for r in world.audit]
    times += [a.created_at for a in world.attempts]
    times += [a.created_at for a in world.automations]
    times += [a.last_run_at for a in world.automations if a.last_run_at is not None]
    return max((t for t in times if _is_number(t)), default=world.now)
