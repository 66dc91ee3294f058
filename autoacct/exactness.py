"""Exact values: floats that equal the quantity they stand for.

The public API rounds every bound one ulp away from the truth
(:func:`outward`), because the last rounding of a computation may
have put it an ulp on the wrong side. A value that no rounding touched (a user's
own epsilon, a rational sum that a float holds exactly) needs no such step:
:class:`ExactFloat` marks it, so that 1 + 2 certifies 3 and Laplace(1) certifies
1, not one ulp more.

A value that roundings did touch is raised past them by :func:`round_up`, the one helper
that does so, before it is used as a bound.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from fractions import Fraction
from typing import Any, TypeVar

import numpy as np

#: The spacing of floats at 1 (2^-52): every error bound in the package that counts roundoffs
#: counts them in this unit, defined here once.
MACHINE_EPSILON = 2.0 ** -52

#: A float, or an array of them elementwise.
_Real = TypeVar("_Real", float, np.ndarray)


def round_up(x: _Real, rel: float = 4.0 * MACHINE_EPSILON) -> _Real:
    """x + rel |x|, moved to the next float above: at least the quantity x approximates when
    x is within a relative rel - MACHINE_EPSILON of it (the addition's own rounding is at most
    half a spacing, and the step to the next float makes it up), or within one subnormal
    spacing (2^-1074) of it where x is subnormal or 0. The default covers a value formed in
    up to three correctly rounded operations, and one more operation on top of it."""
    out = np.nextafter(x + rel * np.abs(x), np.inf)
    # (an array stays one, also of shape (): numpy's ufuncs return a scalar there)
    return np.asarray(out) if isinstance(x, np.ndarray) else float(out)


class ExactFloat(float):
    """A float equal to the quantity it bounds; :func:`outward` keeps it."""


def rational_up(x: Fraction) -> float:
    """The smallest float >= x: an :class:`ExactFloat` when it equals x."""
    f = float(x)
    if Fraction(f) == x:
        return ExactFloat(f)
    return f if Fraction(f) > x else math.nextafter(f, math.inf)


def bound_text(x: float, upper: bool, digits: int = 6) -> str:
    """``x`` written with ``digits`` significant digits, rounded up for an ``upper`` bound and
    down for a lower one (to nearest, a certified 1.5159233 would print as 1.51592, below
    itself), in the style of the format ``g``."""
    if not math.isfinite(x) or x == 0.0:
        return f"{x:g}"
    exact = Decimal(x)
    shift = exact.adjusted() - (digits - 1)
    rounded = exact.scaleb(-shift).to_integral_value(ROUND_CEILING if upper else ROUND_FLOOR).scaleb(shift)
    return f"{float(rounded):.{digits}g}"


def outward(val: Any, *, upper: bool, cap: float = math.inf, exact: Any = False) -> Any:
    """A bound as it leaves the library: rounded one ulp away from the truth, in [0, cap].

    The one rounding rule of the public API: an upper bound is moved to the next
    float above, a lower bound to the next float below, so that the last
    rounding of any computation cannot put a bound on the wrong side of the
    truth. Zero and infinity are kept, and so is ``cap`` as an upper bound (a certified
    0 or a cap is exact); a lower bound at the cap is moved below it.
    A float for a scalar, else an array; never negative, never -0.0. An
    :class:`~autoacct.exactness.ExactFloat` (no rounding touched it) is kept, as is
    every entry where ``exact`` is true.
    """
    x = np.asarray(val, dtype=float)
    # A lower bound at the cap is moved down too: 1.0 from a sum of masses can be 1 - 1e-38.
    below_cap = (x < cap) if upper else (x <= cap) & np.isfinite(x)
    inner = (x > 0.0) & below_cap & ~np.asarray(exact | isinstance(val, ExactFloat), dtype=bool)
    moved = np.nextafter(x, np.inf if upper else -np.inf)
    out = np.clip(np.where(inner, moved, x), 0.0, cap) + 0.0
    return float(out) if out.ndim == 0 else out


def public_delta(val: Any, *, upper: bool = True) -> Any:
    """A delta bound as returned to users: rounded outward (:func:`outward`) into [0, 1]."""
    return outward(val, upper=upper, cap=1.0)
