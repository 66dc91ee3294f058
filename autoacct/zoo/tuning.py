"""Hyperparameter tuning: run a mechanism a random number of times and release only the best run.

Papernot and Steinke (2022), "Hyperparameter tuning with Renyi differential
privacy", bound the Renyi DP of the best of K runs when K is drawn from a
truncated negative binomial (shape eta > 0; eta = 1 is the geometric law), a
logarithmic (eta = 0) or a Poisson law (eta = inf), by the base's RDP at two
orders. The bounds hold for both orders of any neighbouring pair, so the
mechanism answers by RDP conversion, under the base's relation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy import optimize

from autoacct import _validation as check
from autoacct.converters.rdp import ALPHAS
from autoacct.exactness import MACHINE_EPSILON, round_up
from autoacct.mechanism import Mechanism, PairRdp
from autoacct.subsampling.base import require_mechanism, sampler_params

#: Orders lambda > 1 at which the theorems are evaluated once (those the RDP conversion reads first).
_ORDERS = ALPHAS[ALPHAS > 1.0]
#: Orders lambda-hat >= 1 over which Theorem 2's free order is minimised (any subset is a valid choice).
_FREE_ORDERS = np.concatenate([[1.0], _ORDERS])


#: Search range of u = log(-log gamma): gamma = e^-t with t = e^u from 4e-322 (a subnormal
#: float, far below any t a finite mean needs but for a shape near the largest float) to e^7,
#: where log E[K] > t - log t > 1089 exceeds the log of every finite mean.
_LOG_T_RANGE = (-740.0, 7.0)


def tnb_log_mean(t: float, shape: float) -> tuple[float, float]:
    """log E[K] of the truncated negative binomial with success probability gamma = e^-t (t > 0),
    and a bound on its rounding error.

    P[K = k] is proportional to (1 - gamma)^k C(k + eta - 1, k) for k >= 1, so
    E[K] = eta (1 - gamma) / (gamma (1 - gamma^eta)), and (1 - gamma) / (gamma log(1/gamma))
    at eta = 0 (Papernot and Steinke 2022, Section 2). Both are
    log E[K] = log r(t) + t - log r(eta t), r(x) = (1 - e^-x) / x (r(0) = 1), each factor a
    ratio of two numbers with relative precision: nothing underflows for a mean up to the largest
    float (gamma then ~1e-311, a subnormal whose 1 / gamma overflowed or divided by zero), and a
    shape whose eta log gamma underflows keeps r(eta t) = 1 (the form eta / (1 - gamma^eta)
    divided 0 by 0 at shape 1e-25). The error bound, in units of MACHINE_EPSILON (two roundoffs):
    each ratio is off by at most 2 (expm1, the division, and for r(eta t) the product eta t,
    whose relative error r moves by at most as much: |x r'(x) / r(x)| <= 1), so each log by 2
    plus 1 of itself; where eta t > 1, r(eta t) is (1 - e^-x) / x with log x = log eta + log t,
    each log 1 of itself; the two sums 1 of each term. 8 of each is ample.
    """
    log_r = math.log(-math.expm1(-t) / t)
    x = shape * t
    if x <= 1.0:
        log_rx = math.log(-math.expm1(-x) / x) if x > 0.0 else 0.0
        logs = 0.0
    else:
        # (shape t may overflow: its logarithm is the sum of two finite ones.)
        log_shape, log_t = math.log(shape), math.log(t)
        log_rx = math.log(-math.expm1(-x)) - log_shape - log_t
        logs = abs(log_shape) + abs(log_t)
    value = log_r + t - log_rx
    return value, 8.0 * MACHINE_EPSILON * (1.0 + abs(log_r) + t + abs(log_rx) + logs + abs(value))


def tnb_log_gamma(shape: float, mean: float) -> float:
    """A lower bound on log gamma of the truncated negative binomial with this mean.

    The mean decreases in gamma; a smaller gamma only enlarges Theorem 2's term
    log(1/gamma), so rounding it down keeps the bound valid. Rounded down relatively: the
    term is multiplied by (1 + eta), so an absolute margin (1e-12 on log gamma, earlier) costs
    (1 + eta) 1e-12, 1000 nats at eta = 1e15 where the whole bound was 2.54. The t = -log gamma
    returned is one at which the computed log-mean, less its rounding bound, is at least
    log(mean) plus that logarithm's own rounding: the true mean there is at least ``mean``, so
    t is at least the true one.
    """
    if mean == 1.0:
        return 0.0
    target = math.log(mean)
    need = target + 2.0 * MACHINE_EPSILON * target

    def excess(u: float) -> float:
        value, err = tnb_log_mean(math.exp(u), shape)
        return value - err - need

    lo, hi = _LOG_T_RANGE
    if excess(lo) >= 0.0:
        return -math.exp(lo)
    u = float(optimize.brentq(excess, lo, hi, xtol=1e-15, rtol=4.0 * MACHINE_EPSILON))
    # brentq's point is within its tolerance of the root, on either side: step up until the
    # check holds at the very float returned.
    step = 4.0 * MACHINE_EPSILON * max(1.0, abs(u))
    while excess(u) < 0.0:
        u += step
        step *= 2.0
    return -math.exp(u)


@dataclass(frozen=True, eq=False, repr=False)
class RepeatAndSelect(Mechanism):
    """The best of K runs of ``mechanism`` (only the selected run's output is released).

    K is random with mean ``mean``: truncated negative binomial of shape ``shape``
    in (0, inf) (shape 1: geometric), logarithmic for shape 0, Poisson for
    shape inf (K = 0 allowed there), as in Papernot and Steinke (2022). With
    eps(a) the base's Renyi DP and lambda > 1:

    * shape eta < inf (Theorem 2): eps(lambda) + log(mean) / (lambda - 1)
      + (1 + eta) min over lambda-hat >= 1 of [(1 - 1/lambda-hat) eps(lambda-hat)
      + log(1/gamma) / lambda-hat], gamma the law's success probability;
    * Poisson (Theorem 6): eps(lambda) + mean delta-hat + log(mean) / (lambda - 1),
      where the base is (log(1 + 1/(lambda - 1)), delta-hat)-DP; delta-hat is the
      base's certified delta there (tighter than converting its RDP).

    RDP being non-decreasing in the order, each order also takes the least bound
    of the orders above it. The relation is the base's.

    Parameters
    ----------
    mechanism:
        The tuned training run (any mechanism with a Renyi-DP representation).
    mean:
        E[K] >= 1 (finite).
    shape:
        eta >= 0, or inf for the Poisson law.
    """

    mechanism: Mechanism
    mean: float
    shape: float

    def __post_init__(self) -> None:
        base = require_mechanism(self.mechanism)
        if "rdp" not in base.routes:
            raise ValueError(f"mechanism {base.name!r} has no Renyi-DP representation; "
                             "RepeatAndSelect's bounds need one")
        if not math.isfinite(float(base.rdp(1.0))):
            # Renyi divergences do not decrease with the order: an infinite KL makes all infinite.
            raise ValueError(f"mechanism {base.name!r} has infinite Renyi DP at every order (an "
                             "approximate-DP guarantee, say): RepeatAndSelect's bounds need a finite one")
        mean = check.real("mean", self.mean, low=1.0)
        shape = check.real("shape", self.shape, low=0.0, allow_inf=True)
        self._set(mean=mean, shape=shape, neighboring=self.neighboring or base.neighboring,
                  name=self.name or f"RepeatAndSelect({base.name})")
        super().__post_init__()

    @property
    def params(self) -> Mapping[str, Any]:
        own = {"mean": self.mean, "shape": self.shape}
        return MappingProxyType(sampler_params(self.mechanism, "RepeatAndSelect", own))

    def _constant(self) -> float:
        """Theorem 2's (1 + eta) min over lambda-hat, which does not depend on lambda."""
        def make() -> float:
            log_gamma = tnb_log_gamma(self.shape, self.mean)

            def term(lam_hat: np.ndarray) -> np.ndarray:
                eps_hat = np.asarray(self.mechanism.rdp(lam_hat), dtype=float)
                # At lambda-hat = 1 the divergence's factor is 0 (0 * inf would be NaN where the
                # base's KL is infinite; then every order's is, and the bound is inf anyway). The
                # factor is (lambda-hat - 1) / lambda-hat, whose difference is exact for a float
                # lambda-hat >= 1 (1 - 1/lambda-hat cancels the rounding of 1/lambda-hat: 5 ulps
                # of the factor at lambda-hat = 1.1). Both summands are >= 0 (log gamma <= 0).
                weighted = np.where(lam_hat == 1.0, 0.0, (lam_hat - 1.0) / lam_hat * eps_hat)
                return weighted - log_gamma / lam_hat
            terms = term(_FREE_ORDERS)
            i = int(np.argmin(terms))
            best = float(terms[i])
            # Any lambda-hat gives a valid bound: refine between the grid neighbours of the best.
            lo, hi = _FREE_ORDERS[max(i - 1, 0)], _FREE_ORDERS[min(i + 1, _FREE_ORDERS.size - 1)]
            if hi > lo:
                res = optimize.minimize_scalar(lambda x: float(term(np.array([x]))[0]), bounds=(lo, hi),
                                               method="bounded", options={"xatol": 1e-6 * hi})
                if res.success and math.isfinite(res.fun):
                    best = min(best, float(res.fun))
            # Any lambda-hat gives a valid bound, the one found too, but its term is that of the
            # float lambda-hat to five roundings (two in the weighted summand, one in the other,
            # one in their sum, one more in 1 + eta and one in the product): round_up covers
            # them. Unrounded, the constant was up to 2.2e-16 relatively below the same formula
            # at the same lambda-hat in mpmath (187 of 400 random Gaussian and Laplace bases).
            return round_up((1.0 + self.shape) * best)
        return self.cached(("tnb constant",), make)

    def _bound(self, lam: np.ndarray) -> np.ndarray:
        """The theorem's bound at orders lam > 1 (+inf where it is infinite), rounded up.

        Its summands are upper bounds (the base's RDP and delta, the constant) or formed in two
        roundings (log(mean) / (lam - 1), lam - 1 exact); with the two additions (and mean
        delta-hat) at most four roundings of non-negative terms, which round_up covers (the
        unrounded sum was up to 2.4e-16 relatively below its mpmath value in 194 of 400 random
        cases). Theorem 6 holds for a base that is (eps-hat, delta-hat)-DP at eps-hat =
        log(1 + 1/(lam - 1)), which a base (e, delta(e))-DP at any e <= eps-hat is: e is
        eps-hat rounded down, so that its delta is not read beyond it."""
        eps = np.asarray(self.mechanism.rdp(lam), dtype=float)
        log_mean = math.log(self.mean) / (lam - 1.0)
        if math.isinf(self.shape):
            eps_hat = np.log1p(1.0 / (lam - 1.0)) * (1.0 - 4.0 * MACHINE_EPSILON)
            delta_hat = np.asarray(self.mechanism.delta(eps_hat.ravel()), dtype=float).reshape(lam.shape)
            return round_up(eps + self.mean * delta_hat + log_mean)
        return round_up(eps + log_mean + self._constant())

    def _suffix_min(self) -> np.ndarray:
        """At each order of the grid, the least bound over the grid's orders at or above it."""
        def make() -> np.ndarray:
            return np.minimum.accumulate(self._bound(_ORDERS)[::-1])[::-1]
        return self.cached(("suffix min",), make)

    def rdp_curve(self) -> PairRdp:
        def curve(alpha: np.ndarray) -> np.ndarray:
            # RDP is non-decreasing in the order, so the bound at any order at or above alpha
            # holds at alpha: the least of the grid's from the first grid order >= alpha on.
            a = np.asarray(alpha, dtype=float)
            idx = np.searchsorted(_ORDERS, a, side="left")
            v = np.append(self._suffix_min(), np.inf)[np.minimum(idx, _ORDERS.size)]
            if not math.isinf(self.shape):
                # Theorem 2 at alpha itself (one RDP value of the base; the Poisson bound's
                # delta-hat would cost a query per order).
                inside = a > 1.0
                v = np.where(inside, np.minimum(v, self._bound(np.where(inside, a, 2.0))), v)
            return np.stack([v, v])
        return curve
