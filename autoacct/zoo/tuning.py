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
from autoacct.mechanism import Mechanism, PairRdp
from autoacct.subsampling.base import require_mechanism, sampler_params

#: Orders lambda > 1 at which the theorems are evaluated once (those the RDP conversion reads first).
_ORDERS = ALPHAS[ALPHAS > 1.0]
#: Orders lambda-hat >= 1 over which Theorem 2's free order is minimised (any subset is a valid choice).
_FREE_ORDERS = np.concatenate([[1.0], _ORDERS])


def _tnb_mean(log_gamma: float, shape: float) -> float:
    """E[K] of the truncated negative binomial with success probability gamma = e^log_gamma.

    P[K = k] is proportional to (1 - gamma)^k C(k + eta - 1, k) for k >= 1, so
    E[K] = eta (1 - gamma) / (gamma (1 - gamma^eta)), and (1 - gamma) / (gamma log(1/gamma))
    at eta = 0 (Papernot and Steinke 2022, Section 2).
    """
    one_minus = -math.expm1(log_gamma)
    if shape == 0.0:
        return one_minus / (math.exp(log_gamma) * -log_gamma)
    return shape * one_minus / (math.exp(log_gamma) * -math.expm1(shape * log_gamma))


def tnb_log_gamma(shape: float, mean: float) -> float:
    """A lower bound on log gamma of the truncated negative binomial with this mean.

    The mean decreases in gamma; a smaller gamma only enlarges Theorem 2's term
    log(1/gamma), so rounding it down keeps the bound valid.
    """
    if mean == 1.0:
        return 0.0
    if shape == 1.0:
        return -math.log(mean)
    # mean <= 2 (eta + 1) / gamma bounds gamma above; below, step down until the mean exceeds the target.
    hi = min(-1e-300, math.log(2.0 * (shape + 1.0) / mean))
    lo = hi - 1.0
    while _tnb_mean(lo, shape) < mean:
        lo = 2.0 * lo
    if _tnb_mean(hi, shape) >= mean:
        return hi
    root = optimize.brentq(lambda x: _tnb_mean(x, shape) - mean, lo, hi, xtol=1e-15, rtol=1e-14)
    return float(root) - 1e-12 * max(1.0, abs(float(root)))


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
                # base's KL is infinite; then every order's is, and the bound is inf anyway).
                weighted = np.where(lam_hat == 1.0, 0.0, (1.0 - 1.0 / lam_hat) * eps_hat)
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
            return (1.0 + self.shape) * best
        return self.cached(("tnb constant",), make)

    def _bound(self, lam: np.ndarray) -> np.ndarray:
        """The theorem's bound at orders lam > 1 (+inf where it is infinite)."""
        eps = np.asarray(self.mechanism.rdp(lam), dtype=float)
        log_mean = math.log(self.mean) / (lam - 1.0)
        if math.isinf(self.shape):
            eps_hat = np.log1p(1.0 / (lam - 1.0))
            delta_hat = np.asarray(self.mechanism.delta(eps_hat.ravel()), dtype=float).reshape(lam.shape)
            return eps + self.mean * delta_hat + log_mean
        return eps + log_mean + self._constant()

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
