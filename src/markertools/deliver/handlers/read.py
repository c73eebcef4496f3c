# Owns: delivery handlers of the read kinds: task-poll and wait-threads (POL-1..4,
# WAI-1..5, looping on the clock port), task-list (TLS-1/2), task-cost (CST-1/2) and
# quota-status (QUO-1/2). Gathers facts through the TurnContext, decides with `gates`,
# renders with `snapshot`; never changes any state.
#
# Invariants:
#   Rule 1: every round of a poll or a wait is ONE store read (`get_tasks`) holding all
#           remaining targets AND the sender, so a cancelled sender is seen at once
#           (WAI-4, WAI-5, TRN-5); time and sleeping come only from the clock port (or the
#           optional change waiter), so nothing here ever blocks on the real clock.
#   Rule 2: the loop always ends: at the timeout, when every target is terminal, when the
#           sender is cancelled, or after a bounded number of rounds (a defence against a
#           clock that never lets time pass). A change waiter gets a budget of rounds;
#           past it the loop sleeps on the clock, so early wake-ups (a target changing
#           status many times, or a waiter that returns at once) never end a poll or a
#           wait before its timeout (WAI-4).
#   Rule 3: every text another task wrote reaches the report only inside data framing.
#   Rule 4 (APR-4): a round that sees a running target also reads the pending approval
#           requests of the running targets (one more read, of the approvals port); the
#           snapshots list them, and a poll or wait ends early once a target has one the
#           sender may answer (it is in the sender's lineage below it, same creator).
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Final

import attrs

from markertools.deliver.context import (
    Handler,
    HandlerTable,
    TurnContext,
    handler_table,
    summarize_error,
)
from markertools.deliver.gates import cost_gate, permission_gate, quota_user, read_target_gate
from markertools.deliver.render import shown
from markertools.deliver.report import ReportEntry
from markertools.deliver.snapshot import SnapshotState, join_sections, snapshot
from markertools.domain.approvals import ApprovalRequest
from markertools.domain.decision import Denied, PermissionAnswer
from markertools.domain.model import CostRow, Task, is_terminal, same_creator
from markertools.domain.money import usd_text
from markertools.inject.framing import frame_data
from markertools.parse.params import (
    QuotaStatusParams,
    TaskCostParams,
    TaskListParams,
    TaskPollParams,
    WaitThreadsParams,
)
from markertools.parse.plan import Command
from markertools.text.msg import Msg, msg

PROMPT_PREVIEW_CHARS = 80


# ---- the watch loop (poll and wait) ----------------------------------------------------


@attrs.define
class _Watch:
    last: dict[str, Task]
    vanished: set[str] = attrs.Factory(set)
    waited: float = 0.0
    # APR-4: each target's pending approval requests as last read, whether the sender may
    # answer a target's requests (read once per target), and whether the watch ended
    # early because one it may answer is pending
    approvals: dict[str, tuple[ApprovalRequest, ...]] = attrs.Factory(dict)
    answerable: dict[str, bool] = attrs.Factory(dict)
    for_approval: bool = False


def may_answer(ctx: TurnContext, state: _Watch, target: Task) -> bool:
    """APR-3/4: the sender may answer `target`'s requests (LIN-4 below it, DOM-3)."""
    known = state.answerable.get(target.id)
    if known is None:
        known = same_creator(ctx.sender, target) and ctx.target_in_lineage(target)
        state.answerable[target.id] = known
    return known


def read_approvals(ctx: TurnContext, state: _Watch, ids: Sequence[str]) -> bool:
    """Rule 4: refresh the pending requests of the running targets among `ids` (one read,
    none when no target runs or the ports have no approvals store); True when one of
    them is a request the sender may answer."""
    store = ctx.ports.approvals
    running = [i for i in ids if i in state.last and state.last[i].status == "running"]
    found: Mapping[str, tuple[ApprovalRequest, ...]] = {}
    if store is not None and running:
        found = store.pending_approvals(running)
    answerable = False
    for task_id in ids:
        requests = tuple(found.get(task_id, ())) if task_id in running else ()
        if requests:
            state.approvals[task_id] = requests
            answerable = may_answer(ctx, state, state.last[task_id]) or answerable
        else:
            state.approvals.pop(task_id, None)
    return answerable


def read_round(ctx: TurnContext, ids: Sequence[str]) -> Mapping[str, Task]:
    """ONE store call for the targets and the sender (WAI-4, WAI-5)."""
    wanted = list(dict.fromkeys([*ids, ctx.sender.id]))
    rows = ctx.ports.tasks.get_tasks(wanted)
    ctx.observe_sender(rows.get(ctx.sender.id))
    return rows


def round_bound(interval: float, timeout: float, targets: int) -> int:
    """Rule 2: the rounds a change waiter may use (generous for early wake-ups)."""
    return (math.ceil(timeout / max(interval, 1)) + 1) * 4 + 8 * max(targets, 1)


def hard_round_bound(interval: float, timeout: float, targets: int) -> int:
    """Rule 2: the waiter's budget plus every round of clock sleeps until the timeout."""
    return round_bound(interval, timeout, targets) + math.ceil(timeout / max(interval, 1)) + 2


def watch(
    ctx: TurnContext, first: Mapping[str, Task], interval: float, timeout: float, start: float
) -> _Watch:
    """POL-3 / WAI-4: re-read the non-terminal targets every `interval` until all are
    terminal, `timeout` seconds after `start` passed, or the sender is cancelled."""
    state = _Watch(dict(first))
    pending = [i for i, t in first.items() if not is_terminal(t.status)]
    if read_approvals(ctx, state, pending):  # Rule 4: the sender can answer at once
        state.for_approval = True
        pending = []
    rounds = 0
    budget = round_bound(interval, timeout, len(first))
    limit = hard_round_bound(interval, timeout, len(first))
    while pending and not ctx.cancelled and rounds < limit:
        if ctx.stop_waiting():  # TRN-11: the delivery's deadline or cancellation
            break
        now = ctx.now()
        remaining = start + timeout - now
        if remaining <= 0:
            break
        pause = min(float(interval), remaining)
        if ctx.deadline_at is not None:
            pause = max(0.0, min(pause, ctx.deadline_at - now))
        waiter = ctx.ports.waiter
        if waiter is not None and rounds < budget:
            # the sender too: a cancelled sender ends the wait at once (WAI-5, TRN-5)
            waiter.wait_for_change((*pending, ctx.sender.id), pause)
        else:
            ctx.ports.clock.sleep(pause)
        rows = read_round(ctx, pending)
        rounds += 1
        for task_id in pending:
            row = rows.get(task_id)
            if row is None:
                state.vanished.add(task_id)
            else:
                state.last[task_id] = row
        pending = [
            i for i in pending if i not in state.vanished and not is_terminal(state.last[i].status)
        ]
        if read_approvals(ctx, state, pending):  # Rule 4
            state.for_approval = True
            break
    state.waited = max(0.0, ctx.now() - start)
    return state


def final_state(ctx: TurnContext, task: Task, watched: _Watch, timeout: float) -> SnapshotState:
    if task.id in watched.vanished:
        return "vanished"
    if is_terminal(task.status):
        return "finished"
    if ctx.cancelled:
        return "sender_cancelled"
    if watched.for_approval:  # Rule 4
        mine = watched.approvals.get(task.id) and watched.answerable.get(task.id)
        return "approval" if mine else "ended_early"
    if ctx.stopped and timeout > 0 and watched.waited < timeout:
        # TRN-11: cut short by the delivery's deadline or its cancellation; the agent
        # can poll again next turn. A same-turn call's deadline is its own limit (TOL-6):
        # what it may do next is the tool server's to say.
        if ctx.stop_cause != "deadline":
            return "stopped"
        return "call_limit" if ctx.facts.source == "tool" else "deadline"
    return "now" if timeout <= 0 else "timed_out"


# ---- task-poll ---------------------------------------------------------------------------


def handle_poll(cmd: Command, p: TaskPollParams, ctx: TurnContext) -> ReportEntry:
    resolved = ctx.resolve_task_id(p.task_id)
    if isinstance(resolved, Msg):
        return ctx.rejected(cmd, shown(p.task_id), resolved)
    granted = permission_gate(ctx.permission("read"), ctx.sender, "read")
    if isinstance(granted, Denied):
        return ctx.rejected(cmd, shown(resolved), granted.reason)
    start = ctx.now() - ctx.waited  # TOL-11: a call's wait before its delivery counts
    rows = read_round(ctx, [resolved])
    target = rows.get(resolved)
    decision = read_target_gate(ctx.sender, target, resolved, "poll")
    if isinstance(decision, Denied):
        return ctx.rejected(cmd, shown(resolved), decision.reason)
    assert target is not None  # the gate denies a missing target
    watched = watch(ctx, {resolved: target}, p.interval_seconds, p.timeout_seconds, start)
    last = watched.last[resolved]
    state = final_state(ctx, last, watched, p.timeout_seconds)
    snap = snapshot(
        last,
        chars=p.chars,
        state=state,
        waited=watched.waited,
        random=ctx.ports.random,
        locale=ctx.locale,
        deadline=ctx.deadline_seconds,
        approvals=watched.approvals.get(resolved, ()),
        may_answer=watched.answerable.get(resolved, False),
        now=ctx.now(),
    )
    return ctx.done(cmd, shown(resolved), snap)


# ---- wait-threads ------------------------------------------------------------------------


def handle_wait(cmd: Command, p: WaitThreadsParams, ctx: TurnContext) -> ReportEntry:
    ids: list[str] = []
    for raw in p.task_ids:
        resolved = ctx.resolve_task_id(raw)
        if isinstance(resolved, Msg):  # VAL-8: an unresolved reference rejects the block
            return ctx.rejected(cmd, shown(raw), resolved)
        if resolved not in ids:
            ids.append(resolved)
    target_text = shown(", ".join(ids), 400)
    granted = permission_gate(ctx.permission("read"), ctx.sender, "read")
    if isinstance(granted, Denied):
        return ctx.rejected(cmd, target_text, granted.reason)
    start = ctx.now() - ctx.waited  # TOL-11: a call's wait before its delivery counts
    rows = read_round(ctx, [i for i in ids if i != ctx.sender.id])
    settled: dict[str, Msg] = {}
    first: dict[str, Task] = {}
    for task_id in ids:
        target = rows.get(task_id) if task_id != ctx.sender.id else ctx.sender
        decision = read_target_gate(ctx.sender, target, task_id, "wait")
        if isinstance(decision, Denied):
            settled[task_id] = decision.reason
        else:
            assert target is not None  # the gate denies a missing target
            first[task_id] = target
    # WAI-2: the parse layer names dropped targets in the command's notes (appended to the
    # entry by delivery); a plan built without notes gets them named here instead.
    dropped = () if cmd.notes else tuple(shown(d) or "" for d in p.dropped_task_ids)
    if not first:
        sections = [msg("read.wait_settled", id=shown(i), reason=settled[i]) for i in ids]
        if dropped:
            sections.append(msg("read.wait_dropped", ids=dropped))
        return ctx.rejected(
            cmd, target_text, msg("read.wait_none_valid", details=join_sections(sections))
        )
    watched = watch(ctx, first, p.interval_seconds, p.timeout_seconds, start)
    sections = []
    finished = 0
    for task_id in ids:
        if task_id in settled:
            sections.append(msg("read.wait_settled", id=shown(task_id), reason=settled[task_id]))
            continue
        last = watched.last[task_id]
        state = final_state(ctx, last, watched, p.timeout_seconds)
        finished += state == "finished"
        sections.append(
            snapshot(
                last,
                chars=p.chars,
                state=state,
                waited=watched.waited,
                random=ctx.ports.random,
                locale=ctx.locale,
                deadline=ctx.deadline_seconds,
                approvals=watched.approvals.get(task_id, ()),
                may_answer=watched.answerable.get(task_id, False),
                now=ctx.now(),
            )
        )
    if dropped:
        sections.append(msg("read.wait_dropped", ids=dropped))
    header = msg(
        "read.wait_header",
        waited=len(first),
        finished=finished,
        open=len(first) - finished,
        settled=len(settled),
        seconds=round(watched.waited, 3),
    )
    return ctx.done(cmd, target_text, join_sections([header, *sections]))


# ---- task-list ---------------------------------------------------------------------------


def handle_list(cmd: Command, p: TaskListParams, ctx: TurnContext) -> ReportEntry:
    granted = permission_gate(ctx.permission("read"), ctx.sender, "read")
    if isinstance(granted, Denied):
        return ctx.rejected(cmd, None, granted.reason)
    listing = ctx.ports.tasks.list_tasks(
        ctx.sender.project_id, status=p.status, q=p.q, limit=p.limit
    )
    ctx.remember_listing(listing)
    rows = listing.rows[: p.limit]
    filters = msg(
        "read.list_filters",
        status=p.status if p.status is not None else msg("read.list_all_statuses"),
        q=shown(p.q, 200) if p.q is not None else msg("common.none"),
    )
    if listing.total == 0:
        return ctx.done(cmd, None, msg("read.list_empty", filters=filters))
    counts = tuple(msg("read.list_count", status=s, n=n) for s, n in listing.counts)
    lines = "\n".join(f"{shown(t.id)}  {t.status}  {prompt_preview(t.prompt)}" for t in rows)
    framed = frame_data(lines, msg("read.list_label"), ctx.ports.random, ctx.locale).text
    more = max(listing.total - len(rows), 0)
    parts = [
        msg(
            "read.list_header", total=listing.total, filters=filters, counts=counts, shown=len(rows)
        ),
        msg("read.list_rows", framed=framed),
    ]
    if more:
        parts.append(msg("read.list_more", n=more))
    return ctx.done(cmd, None, join_sections(parts, "\n"))


def prompt_preview(prompt: str) -> str:
    flat = " ".join(prompt.split())
    return flat if len(flat) <= PROMPT_PREVIEW_CHARS else flat[: PROMPT_PREVIEW_CHARS - 1] + "…"


# ---- task-cost ---------------------------------------------------------------------------


@attrs.frozen
class CostSummary:
    """CST-2 over a task's cost rows."""

    usd: Decimal
    priced_rows: int
    actual_tokens: int
    estimated_tokens: int
    rounds: int
    unpriced_actual_tokens: int


def is_priced(row: CostRow) -> bool:
    """A row counts toward dollars only when it is priced AND carries a dollar amount."""
    return row.priced and row.usd is not None


def summarize_costs(rows: Sequence[CostRow]) -> CostSummary:
    priced = [r for r in rows if is_priced(r)]
    return CostSummary(
        usd=sum((r.usd for r in priced if r.usd is not None), Decimal(0)),
        priced_rows=len(priced),
        actual_tokens=sum(r.tokens for r in rows if not r.estimated),
        estimated_tokens=sum(r.tokens for r in rows if r.estimated),
        rounds=len({r.round for r in rows}),
        unpriced_actual_tokens=sum(r.tokens for r in rows if not r.estimated and not is_priced(r)),
    )


def usd(value: Decimal) -> str:
    return usd_text(value)


def handle_cost(cmd: Command, p: TaskCostParams, ctx: TurnContext) -> ReportEntry:
    resolved = ctx.resolve_task_id(p.task_id)
    if isinstance(resolved, Msg):
        return ctx.rejected(cmd, shown(p.task_id), resolved)
    permission = ctx.permission("read")
    granted = permission_gate(permission, ctx.sender, "read")
    if isinstance(granted, Denied):
        return ctx.rejected(cmd, shown(resolved), granted.reason)
    target = ctx.ports.tasks.get_task(resolved)
    decision = cost_gate(
        ctx.sender,
        target,
        target_id=resolved,
        in_lineage=ctx.target_in_lineage(target),
        permission=permission,
    )
    if isinstance(decision, Denied):
        return ctx.rejected(cmd, shown(resolved), decision.reason)
    s = summarize_costs(ctx.ports.costs.task_costs(resolved))
    dollars = (
        msg("read.cost_usd", usd=usd(s.usd), rows=s.priced_rows)
        if s.priced_rows
        else msg("read.cost_no_priced")
    )
    parts = [
        msg(
            "read.cost",
            id=shown(resolved),
            dollars=dollars,
            actual=s.actual_tokens,
            estimated=s.estimated_tokens,
            rounds=s.rounds,
        )
    ]
    if s.unpriced_actual_tokens:
        parts.append(msg("read.cost_unpriced", tokens=s.unpriced_actual_tokens))
    return ctx.done(cmd, shown(resolved), join_sections(parts, "\n"))


# ---- quota-status ------------------------------------------------------------------------


def _read_answer(ctx: TurnContext, reader: Task) -> PermissionAnswer:
    """`read` for `reader.created_by` on the sender's project (the turn's cached answer
    when that is the sender's creator); a lookup that raises is a failed answer."""
    if reader.created_by == ctx.sender.created_by:
        return ctx.permission("read")
    try:
        granted = ctx.ports.permissions.has_permission(
            reader.created_by, ctx.sender.project_id, "read"
        )
        return PermissionAnswer.of("read", granted is True)
    except Exception as exc:
        return PermissionAnswer.failure("read", summarize_error(exc))


def handle_quota(cmd: Command, p: QuotaStatusParams, ctx: TurnContext) -> ReportEntry:
    parent = None
    if ctx.sender.created_by is None and ctx.sender.parent_task_id is not None:
        parent = ctx.ports.tasks.get_task(ctx.sender.parent_task_id)
    user = quota_user(ctx.sender, parent)
    if user is None:
        return ctx.rejected(cmd, None, msg("read.quota_no_user"))
    # QUO-1: `read` is checked for the user whose quota is shown - the sender's creator,
    # or (fallback) the parent's creator on the sender's project; a null creator holds
    # nothing, so checking it would make the fallback unreachable.
    reader = (
        ctx.sender
        if ctx.sender.created_by is not None
        else attrs.evolve(ctx.sender, created_by=user)
    )
    granted = permission_gate(_read_answer(ctx, reader), reader, "read")
    if isinstance(granted, Denied):
        return ctx.rejected(cmd, None, granted.reason)
    quota = ctx.ports.costs.get_quota(user)
    unpriced = ctx.ports.costs.unpriced_tokens(user)
    if quota is None:
        body = msg("read.quota_no_record", user=shown(user), unpriced=unpriced)
    elif quota.total_usd is None:
        body = msg(
            "read.quota_unlimited", user=shown(user), used=usd(quota.used_usd), unpriced=unpriced
        )
    else:
        body = msg(
            "read.quota",
            user=shown(user),
            total=usd(quota.total_usd),
            used=usd(quota.used_usd),
            remaining=usd(max(quota.total_usd - quota.used_usd, Decimal(0))),
            unpriced=unpriced,
        )
    parts = [body]
    if p.ignored_fields and not cmd.notes:  # QUO-1 (the parse notes say it otherwise)
        fields = tuple(shown(f, 60) or "" for f in p.ignored_fields)
        parts.append(msg("read.quota_ignored_fields", fields=fields))
    return ctx.done(cmd, None, join_sections(parts, "\n"))


HANDLERS: Final[HandlerTable] = handler_table(
    Handler(TaskPollParams, handle_poll),
    Handler(WaitThreadsParams, handle_wait),
    Handler(TaskListParams, handle_list),
    Handler(TaskCostParams, handle_cost),
    Handler(QuotaStatusParams, handle_quota),
)
