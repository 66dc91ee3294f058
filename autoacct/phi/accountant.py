"""The characteristic-function accountant: both directions, the eps search, the tradeoff.

Two more valid bounds are folded in: delta(eps) <= p_inf + P(L > eps) <=
p_inf + e^{K(lambda) - lambda eps} (Chernoff), and, delta being non-increasing,
the bound at any smaller eps of the same query.

Soundness. Every step above is a proven bound except the floating-point
rounding term, which is a conservative a-priori estimate (componentwise error
bounds for the sums and the FFT, propagated through the powers), not a proof;
the law implementations' own cell masses are trusted.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize

from autoacct.converters.profile import tradeoff_from_profile
from autoacct.errors import BudgetExceeded
from autoacct.losses import PrivacyLoss
from autoacct.phi.inversion import Direction, warn_budget

#: Default relative accuracy (on the epsilon scale), as for the PLD accountant.
DEFAULT_TOL = 1e-3


class PhiAccountant:
    """Characteristic-function accountant for a list of (forward law, backward law, count) parts.

    ``delta`` and ``epsilon`` return certified upper bounds (up to the
    floating-point estimate described in the module docstring); delta of the
    mechanism is the larger of the two directions.
    """

    def __init__(self, parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]]) -> None:
        parts = [(f, b, int(k)) for f, b, k in parts]
        if not parts:
            raise ValueError("parts must not be empty")
        for i, (_, _, k) in enumerate(parts):
            if k < 1:
                raise ValueError(f"parts[{i}] count must be a positive integer, got {k}")
        symmetric = all(f.key == b.key for f, b, _ in parts)
        self._directions = [Direction([(f, k) for f, _, k in parts])]
        if not symmetric:
            self._directions.append(Direction([(b, k) for _, b, k in parts]))

    def _rough_epsilon(self, delta: float) -> float:
        best = 0.0
        for d in self._directions:
            sd = math.sqrt(max(d.var, 0.0))
            best = max(best, d.mean + sd * math.sqrt(2.0 * math.log(1.0 / delta)))
        return best

    def _eps_cap(self, delta: float, tol: float) -> float:
        """An eps whose delta is certified <= ``delta`` by Chernoff bounds (inf if none)."""
        ref = self._rough_epsilon(delta)
        return max(d.chernoff_epsilon(delta, d.budget(ref, tol)) for d in self._directions)

    def delta(self, eps: np.ndarray, tol: float = DEFAULT_TOL) -> np.ndarray:
        """Upper bound on delta(eps) for an array of eps >= 0 (the larger of the directions)."""
        eps = np.asarray(eps, dtype=float)
        if eps.size == 0:
            return np.zeros(eps.shape)
        ref = max(float(np.median(eps)), 0.0)
        out = np.zeros(eps.size)
        for d in self._directions:
            out = np.maximum(out, d.delta(eps.ravel(), d.budget(ref, tol), tol))
        # delta is non-increasing in eps: the bound at a smaller eps holds at a larger one.
        order = np.argsort(eps.ravel(), kind="stable")
        out[order] = np.minimum.accumulate(out[order])
        return out.reshape(eps.shape)

    def epsilon(self, delta: float, tol: float = DEFAULT_TOL) -> float:
        """Upper bound on eps(delta): an eps >= 0 whose certified delta(eps) is <= delta.

        The search runs on [0, cap] with cap from Chernoff bounds (itself a valid
        answer), damping every direction at the saddle point of a first guess
        and then of the first answer; the returned eps is the smallest point
        found, to relative precision 1e-10, at which the certified profile is
        <= delta.
        """
        exact = [e for e in (d.enumerated for d in self._directions) if e is not None]
        if len(exact) == len(self._directions):
            if max(float(e.delta(np.array(e.top))) for e in exact) > delta:
                return np.inf
            return self._solve(lambda x: max(float(e.delta(np.array(x))) for e in exact), delta,
                               max(max(e.top, 0.0) for e in exact))
        cap = self._eps_cap(delta, tol)
        if not np.isfinite(cap):
            return np.inf
        guess = min(self._rough_epsilon(delta), cap)
        best = cap
        for _ in range(2):
            spectra = []
            try:
                for d in self._directions:
                    budget = d.budget(guess, tol)
                    alpha = float(d.alphas(budget, np.array([guess]))[0])
                    spectra.append((d, d.spectrum(alpha, 0.0, cap, budget, tol)))
            except BudgetExceeded as exc:
                # The best eps so far (at first the Chernoff cap) is a valid answer.
                warn_budget(exc)
                break

            found = self._solve(functools.partial(_max_delta, spectra), delta, cap)
            best = min(best, found)
            if found == 0.0 or found >= cap:
                break
            guess = found
        return best

    @staticmethod
    def _solve(dfun: Callable[[float], float], delta: float, cap: float) -> float:
        """Smallest verified eps in [0, cap] with dfun(eps) <= delta (cap if none is found)."""
        if dfun(0.0) <= delta:
            return 0.0
        if dfun(cap) > delta:
            return cap
        root = optimize.brentq(lambda e: dfun(e) - delta, 0.0, cap, xtol=1e-13, rtol=1e-11)
        step = 1e-11 * max(root, 1e-6)
        e = root
        for _ in range(60):
            if e >= cap:
                return cap
            if dfun(e) <= delta:
                return float(e)
            e += step
            step *= 2.0
        return cap

    def tradeoff(self, alpha: np.ndarray, tol: float = DEFAULT_TOL) -> np.ndarray:
        """Lower bound on the tradeoff function, by duality from the upper profile."""
        alpha = np.asarray(alpha, dtype=float)
        cap = self._eps_cap(1e-12, tol)
        if not np.isfinite(cap):
            cap = self._rough_epsilon(1e-12) + 1.0
        grid = np.concatenate(([0.0], np.geomspace(1e-3, max(cap, 1e-2), 240)))
        d = self.delta(grid, tol)
        return tradeoff_from_profile(lambda _: d, alpha, grid)


def _max_delta(spectra: list[tuple[Direction, Any]], e: float) -> float:
    """The largest of the directions' certified deltas at e, each from its damped spectrum."""
    return max(float(d.delta_upper(sp, np.array([e]))[0]) for d, sp in spectra)


def phi_delta(parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]], eps: ArrayLike, tol: float = DEFAULT_TOL
              ) -> np.ndarray:
    """Upper bound on delta(eps) of the composition ``parts`` (max over both directions)."""
    return PhiAccountant(parts).delta(np.asarray(eps, dtype=float), tol)


def phi_epsilon(parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]], delta: float,
                tol: float = DEFAULT_TOL) -> float:
    """Upper bound on eps(delta) of the composition ``parts``."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    return PhiAccountant(parts).epsilon(float(delta), tol)


def phi_tradeoff(parts: Sequence[tuple[PrivacyLoss, PrivacyLoss, int]], alpha: ArrayLike,
                 tol: float = DEFAULT_TOL) -> np.ndarray:
    """Lower bound on the tradeoff function of the composition ``parts`` at type I errors ``alpha``."""
    return PhiAccountant(parts).tradeoff(np.asarray(alpha, dtype=float), tol)

