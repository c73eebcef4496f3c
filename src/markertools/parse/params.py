# Owns: the validated, defaulted and clamped parameters of every marker kind (the field rules in docs/rules.md)
# as frozen attrs classes. These are the `params` of a `Command`; the parse layer
# builds them, delivery reads them. Field names are the canonical spellings (docs/cli.md
# `parse --json` prints every field, after defaults and clamping).
#
# Invariants:
#   Rule 1: a params object is always valid: the parse layer never builds one that
#           breaks a field rule, so delivery never re-validates.
#   Rule 2: task id fields keep `@NAME` references verbatim (VAL-8); delivery resolves.
from __future__ import annotations

import attrs


@attrs.frozen
class TaskCreateParams:
    prompt: str
    name: str | None = None
    model: str | None = None
    effort: str | None = None
    executor: str | None = None


@attrs.frozen
class TaskPollParams:
    task_id: str
    interval_seconds: int = 5
    timeout_seconds: int = 0
    chars: int = 2000


@attrs.frozen
class WaitThreadsParams:
    task_ids: tuple[str, ...]
    dropped_task_ids: tuple[str, ...] = ()
    interval_seconds: int = 5
    timeout_seconds: int = 300
    chars: int = 2000


@attrs.frozen
class TaskCancelParams:
    task_id: str


@attrs.frozen
class TaskRetryParams:
    task_id: str


@attrs.frozen
class TodoListParams:
    status: str | None = None
    q: str | None = None


@attrs.frozen
class TodoCreateParams:
    title: str
    description: str | None = None
    status: str = "pending"
    priority: str = "medium"
    due_at: float | None = None
    task_id: str | None = None
    sort_order: int | None = None


@attrs.frozen
class TodoUpdateParams:
    """Fields left None are not changed (VAL-2: null means absent)."""

    id: str
    title: str | None = None
    description: str | None = None
    status: str | None = None
    priority: str | None = None
    due_at: float | None = None
    task_id: str | None = None
    sort_order: int | None = None


@attrs.frozen
class ApprovalAnswerParams:
    """APR-3: answer a pending approval request of a task below the sender."""

    approval_id: str
    decision: str  # "approve" or "deny"
    reason: str | None = None


@attrs.frozen
class TaskListParams:
    status: str | None = None
    q: str | None = None
    limit: int = 20


@attrs.frozen
class TaskCostParams:
    task_id: str


@attrs.frozen
class QuotaStatusParams:
    """QUO-1: every field is ignored; their names are kept so the report can say so."""

    ignored_fields: tuple[str, ...] = ()


@attrs.frozen
class TaskFilesParams:
    task_id: str
    path: str | None = None


@attrs.frozen
class GoalConvertParams:
    goal: str


@attrs.frozen
class AutomationCreateParams:
    prompt: str
    name: str | None = None
    interval_seconds: int = 86400
    first_run_at: float | None = None  # epoch seconds, already converted (AUT-2)
    once: bool = False
    bind: str | None = None  # None or "heartbeat" ("cron" is folded into None)
    repo_url: str | None = None


Params = (
    TaskCreateParams
    | TaskPollParams
    | WaitThreadsParams
    | TaskCancelParams
    | TaskRetryParams
    | ApprovalAnswerParams
    | TodoListParams
    | TodoCreateParams
    | TodoUpdateParams
    | TaskListParams
    | TaskCostParams
    | QuotaStatusParams
    | TaskFilesParams
    | GoalConvertParams
    | AutomationCreateParams
)
