# Owns: decisions as data (house rule 2): `Allowed` / `Denied(reason)` returned by every
# gate, and `PermissionAnswer`, the tri-state result of a permission lookup
# (granted, denied, or the lookup itself failed - GAT-2 / GAT-4 treat failure apart).
from __future__ import annotations

import attrs

from markertools.text.msg import Msg


@attrs.frozen
class Allowed:
    note: Msg | None = None  # e.g. "allowed through lineage only: permission lookup failed"


@attrs.frozen
class Denied:
    reason: Msg


Decision = Allowed | Denied


@attrs.frozen
class PermissionAnswer:
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
