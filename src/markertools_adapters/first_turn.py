# Owns: the worker-side glue of a claim (docs/rules.md INJ, ATT, FLT-2): what the agent reads
# first on a claim (`claim_inputs`: pending turns completed first, then the input), gather
# the first-turn injection inputs through the ports and assemble the prompt (`first_turn_prompt`), requeue a
# platform-interrupted task through the attempts ledger without ever raising
# (`platform_requeue`), and the permission-checked attempts timeline (`attempt_timeline`).
# Only calls ports and pure functions; writes nothing except through `platform_requeue`.
#
# Invariants:
#   Rule 1 (INJ-3/4): a lookup that raises becomes `LookupFailed` and drops only its own
#           section; first_turn_prompt itself never raises for a failing port (a failing
#           random source, needed for framing, leaves the prompt and goal unchanged).
#   Rule 2 (INJ-1, INJ-5): no lookup at all for non-fresh starts and coordinator tasks;
#           none either for a start that is not a StartKind (INJ-1: ValueError first).
#   Rule 3 (INJ-1): nothing is written back: the caller keeps the returned texts in memory.
#   Rule 4 (ATT-2): platform_requeue returns failures as RequeueResult(ok=False), never
#           raises, so a resume loop is never broken by the ledger.
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from markertools import (
    DEFAULT_DELIVERY_DEADLINE,
    FRESH_STARTS,
    INJECTED_TODOS,
    NO_CHECKPOINT,
    UNFINISHED_TODO_STATUSES,
    ApprovalRequest,
    ApprovalStore,
    Attempt,
    AttemptLedger,
    Claim,
    Denied,
    FirstTurnPrompt,
    InjectionInputs,
    InvalidType,
    LookupFailed,
    PermissionAnswer,
    PermissionLookup,
    Ports,
    Project,
    ProjectLookup,
    RandomSource,
    RequeueResult,
    StartKind,
    Task,
    TaskStore,
    TodoListing,
    TodoStore,
    assemble_first_turn,
    is_goal_task,
    msg,
    recover_pending_turns,
    start_kind_of,
    summarize_error,
    timeline_decision,
    unanswered_at_requeue,
)


def gather_injection_inputs(
    task: Task,
    start: StartKind | str,
    *,
    projects: ProjectLookup,
    todos: TodoStore,
    attempts: AttemptLedger,
    memory: Sequence[str] = (),
    memory_trusted: bool = False,
    approvals: ApprovalStore | None = None,
) -> InjectionInputs:
    """Fetch what `assemble_first_turn` needs for `task`, catching each lookup's failure.
    `memory` snippets are framed as data unless `memory_trusted` (see InjectionInputs).
    `start` is a StartKind (a `Claim`'s `start`) or its exact string; anything else raises
    ValueError naming the allowed values before any lookup (INJ-1). With `approvals`
    (APR-5), the requests the last requeue expired unanswered are fetched for the resume
    preamble (a failing lookup leaves them out)."""
    start = start_kind_of(start)
    snippets = tuple(memory)
    if start not in FRESH_STARTS or task.is_coordinator:
        return InjectionInputs(
            task=task, start=start, memory=snippets, memory_trusted=memory_trusted
        )
    project: Project | LookupFailed | None
    try:
        project = projects.get_project(task.project_id)
    except Exception as exc:
        project = LookupFailed(summarize_error(exc))
    goal_task = is_goal_task(task)
    listing: TodoListing | LookupFailed | None = None
    if not goal_task:
        try:
            listing = todos.list_todos(
                task.project_id, statuses=UNFINISHED_TODO_STATUSES, q=None, limit=INJECTED_TODOS
            )
        except Exception as exc:
            listing = LookupFailed(summarize_error(exc))
    attempt: Attempt | None = None
    if not goal_task and start in (StartKind.FRESH, StartKind.RESUME):
        try:
            attempt = attempts.latest_attempt(task.id)
        except Exception:  # ATT-3 promises no raise; a broken adapter still must not
            attempt = None
    unanswered: tuple[ApprovalRequest, ...] = ()
    if attempt is not None and approvals is not None:
        try:
            expired = approvals.list_approvals(
                task.project_id, statuses=("expired",), task_id=task.id
            )
            unanswered = unanswered_at_requeue(expired, attempt)
        except Exception:  # Rule 1: a failing lookup drops only its own part
            unanswered = ()
    return InjectionInputs(
        task=task,
        start=start,
        project=project,
        todos=listing,
        memory=snippets,
        attempt=attempt,
        memory_trusted=memory_trusted,
        unanswered=unanswered,
    )


def claim_inputs(
    claim: Claim,
    store: Any,
    *,
    locale: str = "en",
    deadline: float | None = DEFAULT_DELIVERY_DEADLINE,
    cancel: object = None,
) -> tuple[str, ...]:
    """What the agent reads first on `claim` (INJ-1, FLT-2), in one call per claim:

    1. the turns an earlier attempt left half-delivered are completed first
       (`recover_pending_turns`, fenced by the claim) - their reports were queued;
    2. a continuation's input is its follow-ups (the claim's, then those reports);
    3. any other start gets the first-turn prompt (`first_turn_prompt`), whose resume
       preamble shows the recovered reports - they are taken from the queue here, so
       the agent never reads them twice.

    `store` is a connected store (`store.ports`, `take_followups`). Raises LeaseLost
    when the claim was lost meanwhile (stand down), ValueError for a store that cannot
    fence."""
    ports = store.ports
    done = recover_pending_turns(claim, ports=ports, deadline=deadline, cancel=cancel)
    recovered = tuple(r.report.message for r in done if r.report is not None and r.report.message)
    later: tuple[str, ...] = ()
    if recovered:
        later = tuple(store.take_followups(claim.task.id, claim=claim))
    if claim.start is StartKind.CONTINUATION:
        return (*claim.followups, *later)
    rest = tuple(text for text in later if text not in recovered)
    task = store.get_task(claim.task.id) or claim.task
    prompt = first_turn_prompt(task, claim.start, ports, locale=locale, recovered=recovered)
    return (prompt.prompt, *rest)


def first_turn_prompt(
    task: Task,
    start: StartKind | str,
    ports: Ports | None = None,
    *,
    projects: ProjectLookup | None = None,
    todos: TodoStore | None = None,
    attempts: AttemptLedger | None = None,
    random: RandomSource | None = None,
    memory: Sequence[str] = (),
    locale: str = "en",
    memory_trusted: bool = False,
    recovered: Sequence[str] = (),
    approvals: ApprovalStore | None = None,
) -> FirstTurnPrompt:
    """The prompt (and goal) to run `task` with on this claim (INJ-1..5, ATT-4).

    The lookups come from `ports` (a connected store's `store.ports`), or each from its
    own keyword (`projects`, `todos`, `attempts`, `random`), which wins over `ports`;
    one missing from both is a TypeError naming it. `memory` snippets (agent memories,
    usually written by a model) are framed as data (INJ-7); pass `memory_trusted=True`
    only when you vouch for every snippet - they are then pasted verbatim. Never raises
    for a failing port (Rule 1); an unknown `start` is a caller error (ValueError naming
    the allowed values, INJ-1). `recovered` (FLT-2): the messages of the reports
    `recover_pending_turns` produced for this claim - the preamble shows them.
    `approvals` (APR-5; else `ports.approvals` when `ports` has one): where the requests
    that the last requeue expired unanswered are read - the preamble names them."""
    projects = projects if projects is not None else _from(ports, "projects")
    todos = todos if todos is not None else _from(ports, "todos")
    attempts = attempts if attempts is not None else _from(ports, "attempts")
    random = random if random is not None else _from(ports, "random")
    if approvals is None and ports is not None:
        approvals = ports.approvals
    inputs = gather_injection_inputs(
        task,
        start,
        projects=projects,
        todos=todos,
        attempts=attempts,
        memory=memory,
        memory_trusted=memory_trusted,
        approvals=approvals,
    )
    if recovered:
        inputs = attrs.evolve(inputs, recovered=tuple(recovered))
    try:
        return assemble_first_turn(inputs, random, locale)
    except Exception as exc:  # Rule 1: e.g. the random source (framing nonces) failed
        note = msg("inject.note_assembly_failed", error=summarize_error(exc))
        return FirstTurnPrompt(task.prompt, task.goal, (), (note,))


def _from(ports: Ports | None, name: str) -> Any:
    if ports is None:
        raise InvalidType(f"first_turn_prompt needs ports= or {name}=")
    return getattr(ports, name)


def platform_requeue(
    ledger: AttemptLedger,
    task: Task,
    now: float,
    *,
    checkpoint_round: int | None = None,
) -> RequeueResult:
    """ATT-2: requeue `task` after a platform interruption, recording the ending attempt.

    The kind follows the task: goal tasks record `goal_breakpoint` with the highest stored
    checkpoint round (`checkpoint_round`, -1 when unknown), other tasks `platform_fresh`
    with -1. Compare-and-set on the status in `task`. Never raises."""
    goal = is_goal_task(task)
    kind = "goal_breakpoint" if goal else "platform_fresh"
    rnd = checkpoint_round if goal and checkpoint_round is not None else NO_CHECKPOINT
    try:
        return ledger.requeue_platform(task.id, task.status, kind, rnd, now)
    except Exception as exc:
        return RequeueResult(ok=False, error=summarize_error(exc))


def attempt_timeline(
    user: str | None,
    task_id: str,
    *,
    tasks: TaskStore,
    attempts: AttemptLedger,
    permissions: PermissionLookup,
) -> tuple[Attempt, ...] | Denied:
    """ATT-5: the task's attempts in order, when `user` may `read` the task's project."""
    task = tasks.get_task(task_id)
    answer: PermissionAnswer | None = None
    if task is not None:
        try:
            answer = PermissionAnswer.of(
                "read", permissions.has_permission(user, task.project_id, "read") is True
            )
        except Exception as exc:
            answer = PermissionAnswer.failure("read", summarize_error(exc))
    decision = timeline_decision(task, answer)
    if isinstance(decision, Denied):
        return decision
    return attempts.list_attempts(task_id)
