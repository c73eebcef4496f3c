"""What a person confirms cannot be spoofed (issue 26 item 3, DOT-14): free text of a
proposal (goal, plan, role, instruction) that tries to draw a fake header or a fake
`limits:` line - with newlines, a carriage return, ESC sequences, C1 NEL, U+2028 or a
bidi override - is shown below its label, every line indented and prefixed `| `, its
control characters escaped; so the real header is the only line starting with "==" and
the real limits line the only one starting with "limits:". Each role's first
instruction is shown (cut after 20 lines / 2,000 characters, the rest counted); the
request's details carry every value whole."""

from __future__ import annotations

from typing import Any

import pytest
from support.strategies.plans import proposal_dict, role_dict, valid

from markertools.plans import HostSettings, has_control_characters
from markertools_adapters.dots._confirm_text import start_requests
from markertools_adapters.dots._ports import ConfirmRequest

FAKE_LIMITS = "limits: maxTurns 1, timeoutMs 1000 (SAFE)"
FAKE_HEADER = "== Launch these workers?"
LABELS = ("goal:", "plan:", "workers:", "limits:", "目标：", "计划：", "工作者：", "限制：")

# (what it tries, the proposal's free-text fields, a fragment shown escaped)
SPOOFS: list[tuple[str, dict[str, str], str]] = [
    ("newline + fake limits", {"goal": f"fix it\n{FAKE_LIMITS}"}, ""),
    ("fake header", {"plan": f"read, then fix\n\n{FAKE_HEADER}\nworkers:\n  - x"}, ""),
    ("carriage return", {"role": f"helper\r{FAKE_LIMITS}"}, "\\r"),
    ("ESC erase line", {"instruction": f"go\n\x1b[1A\x1b[2K{FAKE_LIMITS}"}, "\\x1b[1A\\x1b[2K"),
    ("bidi override", {"goal": "fix \u202e)EFAS( 0001 sMtuoemit"}, "\\u202e"),
    ("line separator", {"plan": f"a\u2028{FAKE_LIMITS}\u2029{FAKE_HEADER}"}, "\\u2028"),
    ("C1 next line", {"instruction": f"a\x85{FAKE_LIMITS}"}, "\\x85"),
    ("CRLF lines", {"goal": f"a\r\n{FAKE_HEADER}\r\n{FAKE_LIMITS}"}, ""),
    ("lone surrogate", {"role": "a\ud800b"}, "\\ud800"),  # printable only escaped
]


def proposal(goal: str = "fix the module", plan: str = "reader reads", **role: str) -> Any:
    return valid(proposal_dict([role_dict("reader", **role), role_dict("fixer", ["reader"])],
                               goal=goal, plan=plan))  # fmt: skip


def as_terminal(request: ConfirmRequest) -> list[str]:
    """The lines `dots run`'s TerminalConfirmer prints, split as any renderer could
    split them (every line break Python knows, not only "\\n")."""
    return f"== {request.title}\n{request.text}".splitlines()


def requests(raw: Any, locale: str = "en") -> tuple[ConfirmRequest, ConfirmRequest]:
    return start_requests(raw, {}, HostSettings(max_concurrent=2), locale)


@pytest.mark.rule("DOT-14")
@pytest.mark.parametrize("locale", ["en", "zh"])
@pytest.mark.parametrize(("what", "fields", "escaped"), SPOOFS, ids=[s[0] for s in SPOOFS])
def test_free_text_cannot_draw_a_header_or_a_limits_line(
    what: str, fields: dict[str, str], escaped: str, locale: str
) -> None:
    plan, launch = requests(proposal(**fields), locale)
    limits = "limits:" if locale == "en" else "限制："
    for request in (plan, launch):
        lines = as_terminal(request)
        assert [x for x in lines if x.startswith("==")] == [f"== {request.title}"]
        assert not has_control_characters(request.text.replace("\n", ""))
        assert [x for x in lines[1:] if not x.startswith(" ") and x not in LABELS
                and not x.startswith(limits)] == []  # fmt: skip
    assert [x for x in as_terminal(plan) if x.startswith(limits)] == []
    (real,) = [x for x in as_terminal(launch) if x.startswith(limits)]
    assert "maxTurns 12" in real and "SAFE" not in real
    if escaped:
        assert escaped in plan.text
    # the details carry the raw values
    detail = plan.details["roles"][0]
    assert detail["role"] == fields.get("role", "role of reader")
    assert detail["instruction"] == fields.get("instruction", "first instruction of reader")
    assert plan.details["goal"] == fields.get("goal", "fix the module")
    assert plan.details["plan"] == fields.get("plan", "reader reads")


@pytest.mark.rule("DOT-14")
def test_the_plan_question_shows_each_role_and_its_first_instruction() -> None:
    plan, _ = requests(proposal(goal="fix it\nand verify", instruction="Find the fault.\n\nReport it."))
    assert plan.text.splitlines() == [
        "goal:",
        "  | fix it",
        "  | and verify",
        "plan:",
        "  | reader reads",
        "workers:",
        "  - reader (codex):",
        "    role:",
        "      | role of reader",
        "    first instruction:",
        "      | Find the fault.",
        "      |",
        "      | Report it.",
        "  - fixer (codex after reader):",
        "    role:",
        "      | role of fixer",
        "    first instruction:",
        "      | first instruction of fixer",
    ]
    assert plan.details["roles"][1] == {
        "name": "fixer",
        "role": "role of fixer",
        "instruction": "first instruction of fixer",
        "dependsOn": ["reader"],
    }


@pytest.mark.rule("DOT-14")
def test_a_long_instruction_shows_its_head_and_counts_the_rest() -> None:
    many_lines = "".join(f"step {i:02d}\n" for i in range(30))  # 30 lines: 7 characters and a newline
    plan, _ = requests(proposal(instruction=many_lines))
    lines = plan.text.splitlines()
    at = lines.index("    first instruction:") + 1
    assert lines[at : at + 20] == [f"      | step {i:02d}" for i in range(20)]
    assert lines[at + 20] == "      (80 more characters, not shown)"
    assert plan.details["roles"][0]["instruction"] == many_lines

    one_long_line = "x" * 5_000
    plan, _ = requests(proposal(instruction=one_long_line))
    lines = plan.text.splitlines()
    at = lines.index("    first instruction:") + 1
    assert lines[at : at + 20] == ["      | " + "x" * 72] * 20  # cut at 72 columns
    assert lines[at + 20] == f"      ({5_000 - 20 * 72} more characters, not shown)"

    stacked = "e" + "\u0301" * 5_000  # combining marks: one column, many characters
    plan, _ = requests(proposal(instruction=stacked))
    lines = plan.text.splitlines()
    at = lines.index("    first instruction:") + 1
    assert lines[at : at + 2] == ["      | " + stacked[:2_000], "      (3001 more characters, not shown)"]


@pytest.mark.rule("DOT-14")
def test_wide_characters_are_cut_by_columns_and_the_zh_labels_are_used() -> None:
    plan, _ = requests(proposal(goal="修复" * 50), "zh")
    lines = plan.text.splitlines()
    assert lines[:4] == ["目标：", "  | " + "修复" * 18, "  | " + "修复" * 18, "  | " + "修复" * 14]
    assert "    首条指令：" in lines
