# Owns: the domain records (docs/rules.md DOM) as frozen attrs values, and the small pure
# predicates that classify them (terminal status, goal / coordinator task,
# same creator). Never does I/O; never holds behaviour beyond those predicates.
#
# Invariants:
#   Rule 1: every record is frozen; changes are made with attrs.evolve.
#   Rule 2: field names and defaults match the world file in docs/cli.md, so the world
#           file (de)serialises with a plain cattrs converter; additions are additive.
#   Rule 3: times are epoch seconds (float, UTC) (DOM-5).
#   Rule 4: money is a Decimal of whole micro-dollars (markertools.domain.money), never a
#           float: a CostRow / Quota converts what it is given at construction and refuses
#           a negative amount (ValueError), so 0.1 + 0.1 is 0.2 in every store.
from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from enum import StrEnum
from typing import Final, Literal

import attrs

from markertools._root import InvalidArgument, InvalidType
from markertools.domain.money import money, optional_money

TaskStatusName = Literal[
    "queued", "running", "completed", "failed", "interrupted", "merged", "merge-failed"
]
TASK_STATUSES: Final[tuple[TaskStatusName, ...]] = (
    "queued",
    "running",
    "completed",
    "failed",
    "interrupted",
    "merged",
    "merge-failed",
)
ACTIVE_STATUSES: Final[frozenset[str]] = frozenset({"queued", "running"})
TERMINAL_STATUSES: Final[frozenset[str]] = frozenset(TASK_STATUSES) - ACTIVE_STATUSES
RETRYABLE_STATUSES: Final[frozenset[str]] = frozenset({"failed", "interrupted", "merge-failed"})

Executor = Literal["local", "docker", "cloud"]
EXECUTORS: Final[tuple[Executor, ...]] = ("local", "docker", "cloud")
Effort = Literal["low", "medium", "high", "xhigh", "max"]
EFFORTS: Final[tuple[Effort, ...]] = ("low", "medium", "high", "xhigh", "max")

TodoStatus = Literal["pending", "in_progress", "blocked", "completed"]
TODO_STATUSES: Final[tuple[TodoStatus, ...]] = ("pending", "in_progress", "blocked", "completed")
UNFINISHED_TODO_STATUSES: Final[frozenset[str]] = frozenset({"pending", "in_progress", "blocked"})
TodoPriority = Literal["low", "medium", "high"]
TODO_PRIORITIES: Final[tuple[TodoPriority, ...]] = ("low", "medium", "high")

Permission = Literal["read", "create_task", "approve_merge"]
PERMISSIONS: Final[tuple[Permission, ...]] = ("read", "create_task", "approve_merge")

AttemptKind = Literal["goal_breakpoint", "platform_fresh"]

# ENG-1: the coding agents a task can run on (a task's own `engine`, else the host's)
Engine = Literal["codex", "claude-code"]
ENGINES: Final[tuple[Engine, ...]] = ("codex", "claude-code")


class TaskStatus(StrEnum):
    """DOM-1: a task's status; equal to its string (stores refuse anything else)."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    MERGED = "merged"
    MERGE_FAILED = "merge-failed"


class TurnOutcome(StrEnum):
    """How a turn ended (TRN-3): only `completed` delivers. Equal to its string."""

    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    QUOTA_INTERRUPTED = "quota_interrupted"
    INTERRUPTED = "interrupted"
    UNFINISHED = "unfinished"  # a Codex turn still in progress when read
    INCOMPLETE = "incomplete"  # a Codex turn whose text may be missing a message


# TRN-9: the status a finished turn leaves its (running) task in, by how the turn ended
FINISHED_STATUS: Final[dict[str, TaskStatusName]] = {
    "completed": "completed",
    "failed": "failed",
    "timed_out": "failed",
    "unfinished": "failed",
    "incomplete": "failed",
    "cancelled": "interrupted",
    "interrupted": "interrupted",
    "quota_interrupted": "interrupted",
}


def finished_status(outcome: object, *, requeue: bool) -> TaskStatusName:
    """TRN-9: `queued` when the task runs again (`requeue`), else the status its turn's
    outcome means (FINISHED_STATUS). An outcome outside TurnOutcome is a ValueError
    naming the allowed values (TRN-10)."""
    name = checked_value(TurnOutcome, outcome, "outcome")
    return "queued" if requeue else FINISHED_STATUS[name]


class AutomationBind(StrEnum):
    """AUT-1: what an automation is bound to (None: nothing, a plain recurring task)."""

    CRON = "cron"
    HEARTBEAT = "heartbeat"


class StartKind(StrEnum):
    """INJ-1, INJ-1: what kind of start a claim is, which decides what the agent is told
    before the task's prompt. Equal to its string; `start_kind_of` refuses anything else.

    FRESH: the first claim, from the original prompt (injection). RETRY: the claim after a
    task-retry or another manual retry (injection, never a resume preamble). RESUME: the
    claim after a platform requeue (ATT-2) from the original prompt (injection and the
    resume preamble). CONTINUATION: the task's queued follow-ups are its next input (no
    injection). CHECKPOINT: a goal task resumed from its checkpoint (no injection).
    MANUAL: a person resumed the session by hand (no injection; never decided by a claim).
    """

    FRESH = "fresh"
    RETRY = "retry"
    RESUME = "resume"
    CONTINUATION = "continuation"
    CHECKPOINT = "checkpoint"
    MANUAL = "manual"


def checked_value(enum: type[StrEnum], value: object, what: str) -> str:
    """TRN-10: `value` as the enum's exact string, or ValueError naming the allowed
    values (an enum member or its exact string is accepted; nothing is coerced)."""
    allowed = [m.value for m in enum]
    if isinstance(value, str) and value in allowed:
        return str(value)
    raise InvalidArgument(f"{what} must be one of {', '.join(allowed)}; got {value!r}")


TURN_OUTCOMES: Final[tuple[str, ...]] = tuple(o.value for o in TurnOutcome)


def start_kind_of(value: object) -> StartKind:
    """INJ-1: `value` (a StartKind or its exact string) as a StartKind; anything else -
    a typo such as "frsh" - raises ValueError naming the allowed values, so it can never
    silently drop (or add) an injection."""
    return StartKind(checked_value(StartKind, value, "start"))


@attrs.frozen
class Task:
    """One task row (docs/cli.md world file `tasks[]`, plus additive fields)."""

    id: str
    project_id: str
    status: str = "running"
    created_by: str | None = None
    parent_task_id: str | None = None
    executor: str = "local"
    environment_id: str | None = None
    model: str | None = None
    effort: str | None = None
    goal_mode: bool = False
    verify_command: str | None = None
    is_coordinator: bool = False
    coordinator_part: str | None = None
    prompt: str = ""
    result_text: str | None = None
    error_text: str | None = None
    actual_model: str | None = None
    worktree: str | None = None
    host: str | None = None
    created_at: float = 0.0
    # Additive fields (not in the docs/cli.md example; default so old worlds load):
    goal: str | None = None  # the goal text of a goal task (INJ-3 prepends to it)
    interrupted_reason: str | None = None  # CTL-2 cancel reason, ATT-2 ledger
    auto_resume_count: int = 0  # ATT-2 platform requeues so far
    repo_url: str | None = None  # additive: the repository a task works on (SCH-6)
    # additive: auto_resume_count at the last manual retry; ledger rows up to it are stale
    # for the resume preamble (ATT-4: the preamble follows only a platform requeue)
    retried_after_attempt: int | None = None
    # additive (TOL-4): the task's turn number, advanced by 1 when a worker starts a turn
    # (a claim, or taking follow-ups for the next turn); 0 = never started
    turn: int = 0
    # additive: the agent session (e.g. the Codex thread) the worker host runs the task in
    thread_id: str | None = None
    # additive (FLT-1): the fencing number of the task's latest claim; every claim raises
    # it by 1 (0 = never claimed), and a write carrying an older claim is refused
    epoch: int = 0
    # additive (ENG-1): the engine the task runs on, one of ENGINES; None = the host's
    # `--engine`. Set when the task is made (world file, insert_task), never by a change.
    engine: str | None = None


@attrs.frozen
class Environment:
    """A project's environment: name, branch and status (each may be unknown)."""

    name: str | None = None
    branch: str | None = None
    status: str | None = None


@attrs.frozen
class Project:
    """A project: id, name, bound repository (if any) and environment (if any)."""

    id: str
    name: str = ""
    repo_url: str | None = None
    environment: Environment | None = None


@attrs.frozen
class PermissionGrant:
    """The permissions (`read`, `create_task`, `approve_merge`) a user holds on a project."""

    user: str
    project: str
    grants: tuple[str, ...] = ()


@attrs.frozen
class Todo:
    """One todo of a project's list (TOD): title, status, priority, due time, linked task."""

    id: str
    project_id: str
    title: str = ""
    description: str | None = None
    status: str = "pending"
    priority: str = "medium"
    due_at: float | None = None
    task_id: str | None = None
    sort_order: int | None = None
    completed_at: float | None = None
    created_at: float = 0.0  # additive: listing order tie-break


@attrs.frozen
class Automation:
    """An automation definition (AUT, SCH): a prompt run every `interval_seconds` from
    `first_run_at` (or once), optionally bound to a task; `status` active, paused or deleted."""

    id: str
    project_id: str
    name: str
    prompt: str
    interval_seconds: int = 86400
    first_run_at: float | None = None
    run_once: bool = False
    bind: str | None = None
    bound_task_id: str | None = None
    repo_url: str | None = None
    status: str = "active"
    created_by: str | None = None
    created_at: float = 0.0
    last_run_at: float | None = None
    run_count: int = 0
    # Additive: the slot last claimed (SCH-2 computes the next slot from it).
    last_slot_at: float | None = None


def _cost_usd(value: object) -> Decimal | None:
    return optional_money(value, "CostRow.usd")


def _quota_total(value: object) -> Decimal | None:
    return optional_money(value, "Quota.total_usd")


def _quota_used(value: object) -> Decimal:
    return money(value, "Quota.used_usd")


def _not_negative(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidType(
            f"{type(instance).__name__}.{attribute.name}: expected an integer, "
            f"got {type(value).__name__}"
        )
    if value < 0:
        raise InvalidArgument(
            f"{type(instance).__name__}.{attribute.name}: must not be negative, got {value}"
        )


def _optional_text(instance: object, attribute: attrs.Attribute[str | None], value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise InvalidType(
            f"{type(instance).__name__}.{attribute.name}: expected a string or None, "
            f"got {type(value).__name__}"
        )


@attrs.frozen
class CostRow:
    """One cost row of a task's round: `usd` (None = unpriced; a Decimal of whole
    micro-dollars, from a Decimal, int, float or decimal text), tokens, estimated or
    actual, and (additive) `priced_by`: who priced the dollars - "claude-code" (Claude
    Code's own figure), "table" (the worker host's price table), None when not said. A
    negative amount, token count or round is refused (ValueError)."""

    task_id: str
    round: int = attrs.field(validator=_not_negative)
    usd: Decimal | None = attrs.field(default=None, converter=_cost_usd)
    tokens: int = attrs.field(default=0, validator=_not_negative)
    estimated: bool = False
    priced: bool = True
    priced_by: str | None = attrs.field(default=None, validator=_optional_text)


@attrs.frozen
class TurnCost:
    """What one turn cost, for `finish_turn` (the store adds the task and numbers the
    round): `usd` as in CostRow (None = unpriced), tokens, estimated or actual, and
    `priced_by` as in CostRow."""

    usd: Decimal | None = attrs.field(default=None, converter=_cost_usd)
    tokens: int = attrs.field(default=0, validator=_not_negative)
    estimated: bool = False
    priced: bool = True
    priced_by: str | None = attrs.field(default=None, validator=_optional_text)

    def row(self, task_id: str, round: int) -> CostRow:
        """This cost as the task's cost row of `round`."""
        return CostRow(
            task_id, round, self.usd, self.tokens, self.estimated, self.priced, self.priced_by
        )


@attrs.frozen
class Quota:
    """A user's spending quota: `total_usd` None = explicitly unlimited (DOM-7), `used_usd`
    (Decimals of whole micro-dollars; negative amounts are refused)."""

    user: str
    # None = explicitly unlimited (DOM-7)
    total_usd: Decimal | None = attrs.field(default=None, converter=_quota_total)
    used_usd: Decimal = attrs.field(default=Decimal(0), converter=_quota_used)


@attrs.frozen
class FinishedTurn:
    """What `finish_turn` did for (task, turn id) (TRN-9): the task's status afterwards,
    whether this call changed the task (False when it was no longer running, e.g.
    cancelled meanwhile - its cost is recorded all the same), the cost row recorded
    (None: no cost given), the creator's quota after the charge (None: nothing charged -
    no cost, unpriced, no creator or no quota record), and `replayed`: the turn was
    finished before, nothing changed now and this is the first call's result."""

    task_id: str
    turn_id: str
    status: str
    changed: bool
    cost: CostRow | None = None
    charged: Quota | None = None
    replayed: bool = False
    # additive (FLT-6): `finish_digest` of the call that finished the turn (None: a turn
    # finished before digests were kept, which any input replays)
    digest: str | None = None


def finish_digest(
    outcome: object,
    result_text: str | None,
    error_text: str | None,
    cost: TurnCost | CostRow | None,
    requeue: bool,
) -> str:
    """FLT-6: the digest of what a `finish_turn` (or `charge_turn`) call asks for -
    outcome, result, error, cost (dollars as exact micro-dollars, tokens, estimated,
    priced; a CostRow's round too; `priced_by` only when set, so a digest stored before
    that field existed still matches a replay of the same input) and requeue - so a
    finished turn id that comes again with other input is refused instead of replayed.
    "finish:" + SHA-256 hex."""
    if cost is None:
        spent: list[object] | None = None
    else:
        usd = None if cost.usd is None else str(int(cost.usd * 1_000_000))
        spent = [usd, cost.tokens, cost.estimated, cost.priced]
        if isinstance(cost, CostRow):
            spent.append(cost.round)
        if cost.priced_by is not None:
            spent.append({"priced_by": cost.priced_by})
    canonical = json.dumps(
        [str(outcome), result_text, error_text, spent, bool(requeue)],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return "finish:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def finish_replay(first: FinishedTurn, digest: str) -> FinishedTurn:
    """TRN-9 / FLT-6: what a repeated `finish_turn` / `charge_turn` answers - the first
    result marked `replayed` when its input digest is `digest` (or unknown: finished
    before digests were kept); TurnFinishedDifferently when the input differs."""
    if first.digest is not None and first.digest != digest:
        from markertools.domain.errors import TurnFinishedDifferently

        raise TurnFinishedDifferently(first.task_id, first.turn_id, first.digest, digest)
    return attrs.evolve(first, replayed=True)


def checked_finish(
    task_id: object, turn_id: object, outcome: object, cost: object, requeue: object
) -> TaskStatusName:
    """TRN-9: `finish_turn`'s arguments checked before a store reads anything - a str task
    id, a non-empty str turn id, a known outcome (TRN-10), a TurnCost / a CostRow of this
    task / None, a bool `requeue` - and the status the task is to get
    (`finished_status`). TypeError / ValueError naming the argument otherwise."""
    if not isinstance(task_id, str):
        raise InvalidType(f"task_id: expected a string, got {type(task_id).__name__}")
    if not isinstance(turn_id, str) or not turn_id:
        raise InvalidArgument(f"turn_id: expected a non-empty string, got {turn_id!r}")
    if not isinstance(requeue, bool):
        raise InvalidType(f"requeue: expected True or False, got {type(requeue).__name__}")
    if isinstance(cost, CostRow):
        if cost.task_id != task_id:
            raise InvalidArgument(
                f"cost: the row is for task {cost.task_id!r}, not {task_id!r} "
                "(give a TurnCost and the store fills in the task and the round)"
            )
    elif cost is not None and not isinstance(cost, TurnCost):
        raise InvalidType(f"cost: expected a TurnCost, a CostRow or None, got {type(cost).__name__}")
    return finished_status(outcome, requeue=requeue)


@attrs.frozen
class Attempt:
    """One attempts-ledger row (ATT-1)."""

    task_id: str
    attempt_no: int
    kind: str
    interrupted_reason: str | None = None
    checkpoint_round: int = -1
    result_text: str | None = None
    error_text: str | None = None
    created_at: float = 0.0


@attrs.frozen
class AuditRecord:
    """One audit row (TRN-7): every executed or rejected block, and turn discards (TRN-3)."""

    sender: str
    kind: str
    target: str | None
    outcome: str
    reason: str
    time: float
    source: str = "block"  # additive (TOL-2): "block", or "tool" for a same-turn tool call


@attrs.frozen
class LineageLink:
    """One step of a parent walk: a task id, its parent and its coordinator part (LIN-1/4)."""

    id: str
    parent_task_id: str | None
    coordinator_part: str | None = None


# ---- predicates -------------------------------------------------------------------


def is_terminal(status: str) -> bool:
    """DOM-1: every status but queued and running is terminal (unknown ones included)."""
    return status not in ACTIVE_STATUSES


def is_goal_task(task: Task) -> bool:
    """DOM-2: a non-empty verify_command or a truthy goal_mode.

    A whitespace-only verify_command is non-empty and therefore counts (the safer
    reading: goal tasks are protected from cancel and retry)."""
    return bool(task.goal_mode) or (
        isinstance(task.verify_command, str) and task.verify_command != ""
    )


def is_coordinator_subtask(task: Task) -> bool:
    return bool(task.coordinator_part)


def same_creator(a: Task, b: Task) -> bool:
    """DOM-3: both created_by non-null and equal; None == None never counts."""
    return a.created_by is not None and b.created_by is not None and a.created_by == b.created_by


def quota_exhausted(quota: Quota | None) -> bool:
    """DOM-7: a set total with used >= total; a null total or no record is unlimited."""
    return quota is not None and quota.total_usd is not None and quota.used_usd >= quota.total_usd


def created_now(task: Task, now: float) -> Task:
    """FLT-5: `task` as a store inserts it - a `created_at` left at its default (0, "not
    given": no task is made in 1970) becomes `now` (the store's clock), so a task made
    through the library never jumps ahead of older ones in the claim order."""
    return task if task.created_at != 0.0 else attrs.evolve(task, created_at=now)


def sender_cancelled(task: Task | None) -> bool:
    """DOM-8: a sender counts as cancelled when its status is interrupted (or it vanished)."""
    return task is None or task.status == "interrupted"


@attrs.frozen
class Followup:
    """One queued follow-up message (the next turn's input) for a task."""

    task_id: str
    text: str
    consumed: bool = False  # additive: taken by take_followups (a worker read it)


def refuse_bad_engine(engine: object) -> None:
    """ENG-1: a task's engine is None or one of ENGINES; anything else is a ValueError
    naming the allowed values (stores refuse it at insert_task, as world files do)."""
    if engine is not None and not (isinstance(engine, str) and engine in ENGINES):
        raise InvalidArgument(
            f"task engine must be one of {', '.join(ENGINES)} (or null); got {engine!r}"
        )


def refuse_bad_status(kind: str, status: object, allowed: tuple[str, ...]) -> None:
    """TRN-10: stores refuse a status outside its enumeration at write time (ValueError
    naming the allowed values), so every stored world dumps and reloads."""
    if not (isinstance(status, str) and status in allowed):
        raise InvalidArgument(f"{kind} status must be one of {', '.join(allowed)}; got {status!r}")
