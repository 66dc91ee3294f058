"""Closed-form laws of binary randomized response and of its leaky variant.

Both are finite atom laws (:class:`~autoacct.losses.base.DiscreteLoss`) whose profiles are
answered by closed forms rather than by summing p - e^eps q over their atoms: the small
mass e^-eps0 / (1 + e^-eps0) underflows for eps0 beyond ~745 (and loses relative precision,
being subnormal, beyond ~708), where the atom sum reads the atom at eps0 as mass Q cannot
produce and gives delta(eps) ~ 1 for every eps < eps0, above the truth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses.base import PROFILE_REL, DiscreteLoss

_EPS = MACHINE_EPSILON
#: Smallest mass a :class:`TwoPoint` pair holds: its k runs' terms are products of masses, and
#: far below this a mass loses its relative precision (subnormal floats below 2.2e-308).
_SMALLEST_MASS = 1e-280


@dataclass(frozen=True)
class TwoPoint:
    """A pair on two outcomes: P = (p[0], p[1]) and Q = (q[0], q[1]), each mass positive and
    within a factor 1 +- ``rel`` of its float here, and the outcomes' losses log(p_i / q_i)
    within ``loss_error`` (one bound per outcome) of ``loss`` (no outcome of infinite loss). The losses are kept apart
    from the masses: a loss near 0, log of a quotient of two masses each a few roundoffs off, would
    carry those roundoffs as an absolute error (the addition pair of PoissonSubsample(1e-9) of
    PureDP(20) has a loss of 1e-9, which moved delta(0) of its 40 runs by a relative 1.4e-5).
    Its k runs are answered from the binomial law of the outcomes (:mod:`autoacct.binomial`)."""

    p: tuple[float, float]
    q: tuple[float, float]
    rel: float
    loss: tuple[float, float]
    loss_error: tuple[float, float]

    def subsampled(self, rate: float, remove: bool) -> TwoPoint:
        """The pair of Poisson subsampling at ``rate`` (0 < rate < 1): (rate P + (1 - rate) Q, Q)
        for removal, (Q, rate P + (1 - rate) Q) for addition.

        Each mixed mass is two products and a sum of non-negative terms, and 1 - rate one more
        rounding: 5 u beyond the parts' ``rel``. The removal losses are log(1 + rate (e^l - 1))
        for the base's losses l, the addition losses their negatives: d/dl of that is at most 1,
        so the base's ``loss_error`` carries over, and x = rate expm1(l) is two roundings off,
        which log1p turns into 2 u |x| / (1 + x), and its own rounding an ulp (2 u) of the value.
        """
        mixed = tuple(rate * a + (1.0 - rate) * b for a, b in zip(self.p, self.q))
        p, q = (mixed, self.q) if remove else (self.q, mixed)
        x = [rate * math.expm1(v) for v in self.loss]
        loss = [math.log1p(v) for v in x]
        error = [e + 2.2 * _EPS * (abs(v) / (1.0 + v) + abs(w)) for e, v, w in zip(self.loss_error, x, loss)]
        sign = 1.0 if remove else -1.0
        return TwoPoint((p[0], p[1]), (q[0], q[1]), self.rel + 5.0 * _EPS * (1.0 + self.rel),
                        (sign * loss[0], sign * loss[1]), (error[0], error[1]))


def two_point_masses_ok(p: np.ndarray, q: np.ndarray) -> bool:
    """Whether every mass of a two-point pair is at least _SMALLEST_MASS (and finite)."""
    return bool(np.all(np.isfinite(p)) and np.all(np.isfinite(q)) and min(np.min(p), np.min(q)) >= _SMALLEST_MASS)


class RandomizedResponseLoss(DiscreteLoss):
    """Loss of binary randomized response with log-odds ``eps0``: P = (p, 1-p), Q = (1-p, p),
    p = e^eps0 / (1 + e^eps0); its profile in closed form (``exact_profile``).
    ``value_error``: an absolute bound on the rounding of a computed eps0 (0 when it is exact),
    which readers that take the atoms' values as they are (the phi route's enumeration) add."""

    exact_profile = True

    def __init__(self, eps0: float, tight: bool = True, value_error: float = 0.0) -> None:
        # expit(-eps0) keeps the small mass's relative precision (1 - p would cancel).
        p, r = special.expit(eps0), special.expit(-eps0)
        super().__init__(np.array([-eps0, eps0]), np.array([r, p]), np.array([p, r]),
                         lattice=eps0 if eps0 > 0 else None, tight=tight)
        self.eps0 = float(eps0)
        self.value_error = float(value_error)

    @property
    def key(self) -> tuple:
        # (equal atoms from an exact and from a computed eps0 are not the same law's bounds)
        return (*super().key, self.value_error)

    def value_bounds(self) -> np.ndarray:
        # The atoms are -+eps0 as given, off only by a computed eps0's declared rounding.
        return np.full(self.values.shape, self.value_error)

    def two_point(self) -> TwoPoint | None:
        """Outcome 0 of loss -eps0, outcome 1 of loss eps0. scipy's expit, 1 / (1 + e^-x), is a
        few roundoffs off (8 u allowed), and a computed eps0 off by d moves each mass by a
        factor within e^(+-d) (d log expit(x) / dx = expit(-x) <= 1), 2 d for d <= 1/2."""
        p, r = float(special.expit(self.eps0)), float(special.expit(-self.eps0))
        err = float(np.max(self.value_error))
        if self.eps0 <= 0.0 or err > 1e-6 or r < _SMALLEST_MASS:
            return None
        return TwoPoint((r, p), (p, r), 8.0 * _EPS + 2.0 * err, (-self.eps0, self.eps0), (err, err))

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        """A relative PROFILE_REL of the closed form, plus its change over the few roundoffs
        by which eps0 (a computed log-odds) and |eps| - eps0 are off: near eps0 the factor
        1 - e^{|eps| - eps0} is that small difference, whose absolute rounding is a few ulps
        of eps0 (a relative ulp(eps0) / (eps0 - |eps|) of the value). The derivative of the profile in
        eps0 is at most p (e^{|eps| - eps0} + 1) there; beyond eps0 + d it is 0. eps0 = 0 is
        exact (only p = 1/2 has log-odds 0), and so is the profile then."""
        eps = np.asarray(eps, dtype=float)
        e = np.abs(eps)
        if self.eps0 == 0.0:
            return PROFILE_REL * np.asarray(self.profile(eps), dtype=float)
        d = 8.0 * _EPS * (self.eps0 + e + 1.0)
        p = float(special.expit(self.eps0))
        with np.errstate(over="ignore"):
            slope = np.where(e < self.eps0 + d, p * (np.exp(np.minimum(e - self.eps0, 1.0)) + 1.0), 0.0)
        return PROFILE_REL * np.asarray(self.profile(eps), dtype=float) + slope * d

    def profile(self, eps: np.ndarray) -> np.ndarray:
        """H_{e^eps} = p (1 - e^{eps - eps0})^+ for eps >= 0 (only the atom eps0 exceeds eps),
        and 1 - e^eps (1 - H_{e^-eps}) for eps < 0 (the pair is symmetric)."""
        eps = np.asarray(eps, dtype=float)
        e = np.abs(eps)
        p = float(special.expit(self.eps0))
        pos = p * -np.expm1(np.minimum(e - self.eps0, 0.0))
        with np.errstate(over="ignore"):
            neg = 1.0 - np.exp(-e) * (1.0 - pos)
        return np.clip(np.where(eps >= 0.0, pos, neg), 0.0, 1.0)


def randomized_response_loss(eps: float, tight: bool = True, value_error: float = 0.0) -> DiscreteLoss:
    """Loss of binary randomized response with log-odds ``eps``.

    P = (p, 1-p), Q = (1-p, p) with p = e^eps / (1 + e^eps). ``tight``: whether
    the mechanism described is known to attain this pair (see ``PrivacyLoss.tight``);
    ``value_error``: a bound on |eps - the true log-odds| where eps was computed.
    """
    return RandomizedResponseLoss(eps, tight=tight, value_error=value_error)


class LeakyRandomizedResponseLoss(DiscreteLoss):
    """Loss of the leaky randomized response with log-odds ``eps0`` and leak ``delta0``.

    Zhu, Dong and Wang (2022): P = ((1-delta0) p, (1-delta0)(1-p), delta0, 0), Q its mirror
    image, p = e^eps0 / (1 + e^eps0). The outcome only P produces has loss +inf, the one only
    Q produces -inf, so H_{e^eps}(P || Q) = delta0 + (1 - delta0) H_RR(eps) at every eps
    (the outcome of loss -inf adds (0 - e^eps delta0)^+ = 0), with H_RR the closed-form profile
    of :class:`RandomizedResponseLoss` (``exact_profile``).
    """

    exact_profile = True

    def __init__(self, eps0: float, delta0: float) -> None:
        # expit(-eps0), not 1 - expit(eps0): the small mass keeps its relative precision (1 - p
        # keeps only an absolute ulp of 1, a relative 5e-8 of e^-20).
        p, r = special.expit(eps0), special.expit(-eps0)
        super().__init__(np.array([-eps0, eps0]), (1 - delta0) * np.array([r, p]),
                         (1 - delta0) * np.array([p, r]), p_inf=delta0, q_ninf=delta0,
                         lattice=eps0 if eps0 > 0 else None)
        self.eps0 = float(eps0)
        self.delta0 = float(delta0)
        self._binary = RandomizedResponseLoss(eps0)

    def profile(self, eps: np.ndarray) -> np.ndarray:
        d = self.delta0
        return np.clip(d + (1.0 - d) * self._binary.profile(eps), 0.0, 1.0)

    def value_bounds(self) -> np.ndarray:
        # The finite atoms are -+eps0 as given (the infinite ones have no error).
        return np.zeros(self.values.shape)

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        """(1 - delta0) times the binary profile's bound, plus the few roundoffs of the affine
        combination (1 - delta0 is one, the product and the sum one each), each relative to
        the value, which is at most 1."""
        d = self.delta0
        inner = np.asarray(self._binary.profile(eps), dtype=float)
        return (1.0 - d) * self._binary.profile_error(eps) + 4.0 * _EPS * (d + (1.0 - d) * inner)


def leaky_rr_loss(eps: float, delta: float) -> DiscreteLoss:
    """Loss of the leaky randomized response that dominates every (eps, delta)-DP mechanism
    (:class:`LeakyRandomizedResponseLoss`)."""
    return LeakyRandomizedResponseLoss(eps, delta)
