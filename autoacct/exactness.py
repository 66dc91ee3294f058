"""Exact values: floats that equal the quantity they stand for.

The public API rounds every bound one ulp away from the truth
(:func:`autoacct.routes.outward`), because the last rounding of a computation may
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
from typing import TypeVar

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
    """A float equal to the quantity it bounds; :func:`~autoacct.routes.outward` keeps it."""


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
