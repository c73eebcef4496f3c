# Owns: the table-backed PermissionLookup on PostgreSQL (DOM-6) and the small admin calls
# that fill its tables - the same tables and meaning as markertools_adapters.permissions
# on SQLite: permission_grants(user, project, grant) direct grants,
# role_grants(role, grant) what a role grants, user_roles(user, project, role).
#
# Invariants:
#   Rule 1: a lookup answers True only for an explicit grant (direct, or through a role on
#           that project); a null user holds nothing.
#   Rule 2: a lookup that cannot answer raises (delivery turns that into a failed answer:
#           GAT-2 narrows cancel / retry to lineage, GAT-4 denies everything else).
#   Rule 3: the admin calls are idempotent (ON CONFLICT DO NOTHING).
from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from markertools_adapters.postgres._conn import Database
from markertools_adapters.postgres._text import enc

_LOOKUP_SQL: Final[str] = """
SELECT EXISTS (
    SELECT 1 FROM permission_grants
    WHERE "user" = %(user)s AND project = %(project)s AND "grant" = %(grant)s
) OR EXISTS (
    SELECT 1 FROM user_roles AS ur JOIN role_grants AS rg ON rg.role = ur.role
    WHERE ur."user" = %(user)s AND ur.project = %(project)s AND rg."grant" = %(grant)s
)
"""


class PermissionMixin:
    _db: Database

    def has_permission(self, user: str | None, project_id: str, permission: str) -> bool:
        if user is None:
            return False
        row = self._db.read_one(
            _LOOKUP_SQL, {"user": enc(user), "project": enc(project_id), "grant": enc(permission)}
        )
        return row is not None and row[0] is True

    def grant_permissions(self, user: str, project: str, grants: Iterable[str]) -> None:
        """Add direct grants of `user` on `project`."""
        with self._db.write() as conn, conn.cursor() as cur:
            cur.executemany(
                'INSERT INTO permission_grants ("user", project, "grant") VALUES (%s, %s, %s)'
                " ON CONFLICT DO NOTHING",
                [(enc(user), enc(project), enc(g)) for g in grants],
            )

    def define_role(self, role: str, grants: Iterable[str]) -> None:
        """Add grants to a role."""
        with self._db.write() as conn, conn.cursor() as cur:
            cur.executemany(
                'INSERT INTO role_grants (role, "grant") VALUES (%s, %s) ON CONFLICT DO NOTHING',
                [(enc(role), enc(g)) for g in grants],
            )

    def assign_role(self, user: str, project: str, role: str) -> None:
        """Give `user` the role on `project`."""
        self._db.run(
            'INSERT INTO user_roles ("user", project, role) VALUES (%s, %s, %s)'
            " ON CONFLICT DO NOTHING",
            (enc(user), enc(project), enc(role)),
        )
