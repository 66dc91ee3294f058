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

The grid is searched in tiers: its integer orders from 2 to 64 first, then its
fractional orders below 2 only where order 2 is the best of those, and its orders
above 64 only where 64 is. The bound is a quasi-convex function of the order for
the curves met here (it falls while the 1/(alpha - 1) term dominates, then rises
with the curve), so an optimum inside the first tier has no better order outside
it, and the answer is the full grid's. Skipping them matters for the expansions
(a subsampled Gaussian's orders near 1 take about 25 ms each, its orders up to 64
0.3 ms, its orders up to 10^4 1 ms), and most for a composition of many distinct
mechanisms, which pays that per part. Either way every value is the bound at an
order, so valid.

The polish is optional refinement: where the curve stops at the query's wall-clock
deadline (:func:`autoacct.limits.check_deadline`, checked between the parts of a
composition), the polish stops and keeps the best order found.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from scipy import optimize

from autoacct.errors import BudgetExceeded
from autoacct.exactness import MACHINE_EPSILON

RdpCurve = Callable[[np.ndarray], np.ndarray]

#: Orders searched: a few fractional orders near 1 (where large deltas want them), then
#: integers (cheap for every closed form) up to 64 and geometrically spaced integers up
#: to 10^4. The best order is then polished over the real line around it.
ALPHAS = np.unique(np.concatenate((1.0 + np.logspace(-4, -0.05, 12), np.arange(2.0, 65.0),
                                   np.round(np.logspace(np.log10(70.0), 4.0, 24)))))

#: The tiers of the search (see the module docstring): the grid's integer orders up to 64
#: first, then its fractional orders below 2 and its orders above 64 where the best of the
#: first tier lies at its lower or its upper end.
_MIDDLE = ALPHAS[(ALPHAS >= 2.0) & (ALPHAS <= 64.0)]
_NEAR_ONE = ALPHAS[ALPHAS < 2.0]
_LARGE = ALPHAS[ALPHAS > 64.0]

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
    # Rounded up as _eps_at is, by _EPS_ROUNDING of the terms' sizes (the products of
    # alpha - 1 with the curve, eps and log(1 - 1/alpha), and log alpha), plus one unit for
    # the exponential that :func:`_delta_from_log` takes of it (a relative error r in exp is an
    # absolute r in the log). Where the conversion is nearly tight the roundings alone put
    # delta below the truth: 200 runs of randomized response with log-odds 20 at
    # eps = 4000 - log 2 gave 0.4999997938846762, where the exact profile
    # p^200 (1 - e^{eps - 4000}), p = 1/(1 + e^-20), is 0.49999979388476665; the curve there is
    # a sum of 200 parts near 4000, each term a few ulps of 4000 off.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log1p_term = np.log1p(-1.0 / alpha)
        val = (alpha - 1.0) * (rdp_vals - eps + log1p_term) - np.log(alpha)
        size = (alpha - 1.0) * (np.abs(rdp_vals) + np.abs(eps) + np.abs(log1p_term)) + np.abs(np.log(alpha)) + 1.0
        # An infinite eps or curve leaves val infinite (delta 0 or 1); the margin is for the finite.
        val = np.where(np.isfinite(val), val + _EPS_ROUNDING * size, val)
    return np.where(np.isnan(val), np.inf, val)


def _log_delta_one(rdp: RdpCurve, eps: float, alpha: float) -> float:
    """The conversion's log delta at ``eps`` from the curve's value at the one order ``alpha``."""
    a = np.array([alpha])
    return float(_log_delta_at(np.asarray(rdp(a), dtype=float), a, eps)[0])


def _delta_from_log(log_delta: float) -> float:
    """exp(log_delta) into [DELTA_FLOOR, 1] (the exponential's rounding is in the margin
    :func:`_log_delta_at` adds): 1 when no order is finite or the bound exceeds 1, and at
    least DELTA_FLOOR where the exponential would underflow (an upper bound must not round a
    positive delta down to 0)."""
    if np.isnan(log_delta) or log_delta >= 0.0:
        return 1.0
    return max(float(np.exp(log_delta)), DELTA_FLOOR)


def _grid(rdp: RdpCurve, score: Callable[[np.ndarray, np.ndarray], np.ndarray]
          ) -> tuple[np.ndarray, np.ndarray]:
    """(orders, scores) of the tiered grid search: ``score(rdp values, orders)`` has the
    orders on its last axis and is minimised. The orders below 2 (above 64) are added where
    some row's best integer order up to 64 is 2 (64); the module docstring says why that
    suffices."""
    def part(orders: np.ndarray) -> np.ndarray:
        return score(np.asarray(rdp(orders), dtype=float), orders)

    vals = part(_MIDDLE)
    best = np.argmin(vals, axis=-1) if vals.size else np.zeros(1, dtype=int)
    orders = [_MIDDLE]
    if np.any(best == 0):
        orders.insert(0, _NEAR_ONE)
        vals = np.concatenate((part(_NEAR_ONE), vals), axis=-1)
    if np.any(best == _MIDDLE.size - 1):
        orders.append(_LARGE)
        vals = np.concatenate((vals, part(_LARGE)), axis=-1)
    return np.concatenate(orders), vals


class _Polish:
    """The objective of a polish at one order, remembering the best value seen; it stops the
    search (raises :class:`_Stop`) where the curve stops at the query's deadline (a
    composition's curve checks it between its parts)."""

    def __init__(self, fun: Callable[[float], float], best: float) -> None:
        self.fun, self.best = fun, best

    def __call__(self, a: float) -> float:
        try:
            val = self.fun(a)
        except BudgetExceeded:
            # A curve summed over many parts checks the deadline between them.
            raise _Stop from None
        self.best = min(self.best, val) if np.isfinite(val) else self.best
        return val

    def run(self, orders: np.ndarray, i: int) -> float:
        """Polish between the grid's neighbours of order ``orders[i]``; the best value seen."""
        lo, hi = orders[max(i - 1, 0)], orders[min(i + 1, len(orders) - 1)]
        if hi > lo:
            try:
                optimize.minimize_scalar(self, bounds=(lo, hi), method="bounded",
                                         options={"xatol": 1e-10 * hi})
            except _Stop:
                pass
        return self.best


class _Stop(Exception):
    """The polish ran past the query's deadline."""


def rdp_to_epsilon(rdp: RdpCurve, delta: float) -> float:
    """Smallest certified eps at ``delta`` from an RDP curve (0 <= eps, inf if no order is finite)."""
    orders, vals = _grid(rdp, lambda v, a: _eps_at(v, a, delta))
    i = int(np.argmin(vals))
    best = float(vals[i])
    if not np.isfinite(best):
        return np.inf
    polish = _Polish(lambda a: float(_eps_at(np.asarray(rdp(np.array([a])), dtype=float), np.array([a]), delta)[0]),
                     best)
    return max(polish.run(orders, i), 0.0)


def rdp_to_delta(rdp: RdpCurve, eps: np.ndarray, *, polish: bool = True) -> np.ndarray:
    """Certified delta at each ``eps`` from an RDP curve, in [DELTA_FLOOR, 1].

    The best order of the grid ``ALPHAS`` is found for all ``eps`` at once; with
    ``polish`` it is then refined per eps by a bounded scalar search (tighter,
    slower). Either way every value is a valid bound.
    """
    eps = np.asarray(eps, dtype=float)
    flat = eps.ravel()
    orders, ld = _grid(rdp, lambda v, a: _log_delta_at(v[None, :], a[None, :], flat[:, None]))
    idx = np.argmin(ld, axis=1) if flat.size else np.zeros(0, dtype=int)
    out = np.empty(flat.shape)
    for k, e in enumerate(flat):
        i = int(idx[k])
        best = float(ld[k, i])
        if polish and np.isfinite(best):
            best = _Polish(functools.partial(_log_delta_one, rdp, float(e)), best).run(orders, i)
        out[k] = _delta_from_log(best)
    return out.reshape(eps.shape)
