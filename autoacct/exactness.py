"""Exact values: floats that equal the quantity they stand for.

The public API rounds every bound one ulp away from the truth
(:func:`autoacct.routes.outward`), because the last rounding of a computation may
have put it an ulp on the wrong side. A value that no rounding touched (a user's
own epsilon, a rational sum that a float holds exactly) needs no such step:
:class:`ExactFloat` marks it, so that 1 + 2 certifies 3 and Laplace(1) certifies
1, not one ulp more.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from fractions import Fraction

#: The spacing of floats at 1 (2^-52): every error bound in the package that counts roundoffs
#: counts them in this unit, defined here once.
MACHINE_EPSILON = 2.0 ** -52


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
