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
from typing import Any

import numpy as np

ProfileFn = Callable[[np.ndarray], np.ndarray]


#: Bisection levels evaluated by one call of a vectorised profile (2^4 - 1 = 15 points: the
#: cheapest per level for the subsampled Gaussian's profile, whose call costs about 3 ms + 0.08 ms
#: a point).
_LEVELS = 4


def epsilon_from_profile(delta_fn: Callable[[Any], Any], delta: float,
                         eps_hi: float = 1.0, *, upper: bool = True, vectorised: bool = False) -> float:
    """Invert a non-increasing profile: the smallest eps >= 0 with delta_fn(eps) <= delta.

    With ``upper`` the returned eps satisfies delta_fn(eps) <= delta (a safe
    upper bound when delta_fn is an upper profile); otherwise the returned eps
    is at most the root (a safe lower bound when delta_fn is a lower profile).

    The root is bracketed by doubling, then bisected to a relative width of 1e-13.
    With ``vectorised`` (delta_fn takes an array of eps and returns the array of
    values) the midpoints of the next _LEVELS bisection steps are computed as the
    bisection computes them and evaluated in one call, and the bisection then walks
    them: the same steps and the same answer, at a quarter of the calls.
    """
    def above(e: float) -> bool:
        return float(np.asarray(delta_fn(e))) > delta

    if not above(0.0):
        return 0.0
    # Invariant: delta_fn(lo) > delta >= delta_fn(hi).
    lo, hi = 0.0, max(eps_hi, 1e-12)
    while above(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:
            return np.inf
    steps, levels = 0, _LEVELS if vectorised else 1
    while steps < 400 and hi - lo > 1e-13 * max(hi, 1.0):
        if vectorised:
            tree = _midpoints(lo, hi, levels)
            is_above = np.asarray(delta_fn(tree), dtype=float) > delta
        node = 0  # the heap index of the bracket [lo, hi] in the tree
        for _ in range(levels):
            mid = 0.5 * (lo + hi)  # = tree[node]: computed alike
            if bool(is_above[node]) if vectorised else above(mid):
                lo, node = mid, 2 * node + 2
            else:
                hi, node = mid, 2 * node + 1
            steps += 1
            if steps >= 400 or hi - lo <= 1e-13 * max(hi, 1.0):
                break
    return hi if upper else lo


def _midpoints(lo: float, hi: float, levels: int) -> np.ndarray:
    """The midpoints 0.5 (a + b) of every bracket [a, b] the next ``levels`` bisection steps
    of [lo, hi] can reach, in heap order (node i's brackets split into nodes 2i+1, 2i+2)."""
    brackets = [(lo, hi)]
    out: list[float] = []
    for _ in range(levels):
        mids = [0.5 * (a + b) for a, b in brackets]
        out.extend(mids)
        brackets = [half for (a, b), m in zip(brackets, mids, strict=True) for half in ((a, m), (m, b))]
    return np.array(out)


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
