"""The task-files gate (FIL-2) as a pure function, exhaustively, and the permission
failure rule it follows (GAT-4)."""

from __future__ import annotations

import itertools

import pytest
from support.paths import REPO

from markertools.deliver.handlers.files import files_gate, hosts_match
from markertools.domain.decision import Allowed, Denied, PermissionAnswer
from markertools.domain.model import Task

SENDER = Task("s", "p1", created_by="u1")

READ_ANSWERS = {
    "granted": PermissionAnswer.of("read", True),
    "denied": PermissionAnswer.of("read", False),
    "failed": PermissionAnswer.failure("read", "TimeoutError: lookup timed out"),
    "wrong-permission": PermissionAnswer.of("create_task", True),
}


def _target(kind: str, creator: str | None, executor: str, host: str | None) -> Task | None:
    if kind == "missing":
        return None
    if kind == "self":
        return Task("s", "p1", created_by="u1", executor=executor, host=host)
    project = "p2" if kind == "other-project" else "p1"
    return Task("t", project, created_by=creator, executor=executor, host=host)


def _expected(
    kind: str,
    creator: str | None,
    lineage: bool,
    read: str,
    executor: str,
    resolver: bool,
    host: str | None,
    local: str | None,
) -> str | None:
    """FIL-2 / GAT-4 restated in the documented order; None = allowed."""
    if read in ("failed", "wrong-permission"):
        return "files.permission_failed"
    if read == "denied":
        return "files.permission_denied"
    if kind == "missing":
        return "files.target_missing"
    if kind == "other-project":
        return "files.other_project"
    related = kind == "self" or creator == "u1" or lineage
    if not related:
        return "files.not_related"
    if executor == "cloud":
        return "files.cloud_executor"
    if not resolver:
        return "files.no_resolver"
    if host is not None and (local is None or host.casefold() != local.casefold()):
        return "files.other_host"
    return None


@pytest.mark.rule("FIL-2", "GAT-4")
def test_files_gate_exhaustive() -> None:
    checked = 0
    for kind, creator, lineage, read, executor, resolver, host, local in itertools.product(
        ["missing", "other-project", "self", "other"],
        ["u1", "u2", None],
        [False, True],
        list(READ_ANSWERS),
        ["local", "docker", "cloud"],
        [False, True],
        [None, "h1", "H1", "h2"],
        [None, "h1"],
    ):
        target = _target(kind, creator, executor, host)
        decision = files_gate(
            SENDER,
            target,
            target_id="t" if kind != "self" else "s",
            lineage=lineage,
            read=READ_ANSWERS[read],
            resolver_configured=resolver,
            local_host=local,
        )
        expected = _expected(kind, creator, lineage, read, executor, resolver, host, local)
        if expected is None:
            assert isinstance(decision, Allowed), (kind, creator, lineage, read, executor, host)
        else:
            assert isinstance(decision, Denied), (kind, creator, lineage, read, executor, host)
            assert decision.reason.key == expected
        checked += 1
    assert checked == 4 * 3 * 2 * 4 * 3 * 2 * 4 * 2


@pytest.mark.rule("FIL-2")
def test_null_creators_never_count_as_same_creator() -> None:
    """DOM-3 inside FIL-2: two tasks without creator are not related by creator."""
    sender = Task("s", "p1", created_by=None)
    target = Task("t", "p1", created_by=None)
    decision = files_gate(
        sender,
        target,
        target_id="t",
        lineage=False,
        read=PermissionAnswer.of("read", True),
        resolver_configured=True,
        local_host="h1",
    )
    assert isinstance(decision, Denied)
    assert decision.reason.key == "files.not_related"


@pytest.mark.rule("GAT-4")
def test_failed_read_lookup_denies_and_says_why() -> None:
    decision = files_gate(
        SENDER,
        SENDER,  # even the sender's own worktree
        target_id="s",
        lineage=True,
        read=PermissionAnswer.failure("read", "ConnectionError: permission service down"),
        resolver_configured=True,
        local_host="h1",
    )
    assert isinstance(decision, Denied)
    text = decision.reason.render("en")
    assert "permission lookup" in text and "permission service down" in text
    assert "权限查询失败" in decision.reason.render("zh")


@pytest.mark.rule("FIL-2")
@pytest.mark.parametrize(
    ("target_host", "local", "same"),
    [
        (None, None, True),
        ("", "h1", True),
        ("  ", None, True),
        ("h1", "h1", True),
        ("Worker-1", "worker-1", True),
        (" h1 ", "h1", True),
        ("h1", None, False),
        ("h1", "", False),
        ("h1", "h1.example.com", False),
        ("h2", "h1", False),
    ],
)
def test_hosts_match(target_host: str | None, local: str | None, same: bool) -> None:
    assert hosts_match(target_host, local) is same


def test_files_messages_exist_in_both_locales_with_the_same_fields() -> None:
    import re
    import string

    from markertools.text.catalog import CATALOG

    src = REPO / "src"
    users = [
        src / "markertools" / "deliver" / "handlers" / "files.py",
        src / "markertools" / "deliver" / "paths.py",
        src / "markertools_adapters" / "worktrees.py",
        src / "markertools_adapters" / "_fsread.py",
    ]
    used = {k for f in users for k in re.findall(r'"(files\.[a-z_0-9]+)"', f.read_text())}
    used |= {k for k in CATALOG if k.startswith("files.kind_")}
    assert used, "no files.* keys found"
    missing = sorted(k for k in used if k not in CATALOG)
    assert missing == []
    for key, entry in CATALOG.items():
        if not key.startswith("files."):
            continue
        assert set(entry) >= {"en", "zh"}, key
        fields = [
            {f for _, f, _, _ in string.Formatter().parse(entry[loc]) if f} for loc in ("en", "zh")
        ]
        assert fields[0] == fields[1], key
        assert entry["en"] != entry["zh"], key
