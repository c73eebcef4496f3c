# Owns: `RunStore`, every store call one task run makes (FLT-1, FLT-3): each with the run's
# claim - the store's own `claim=` where the method takes one, else inside
# `store.fenced(claim)` - and through the host's outage tracker (`_outage.aretry_call`:
# retried with capped backoff while the store is unavailable, OutageTooLong past the
# budget), each in a worker thread.
#
# Must never: write for the task without the claim; retry a failure a retry cannot cure;
# hide LeaseLost (it propagates: the run stands down).
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from markertools import Claim
from markertools_adapters._outage import Outage, aretry_call

T = TypeVar("T")


class RunStore:
    """The store as one run uses it."""

    def __init__(self, store: Any, claim: Claim, outage: Outage) -> None:
        self.store = store
        self.claim = claim
        self.outage = outage
        self.fencing = callable(getattr(store, "fenced", None))

    async def read(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """A read (or a write of something other than this task's attempt)."""
        return await aretry_call(self.outage, fn, *args, **kw)

    async def fenced(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """A write of this attempt that takes no `claim=`: inside `store.fenced(claim)`."""
        if not self.fencing:
            return await self.read(fn, *args, **kw)
        store, claim = self.store, self.claim

        def work() -> T:
            with store.fenced(claim):
                return fn(*args, **kw)

        return await aretry_call(self.outage, work)

    async def claimed(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """A write that takes `claim=` itself (finish_turn, take_followups, ...)."""
        if self.fencing:
            kw["claim"] = self.claim
        return await aretry_call(self.outage, fn, *args, **kw)


__all__ = ["RunStore"]
