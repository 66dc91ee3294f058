"""The weight delta(eps) gives a mass at loss x > eps, 1 - e^{eps - x}, under a tilt.

A composed PLD held tilted by e^{lam x} carries errors of the form c e^{-lam x} at each
loss x; delta(eps) weighs each by 1 - e^{eps - x}, so a unit error at x = eps + u costs
e^{-lam eps} f(u) with f(u) = e^{-lam u} (1 - e^{-u}). f is unimodal, with its largest value
(lam / (lam + 1))^lam / (lam + 1) at u = log(1 + 1 / lam) (1, as u -> inf, at lam = 0), and
at most u: a window narrow in loss or a steep tilt weighs its masses far below 1 each.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from autoacct.exactness import MACHINE_EPSILON

_U = MACHINE_EPSILON
#: A float or an array of them.
Width = TypeVar("Width", float, np.ndarray)


def peak(lam: float) -> float:
    """sup_{u > 0} f(u) for the tilt lam >= 0, rounded up."""
    if lam <= 0.0:
        return 1.0
    return math.exp(-lam * math.log1p(1.0 / lam)) / (1.0 + lam) * (1.0 + 8.0 * _U)


def points(lam: float, h: float, width: Width, plain: float) -> Width:
    """A bound on sum_j f(u_j) over lattice points u_j of spacing h in (0, width], at most
    ``plain`` (the same sum with each weight bounded by 1), for a float or an array of widths.

    For unimodal f the sum is at most int_0^width f / h + max f (the samples on either
    side of the mode lie below the integral over their cells, and the two around it below
    that cell's integral plus the mode). int_0^W f = g(lam) - g(lam + 1) with
    g(a) = int_0^W e^{-a u} du = -expm1(-a W) / a (W at a = 0), each g within a few
    roundoffs of itself; where they cancel (W small) W^2 / 2 bounds it (f(u) <= u). The
    largest f on (0, W] is at most 1 - e^{-W} too. (A float takes the math module's
    functions: a profile's solve asks a dozen single widths a query.)"""
    expm1: Callable[[Any], Any] = math.expm1 if isinstance(width, float) else np.expm1
    least: Callable[[Any, Any], Any] = min if isinstance(width, float) else np.minimum
    flat = -expm1(-lam * width) / lam if lam > 0.0 else width
    integral = least(0.5 * width * width, flat + expm1(-(lam + 1.0) * width) / (lam + 1.0) + 8.0 * _U * flat)
    bound = (integral / h + least(peak(lam), -expm1(-width))) * (1.0 + 8.0 * _U)
    return least(plain, bound)
