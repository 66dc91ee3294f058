"""Closed-form laws of binary randomized response and of its leaky variant.

Both are finite atom laws (:class:`~autoacct.losses.base.DiscreteLoss`) whose profiles are
answered by closed forms rather than by summing p - e^eps q over their atoms: the small
mass e^-eps0 / (1 + e^-eps0) underflows for eps0 beyond ~745 (and loses relative precision,
being subnormal, beyond ~708), where the atom sum reads the atom at eps0 as mass Q cannot
produce and gives delta(eps) ~ 1 for every eps < eps0, above the truth.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses.base import PROFILE_REL, DiscreteLoss

_EPS = MACHINE_EPSILON


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
