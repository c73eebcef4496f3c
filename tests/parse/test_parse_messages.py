"""The parse area's catalogue rows: every key used exists, in en and zh, with the same
placeholders, and zh carries the meaning (it is not a copy of en)."""

from __future__ import annotations

import re
import string

import pytest
from support.paths import REPO

from markertools.parse.kinds import KINDS
from markertools.text.catalog import CATALOG
from markertools.text.messages_parse import MESSAGES

SRC = REPO / "src" / "markertools"
PARSE_MODULES = [
    "parse/kindspec.py", "parse/kinds.py", "parse/jsonstrict.py", "parse/validate.py", "domain/timeparse.py", "parse/turn.py",
    "parse/blocks.py", "parse/guide.py", "parse/schema.py", "parse/nearmiss.py", "parse/lists.py",
    "parse/validate_fast.py", "parse/lines.py", "parse/commonmark.py",
]  # fmt: skip
SAME_IN_BOTH = {"parse.type.null", "parse.got.value", "parse.guide.heading"}


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def test_every_key_has_en_and_zh_with_the_same_placeholders() -> None:
    for key, entry in MESSAGES.items():
        assert key.startswith("parse."), key
        assert entry.get("en") and entry.get("zh"), key
        assert placeholders(entry["en"]) == placeholders(entry["zh"]), key
        if key not in SAME_IN_BOTH:
            assert entry["en"] != entry["zh"], key
            assert re.search(r"[\u4e00-\u9fff]", entry["zh"]), key


def test_every_key_the_parse_layer_uses_is_in_the_catalogue() -> None:
    used: set[str] = set()
    for name in PARSE_MODULES:
        used |= set(re.findall(r'"(parse\.[a-z_.\-]+)"', (SRC / name).read_text(encoding="utf-8")))
    for kind in KINDS:
        used.add(kind.summary)
        used.update(f.doc for f in kind.fields)
    missing = sorted(k for k in used if k not in CATALOG and not k.endswith("."))
    assert not missing


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.name)
def test_every_kind_has_a_summary_and_field_docs(kind: object) -> None:
    assert kind.summary in CATALOG  # type: ignore[attr-defined]
    for field in kind.fields:  # type: ignore[attr-defined]
        assert field.doc in CATALOG
