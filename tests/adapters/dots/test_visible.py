"""The escaping of agent- and plan-supplied text before a person reads it (issue 37 item
6; `markertools_adapters.dots._visible`): a property over arbitrary Unicode - every
character of the shown text is a visible one (no control, format, private-use,
unassigned, surrogate or tag character survives), and the shown text decodes back to
exactly what was given (two different texts never look the same). Plus the cases the
issue names, as a person would read them."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markertools_adapters.dots._visible import needs_escape, unescape, visible

HIDDEN = {"Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"}

# every code point, surrogates included, weighted towards the ones that hide
hidden_chars = st.sampled_from(
    [chr(c) for c in (0x200B, 0x200D, 0xFEFF, 0x202E, 0x2066, 0xAD, 0x2028, 0x1B, 0x85, 0xE000)]
    + [chr(c) for c in range(0xE0000, 0xE0080)]
    + ["\\", "\\u200b", "\\x1b", "\n", "\t", "\r"]
)
texts = st.lists(
    st.one_of(st.characters(codec=None), hidden_chars, st.text(max_size=5)), max_size=40
).map("".join)


@pytest.mark.rule("DOT-14")
@given(texts)
def test_every_shown_character_is_visible_and_the_text_decodes_back(text: str) -> None:
    shown = visible(text)
    for char in shown:
        assert unicodedata.category(char) not in HIDDEN, (text, shown)
        assert not 0xE0000 <= ord(char) <= 0xE007F
    assert unescape(shown) == text


@pytest.mark.rule("DOT-14")
@given(texts, texts)
def test_two_different_texts_are_never_shown_alike(a: str, b: str) -> None:
    if a != b:
        assert visible(a) != visible(b)


@pytest.mark.rule("DOT-14")
def test_the_issues_cases_read_as_escapes() -> None:
    tags = "".join(chr(0xE0000 + ord(c)) for c in "rm")
    assert visible(f"Summarize the README.{tags}") == "Summarize the README.\\U000e0072\\U000e006d"
    assert visible("read\u200ber") == "read\\u200ber"
    assert visible("\ufeffBOM") == "\\ufeffBOM"
    assert visible("\x1b[2K\u202e") == "\\x1b[2K\\u202e"
    assert visible("C:\\dir") == "C:\\\\dir"  # a backslash of the text is doubled
    assert visible("\u3164") == "\\u3164"  # a Hangul filler: a letter that draws nothing
    assert visible("naïve 中文 émoji ✓") == "naïve 中文 émoji ✓"  # visible text as it is
    assert not needs_escape("a") and needs_escape("\u200b") and needs_escape("\U000e0001")


@pytest.mark.rule("DOT-14")
def test_the_mcp_confirmation_text_escapes_what_a_person_cannot_see() -> None:
    """The elicitation shows `request.text` (dots/_mcp_confirm.py), made here."""
    from markertools.plans import HostSettings, validate_proposal
    from markertools_adapters.dots._confirm_text import start_requests

    tags = "".join(chr(0xE0000 + ord(c)) for c in "rm -rf")
    raw = {
        "goal": "g", "plan": "p",
        "workers": [{"name": "read\u200ber", "backend": "codex", "cwd": "/tmp", "role": "r\ufeff",
                     "instruction": f"Summarize the README.{tags}", "sandbox": "read-only"}],
        "quota": {"stopAtLeftPercent": None}, "maxTurns": 2, "timeoutMs": 1000, "allowedModels": [],
        "supervision": {"decisionTimeoutMs": 1000, "maxDecisionRetries": 0, "maxTotalReminders": 0},
    }
    proposal = validate_proposal(raw).proposal
    assert proposal is not None
    plan_q, launch_q = start_requests(proposal, {}, HostSettings(), "en")
    assert "  - read\\u200ber (codex):" in plan_q.text
    assert "      | r\\ufeff" in plan_q.text
    assert "      | Summarize the\n      | README.\\U000e0072\\U000e006d" in plan_q.text
    assert "  - read\\u200ber: cwd /tmp" in launch_q.text
    for text in (plan_q.text, launch_q.text):
        assert all(unicodedata.category(c) not in HIDDEN or c == "\n" for c in text)
    assert plan_q.details["roles"][0]["instruction"] == f"Summarize the README.{tags}"  # whole
