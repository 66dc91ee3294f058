"""delta(eps) asked the other way round: through eps(delta) queries aimed at each eps, where a
rarely sampled law's tail decides delta; and the eps at which delta is negligible.

The FFT accountant's delta(eps) loop composes profiles tilted towards eps, with tails cut at
a fixed mass and without splitting any law into bulk and tail (a split is sized by the delta
asked, which a delta query does not have). Where one large loss of a rarely sampled step
decides delta, that loop's window must cover the law's whole range on a lattice fine enough
for the bulk: at q = 9.0e-5, sigma = 0.90, k = 31,782 (DP-SGD, add/remove) it asked for
1.1e7 points, was capped at 2^22 and answered delta(0.4) in [0, 6.9e-13] after 1.2 s, while
the eps(delta) query, whose split law composes the bulk and the tail's few copies apart
(:mod:`jumps`, :mod:`terms`), answered eps(1e-13) in [0.408664, 0.408673] in 0.04 s.

:class:`DeltaThroughEpsilon` is a mixin of :class:`~autoacct.pld.accountant.FFTAccountant`:
for each eps asked (up to 16 spread over a curve, then up to 16 that their profiles leave
short) at which a direction's law splits, it asks eps(d) at an estimate d of delta(eps),
then where needed again at the upper bound on delta(eps) that the profiles made give, and
reads delta(eps) off every profile made (each is certified, whatever it was aimed at). An
eps(d) bracket [a, eps] with a >= eps (1 - tol) is a delta bracket within tol on the eps
scale, the delta loop's own target: the upper profile at eps is at most d, and the lower one
at eps (1 - tol) at least d.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Protocol

import numpy as np
from scipy.special import log_ndtr

from autoacct.errors import AccuracyWarning, BudgetExceeded
from autoacct.limits import share_left
from autoacct.losses import SIZING_TILTS, PrivacyLoss
from autoacct.pld import jumps
from autoacct.pld.query import PldQuery, log_eta_for

if TYPE_CHECKING:
    from autoacct.pld.made import Composed
    from autoacct.pld.profiles import DiscreteProfile

#: Most eps of a delta query asked in one sweep (see :meth:`DeltaThroughEpsilon._through_epsilon`):
#: each costs one to _ROUNDS eps(delta) queries.
THROUGH_POINTS = 16
#: Most eps(delta) queries asked per eps: the first aims at :meth:`DeltaThroughEpsilon._aim`,
#: each later one at the upper bound on delta(eps) the profiles made give.
_ROUNDS = 3
#: Share of the time budget left that those queries may take. The eps(delta) query is not
#: always the cheaper: at q = 2.0e-5, sigma = 1.03, k = 289, eps = 0.0251 (delta about 2e-15),
#: it stopped at the default budget while the delta loop answered in 1.9 predicted seconds.
_SHARE = 0.5


class _Host(Protocol):
    """What :class:`DeltaThroughEpsilon` reads of the accountant it is mixed into."""

    _directions: list[list[tuple[PrivacyLoss, int]]]

    def eps_scale(self, delta: float) -> float: ...

    def spacing(self, eps_scale: float, tol: float, directions: list[int] | None = None) -> float: ...

    def _tail_side(self, d: int, log_eta: float) -> jumps.TailSide | None: ...

    def _split_pays(self, d: int, side: jumps.TailSide | None, h: float, log_eta: float,
                    normal_scale: float) -> bool: ...

    def _jump_scale(self, delta: float, log_eta: float) -> float: ...

    def _epsilon(self, delta: float, eps_scale: float, tol: float) -> tuple[float, float]: ...

    def _best_delta(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def _aim(self, eps: float) -> float: ...

    def _negligible(self, eps: np.ndarray, log_eta: float) -> np.ndarray: ...

    def profiles(self, h: float, log_eta: float, query: PldQuery = ...) -> list[tuple[DiscreteProfile, Composed]]: ...

    def _chernoff(self, d: int, h: float, log_eta: float) -> None: ...

    def _splits_at(self, delta: float, tol: float) -> bool: ...

    def _delta_met(self, eps: np.ndarray, tol: float, floor: float) -> np.ndarray: ...

    def _asked_at(self, eps: float, aim: float, tol: float, least: float, floor: float) -> None: ...


class DeltaThroughEpsilon:
    """The accountant's delta(eps) through eps(delta) queries (see the module docstring)."""

    def _through_epsilon(self: _Host, eps: np.ndarray, tol: float, log_eta: float
                         ) -> tuple[np.ndarray, np.ndarray] | None:
        """(lower, upper) delta(eps) from the profiles that eps(delta) queries aimed at the eps
        make, where all of ``eps`` is positive and a direction's law splits at each eps asked
        (but those whose delta, by :meth:`_aim`, is below e^log_eta); None elsewhere, or where
        a point is left wider than tol on the eps scale and than the delta loop's floor
        1e3 e^log_eta (that loop then goes on, reading these profiles too). The eps(delta)
        queries run under a share _SHARE of the time budget left, and where they pass it the
        delta loop goes on with the rest.

        An array of more than THROUGH_POINTS distinct eps is asked at THROUGH_POINTS of them
        spread over it, then at up to THROUGH_POINTS of the others that those profiles leave
        short: a profile aimed at one eps bounds its neighbours within tol too (at q = 9.0e-5,
        sigma = 0.90, k = 31,782 one eps(1e-12) query, aimed at eps 0.31, bounded delta at 0.2,
        0.4 and 0.62 within tol), and each query may cost as much as the delta loop's whole curve.

        No aim below e^log_eta, the tail mass the delta loop's windows leave out, is taken: the
        floor meets such a delta (from the other points' profiles, or else the loop's), and an
        eps(delta) query there can be slow and wide (at delta = 1e-22, 1.2 to 2.5 s and wider
        than tol in three of five DP-SGD cases whose queries at 1e-18 took 0.01-0.08 s)."""
        least, floor = math.exp(log_eta), 1e3 * math.exp(log_eta)
        # (eps(delta) is 0 for every delta from delta(0) on: it aims nothing at eps = 0)
        if eps.size == 0 or not np.all(eps > 0.0):
            return None
        points = np.unique(eps)
        spread = np.linspace(0, points.size - 1, min(points.size, THROUGH_POINTS)).round().astype(int)
        anchors = points[np.unique(spread)]
        aims = np.array([self._aim(float(e)) for e in anchors])
        taken = (least <= aims) & (aims < 1.0)
        if not np.any(taken) or not all(d < least or (t and self._splits_at(d, tol)) for d, t in zip(aims, taken)):
            return None
        try:
            with share_left(_SHARE):
                for e, d in zip(anchors[taken], aims[taken]):
                    self._asked_at(float(e), float(d), tol, least, floor)
                if anchors.size < points.size:
                    for e in points[~self._delta_met(points, tol, floor)][:THROUGH_POINTS]:
                        self._asked_at(float(e), float(self._best_delta(np.array([e]))[1][0]), tol, least, floor)
        except BudgetExceeded:
            return None
        if not np.all(self._delta_met(eps, tol, floor)):
            return None
        return self._best_delta(eps)

    def _asked_at(self: _Host, eps: float, aim: float, tol: float, least: float, floor: float) -> None:
        """eps(d) queries for delta(eps): at d = ``aim``, then at the upper bound on delta(eps)
        the profiles made give, at most _ROUNDS of them, until :meth:`_delta_met` holds at eps
        or d leaves [least, 1)."""
        at = np.array([eps])
        d = aim
        for _ in range(_ROUNDS):
            if self._delta_met(at, tol, floor)[0] or not least <= d < 1.0:
                return
            # (its own warnings say nothing of delta's bracket, which is judged here)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", AccuracyWarning)
                self._epsilon(d, self.eps_scale(d), tol)
            d = float(self._best_delta(at)[1][0])

    def _delta_met(self: _Host, eps: np.ndarray, tol: float, floor: float) -> np.ndarray:
        """Where the profiles made bound delta(eps) within tol on the eps scale (the upper bound
        at eps at most the lower one at eps (1 - tol)), within tol relatively, or within
        ``floor``."""
        lower, upper = self._best_delta(eps)
        shrunk = self._best_delta(eps * (1.0 - tol))[0]
        return (upper <= shrunk) | (upper - lower <= np.maximum(tol * upper, floor))

    def _beyond_floor(self: _Host, eps: np.ndarray, within: np.ndarray, h: float, log_eta: float) -> None:
        """Make the profiles that give relative accuracy at the eps an untilted delta curve on
        spacing h leaves loose (``within`` False: met only by its absolute floor, its FFT's
        rounding). Where delta is negligible (:meth:`_negligible`), the directions' Chernoff
        profiles from their laws on that lattice (no FFT); elsewhere one composition tilted
        towards the first such eps. A tilt towards a far eps has a long window: at q = 0.01,
        sigma = 1, k = 1000, delta at eps 0.4 and 50 took 0.3-0.5 s and warned of a grid capped
        at 2^22 points, composed for eps = 50, where delta is below 1e-170."""
        negligible = self._negligible(eps, log_eta)
        loose = ~within & ~negligible
        if np.any(loose):
            self.profiles(h, log_eta, PldQuery(float(np.min(eps[loose]))))
        if np.any(~within & negligible):
            for d in range(len(self._directions)):
                self._chernoff(d, h, log_eta)

    def _negligible(self: _Host, eps: np.ndarray, log_eta: float) -> np.ndarray:
        """Where the Chernoff bound on P(L > eps) from the laws' cumulants tabulated at
        SIZING_TILTS (an upper bound on delta(eps), the largest over the directions) lies below
        e^log_eta, the tail mass the delta loop's windows leave out (a sizing estimate: it
        decides which profiles to make, never a bound)."""
        flat = np.ravel(eps)
        out = np.max([log_chernoff(parts, flat) for parts in self._directions], axis=0)
        return np.reshape(out < log_eta, np.shape(eps))

    def _aim(self: _Host, eps: float) -> float:
        """A rough delta(eps), which aims the first eps(delta) query (it sizes nothing): the larger
        of two estimates, each a direction's largest, capped by a Chernoff bound.

        * One large loss: k delta_1(eps) summed over the direction's (law, k) parts, with
          delta_1 a step's own profile. Where a rarely sampled law's tail decides delta it was
          within 0.1 to 1.4 times delta(eps) in the random DP-SGD cases measured, and down to
          2e-8 times it where the bulk does.
        * The bulk: the profile of a normal loss with the composed mean m and variance v,
          Phi((m - eps) / sqrt(v)) - e^{eps - m + v / 2} Phi((m - eps - v) / sqrt(v)).
        * The cap: the Chernoff bound on P(L > eps) from the laws' cumulants tabulated at
          SIZING_TILTS (delta(eps) = E[(1 - e^{eps - L})_+] is below it), which alone
          overstated delta by 1e2 to 1e13 times.
        """
        at = np.array([eps])
        out = 0.0
        for parts in self._directions:
            chernoff = math.exp(float(log_chernoff(parts, at)[0]))
            jump = sum(k * float(loss.profile(at)[0]) for loss, k in parts)
            mean = sum(k * loss.moments[0] for loss, k in parts)
            var = sum(k * loss.moments[1] for loss, k in parts)
            bulk = 0.0
            if var > 0.0:
                sd = math.sqrt(var)
                a = float(log_ndtr((mean - eps) / sd))
                b = eps - mean + 0.5 * var + float(log_ndtr((mean - eps - var) / sd))
                bulk = math.exp(a) * -math.expm1(b - a) if b < a else 0.0
            out = max(out, min(chernoff, max(jump, bulk)))
        return out

    def _splits_at(self: _Host, delta: float, tol: float) -> bool:
        """Whether an eps(``delta``) query splits a direction's law (as
        :meth:`~autoacct.pld.splitting.SplitDirections._split` judges it, at the fine
        lattice of its first pass)."""
        log_eta = log_eta_for(delta, tol)
        normal = self.eps_scale(delta)
        scale = max(normal, self._jump_scale(delta, log_eta))
        for d in range(len(self._directions)):
            side = self._tail_side(d, log_eta)
            if side is not None and self._split_pays(d, side, self.spacing(scale, tol, [d]), log_eta, normal):
                return True
        return False


def log_chernoff(parts: list[tuple[PrivacyLoss, int]], eps: np.ndarray) -> np.ndarray:
    """log of the Chernoff bound min_t e^{K(t) - t eps} on P(L > eps), at most 0, for the
    composition of one direction's (law, count) parts at each of a 1-d array of eps, from the
    laws' cumulants tabulated at SIZING_TILTS (rounded for sizing: an estimate, never a bound
    returned). delta(eps) = E[(1 - e^{eps - L})_+] lies below it. An infinite cumulant less an
    infinite term is NaN there, read as no bound (0)."""
    cgf = np.asarray(sum(k * np.asarray(loss.sizing_cgf) for loss, k in parts))
    with np.errstate(invalid="ignore", over="ignore"):
        log_c = np.min(cgf[:, None] - np.multiply.outer(SIZING_TILTS, eps), axis=0)
    return np.where(np.isnan(log_c), 0.0, np.minimum(log_c, 0.0))
