"""Permission lookup adapters: SQLite tables (direct grants and roles), a caller's
function with a timeout, a static mapping (DOM-6; failures raise for GAT-2 / GAT-4)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
import sqlite_utils
from hypothesis import given
from hypothesis import strategies as st

from markertools_adapters.permissions import (
    PERMISSION_TABLES,
    CallablePermissions,
    PermissionLookupError,
    PermissionLookupTimeout,
    SqlitePermissions,
    StaticPermissions,
    assign_role,
    define_role,
    ensure_permission_tables,
    grant_permissions,
)


def _db() -> sqlite_utils.Database:
    db = sqlite_utils.Database(memory=True)
    grant_permissions(db, "u1", "p1", ["read"])
    define_role(db, "developer", ["create_task", "read"])
    define_role(db, "maintainer", ["approve_merge"])
    assign_role(db, "u1", "p1", "developer")
    assign_role(db, "u2", "p2", "maintainer")
    return db


@pytest.mark.rule("DOM-6")
@pytest.mark.parametrize(
    ("user", "project", "permission", "granted"),
    [
        ("u1", "p1", "read", True),  # direct grant (and via role)
        ("u1", "p1", "create_task", True),  # via role
        ("u1", "p1", "approve_merge", False),
        ("u1", "p2", "read", False),  # grants are per project
        ("u2", "p2", "approve_merge", True),
        ("u2", "p1", "approve_merge", False),  # roles are per project too
        ("u3", "p1", "read", False),
        (None, "p1", "read", False),  # no creator holds nothing
        ("u1", "p1", "READ", False),  # names are exact
        ("u1", "p1", "", False),
    ],
)
def test_sqlite_grants_and_roles(
    user: str | None, project: str, permission: str, granted: bool
) -> None:
    assert SqlitePermissions(_db()).has_permission(user, project, permission) is granted


def test_ensure_permission_tables_is_idempotent_and_keyed() -> None:
    db = sqlite_utils.Database(memory=True)
    ensure_permission_tables(db)
    ensure_permission_tables(db)
    assert set(PERMISSION_TABLES) <= set(db.table_names())
    assert db.table("permission_grants").pks == ["user", "project", "grant"]
    assert db.table("role_grants").pks == ["role", "grant"]
    assert db.table("user_roles").pks == ["user", "project", "role"]
    grant_permissions(db, "u", "p", ["read", "read"])
    grant_permissions(db, "u", "p", ["read"])
    assert db.table("permission_grants").count == 1
    # other tables of the database are untouched
    db.table("tasks").insert({"id": "t1"})
    ensure_permission_tables(db)
    assert db.table("tasks").count == 1


@pytest.mark.rule("GAT-4")
def test_missing_tables_raise_instead_of_denying_silently(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    sqlite_utils.Database(empty).table("other").insert({"x": 1})
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        SqlitePermissions(empty).has_permission("u1", "p1", "read")
    with pytest.raises(sqlite3.OperationalError):
        SqlitePermissions(sqlite_utils.Database(memory=True)).has_permission("u1", "p1", "read")


@pytest.mark.rule("GAT-4")
def test_path_is_opened_read_only_and_never_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    with pytest.raises(sqlite3.OperationalError):
        SqlitePermissions(missing).has_permission("u1", "p1", "read")
    assert not missing.exists()


def test_path_mode_is_usable_from_many_threads(tmp_path: Path) -> None:
    path = tmp_path / "perm.db"
    db = sqlite_utils.Database(path)
    grant_permissions(db, "u1", "p1", ["read"])
    db.conn.close()
    lookup = SqlitePermissions(path)
    answers: list[bool] = []
    lock = threading.Lock()

    def ask() -> None:
        for _ in range(20):
            value = lookup.has_permission("u1", "p1", "read")
            with lock:
                answers.append(value)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [True] * 80


@given(
    grants=st.dictionaries(
        st.tuples(st.sampled_from(["u1", "u2"]), st.sampled_from(["p1", "p2"])),
        st.frozensets(st.sampled_from(["read", "create_task", "approve_merge"])),
        max_size=4,
    ),
    user=st.sampled_from(["u1", "u2", None]),
    project=st.sampled_from(["p1", "p2"]),
    permission=st.sampled_from(["read", "create_task", "approve_merge"]),
)
def test_sqlite_agrees_with_static(
    grants: dict[tuple[str, str], frozenset[str]],
    user: str | None,
    project: str,
    permission: str,
) -> None:
    db = sqlite_utils.Database(memory=True)
    ensure_permission_tables(db)
    for (u, p), gs in grants.items():
        grant_permissions(db, u, p, sorted(gs))
    expected = StaticPermissions(grants).has_permission(user, project, permission)
    assert SqlitePermissions(db).has_permission(user, project, permission) is expected


# ---- CallablePermissions ---------------------------------------------------------------


def test_callable_answers_and_arguments() -> None:
    seen: list[tuple[str, str, str]] = []

    def fn(user: str, project: str, permission: str) -> bool:
        seen.append((user, project, permission))
        return permission == "read"

    lookup = CallablePermissions(fn, 5.0)
    assert lookup.has_permission("u1", "p1", "read") is True
    assert lookup.has_permission("u1", "p1", "approve_merge") is False
    assert seen == [("u1", "p1", "read"), ("u1", "p1", "approve_merge")]


@pytest.mark.rule("DOM-3", "DOM-6")
def test_callable_never_grants_a_null_user() -> None:
    """A task without a creator holds no permission, whatever the caller's function
    would say: it is not even asked (a function granting everyone must not grant None)."""
    seen: list[object] = []

    def grants_everyone(user: str, project: str, permission: str) -> bool:
        seen.append(user)
        return True

    lookup = CallablePermissions(grants_everyone, 5.0)
    for permission in ("read", "create_task", "approve_merge"):
        assert lookup.has_permission(None, "p1", permission) is False
    assert seen == []
    assert lookup.has_permission("u1", "p1", "read") is True


@pytest.mark.rule("GAT-4")
def test_callable_errors_propagate() -> None:
    def fn(user: str | None, project: str, permission: str) -> bool:
        raise PermissionError("directory service said no")

    with pytest.raises(PermissionError, match="directory service"):
        CallablePermissions(fn, 5.0).has_permission("u1", "p1", "read")


@pytest.mark.rule("GAT-4")
@pytest.mark.parametrize("value", ["yes", 1, None, "false"])
def test_callable_non_bool_answer_is_a_failure(value: object) -> None:
    lookup = CallablePermissions(lambda u, p, g: value, 5.0)  # type: ignore[arg-type,return-value]
    with pytest.raises(PermissionLookupError, match="not a bool"):
        lookup.has_permission("u1", "p1", "read")


@pytest.mark.rule("GAT-4")
def test_callable_timeout_raises_and_hung_lookups_are_bounded() -> None:
    release = threading.Event()
    started = threading.Semaphore(0)

    def hangs(user: str | None, project: str, permission: str) -> bool:
        started.release()
        release.wait(60)
        return True

    lookup = CallablePermissions(hangs, 0.05, max_in_flight=2)
    for _ in range(2):
        with pytest.raises(PermissionLookupTimeout, match="timed out"):
            lookup.has_permission("u1", "p1", "read")
    # both slots are now held by hung calls: the next lookup times out without a thread
    before = threading.active_count()
    with pytest.raises(PermissionLookupTimeout, match="slot"):
        lookup.has_permission("u1", "p1", "read")
    assert threading.active_count() == before
    release.set()  # the hung calls return and free their slots; lookups work again
    assert started.acquire(timeout=60) and started.acquire(timeout=60)
    deadline = time.monotonic() + 60  # liveness guard, not a timing assertion
    while True:
        try:
            assert lookup.has_permission("u1", "p1", "read") is True
            break
        except PermissionLookupTimeout:
            assert time.monotonic() < deadline, "slots were never released"


def test_callable_rejects_nonpositive_timeout() -> None:
    with pytest.raises(ValueError):
        CallablePermissions(lambda u, p, g: True, 0)
