# Owns: `shown`, which makes a piece of untrusted text (an id, a name, a value an agent
# wrote) safe to show inside one line of a report or reason. Pure, dependency-free, so
# the parse layer and delivery both use it.
#
# Invariant: the output never holds a line break or a control character, so a value can
# never start a line of its own (and so never open a fence) in the text it is put into.
from __future__ import annotations

from collections.abc import Sequence
from typing import Final, overload

from markertools.text.msg import MsgArg, msg

# TRN-12: a reason names at most this many items of a list the agent wrote (ids, field
# names); the rest are counted ("and N more"), so a reason's size never grows with a body.
LIST_SHOWN: Final[int] = 10


@overload
def shown(text: str, limit: int = 120) -> str: ...


@overload
def shown(text: None, limit: int = 120) -> None: ...


def shown(text: str | None, limit: int = 120) -> str | None:
    """Text from a turn (an id, a name) made safe to show on one report line: control
    characters escaped, cut to `limit` code points. Never lets a newline or fence through."""
    if text is None:
        return None
    out: list[str] = []
    for ch in text[:limit]:
        if ch in "\r\n\t" or ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 or ch in "\u2028\u2029":
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out) + ("…" if len(text) > limit else "")


def shown_list(
    items: Sequence[str], limit: int = LIST_SHOWN, each: int = 120
) -> tuple[MsgArg, ...]:
    """The first `limit` items `shown` (each cut to `each` code points), then "and N
    more" when there are more: a list in a reason stays bounded (TRN-12)."""
    out: list[MsgArg] = [shown(item, each) for item in items[:limit]]
    if len(items) > limit:
        out.append(msg("common.and_more", n=len(items) - limit))
    return tuple(out)
