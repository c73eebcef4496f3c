"""GAT-1..4, POL-2, CST-1, CRE-3: the reason of every refusal of the pure gates, with its
arguments, in en and zh (the templates themselves are frozen by the golden files of
tests/text/test_messages_golden.py). An agent reads these to correct its next turn, so
a wrong argument or a swapped reason is a defect, not a cosmetic change."""

from __future__ import annotations

import pytest

from markertools.deliver.gates import (
    control_gate,
    cost_gate,
    create_gate,
    permission_gate,
    quota_user,
    read_target_gate,
)
from markertools.domain.decision import Allowed, Denied, PermissionAnswer
from markertools.domain.model import Task
from markertools.text.msg import MsgArg, msg

SENDER = Task("t1", "p1", created_by="u1", status="running")


def target(**fields: object) -> Task:
    values: dict[str, object] = {"created_by": "u1", "status": "running"}
    values.update(fields)
    task_id = str(values.pop("id", "t2"))
    project = str(values.pop("project_id", "p1"))
    return Task(task_id, project, **values)  # type: ignore[arg-type]


def said(decision: object, key: str, **args: MsgArg) -> None:
    """`decision` is Denied with exactly the reason msg(key, **args), in both locales."""
    assert isinstance(decision, Denied), decision
    for locale in ("en", "zh"):
        assert decision.reason.render(locale) == msg(key, **args).render(locale)
    assert decision.reason.key == key


def granted(permission: str) -> PermissionAnswer:
    return PermissionAnswer.of(permission, True)


NEEDS = {"cancel": "create_task", "retry": "approve_merge"}


def control(action: str, t: Task | None, *, lineage: bool = False, answer=None, tid="t2"):
    return control_gate(
        action,  # type: ignore[arg-type]
        SENDER, t, target_id=tid, in_lineage=lineage,
        permission=answer or granted(NEEDS[action]),
    )  # fmt: skip


@pytest.mark.rule("GAT-1")
@pytest.mark.parametrize("action", ["cancel", "retry"])
def test_control_gate_reasons_step_by_step(action: str) -> None:
    verb = msg(f"tasks.verb_{action}")
    status = "running" if action == "cancel" else "failed"
    said(control(action, None, tid="t9\n```"), "tasks.gate_missing", id="t9\\n```")
    said(control(action, target(project_id="p2")), "tasks.gate_other_project", id="t2")
    said(control(action, target(id="t1")), "tasks.gate_self", verb=verb)
    said(control(action, target(goal_mode=True, status=status)), "tasks.gate_goal", id="t2",
         verb=verb)  # fmt: skip
    if action == "cancel":
        said(control(action, target(status="completed")), "tasks.gate_cancel_terminal",
             id="t2", status="completed")  # fmt: skip
    else:
        said(control(action, target(status="running")), "tasks.gate_retry_status", id="t2",
             status="running")  # fmt: skip
    said(control(action, target(created_by="u2", status=status)), "tasks.gate_unrelated",
         id="t2", verb=verb)  # fmt: skip
    said(
        control(action, target(status=status), answer=PermissionAnswer.of(NEEDS[action], False)),
        "tasks.gate_lacks", user="u1", permission=NEEDS[action], project="p1",
    )  # fmt: skip
    assert control(action, target(status=status)) == Allowed()
    assert control(action, target(created_by="u2", status=status), lineage=True) == Allowed()


@pytest.mark.rule("GAT-1")
def test_control_gate_names_statuses_in_english_and_chinese() -> None:
    decision = control("cancel", target(status="merged"))
    assert isinstance(decision, Denied)
    assert "t2" in decision.reason.render() and "merged" in decision.reason.render("zh")
    assert decision.reason.render() != decision.reason.render("zh")


@pytest.mark.rule("GAT-2")
@pytest.mark.parametrize("action", ["cancel", "retry"])
@pytest.mark.parametrize("error", ["timeout after 2s", None])
def test_failed_lookup_narrows_to_lineage_with_its_reason(action: str, error: str | None) -> None:
    needed = NEEDS[action]
    status = "running" if action == "cancel" else "failed"
    answer = PermissionAnswer(needed, False, True, error)
    shown_error = error or "unknown error"
    allowed = control(action, target(status=status), lineage=True, answer=answer)
    assert isinstance(allowed, Allowed) and allowed.note is not None
    for locale in ("en", "zh"):
        assert allowed.note.render(locale) == msg(
            "tasks.gate_lineage_only_allowed", permission=needed, error=shown_error
        ).render(locale)
    said(
        control(action, target(status=status), answer=answer),
        "tasks.gate_lineage_only_denied", permission=needed, error=shown_error, id="t2",
        verb=msg(f"tasks.verb_{action}"),
    )  # fmt: skip


@pytest.mark.rule("GAT-4")
@pytest.mark.parametrize("needed", ["read", "create_task", "approve_merge"])
def test_permission_gate_reasons(needed: str) -> None:
    said(permission_gate(PermissionAnswer.of("other", True), SENDER, needed),
         "tasks.gate_wrong_answer", needed=needed, got="other")  # fmt: skip
    said(permission_gate(PermissionAnswer.failure(needed, "db down"), SENDER, needed),
         "tasks.gate_lookup_failed", permission=needed, error="db down")  # fmt: skip
    said(permission_gate(PermissionAnswer(needed, False, True, None), SENDER, needed),
         "tasks.gate_lookup_failed", permission=needed, error="unknown error")  # fmt: skip
    odd = Task("t1", "p\n1", created_by="u\n1")
    said(permission_gate(PermissionAnswer.of(needed, False), odd, needed),
         "tasks.gate_lacks", user="u\\n1", permission=needed, project="p\\n1")  # fmt: skip
    assert permission_gate(granted(needed), SENDER, needed) == Allowed()
    # a failed lookup for another permission is the wrong answer, not a failure
    said(permission_gate(PermissionAnswer.failure("other", "x"), SENDER, needed),
         "tasks.gate_wrong_answer", needed=needed, got="other")  # fmt: skip


@pytest.mark.rule("POL-2", "WAI-3")
@pytest.mark.parametrize("action", ["poll", "wait", "cost"])
def test_read_target_gate_reasons(action: str) -> None:
    said(read_target_gate(SENDER, None, "t9\n", action), "tasks.gate_missing", id="t9\\n")  # type: ignore[arg-type]
    said(read_target_gate(SENDER, target(project_id="p2"), "t2", action),  # type: ignore[arg-type]
         "tasks.gate_other_project", id="t2")  # fmt: skip
    said(read_target_gate(SENDER, target(id="t1"), "t1", action),  # type: ignore[arg-type]
         "tasks.gate_self", verb=msg(f"tasks.verb_{action}"))  # fmt: skip
    assert read_target_gate(SENDER, target(), "t2", action) == Allowed()  # type: ignore[arg-type]


def cost(t: Task | None, *, lineage: bool = False, answer=None, tid: str = "t2"):
    return cost_gate(SENDER, t, target_id=tid, in_lineage=lineage,
                     permission=answer or granted("read"))  # fmt: skip


@pytest.mark.rule("CST-1")
def test_cost_gate_reasons() -> None:
    said(cost(target(), answer=PermissionAnswer.of("read", False)), "tasks.gate_lacks",
         user="u1", permission="read", project="p1")  # fmt: skip
    said(cost(None, tid="t9\n"), "tasks.gate_missing", id="t9\\n")
    said(cost(target(project_id="p2")), "tasks.gate_other_project", id="t2")
    said(cost(target(created_by="u2")), "tasks.gate_unrelated", id="t2",
         verb=msg("tasks.verb_cost"))  # fmt: skip
    said(cost(target(created_by=None)), "tasks.gate_unrelated", id="t2",
         verb=msg("tasks.verb_cost"))  # fmt: skip
    assert cost(target(id="t1", created_by="u2")) == Allowed()  # the sender itself
    assert cost(target(created_by="u2"), lineage=True) == Allowed()
    assert cost(target()) == Allowed()  # same creator


@pytest.mark.rule("CRE-3", "LIN-2", "LIN-3", "DOM-7")
def test_create_gate_reasons_in_order() -> None:
    def create(answer=None, quota=False, generation=0, children=0, this_turn=0):
        return create_gate(
            SENDER, answer or granted("create_task"), quota_exhausted=quota,
            generation=generation, existing_children=children, created_this_turn=this_turn,
        )  # fmt: skip

    said(create(PermissionAnswer.of("create_task", False), quota=True, generation=5),
         "tasks.gate_lacks", user="u1", permission="create_task", project="p1")  # fmt: skip
    said(create(quota=True, generation=5), "tasks.gate_quota", user="u1")
    said(create(generation=3, children=25), "tasks.gate_generation", generation=3, limit=3)
    said(create(children=15, this_turn=5), "tasks.gate_children", existing=15, this_turn=5,
         cap=20)  # fmt: skip
    assert create(generation=2, children=19) == Allowed()


@pytest.mark.rule("QUO-1")
def test_quota_user_falls_back_to_the_parent() -> None:
    assert quota_user(SENDER, None) == "u1"
    orphan = Task("t1", "p1", created_by=None)
    assert quota_user(orphan, Task("t0", "p1", created_by="u0")) == "u0"
    assert quota_user(orphan, Task("t0", "p1", created_by=None)) is None
    assert quota_user(orphan, None) is None
