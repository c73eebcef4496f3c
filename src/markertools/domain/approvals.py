# Owns: the records of approvals (docs/rules.md APR, docs/approvals.md): a task's request
# for approval (`ApprovalRequest`: a command, a file change or a permission, engine-neutral)
# and a project's approval rule (`ApprovalRule`), their enumerations and limits, the
# checks a store runs before it writes one (`check_request`, `check_rule_fields`), who
# answered (`answered_by` texts), and the one-line description every reader shows
# (`describe_request`). Pure: values and string functions only; the matcher is
# `approval_rules`, the answer gate `markertools.deliver.approval_gate`.
#
# Invariants:
#   Rule 1: every record is frozen; times are epoch seconds (DOM-5).
#   Rule 2: a request's status moves only pending -> approved | denied | expired, once
#           (the stores' compare-and-set, APR-3); `answered_by` names who or what did it:
#           "person:NAME", "task:ID", "rule:ID", "expiry", "requeue" or "withdrawn".
#   Rule 3: `check_request` / `check_rule_fields` raise ValueError naming the field for
#           anything a store must not hold (unknown kind or status, an argv that is not a
#           list of strings, texts over their limits), so every store refuses the same.
from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Final, Literal

import attrs

from markertools._root import InvalidArgument

ApprovalKind = Literal["command", "file_change", "permission"]
APPROVAL_KINDS: Final[tuple[ApprovalKind, ...]] = ("command", "file_change", "permission")
ApprovalStatus = Literal["pending", "approved", "denied", "expired"]
APPROVAL_STATUSES: Final[tuple[ApprovalStatus, ...]] = ("pending", "approved", "denied", "expired")
APPROVAL_DECISIONS: Final[tuple[str, ...]] = ("approve", "deny")  # APR-3: approval-answer
RULE_ACTIONS: Final[tuple[str, ...]] = ("allow", "deny")  # APR-2
RULE_KINDS: Final[tuple[str, ...]] = APPROVAL_KINDS
DEFAULT_APPROVAL_TIMEOUT: Final[float] = 900.0  # APR-1: --approval-timeout

MAX_ARGV: Final[int] = 256  # elements of a request's command
MAX_ARG_CHARS: Final[int] = 8192  # code points of one element
MAX_PATHS: Final[int] = 1000  # changed paths of one request
MAX_PATH_CHARS: Final[int] = 4096
MAX_REQUEST_TEXT: Final[int] = 8000  # the agent's reason, the diff summary, an answer's reason
MAX_PREFIX: Final[int] = 32  # elements of a rule's argv prefix
MAX_GLOB_CHARS: Final[int] = 1000

ANSWERED_BY_EXPIRY: Final[str] = "expiry"  # APR-1: unanswered at its expiry
ANSWERED_BY_REQUEUE: Final[str] = "requeue"  # APR-5: its task was requeued
ANSWERED_BY_WITHDRAWN: Final[str] = "withdrawn"  # the turn that asked ended first


def person_answer(name: str) -> str:
    """`answered_by` of a person (`markertools approvals approve|deny --by NAME`)."""
    return "person:" + name


def task_answer(task_id: str) -> str:
    """`answered_by` of an ancestor task's agent (approval-answer, APR-3)."""
    return "task:" + task_id


def rule_answer(rule_id: str) -> str:
    """`answered_by` of a project rule (APR-2)."""
    return "rule:" + rule_id


@attrs.frozen
class ApprovalRequest:
    """APR-1: one request of a task's agent for approval, as a store keeps it.

    `kind` is "command" (`command` the argv, `cwd` its directory), "file_change"
    (`paths` the changed paths, `diff_summary` a short summary of the change) or
    "permission" (extra permissions; `paths` what they would cover, `reason` what for).
    `attempt` is the task's `auto_resume_count` when it asked (the store fills it in):
    the resume preamble after a requeue names the requests of the attempt that ended
    (APR-5). `answered_by` / `answer_reason` / `answered_at` record who answered, why and
    when (Rule 2); all None while pending."""

    id: str
    task_id: str
    project_id: str
    kind: str
    command: tuple[str, ...] | None = None
    cwd: str | None = None
    paths: tuple[str, ...] = ()
    diff_summary: str | None = None
    reason: str | None = None
    asked_at: float = 0.0
    expires_at: float = 0.0
    status: str = "pending"
    answered_by: str | None = None
    answer_reason: str | None = None
    answered_at: float | None = None
    attempt: int = 0

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    @property
    def approved(self) -> bool:
        return self.status == "approved"


@attrs.frozen
class ApprovalRule:
    """APR-2: one rule of a project, tried in `position` order (first match wins).

    `action` "allow" or "deny"; what it matches - at least one of: `kind` (every request
    of that kind), `prefix` (a command whose argv starts with it, any further arguments),
    `path_glob` (a file change whose every path - allow - or any path - deny - lies in
    the task's directory and matches the glob). The store assigns `position` (the rule
    goes last)."""

    id: str
    project_id: str
    action: str
    kind: str | None = None
    prefix: tuple[str, ...] | None = None
    path_glob: str | None = None
    created_at: float = 0.0
    created_by: str | None = None
    position: int = 0


def _text(value: object, where: str, limit: int, *, nonblank: bool = False) -> None:
    if not isinstance(value, str):
        raise InvalidArgument(f"{where}: expected a string, got {type(value).__name__}")
    if len(value) > limit:
        raise InvalidArgument(f"{where}: {len(value)} characters, at most {limit}")
    if "\x00" in value:
        raise InvalidArgument(f"{where}: holds a NUL character")
    if nonblank and not value.strip():
        raise InvalidArgument(f"{where}: must not be blank")


def _optional(value: object, where: str, limit: int) -> None:
    if value is not None:
        _text(value, where, limit)


def _strings(values: object, where: str, *, most: int, chars: int, nonempty: bool = False) -> None:
    if not isinstance(values, tuple):
        raise InvalidArgument(f"{where}: expected a tuple of strings, got {type(values).__name__}")
    if len(values) > most:
        raise InvalidArgument(f"{where}: {len(values)} items, at most {most}")
    if nonempty and not values:
        raise InvalidArgument(f"{where}: must not be empty")
    for index, item in enumerate(values):
        _text(item, f"{where}[{index}]", chars, nonblank=nonempty)


def _one_of(value: object, where: str, allowed: Sequence[str]) -> None:
    if not (isinstance(value, str) and value in allowed):
        raise InvalidArgument(f"{where} must be one of {', '.join(allowed)}; got {value!r}")


def check_request(request: object) -> None:
    """Rule 3: ValueError naming the field unless `request` is a storable request."""
    if not isinstance(request, ApprovalRequest):
        raise InvalidArgument(f"expected an ApprovalRequest, got {type(request).__name__}")
    _text(request.id, "approval id", 200, nonblank=True)
    _text(request.task_id, "approval task_id", 1000, nonblank=True)
    _text(request.project_id, "approval project_id", 1000)
    _one_of(request.kind, "approval kind", APPROVAL_KINDS)
    _one_of(request.status, "approval status", APPROVAL_STATUSES)
    if request.command is not None:
        _strings(request.command, "approval command", most=MAX_ARGV, chars=MAX_ARG_CHARS,
                 nonempty=True)  # fmt: skip
    if request.kind == "command" and request.command is None:
        raise InvalidArgument("approval command: a command request needs its argv")
    _optional(request.cwd, "approval cwd", MAX_PATH_CHARS)
    _strings(request.paths, "approval paths", most=MAX_PATHS, chars=MAX_PATH_CHARS)
    _optional(request.diff_summary, "approval diff_summary", MAX_REQUEST_TEXT)
    _optional(request.reason, "approval reason", MAX_REQUEST_TEXT)
    _optional(request.answered_by, "approval answered_by", 1200)
    _optional(request.answer_reason, "approval answer_reason", MAX_REQUEST_TEXT)
    for name in ("asked_at", "expires_at"):
        value = getattr(request, name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidArgument(f"approval {name}: expected a number, got {type(value).__name__}")
    if (request.status == "pending") != (request.answered_by is None):
        raise InvalidArgument("approval answered_by: set exactly when the request is answered")


def check_rule_fields(rule: object) -> None:
    """Rule 3 for a rule's plain fields (the matcher adds what a prefix or glob may hold:
    `approval_rules.check_rule`)."""
    if not isinstance(rule, ApprovalRule):
        raise InvalidArgument(f"expected an ApprovalRule, got {type(rule).__name__}")
    _text(rule.id, "rule id", 200, nonblank=True)
    _text(rule.project_id, "rule project_id", 1000, nonblank=True)
    _one_of(rule.action, "rule action", RULE_ACTIONS)
    if rule.kind is not None:
        _one_of(rule.kind, "rule kind", RULE_KINDS)
    if rule.prefix is not None:
        _strings(rule.prefix, "rule prefix", most=MAX_PREFIX, chars=MAX_ARG_CHARS, nonempty=True)
    _optional(rule.path_glob, "rule path", MAX_GLOB_CHARS)
    _optional(rule.created_by, "rule created_by", 1000)
    if rule.kind is None and rule.prefix is None and rule.path_glob is None:
        raise InvalidArgument("rule: give a kind, an argv prefix or a path glob")
    if rule.prefix is not None and rule.path_glob is not None:
        raise InvalidArgument("rule: an argv prefix and a path glob cannot be combined")
    if rule.prefix is not None and rule.kind not in (None, "command"):
        raise InvalidArgument(f"rule kind: an argv prefix matches commands, not {rule.kind}")
    if rule.path_glob is not None and rule.kind not in (None, "file_change"):
        raise InvalidArgument(f"rule kind: a path glob matches file changes, not {rule.kind}")


_ESCAPES: Final[dict[int, str]] = {
    **{code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F)},
    **{code: f"\\u{code:04x}" for code in (*range(0x80, 0xA0), 0x2028, 0x2029)},
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord("\t"): "\\t",
}


def flat(text: str) -> str:
    """`text` on one line: every control character (line breaks included) escaped."""
    return text.translate(_ESCAPES)


def requeue_expiry_reason(reason: str | None) -> str:
    """APR-5: why a pending request expired when its task was requeued (the stores
    record it with answered_by "requeue"); `reason` is the ending attempt's cause."""
    text = "its task was requeued before an answer"
    return text + (f" ({flat(reason.strip())[:500]})" if reason and reason.strip() else "")


def shown_argv(argv: Sequence[str]) -> str:
    """An argv as one shell-quoted line (what a person would type), control characters
    escaped."""
    return flat(shlex.join(argv))


def describe_request(request: ApprovalRequest, *, paths: int = 5) -> str:
    """One line saying what `request` asks for (the data readers show, framed or escaped
    by them): the command and its directory, the changed paths (at most `paths`, then how
    many more) with the diff summary, or the permission and what it covers."""
    if request.kind == "command":
        line = shown_argv(request.command or ())
        return line + (f"  (in {flat(request.cwd)})" if request.cwd else "")
    shown = ", ".join(flat(p) for p in request.paths[:paths])
    if len(request.paths) > paths:
        shown += f", … (+{len(request.paths) - paths})"
    summary = flat(request.diff_summary.strip()) if request.diff_summary else ""
    if request.kind == "file_change":
        return (shown or "-") + (f"  ({summary})" if summary else "")
    return shown or flat(request.reason or "-")
