# Owns: what delivery returns (TRN-6): one `ReportEntry` per block and the
# `DeliveryReport` (entries, the rendered report message, follow-ups in order).
# Pure values; rendering the message text is `render`'s job.
from __future__ import annotations

from typing import Literal

import attrs

from markertools.text.msg import Msg

EntryOutcome = Literal["done", "rejected", "skipped", "ignored"]


@attrs.frozen
class ReportEntry:
    kind: str  # canonical kind (or the written info string of a near-miss fence)
    line: int
    outcome: EntryOutcome
    target: str | None
    reason: Msg  # the reason (rejected/skipped/ignored) or the result (done)


@attrs.frozen
class DeliveryReport:
    delivered: bool  # False: nothing ran (TRN-3/4/5); then entries is empty
    entries: tuple[ReportEntry, ...] = ()
    message: str | None = None  # the report text queued for the sender
    followups: tuple[str, ...] = ()  # in queue order: the report, then "/goal ..." (GOA-2)
    locale: str = "en"
