"""The other pure gates and text helpers: permission gate (GAT-4), read-target gate
(POL-2), cost gate (CST-1), create gate (CRE-3, LIN-2, LIN-3), quota user (QUO-1), the
snapshot tail (POL-4, DOM-4) and `shown` (report lines stay single lines)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markertools.deliver.gates import (
    cost_gate,
    create_gate,
    permission_gate,
    quota_user,
    read_target_gate,
)
from markertools.deliver.render import shown
from markertools.deliver.snapshot import output_text, tail
from markertools.domain.decision import Allowed, Denied, PermissionAnswer
from markertools.domain.model import (
    Quota,
    Task,
    is_terminal,
    quota_exhausted,
    same_creator,
    sender_cancelled,
)

ANSWERS = {
    "granted": lambda p: PermissionAnswer.of(p, True),
    "denied": lambda p: PermissionAnswer.of(p, False),
    "raises": lambda p: PermissionAnswer.failure(p, "TimeoutError: slow"),
}


@pytest.mark.rule("GAT-4", "DOM-6")
@pytest.mark.parametrize("answer", sorted(ANSWERS))
@pytest.mark.parametrize("permission", ["read", "create_task", "approve_merge"])
def test_permission_gate_fails_closed(answer, permission):
    decision = permission_gate(
        ANSWERS[answer](permission), Task("s", "p", created_by="u"), permission
    )
    assert isinstance(decision, Allowed) is (answer == "granted")
    if answer == "raises":
        assert "lookup failed" in decision.reason.render("en")


@pytest.mark.rule("POL-2")
def test_read_target_gate():
    sender = Task("s", "p1")
    assert isinstance(read_target_gate(sender, None, "x", "poll"), Denied)
    assert isinstance(read_target_gate(sender, Task("x", "p2"), "x", "poll"), Denied)
    assert isinstance(read_target_gate(sender, sender, "s", "wait"), Denied)
    assert isinstance(
        read_target_gate(sender, Task("x", "p1", goal_mode=True), "x", "poll"), Allowed
    )


def cost_oracle(permission, exists, same_project, is_self, lineage, creators):
    """CST-1 in words: read; target in the sender's project and (itself, lineage or same creator)."""
    if permission != "granted":
        return False
    if not exists or not same_project:
        return False
    same = creators[0] is not None and creators[0] == creators[1]
    return is_self or lineage or same


@pytest.mark.rule("CST-1", "DOM-3")
def test_cost_gate_table():
    for permission, exists, same_project, is_self, lineage, creators in itertools.product(
        ANSWERS,
        [True, False],
        [True, False],
        [True, False],
        [True, False],
        [("u1", "u1"), ("u1", "u2"), (None, None)],
    ):
        sender = Task("s", "p1", created_by=creators[0])
        target = None
        if exists:
            target = (
                sender
                if is_self
                else Task("x", "p1" if same_project else "p2", created_by=creators[1])
            )
        if is_self and not same_project:
            continue  # the sender is always in its own project
        decision = cost_gate(
            sender,
            target,
            target_id="x",
            in_lineage=lineage,
            permission=ANSWERS[permission]("read"),
        )
        expected = cost_oracle(permission, exists, same_project, is_self, lineage, creators)
        assert isinstance(decision, Allowed) is expected, (
            permission,
            exists,
            same_project,
            is_self,
            lineage,
            creators,
        )


@pytest.mark.rule("CRE-3", "LIN-2", "LIN-3", "GAT-4")
def test_create_gate_table():
    for permission, exhausted, gen, existing, this_turn in itertools.product(
        ANSWERS, [False, True], range(5), [0, 10, 19, 20, 25], [0, 1, 5]
    ):
        decision = create_gate(
            Task("s", "p", created_by="u"),
            ANSWERS[permission]("create_task"),
            quota_exhausted=exhausted,
            generation=gen,
            existing_children=existing,
            created_this_turn=this_turn,
        )
        expected = (
            permission == "granted" and not exhausted and gen < 3 and existing + this_turn < 20
        )
        assert isinstance(decision, Allowed) is expected


@pytest.mark.rule("QUO-1")
def test_quota_user_falls_back_to_the_parent_creator():
    assert quota_user(Task("s", "p", created_by="a"), Task("q", "p", created_by="b")) == "a"
    assert quota_user(Task("s", "p"), Task("q", "p", created_by="b")) == "b"
    assert quota_user(Task("s", "p"), Task("q", "p")) is None
    assert quota_user(Task("s", "p"), None) is None


@pytest.mark.rule("DOM-1", "DOM-3", "DOM-7", "DOM-8")
def test_domain_predicates():
    assert [
        s
        for s in (
            "queued",
            "running",
            "completed",
            "failed",
            "interrupted",
            "merged",
            "merge-failed",
        )
        if not is_terminal(s)
    ] == ["queued", "running"]
    assert not same_creator(Task("a", "p"), Task("b", "p"))
    assert same_creator(Task("a", "p", created_by="u"), Task("b", "p", created_by="u"))
    assert not quota_exhausted(None) and not quota_exhausted(Quota("u", None, 9e9))
    assert quota_exhausted(Quota("u", 1.0, 1.0)) and not quota_exhausted(Quota("u", 1.0, 0.99))
    assert sender_cancelled(Task("a", "p", status="interrupted"))
    assert not sender_cancelled(Task("a", "p", status="failed"))


@given(st.text(), st.integers(0, 300))
@pytest.mark.rule("POL-4", "DOM-4")
def test_tail_keeps_the_last_code_points_and_counts_the_cut(text, chars):
    kept, cut = tail(text, chars)
    assert kept + "" == text[len(text) - len(kept) :]
    assert len(kept) == min(len(text), chars)
    assert cut == len(text) - len(kept)


@given(st.none() | st.text(max_size=5), st.none() | st.text(max_size=5))
@pytest.mark.rule("POL-4")
def test_output_text_is_result_then_error(result, error):
    out = output_text(Task("x", "p", result_text=result, error_text=error))
    parts = [p for p in (result, error) if p]
    if not parts:
        assert out is None
    else:
        assert out.startswith(parts[0]) and out.endswith(parts[-1])


@given(st.text(), st.integers(1, 200))
@pytest.mark.rule("INJ-7")
def test_shown_is_always_one_line_and_bounded(text, limit):
    out = shown(text, limit)
    assert "\n" not in out and "\r" not in out and "\u2028" not in out
    assert len(out) <= 6 * limit + 1  # an escape is at most 6 characters
