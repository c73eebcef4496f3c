# Owns: exactly-once delivery (TRN-9), all of its bookkeeping, in `TurnJournal`: reading
# the delivery journal for (sender, turn id) once; the digest of the turn's input
# (`turn_digest`) journalled with the turn id, and refusing a turn id delivered again
# with other input (`TurnIdReused`); the finished report a replay returns;
# the entries of the blocks an earlier delivery of the turn applied, and how many tasks
# they created (LIN-3); running a block with its effect, audit record and journal row in
# one transaction - or simply again, for a kind whose row says `replay="rerun"`; ids
# derived from (sender, turn id, position) and recognising what an unrecorded earlier
# delivery created; and queueing the report once, journalled with the finished report.
# The delivery loop calls it; the handlers reach the derived ids through the TurnContext.
#
# Must never: run a block whose journalled entry was read; queue the report of a turn
# with an unrecorded block; replay or resume a turn id for input whose digest differs
# from the journalled one (it raises TurnIdReused before anything runs or is written);
# raise for a journal write that fails (the block is rejected, or the report left
# unqueued, with the reason: TRN-8); know a kind by its name (what a kind needs is a
# column of its row in the kind table).
#
# Invariants:
#   Rule 1: without a turn id nothing is read or written here: every block runs and the
#           report is queued as is (the caller opted out of TRN-9).
#   Rule 2: journal rows for (sender, turn id): a block's entry at its position >= 0,
#           the queued follow-ups at REPORT_POSITION and the finished report at
#           FINISHED_POSITION; the last two in the transaction that queues the report;
#           the input's digest at DIGEST_POSITION, written before any block runs.
#   Rule 5: the digest is written only for a turn id with no journal row yet, then the
#           journal is read again, so of two concurrent first deliveries with different
#           input one raises TurnIdReused. Rows without a DIGEST_POSITION row (a turn
#           journalled before digests existed, or whose digest write failed) match any
#           input, and no digest is added to them (it would describe other input).
#   Rule 3: a damaged stored entry is left out (its block runs again and its derived id
#           is recognised); a damaged finished report is not replayed (the turn resumes).
#   Rule 4: a turn discarded for good (`record_discard`) is finished too: a redelivery
#           replays its report.
#   Rule 6 (FLT-1): with a claim every write here - the digest and pending rows, each
#           block's effect with its row, the report - happens inside the store's
#           `fenced(claim)` transaction, so a runner that lost its task writes nothing
#           (LeaseLost propagates out of the delivery, never becomes a rejected block).
#   Rule 7 (FLT-2): the pending row (PENDING_POSITION: epoch, outcome, locale, text) is
#           written with the digest, before the first block runs; a turn is pending
#           while it has that row and no FINISHED_POSITION row.
#   Rule 8 (FLT-6): the digest row holds the input's digest and the outcome
#           ("DIGEST|outcome:OUTCOME"): the same turn id with another outcome is refused
#           like other text. A digest row without the outcome (written before) compares
#           the text alone.
from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Final

import attrs

from markertools.deliver.codec import (
    entry_from_json,
    entry_to_json,
    replayed,
    report_from_json,
    report_to_json,
)
from markertools.deliver.failures import summarize_error, warn
from markertools.deliver.report import DeliveryReport, ReportEntry
from markertools.domain.errors import LeaseLost, MarkertoolsError
from markertools.domain.ports import DeliveryJournal, FollowupQueue, PendingTurn
from markertools.parse.kinds import kind_of
from markertools.parse.plan import Command, TurnPlan

REPORT_POSITION: Final[int] = -1  # the journal row of the queued report (Rule 2)
FINISHED_POSITION: Final[int] = -2  # the journal row of the finished delivery's report
DIGEST_POSITION: Final[int] = -3  # the journal row of the input's digest (Rules 2, 5)
PENDING_POSITION: Final[int] = -4  # FLT-2: the turn's delivery began (Rule 7)
CALL_USE_POSITION: Final[int] = -5  # FLT-2: a call's position for its kind's cap
OUTCOME_MARK: Final[str] = "|outcome:"  # Rule 8
DIGEST_HEAD: Final[int] = 12  # hex digits of a digest an error message shows


def turn_digest(turn: str | TurnPlan) -> str:
    """TRN-9: the digest journalled with a turn id. For a turn's text:
    "text:" + the SHA-256 (hex) of its UTF-8 bytes. For a TurnPlan: "plan:" + the SHA-256
    of its canonical JSON - the commands in order as [kind, line, params class, params
    fields] and the issues as [kind, line, outcome], keys sorted. A text and the plan
    parsed from it have different digests: deliver a turn id always as the same input."""
    if isinstance(turn, TurnPlan):
        canonical = {
            "commands": [
                [c.kind, c.line, type(c.params).__name__, attrs.asdict(c.params)]
                for c in turn.commands
            ],
            "issues": [[i.kind, i.line, i.outcome] for i in turn.issues],
        }
        text = json.dumps(canonical, sort_keys=True, ensure_ascii=False, default=repr)
        return "plan:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return "text:" + hashlib.sha256(turn.encode("utf-8", "surrogatepass")).hexdigest()


def digest_head(digest: str) -> str:
    """The digest as an error message shows it: its kind and first DIGEST_HEAD hex digits
    (and the outcome, when the digest carries one: Rule 8)."""
    digest, _, outcome = digest.partition(OUTCOME_MARK)
    kind, _, hexdigest = digest.partition(":")
    head = f"{kind}:{hexdigest[:DIGEST_HEAD]}" if hexdigest else digest[: DIGEST_HEAD + 5]
    return f"{head}…/{outcome}" if outcome else f"{head}…"


def same_input(stored: str, given: str) -> bool:
    """Rule 8: whether a journalled digest row matches this delivery's ("DIGEST|outcome:X");
    a row written before outcomes were journalled compares the text's digest alone."""
    if OUTCOME_MARK in stored:
        return stored == given
    return stored == given.partition(OUTCOME_MARK)[0]


def pending_entry(epoch: int, outcome: str, locale: str, text: str | None, now: float) -> str:
    """Rule 7: the pending row of a turn (JSON)."""
    body = {"epoch": epoch, "outcome": outcome, "locale": locale, "text": text, "at": now}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def pending_turn_of(task_id: str, turn_id: str, entry: str) -> PendingTurn | None:
    """FLT-2: the pending turn a stored pending row describes (None: a damaged row)."""
    try:
        body = json.loads(entry)
        text = body.get("text")
        epoch, at = body.get("epoch", 0), body.get("at", 0.0)
        if (
            not isinstance(body.get("outcome"), str)
            or not isinstance(body.get("locale"), str)
            or not (text is None or isinstance(text, str))
            or isinstance(epoch, bool)
            or not isinstance(epoch, int)
            or isinstance(at, bool)
            or not isinstance(at, int | float)
        ):
            return None
        return PendingTurn(task_id, turn_id, epoch, body["outcome"], body["locale"], text, at)
    except (ValueError, TypeError, AttributeError, RecursionError):
        return None


class TurnIdReused(MarkertoolsError, ValueError):
    """TRN-9: a turn id was delivered again with input whose digest differs from the one
    journalled with it: a caller error (a turn id must be unique per sender task), raised
    before anything runs, is written or is replayed. `stored` and `given` are the full
    digests (`turn_digest`)."""

    def __init__(self, sender: str, turn_id: str, stored: str, given: str) -> None:
        super().__init__(sender, turn_id, stored, given)  # picklable: args rebuild it
        self.sender = sender
        self.turn_id = turn_id
        self.stored = stored
        self.given = given

    def __str__(self) -> str:
        return (
            f"turn id {self.turn_id!r} of sender {self.sender!r} was already delivered with"
            f" other input (journalled digest {digest_head(self.stored)}, this one"
            f" {digest_head(self.given)}): nothing was run or replayed; a turn id names one"
            " turn of one sender task - give a new turn its own id"
        )


def journalled(cmd: Command) -> bool:
    """TRN-9: True when a block of `cmd`'s kind is applied once and journalled; False for
    a kind whose row says it reruns. A kind outside the table is journalled (its
    rejection is recorded like any other entry)."""
    spec = kind_of(cmd.kind)
    return spec is None or spec.replay == "journal"


def creates_task(cmd: Command) -> bool:
    """True when a block of `cmd`'s kind creates a task (its row's `creates_task`)."""
    spec = kind_of(cmd.kind)
    return spec is not None and spec.creates_task


class TurnJournal:
    """TRN-9 for one delivery of one turn: what an earlier delivery of (sender, turn id)
    applied, and the one way this delivery applies a block and queues its report."""

    def __init__(
        self,
        journal: DeliveryJournal | None,
        sender_id: str,
        turn_id: str | None,
        fence: Callable[[], AbstractContextManager[None]] | None = None,
    ):
        self._journal = journal if turn_id is not None else None  # Rule 1
        self._fence = fence  # Rule 6: the store's fenced(claim), or None (no claim)
        self._sender_id = sender_id
        self._turn_id = turn_id
        self._applied: dict[int, str] = {}
        self._restored: dict[int, ReportEntry] = {}
        self._restored_children = 0
        self._position = 0
        self._unrecorded = 0

    @classmethod
    def read(
        cls,
        journal: DeliveryJournal | None,
        sender_id: str,
        turn_id: str | None,
        digest: str | None = None,
        *,
        pending: str | None = None,
        fence: Callable[[], AbstractContextManager[None]] | None = None,
    ) -> TurnJournal:
        """The journal of (sender, turn id), read once - twice when `digest` (the input's
        `turn_digest` with its outcome, Rule 8) and `pending` (Rule 7) are journalled by
        this call (Rule 5). Raises TurnIdReused when the journalled digest differs from
        `digest`, LeaseLost when `fence` refuses (Rule 6), and whatever the journal
        raises: the caller then runs nothing (running could apply a block twice)."""
        opened = cls(journal, sender_id, turn_id, fence)
        if opened._journal is None or turn_id is None:
            return opened
        opened._applied = dict(opened._journal.block_entries(sender_id, turn_id))
        if digest is None:
            return opened
        if not opened._applied:  # Rule 5: a new turn id - claim it for this input
            try:
                with opened._transaction():
                    opened._journal.record_block(sender_id, turn_id, DIGEST_POSITION, digest)
                    if pending is not None:  # Rule 7
                        opened._journal.record_block(sender_id, turn_id, PENDING_POSITION, pending)
            except LeaseLost:
                raise
            except Exception as exc:  # the next delivery journals it; blocks still run once
                warn("journal.record_block (the turn's digest)", exc)
                return opened
            opened._applied = dict(opened._journal.block_entries(sender_id, turn_id))
        stored = opened._applied.get(DIGEST_POSITION)
        if stored is not None and not same_input(stored, digest):
            raise TurnIdReused(sender_id, turn_id, stored, digest)
        return opened

    def _transaction(self) -> AbstractContextManager[None]:
        """Rule 6: the store's fenced transaction with a claim, else its atomic()."""
        if self._fence is not None:
            return self._fence()
        if self._journal is not None:
            return self._journal.atomic()
        return contextlib.nullcontext()

    @property
    def turn_id(self) -> str | None:
        return self._turn_id

    # ---- what an earlier delivery of the turn did --------------------------------------

    def finished(self) -> DeliveryReport | None:
        """The report of an earlier delivery that finished, marked as a replay; None when
        none finished (Rule 3: nor when its stored report is damaged)."""
        stored = self._applied.get(FINISHED_POSITION)
        if stored is None:
            return None
        try:
            return replayed(report_from_json(stored))
        except ValueError as exc:
            warn("journal (a stored report is damaged)", exc)
            return None

    def restore(self, plan: TurnPlan) -> None:
        """Read the stored entries of `plan`'s blocks (Rule 3) and count the tasks they
        created (LIN-3: they are this turn's children, not earlier ones)."""
        blocks = len(plan.commands)
        for index, stored in self._applied.items():  # positions < 0 are never blocks
            if 0 <= index < blocks:
                try:
                    self._restored[index] = entry_from_json(stored)
                except ValueError as exc:
                    warn("journal (a stored entry is damaged)", exc)
        self._restored_children = sum(
            1
            for index, entry in self._restored.items()
            if entry.outcome == "done" and creates_task(plan.commands[index])
        )

    def restored(self, index: int) -> ReportEntry | None:
        """The entry of block `index` when an earlier delivery of the turn applied it."""
        return self._restored.get(index)

    @property
    def restored_children(self) -> int:
        """Tasks this turn's restored blocks created (LIN-3 counts them as this turn's)."""
        return self._restored_children

    # ---- applying a block ------------------------------------------------------------

    def run(
        self,
        index: int,
        cmd: Command,
        execute: Callable[[], ReportEntry],
        audit: Callable[[ReportEntry], ReportEntry],
        failed: Callable[[Exception], ReportEntry],
    ) -> ReportEntry:
        """Run block `index`: `execute()` applies it, `audit(entry)` writes its audit
        record; when either raises, `failed(exc)` is its entry (TRN-8). With a turn id and
        a journalled kind, the effect, the audit record and the journal row are one
        transaction (fenced with a claim, Rule 6); when that fails it is rolled back, the
        block counts as unrecorded and a redelivery runs it again. A kind that reruns
        (a read, which may wait) runs outside any transaction; with a claim the claim is
        checked before it runs and its audit record is written fenced. LeaseLost is
        never a block's failure: it ends the delivery."""
        self._position = index
        journal, turn_id, fence = self._journal, self._turn_id, self._fence
        try:
            if not journalled(cmd):  # a read: never inside a transaction (it may wait)
                if fence is not None:
                    with fence():  # Rule 6: checked before it runs
                        pass
                entry = execute()
                if fence is None:
                    return audit(entry)
                with fence():
                    return audit(entry)
            if journal is None or turn_id is None:  # no turn id: nothing journalled
                if fence is None:
                    return audit(execute())
                with fence():
                    return audit(execute())
        except LeaseLost:
            raise
        except Exception as exc:
            return failed(exc)
        assert journal is not None and turn_id is not None
        try:
            with self._transaction():  # the effect, its audit record and its journal row
                entry = audit(execute())
                journal.record_block(self._sender_id, turn_id, index, entry_to_json(entry))
        except LeaseLost:
            raise
        except Exception as exc:  # rolled back: a redelivery runs it again
            self._unrecorded += 1
            return failed(exc)
        return entry

    def derived_id(self, prefix: str, nbytes: int) -> str | None:
        """With a turn id, the id of the thing the running block creates, derived from
        (sender, turn id, position) - the same on every delivery of the turn, so a
        re-insert is recognised, never duplicated. None without a turn id."""
        if self._turn_id is None:
            return None
        seed = f"{self._sender_id}\x00{self._turn_id}\x00{self._position}".encode()
        return prefix + hashlib.sha256(seed).hexdigest()[: nbytes * 2]

    def insert_once(
        self, insert: Callable[[Any], None], lookup: Callable[[str], object], thing: Any
    ) -> None:
        """Insert `thing`; when that fails because its derived id already exists (an
        earlier delivery of this turn created it but could not record the block), it is
        recognised, never created twice. Any other failure propagates."""
        try:
            insert(thing)
        except Exception:
            if self._turn_id is None or lookup(thing.id) is None:
                raise

    def created_earlier(self, lookup: Callable[[str], object], thing_id: str) -> bool:
        """True when, with a turn id, the thing with this derived id exists already: an
        earlier delivery of the turn created it (its block unrecorded)."""
        return self._turn_id is not None and lookup(thing_id) is not None

    # ---- the report ----------------------------------------------------------------------

    def queue_report(
        self,
        report: DeliveryReport,
        followups: FollowupQueue,
        release: Callable[[], tuple[str, ...]] | None = None,
    ) -> tuple[tuple[str, ...], str | None]:
        """Queue the report's follow-ups (the message, then any "/goal": TRN-6, GOA-2),
        then - in the same transaction (FLT-2) - what `release()` queues (the follow-ups
        the turn's tool calls held, TOL-7). With a turn id the queueing is journalled
        like a block, in one transaction with the finished report (once per turn); a
        turn with blocks that could not be recorded is not reported yet. Returns
        (queued, None) or (queued so far, why the report is not queued)."""
        journal, turn_id, task_id = self._journal, self._turn_id, self._sender_id
        texts = report.queued_followups
        if journal is None or turn_id is None:
            queued: list[str] = []
            try:
                with self._fence() if self._fence is not None else contextlib.nullcontext():
                    for text in texts:
                        try:
                            followups.enqueue_followup(task_id, text)
                        except LeaseLost:
                            raise
                        except Exception as exc:  # keep the order: never "/goal" alone
                            warn("followups.enqueue_followup", exc)
                            return tuple(queued), summarize_error(exc)
                        queued.append(text)
                    if release is not None and texts:
                        queued.extend(release())
            except LeaseLost:
                raise
            except Exception as exc:
                warn("calls.release_held_followups", exc)
            return tuple(queued), None
        stored = self._applied.get(REPORT_POSITION)
        if stored is not None:  # queued by an earlier delivery of this turn
            try:
                earlier = tuple(str(t) for t in json.loads(stored)["followups"])
            except (ValueError, TypeError, KeyError):
                earlier = texts
            try:
                body = report_to_json(attrs.evolve(report, queued_followups=earlier))
                with self._transaction():
                    journal.record_block(task_id, turn_id, FINISHED_POSITION, body)
            except LeaseLost:
                raise
            except Exception as exc:  # the next delivery rebuilds it again
                warn("journal.record_block", exc)
            return earlier, None
        if self._unrecorded:
            return (), (
                f"{self._unrecorded} block(s) could not be recorded; the report is queued "
                "once every block is: deliver the turn again with the same turn id"
            )
        try:
            with self._transaction():
                for text in texts:
                    followups.enqueue_followup(task_id, text)
                released = release() if release is not None and texts else ()
                queued_all = (*texts, *released)
                body = json.dumps({"followups": list(queued_all)}, ensure_ascii=False)
                journal.record_block(task_id, turn_id, REPORT_POSITION, body)
                finished = attrs.evolve(report, queued_followups=queued_all)
                journal.record_block(task_id, turn_id, FINISHED_POSITION, report_to_json(finished))
        except LeaseLost:
            raise
        except Exception as exc:
            warn("followups.enqueue_followup", exc)
            return (), summarize_error(exc) + " (deliver the turn again with the same turn id)"
        return queued_all, None

    def record_discard(self, report: DeliveryReport) -> None:
        """Rule 4: journal the report of a turn discarded for good as its finished report
        (a failing write is logged: the next delivery decides the same again)."""
        if self._journal is None or self._turn_id is None:
            return
        try:
            with self._transaction():
                self._journal.record_block(
                    self._sender_id, self._turn_id, FINISHED_POSITION, report_to_json(report)
                )
        except LeaseLost:
            raise
        except Exception as exc:
            warn("journal.record_block", exc)
