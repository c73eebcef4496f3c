# Owns: the schema errors of both SQL stores, defined once: `SchemaError` (the database's
# schema cannot be used by this version of markertools) and `SchemaTooNew` (it was
# written by a newer one). markertools_adapters.sqlite and .postgres re-export both, so
# `sqlite.SchemaError is postgres.SchemaError`.
#
# Must never: import a database driver (this is the dialect-neutral half).
from __future__ import annotations

from markertools_adapters.errors import StoreError


class SchemaError(StoreError):
    """The database (its schema) cannot be used with this version of markertools."""


class SchemaTooNew(SchemaError):
    """The database was written by a newer markertools; open it with that version."""


__all__ = ["SchemaError", "SchemaTooNew"]
