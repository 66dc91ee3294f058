"""The Chernoff profile: an upper bound on delta(eps) from the cumulants of the composed
discrete PLDs alone, with no FFT."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.pld.components import Component
from autoacct.pld.cumulants import (
    Components,
    Cumulant,
    as_components,
    best_value,
    composed_inf_mass,
    margin,
    rounded_exponent,
)

_EPS = MACHINE_EPSILON


@dataclass(frozen=True)
class ChernoffProfile:
    """A profile from moment generating functions alone, with no FFT.

    As an upper profile: for the composed upper PLDs S (finite part, cumulant K) and
    any theta > 0, delta(eps) <= E[(1 - e^{eps - S})_+] + p_inf
    <= c(theta) e^{K(theta) - theta eps} + p_inf, with
    c(theta) = max_{s > 0} (1 - e^{-s}) e^{-theta s} = (theta / (1 + theta))^theta / (1 + theta).
    As a lower profile it says nothing: delta >= 0 and eps >= 0.
    """

    k: Cumulant
    inf_mass: float
    upper: bool
    #: eps(delta) already found, by delta: the accountant asks each profile for the same delta
    #: several times (ordering and settling the directions, then the best bounds).
    _found: dict[float, float] = field(default_factory=dict, init=False, repr=False, compare=False)

    def _log_terms(self, i: np.ndarray) -> np.ndarray:
        """log c(theta) + K(theta), rounded up: theta log(theta / (1 + theta)) taken as
        -theta log1p(1 / theta) (within 3 roundoffs of itself, where the quotient's rounding
        would cost 2 theta of them), log1p(theta) within one, K's own rounding already in K."""
        theta, k = self.k.grid[i], self.k(i)
        a, b = -theta * np.log1p(1.0 / theta), np.log1p(theta)
        return k + a - b + margin(2.0 * _EPS * (np.abs(k) + 4.0 * np.abs(a) + 2.0 * b + 2.0))

    def delta(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        if not self.upper:
            return np.zeros(eps.shape)
        i = np.arange(self.k.zero + 1, self.k.grid.size)
        log_t = self._log_terms(i)
        theta = self.k.grid[i]
        # (theta eps overflows to inf at eps near 1e308: that term's exponent is then -inf; each
        # exponent is rounded up by its product's and difference's roundoffs)
        with np.errstate(over="ignore", invalid="ignore"):
            best = np.min(rounded_exponent(log_t[:, None], theta[:, None] * eps.ravel()[None, :]), axis=0)
            best = best.reshape(eps.shape)
        return np.minimum((np.exp(np.minimum(best, 0.0)) * (1.0 + 2.0 * _EPS) + self.inf_mass) * (1.0 + _EPS), 1.0)

    def floor(self, eps: np.ndarray) -> np.ndarray:
        """The part of delta(eps) that a finer grid cannot change: none is accounted here."""
        return np.zeros(np.shape(eps))

    def epsilon(self, delta: float) -> float:
        if not self.upper:
            return 0.0
        if delta <= self.inf_mass:
            return math.inf
        delta = float(delta)
        if delta not in self._found:
            # (rounded down: the difference, relatively delta / (delta - inf_mass), and the log)
            gap = delta - self.inf_mass
            log_d = math.log(gap) - 2.0 * _EPS * (abs(math.log(gap)) + 2.0 * delta / gap)

            def f(i: np.ndarray) -> np.ndarray:
                log_t, theta = self._log_terms(i), self.k.grid[i]
                out = (log_t - log_d) / theta
                return out + margin(_EPS * ((np.abs(log_t) + abs(log_d)) / theta + np.abs(out)))

            self._found[delta] = max(float(best_value(f, self.k.zero + 1, self.k.grid.size - 1)[1]), 0.0)
        return self._found[delta]


def chernoff_profiles(comps: Sequence[Component], h: float) -> tuple[ChernoffProfile, ChernoffProfile]:
    """(upper, lower) :class:`ChernoffProfile` of the composition of ``comps``."""
    # On the finer exponents of cumulants.CHERNOFF_THETAS too: any exponent gives a valid
    # bound, and these come close to the best one (a cached law's log-MGF rows are kept).
    k = Cumulant(as_components(comps), "upper", h, chernoff=True)
    # (rounded up: the profile reads it as the bound beyond the support, see composed_inf_mass)
    inf_mass = composed_inf_mass([(c.upper.p_inf, c.count) for c in comps], True)
    return ChernoffProfile(k, inf_mass, True), ChernoffProfile(k, inf_mass, False)


def silent_lower(comps: Sequence[Component]) -> ChernoffProfile:
    """The lower profile of :func:`chernoff_profiles`, made without its table: as a lower
    profile a Chernoff profile says nothing (delta >= 0 and eps >= 0) and reads neither its
    table nor its mass at +inf. A composition of the upper PLDs alone took it as its lower
    profile, and its table (the laws' moment generating functions at some 230 exponents)
    cost 0.22-0.25 ms of a 10 ms query on new lattices (benchmarks/sweep.py's cases 5 and 26)."""
    return ChernoffProfile(_NO_TABLE, composed_inf_mass([(c.upper.p_inf, c.count) for c in comps], True), False)


#: The table of :func:`silent_lower`'s profiles, which none reads.
_NO_TABLE = Cumulant(Components(), "upper", 1.0, values=np.zeros(1), grid=np.zeros(1))
