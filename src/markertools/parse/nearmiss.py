# Owns: classifying a fence's info string (EXT-1, EXT-5): a kind name or alias
# (exact, case-sensitive), a near miss of one (differs only in case, `_`/`-`,
# surrounding punctuation, or is at least 6 characters long and within edit distance
# 2 of a name), or ordinary code.
#
# Must never: treat a near miss as a kind, raise, or grow without bound (the memo of
# classified info strings is capped).
#
# Invariants:
#   Rule 1: `classify(info)` depends only on `info` (pure, memoised).
#   Rule 2: the suggestion is the closest name (after folding); ties prefer the name
#           closest to the spelling as written, then the canonical kind, then table order.
from __future__ import annotations

import re
from typing import Final

from markertools.parse.kinds import ALL_NAMES, KINDS, kind_of

NEAR_MIN_LEN: Final[int] = 6
MAX_DISTANCE: Final[int] = 2
_MEMO_LIMIT: Final[int] = 4096
_MEMO_KEY_MAX: Final[int] = 64

_WORD = re.compile(r"[^\W_]")
_CANONICAL: Final[frozenset[str]] = frozenset(k.name for k in KINDS)


_FOLD: Final[dict[int, int]] = {
    **{ord(c): ord(c.lower()) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
    ord("_"): ord("-"),
}


def strip_edges(info: str) -> str:
    """`info` without leading and trailing punctuation (linear time on any input)."""
    first = _WORD.search(info)
    if first is None:
        return ""
    last = _WORD.search(info[::-1])
    assert last is not None
    return info[first.start() : len(info) - last.start()]


def normalize(info: str) -> str:
    """ASCII case, `_`/`-` and surrounding punctuation folded away. Never longer than
    `info` (kind names are ASCII), which the scanner's prefilter relies on."""
    return strip_edges(info).translate(_FOLD)


# (normalized name, name as written in the table, preference rank)
_NAMES: Final[tuple[tuple[str, str, int], ...]] = tuple(
    (normalize(name), name, (0 if name in _CANONICAL else 1) * 1000 + index)
    for index, name in enumerate(ALL_NAMES)
)
_NAME_SETS: Final[tuple[frozenset[str], ...]] = tuple(frozenset(n) for n, _, _ in _NAMES)
_LENGTHS: Final[frozenset[int]] = frozenset(len(n) for n, _, _ in _NAMES)

Classified = tuple[str | None, str | None]  # (kind name as written, near-miss suggestion)
ORDINARY: Final[Classified] = (None, None)
_memo: dict[str, Classified] = {}


def _distance_at_most(a: str, b: str, limit: int) -> int | None:
    """Levenshtein distance of a and b when it is <= limit, else None (banded DP)."""
    if abs(len(a) - len(b)) > limit:
        return None
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [limit + 1] * len(b)
        low, high = max(1, i - limit), min(len(b), i + limit)
        best = current[0] if low == 1 else limit + 1
        for j in range(low, high + 1):
            cost = 0 if ca == b[j - 1] else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            current[j] = value
            best = min(best, value)
        if best > limit:
            return None
        previous = current
    return previous[len(b)] if previous[len(b)] <= limit else None


def _near(info: str) -> str | None:
    folded = normalize(info)
    if not folded:
        return None
    best: tuple[int, int, int, str] | None = None
    far = len(info) < NEAR_MIN_LEN or all(
        abs(len(folded) - length) > MAX_DISTANCE for length in _LENGTHS
    )
    letters = frozenset(folded)
    for (name_norm, name, rank), name_set in zip(_NAMES, _NAME_SETS, strict=True):
        if folded == name_norm:
            distance: int | None = 0
        elif (
            far or len(name_set - letters) > MAX_DISTANCE or len(letters - name_set) > MAX_DISTANCE
        ):
            continue
        else:
            distance = _distance_at_most(folded, name_norm, MAX_DISTANCE)
        if distance is None:
            continue
        raw = _distance_at_most(strip_edges(info).lower(), name, MAX_DISTANCE + 2)
        key = (distance, MAX_DISTANCE + 3 if raw is None else raw, rank, name)
        if best is None or key < best:
            best = key
    return best[3] if best else None


def classify(info: str) -> Classified:
    """Rule 1: (name, None) for a kind name or alias, (None, suggestion) for a near
    miss, (None, None) for ordinary code. `info` is the stripped info string."""
    hit = _memo.get(info)
    if hit is not None:
        return hit
    if kind_of(info) is not None:
        result: Classified = (info, None)
    else:
        suggestion = _near(info)
        result = (None, suggestion) if suggestion else ORDINARY
    if len(info) <= _MEMO_KEY_MAX:
        if len(_memo) >= _MEMO_LIMIT:
            _memo.clear()
        _memo[info] = result
    return result
