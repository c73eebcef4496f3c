# Owns: how the library holds an amount of money (docs/errors.md, docs/worker-loop.md
# "Money"): a `decimal.Decimal` of whole micro-dollars (at most 6 decimal places) in
# Python records, and the integer micro-dollars the SQL stores keep in their `*_micros`
# columns. `money(value)` is the one conversion every record and store uses, so two
# charges of 0.1 are 0.2 exactly, in memory and in every database.
#
# Must never: do I/O; keep a float (a float is read as the decimal text it prints as,
# `repr`, then rounded to micro-dollars); accept a bool, NaN, an infinity, a negative
# amount or one beyond 64-bit micro-dollars (ValueError / TypeError naming `what`).
#
# Invariants:
#   Rule 1: canonical form - equal amounts are equal Decimals with equal repr (the
#           shortest without an exponent: Decimal('0.2'), Decimal('100'), Decimal('0')),
#           whether built from a float, an int, a str, a Decimal or stored micros.
#   Rule 2: `from_micros(to_micros(x)) == money(x)` and `to_micros(from_micros(m)) == m`.
#   Rule 3: rounding to micro-dollars is half-even, once, at conversion; sums of money
#           values are exact (no rounding), so stores agree with the memory model.
from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Final

from markertools._root import InvalidArgument, InvalidType

MICROS_PER_USD: Final[int] = 1_000_000
MAX_MICROS: Final[int] = 2**63 - 1  # what a 64-bit integer column holds
_MICRO: Final[Decimal] = Decimal(1).scaleb(-6)
_ONE: Final[Decimal] = Decimal(1)

MoneyInput = Decimal | int | float | str


def to_micros(value: object, what: str = "amount") -> int:
    """`value` (Decimal, int, float or decimal text) as whole micro-dollars (Rule 3).

    Raises TypeError for anything else (a bool included) and ValueError for NaN, an
    infinity, a negative amount or more than MAX_MICROS micro-dollars."""
    if isinstance(value, bool) or not isinstance(value, Decimal | int | float | str):
        raise InvalidType(f"{what}: expected an amount of money, got {type(value).__name__}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgument(f"{what}: must be a finite amount, got {value!r}")
        exact = Decimal(repr(value))  # the text the float prints as: 0.1 is 0.1
    elif isinstance(value, str):
        try:
            exact = Decimal(value.strip())
        except InvalidOperation:
            raise InvalidArgument(f"{what}: {value!r} is not a decimal number") from None
    else:
        exact = Decimal(value)
    if not exact.is_finite():
        raise InvalidArgument(f"{what}: must be a finite amount, got {value!r}")
    if exact < 0:
        raise InvalidArgument(f"{what}: must not be negative, got {value!r}")
    if exact.adjusted() > 18:  # far beyond MAX_MICROS: refuse before quantizing
        raise InvalidArgument(f"{what}: {value!r} is too large (at most {from_micros(MAX_MICROS)})")
    micros = int((exact * MICROS_PER_USD).quantize(_ONE, rounding=ROUND_HALF_EVEN))
    if micros > MAX_MICROS:
        raise InvalidArgument(f"{what}: {value!r} is too large (at most {from_micros(MAX_MICROS)})")
    return micros


def add_micros(total: int, extra: int, what: str = "amount") -> int:
    """`total + extra` micro-dollars, or ValueError when the sum exceeds MAX_MICROS (every
    store refuses such a charge with this message, before writing)."""
    if total + extra > MAX_MICROS:
        raise InvalidArgument(
            f"{what}: {from_micros(total)} + {from_micros(extra)} is too large "
            f"(at most {from_micros(MAX_MICROS)})"
        )
    return total + extra


def from_micros(micros: int) -> Decimal:
    """Whole micro-dollars as the canonical Decimal (Rule 1)."""
    amount = (Decimal(micros) * _MICRO).normalize()
    if amount.as_tuple().exponent > 0:  # type: ignore[operator]  # 1E+2 -> 100
        amount = amount.quantize(_ONE)
    return amount


def money(value: object, what: str = "amount") -> Decimal:
    """`value` as canonical money: rounded to micro-dollars, exact from then on."""
    return from_micros(to_micros(value, what))


def optional_money(value: object, what: str = "amount") -> Decimal | None:
    """`money(value)`, or None for None (an unpriced amount)."""
    return None if value is None else money(value, what)


def usd_text(amount: Decimal) -> str:
    """`$1.50`, `$0.0125`: at least two decimals, at most four (CST-2, QUO-2 reports)."""
    text = f"{amount:.4f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def money_json(amount: Decimal) -> int | float:
    """A JSON number for `amount` (world files, `--json`): an int when whole, else the
    float whose shortest text is the amount's (15 significant digits round-trip)."""
    if amount == amount.to_integral_value():
        return int(amount)
    return float(amount)
