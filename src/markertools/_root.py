# Owns: the root of the exception tree (FLT-8) and the two argument errors every layer of
# the core raises: `MarkertoolsError`, `InvalidArgument` (a value outside what a function
# documents: still a ValueError) and `InvalidType` (a value of the wrong type: still a
# TypeError). Below every layer (text included), so any module may raise them;
# `markertools.domain.errors` re-exports the root beside the tree's other core classes.
#
# Must never: import anything of markertools; give a class behaviour beyond its bases.
from __future__ import annotations


class MarkertoolsError(Exception):
    """FLT-8: the root of every exception the library and its adapters raise on purpose
    (docs/errors.md). Classes that were a `ValueError` or `TypeError` before the root
    existed keep that base too, so older `except` clauses catch what they caught."""


class InvalidArgument(MarkertoolsError, ValueError):
    """FLT-8: an argument outside what the function documents (a locale, a deadline, an
    id, an amount, a setting): the message names it and what is allowed."""


class InvalidType(MarkertoolsError, TypeError):
    """FLT-8: an argument of a type the function does not take."""


__all__ = ["InvalidArgument", "InvalidType", "MarkertoolsError"]
