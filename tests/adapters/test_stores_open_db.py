"""`markertools_adapters.stores.open_db(path, must_exist=True)` refuses an empty, a bare or
a foreign SQLite file and leaves it byte for byte as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from markertools_adapters.stores import open_db


def test_open_db_must_exist_leaves_foreign_files_untouched(tmp_path: Path):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    bare = tmp_path / "bare.db"
    sqlite3.connect(bare).execute("VACUUM").connection.close()
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE foo (x)")
    conn.commit()
    conn.close()
    for path, needle in ((empty, "empty"), (bare, "no tables"), (other, "foo")):
        before = path.read_bytes()
        with pytest.raises(ValueError, match=needle):
            open_db(path, must_exist=True)
        assert path.read_bytes() == before
