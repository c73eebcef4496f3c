"""Control characters in a proposal (issue 26 item 3): names, ids, models, paths and
buckets are shown inside one line of what a person confirms, so PLN validation refuses
newlines, tabs, ESC, DEL, C1, U+2028/U+2029 and the bidi controls in them, naming the
field path and the character; free text (goal, plan, role, instruction) keeps them
(the confirmation escapes them). One predicate, `has_control_characters`, is the
definition the MCP arguments share."""

from __future__ import annotations

from typing import Any

import pytest
from support.strategies.plans import edit, proposal_dict, role_dict, valid

from markertools.plans import (
    first_control_character,
    has_control_characters,
    is_control_character,
    validate_host_settings,
    validate_proposal,
)

REASON = (
    "must not contain control characters (line breaks, tabs, escapes, bidi controls): "
    "found {char} at character {index}"
)
# (the character, how the reason names it)
HOSTILE = [
    ("\n", "U+000A"),
    ("\r", "U+000D"),
    ("\t", "U+0009"),
    ("\x1b", "U+001B"),
    ("\x00", "U+0000"),
    ("\x7f", "U+007F"),
    ("\x85", "U+0085"),
    ("\x9b", "U+009B"),
    ("\u2028", "U+2028"),
    ("\u2029", "U+2029"),
    ("\u202a", "U+202A"),
    ("\u202e", "U+202E"),
    ("\u2066", "U+2066"),
    ("\u2069", "U+2069"),
    ("\u200f", "U+200F"),
]
# (dotted path into proposal_dict, the issue path, a base value the character goes into)
ID_FIELDS = [
    ("workers.0.name", "$.workers[0].name", "reader"),
    ("workers.0.model", "$.workers[0].model", "gpt-5"),
    ("workers.0.existingThreadId", "$.workers[0].existingThreadId", "thr_1"),
    ("workers.0.cwd", "$.workers[0].cwd", "/work/project"),
    ("workers.1.dependsOn.0", "$.workers[1].dependsOn[0]", "reader"),
    ("quota.bucket", "$.quota.bucket", "codex"),
    ("allowedModels.0", "$.allowedModels[0]", "gpt-5"),
]


def base() -> dict[str, Any]:
    return proposal_dict(
        [role_dict("reader", model="gpt-5"), role_dict("fixer", ["reader"])],
        allowedModels=["gpt-5"],
    )


def issues(raw: Any) -> list[tuple[str, str]]:
    return [(i.path, i.message.render("en")) for i in validate_proposal(raw).issues]


@pytest.mark.rule("PLN-1", "PLN-2", "PLN-4")
@pytest.mark.parametrize(("char", "named"), HOSTILE)
@pytest.mark.parametrize(("where", "path", "value"), ID_FIELDS)
def test_a_control_character_in_a_name_id_model_path_or_bucket_is_refused_by_path(
    where: str, path: str, value: str, char: str, named: str
) -> None:
    raw = edit(base(), where, value[:3] + char + value[3:])
    got = issues(raw)
    assert got[0] == (path, REASON.format(char=named, index=4))
    if where == "workers.0.name":  # the name is gone, so fixer's dependency is unknown
        assert got[1:] == [("$.workers[1].dependsOn[0]", "unknown role 'reader'")]
    else:
        assert got[1:] == []


@pytest.mark.rule("PLN-2")
def test_every_refusal_of_a_hostile_role_is_listed_at_once() -> None:
    raw = proposal_dict(
        [role_dict("a\nlimits: maxTurns 1", model="m\x1b[2K", cwd="/w\u202e", effort="high\n")]
    )
    assert issues(raw) == [
        ("$.workers[0].name", REASON.format(char="U+000A", index=2)),
        ("$.workers[0].cwd", REASON.format(char="U+202E", index=3)),
        ("$.workers[0].model", REASON.format(char="U+001B", index=2)),
        (
            "$.workers[0].effort",
            "must be one of 'none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max', "
            "got 'high\\u000a'",
        ),
    ]


@pytest.mark.rule("PLN-1", "PLN-2")
@pytest.mark.parametrize(("char", "named"), HOSTILE)
def test_free_text_keeps_its_control_characters(char: str, named: str) -> None:
    raw = proposal_dict(
        [role_dict("reader", role=f"r{char}x", instruction=f"step 1{char}step 2")],
        goal=f"fix{char}it",
        plan=f"first{char}then",
    )
    proposal = valid(raw)
    assert proposal.goal == f"fix{char}it" and proposal.plan == f"first{char}then"
    assert proposal.workers[0].instruction == f"step 1{char}step 2"


@pytest.mark.rule("PLN-10")
@pytest.mark.parametrize("field", ["stateDir", "codexBin", "subagentProvider"])
def test_host_settings_paths_refuse_control_characters(field: str) -> None:
    check = validate_host_settings({field: "/opt/x\ny"})
    assert [(i.path, i.message.render("en")) for i in check.issues] == [
        (f"$.{field}", REASON.format(char="U+000A", index=7))
    ]
    check = validate_host_settings({field: "/opt/x y"})
    assert check.valid


@pytest.mark.rule("PLN-2")
def test_the_control_character_set_at_its_edges() -> None:
    inside = [0x00, 0x1F, 0x7F, 0x80, 0x9F, 0x061C, 0x200E, 0x200F, 0x2028, 0x2029,
              0x202A, 0x202E, 0x2066, 0x2069]  # fmt: skip
    outside = [0x20, 0x7E, 0xA0, 0xFF, 0x200B, 0x200D, 0x2027, 0x202F, 0x2065, 0x206A,
               0x3000, 0x4E2D]  # fmt: skip
    assert [hex(c) for c in inside if not is_control_character(chr(c))] == []
    assert [hex(c) for c in outside if is_control_character(chr(c))] == []
    assert has_control_characters("gpt-5\u202e") and not has_control_characters("模型 gpt-5")
    assert first_control_character("ab\tc\n") == 2 and first_control_character("abc") is None


@pytest.mark.rule("PLN-2")
def test_a_lone_surrogate_in_a_name_or_model_is_refused_not_printed() -> None:
    """`"\\ud800"` is valid JSON but no character: a name holding one could not even
    be printed (`plan validate` failed with an internal error before)."""
    raw = proposal_dict([role_dict("r\ud800", model="m\udfff")], goal="free \ud800 text")
    reason = "must not contain a lone surrogate (not a character; it cannot be shown): "
    assert issues(raw) == [
        ("$.workers[0].name", reason + "found U+D800 at character 2"),
        ("$.workers[0].model", reason + "found U+DFFF at character 2"),
    ]
