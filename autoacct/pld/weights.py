"""The weight delta(eps) gives a mass at loss x > eps, 1 - e^{eps - x}, under a tilt.

A composed PLD held tilted by e^{lam x} carries errors of the form c e^{-lam x} at each
loss x; delta(eps) weighs each by 1 - e^{eps - x}, so a unit error at x = eps + u costs
e^{-lam eps} f(u) with f(u) = e^{-lam u} (1 - e^{-u}). f is unimodal, with its largest value
(lam / (lam + 1))^lam / (lam + 1) at u = log(1 + 1 / lam) (1, as u -> inf, at lam = 0), and
at most u: a window narrow in loss or a steep tilt weighs its masses far below 1 each.
"""

from __future__ import annotations

import numpy as np

from autoacct.exactness import MACHINE_EPSILON

_U = MACHINE_EPSILON


def peak(lam: np.ndarray | float) -> np.ndarray:
    """sup_{u > 0} f(u) for each tilt lam >= 0, rounded up."""
    lam = np.asarray(lam, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.exp(-lam * np.log1p(1.0 / lam)) / (1.0 + lam)
    return np.where(lam > 0.0, value * (1.0 + 8.0 * _U), 1.0)


def points(lam: np.ndarray | float, h: float, width: np.ndarray | float, plain: np.ndarray | float) -> np.ndarray:
    """A bound on sum_j f(u_j) over lattice points u_j of spacing h in (0, width], at most
    ``plain`` (the same sum with each weight bounded by 1).

    For unimodal f the sum is at most int_0^width f / h + max f (the samples on either
    side of the mode lie below the integral over their cells, and the two around it below
    that cell's integral plus the mode). int_0^W f = g(lam) - g(lam + 1) with
    g(a) = int_0^W e^{-a u} du = -expm1(-a W) / a (W at a = 0), each g within a few
    roundoffs of itself; where they cancel (W small) W^2 / 2 bounds it (f(u) <= u). The
    largest f on (0, W] is at most 1 - e^{-W} too."""
    lam = np.asarray(lam, dtype=float)
    width = np.asarray(width, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        flat = np.where(lam > 0.0, -np.expm1(-lam * width) / lam, width)
        integral = np.minimum(0.5 * width * width,
                              flat + np.expm1(-(lam + 1.0) * width) / (lam + 1.0) + 8.0 * _U * flat)
        bound = (integral / h + np.minimum(peak(lam), -np.expm1(-width))) * (1.0 + 8.0 * _U)
    return np.minimum(plain, bound)
