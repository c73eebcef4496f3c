"""The catalogue rows of the todos, automations, inject and attempts areas (INJ-6): every
key has an `en` and a `zh` text with the same placeholders, and every key the code uses
exists."""

from __future__ import annotations

import re
import string

import pytest
from support.paths import REPO

from markertools.text.catalog import CATALOG

PREFIXES = ("todos.", "automations.", "inject.", "attempts.")
SRC = REPO / "src" / "markertools"
MODULES = ("deliver/handlers/todos.py", "deliver/handlers/automations.py", "inject/first_turn.py", "inject/attempts.py")
# keys built at run time: permission refusals per area, "cut" variants of framing labels
DYNAMIC = (
    "todos.permission_failed",
    "todos.no_permission",
    "automations.permission_failed",
    "automations.no_permission",
    "attempts.label_output_cut",
    "attempts.label_error_cut",
)
SAME_IN_BOTH = {"todos.change"}  # an arrow between values reads the same in zh


def placeholders(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


@pytest.mark.rule("INJ-6")
def test_every_row_has_both_locales_with_the_same_placeholders() -> None:
    mine = {k: v for k, v in CATALOG.items() if k.startswith(PREFIXES)}
    assert len(mine) > 40
    for key, entry in mine.items():
        assert entry.get("en") and entry.get("zh"), key
        assert placeholders(entry["en"]) == placeholders(entry["zh"]), key
        if key not in SAME_IN_BOTH:
            assert entry["en"] != entry["zh"], key
            assert re.search(r"[\u4e00-\u9fff]", entry["zh"]) or key.endswith("_header"), key


@pytest.mark.rule("INJ-6")
def test_every_key_used_by_the_code_exists() -> None:
    used: set[str] = set(DYNAMIC)
    for name in MODULES:
        text = (SRC / name).read_text(encoding="utf-8")
        used |= set(
            re.findall(r"""["']((?:todos|automations|inject|attempts|common)\.[a-z_]+)["']""", text)
        )
    missing = sorted(k for k in used if k not in CATALOG)
    assert missing == []
