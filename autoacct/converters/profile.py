"""Privacy profile <-> epsilon(delta) <-> tradeoff function (f-DP duality, Dong, Roth and Su 2022).

A mechanism that is (eps, delta(eps))-DP for every eps (delta(eps) an upper
bound, taken over both orders of a neighbouring pair) is f-DP with

    f(alpha) = sup_eps max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha))

(Dong, Roth, Su 2021, Proposition 2.12 and its primal-dual form). Any finite
set of eps values gives a valid lower bound on the tradeoff function; a denser
set gives a tighter one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

ProfileFn = Callable[[np.ndarray], np.ndarray]


#: Bisection levels evaluated by one call of a vectorised profile where the walk needs a value
#: it cannot infer (2^4 - 1 = 15 points): the subsampled Gaussian's profile costs about
#: 3 ms a call + 0.08 ms a point, so a call's points come nearly free.
_LEVELS = 4
#: Doublings of the first bracket evaluated by one call of a vectorised profile.
_DOUBLINGS = 4
#: Points on either side of the interpolated root per call: at these fractions of the bracket.
_NEAR = 10.0 ** -np.arange(1.0, 8.0)
#: Calls spent narrowing the bracket around the root before the bisection is walked.
_NARROWING_CALLS = 6
#: Relative width at which a bisection stops.
_WIDTH = 1e-13
#: Relative distances above a floor (see epsilon_from_profile) asked by the first call.
_ABOVE_FLOOR = np.array([0.0, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-4, 1e-2])


def epsilon_from_profile(delta_fn: Callable[[Any], Any], delta: float,
                         eps_hi: float = 1.0, *, upper: bool = True, vectorised: bool = False,
                         floor: float = 0.0) -> float:
    """Invert a non-increasing profile: the smallest eps >= 0 with delta_fn(eps) <= delta.

    With ``upper`` the returned eps satisfies delta_fn(eps) <= delta (a safe
    upper bound when delta_fn is an upper profile); otherwise the returned eps
    is at most the root (a safe lower bound when delta_fn is a lower profile).

    The root is bracketed by doubling, then bisected to a relative width of 1e-13.
    With ``vectorised`` (delta_fn takes an array of eps and returns the array of
    values) the same doublings and bisection steps are taken in a few calls: the
    doublings in batches, then points placed around the root's interpolation in
    log delta (a secant step, about squaring the bracket's relative width per call)
    give eps values a < b with delta_fn(a) > delta >= delta_fn(b); the bisection
    then takes each midpoint at or below a as above the target and each at or
    above b as not, as the profile's monotonicity says, and evaluates only those in
    between (the next _LEVELS levels of midpoints in one call). Where delta_fn is
    monotone in floating point this is the scalar bisection's very answer (a
    subsampled Gaussian step's eps in 10-12 calls instead of 26-36). Where its
    rounding is not, each decision still rests on a value it took at a point on the
    safe side: the upper answer is at least a point where delta_fn <= delta, and
    the lower one at most a point where delta_fn > delta, which for upper and
    lower profiles of a non-increasing true profile is as safe.

    ``floor`` (vectorised only): an eps thought to lie at or below the root, such as the
    lower end found from a lower profile when an upper one is inverted. The first call then
    asks points just above it, at relative distances 1e-12 to 1e-2 and then its doublings,
    which bracket the root of an upper profile that its rounding keeps close to the lower one
    (one step of a subsampled Gaussian: 2 calls instead of 6-13). Where delta_fn is not above
    the target at ``floor`` the search goes on below it, so the answer does not depend on
    the floor being right.
    """
    if vectorised:
        return _vectorised(delta_fn, delta, eps_hi, upper, floor)

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
    steps = 0
    while steps < 400 and hi - lo > _WIDTH * max(hi, 1.0):
        mid = 0.5 * (lo + hi)
        if above(mid):
            lo = mid
        else:
            hi = mid
        steps += 1
    return hi if upper else lo


class _Known:
    """The largest eps a known above the target and the smallest b known at or below it, with
    the profile's values there, from every value the profile took."""

    def __init__(self, delta: float) -> None:
        self.delta = delta
        self.a, self.fa = -math.inf, math.inf
        self.b, self.fb = math.inf, 0.0

    def add(self, eps: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Record the profile's values at ``eps``; returns which are above the target."""
        is_above = values > self.delta
        if is_above.any():
            i = int(np.argmax(np.where(is_above, eps, -math.inf)))
            if eps[i] > self.a:
                self.a, self.fa = float(eps[i]), float(values[i])
        if not is_above.all():
            i = int(np.argmin(np.where(is_above, math.inf, eps)))
            if eps[i] < self.b:
                self.b, self.fb = float(eps[i]), float(values[i])
        return is_above

    def decided(self, eps: float) -> bool | None:
        """Whether eps is above the target as far as monotonicity tells (None: not known)."""
        return True if eps <= self.a else False if eps >= self.b else None

    def guess(self) -> float:
        """The root of the line through (a, log fa) and (b, log fb); the midpoint where a value
        is 0 or not finite."""
        a, b, fa, fb = self.a, self.b, self.fa, self.fb
        if 0.0 < fb < self.delta < fa < math.inf and math.isfinite(a) and math.isfinite(b):
            t = math.log(fa / self.delta) / math.log(fa / fb)
            return a + (b - a) * min(max(t, 0.0), 1.0)
        return 0.5 * (a + b)


def _vectorised(delta_fn: Callable[[Any], Any], delta: float, eps_hi: float, upper: bool,
                floor: float = 0.0) -> float:
    """:func:`epsilon_from_profile` for a vectorised profile."""
    known = _Known(delta)

    def ask(eps: np.ndarray) -> np.ndarray:
        return known.add(eps, np.asarray(delta_fn(eps), dtype=float).reshape(eps.shape))

    # Doubling: 0, then h0 2^j until a value is at or below the target (inf past 1e6); with a
    # floor, 0 and then points just above the floor (see epsilon_from_profile).
    h0 = max(eps_hi, 1e-12)
    lo, hi = 0.0, h0
    first = np.concatenate(([0.0], h0 * 2.0 ** np.arange(_DOUBLINGS)))
    if 0.0 < floor <= 1e6:
        first = np.concatenate(([0.0], floor * (1.0 + _ABOVE_FLOOR), floor * 2.0 ** np.arange(1, _DOUBLINGS + 1)))
        h0 = floor
    batch = first[first <= max(h0, 1e6)]
    while True:
        is_above = ask(batch)
        if batch[0] == 0.0:
            if not is_above[0]:
                return 0.0
            batch, is_above = batch[1:], is_above[1:]
        stop = int(np.argmin(is_above)) if not is_above.all() else None
        if stop is not None:
            hi = float(batch[stop])
            lo = float(batch[stop - 1]) if stop else lo
            break
        lo = float(batch[-1])
        if 2.0 * lo > 1e6:
            return np.inf
        batch = lo * 2.0 ** np.arange(1, _DOUBLINGS + 1)
        batch = batch[batch <= 1e6]
    # Narrow [a, b] around the root: points about the interpolated root at shrinking
    # fractions of the bracket, and its quarters, which shrink it 4 times at the least.
    for _ in range(_NARROWING_CALLS):
        a, b = known.a, known.b
        if b - a <= 0.25 * _WIDTH * max(b, 1.0):
            break
        g = known.guess()
        w = b - a
        pts = np.concatenate(([g], g - w * _NEAR, g + w * _NEAR, a + w * np.array([0.25, 0.5, 0.75])))
        pts = np.unique(pts[(pts > a) & (pts < b)])
        if pts.size == 0:
            break
        ask(pts)
    # The bisection of [lo, hi], each decision inferred where monotonicity gives it.
    steps = 0
    while steps < 400 and hi - lo > _WIDTH * max(hi, 1.0):
        tree = None
        for _ in range(_LEVELS):
            mid = 0.5 * (lo + hi)
            decided = known.decided(mid)
            if decided is None:
                if tree is None:
                    tree = _midpoints(lo, hi, _LEVELS)
                    ask(tree)
                decided = known.decided(mid)
                assert decided is not None  # mid was among the tree's points
            if decided:
                lo = mid
            else:
                hi = mid
            steps += 1
            if steps >= 400 or hi - lo <= _WIDTH * max(hi, 1.0):
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
