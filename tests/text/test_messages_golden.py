"""INJ-6: every catalogue message, rendered in en and zh with representative arguments,
equals its golden file (tests/fixtures/golden/messages.<locale>.json). A reason an agent
reads to correct its next turn is part of the contract: a changed, swapped or lost text
fails here. After an intended wording change, regenerate with
`MARKERTOOLS_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/text/test_messages_golden.py`
and review the diff of the golden files."""

from __future__ import annotations

import json
import os
from string import Formatter

import pytest
from support.paths import TESTS

from markertools.text.catalog import CATALOG
from markertools.text.msg import LOCALES, Msg, MsgArg, msg

GOLDEN = TESTS / "fixtures" / "golden"
UPDATE = os.environ.get("MARKERTOOLS_UPDATE_GOLDEN") == "1"

# Fields that hold numbers get numbers (distinct ones, so a swapped pair shows); a few
# get the nested values they hold in practice; every other field gets «its name».
_NUMBERS = (
    "actual", "blocks", "bytes", "cap", "chars", "column", "count", "cut", "digits",
    "estimated", "finished", "first", "generation", "hi", "interval", "kept", "last",
    "left", "length", "limit", "line", "lo", "max", "min", "more", "ms", "n", "offset",
    "position", "remaining", "rest", "round", "rounds", "seconds", "settled", "shown",
    "size", "threshold", "tokens", "total", "unpriced", "used", "waited",
)  # fmt: skip
_NESTED: dict[str, MsgArg] = {
    "got": msg("parse.got.string", value="abc"),
    "exp": msg("parse.exp.text_range", min=1, max=100),
    "counts": (msg("report.count_done", n=2), msg("report.count_skipped", n=1)),
    "fields": ("alpha", "beta"),
    "ids": ("t-1", "t-2", msg("common.and_more", n=3)),
    "spellings": ("task_id", "to"),
    "names": ("task-poll", "task-read"),
    "choices": ("low", "high"),
}


def representative(field: str) -> MsgArg:
    if field in _NESTED:
        return _NESTED[field]
    if field in _NUMBERS:
        return 100 + _NUMBERS.index(field)
    return f"«{field}»"


def fields_of(key: str) -> list[str]:
    names: list[str] = []
    for template in CATALOG[key].values():
        for _, name, _, _ in Formatter().parse(template):
            if name is not None and name not in names:
                names.append(name)
    return names


def sample(key: str) -> Msg:
    return msg(key, **{name: representative(name) for name in fields_of(key)})


def rendered(locale: str) -> dict[str, str]:
    return {key: sample(key).render(locale) for key in sorted(CATALOG)}


@pytest.mark.rule("INJ-6")
@pytest.mark.parametrize("locale", LOCALES)
def test_every_message_renders_as_its_golden_text(locale: str) -> None:
    path = GOLDEN / f"messages.{locale}.json"
    now = rendered(locale)
    if UPDATE:
        path.write_text(json.dumps(now, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
    golden = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(golden) == sorted(now), "catalogue keys changed: regenerate and review"
    changed = {k: (golden[k], now[k]) for k in now if golden[k] != now[k]}
    assert not changed, changed


@pytest.mark.rule("INJ-6")
@pytest.mark.parametrize("locale", LOCALES)
def test_every_template_renders_every_argument(locale: str) -> None:
    for key in CATALOG:
        text = sample(key).render(locale)
        assert not text.startswith(key + " {"), (key, text)  # the broken-template fallback
        for name in fields_of(key):
            if name in CATALOG[key].get(locale, ""):
                assert "{" + name + "}" not in text, (key, name)


@pytest.mark.rule("INJ-6")
def test_every_row_has_both_locales() -> None:
    assert [k for k, e in CATALOG.items() if not e.get("en") or not e.get("zh")] == []
