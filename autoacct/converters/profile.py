"""Privacy profile <-> epsilon(delta) <-> tradeoff function (f-DP duality, Dong, Roth and Su 2022).

A mechanism that is (eps, delta(eps))-DP for every eps (delta(eps) an upper
bound, taken over both orders of a neighbouring pair) is f-DP with

    f(alpha) = sup_eps max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha))

(Dong, Roth, Su 2021, Proposition 2.12 and its primal-dual form). Any finite
set of eps values gives a valid lower bound on the tradeoff function; a denser
set gives a tighter one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

ProfileFn = Callable[[np.ndarray], np.ndarray]


def epsilon_from_profile(delta_fn: Callable[[float], float], delta: float,
                         eps_hi: float = 1.0, *, upper: bool = True) -> float:
    """Invert a non-increasing profile: the smallest eps >= 0 with delta_fn(eps) <= delta.

    With ``upper`` the returned eps satisfies delta_fn(eps) <= delta (a safe
    upper bound when delta_fn is an upper profile); otherwise the returned eps
    is at most the root (a safe lower bound when delta_fn is a lower profile).
    """
    if delta_fn(0.0) <= delta:
        return 0.0
    # Invariant: delta_fn(lo) > delta >= delta_fn(hi).
    lo, hi = 0.0, max(eps_hi, 1e-12)
    while delta_fn(hi) > delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:
            return np.inf
    for _ in range(400):
        mid = 0.5 * (lo + hi)
        if delta_fn(mid) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-13 * max(hi, 1.0):
            break
    return hi if upper else lo


def tradeoff_from_profile(delta_fn: ProfileFn, alpha: np.ndarray, eps_grid: np.ndarray) -> np.ndarray:
    """Lower bound on the tradeoff function from an upper privacy profile sampled on ``eps_grid``.

    ``eps_grid`` should include eps >= 0 (the formula's second branch covers
    the mirrored half for symmetric guarantees).
    """
    alpha = np.asarray(alpha, dtype=float)
    eps_grid = np.asarray(eps_grid, dtype=float)
    d = np.asarray(delta_fn(eps_grid), dtype=float)
    a = alpha[..., None]
    # e^eps * alpha as exp(eps + log alpha): e^eps overflows for eps > 709, and inf * 0 at
    # alpha = 0 would be NaN; this form gives 0 there and +inf (a term never chosen) elsewhere.
    with np.errstate(over="ignore", divide="ignore"):
        first = 1.0 - d - np.exp(eps_grid + np.log(a))
        second = np.exp(-eps_grid) * (1.0 - d - a)
    best = np.maximum(first, second).max(axis=-1)
    return np.clip(best, 0.0, 1.0)
