# Owns: decisions as data (house rule 2): `Allowed` / `Denied(reason)` returned by every
# gate, and `PermissionAnswer`, the tri-state result of a permission lookup
# (granted, denied, or the lookup itself failed - GAT-2 / GAT-4 treat failure apart).
from __future__ import annotations

import attrs

from markertools.text.msg import Msg


@attrs.frozen
class Allowed:
    """A gate's yes; `note` says how, when it matters (e.g. allowed through lineage only)."""

    note: Msg | None = None  # e.g. "allowed through lineage only: permission lookup failed"


@attrs.frozen
class Denied:
    """A gate's no, with the catalogue message `reason` the report shows."""

    reason: Msg


Decision = Allowed | Denied


@attrs.frozen
class PermissionAnswer:
    """One permission lookup's answer (DOM-6): granted, or failed (the lookup raised or
    timed out; `error` summarises it) - a failed lookup is never a plain False (GAT-2/4)."""

    permission: str
    granted: bool
    failed: bool = False  # the lookup raised (or timed out); granted is then False
    error: str | None = None  # one-line summary of the failure

    @classmethod
    def of(cls, permission: str, granted: bool) -> PermissionAnswer:
        return cls(permission, granted)

    @classmethod
    def failure(cls, permission: str, error: str) -> PermissionAnswer:
        return cls(permission, False, True, error)
