# Owns: `plan_call_wait` (TOL-11), what a same-turn task_poll or wait_threads call would
# wait for, decided before it is delivered, so a tool server can do that waiting without
# holding a thread (one shared watch of the targets' statuses) and only then deliver the
# call with `deliver_call(..., waited=SECONDS)`. Read-only: it counts nothing, writes
# nothing and journals nothing; the call's delivery does all of that once.
#
# Must never: say "wait" for a call its delivery would answer without waiting - a repeat
# of a finished call id (TOL-5), a sender that may not call (TOL-2, TOL-7), a call over
# its kind's cap (TOL-4), arguments the block's validator refuses, a timeout of 0, an
# `@NAME` reference (a one-call turn created no names), a sender without `read`, or
# targets that are missing, in another project, the sender itself or finished already;
# raise for anything in `kind`, `arguments` or `call_id` (only a failing port raises).
from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

from markertools.deliver.call import (
    CALL_TURN_PREFIX,
    MAX_CALL_ID_CHARS,
    _sender_refusal,
    arguments_body,
    resolve_tool_kind,
)
from markertools.deliver.once import FINISHED_POSITION
from markertools.domain.model import is_terminal
from markertools.domain.ports import Ports
from markertools.parse.params import TaskPollParams, WaitThreadsParams
from markertools.parse.validate import validate_parts
from markertools.text.msg import Msg

__all__ = ["CallWait", "plan_call_wait"]

WAITING_KINDS: Final[frozenset[str]] = frozenset({"task-poll", "wait-threads"})


@attrs.frozen
class CallWait:
    """What a same-turn call waits for (TOL-11): until none of `task_ids` is queued or
    running (or the sender stops running), at most `timeout` seconds from the call's
    start (its `timeout_seconds` after the block's clamps). The call is then delivered
    with `waited` = how long that took."""

    sender: str
    task_ids: tuple[str, ...]
    timeout: float


def plan_call_wait(
    kind: str,
    arguments: Mapping[str, object] | None,
    *,
    sender: str,
    ports: Ports,
    call_id: str | None = None,
) -> CallWait | None:
    """TOL-11: the wait of one `task_poll` / `wait_threads` call of `sender`, or None when
    its delivery would answer at once (see the module header). Reads the journal (with
    a call id), the sender, its turn's call counts, the `read` permission and the
    targets; changes nothing. A failing port raises (the caller may retry or deliver)."""
    spec = resolve_tool_kind(kind)
    if spec is None or spec.name not in WAITING_KINDS or ports.calls is None:
        return None
    if call_id is not None:
        if not isinstance(call_id, str) or not call_id.strip() or len(call_id) > MAX_CALL_ID_CHARS:
            return None
        if ports.journal is None:
            return None
        stored = ports.journal.block_entries(sender, CALL_TURN_PREFIX + call_id)
        if FINISHED_POSITION in stored:  # TOL-5: a repeat answers the stored result
            return None
    task = ports.tasks.get_task(sender)
    if task is None or _sender_refusal(task) is not None:
        return None
    if ports.calls.turn_usage(task.id, task.turn).get(spec.name, 0) >= spec.cap:
        return None  # over the cap: ignored at once
    body = arguments_body(arguments)
    if isinstance(body, Msg):
        return None
    try:
        parts = validate_parts(spec, body)
    except Exception:  # the delivery reports a validator failure at once
        return None
    if isinstance(parts, Msg):
        return None
    params, _ = parts
    if isinstance(params, TaskPollParams):
        ids: tuple[str, ...] = (params.task_id,)
    elif isinstance(params, WaitThreadsParams):
        ids = tuple(dict.fromkeys(params.task_ids))
    else:  # pragma: no cover - the two waiting kinds have these params
        return None
    if params.timeout_seconds <= 0 or any(i.startswith("@") for i in ids):
        return None
    granted = ports.permissions.has_permission(task.created_by, task.project_id, "read")
    if granted is not True:
        return None
    rows = ports.tasks.get_tasks([i for i in ids if i != task.id])
    waited = tuple(
        i
        for i in ids
        if i != task.id
        and (row := rows.get(i)) is not None
        and row.project_id == task.project_id
        and not is_terminal(row.status)
    )
    if not waited:
        return None
    return CallWait(task.id, waited, float(params.timeout_seconds))
