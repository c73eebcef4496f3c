# Owns: the task snapshot of task-poll and wait-threads (POL-4) and the small pure text
# helpers the read kinds share (tail cutting, joining report sections). Pure: the nonce
# for data framing comes from the random port handed in.
#
# Invariants:
#   Rule 1 (POL-4): the output text is the TAIL of result_text then error_text, at most
#           `chars` code points (DOM-4), with a note of how many code points were cut.
#   Rule 2 (INJ-7): everything the target task (or its model) wrote is inside
#           `framing.frame_data`; only values the library controls (ids, statuses,
#           counts, a model name that is a plain identifier) stand outside it. So are the
#           pending approval requests a snapshot lists (APR-4): their commands, paths and
#           reasons are the agent's words.
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

from markertools.deliver.render import shown
from markertools.domain.approvals import ApprovalRequest, describe_request, flat
from markertools.domain.model import Task
from markertools.domain.ports import RandomSource
from markertools.inject.framing import frame_data
from markertools.text.msg import Msg, msg

# "deadline": the delivery's deadline cut the wait short; "stopped": its cancellation did;
# "call_limit": a same-turn call's own limit did (TOL-6);
# "approval": the wait ended early because the task waits for an answer the sender may
# give (APR-4); "ended_early": it ended early because ANOTHER target does
SnapshotState = Literal[
    "finished",
    "now",
    "timed_out",
    "sender_cancelled",
    "vanished",
    "stopped",
    "deadline",
    "call_limit",
    "approval",
    "ended_early",
]

_PLAIN_MODEL: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+\-]{0,99}")
ERROR_SEPARATOR: Final[str] = "\n\n--- error_text ---\n"


def tail(text: str, chars: int) -> tuple[str, int]:
    """The last `chars` code points of `text` and how many were cut from its start."""
    if chars <= 0:
        return "", len(text)
    if len(text) <= chars:
        return text, 0
    return text[-chars:], len(text) - chars


def output_text(task: Task) -> str | None:
    """POL-4: result_text, then error_text, whichever exist (both, in that order)."""
    if task.result_text and task.error_text:
        return task.result_text + ERROR_SEPARATOR + task.error_text
    return task.result_text or task.error_text or None


def model_of(task: Task) -> str | None:
    """POL-4: actual_model, else model."""
    return task.actual_model or task.model


def is_plain_model(name: str) -> bool:
    return _PLAIN_MODEL.fullmatch(name) is not None


def join_sections(parts: Sequence[Msg], separator: str = "\n\n") -> Msg:
    """One Msg rendering `parts` one after another (rendered late, in any locale)."""
    if not parts:
        return msg("read.empty")
    result = parts[-1]
    key = "read.join_blank" if separator == "\n\n" else "read.join_line"
    for part in reversed(parts[:-1]):
        result = msg(key, head=part, rest=result)
    return result


def snapshot(
    task: Task,
    *,
    chars: int,
    state: SnapshotState,
    waited: float,
    random: RandomSource,
    locale: str,
    deadline: float | None = None,
    approvals: Sequence[ApprovalRequest] = (),
    may_answer: bool = False,
    now: float = 0.0,
) -> Msg:
    """The POL-4 snapshot of `task` as last read, with its state (POL-3 / WAI-3);
    `deadline` is the delivery's deadline in seconds, named when it cut a wait (TRN-11).
    `approvals` (APR-4): the task's pending requests, listed framed as data, saying
    whether the sender may answer them (`may_answer`) and how long each has left at
    `now`."""
    model = model_of(task)
    data_prefix = ""
    if model is None:
        model_msg: Msg = msg("read.model_none")
    elif is_plain_model(model):
        model_msg = msg("read.model", model=model)
    else:
        model_msg = msg("read.model_in_data")
        data_prefix = f"model: {model}\n\n"
    text = output_text(task)
    state_msg = _state_msg(state, task, waited, deadline)
    if text is None and not data_prefix:
        output: Msg = msg("read.output_none")
    else:
        kept, cut = tail(text or "", chars)
        framed = frame_data(
            data_prefix + kept, msg("read.frame_label", id=shown(task.id)), random, locale
        ).text
        if text is None:
            output = msg("read.output_none_framed", framed=framed)
        elif cut:
            output = msg("read.output_cut", kept=len(kept), total=len(text), cut=cut, framed=framed)
        else:
            output = msg("read.output_full", total=len(text), framed=framed)
    body = msg(
        "read.snapshot",
        id=shown(task.id),
        status=task.status,
        state=state_msg,
        model=model_msg,
        output=output,
    )
    if not approvals:
        return body
    pending = pending_section(task.id, approvals, may_answer, now, random, locale)
    return join_sections([body, pending], "\n")


def approval_line(request: ApprovalRequest, now: float) -> str:
    """APR-4: one pending request as a data line: id, kind, what it asks, seconds left."""
    left = max(0, round(request.expires_at - now))
    why = flat(request.reason.strip()) if request.reason and request.reason.strip() else ""
    reason = f"  - reason: {why}" if why else ""
    return (
        f"{flat(request.id)}  {request.kind}  {describe_request(request)}{reason}  ({left} s left)"
    )


def pending_section(
    task_id: str,
    approvals: Sequence[ApprovalRequest],
    may_answer: bool,
    now: float,
    random: RandomSource,
    locale: str,
) -> Msg:
    """APR-4: a waited task's pending approval requests, framed as data (Rule 2), and who
    may answer them."""
    data = "\n".join(approval_line(a, now) for a in approvals)
    label = msg("approvals.label", id=shown(task_id))
    framed = frame_data(data, label, random, locale).text
    who = msg("approvals.you_may_answer" if may_answer else "approvals.others_answer")
    return msg("approvals.pending", n=len(approvals), who=who, framed=framed)


def _state_msg(state: SnapshotState, task: Task, waited: float, deadline: float | None) -> Msg:
    if state == "timed_out":
        return msg("read.state_timed_out", seconds=round(waited, 3), status=task.status)
    if state == "deadline" and deadline is not None:
        return msg(
            "read.state_deadline",
            seconds=round(waited, 3),
            deadline=round(deadline, 3),
            status=task.status,
        )
    if state == "call_limit" and deadline is not None:
        return msg(
            "read.state_call_limit",
            seconds=round(waited, 3),
            deadline=round(deadline, 3),
            status=task.status,
        )
    if state in ("stopped", "deadline", "call_limit"):
        return msg("read.state_stopped", seconds=round(waited, 3), status=task.status)
    if state in ("approval", "ended_early"):
        return msg(f"read.state_{state}", seconds=round(waited, 3), status=task.status)
    return msg(f"read.state_{state}", status=task.status)
