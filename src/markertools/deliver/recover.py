# Owns: `recover_pending_turns` (FLT-2): what the next runner of a task does first after
# a claim - complete every turn whose delivery began under an earlier claim and never
# finished (a crash, a kill, a lost lease in the middle of a delivery), each with its own
# turn id, so only the blocks not yet applied run (TRN-9) - and `RecoveredTurn`, what
# that did, which the resume preamble shows the agent (so it does not do it again).
#
# Must never: run a pending turn without the new claim (every write is fenced, FLT-1);
# deliver a pending turn under another turn id; raise for a pending row it cannot use
# (a damaged row or one without text is reported, not redelivered).
#
# Invariants:
#   Rule 1: pending turns are completed oldest first, each through `deliver_turn` with
#           its journalled text, outcome, locale and turn id and the new claim.
#   Rule 2: a recovered turn's report is queued as every report is (TRN-6); the caller
#           decides whether the agent reads it in the preamble or as its next input.
from __future__ import annotations

import attrs

from markertools.deliver.loop import DEFAULT_DELIVERY_DEADLINE, checked_claim, deliver_turn
from markertools.deliver.report import DeliveryReport
from markertools.domain.ports import Claim, PendingTurn, Ports


@attrs.frozen
class RecoveredTurn:
    """One pending turn and the report of completing it (None: it could not be
    redelivered - delivered as a plan, so no text was kept)."""

    pending: PendingTurn
    report: DeliveryReport | None


def recover_pending_turns(
    claim: Claim,
    *,
    ports: Ports,
    deadline: float | None = DEFAULT_DELIVERY_DEADLINE,
    cancel: object = None,
) -> tuple[RecoveredTurn, ...]:
    """FLT-2: complete every pending turn of the claimed task (oldest first), fenced by
    `claim`, before the attempt starts its first turn. Returns what each did; the
    reports' messages go into the resume preamble (`InjectionInputs.recovered`).

    Raises ValueError for a claim the store cannot fence, LeaseLost when the claim was
    lost meanwhile (stand down), TurnIdReused never (the text is the journalled one)."""
    checked_claim(claim, claim.task.id, ports)
    assert ports.fencing is not None
    with ports.fencing.fenced(claim):  # LeaseLost at once for a claim lost meanwhile
        pass
    done: list[RecoveredTurn] = []
    for pending in ports.fencing.pending_turns(claim.task.id):
        if pending.text is None:
            done.append(RecoveredTurn(pending, None))
            continue
        report = deliver_turn(
            pending.text,
            sender=claim.task.id,
            outcome=pending.outcome,
            ports=ports,
            locale=pending.locale if pending.locale in ("en", "zh") else "en",
            turn_id=pending.turn_id,
            deadline=deadline,
            cancel=cancel,
            claim=claim,
        )
        done.append(RecoveredTurn(pending, report))
    return tuple(done)


__all__ = ["RecoveredTurn", "recover_pending_turns"]
