"""Routes: the ways a mechanism's hooks become certified answers, and the "auto" policy.

A route turns one representation into (epsilon, delta, tradeoff) answers:

* ``exact``: the closed forms of a mu-GDP mechanism (hook ``exact_gdp_mu``);
* ``pld``: the FFT accountant on the loss laws (hook ``loss_parts``), certified both ways;
* ``phi``: the characteristic-function accountant on the same laws (upper bounds);
* ``rdp``: conversion of the Renyi-DP curve (hook ``rdp_curve``; Balle et al.
  2020, Theorem 21);
* ``dp``: an (eps, delta)-DP guarantee (hook ``dp_guarantee``): basic
  composition and amplification by subsampling, in closed form.

Each route is an object with one interface (:class:`Route`); :data:`ROUTES`
lists them, and the ``auto`` policy (:func:`epsilon_bounds`,
:func:`delta_bounds`, :func:`tradeoff`) is written here once. Adding a route
is a class here and an entry in :data:`ROUTES`.

Answers are cached on the mechanism (``Mechanism.cached``) under keys that
hold every argument of the query and the resource budget in force
(:mod:`autoacct.limits`: an answer cut short by a small budget is asked again
under a larger one), so the same query gets the same answer, whatever was asked
in between.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from scipy import special

from autoacct import _validation as check
from autoacct.binomial import attained_binomial
from autoacct.certified import CertifiedPoints
from autoacct.converters.profile import epsilon_from_profile, tradeoff_from_profile
from autoacct.converters.rdp import DELTA_FLOOR, rdp_to_delta, rdp_to_epsilon
from autoacct.errors import AccuracyWarning, BudgetExceeded, BudgetWarning, RouteUnavailableError
from autoacct.exactness import MACHINE_EPSILON, ExactFloat, outward, public_delta
from autoacct.grouping import Grouped, grouped_pair, through_groups
from autoacct.limits import current as current_limits
from autoacct.limits import deadline
from autoacct.losses import gaussian_delta_bounds
from autoacct.losses.gdp import NORMAL_REL, gaussian_epsilon_closed_lower, gaussian_epsilon_closed_upper
from autoacct.phi import PhiAccountant
from autoacct.pld import DEFAULT_TOL, FFTAccountant
from autoacct.pld.costs import warn_loose
from autoacct.rdp_curves import max_divergence, rdp_of
from autoacct.shortcuts import closed_profiles, max_loss, monotone, variation_up

if TYPE_CHECKING:
    from autoacct.mechanism import Mechanism

#: Smallest delta a query accepts: below it (subnormal floats) profiles lose their precision.
MIN_DELTA = 1e-300
#: Relative margin on the analytic Gaussian profile beyond its computed rounding bound
#: (:func:`~autoacct.losses.gaussian_delta_with_error`), for scipy's log_ndtr's own error: the
#: allowance of scipy's normal functions that the closed forms of :mod:`autoacct.losses.gdp` take.
EXACT_REL = NORMAL_REL
#: A query by epsilon has no delta to size the PLD grid from: the grid is sized for the
#: epsilon scale at this delta, where the accountant's error model is calibrated.
REFERENCE_DELTA = 1e-6
#: The type II error at type I error a is rounded down by this much for the Gaussian
#: closed form (a few ulps of 1, the rounding of ndtr and ndtri).
EXACT_TRADEOFF_MARGIN = 1e-15
#: Relative error allowed for the argument Phi^-1(1 - a) - mu of the Gaussian tradeoff, as a
#: share of |Phi^-1(a)| + mu: 32 machine epsilons, for ndtri's (3.3) and mu's (half an ulp for a
#: Gaussian, about one per child for a composition's sum of squares).
EXACT_TRADEOFF_ARG_REL = 32 * MACHINE_EPSILON

Bounds = tuple[float, float]
ArrayBounds = tuple[np.ndarray, np.ndarray]
_UNIT = MACHINE_EPSILON


def tolerance(tol: float | None) -> float:
    """The validated relative accuracy of a query (``DEFAULT_TOL`` when None)."""
    if tol is None:
        return DEFAULT_TOL
    return check.real("tol", tol, low=1e-7, high=0.5)


def _lower_end(m: Mechanism, delta: float) -> float:
    lower = m.epsilon_lower(delta)
    return 0.0 if lower is None else lower


def _lower_delta(m: Mechanism, eps: np.ndarray) -> np.ndarray:
    """The lower end on delta of a route that has none of its own, the counterpart of
    :func:`_lower_end` (hook ``delta_lower``; 0 where there is none)."""
    lower = m.delta_lower(eps)
    return np.zeros(eps.shape) if lower is None else np.asarray(lower, dtype=float)


_T = TypeVar("_T")


def bounded(what: str, answer: Callable[[], _T], trivial: _T) -> _T:
    """``answer()``, or ``trivial`` (the bound that says nothing: eps <= inf, delta <= 1, a
    tradeoff >= 0) with a :class:`BudgetWarning` when it runs past its wall-clock deadline,
    DEADLINE_FACTOR times the time budget from its start (:func:`autoacct.limits.deadline`):
    the bound on the routes whose cost no size predicts. Each such route of a query has its
    own deadline, so that one route's time is not taken from another's."""
    try:
        with deadline():
            return answer()
    except BudgetExceeded as exc:
        warnings.warn(f"{what} gave up: {exc}. A larger time budget (autoacct.limits(seconds=...)) "
                      "would let it finish; the bound returned instead is valid but says nothing",
                      BudgetWarning, stacklevel=4)
        return trivial


class Route(ABC):
    """One way of answering queries from one of a mechanism's hooks."""

    name: str

    @abstractmethod
    def available(self, m: Mechanism) -> bool:
        """Whether ``m`` gives this route's representation."""

    @abstractmethod
    def epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        """(lower, upper) bounds on eps(delta)."""

    @abstractmethod
    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        """(lower, upper) bounds on delta(eps) at an array of eps."""

    @abstractmethod
    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        """A lower bound on the tradeoff curve at an array of type I errors."""


class ExactRoute(Route):
    """Closed forms of a mu-GDP mechanism: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""

    name = "exact"

    def available(self, m: Mechanism) -> bool:
        return m.exact_gdp_mu() is not None

    def _mu(self, m: Mechanism) -> float:
        mu = m.exact_gdp_mu()
        if mu is None:
            raise RouteUnavailableError(f"{m.name} is not a Gaussian mechanism")
        return mu

    def epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        mu = self._mu(m)
        if mu == 0.0:
            return 0.0, 0.0
        lower, upper = gaussian_epsilon_closed_lower(mu, delta), gaussian_epsilon_closed_upper(mu, delta)
        if 0.0 < lower and lower * (1 + 1e-13) >= upper:  # mu > 4e7 (gdp.py); past the floats: inf >= inf
            return lower, upper

        def up_fn(e: Any) -> np.ndarray:
            return gaussian_delta_bounds(mu, e, EXACT_REL)[1]

        def low_fn(e: Any) -> np.ndarray:
            return gaussian_delta_bounds(mu, e, EXACT_REL)[0]

        guess = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta))
        return (max(epsilon_from_profile(low_fn, delta, guess, upper=False, vectorised=True), lower),
                min(epsilon_from_profile(up_fn, delta, guess, upper=True, vectorised=True), upper))

    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        mu = self._mu(m)
        lower, upper = gaussian_delta_bounds(mu, eps, EXACT_REL)
        floor = 1e-300 if mu > 0.0 else 0.0  # 0-GDP: delta is exactly 0 at eps >= 0
        return lower, np.minimum(upper + floor, 1.0)

    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        # Phi(Phi^-1(1 - a) - mu) written as Phi(-Phi^-1(a) - mu): 1 - a would round a small a away.
        # The argument is moved down by EXACT_TRADEOFF_ARG_REL of its parts' sizes: ndtri's
        # relative error (Cephes: 7.2e-16 peak) and mu's own rounding (1/sigma, sums of squares)
        # are relative to |Phi^-1(a)| and mu, which reach 37 at a = 1e-300, where an ulp of the
        # argument (7e-15) is above the absolute margin: Gaussian(0.027428794482378425)
        # .tradeoff(1e-300) was 2.4e-16 above the true 0.72208930268138914 without it. Phi is
        # increasing, so a smaller argument gives a lower value. (At a = 0 or 1, z is infinite
        # and exact: no slack, which would make inf - inf.)
        z, mu = special.ndtri(fpr), self._mu(m)
        slack = np.where(np.isfinite(z), EXACT_TRADEOFF_ARG_REL * (np.abs(z) + mu), 0.0)
        arg = -z - mu - slack
        return special.ndtr(arg) - EXACT_TRADEOFF_MARGIN


class _LawRoute(Route):
    """Common part of the routes that read the mechanism's loss laws."""

    def available(self, m: Mechanism) -> bool:
        return m.kept_loss_parts() is not None

    def _parts(self, m: Mechanism) -> list[Any]:
        parts = m.kept_loss_parts()
        if parts is None:
            raise RouteUnavailableError(f"{m.name} has no PLD representation")
        return parts


def _passed_on(answer: Callable[[], _T]) -> tuple[_T, bool]:
    """``answer()``, and whether it warned; its warnings are passed on as they were."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = answer()
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return out, bool(caught)


@contextlib.contextmanager
def _quiet_accuracy() -> Iterator[None]:
    """No accuracy warnings: of an accountant whose lower end alone is read (attained pairs)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        yield


class PldRoute(_LawRoute):
    """The certified FFT accountant (:mod:`autoacct.pld`), or :func:`~autoacct.shortcuts.closed_profiles`."""

    name = "pld"

    def accountant(self, m: Mechanism) -> FFTAccountant:
        """The mechanism's accountant; it keeps every PLD it composed for later queries."""
        return m.cached(("pld",), lambda: FFTAccountant(self._parts(m)))

    def attained(self, m: Mechanism) -> FFTAccountant | None:
        """The accountant of the pairs ``m`` attains (hook ``attained_parts``), which gives the
        lower ends where those of ``m``'s own pairs are not certified; None where they are, or
        where the attained pairs are not all ``tight`` either (the lower end is then 0)."""
        def make() -> FFTAccountant | None:
            parts = m.attained_parts()
            if self.accountant(m).tight or parts is None or not all(f.tight and b.tight for f, b, _ in parts):
                return None
            return FFTAccountant(parts)
        return m.cached(("pld-attained",), make)

    def epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        closed = closed_profiles(m)
        if closed is not None:
            low = epsilon_from_profile(closed.lower, delta, closed.guess, upper=False, vectorised=True)
            got = (low, epsilon_from_profile(closed.upper, delta, closed.guess, upper=True, vectorised=True, floor=low))
            if closed.final or _within(*got, tol):
                if not _within(*got, tol) and got[0] < got[1]:
                    self._warn_loose_laws(m, f"eps({delta:g}) bounds [{got[0]:.6g}, {got[1]:.6g}]", tol, delta)
                return got
            lower, upper = self._composed_epsilon(m, delta, tol)  # (a sum wider than tol: the lattice too)
            return max(lower, got[0]), min(upper, got[1])
        if m.cached(("variation-up", delta), lambda: variation_up(self._parts(m), stop_above=delta)) <= delta:
            return 0.0, 0.0  # delta(0) <= delta: eps(delta) is 0
        return self._through_groups(
            m, lambda: self._composed_epsilon(m, delta, tol),
            lambda p: (self.epsilon(p.below, delta, tol)[0], self.epsilon(p.above, delta, tol)[1]),
            lambda lo, up: _within(lo, up, tol), lambda lo, up: f"eps({delta:g}) bounds [{lo:.6g}, {up:.6g}]", tol)

    def _warn_loose_laws(self, m: Mechanism, what: str, tol: float, scale: float) -> bool:
        """Warn that bounds ``what``, wider than ``tol``, are so for want of accuracy, where
        that is known: m's laws keep more than tol ``scale`` at +inf (a certified rounding
        bound: random allocation's epoch laws; their profiles are inf below it), or m's
        upper and lower laws bound its own pair (:meth:`Mechanism.brackets_own_pair`).
        Otherwise the gap may be the by-design one between a dominating pair and the pairs
        attained, and nothing is said; nor of mass a law's truncation moved to +inf
        (``p_inf_truncated``: a floor the accountant accepts too, 1.6e-44 for a discrete
        Gaussian of sigma 6 at eps = 100). Returns whether it warned."""
        at_inf = max(max(p.forward.p_inf - p.forward.p_inf_truncated, p.backward.p_inf - p.backward.p_inf_truncated)
                     for p in self._parts(m))
        if at_inf > tol * scale:
            why = f"the laws of {m.name} keep up to {at_inf:.3g} at an infinite loss"
        elif m.brackets_own_pair():
            why = f"the laws of {m.name} bound its own pair only this closely"
        else:
            return False
        warn_loose(f"{what} are wider than tol={tol:g}: {why}")
        return True

    def _composed_epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        """eps(delta) bounds from the accountant of m's own steps (and of its attained pairs)."""
        acc = self.accountant(m)
        (lower, upper), caught = _passed_on(lambda: acc.epsilon(delta, acc.eps_scale(delta), tol))
        below = attained_binomial(m) or self.attained(m)
        if below is not None:
            with _quiet_accuracy():
                lower = max(lower, below.epsilon(delta, below.eps_scale(delta), tol)[0])
            if not caught and not _within(lower, upper, tol) and lower < upper:
                # (the accountant met tol on the laws that dominate; the lower end is the
                # attained pairs')
                self._warn_loose_laws(m, f"eps({delta:g}) bounds [{lower:.6g}, {upper:.6g}]", tol, delta)
        return lower, upper

    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        closed = closed_profiles(m)
        if closed is not None:
            got = monotone(eps, closed.lower(eps), closed.upper(eps))
            if closed.final or np.all((got[1] - got[0] <= tol * got[1]) | (got[1] <= DELTA_FLOOR)):
                loose = (got[1] - got[0] > tol * got[1]) & (got[1] > DELTA_FLOOR)
                if np.any(loose):
                    # Within tol on the eps scale, as the accountant's: the upper end at eps is
                    # at most the lower end at eps (1 - tol).
                    loose &= got[1] > closed.lower(eps * (1.0 - tol))
                if np.any(loose):
                    at = int(np.argmin(np.where(loose, got[1], np.inf)))
                    self._warn_loose_laws(m, f"delta bounds at eps = {float(np.ravel(eps)[at]):.6g}", tol,
                                          float(np.ravel(got[1])[at]))
                return got
            lower, upper = self._composed_delta(m, eps, tol)  # (a sum wider than tol: the lattice too)
            return np.maximum(lower, got[0]), np.minimum(upper, got[1])
        parts = self._parts(m)
        if np.all(eps >= max_loss(parts)) and all(p.forward.p_inf == 0.0 and p.backward.p_inf == 0.0
                                                   for p in parts):
            # Beyond the largest finite loss only the mass at +inf counts, and there is none.
            return np.zeros(eps.shape), np.zeros(eps.shape)
        return self._through_groups(
            m, lambda: self._composed_delta(m, eps, tol),
            lambda p: (self.delta(p.below, eps, tol)[0], self.delta(p.above, eps, tol)[1]),
            lambda lo, up: _all_within(lo, up, tol), lambda lo, up: "delta bounds", tol)

    def _composed_delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        """delta(eps) bounds from the accountant of m's own steps (and of its attained pairs)."""
        acc = self.accountant(m)
        (lower, upper), caught = _passed_on(lambda: acc.delta(eps, acc.eps_scale(REFERENCE_DELTA), tol))
        below = attained_binomial(m) or self.attained(m)
        if below is not None:
            with _quiet_accuracy():
                lower = np.maximum(lower, below.delta(eps, below.eps_scale(REFERENCE_DELTA), tol)[0])
            if not caught and isinstance(below, FFTAccountant) and m.brackets_own_pair():
                # Within tol on the eps scale, as the accountant's: the upper end at eps at most
                # the attained pairs' lower end at eps (1 - tol) (read off the profiles made).
                loose = (upper - lower > tol * upper) & (upper > DELTA_FLOOR)
                if np.any(loose):
                    loose &= upper > below.best_delta(eps * (1.0 - tol))[0]
                if np.any(loose):
                    at = int(np.argmin(np.where(loose, upper, np.inf)))
                    self._warn_loose_laws(m, f"delta bounds at eps = {float(np.ravel(eps)[at]):.6g}", tol,
                                          float(np.ravel(upper)[at]))
        # Beyond its grid an upper PLD keeps only the mass it moved to +inf, which underflows
        # to 0 where the laws' tails lie below 1e-300 (a subsampled Gaussian step sampled
        # without replacement at q = 2.8e-20, sigma = 490: truth 3.9e-16294008): where the
        # composed loss can still exceed eps the bound keeps DELTA_FLOOR, as the other routes.
        floor = (upper < DELTA_FLOOR) & (eps < max_loss(self._parts(m)))
        return lower, np.where(floor, DELTA_FLOOR, upper)

    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        # The exact composition's curve and the dominating grouped steps' (as for eps) are both
        # below m's tradeoff curve, and so is their maximum: the lower end of their "bracket".
        beta, _ = self._through_groups(
            m, lambda: (self._composed_tradeoff(m, fpr),) * 2, lambda p: (self.tradeoff(p.above, fpr),) * 2,
            lambda lo, up: False, lambda lo, up: "the tradeoff curve", DEFAULT_TOL, below=False)
        return np.asarray(beta)

    def _composed_tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        """The tradeoff curve's lower bound from the accountant of m's own steps."""
        acc = self.accountant(m)
        return acc.tradeoff(fpr, acc.eps_scale(REFERENCE_DELTA))

    def grouped(self, m: Mechanism) -> Grouped | None:
        """The grouping the route answers ``m`` through, if any (:func:`grouping.grouped_pair`)."""
        parts = self._parts(m)
        return m.cached(("pld-grouped",), lambda: grouped_pair(m, self.accountant(m).distinct,
                                                                sum(p.times for p in parts)))

    def _rate(self, m: Mechanism) -> list[float]:
        """The predicted seconds per distinct law of m's grouped compositions (see
        :func:`grouping.exact_need`)."""
        return m.cached(("pld-exact-rate",), lambda: [0.0])

    def _through_groups(self, m: Mechanism, exact: Callable[[], tuple[Any, Any]],
                        grouped: Callable[[Grouped], tuple[Any, Any]], met: Callable[[Any, Any], bool],
                        what: Callable[[Any, Any], str], tol: float, below: bool = True) -> tuple[Any, Any]:
        """:func:`grouping.through_groups` for m (its grouping, and the one made where the
        budget stopped its exact composition); ``below``: whether ``grouped`` composes the
        dominated steps too, not only the dominating ones (their distinct laws are then taken
        to be as many as the dominating ones': 619, 463 and 278 each for 2,000, 3,000 and
        10,000 of benchmarks/cases.py's steps)."""
        def regroup() -> Grouped | None:
            parts = self._parts(m)
            return m.cached(("pld-regrouped",), lambda: grouped_pair(
                m, self.accountant(m).distinct, sum(p.times for p in parts), threshold=0))
        return through_groups(self.grouped(m), exact, grouped, met, what, tol,
                              lambda p: self.accountant(p.above).distinct * (2 if below else 1),
                              self._rate(m), regroup)


class PhiRoute(_LawRoute):
    """The characteristic-function accountant (:mod:`autoacct.phi`); upper bounds only."""

    name = "phi"

    def _accountant(self, m: Mechanism) -> PhiAccountant:
        return m.cached(("phi",), lambda: PhiAccountant(self._parts(m)))

    def epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        up = bounded("the phi route", lambda: self._accountant(m).epsilon(delta, tol), math.inf)
        return _lower_end(m, delta), up

    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        return _lower_delta(m, eps), bounded("the phi route", lambda: self._accountant(m).delta(eps, tol),
                                                  np.ones(eps.shape))

    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        return bounded("the phi route", lambda: self._accountant(m).tradeoff(fpr), np.zeros(fpr.shape))


class RdpRoute(Route):
    """Conversion of the Renyi-DP curve to (eps, delta) and to a tradeoff curve."""

    name = "rdp"

    def available(self, m: Mechanism) -> bool:
        return m.rdp_curve() is not None

    @staticmethod
    def _curve(m: Mechanism) -> Any:
        return lambda alpha: rdp_of(m, alpha)

    def epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        # The order-infinity limit of the conversion: a pair with max divergence D is (D, 0)-DP.
        up = bounded("the Renyi-DP route", lambda: rdp_to_epsilon(self._curve(m), delta), math.inf)
        return _lower_end(m, delta), min(up, max_divergence(m))

    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        up = bounded("the Renyi-DP route", lambda: rdp_to_delta(self._curve(m), eps), np.ones(eps.shape))
        return _lower_delta(m, eps), np.where(eps >= max_divergence(m), 0.0, up)

    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        curve = self._curve(m)

        def answer() -> np.ndarray:
            # Up to where the RDP profile is negligible, so that small fpr are covered too.
            top = rdp_to_epsilon(curve, 1e-15)
            top = max(top, 1.0) if np.isfinite(top) else 10.0 ** 2.5
            eps_grid = np.concatenate(([0.0], np.geomspace(1e-3, top, 300)))
            return tradeoff_from_profile(lambda e: rdp_to_delta(curve, e, polish=False), fpr, eps_grid)
        return bounded("the Renyi-DP route", answer, np.zeros(fpr.shape))


class DpRoute(Route):
    """An (eps0, delta0)-DP guarantee (hook ``dp_guarantee``): basic composition and amplification.

    Every (eps0, delta0)-DP mechanism is dominated by the leaky randomized
    response (Zhu, Dong and Wang 2022), whose profile is, for eps >= 0,
    delta0 + (1 - delta0) (1 - e^{eps - eps0})^+ / (1 + e^{-eps0}), and whose
    tradeoff curve is max(0, 1 - delta0 - e^{eps0} a, e^{-eps0} (1 - delta0 - a))
    (Kairouz, Oh and Viswanath 2015).
    """

    name = "dp"
    #: Relative margin over the few roundings of the closed forms.
    REL = 1e-15

    def available(self, m: Mechanism) -> bool:
        return m.dp_guarantee() is not None

    @staticmethod
    def _guarantee(m: Mechanism) -> tuple[float, float]:
        g = m.dp_guarantee()
        if g is None:
            raise RouteUnavailableError(f"{m.name} has no (eps, delta)-DP guarantee")
        return g

    def epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        eps0, delta0 = self._guarantee(m)
        lower = _lower_end(m, delta)
        if delta < delta0:
            return lower, math.inf
        # Solve delta0 + (1 - delta0)(1 - e^{x - eps0}) / (1 + e^{-eps0}) = delta for x:
        # e^{x - eps0} = ((1 - delta) - (delta - delta0) e^{-eps0}) / (1 - delta0). Written so,
        # the numerator's two terms carry their own relative rounding only (forming 1 - c with
        # c near 1 would keep only an absolute ulp of it), which the margin below bounds.
        tail = (delta - delta0) * math.exp(-eps0)
        num = (1.0 - delta) - tail
        if num <= 0.0:
            return lower, 0.0
        x = eps0 + math.log(num / (1.0 - delta0))
        x = x + 8.0 * _UNIT * ((1.0 - delta) + tail) / num + self.REL * (abs(x) + eps0)
        return lower, min(eps0, max(x, 0.0))

    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        eps0, delta0 = self._guarantee(m)
        with np.errstate(over="ignore"):
            slope = -np.expm1(np.minimum(eps - eps0, 0.0)) / (1.0 + math.exp(-eps0))
        up = (delta0 + (1.0 - delta0) * slope) * (1.0 + self.REL)
        up = np.where(eps < eps0, np.maximum(up, 5e-324), up)  # (positive below eps0, where it may underflow)
        return _lower_delta(m, eps), np.minimum(up, 1.0)

    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        eps0, delta0 = self._guarantee(m)
        with np.errstate(over="ignore", invalid="ignore"):
            steep = 1.0 - delta0 - np.where(fpr > 0.0, np.exp(eps0) * fpr, 0.0)
            flat = np.exp(-eps0) * (1.0 - delta0 - fpr)
        val = np.maximum(np.maximum(steep, flat), 0.0)
        return np.maximum(val * (1.0 - self.REL) - self.REL, 0.0)


EXACT, PLD, PHI, RDP, DP = ExactRoute(), PldRoute(), PhiRoute(), RdpRoute(), DpRoute()
#: Every route, in the order ``Mechanism.routes`` lists them.
ROUTES: dict[str, Route] = {r.name: r for r in (EXACT, PLD, PHI, RDP, DP)}
ROUTE_NAMES = ("auto", *ROUTES)


def available(m: Mechanism) -> tuple[str, ...]:
    """Names of the routes ``m`` can answer by."""
    return tuple(name for name, r in ROUTES.items() if r.available(m))


def _points(m: Mechanism) -> CertifiedPoints:
    return m.cached(("certified-points",), CertifiedPoints)


def _resolve(m: Mechanism, via: str) -> str:
    """The route a ``via=`` argument names; "pld" is answered exactly when a closed form exists."""
    if not isinstance(via, str) or via not in ROUTE_NAMES:
        raise ValueError(f"via must be one of {ROUTE_NAMES}, got {via!r}")
    if via == "auto":
        return via
    if via == "pld" and "exact" in m.routes:
        return "exact"
    if via not in m.routes:
        raise RouteUnavailableError(f"{m.name} cannot be answered via {via!r}; available routes: {m.routes}")
    return via


def _epsilon_by(m: Mechanism, route: str, delta: float, tol: float) -> Bounds:
    return m.cached(("eps", route, delta, tol, current_limits()), lambda: ROUTES[route].epsilon(m, delta, tol))


def epsilon_bounds(m: Mechanism, delta: float, via: str, tol: float) -> Bounds:
    """(lower, upper) on eps(delta) by route ``via``; "auto" is the tightest certified pair.

    The auto policy: the closed form if there is one; else the PLD, with the
    RDP route too when the PLD is not within ``tol`` (an RDP bound lies above
    the truth, so it cannot then be tighter by more than tol); and always the
    (eps, delta)-DP guarantee where there is one (a closed form, so that no
    answer is above a pure- or approximate-DP bound the library certifies).
    """
    route = _resolve(m, via)
    if route != "auto":
        return _epsilon_by(m, route, delta, tol)

    def solve() -> Bounds:
        points = _points(m)
        lo, up = points.epsilon(delta, *_auto_epsilon(m, delta, tol))
        # eps(delta) <= up says delta(up) <= delta; eps(delta) >= lo > 0 says delta(lo) >= delta.
        # The points hold the values as the API returns them (rounded outward), which a
        # lookup may then treat as exact numbers.
        e_up, e_lo = outward(up, upper=True), outward(lo, upper=False)
        points.add(np.array([e_up, e_lo]), np.array([0.0, delta if e_lo > 0 else 0.0]), np.array([delta, 1.0]))
        return lo, up
    return m.cached(("eps", "auto", delta, tol, current_limits()), solve)


def _dominating(m: Mechanism) -> Mechanism | None:
    """``m.dominating()`` (kept) where it may beat ``m``'s own routes (``dominating_alone``)."""
    return m.cached(("dominating",), m.dominating) if m.dominating_alone else None


def _auto_epsilon(m: Mechanism, delta: float, tol: float) -> Bounds:
    """The auto policy's (lower, upper) on eps(delta) (see :func:`epsilon_bounds`)."""
    if "exact" in m.routes:
        return _epsilon_by(m, "exact", delta, tol)
    results = []
    # A route that misses tol says so; the user is told if the combined answer does too, beside it.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if "pld" in m.routes:
            results.append(_epsilon_by(m, "pld", delta, tol))
        within_tol = bool(results) and _within(*results[0], tol)
        if "rdp" in m.routes and not within_tol:
            results.append(_epsilon_by(m, "rdp", delta, tol))
        if "dp" in m.routes:
            results.append(_epsilon_by(m, "dp", delta, tol))
        if (above := _dominating(m)) is not None:
            # Its upper end holds here (Mechanism.dominating); as a plain float, since it is
            # exact (ExactFloat) for the dominating mechanism only.
            results.append((0.0, float(epsilon_bounds(above, delta, "auto", tol)[1])))
    # On a tie the exact value wins: the API keeps it (:class:`ExactFloat`).
    lo, up = max(r[0] for r in results), min((r[1] for r in results), key=lambda v: (v, not isinstance(v, ExactFloat)))
    met = _within(lo, up, tol)
    for w in caught:
        if not (met and issubclass(w.category, AccuracyWarning)):
            told = w.message if len(results) == 1 else w.category(
                f"{w.message} (from one route; the answer over all routes: [{lo:.6g}, {up:.6g}])")
            warnings.warn_explicit(told, w.category, w.filename, w.lineno)
    return lo, up


def _within(lo: float, up: float, tol: float) -> bool:
    """Whether a bracket is finite and within relative tolerance ``tol``."""
    return math.isfinite(up) and up - lo <= tol * up


def _all_within(lo: np.ndarray, up: np.ndarray, tol: float) -> bool:
    """Whether every delta bracket is within relative tolerance ``tol`` (or at 0)."""
    return bool(np.all((up - lo <= tol * up) | (up <= 0.0)))


def delta_bounds(m: Mechanism, eps: np.ndarray | float, via: str, tol: float) -> ArrayBounds:
    """(lower, upper) on delta at eps, a float or an array (Mechanism passes a 0-d array for
    a float), by route ``via``; "auto" as for epsilon."""
    eps = np.asarray(eps, dtype=float)
    route = _resolve(m, via)
    if route != "auto":
        return ROUTES[route].delta(m, eps, tol)
    def solve() -> ArrayBounds:
        points = _points(m)
        lo, up = points.delta(eps, *_auto_delta(m, eps, tol))
        points.add(eps, public_delta(lo, upper=False), public_delta(up))  # as returned, see above
        return lo, up
    lo, up = m.cached(("delta", "auto", eps.shape, eps.tobytes(), tol, current_limits()), solve)
    return lo.copy(), up.copy()


def _auto_delta(m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
    """The auto policy's (lower, upper) on delta at an array of eps (see :func:`delta_bounds`)."""
    if "exact" in m.routes:
        lo, up = EXACT.delta(m, eps, tol)
        return np.asarray(lo, dtype=float), np.asarray(up, dtype=float)
    if "pld" in m.routes:
        key = ("delta", eps.shape, eps.tobytes(), tol, current_limits())
        lo, up = m.cached(key, lambda: _pld_delta_with_rdp(m, eps, tol))
    elif "rdp" in m.routes:
        lo, up = RDP.delta(m, eps, tol)
    else:
        lo, up = np.zeros(eps.shape), np.ones(eps.shape)
    if "dp" in m.routes:
        up = np.minimum(up, DP.delta(m, eps, tol)[1])
    if (above := _dominating(m)) is not None:
        up = np.minimum(up, delta_bounds(above, eps, "auto", tol)[1])  # (Mechanism.dominating)
    # The hook's lower end where the routes' own are looser (a PLD of laws that only dominate
    # answers 0 in its far tail: a balls-in-bins epoch at sigma = 3, eps = 2, where its summed
    # outputs give 7.9e-19).
    lo = np.maximum(lo, _lower_delta(m, eps))
    return lo.copy(), up.copy()


def _pld_delta_with_rdp(m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
    """PLD bounds on delta, with the RDP bound taken where they are not within tol."""
    lo, up = (np.array(v, dtype=float) for v in PLD.delta(m, eps, tol))
    if closed_profiles(m) is not None:
        return lo, up
    # Within tol on the eps scale (the accountant's target): the upper bound at eps is
    # below the lower bound at eps (1 - tol), or within tol of the lower bound.
    shrunk = np.asarray(PLD.accountant(m).best_delta(eps * (1.0 - tol))[0])
    loose = ~((up <= shrunk) | (up - lo <= tol * up))
    if np.any(loose) and "rdp" in m.routes:
        # The RDP bound can only help where the PLD bounds are not within tol (and it
        # costs an order optimisation per point, so it is asked only there).
        r_lo, r_up = RDP.delta(m, eps[loose], tol)
        lo[loose] = np.maximum(lo[loose], r_lo)
        up[loose] = np.minimum(up[loose], r_up)
    return lo, up


def tradeoff(m: Mechanism, fpr: np.ndarray, via: str) -> np.ndarray:
    """A lower bound on the tradeoff curve.

    "auto" takes the first of exact, pld, rdp available, and the larger of it and
    the (eps, delta)-DP guarantee's curve where there is one (both are lower bounds).
    """
    route = _resolve(m, via)
    if route != "auto":
        return ROUTES[route].tradeoff(m, fpr)
    first = next((r for r in ("exact", "pld", "rdp") if r in m.routes), None)
    val = ROUTES[first].tradeoff(m, fpr) if first is not None else np.zeros(fpr.shape)
    if "dp" in m.routes:
        val = np.maximum(val, DP.tradeoff(m, fpr))
    above = _dominating(m)
    if above is not None:
        # The dominating pair's curve is below this one's (Mechanism.dominating): a lower bound.
        val = np.maximum(val, tradeoff(above, fpr, "auto"))
    return val
