# Owns: delivery handlers for todo-list, todo-create and todo-update (docs/rules.md TDL/TDC/TDU):
# gather facts through the TurnContext, decide, apply through the TodoStore port.
# Never re-validates params (the parse layer did), never touches another project's todo.
#
# Invariants:
#   Rule 1 (TDL-2, TDC-2, TDU-3, GAT-4): todo-list needs `read`, todo-create and
#           todo-update need `create_task`; a failed permission lookup refuses.
#   Rule 2 (TDU-2): a todo that is missing or belongs to another project is "not found"
#           (never "forbidden"), and nothing changes.
#   Rule 3 (TDU-3): entering `completed` sets completed_at = now, leaving it clears it; the
#           change is one compare-and-set `update_todo` on the status read.
#   Rule 4 (TDC-1): a todo's task_id (literal or @NAME) must name a task of the sender's
#           project; missing and foreign tasks are refused alike.
#   Rule 5: listed titles are written by tasks: they are reported inside data framing;
#           ids and other values echoed in a result or reason are escaped onto one line.
from __future__ import annotations

from typing import Final

from markertools.deliver.context import (
    Handler,
    HandlerTable,
    TurnContext,
    handler_table,
    new_id,
    permission_refusal,
)
from markertools.deliver.render import shown
from markertools.deliver.report import ReportEntry
from markertools.domain.model import TODO_STATUSES, UNFINISHED_TODO_STATUSES, Todo
from markertools.domain.schedule import shanghai_iso
from markertools.inject.attempts import one_line
from markertools.inject.framing import frame_data
from markertools.parse.params import TodoCreateParams, TodoListParams, TodoUpdateParams
from markertools.parse.plan import Command
from markertools.text.msg import Msg, MsgArg, msg

LIST_LIMIT: Final[int] = 20  # TDL-3
LIST_TITLE_CHARS: Final[int] = 500
ECHO_CHARS: Final[int] = 100  # titles / descriptions echoed in results
_UPDATE_FIELDS: Final[tuple[str, ...]] = (
    "title",
    "description",
    "status",
    "priority",
    "due_at",
    "task_id",
    "sort_order",
)


def _linked_task(ctx: TurnContext, raw: str | None) -> tuple[str | None, Msg | None]:
    """TDC-1: resolve a todo's task_id (@NAME too) to a task of the sender's project."""
    if raw is None:
        return None, None
    resolved = ctx.resolve_task_id(raw)
    if isinstance(resolved, Msg):
        return None, msg("todos.bad_reference", reason=resolved)
    task = ctx.ports.tasks.get_task(resolved)
    if task is None or task.project_id != ctx.sender.project_id:
        return None, msg("todos.task_not_in_project", task_id=shown(raw))
    return resolved, None


def _status_order(statuses: frozenset[str]) -> tuple[str, ...]:
    return tuple(s for s in TODO_STATUSES if s in statuses)


def _listed_row(todo: Todo) -> str:
    title = one_line(todo.title, LIST_TITLE_CHARS)
    return f"- {one_line(todo.id, 200)} [{todo.status}, {todo.priority}] {title}"


def handle_todo_list(cmd: Command, params: TodoListParams, ctx: TurnContext) -> ReportEntry:
    refusal = permission_refusal(ctx, "read", "todos")
    if refusal is not None:
        return ctx.rejected(cmd, None, refusal)
    statuses = frozenset({params.status}) if params.status is not None else UNFINISHED_TODO_STATUSES
    listing = ctx.ports.todos.list_todos(
        ctx.sender.project_id, statuses=statuses, q=params.q, limit=LIST_LIMIT
    )
    rows = listing.rows[:LIST_LIMIT]
    status_text = _status_order(statuses) or tuple(sorted(statuses))
    filter_msg = (
        msg("todos.filter_query", statuses=status_text, q=one_line(params.q, 200))
        if params.q is not None
        else msg("todos.filter_status", statuses=status_text)
    )
    if not rows:
        return ctx.done(cmd, None, msg("todos.list_none", filter=filter_msg))
    data = "\n".join(_listed_row(t) for t in rows)
    framed = frame_data(data, msg("todos.list_label"), ctx.ports.random, ctx.locale).text
    total = max(listing.total, len(rows))
    if total > len(rows):
        result = msg(
            "todos.list_result_more",
            total=total,
            shown=len(rows),
            more=total - len(rows),
            filter=filter_msg,
            rows=framed,
        )
    else:
        result = msg("todos.list_result", shown=len(rows), filter=filter_msg, rows=framed)
    return ctx.done(cmd, None, result)


def handle_todo_create(cmd: Command, params: TodoCreateParams, ctx: TurnContext) -> ReportEntry:
    refusal = permission_refusal(ctx, "create_task", "todos")
    if refusal is not None:
        return ctx.rejected(cmd, None, refusal)
    task_id, problem = _linked_task(ctx, params.task_id)
    if problem is not None:
        return ctx.rejected(cmd, None, problem)
    now = ctx.now()
    todo = Todo(
        id=new_id(ctx, "td-", ctx.ports.todos.get_todo),
        project_id=ctx.sender.project_id,
        title=params.title,
        description=params.description,
        status=params.status,
        priority=params.priority,
        due_at=params.due_at,
        task_id=task_id,
        sort_order=params.sort_order,
        completed_at=now if params.status == "completed" else None,
        created_at=now,
    )
    ctx.insert_once(ctx.ports.todos.insert_todo, ctx.ports.todos.get_todo, todo)  # TRN-9
    common: dict[str, MsgArg] = {
        "id": todo.id,
        "status": todo.status,
        "priority": todo.priority,
        "title": one_line(todo.title, ECHO_CHARS),
    }
    if task_id is not None:
        return ctx.done(cmd, todo.id, msg("todos.created_linked", task_id=shown(task_id), **common))
    return ctx.done(cmd, todo.id, msg("todos.created", **common))


def _shown(value: object, name: str = "") -> MsgArg:
    if value is None:
        return None
    if name.endswith("_at") and isinstance(value, int | float) and not isinstance(value, bool):
        return shanghai_iso(value)  # a time is shown as ISO 8601, never as raw epoch seconds
    if isinstance(value, str):
        return '"' + one_line(value, 60) + '"'
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    return str(value)


def update_changes(todo: Todo, params: TodoUpdateParams, now: float) -> dict[str, object]:
    """TDU-1/3: the fields the block sets (None = untouched), plus completed_at when the
    status enters or leaves `completed`."""
    given: dict[str, object] = {
        "title": params.title,
        "description": params.description,
        "status": params.status,
        "priority": params.priority,
        "due_at": params.due_at,
        "task_id": params.task_id,
        "sort_order": params.sort_order,
    }
    changes = {name: value for name, value in given.items() if value is not None}
    new_status = params.status
    if new_status is not None:
        if new_status == "completed" and todo.status != "completed":
            changes["completed_at"] = now
        elif new_status != "completed" and todo.status == "completed":
            changes["completed_at"] = None
    return changes


def handle_todo_update(cmd: Command, params: TodoUpdateParams, ctx: TurnContext) -> ReportEntry:
    refusal = permission_refusal(ctx, "create_task", "todos")
    if refusal is not None:
        return ctx.rejected(cmd, params.id, refusal)
    todo = ctx.ports.todos.get_todo(params.id)
    if todo is None or todo.project_id != ctx.sender.project_id:
        return ctx.rejected(cmd, params.id, msg("todos.not_found", id=shown(params.id)))
    task_id, problem = _linked_task(ctx, params.task_id)
    if problem is not None:
        return ctx.rejected(cmd, params.id, problem)
    changes = update_changes(todo, params, ctx.now())
    if task_id is not None:
        changes["task_id"] = task_id
    if not changes:
        return ctx.rejected(cmd, params.id, msg("todos.nothing_to_change"))
    updated = ctx.ports.todos.update_todo(todo.id, todo.status, changes)
    if updated is None:
        again = ctx.ports.todos.get_todo(todo.id)
        if again is None or again.project_id != ctx.sender.project_id:
            return ctx.rejected(cmd, params.id, msg("todos.not_found", id=shown(params.id)))
        return ctx.rejected(
            cmd,
            params.id,
            msg("todos.changed_meanwhile", id=shown(params.id), expected=todo.status),
        )
    described = tuple(
        msg(
            "todos.change",
            field=name,
            old=_shown(getattr(todo, name), name),
            new=_shown(getattr(updated, name), name),
        )
        for name in (*_UPDATE_FIELDS, "completed_at")
        if name in changes
    )
    return ctx.done(cmd, todo.id, msg("todos.updated", id=shown(todo.id), changes=described))


HANDLERS: Final[HandlerTable] = handler_table(
    Handler(TodoListParams, handle_todo_list),
    Handler(TodoCreateParams, handle_todo_create),
    Handler(TodoUpdateParams, handle_todo_update),
)
