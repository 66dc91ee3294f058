"""Routes: the ways a mechanism's hooks become certified answers, and the "auto" policy.

A route turns one representation into (epsilon, delta, tradeoff) answers:

* ``exact``: the closed forms of a mu-GDP mechanism (hook ``exact_gdp_mu``);
* ``pld``: the FFT accountant on the loss laws (hook ``loss_parts``), with
  certified lower and upper bounds;
* ``phi``: the characteristic-function accountant on the same laws (upper bounds);
* ``rdp``: conversion of the Renyi-DP curve (hook ``rdp_curve``; Balle et al.
  2020, Theorem 21).

Each route is an object with one interface (:class:`Route`); :data:`ROUTES`
lists them, and the ``auto`` policy (:func:`epsilon_bounds`,
:func:`delta_bounds`, :func:`tradeoff`) is written here once. Adding a route
is a class here and an entry in :data:`ROUTES`.

Answers are cached on the mechanism (``Mechanism.cached``) under keys that
hold every argument of the query, so the same query gets the same answer,
whatever was asked in between.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from autoacct import _validation as check
from autoacct.converters.profile import epsilon_from_profile, tradeoff_from_profile
from autoacct.converters.rdp import rdp_to_delta, rdp_to_epsilon
from autoacct.errors import RouteUnavailableError
from autoacct.losses import gaussian_delta
from autoacct.phi import PhiAccountant
from autoacct.pld import DEFAULT_TOL, FFTAccountant

if TYPE_CHECKING:
    from autoacct.mechanism import Mechanism

#: Smallest delta a query accepts: below it (subnormal floats) profiles lose their precision.
MIN_DELTA = 1e-300
#: Relative margin on the analytic Gaussian profile: covers the rounding of its two
#: terms where they nearly cancel.
EXACT_REL = 1e-9
#: A query by epsilon has no delta to size the PLD grid from: the grid is sized for the
#: epsilon scale at this delta, where the accountant's error model is calibrated.
REFERENCE_DELTA = 1e-6
#: The type II error at type I error a is rounded down by this much for the Gaussian
#: closed form (a few ulps of 1, the rounding of ndtr and ndtri).
EXACT_TRADEOFF_MARGIN = 1e-15

Bounds = tuple[float, float]
ArrayBounds = tuple[np.ndarray, np.ndarray]


def public_delta(val: Any) -> Any:
    """A delta as returned to users: a float for a scalar, else an array; never negative, never -0.0."""
    out = np.maximum(np.asarray(val, dtype=float), 0.0) + 0.0
    return float(out) if out.ndim == 0 else out


def tolerance(tol: float | None) -> float:
    """The validated relative accuracy of a query (``DEFAULT_TOL`` when None)."""
    if tol is None:
        return DEFAULT_TOL
    return check.real("tol", tol, low=1e-7, high=0.5)


def rdp_of(m: Mechanism, alpha: np.ndarray) -> np.ndarray:
    """The mechanism's RDP at orders ``alpha``: the larger of the pair's two orders, +inf for NaN."""
    curve = m.rdp_curve()
    if curve is None:
        raise RouteUnavailableError(f"{m.name} has no Renyi-DP representation")
    with np.errstate(over="ignore"):
        val = np.max(np.asarray(curve(np.asarray(alpha, dtype=float)), dtype=float), axis=0)
    return np.where(np.isnan(val), np.inf, val)


def _lower_end(m: Mechanism, delta: float) -> float:
    lower = m.epsilon_lower(delta)
    return 0.0 if lower is None else lower


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

        def up_fn(e: float) -> float:
            return float(gaussian_delta(mu, e)) * (1 + EXACT_REL)

        def low_fn(e: float) -> float:
            return float(gaussian_delta(mu, e)) * (1 - EXACT_REL)

        guess = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta))
        return (epsilon_from_profile(low_fn, delta, guess, upper=False),
                epsilon_from_profile(up_fn, delta, guess, upper=True))

    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        val = gaussian_delta(self._mu(m), eps)
        return val * (1 - EXACT_REL), np.minimum(val * (1 + EXACT_REL) + 1e-300, 1.0)

    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        return special.ndtr(special.ndtri(1.0 - fpr) - self._mu(m)) - EXACT_TRADEOFF_MARGIN


class _LawRoute(Route):
    """Common part of the routes that read the mechanism's loss laws."""

    def available(self, m: Mechanism) -> bool:
        return m.loss_parts() is not None

    def _parts(self, m: Mechanism) -> list[Any]:
        parts = m.loss_parts()
        if parts is None:
            raise RouteUnavailableError(f"{m.name} has no PLD representation")
        return parts


class PldRoute(_LawRoute):
    """The certified FFT accountant (:mod:`autoacct.pld`)."""

    name = "pld"

    def accountant(self, m: Mechanism) -> FFTAccountant:
        """The mechanism's accountant; it keeps every PLD it composed for later queries."""
        return m.cached(("pld",), lambda: FFTAccountant(self._parts(m)))

    def epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        acc = self.accountant(m)
        return acc.epsilon(delta, acc.eps_scale(delta), tol)

    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        acc = self.accountant(m)
        return acc.delta(eps, acc.eps_scale(REFERENCE_DELTA), tol)

    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        acc = self.accountant(m)
        return acc.tradeoff(fpr, acc.eps_scale(REFERENCE_DELTA))


class PhiRoute(_LawRoute):
    """The characteristic-function accountant (:mod:`autoacct.phi`); upper bounds only."""

    name = "phi"

    def _accountant(self, m: Mechanism) -> PhiAccountant:
        return m.cached(("phi",), lambda: PhiAccountant(self._parts(m)))

    def epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        return _lower_end(m, delta), self._accountant(m).epsilon(delta, tol)

    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        return np.zeros(eps.shape), self._accountant(m).delta(eps, tol)

    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        return self._accountant(m).tradeoff(fpr)


class RdpRoute(Route):
    """Conversion of the Renyi-DP curve to (eps, delta) and to a tradeoff curve."""

    name = "rdp"

    def available(self, m: Mechanism) -> bool:
        return m.rdp_curve() is not None

    @staticmethod
    def _curve(m: Mechanism) -> Any:
        return lambda alpha: rdp_of(m, alpha)

    def epsilon(self, m: Mechanism, delta: float, tol: float) -> Bounds:
        return _lower_end(m, delta), rdp_to_epsilon(self._curve(m), delta)

    def delta(self, m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
        return np.zeros(eps.shape), rdp_to_delta(self._curve(m), eps)

    def tradeoff(self, m: Mechanism, fpr: np.ndarray) -> np.ndarray:
        curve = self._curve(m)
        # Up to where the RDP profile is negligible, so that small fpr are covered too.
        top = rdp_to_epsilon(curve, 1e-15)
        top = max(top, 1.0) if np.isfinite(top) else 10.0 ** 2.5
        eps_grid = np.concatenate(([0.0], np.geomspace(1e-3, top, 300)))
        return tradeoff_from_profile(lambda e: rdp_to_delta(curve, e, polish=False), fpr, eps_grid)


EXACT, PLD, PHI, RDP = ExactRoute(), PldRoute(), PhiRoute(), RdpRoute()
#: Every route, in the order ``Mechanism.routes`` lists them.
ROUTES: dict[str, Route] = {r.name: r for r in (EXACT, PLD, PHI, RDP)}
ROUTE_NAMES = ("auto", *ROUTES)


def available(m: Mechanism) -> tuple[str, ...]:
    """Names of the routes ``m`` can answer by."""
    return tuple(name for name, r in ROUTES.items() if r.available(m))


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
    return m.cached(("eps", route, delta, tol), lambda: ROUTES[route].epsilon(m, delta, tol))


def epsilon_bounds(m: Mechanism, delta: float, via: str, tol: float) -> Bounds:
    """(lower, upper) on eps(delta) by route ``via``; "auto" is the tightest certified pair.

    The auto policy: the closed form if there is one; else the PLD when it is
    within ``tol`` (an RDP bound lies above the truth, so it cannot then be
    tighter by more than tol); else the best of the PLD and RDP routes.
    """
    route = _resolve(m, via)
    if route != "auto":
        return _epsilon_by(m, route, delta, tol)
    if "exact" in m.routes:
        return _epsilon_by(m, "exact", delta, tol)
    results = []
    if "pld" in m.routes:
        lo, up = _epsilon_by(m, "pld", delta, tol)
        if up - lo <= tol * up:
            return lo, up
        results.append((lo, up))
    if "rdp" in m.routes:
        results.append(_epsilon_by(m, "rdp", delta, tol))
    return max(r[0] for r in results), min(r[1] for r in results)


def delta_bounds(m: Mechanism, eps: np.ndarray, via: str, tol: float) -> ArrayBounds:
    """(lower, upper) on delta at an array of eps by route ``via``; "auto" as for epsilon."""
    route = _resolve(m, via)
    if route != "auto":
        return ROUTES[route].delta(m, eps, tol)
    if "exact" in m.routes:
        return EXACT.delta(m, eps, tol)
    if "pld" not in m.routes:
        return RDP.delta(m, eps, tol)
    lo, up = m.cached(("delta", eps.shape, eps.tobytes(), tol), lambda: _pld_delta_with_rdp(m, eps, tol))
    return lo.copy(), up.copy()


def _pld_delta_with_rdp(m: Mechanism, eps: np.ndarray, tol: float) -> ArrayBounds:
    """PLD bounds on delta, with the RDP bound taken where they are not within tol."""
    lo, up = (np.array(v, dtype=float) for v in PLD.delta(m, eps, tol))
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
    """A lower bound on the tradeoff curve; "auto" takes the first of exact, pld, rdp available."""
    route = _resolve(m, via)
    if route == "auto":
        route = next(r for r in ("exact", "pld", "rdp") if r in m.routes)
    return ROUTES[route].tradeoff(m, fpr)
