# Owns: THE kind table (docs/rules.md, the kind rules): every marker kind's canonical name, aliases,
# per-turn cap, body fields (types, limits, clamps, aliases of fields), kind-level
# rules, its params class, a one-line summary and one example body, and what delivery
# needs to know of it beyond its handler: whether a resumed delivery reruns or journals
# its blocks (TRN-9) and whether it creates a task (LIN-3, VAL-8). The parser
# (`validate`, `turn`), the agent guide (`guide`), the JSON Schemas (`schema`) and the
# delivery loop all read this one table; adding a kind is adding a row here and one
# handler keyed by the row's params class (`deliver/handlers/`).
#
# Must never: contain code paths for a kind (kind-level rules are named here and
# implemented once in `validate`), do I/O, or be edited without the guide example
# still parsing (a test parses every example).
#
# Invariants:
#   Rule 1: rows are in execution order (TRN-1); `EXEC_ORDER` is derived from it.
#   Rule 2: every name and alias maps to exactly one kind (checked at import).
#   Rule 3: every `FieldSpec.name` with `param=True` is an attribute of the kind's
#           params class (checked at import), and defaults come from that class.
#   Rule 4: every params class belongs to one row (delivery dispatches on it); a kind
#           that creates a task is journalled, and its `task_name_field` is one of its
#           text fields (checked at import).
from __future__ import annotations

from typing import Final

import attrs

from markertools.parse.kindspec import INT64, FieldSpec, KindSpec

__all__ = ["ALL_NAMES", "EXEC_ORDER", "KINDS", "KIND_BY_NAME", "FieldSpec", "KindSpec", "kind_of"]
from markertools.domain.approvals import APPROVAL_DECISIONS
from markertools.domain.model import (
    EFFORTS,
    EXECUTORS,
    TASK_STATUSES,
    TODO_PRIORITIES,
    TODO_STATUSES,
)
from markertools.parse.params import (
    ApprovalAnswerParams,
    AutomationCreateParams,
    GoalConvertParams,
    QuotaStatusParams,
    TaskCancelParams,
    TaskCostParams,
    TaskCreateParams,
    TaskFilesParams,
    TaskListParams,
    TaskPollParams,
    TaskRetryParams,
    TodoCreateParams,
    TodoListParams,
    TodoUpdateParams,
    WaitThreadsParams,
)

TASK_ID_ALIASES: Final[tuple[str, ...]] = ("to", "to_task_id", "thread_id")  # CTL-1
TEXT_MAX: Final[int] = 20000
NAME_MAX: Final[int] = 100
Q_MAX: Final[int] = 200
WAIT_MAX_TARGETS: Final[int] = 8  # WAI-2
APPROVAL_REASON_MAX: Final[int] = 2000  # APR-3: an answer's reason


def _task_id(aliases: tuple[str, ...] = ()) -> FieldSpec:
    return FieldSpec("task_id", "ref", "parse.doc.task_id", required=True, aliases=aliases)


def _todo_fields(*, update: bool) -> tuple[FieldSpec, ...]:
    """TDC-1 fields; todo-update takes the same ones, all optional (TDU-1)."""
    return (
        FieldSpec(
            "title", "text", "parse.doc.todo_title", required=not update, min_len=1, max_len=500
        ),
        FieldSpec("description", "text", "parse.doc.todo_description", max_len=TEXT_MAX),
        FieldSpec("status", "enum", "parse.doc.todo_status", choices=TODO_STATUSES),
        FieldSpec("priority", "enum", "parse.doc.todo_priority", choices=TODO_PRIORITIES),
        FieldSpec("due_at", "epoch", "parse.doc.due_at"),
        FieldSpec("task_id", "ref", "parse.doc.todo_task_id"),
        FieldSpec("sort_order", "int", "parse.doc.sort_order", bounds=INT64),
    )


KINDS: Final[tuple[KindSpec, ...]] = (
    KindSpec(
        "task-create", (), 5, TaskCreateParams,
        (
            FieldSpec("prompt", "text", "parse.doc.create_prompt", required=True, min_len=1, max_len=TEXT_MAX),
            FieldSpec("name", "text", "parse.doc.create_name", min_len=1, max_len=NAME_MAX),
            FieldSpec("model", "text", "parse.doc.model", min_len=1),
            FieldSpec("effort", "enum", "parse.doc.effort", choices=EFFORTS),
            FieldSpec("executor", "enum", "parse.doc.executor", choices=EXECUTORS),
        ),
        "parse.sum.task-create",
        '{"name": "date-tests", "prompt": "Add unit tests for src/dates.py and make them pass.", '
        '"effort": "medium"}',
        creates_task=True, task_name_field="name",
    ),
    KindSpec(
        "todo-create", (), 5, TodoCreateParams, _todo_fields(update=False),
        "parse.sum.todo-create",
        '{"title": "Write the API docs", "priority": "high", "due_at": 1798333200}',
    ),
    KindSpec(
        "todo-update", (), 5, TodoUpdateParams,
        (
            FieldSpec("id", "text", "parse.doc.todo_id", required=True, min_len=1),
            *_todo_fields(update=True),
        ),
        "parse.sum.todo-update",
        '{"id": "d-17", "status": "completed"}',
        post_rules=("needs_update",),
        guide_note="parse.guide.note.todo-update",
    ),
    KindSpec(
        "automation-create", (), 5, AutomationCreateParams,
        (
            FieldSpec("prompt", "text", "parse.doc.auto_prompt", required=True, min_len=1, max_len=TEXT_MAX),
            FieldSpec("name", "text", "parse.doc.auto_name", min_len=1, max_len=NAME_MAX),
            FieldSpec("interval_seconds", "int", "parse.doc.auto_interval", bounds=(60, 2592000)),
            FieldSpec("first_run_at", "time", "parse.doc.first_run_at"),
            FieldSpec("once", "bool", "parse.doc.once"),
            FieldSpec("bind", "enum", "parse.doc.bind", choices=("cron", "heartbeat"), folds=(("cron", None),)),
            FieldSpec("repo_url", "text", "parse.doc.repo_url", min_len=1),
        ),
        "parse.sum.automation-create",
        '{"name": "nightly-deps", "prompt": "List outdated dependencies and summarise the risk.", '
        '"interval_seconds": 86400, "first_run_at": "2026-10-30T09:00:00+08:00"}',
        guide_note="parse.guide.note.automation-create",
    ),
    KindSpec(
        "task-cancel", ("task_cancel",), 5, TaskCancelParams,
        (_task_id(TASK_ID_ALIASES),),
        "parse.sum.task-cancel",
        '{"task_id": "t-1234"}',
    ),
    KindSpec(
        "task-retry", ("task_retry",), 5, TaskRetryParams,
        (_task_id(TASK_ID_ALIASES),),
        "parse.sum.task-retry",
        '{"task_id": "t-1234"}',
    ),
    KindSpec(
        "approval-answer", ("approval_answer",), 5, ApprovalAnswerParams,
        (
            FieldSpec("approval_id", "text", "parse.doc.approval_id", required=True, min_len=1, max_len=NAME_MAX),
            FieldSpec("decision", "enum", "parse.doc.approval_decision", required=True, choices=APPROVAL_DECISIONS),
            FieldSpec("reason", "text", "parse.doc.approval_reason", max_len=APPROVAL_REASON_MAX),
        ),
        "parse.sum.approval-answer",
        '{"approval_id": "apr-5f3a9c1e2b7d4a60", "decision": "approve", '
        '"reason": "the test suite only reads the repository"}',
        guide_note="parse.guide.note.approval-answer",
    ),
    KindSpec(
        "task-list", (), 5, TaskListParams,
        (
            FieldSpec("status", "enum", "parse.doc.task_status", choices=TASK_STATUSES),
            FieldSpec("q", "text", "parse.doc.task_q", max_len=Q_MAX),
            FieldSpec("limit", "int", "parse.doc.limit", clamp=(1, 50)),
        ),
        "parse.sum.task-list",
        '{"status": "failed", "q": "login", "limit": 20}',
        replay="rerun",
    ),
    KindSpec(
        "todo-list", (), 5, TodoListParams,
        (
            FieldSpec("status", "enum", "parse.doc.todo_list_status", choices=TODO_STATUSES),
            FieldSpec("q", "text", "parse.doc.todo_q", max_len=Q_MAX),
        ),
        "parse.sum.todo-list",
        '{"status": "pending", "q": "docs"}',
        replay="rerun",
    ),
    KindSpec(
        "task-cost", (), 5, TaskCostParams, (_task_id(),),
        "parse.sum.task-cost",
        '{"task_id": "t-1234"}',
        replay="rerun",
    ),
    KindSpec(
        "quota-status", (), 5, QuotaStatusParams, (),
        "parse.sum.quota-status",
        "{}",
        ignore_all_fields=True,
        replay="rerun",
    ),
    KindSpec(
        "task-files", (), 5, TaskFilesParams,
        (_task_id(), FieldSpec("path", "text", "parse.doc.path", empty_is_absent=True)),
        "parse.sum.task-files",
        '{"task_id": "t-1234", "path": "reports/summary.md"}',
        replay="rerun",
    ),
    KindSpec(
        "task-poll", ("task-read", "read-thread", "read_thread"), 5, TaskPollParams,
        (
            _task_id(),
            FieldSpec("interval_seconds", "int", "parse.doc.interval", clamp=(1, 60)),
            FieldSpec("timeout_seconds", "int", "parse.doc.poll_timeout", clamp=(0, 3600)),
            FieldSpec("chars", "int", "parse.doc.chars", clamp=(200, 8000)),
            FieldSpec("wait_seconds", "int", "parse.doc.wait_seconds", param=False),
        ),
        "parse.sum.task-poll",
        '{"task_id": "t-1234", "wait_seconds": 60}',
        post_rules=("fold_wait_seconds",),
        replay="rerun",
    ),
    KindSpec(
        "wait-threads", ("wait_threads",), 2, WaitThreadsParams,
        (
            FieldSpec(
                "task_ids", "ref_list", "parse.doc.task_ids", required=True,
                aliases=("thread_ids", "threads"), max_items=WAIT_MAX_TARGETS,
            ),
            FieldSpec("interval_seconds", "int", "parse.doc.interval", clamp=(1, 60)),
            FieldSpec("timeout_seconds", "int", "parse.doc.wait_timeout", clamp=(0, 3600)),
            FieldSpec("chars", "int", "parse.doc.chars", clamp=(200, 8000)),
        ),
        "parse.sum.wait-threads",
        '{"task_ids": ["t-1234", "t-1235"], "timeout_seconds": 600}',
        replay="rerun",
    ),
    KindSpec(
        "goal-convert", (), 1, GoalConvertParams,
        (
            FieldSpec("goal", "text", "parse.doc.goal", required=True, min_len=1, max_len=TEXT_MAX),
            FieldSpec("verify_command", "forbidden", "parse.doc.goal_forbidden", param=False),
            FieldSpec("goal_max_rounds", "forbidden", "parse.doc.goal_forbidden", param=False),
        ),
        "parse.sum.goal-convert",
        '{"goal": "Keep fixing the failing tests until the whole suite passes."}',
        guide_note="parse.guide.note.goal-convert",
        replay="rerun",
    ),
)  # fmt: skip

KIND_BY_NAME: Final[dict[str, KindSpec]] = {n: k for k in KINDS for n in k.names}
EXEC_ORDER: Final[dict[str, int]] = {k.name: i for i, k in enumerate(KINDS)}
ALL_NAMES: Final[tuple[str, ...]] = tuple(n for k in KINDS for n in k.names)


def kind_of(written: str) -> KindSpec | None:
    """The kind a name or alias denotes (case-sensitive, EXT-1), else None."""
    return KIND_BY_NAME.get(written)


def _check_table() -> None:
    """Rules 2 and 3, checked once at import so a broken row fails loudly in tests."""
    if len(KIND_BY_NAME) != len(ALL_NAMES):
        raise RuntimeError("a kind name or alias is used twice in the kind table")
    for kind in KINDS:
        attributes = attrs.fields_dict(kind.params)
        spellings = [s for f in kind.fields for s in f.spellings]
        if len(spellings) != len(set(spellings)):
            raise RuntimeError(f"{kind.name}: a field spelling is used twice")
        for field in kind.fields:
            if field.param and field.name not in attributes:
                raise RuntimeError(f"{kind.name}: {field.name} is not a params field")
        if kind.creates_task and kind.replay != "journal":
            raise RuntimeError(f"{kind.name}: a kind that creates a task must be journalled")
        if kind.task_name_field is not None:
            named = [f for f in kind.fields if f.name == kind.task_name_field and f.param]
            if not kind.creates_task or not named or named[0].kind != "text":
                raise RuntimeError(f"{kind.name}: task_name_field must be a text params field")
    if len({kind.params for kind in KINDS}) != len(KINDS):
        raise RuntimeError("a params class belongs to two kinds of the kind table")


_check_table()
