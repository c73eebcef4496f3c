# Owns: the task-files handler (FIL-1..5) and its pure gate (FIL-2): gather the facts
# (target, lineage, `read` permission, the configured resolver), decide, read through
# the TaskFiles port, render the listing or text as framed data (INJ-7).
#
# Invariants:
#   Rule 1: `files_gate` is pure and checks, first failure wins: (1) `read` is granted -
#           a failed lookup denies (GAT-4) and says so; checked first, so a sender
#           without `read` learns nothing about other tasks; (2) target exists; (3) same
#           project; (4) relation: the target is the sender itself, or in the sender's
#           lineage (LIN-4), or has the same creator (DOM-3); (5) the target is not on
#           the `cloud` executor; (6) a resolver is configured; (7) the target's `host`,
#           when set, equals the resolver's local host (case-insensitive, as host names
#           are); an unknown local host never matches a set host.
#   Rule 2: the path is validated (`paths.check_relative_path`) before any port call;
#           the port receives the normalised relative path (None = top level) and must
#           validate again (the adapter does).
#   Rule 3: a task with no local worktree is reported as such by the port (FileRefused),
#           never invented; every FileRefused becomes a rejection with its reason.
#   Rule 4: listings and file text are data another task wrote: always framed.
from __future__ import annotations

from typing import Final

from markertools.deliver.context import Handler, HandlerTable, TurnContext, handler_table
from markertools.deliver.paths import check_relative_path, display_name
from markertools.deliver.report import ReportEntry
from markertools.domain.decision import Allowed, Decision, Denied, PermissionAnswer
from markertools.domain.model import Task, same_creator
from markertools.domain.ports import FileListing, FileRefused, FileText
from markertools.inject.framing import frame_data
from markertools.parse.params import TaskFilesParams
from markertools.parse.plan import Command
from markertools.text.msg import Msg, msg

MAX_FILE_CHARS: Final[int] = 20000  # FIL-4
LIST_LIMIT: Final[int] = 50  # FIL-3


def hosts_match(target_host: str | None, local_host: str | None) -> bool:
    """FIL-2: an unset (null or blank) target host is local; otherwise it must equal the
    configured local host, compared case-insensitively; no local host matches nothing."""
    if target_host is None or target_host.strip() == "":
        return True
    if local_host is None or local_host.strip() == "":
        return False
    return target_host.strip().casefold() == local_host.strip().casefold()


def files_gate(
    sender: Task,
    target: Task | None,
    *,
    target_id: str,
    lineage: bool,
    read: PermissionAnswer,
    resolver_configured: bool,
    local_host: str | None,
) -> Decision:
    """FIL-2 as a pure function of the facts (Rule 1). `lineage` is LIN-4 for the target
    (only consulted when the target is neither the sender nor same-creator)."""
    shown = display_name(target_id)
    if read.permission != "read" or read.failed:
        return Denied(msg("files.permission_failed", error=read.error or "unknown error"))
    if not read.granted:
        return Denied(msg("files.permission_denied"))
    if target is None:
        return Denied(msg("files.target_missing", task=shown))
    if target.project_id != sender.project_id:
        return Denied(msg("files.other_project", task=shown))
    related = target.id == sender.id or same_creator(sender, target) or lineage
    if not related:
        return Denied(msg("files.not_related", task=shown))
    if target.executor == "cloud":
        return Denied(msg("files.cloud_executor", task=shown))
    if not resolver_configured:
        return Denied(msg("files.no_resolver"))
    if not hosts_match(target.host, local_host):
        return Denied(
            msg(
                "files.other_host",
                task=shown,
                host=display_name(target.host or ""),
                local=display_name(local_host) if local_host else msg("common.none"),
            )
        )
    return Allowed()


def _listing_result(listing: FileListing, task: str, where: str | None, ctx: TurnContext) -> Msg:
    if len(listing.entries) > LIST_LIMIT:  # an adapter that listed too much
        extra = len(listing.entries) - LIST_LIMIT
        listing = FileListing(listing.entries[:LIST_LIMIT], listing.omitted + extra)
    place: Msg | str = display_name(where) if where else msg("files.top_level")
    if not listing.entries and listing.omitted == 0:
        return msg("files.listing_empty", dir=place, task=task)
    label = msg("files.label_listing", dir=place, task=task)
    framed = frame_data("\n".join(listing.entries), label, ctx.ports.random, ctx.locale)
    more = msg("files.listing_more", n=listing.omitted) if listing.omitted > 0 else ""
    return msg(
        "files.listing",
        dir=place,
        task=task,
        shown=len(listing.entries),
        more=more,
        data=framed.text,
    )


def _file_result(answer: FileText, task: str, ctx: TurnContext) -> Msg:
    if len(answer.text) > MAX_FILE_CHARS:  # an adapter that ignored max_chars
        answer = FileText(answer.path, answer.text[:MAX_FILE_CHARS], True, len(answer.text))
    path = display_name(answer.path)
    shown = len(answer.text)
    size: Msg
    if not answer.truncated:
        size = msg("files.size_full", chars=shown)
    elif answer.total_chars is not None:
        size = msg("files.truncated_of", shown=shown, total=answer.total_chars)
    elif answer.size_bytes is not None:
        size = msg("files.truncated_bytes", shown=shown, bytes=answer.size_bytes)
    else:
        size = msg("files.truncated", shown=shown)
    label = msg("files.label_file", path=path, task=task)
    framed = frame_data(answer.text, label, ctx.ports.random, ctx.locale)
    return msg("files.file", path=path, task=task, size=size, data=framed.text)


def handle_task_files(cmd: Command, params: TaskFilesParams, ctx: TurnContext) -> ReportEntry:
    ref = ctx.resolve_task_id(params.task_id)
    if isinstance(ref, Msg):
        return ctx.rejected(cmd, params.task_id, ref)
    checked = check_relative_path(params.path)
    if isinstance(checked, Denied):
        return ctx.rejected(cmd, ref, checked.reason)

    sender = ctx.sender
    read = ctx.permission("read")
    target = ctx.ports.tasks.get_task(ref) if read.granted else None
    # the lineage is read only when the gate needs it: not for the same creator either
    lineage = (
        target is not None and not same_creator(sender, target) and ctx.target_in_lineage(target)
    )
    files = ctx.ports.files
    decision = files_gate(
        sender,
        target,
        target_id=ref,
        lineage=lineage,
        read=read,
        resolver_configured=files is not None,
        local_host=files.local_host if files is not None else None,
    )
    if isinstance(decision, Denied):
        return ctx.rejected(cmd, ref, decision.reason)
    assert target is not None and files is not None  # the gate allowed: both exist

    where = None if checked.is_top_level else str(checked)
    answer = files.read(target, where, MAX_FILE_CHARS)
    task = display_name(ref)
    if isinstance(answer, FileRefused):
        return ctx.rejected(cmd, ref, answer.reason)
    if isinstance(answer, FileListing):
        return ctx.done(cmd, ref, _listing_result(answer, task, where, ctx))
    return ctx.done(cmd, ref, _file_result(answer, task, ctx))


HANDLERS: Final[HandlerTable] = handler_table(Handler(TaskFilesParams, handle_task_files))
