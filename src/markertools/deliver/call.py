# Owns: `deliver_call` (TOL-2, TOL-4, TOL-5, TOL-7): one same-turn tool call delivered as
# a one-block turn of the bound task through the same path as a block - the arguments
# become the block's JSON body (the same validation, clamps and reasons), the per-turn
# caps are shared with the turn's blocks through the CallLedger, then the gates, the
# handler, one audit record (source "tool") and the delivery journal - and `CallResult`,
# what the call answers at once; `call_result_json`, its machine-readable form
# (structuredContent, docs/cli.md); `resolve_tool_kind`, a tool name to its kind.
#
# Must never: raise for anything in `arguments` or `call_id` (wrong types, huge strings,
# deep nesting: rejected naming the field or limit, in time linear in the input); change
# anything for a refused sender (unknown, not running, cancelled, goal or coordinator);
# queue a call's "/goal ..." follow-up before its turn's report (it is held, TOL-7).
#
# Invariants:
#   Rule 1: a call is counted toward its kind's cap before it is validated (blocks count
#           in order of appearance, valid or not); one over the cap is "ignored" with the
#           very reason a block gets; an invalid one is "skipped" with the block's reason.
#           Neither writes an audit record (as for blocks: TRN-7 audits executed or
#           rejected ones).
#   Rule 2: with a call id, the call is journalled as the turn "call:" + id of the sender:
#           the block at position 0 (with its effect, as a block), the finished result at
#           FINISHED_POSITION; a repeat returns that result with `replayed=True` and
#           changes nothing (TOL-5).
#   Rule 3 (FLT-6): with a call id, the digest of (kind, arguments) is journalled at
#           DIGEST_POSITION together with the call's position for its kind's cap
#           (CALL_USE_POSITION), in the transaction that counts the call: a repeat with
#           other arguments raises CallIdReused; a retry after a crash reuses the
#           position instead of counting the call again (FLT-2).
#   Rule 4 (FLT-1): with `claim=` every write (the count, the block, the held follow-up,
#           the result) is fenced; a stale claim raises LeaseLost.
#   Rule 5 (FLT-7): a refused sender that exists gets an audit record of the refusal.
from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final

import attrs

from markertools._root import InvalidArgument
from markertools.deliver.codec import entry_from_json, entry_to_json
from markertools.deliver.context import TurnContext, summarize_error
from markertools.deliver.failures import warn
from markertools.deliver.loop import (
    DEFAULT_DELIVERY_DEADLINE,
    _audit,
    _block,
    _cancel_signal,
    _check_deadline,
    checked_claim,
    holds,
)
from markertools.deliver.once import (
    CALL_USE_POSITION,
    DIGEST_POSITION,
    FINISHED_POSITION,
    TurnJournal,
)
from markertools.deliver.report import ReportEntry
from markertools.domain.errors import CallIdReused, LeaseLost
from markertools.domain.model import AuditRecord, Task, checked_value, is_goal_task
from markertools.domain.ports import Claim, Ports, TaskListing
from markertools.inject.inert import inert
from markertools.parse.jsonstrict import MAX_BODY_CHARS, MAX_DEPTH
from markertools.parse.kinds import KIND_BY_NAME, KINDS
from markertools.parse.kindspec import KindSpec
from markertools.parse.plan import Command, TurnPlan
from markertools.parse.turn import over_cap_reason
from markertools.parse.validate import validate_parts
from markertools.text.inline import shown
from markertools.text.msg import DEFAULT_LOCALE, Locale, Msg, msg

__all__ = [
    "CALL_LINE",
    "TOOL_NAMES",
    "CallResult",
    "call_result_json",
    "deliver_call",
    "resolve_tool_kind",
]

CALL_LINE: Final[int] = 0  # a call's entry has no line in a turn's text
CALL_TURN_PREFIX: Final[str] = "call:"  # TOL-5: the journal turn id of a call id
MAX_CALL_ID_CHARS: Final[int] = 200
TODO_FIELDS_LIMIT: Final[int] = 20  # todo-list: as many as its report lists (TDL-3)
# TOL-1: every canonical kind as a tool name (`_` for `-`), in the kind table's order
TOOL_NAMES: Final[tuple[str, ...]] = tuple(k.name.replace("-", "_") for k in KINDS)


@attrs.frozen
class CallResult:
    """What one tool call answers (TOL-2): the report entry, whether it is the stored
    result of an earlier call with the same call id (TOL-5), the agent-readable `text`
    (the entry as the report frames it, INJ-7) and the kind's result `fields` as
    JSON-able values (e.g. the created task's id, the polled task's snapshot, the cost)."""

    entry: ReportEntry
    replayed: bool = False
    text: str = ""
    fields: Mapping[str, object] = attrs.field(factory=dict)
    # TOL-4: how many more calls (or blocks) of the kind this turn still runs after this
    # one; None when the call was not counted (refused before its cap) or is a replay
    calls_left: int | None = None

    @property
    def is_error(self) -> bool:
        """MCP `isError`: the call was rejected or skipped."""
        return self.entry.outcome in ("rejected", "skipped")


def resolve_tool_kind(name: object) -> KindSpec | None:
    """TOL-1: the kind a tool name (`task_create`) or canonical kind (`task-create`)
    names; None for anything else - aliases of kinds are not tool names."""
    if not isinstance(name, str) or len(name) > 64:
        return None
    canonical = name.replace("_", "-")
    spec = KIND_BY_NAME.get(canonical)
    return spec if spec is not None and spec.name == canonical else None


def call_result_json(result: CallResult, locale: str = DEFAULT_LOCALE) -> dict[str, Any]:
    """The structuredContent of a tool result (docs/cli.md): `kind`, `outcome`, `target`,
    `reason` (the text the agent reads, in `locale`), `replayed`, `text`, then the kind's
    result fields beside them (never overriding those names)."""
    entry = result.entry
    body: dict[str, Any] = {
        "kind": entry.kind,
        "outcome": entry.outcome,
        "target": entry.target,
        "reason": entry.reason.render(locale),
        "replayed": result.replayed,
        "text": result.text,
    }
    for key, value in result.fields.items():
        body.setdefault(key, value)
    return body


# ---- the arguments as a block body ----------------------------------------------------


def arguments_body(arguments: object) -> str | Msg:
    """The JSON text of a call's arguments (a block's body), or why it can not be one:
    not an object, nested deeper than the block limit, longer than a block body may be,
    or holding a value JSON has no spelling for. One bounded walk (linear time)."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return msg("tools.arguments_not_object", got=type(arguments).__name__)
    size = 0
    stack: list[tuple[object, int]] = [(arguments, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            if depth > MAX_DEPTH:
                return msg("parse.json.too_deep", max=MAX_DEPTH)
            for key, item in value.items():
                if not isinstance(key, str):
                    return msg("tools.arguments_bad_value", what=type(key).__name__)
                size += len(key) + 4
                stack.append((item, depth + 1))
            size += 2
        elif isinstance(value, list | tuple):
            if depth > MAX_DEPTH:
                return msg("parse.json.too_deep", max=MAX_DEPTH)
            stack.extend((item, depth + 1) for item in value)
            size += 2 + len(value)
        elif isinstance(value, str):
            size += len(value) + 2
        elif value is None or isinstance(value, bool):
            size += 5
        elif isinstance(value, int):
            size += max(1, value.bit_length() // 3)
        elif isinstance(value, float):
            if not math.isfinite(value):
                return msg("tools.arguments_bad_value", what="non-finite number")
            size += 24
        else:
            return msg("tools.arguments_bad_value", what=type(value).__name__)
        if size > MAX_BODY_CHARS:
            return msg("tools.arguments_too_long", max=MAX_BODY_CHARS)
    try:
        text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError, RecursionError) as exc:
        return msg("tools.arguments_bad_value", what=summarize_error(exc))
    if len(text) > MAX_BODY_CHARS:
        return msg("tools.arguments_too_long", max=MAX_BODY_CHARS)
    return text


# ---- the call -----------------------------------------------------------------------------


def _call_text(entry: ReportEntry, locale: str, *, after_turn: bool = False) -> str:
    """The entry as the agent reads it: a head line (kind, outcome, target) and the
    reason or result (data of other tasks arrives framed, INJ-7); made inert as a report."""
    head = msg(
        "tools.entry_target" if entry.target is not None else "tools.entry",
        kind=shown(entry.kind),
        outcome=msg(f"report.outcome_{entry.outcome}"),
        target=shown(entry.target, 400),
    )
    lines = [head.render(locale), entry.reason.render(locale)]
    if after_turn:
        lines.append(msg("tools.goal_after_turn").render(locale))
    return inert("\n".join(lines))


def _result(
    entry: ReportEntry,
    locale: str,
    fields: Mapping[str, object] | None = None,
    *,
    after_turn: bool = False,
    calls_left: int | None = None,
) -> CallResult:
    text = _call_text(entry, locale, after_turn=after_turn)
    return CallResult(entry, False, text, dict(fields or {}), calls_left)


def _refused(kind: str, reason: Msg, locale: str) -> CallResult:
    return _result(ReportEntry(kind, CALL_LINE, "rejected", None, reason), locale)


def _result_to_json(result: CallResult) -> str:
    body = {
        "entry": json.loads(entry_to_json(result.entry)),
        "text": result.text,
        "fields": dict(result.fields),
        "after_turn": False,
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str)


def _result_from_json(text: str) -> CallResult:
    try:
        body = json.loads(text)
        entry = entry_from_json(json.dumps(body["entry"]))
        fields = body.get("fields") or {}
        if not isinstance(fields, dict) or not isinstance(body.get("text"), str):
            raise InvalidArgument("damaged call result")
        return CallResult(entry, True, body["text"], fields)
    except (TypeError, KeyError, RecursionError) as exc:
        raise InvalidArgument(f"damaged call result: {exc}") from None


def call_digest(kind: str, arguments: object) -> str:
    """FLT-6: the digest journalled with a call id: "args:" + the SHA-256 of the canonical
    JSON of [kind, arguments] (keys sorted). Arguments JSON cannot spell (too deep, not
    finite, not a mapping) are digested by their refusal, so the same bad input still
    replays. Linear in the arguments' size (callers bound it first)."""
    body = arguments_body(arguments)
    if isinstance(body, Msg):
        canonical = json.dumps([kind, "!", body.key, repr(body.args)[:400]], ensure_ascii=False)
    else:
        canonical = json.dumps(
            [kind, json.loads(body)], ensure_ascii=False, sort_keys=True, separators=(",", ":")
        )
    return "args:" + hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _sender_refusal(task: Task | None) -> Msg | None:
    """TOL-2 / TOL-7: why this sender may not call a tool at all (None: it may)."""
    if task is None:
        return msg("deliver.why_sender_missing")
    if is_goal_task(task) or task.is_coordinator:
        return msg("deliver.why_goal_or_coordinator")
    if task.status == "interrupted":
        return msg("deliver.why_cancelled")
    if task.status != "running":
        return msg("tools.sender_not_running", status=task.status)
    return None


def _fields(
    spec: KindSpec,
    entry: ReportEntry,
    ports: Ports,
    cmd: Command,
    sender: Task,
    listing: TaskListing | None = None,
) -> dict[str, object]:
    """The kind's result fields (JSON-able) of a done call; {} when none or unreadable.
    Only ids, statuses, numbers and times: a text another task wrote (a prompt, a result,
    a todo's title) reaches the agent only framed, in `text` (INJ-7)."""
    if entry.outcome != "done":
        return {}
    params: Any = cmd.params
    try:
        if spec.name == "wait-threads":
            found = ports.tasks.get_tasks(list(params.task_ids))
            return {"tasks": [_snapshot(found[i]) for i in params.task_ids if i in found]}
        if spec.name == "task-list":
            listing = listing or ports.tasks.list_tasks(
                sender.project_id, status=params.status, q=params.q, limit=params.limit
            )
            return {
                "tasks": [_snapshot(t) for t in listing.rows[: params.limit]],
                "total": listing.total,
                "counts": dict(listing.counts),
            }
        if spec.name == "todo-list":
            from markertools.domain.model import UNFINISHED_TODO_STATUSES

            statuses = {params.status} if params.status is not None else UNFINISHED_TODO_STATUSES
            todos = ports.todos.list_todos(
                sender.project_id, statuses=statuses, q=params.q, limit=TODO_FIELDS_LIMIT
            )
            return {
                "todos": [
                    {"id": t.id, "status": t.status, "priority": t.priority} for t in todos.rows
                ],
                "total": todos.total,
            }
        if spec.creates_task and entry.target is not None:
            return {"task_id": entry.target}
        if spec.name in ("task-poll", "task-cancel", "task-retry") and entry.target:
            task = ports.tasks.get_task(entry.target)
            return {} if task is None else {"task": _snapshot(task)}
        if spec.name == "task-cost" and entry.target:
            rows = ports.costs.task_costs(entry.target)
            usd = sum((r.usd for r in rows if r.usd is not None and r.priced), start=0)
            return {
                "cost": {
                    "task_id": entry.target,
                    "usd": str(usd),
                    "tokens": sum(r.tokens for r in rows),
                    "rows": len(rows),
                }
            }
        if spec.name in ("todo-create", "todo-update", "automation-create") and entry.target:
            return {"id": entry.target}
        if spec.name == "approval-answer" and entry.target and ports.approvals is not None:
            answered = ports.approvals.get_approval(entry.target)
            if answered is not None:
                return {
                    "approval": {
                        "id": answered.id,
                        "task_id": answered.task_id,
                        "status": answered.status,
                    }
                }
    except Exception as exc:  # the entry stands; its fields are a convenience
        warn(f"{spec.name} result fields", exc)
    return {}


def _snapshot(task: Task) -> dict[str, object]:
    return {
        "id": task.id,
        "status": task.status,
        "project_id": task.project_id,
        "parent_task_id": task.parent_task_id,
        "created_at": task.created_at,
        "turn": task.turn,
    }


def deliver_call(
    kind: str,
    arguments: Mapping[str, object] | None,
    *,
    sender: str | Task,
    ports: Ports,
    locale: str = DEFAULT_LOCALE,
    call_id: str | None = None,
    deadline: float | None = DEFAULT_DELIVERY_DEADLINE,
    cancel: object = None,
    claim: Claim | None = None,
    waited: float = 0.0,
) -> CallResult:
    """Deliver one same-turn tool call of `sender` (TOL-2): a one-block turn through the
    same validation, clamps, gates, handler, audit record (source "tool") and journal as
    a block, answered at once.

    Args:
        kind: the tool name (`task_create`) or canonical kind (`task-create`); aliases of
            kinds are not tool names (an unknown name is rejected).
        arguments: the call's arguments: the block's JSON body as a mapping.
        sender: the bound task (its id, or the Task): it must exist, be `running`, and be
            neither a goal nor a coordinator task (TRN-4's reason, TOL-7).
        ports: what delivery may touch; `ports.calls` (the CallLedger) is required.
        locale: "en" / "zh" for the texts.
        call_id: the call's idempotency key (TOL-5): with one (and `ports.journal`), the
            call is applied at most once per (sender, call id); a repeat returns the first
            result with `replayed=True`. The same call id with other arguments raises
            `CallIdReused` (FLT-6), nothing run or written; a retry after a crash
            counts toward the cap once (FLT-2).
        deadline, cancel: as for deliver_turn (TRN-11): bounds on a poll or wait.
        claim: as for deliver_turn (FLT-1): every write fenced, LeaseLost once the claim
            lost the task. The worker host passes it; a stand-alone tools server binds by
            token only (a token is revoked when its task leaves `running`).
        waited: seconds the call already waited before this delivery (TOL-11: a tool
            server that waits for a poll's or wait's targets without holding a thread,
            then delivers): a task-poll's or wait-threads' clock starts that far back,
            so its timeout, the `deadline` and the waited time it reports all count
            from when the call began; the report then says "timed out after N s" or
            that the call's limit cut it short exactly as without the earlier wait.
            0 (the default) for a call delivered when it arrives.

    The caps of the sender's current turn (`Task.turn`) are shared with the turn's
    blocks (TOL-4). A goal-convert call's "/goal ..." is held and queued right after
    this turn's report (TOL-7). Nothing in `arguments` makes it raise; ValueError only for
    a locale, deadline, waited, cancel signal or claim outside what is documented,
    CallIdReused (a ValueError) for a call id reused with other arguments, LeaseLost for
    a stale claim - all MarkertoolsErrors. `CallResult.calls_left` says how many more
    calls of the kind the turn still runs (TOL-4).
    """
    locale = checked_value(Locale, locale, "locale")
    seconds = _check_deadline(deadline)
    if (
        isinstance(waited, bool)
        or not isinstance(waited, int | float)
        or not math.isfinite(waited)
        or waited < 0
    ):
        raise InvalidArgument(f"waited must be a finite number of seconds >= 0; got {waited!r}")
    stop = _cancel_signal(cancel)
    spec = resolve_tool_kind(kind)
    shown_kind = spec.name if spec is not None else (kind if isinstance(kind, str) else "?")
    if spec is None:
        return _refused(
            shown(shown_kind, 64), msg("tools.unknown_tool", name=shown(kind, 64)), locale
        )
    if ports.calls is None:
        return _refused(spec.name, msg("tools.no_ledger"), locale)
    sender_id = sender if isinstance(sender, str) else getattr(sender, "id", None)
    if not isinstance(sender_id, str):
        return _refused(spec.name, msg("deliver.why_sender_missing"), locale)
    claim = checked_claim(claim, sender_id, ports)
    fence = None
    if claim is not None and ports.fencing is not None:
        fencing, held_claim = ports.fencing, claim

        def fence() -> AbstractContextManager[None]:
            return fencing.fenced(held_claim)

    turn_id: str | None = None
    if call_id is not None:
        if not isinstance(call_id, str) or not call_id.strip() or len(call_id) > MAX_CALL_ID_CHARS:
            return _refused(spec.name, msg("tools.bad_call_id", max=MAX_CALL_ID_CHARS), locale)
        if ports.journal is None:
            return _refused(spec.name, msg("tools.no_journal"), locale)
        turn_id = CALL_TURN_PREFIX + call_id
    digest = call_digest(spec.name, arguments) if turn_id is not None else None
    stored: Mapping[int, str] = {}
    try:
        if turn_id is not None and ports.journal is not None:  # TOL-5: a repeat
            stored = ports.journal.block_entries(sender_id, turn_id)
            earlier = stored.get(DIGEST_POSITION)
            if earlier is not None and digest is not None and earlier != digest:
                raise CallIdReused(sender_id, str(call_id), earlier, digest)  # Rule 3
            finished = stored.get(FINISHED_POSITION)
            if finished is not None:
                try:
                    return _result_from_json(finished)
                except ValueError as exc:
                    warn("journal (a stored call result is damaged)", exc)
        task = ports.tasks.get_task(sender_id)
    except CallIdReused:
        raise
    except Exception as exc:
        return _refused(
            spec.name, msg("deliver.why_sender_unreadable", error=summarize_error(exc)), locale
        )
    if claim is not None:  # Rule 4 (FLT-1)
        holds(claim, task)
    refusal = _sender_refusal(task)
    if refusal is not None or task is None:
        reason = refusal or msg("deliver.why_sender_missing")
        if task is not None and task.status != "running":  # Rule 5 (FLT-7): audited
            _audit_refusal(ports, task, spec.name, reason)
        return _refused(spec.name, reason, locale)
    try:  # TOL-4 (Rule 1): the call counts toward the turn's cap, valid or not
        position = _count(ports, task, spec.name, sender_id, turn_id, digest, stored, fence)
    except CallIdReused:
        raise
    except LeaseLost:
        raise
    except Exception as exc:
        return _refused(spec.name, msg("deliver.port_failed", error=summarize_error(exc)), locale)
    left = max(0, spec.cap - position)
    if position > spec.cap:
        entry = ReportEntry(spec.name, CALL_LINE, "ignored", None, over_cap_reason(spec, position))
        return _finish(ports, sender_id, turn_id, _result(entry, locale, calls_left=left), fence)
    body = arguments_body(arguments)
    validated = body if isinstance(body, Msg) else _validate(spec, body)
    if isinstance(validated, Msg):
        entry = ReportEntry(spec.name, CALL_LINE, "skipped", None, validated)
        return _finish(ports, sender_id, turn_id, _result(entry, locale, calls_left=left), fence)
    cmd = validated
    plan = TurnPlan((cmd,))
    try:
        journal = TurnJournal.read(ports.journal, sender_id, turn_id, fence=fence)
    except Exception as exc:
        return _refused(
            spec.name, msg("deliver.why_journal_unreadable", error=summarize_error(exc)), locale
        )
    journal.restore(plan)
    started = _now(ports)
    began = None if started is None else started - float(waited)  # TOL-11
    deadline_at = None if seconds is None or began is None else began + seconds
    ctx = TurnContext(
        task,
        ports,
        locale,
        plan,
        turn_id=turn_id,
        deadline_at=deadline_at,
        deadline_seconds=seconds,
        cancel=stop,
        journal=journal,
        source="tool",
        waited=float(waited),
    )
    entry = _block(0, cmd, ctx)
    held = ctx.followups_after_report
    if held and journal.restored(0) is None:  # TOL-7: after this turn's report
        try:
            with fence() if fence is not None else contextlib.nullcontext():
                for text in held:
                    ports.calls.hold_followup(task.id, task.turn, text)
        except LeaseLost:
            raise
        except Exception as exc:
            warn("calls.hold_followup", exc)
            entry = _audit(
                ctx, ctx.rejected(cmd, None, msg("deliver.port_failed", error=summarize_error(exc)))
            )
    fields = _fields(spec, entry, ports, cmd, ctx.sender, ctx.listing)
    result = _result(entry, locale, fields, after_turn=bool(held), calls_left=left)
    return _finish(ports, sender_id, turn_id, result, fence)


def _validate(spec: KindSpec, body: str) -> Command | Msg:
    try:
        parts = validate_parts(spec, body)
    except Exception as exc:  # a bug in one call's validation stays there
        return msg("parse.internal_error", kind=spec.name, error=type(exc).__name__)
    if isinstance(parts, Msg):
        return parts
    params, notes = parts
    return Command(spec.name, CALL_LINE, params, spec.name.replace("-", "_"), notes)


def _count(
    ports: Ports,
    task: Task,
    kind: str,
    sender_id: str,
    turn_id: str | None,
    digest: str | None,
    stored: Mapping[int, str],
    fence: Callable[[], AbstractContextManager[None]] | None,
) -> int:
    """TOL-4 / Rule 3: the call's position for its kind's cap. With a call id it is
    journalled with the arguments' digest in the counting transaction, and a retry
    reuses it (the call counts once however often it is retried)."""
    assert ports.calls is not None
    journal = ports.journal
    if turn_id is None or journal is None or digest is None:
        with fence() if fence is not None else contextlib.nullcontext():
            return ports.calls.record_turn_use(task.id, task.turn, kind)
    used = stored.get(CALL_USE_POSITION)
    if used is not None and used.isdigit():
        return int(used)
    with fence() if fence is not None else journal.atomic():
        again = journal.block_entries(sender_id, turn_id)
        earlier = again.get(DIGEST_POSITION)
        if earlier is not None and earlier != digest:
            raise CallIdReused(sender_id, turn_id.removeprefix(CALL_TURN_PREFIX), earlier, digest)
        used = again.get(CALL_USE_POSITION)
        if used is not None and used.isdigit():
            return int(used)
        position = ports.calls.record_turn_use(task.id, task.turn, kind)
        journal.record_block(sender_id, turn_id, DIGEST_POSITION, digest)
        journal.record_block(sender_id, turn_id, CALL_USE_POSITION, str(position))
        return position


def _audit_refusal(ports: Ports, task: Task, kind: str, reason: Msg) -> None:
    """Rule 5 (FLT-7): the audit record of a call refused for its sender's status."""
    try:
        ports.audit.record_audit(
            AuditRecord(
                sender=task.id,
                kind=kind,
                target=None,
                outcome="rejected",
                reason=reason.render(DEFAULT_LOCALE),
                time=ports.clock.now(),
                source="tool",
            )
        )
    except Exception as exc:  # nothing ran; a failing audit cannot change that
        warn("audit", exc)


def _finish(
    ports: Ports,
    sender_id: str,
    turn_id: str | None,
    result: CallResult,
    fence: Callable[[], AbstractContextManager[None]] | None = None,
) -> CallResult:
    """TOL-5: journal the call's result once (a failing write is logged: a repeat then
    runs the journalled block's restore path)."""
    if turn_id is not None and ports.journal is not None:
        try:
            with fence() if fence is not None else contextlib.nullcontext():
                ports.journal.record_block(
                    sender_id, turn_id, FINISHED_POSITION, _result_to_json(result)
                )
        except LeaseLost:
            raise
        except Exception as exc:
            warn("journal.record_block (a call result)", exc)
    return result


def _now(ports: Ports) -> float | None:
    try:
        return ports.clock.now()
    except Exception:
        return None
