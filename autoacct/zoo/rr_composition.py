"""Lower ends of k-fold randomized response's profile from the central limit with a certified error.

k runs of an eps0-DP mechanism are dominated by, and for PureDP attain, k runs of randomized
response with log-odds eps0 (Kairouz, Oh and Viswanath 2015): under P the number J of flipped
answers is Bin(k, q), q = 1 / (1 + e^eps0), the loss is L = eps0 (k - 2J), and
delta(eps) = E[(1 - e^(eps - L))^+], a binomial sum. Where k is large the PLD accountant's grid is
capped (2^36 runs of PureDP(0.1) need 7e6 points; 2^50 runs 1.1e11) and its lower end says nothing:
Composition()([PureDP(0.1)], [2**50]).epsilon_bounds(1e-5) was (0.1, 5.6e12).

Every term of the sum is non-negative, so for any j with L_j = eps0 (k - 2j) > eps
    delta(eps) >= P(J <= j) (1 - e^(eps - L_j)),
and Berry-Esseen's theorem, for a sum of k Bernoulli(q) (third absolute central moment
p q (p^2 + q^2)), bounds P(J <= j) >= Phi((j - kq) / s) - C (p^2 + q^2) / s, s = sqrt(k p q),
with C = 0.4748 (Shevtsova 2011, identically distributed summands). The bound says something where
that error is below delta/2: for eps0 = 0.1 and delta = 1e-5 from k = 9e9 (2^33) on, about where
the grid runs out (2^35 to 2^36); its lower end on eps is there within a relative 3e-6 of the
central limit's value at 2^36, 2e-10 at 2^50.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses.gdp import NORMAL_REL

#: Berry-Esseen constant for identically distributed summands (Shevtsova 2011: C <= 0.4748).
BERRY_ESSEEN = 0.4748
#: Shares of delta above which P(J <= j) is aimed, for the lower end on eps (the best is kept).
_AIMS = (1.0 + 1e-9, 1.0 + 1e-6, 1.0 + 1e-3, 1.1, 2.0)
#: Steps t below the largest j with L_j >= eps tried for the lower end on delta: 1, 2, 4, ...
_STEPS = 2 ** np.arange(40)
_U = MACHINE_EPSILON
#: Smallest eps0 bounded: below it losses and their gaps could be subnormal, where a relative
#: rounding allowance does not hold (such runs give nothing worth bounding).
_SMALLEST_EPS0 = 1e-200


def _binomial(eps0: float, k: int) -> tuple[float, float, float]:
    """(kq, s, e): the mean and the standard deviation of J ~ Bin(k, q), and Berry-Esseen's
    bound on the distance of its distribution function to the normal one, rounded up."""
    q, p = float(special.expit(-eps0)), float(special.expit(eps0))
    s = math.sqrt(k * p * q)
    if s == 0.0:  # (q underflows past eps0 = 745: no flip is ever seen, and no bound is given)
        return 0.0, 0.0, math.inf
    return k * q, s, BERRY_ESSEEN * (p * p + q * q) / s * (1.0 + NORMAL_REL)


def _cdf_floor(kq: float, s: float, error: float, j: np.ndarray) -> np.ndarray:
    """A lower bound on P(J <= j): Phi at (j - kq) / s moved down by its roundings (j exact, kq,
    q, s and the quotient a few ulps each: 8 ulps of the parts' sizes), less the normal
    approximation's error."""
    j = np.asarray(j, dtype=float)
    z = (j - kq) / s
    z = z - 8.0 * _U * ((np.abs(j) + kq) / s + np.abs(z))
    return special.ndtr(z) * (1.0 - NORMAL_REL) - error


def rr_composition_epsilon_lower(eps0: float, k: int, delta: float) -> float:
    """A lower bound on eps(delta) of k runs of randomized response with log-odds eps0 (0 where
    the central limit's error is not below delta/2).

    For j with F = P(J <= j) > delta (a lower bound on it, :func:`_cdf_floor`), eps(delta) >=
    L_j + log(1 - delta / F): delta is non-increasing and at least F (1 - e^(eps - L_j)). j is
    aimed at F = c delta for the shares c of _AIMS, and the largest lower end kept. The sum is
    moved down past its roundings: L_j (one product: 2 ulps), the logarithm (a relative 2 ulps
    of delta / F amplified by 1 / (1 - delta/F), then 4 ulps of its value) and the sum (2 ulps).
    """
    if not (eps0 >= _SMALLEST_EPS0 and 0.0 < delta < 1.0):
        return 0.0
    kq, s, error = _binomial(eps0, k)
    if error >= delta / 2.0:
        return 0.0
    best = 0.0
    for c in _AIMS:
        aim = c * delta + error
        if aim >= 1.0:
            continue
        j = math.ceil(kq + s * float(special.ndtri(aim)))  # a candidate: _cdf_floor certifies it
        if not 0 <= j <= k:
            continue
        floor = float(_cdf_floor(kq, s, error, np.array([j]))[0])
        if floor <= delta:
            continue
        log_part = math.log1p(-min(delta / floor * (1.0 + 2.0 * _U), 1.0)) * (1.0 + 4.0 * _U)
        loss = eps0 * (k - 2 * j) * (1.0 - 2.0 * _U)
        if loss + log_part > 0.0:
            best = max(best, (loss + log_part) * (1.0 - 2.0 * _U))
    return best


def rr_composition_delta_lower(eps0: float, k: int, eps: np.ndarray) -> np.ndarray:
    """Lower bounds on delta(eps) of k runs of randomized response with log-odds eps0, at an
    array of eps: the largest of P(J <= j) (1 - e^(eps - L_j)) (:func:`_cdf_floor`) over j = j0 - t,
    j0 the largest j with L_j > eps (to within the rounding of eps / eps0: a j with L_j <= eps
    is dropped by the sign of the gap) and t in _STEPS; 0 where none is positive. The factor
    1 - e^(eps - L_j) is formed by expm1 of an upper bound on eps - L_j (L_j moved down 2 ulps,
    the difference up 2 ulps of the parts) and moved down 4 ulps."""
    eps = np.asarray(eps, dtype=float)
    out = np.zeros(eps.shape)
    if not eps0 >= _SMALLEST_EPS0:
        return out
    kq, s, error = _binomial(eps0, k)
    if not error < 1.0:
        return out
    flat = eps.reshape(-1)
    res = out.reshape(-1)
    for i, e in enumerate(flat):
        if not 0.0 <= e < eps0 * k:
            continue
        j0 = math.ceil((k - e / eps0) / 2.0) - 1
        j = j0 - _STEPS
        j = j[j >= 0]
        if j.size == 0:
            continue
        loss = eps0 * (k - 2.0 * j) * (1.0 - 2.0 * _U)
        gap = (e - loss) + 2.0 * _U * (abs(e) + loss)
        factor = -np.expm1(np.minimum(gap, 0.0)) * (1.0 - 4.0 * _U)
        floor = _cdf_floor(kq, s, error, j)
        res[i] = max(float(np.max(np.where(gap < 0.0, floor * factor * (1.0 - 2.0 * _U), 0.0))), 0.0)
    return out
