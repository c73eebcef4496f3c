# Owns: the `Msg` value (a message-catalogue key plus arguments) and rendering it in
# a locale (INJ-6). Every reason or text a user can see is a Msg until the moment
# it is rendered, so the same decision reads in `en` or `zh`.
#
# Invariants:
#   Rule 1: rendering never raises: a missing key or a broken template renders as
#           the key and its arguments (a test proves every key exists in every locale).
#   Rule 2: arguments are rendered in the same locale (a Msg argument is a nested Msg;
#           a tuple argument is rendered item by item and joined with ", ").
from __future__ import annotations

from enum import StrEnum
from typing import Final, Union

import attrs


class Locale(StrEnum):
    """The report languages (INJ-6); equal to their strings."""

    EN = "en"
    ZH = "zh"


LOCALES: Final[tuple[str, ...]] = ("en", "zh")
DEFAULT_LOCALE: Final[str] = "en"

MsgArg = Union[str, int, float, None, "Msg", tuple["MsgArg", ...]]


@attrs.frozen
class Msg:
    """A catalogue key and its named arguments; rendered late, in the reader's locale."""

    key: str
    args: tuple[tuple[str, MsgArg], ...] = ()

    def render(self, locale: str = DEFAULT_LOCALE) -> str:
        return render(self, locale)

    def __str__(self) -> str:
        return render(self, DEFAULT_LOCALE)

    def arg(self, name: str) -> MsgArg:
        for k, v in self.args:
            if k == name:
                return v
        raise KeyError(name)


def msg(key: str, /, **args: MsgArg) -> Msg:
    """Build a Msg: `msg("val.required", field="prompt")`."""
    return Msg(key, tuple(args.items()))


def _render_arg(value: MsgArg, locale: str) -> str:
    if isinstance(value, Msg):
        return render(value, locale)
    if isinstance(value, tuple):
        return ", ".join(_render_arg(v, locale) for v in value)
    if value is None:
        return "null"
    if isinstance(value, float):
        return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return str(value)


def render(message: Msg, locale: str = DEFAULT_LOCALE) -> str:
    from markertools.text.catalog import CATALOG  # the catalogue imports message tables lazily

    entry = CATALOG.get(message.key)
    args = {k: _render_arg(v, locale) for k, v in message.args}
    if entry is None:
        return message.key + (" " + repr(args) if args else "")
    template = entry.get(locale) or entry.get(DEFAULT_LOCALE) or message.key
    try:
        return template.format_map(args)
    except (KeyError, IndexError, ValueError, AttributeError):
        return message.key + " " + repr(args)
