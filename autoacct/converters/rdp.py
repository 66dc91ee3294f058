"""RDP -> (epsilon, delta) and RDP -> privacy profile.

Conversion (Balle, Barthe, Gaboardi, Hsu, Sato 2020, Theorem 21; identical to
Canonne, Kamath and Steinke 2020, Proposition 12): a mechanism with Renyi DP
eps_R(alpha) at order alpha > 1 is (eps, delta)-DP with

    eps = eps_R(alpha) + log((alpha - 1)/alpha) - (log delta + log alpha)/(alpha - 1),
    log delta = (alpha - 1)(eps_R(alpha) - eps + log(1 - 1/alpha)) - log alpha.

It improves on the classic eps_R(alpha) + log(1/delta)/(alpha - 1) at every
order. Every order gives a valid bound, so the minimum over any set of orders
is valid; the search evaluates a dense grid of orders and polishes the best one
with a bounded scalar search, keeping the smaller of the two values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import optimize

from autoacct.exactness import MACHINE_EPSILON

RdpCurve = Callable[[np.ndarray], np.ndarray]

#: Orders searched: a few fractional orders near 1 (where large deltas want them), then
#: integers (cheap for every closed form) up to 64 and geometrically spaced integers up
#: to 10^4. The best order is then polished over the real line around it.
ALPHAS = np.unique(np.concatenate((1.0 + np.logspace(-4, -0.05, 12), np.arange(2.0, 65.0),
                                   np.round(np.logspace(np.log10(70.0), 4.0, 24)))))

#: Smallest delta the conversion returns: exp of a very negative log-delta underflows to 0,
#: and a certified upper bound must stay positive (the closed-form route uses the same floor).
DELTA_FLOOR = 1e-300


#: Rounding allowance of the conversion, in machine epsilons of the sum of its terms' sizes.
_EPS_ROUNDING = 16 * MACHINE_EPSILON


def _eps_at(rdp_vals: np.ndarray, alpha: np.ndarray, delta: float) -> np.ndarray:
    # The terms are summed in floating point and rounded up by _EPS_ROUNDING of their sizes:
    # where the conversion is nearly tight the rounding alone put it below the truth
    # (200 runs of randomized response with log-odds 20 at delta 0.5: 3999.306852407208 at
    # order 2, with the true delta there 0.5000000000004676; the exact conversion there is
    # 3999.3068524072093, still valid).
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = (rdp_vals, np.log1p(-1.0 / alpha), -(np.log(delta) + np.log(alpha)) / (alpha - 1.0))
        val = terms[0] + terms[1] + terms[2]
        val = val + _EPS_ROUNDING * (np.abs(terms[0]) + np.abs(terms[1]) + np.abs(terms[2]))
    return np.where(np.isfinite(val), val, np.inf)


def _log_delta_at(rdp_vals: np.ndarray, alpha: np.ndarray, eps: float | np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        val = (alpha - 1.0) * (rdp_vals - eps + np.log1p(-1.0 / alpha)) - np.log(alpha)
    return np.where(np.isnan(val), np.inf, val)


def _delta_from_log(log_delta: float) -> float:
    """exp(log_delta) rounded up into [DELTA_FLOOR, 1]: 1 when no order is finite or the
    bound exceeds 1, and at least DELTA_FLOOR where the exponential would underflow (an
    upper bound must not round a positive delta down to 0)."""
    if np.isnan(log_delta) or log_delta >= 0.0:
        return 1.0
    return max(float(np.exp(log_delta)), DELTA_FLOOR)


def rdp_to_epsilon(rdp: RdpCurve, delta: float) -> float:
    """Smallest certified eps at ``delta`` from an RDP curve (0 <= eps, inf if no order is finite)."""
    vals = _eps_at(np.asarray(rdp(ALPHAS), dtype=float), ALPHAS, delta)
    i = int(np.argmin(vals))
    best = float(vals[i])
    if not np.isfinite(best):
        return np.inf
    lo = ALPHAS[max(i - 1, 0)]
    hi = ALPHAS[min(i + 1, len(ALPHAS) - 1)]
    if hi > lo:
        res = optimize.minimize_scalar(
            lambda a: float(_eps_at(np.asarray(rdp(np.array([a])), dtype=float), np.array([a]), delta)[0]),
            bounds=(lo, hi), method="bounded", options={"xatol": 1e-10 * hi})
        if res.success and np.isfinite(res.fun):
            best = min(best, float(res.fun))
    return max(best, 0.0)


def rdp_to_delta(rdp: RdpCurve, eps: np.ndarray, *, polish: bool = True) -> np.ndarray:
    """Certified delta at each ``eps`` from an RDP curve, in [DELTA_FLOOR, 1].

    The best order of the grid ``ALPHAS`` is found for all ``eps`` at once; with
    ``polish`` it is then refined per eps by a bounded scalar search (tighter,
    slower). Either way every value is a valid bound.
    """
    eps = np.asarray(eps, dtype=float)
    rv = np.asarray(rdp(ALPHAS), dtype=float)
    flat = eps.ravel()
    ld = _log_delta_at(rv[None, :], ALPHAS[None, :], flat[:, None])
    idx = np.argmin(ld, axis=1) if flat.size else np.zeros(0, dtype=int)
    out = np.empty(flat.shape)
    for k, e in enumerate(flat):
        i = int(idx[k])
        best = float(ld[k, i])
        if polish and np.isfinite(best):
            lo = ALPHAS[max(i - 1, 0)]
            hi = ALPHAS[min(i + 1, len(ALPHAS) - 1)]
            res = optimize.minimize_scalar(
                lambda a, e=float(e): float(_log_delta_at(np.asarray(rdp(np.array([a])), dtype=float),
                                                          np.array([a]), e)[0]),
                bounds=(lo, hi), method="bounded", options={"xatol": 1e-10 * hi})
            if res.success and np.isfinite(res.fun):
                best = min(best, float(res.fun))
        out[k] = _delta_from_log(best)
    return out.reshape(eps.shape)
