# Owns: the read-only questions a host asks a run between events: which roles to
# launch now (PLN-5, PLN-10), what to send for a launch (instruction plus the
# predecessors' accepted conclusions), which decisions and turns are overdue, and
# which roles need a fresh decision id to resume. Pure; never changes a state.
#
# Invariants:
#   Rule 1: `launchable` lists queued roles whose dependencies all completed, in
#           declaration order, never more than the free concurrency slots.
#   Rule 2: a launch payload exists only for a role whose turn is `starting`; its
#           inputs are the accepted conclusions of its dependencies (first turn only,
#           and again in the new thread of a role whose thread is gone, with a recap of
#           what the run knows of its earlier turns).
from __future__ import annotations

import attrs

from markertools.plans._machines import LIVE_ROLE_STATES
from markertools.plans._state import RunState


@attrs.frozen
class LaunchPayload:
    """Everything a host needs to start a role's turn."""

    role: str
    turn: int
    instruction: str
    inputs: tuple[tuple[str, str], ...]  # (dependency, its accepted conclusion)
    backend: str
    cwd: str
    sandbox: str
    model: str | None
    effort: str | None
    thread_id: str | None
    timeout_ms: int
    # when the role's thread is gone (`RoleRun.thread_gone`): what the run knows of its
    # earlier turns, for the new thread - ("first_instruction" | "last_reply", text)
    recap: tuple[tuple[str, str], ...] = ()


def live_turns(state: RunState) -> int:
    return sum(1 for r in state.roles if r.status in LIVE_ROLE_STATES)


def launchable(
    state: RunState, host_busy: int = 0, skip: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """Queued roles that may launch now. `host_busy`: live turns of OTHER runs on
    this host (maxConcurrent is host-wide, PLN-10); `skip`: roles the host can not
    launch now (their cwd is busy, DOT-6), left out before the free slots are counted."""
    if state.status != "running":
        return ()
    done = {r.name for r in state.roles if r.status == "completed"}
    free = state.max_concurrent - live_turns(state) - max(0, host_busy)
    ready: list[str] = []
    for role in state.roles:
        spec = state.proposal.role(role.name)
        if role.name in skip:
            continue
        if role.status == "queued" and spec is not None and set(spec.depends_on) <= done:
            ready.append(role.name)
    return tuple(ready[: max(0, free)])


def launch_payload(state: RunState, name: str) -> LaunchPayload | None:
    """What to send when `name` launches: its thread request and first instruction
    (predecessors' conclusions framed as data), or None unless the role is starting."""
    role = state.role(name)
    spec = state.proposal.role(name)
    if role is None or spec is None or role.status != "starting":
        return None
    conclusions = {r.name: r.conclusion for r in state.roles}
    fresh = role.turns == 1 or role.thread_gone  # a new thread has none of it yet
    inputs = tuple((d, conclusions[d] or "") for d in spec.depends_on) if fresh else ()
    recap: tuple[tuple[str, str], ...] = ()
    if role.thread_gone and role.turns > 1:
        recap = (("first_instruction", spec.instruction),)
        if role.last_reply:
            recap += (("last_reply", role.last_reply),)
    return LaunchPayload(
        role=name,
        turn=role.turns,
        instruction=role.inflight_instruction or "",
        inputs=inputs,
        backend=spec.backend,
        cwd=spec.cwd,
        sandbox=role.sandbox or spec.sandbox,
        model=role.model or spec.model,
        effort=role.effort or spec.effort,
        thread_id=None if role.thread_gone else role.thread_id or spec.existing_thread_id,
        timeout_ms=role.timeout_ms or state.proposal.timeout_ms,
        recap=recap,
    )


def due_decision_timeouts(state: RunState, now: float) -> tuple[tuple[str, str], ...]:
    """(role, decision id) of every decision whose timeout elapsed (the clock starts
    when the decision notice was delivered, so an offline host burns no reminders)."""
    if state.status != "running":
        return ()
    return tuple(
        (r.name, r.decision_id)
        for r in state.roles
        if r.status == "awaiting-decision"
        and r.decision_id is not None
        and r.decision_deadline is not None
        and now >= r.decision_deadline
    )


def overdue_turns(state: RunState, now: float) -> tuple[str, ...]:
    """Roles whose current turn has run longer than `timeoutMs` (the host interrupts
    them and reports the turn as ended with outcome `timed_out`)."""
    default = state.proposal.timeout_ms
    return tuple(
        r.name
        for r in state.roles
        if r.status in ("starting", "running")
        and r.turn_started_at is not None
        and now - r.turn_started_at >= (r.timeout_ms or default) / 1000.0
    )


def decision_ids_needed(state: RunState) -> tuple[str, ...]:
    """The roles a Resume must carry a fresh decision id for."""
    return tuple(r.name for r in state.roles if r.status == "paused")
