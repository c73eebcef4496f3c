# Owns: proposal and host-settings validation (PLN-1..4, PLN-10): one field table per
# object, then the cross-field rules (unique role names, existingThreadId, unknown
# dependencies, cycles), then structuring into the frozen records with cattrs.
#
# Invariants:
#   Rule 1: every error of a document is reported at once, each at a JSONPath-like
#           path (`$.workers[2].dependsOn[0]`): field errors in document order, then
#           cross-role errors (names, threads), unknown dependencies, cycles.
#   Rule 2: never raises on any input (any Python value, any JSON text except that
#           `validate_proposal_text` raises `NotJson` for text that is not JSON).
#   Rule 3: unknown fields are errors at every level (the safer reading: a misspelt
#           `dependsOn` or `existingThreadId` must not silently change what runs).
#   Rule 4: full-access sandboxes are refused under any spelling.
#   Rule 5: names, ids, models, paths and buckets hold no control character (newline,
#           tab, ESC, DEL, C1, U+2028/2029, bidi controls: `_fields.is_control_character`):
#           they are shown inside one line of what a person confirms. Free text (goal,
#           plan, role, instruction) may hold them; the confirmation escapes them.
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from markertools.plans._codec import structure_host, structure_proposal
from markertools.plans._fields import (
    INVALID,
    Checker,
    Field,
    Issues,
    integer,
    is_valid,
    list_of,
    number,
    obj,
    one_of,
    plain_string,
    quote,
    string,
    type_name,
)
from markertools.plans._graph import find_cycles
from markertools.plans._json import loads_strict
from markertools.plans._model import (
    BACKENDS,
    EFFORTS,
    RANGES,
    SANDBOXES,
    HostCheck,
    ProposalCheck,
)
from markertools.text.msg import Msg, msg

_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_FULL_ACCESS_WORDS: Final[frozenset[str]] = frozenset(
    {"yolo", "bypass", "unrestricted", "unsandboxed", "nosandbox", "none", "off", "disabled"}
)


def is_full_access(value: str) -> bool:
    """Any spelling of a full-access mode: `danger-full-access`, `DangerFullAccess`,
    `full_access`, `full`, `yolo`, `none`/`off` (no sandbox at all), ..."""
    folded = re.sub(r"[^a-z]", "", value.lower())
    return "full" in folded or "danger" in folded or folded in _FULL_ACCESS_WORDS


def _sandbox_refusal(value: str) -> Msg | None:
    if is_full_access(value):
        return msg("plan.sandbox_full", got=quote(value))
    return None


def cwd_form(value: str) -> str | None:
    """'posix' / 'windows' for an absolute path in either form, None otherwise."""
    if value.startswith("/"):
        return "posix"
    if _DRIVE.match(value):
        return "windows"
    return None


def normalize_cwd(value: str) -> str:
    """The comparison form of an absolute cwd: separators collapsed, no trailing
    separator; Windows paths with `\\` and compared case-insensitively."""
    if cwd_form(value) == "windows":
        parts = [p for p in re.split(r"[\\/]+", value[2:]) if p]
        return (value[0].upper() + ":\\" + "\\".join(parts)).lower()
    parts = [p for p in value.split("/") if p]
    return "/" + "/".join(parts)


def _cwd(value: object, path: str, issues: Issues) -> object:
    got = plain_string()(value, path, issues)
    if not isinstance(got, str):
        return INVALID
    form = cwd_form(got)
    if form is None:
        issues.add(path, msg("plan.cwd_absolute", got=quote(got)))
        return INVALID
    segments = re.split(r"[\\/]", got[3:]) if form == "windows" else got.split("/")
    if any(s in (".", "..") for s in segments):
        issues.add(path, msg("plan.cwd_dots", got=quote(got)))
        return INVALID
    return got


def _role_name(value: object, path: str, issues: Issues) -> object:
    got = plain_string()(value, path, issues)
    if not isinstance(got, str):
        return INVALID
    if got != got.strip():
        issues.add(path, msg("plan.name_form", got=quote(got)))
        return INVALID
    return got


def _int_field(name: str, required: bool = True) -> Field:
    return Field(name, integer(*RANGES[name]), required)


ROLE_FIELDS: Final[tuple[Field, ...]] = (
    Field("name", _role_name),
    Field("backend", one_of(BACKENDS)),
    Field("cwd", _cwd),
    Field("role", string()),
    Field("instruction", string()),
    Field("sandbox", one_of(SANDBOXES, _sandbox_refusal)),
    Field("model", plain_string(), required=False),
    Field("effort", one_of(EFFORTS), required=False),
    Field("dependsOn", list_of(plain_string(), unique=True), required=False),
    Field("existingThreadId", plain_string(), required=False),
)
QUOTA_FIELDS: Final[tuple[Field, ...]] = (
    Field("stopAtLeftPercent", number(*RANGES["stopAtLeftPercent"]), required=False),
    Field("bucket", plain_string(), required=False),
    _int_field("windowMinutes", required=False),
)
SUPERVISION_FIELDS: Final[tuple[Field, ...]] = (
    _int_field("decisionTimeoutMs"),
    _int_field("maxDecisionRetries"),
    _int_field("maxTotalReminders"),
)
PROPOSAL_FIELDS: Final[tuple[Field, ...]] = (
    Field("goal", string()),
    Field("plan", string()),
    Field("workers", list_of(obj(ROLE_FIELDS), *RANGES["workers"])),
    Field("quota", obj(QUOTA_FIELDS)),
    _int_field("maxTurns"),
    _int_field("timeoutMs"),
    Field("allowedModels", list_of(plain_string(), unique=True), required=False),
    Field("supervision", obj(SUPERVISION_FIELDS)),
)
HOST_FIELDS: Final[tuple[Field, ...]] = (
    _int_field("maxConcurrent", required=False),
    _int_field("pollMs", required=False),
    _int_field("maxRuns", required=False),
    _int_field("idleMs", required=False),
    Field("stateDir", plain_string(), required=False),
    Field("codexBin", plain_string(), required=False),
    Field("subagentProvider", plain_string(), required=False),
)
_check_proposal: Final[Checker] = obj(PROPOSAL_FIELDS)
_check_host: Final[Checker] = obj(HOST_FIELDS)


def _workers(top: object) -> list[tuple[int, dict[str, object]]]:
    """(index, checked fields) of every worker that is at least an object."""
    if not isinstance(top, dict):
        return []
    workers = top.get("workers")
    if not isinstance(workers, tuple):  # PartialList is a tuple too
        return []
    return [(i, w) for i, w in enumerate(workers) if isinstance(w, dict)]


def _cross_checks(top: object, thread_cwds: Mapping[str, str], issues: Issues) -> None:
    workers = _workers(top)
    first: dict[str, int] = {}
    threads: dict[str, str] = {}
    for i, w in workers:
        name = w.get("name")
        if isinstance(name, str):
            if name in first:
                where = f"$.workers[{first[name]}]"
                issues.add(
                    f"$.workers[{i}].name",
                    msg("plan.duplicate_role", name=quote(name), where=where),
                )
            else:
                first[name] = i
        tid = w.get("existingThreadId")
        if not isinstance(tid, str):
            continue
        tpath = f"$.workers[{i}].existingThreadId"
        if w.get("backend") == "dsh":
            issues.add(tpath, msg("plan.thread_codex_only", backend=quote("dsh")))
            continue
        owner = threads.get(tid)
        if owner is not None:
            issues.add(tpath, msg("plan.thread_shared", thread=quote(tid), other=quote(owner)))
        elif isinstance(name, str):
            threads[tid] = name
        recorded, cwd = thread_cwds.get(tid), w.get("cwd")
        if (
            recorded is not None
            and isinstance(cwd, str)
            and normalize_cwd(recorded) != normalize_cwd(cwd)
        ):
            issues.add(
                tpath,
                msg(
                    "plan.thread_cwd",
                    thread=quote(tid),
                    recorded=quote(recorded),
                    cwd=quote(cwd),
                ),
            )
    deps: dict[str, list[str]] = {}
    for i, w in workers:
        name = w.get("name")
        listed = w.get("dependsOn", ())
        if not isinstance(listed, tuple):
            continue
        known: list[str] = []
        for k, dep in enumerate(listed):
            if not isinstance(dep, str):
                continue
            if dep not in first:
                issues.add(
                    f"$.workers[{i}].dependsOn[{k}]", msg("plan.unknown_role", name=quote(dep))
                )
            else:
                known.append(dep)
        if isinstance(name, str) and first.get(name) == i:
            deps[name] = known
    for cycle in find_cycles(list(first), deps):
        issues.add("$.workers", msg("plan.cycle", cycle=" -> ".join(cycle), roles=cycle))


def validate_proposal(
    raw: object, *, thread_cwds: Mapping[str, str] | None = None
) -> ProposalCheck:
    """Validate a loaded JSON value as a proposal. `thread_cwds` maps thread ids to
    their recorded cwd where known (PLN-2). Returns the Proposal or every issue."""
    issues = Issues()
    if not isinstance(raw, Mapping):
        issues.add("$", msg("plan.type", expected=msg("plan.t.object"), got=type_name(raw)))
        return ProposalCheck(None, issues.result())
    top = _check_proposal(raw, "$", issues)
    _cross_checks(top, thread_cwds or {}, issues)
    if issues or not is_valid(top) or not isinstance(top, dict):
        return ProposalCheck(None, issues.result())
    return ProposalCheck(structure_proposal(top), ())


def validate_proposal_text(
    text: str, *, thread_cwds: Mapping[str, str] | None = None
) -> ProposalCheck:
    """Parse strict JSON text, then validate it. Raises `NotJson` (only) when the text
    is not a JSON document."""
    return validate_proposal(loads_strict(text), thread_cwds=thread_cwds)


def validate_host_settings(raw: object) -> HostCheck:
    """Validate host settings (PLN-10); absent fields take their defaults."""
    issues = Issues()
    if not isinstance(raw, Mapping):
        issues.add("$", msg("plan.type", expected=msg("plan.t.object"), got=type_name(raw)))
        return HostCheck(None, issues.result())
    top = _check_host(raw, "$", issues)
    if issues or not is_valid(top) or not isinstance(top, dict):
        return HostCheck(None, issues.result())
    return HostCheck(structure_host(top), ())
