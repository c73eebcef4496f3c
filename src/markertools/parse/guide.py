# Owns: the paste-able tool guide for agents (`markertools guide`), generated from the
# kind table: for each kind its purpose, per-turn cap, aliases, every field (what it
# accepts, default or "required", clamp or range, aliases) and one example block.
#
# Must never: describe a rule the parser does not apply (it reads the same table:
# `expected()` for what a field accepts, params defaults, caps, examples), or do I/O.
#
# Invariants:
#   Rule 1: every example shown is a kind's table example; a test parses each one into
#           exactly one command of that kind.
#   Rule 2: the text is deterministic for a (locale, kinds) pair.
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from markertools.domain.errors import MarkertoolsError
from markertools.parse.kinds import KINDS, KindSpec, kind_of
from markertools.parse.kindspec import FieldSpec, default_of, expected
from markertools.text.msg import DEFAULT_LOCALE, Msg, msg


class UnknownKindError(MarkertoolsError, ValueError):
    """A kind name that is neither a kind nor an alias (carries near-miss suggestions)."""

    def __init__(self, name: str, suggestion: str | None) -> None:
        hint = f"; did you mean '{suggestion}'?" if suggestion else ""
        known = ", ".join(k.name for k in KINDS)
        super().__init__(f"unknown marker kind '{name}'{hint} (kinds: {known})")
        self.name = name
        self.suggestion = suggestion


def resolve_kinds(names: Iterable[str]) -> tuple[KindSpec, ...]:
    """The kinds named (aliases accepted), in table order, without repeats."""
    from markertools.parse.nearmiss import classify

    chosen: set[str] = set()
    for name in names:
        kind = kind_of(name)
        if kind is None:
            raise UnknownKindError(name, classify(name)[1])
        chosen.add(kind.name)
    return tuple(k for k in KINDS if k.name in chosen)


def _render(message: Msg, locale: str) -> str:
    return message.render(locale)


def _default_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _field_lines(kind: KindSpec, field: FieldSpec, locale: str) -> list[str]:
    if field.required:
        status = _render(msg("parse.guide.required"), locale)
    else:
        default = default_of(kind, field)
        if default is None or default == ():
            status = _render(msg("parse.guide.optional"), locale)
        else:
            status = _render(msg("parse.guide.default", default=_default_text(default)), locale)
    line = msg(
        "parse.guide.field_line",
        name=field.name,
        status=status,
        exp=expected(field),
        doc=msg(field.doc),
    )
    lines = [_render(line, locale)]
    if field.aliases:
        lines.append(_render(msg("parse.guide.field_aliases", names=field.aliases), locale))
    return lines


def kind_section(kind: KindSpec, locale: str = DEFAULT_LOCALE) -> str:
    """One kind's part of the guide."""
    out = [
        _render(msg("parse.guide.heading", kind=kind.name, summary=msg(kind.summary)), locale),
        "",
        _render(msg("parse.guide.cap", cap=kind.cap), locale),
    ]
    if kind.aliases:
        out.append(_render(msg("parse.guide.aliases", names=kind.aliases), locale))
    out.append("")
    shown = [f for f in kind.fields if f.kind != "forbidden"]
    if kind.ignore_all_fields or not shown:
        out.append(_render(msg("parse.guide.no_fields"), locale))
    else:
        out.append(_render(msg("parse.guide.fields"), locale))
        for field in shown:
            out.extend(_field_lines(kind, field, locale))
    if kind.guide_note:
        out += ["", _render(msg(kind.guide_note), locale)]
    out += ["", _render(msg("parse.guide.example"), locale), "", example_block(kind)]
    return "\n".join(out)


def example_block(kind: KindSpec) -> str:
    """Rule 1: the kind's example as a complete marker block."""
    return f"```{kind.name}\n{kind.example}\n```"


def render_guide(locale: str = DEFAULT_LOCALE, kinds: Sequence[str] = ()) -> str:
    """The agent guide in `locale` for the named kinds (all when none are named)."""
    selected = resolve_kinds(kinds) if kinds else KINDS
    order = ", ".join(k.name for k in KINDS)
    parts = [
        _render(msg("parse.guide.title"), locale),
        "",
        _render(msg("parse.guide.intro", order=order), locale),
    ]
    for kind in selected:
        parts += ["", kind_section(kind, locale)]
    return "\n".join(parts) + "\n"
