"""Mechanism, Transformer and Calibrator bases, and the neighbouring-relation enum.

A :class:`Mechanism` is an immutable value describing the privacy guarantee of
a randomised algorithm through one or more *primitive* representations that a
subclass defines:

* ``_gdp_mu()``: the mechanism is exactly mu-GDP, i.e. dominated by the pair
  (N(mu, 1), N(0, 1)) (closed forms everywhere);
* ``_pld_parts()``: dominating pairs given as privacy-loss laws, a list of
  (forward law, backward law, count) (the FFT accountant);
* ``_rdp(alpha)``: Renyi DP of the two orders of the neighbouring pair.

Everything else (epsilon, delta, bounds, tradeoff curves) is derived here
through the converters, preferring tight routes. A concrete subclass that
defines none of the primitives is rejected when the class is created.

Every public number is a certified bound: epsilon and delta are upper bounds
on the truth, tradeoff values and ``lower`` ends are lower bounds.
"""

from __future__ import annotations

import enum
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy import special

from autoacct import _validation as check
from autoacct.converters.profile import epsilon_from_profile, tradeoff_from_profile
from autoacct.converters.rdp import rdp_to_delta, rdp_to_epsilon
from autoacct.errors import RouteUnavailableError
from autoacct.losses import PrivacyLoss, gaussian_delta
from autoacct.phi import PhiAccountant
from autoacct.pld import DEFAULT_TOL, FFTAccountant

ROUTES = ("auto", "exact", "pld", "rdp", "phi")
_PRIMITIVES = ("_gdp_mu", "_pld_parts", "_rdp")
_EXACT_REL = 1e-9  # covers rounding of the closed form where its two terms nearly cancel
#: Smallest delta a query accepts: below it (subnormal floats) profiles lose their precision.
MIN_DELTA = 1e-300


class Neighboring(enum.Enum):
    """Neighbouring relation between datasets D ~ D'.

    ADD_REMOVE: D' is D with one record added or removed. REPLACE_ONE: D' is D
    with one record replaced (same size).
    """

    ADD_REMOVE = "add/remove"
    REPLACE_ONE = "replace-one"


def _public_delta(val: Any) -> Any:
    """A delta as returned to users: a float for a scalar, else an array; never negative, never -0.0."""
    out = np.maximum(np.asarray(val, dtype=float), 0.0) + 0.0
    return float(out) if out.ndim == 0 else out


class Mechanism(ABC):
    """Base class of all mechanisms; see the module docstring.

    Parameters
    ----------
    name:
        Provenance name of the mechanism.
    params:
        Its parameters, keyed ``"<name>.<parameter>"``.
    neighboring:
        The neighbouring relation the guarantee refers to, or None when the
        guarantee holds for whichever relation the caller's sensitivity refers
        to (base mechanisms).
    """

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if abstract:
            return
        if not any(getattr(cls, p) is not getattr(Mechanism, p) for p in _PRIMITIVES):
            raise TypeError(f"{cls.__name__} defines none of {', '.join(_PRIMITIVES)}: "
                            "a mechanism must give at least one representation")

    def __init__(self, *, name: str, params: Mapping[str, float],
                 neighboring: Neighboring | None = None) -> None:
        if neighboring is not None and not isinstance(neighboring, Neighboring):
            raise TypeError(f"neighboring must be a Neighboring or None, got {neighboring!r}")
        object.__setattr__(self, "_name", str(name))
        object.__setattr__(self, "_params", MappingProxyType(dict(params)))
        object.__setattr__(self, "_neighboring", neighboring)
        object.__setattr__(self, "_cache", {})

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; build a new mechanism instead")

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._params.items())
        return f"<{self._name}: {inner}>"

    # ----- provenance -------------------------------------------------------------
    @property
    def name(self) -> str:
        """Structured name, e.g. ``Compose:{GM1: 3, GM2: 5}``."""
        return self._name

    @property
    def params(self) -> Mapping[str, float]:
        """Every parameter of the mechanism and of its children (read-only)."""
        return self._params

    @property
    def neighboring(self) -> Neighboring | None:
        """The neighbouring relation, or None for a relation-agnostic base mechanism."""
        return self._neighboring

    # ----- primitives (subclasses override at least one) -------------------------
    def _gdp_mu(self) -> float | None:
        """mu when the mechanism is exactly mu-GDP, else None."""
        return None

    def _pld_parts(self) -> list[tuple[PrivacyLoss, PrivacyLoss, int]] | None:
        """Dominating pairs as (forward law, backward law, count), or None."""
        return None

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        """RDP of both orders of the pair, shape (2,) + alpha.shape."""
        raise RouteUnavailableError(f"{self._name} has no Renyi-DP representation")

    def _has_rdp(self) -> bool:
        return type(self)._rdp is not Mechanism._rdp

    def _epsilon_lower(self, delta: float) -> float:
        """A certified lower bound on eps(delta) for mechanisms without a PLD (default 0)."""
        return 0.0

    # ----- capabilities -----------------------------------------------------------
    @property
    def routes(self) -> tuple[str, ...]:
        """The routes this mechanism can answer by, among "exact", "pld", "phi" and "rdp"."""
        key = "routes"
        if key not in self._cache:
            r = []
            if self._gdp_mu() is not None:
                r.append("exact")
            if self._pld_parts() is not None:
                r.extend(("pld", "phi"))
            if self._has_rdp():
                r.append("rdp")
            self._cache[key] = tuple(r)
        return self._cache[key]

    def _route(self, via: str) -> str:
        if not isinstance(via, str) or via not in ROUTES:
            raise ValueError(f"via must be one of {ROUTES}, got {via!r}")
        if via == "auto":
            return via
        if via == "pld" and "exact" in self.routes:
            return "exact"
        if via not in self.routes:
            raise RouteUnavailableError(
                f"{self._name} cannot be answered via {via!r}; available routes: {self.routes}")
        return via

    def _accountant(self) -> FFTAccountant:
        if "acc" not in self._cache:
            parts = self._pld_parts()
            if parts is None:
                raise RouteUnavailableError(f"{self._name} has no PLD representation")
            self._cache["acc"] = FFTAccountant(parts)
        return self._cache["acc"]

    def _phi(self) -> PhiAccountant:
        if "phi" not in self._cache:
            parts = self._pld_parts()
            if parts is None:
                raise RouteUnavailableError(f"{self._name} has no PLD representation")
            self._cache["phi"] = PhiAccountant(parts)
        return self._cache["phi"]

    # ----- Renyi DP ---------------------------------------------------------------
    def rdp(self, alpha: Any) -> Any:
        """Renyi-DP epsilon at order(s) ``alpha`` > 1: the larger of the two orders of the pair.

        Array in, array out; a scalar gives a float. The value is an upper bound
        on sup_{D ~ D'} D_alpha(M(D) || M(D')), +inf where that is infinite.
        """
        a = check.real_array("alpha", alpha, low=1.0, low_open=True)
        if not self._has_rdp():
            raise RouteUnavailableError(f"{self._name} has no Renyi-DP representation; "
                                        f"available routes: {self.routes}")
        with np.errstate(over="ignore"):
            val = np.max(np.asarray(self._rdp(a), dtype=float), axis=0)
        val = np.where(np.isnan(val), np.inf, np.maximum(val, 0.0))
        return float(val) if val.ndim == 0 else val

    def _rdp_curve(self, alpha: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            val = np.max(np.asarray(self._rdp(np.asarray(alpha, dtype=float)), dtype=float), axis=0)
        return np.where(np.isnan(val), np.inf, val)

    # ----- epsilon and delta ------------------------------------------------------
    def epsilon(self, delta: float, via: str = "auto", tol: float | None = None) -> float:
        """Certified upper bound on the smallest eps such that the mechanism is (eps, delta)-DP.

        ``delta`` lies in [MIN_DELTA, 1) (MIN_DELTA = 1e-300). ``via``: "auto" (the tightest route, to within ``tol``), "exact" (closed
        form), "pld" (FFT accountant), "phi" (characteristic-function
        accountant, upper bounds only), "rdp" (RDP conversion). ``tol``: relative
        accuracy of the PLD route (default 1e-3: within 0.1% of the truth).
        """
        d = check.real("delta", delta, low=MIN_DELTA, high=1.0, high_open=True)
        t = self._tol(tol)
        route = self._route(via)
        if route == "auto":
            return self._auto_epsilon(d, t)[1]
        return self._epsilon_by(route, d, t)[1]

    def epsilon_bounds(self, delta: float, tol: float | None = None) -> tuple[float, float]:
        """(lower, upper) with lower <= the true eps(delta) <= upper."""
        d = check.real("delta", delta, low=MIN_DELTA, high=1.0, high_open=True)
        return self._auto_epsilon(d, self._tol(tol))

    def delta(self, epsilon: Any, via: str = "auto", tol: float | None = None) -> Any:
        """Certified upper bound on delta(eps), the smallest delta with (eps, delta)-DP.

        ``epsilon`` may be an array (one accountant run serves all of it).
        """
        e = check.real_array("epsilon", epsilon, low=0.0)
        t = self._tol(tol)
        route = self._route(via)
        val = self._auto_delta(e, t)[1] if route == "auto" else self._delta_by(route, e, t)[1]
        return _public_delta(val)

    def delta_bounds(self, epsilon: Any, tol: float | None = None) -> tuple[Any, Any]:
        """(lower, upper) with lower <= the true delta(eps) <= upper."""
        e = check.real_array("epsilon", epsilon, low=0.0)
        lo, up = self._auto_delta(e, self._tol(tol))
        return _public_delta(lo), _public_delta(up)

    def _auto_epsilon(self, delta: float, tol: float) -> tuple[float, float]:
        """Tightest certified bounds: the closed form if there is one; else the PLD when it
        is within ``tol`` (an RDP bound lies above the truth, so it cannot then be tighter
        by more than tol); else the best of the PLD and RDP routes."""
        if "exact" in self.routes:
            return self._epsilon_by("exact", delta, tol)
        results = []
        if "pld" in self.routes:
            lo, up = self._epsilon_by("pld", delta, tol)
            if up - lo <= tol * up:
                return lo, up
            results.append((lo, up))
        if "rdp" in self.routes:
            results.append(self._epsilon_by("rdp", delta, tol))
        return max(r[0] for r in results), min(r[1] for r in results)

    def _auto_delta(self, eps: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`_auto_epsilon`, for delta at an array of eps."""
        if "exact" in self.routes:
            return self._delta_by("exact", eps, tol)
        if "pld" not in self.routes:
            return self._delta_by("rdp", eps, tol)
        # The same query gets the same answer, whatever was asked in between (later
        # queries can refine the PLD and so change which points need the RDP bound).
        key = ("delta", eps.shape, eps.tobytes(), tol)
        if key not in self._cache:
            self._cache[key] = self._pld_delta_with_rdp(eps, tol)
        lo, up = self._cache[key]
        return lo.copy(), up.copy()

    def _pld_delta_with_rdp(self, eps: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        """PLD bounds on delta, with the RDP bound taken where they are not within tol."""
        lo, up = (np.array(v, dtype=float) for v in self._delta_by("pld", eps, tol))
        # Within tol on the eps scale (the accountant's target): the upper bound at eps is
        # below the lower bound at eps (1 - tol), or within tol of the lower bound.
        shrunk = np.asarray(self._accountant().best_delta(eps * (1.0 - tol))[0])
        loose = ~((up <= shrunk) | (up - lo <= tol * up))
        if np.any(loose) and "rdp" in self.routes:
            # The RDP bound can only help where the PLD bounds are not within tol (and it
            # costs an order optimisation per point, so it is asked only there).
            r_lo, r_up = self._delta_by("rdp", eps[loose], tol)
            lo[loose] = np.maximum(lo[loose], r_lo)
            up[loose] = np.minimum(up[loose], r_up)
        return lo, up

    @staticmethod
    def _tol(tol: float | None) -> float:
        if tol is None:
            return DEFAULT_TOL
        return check.real("tol", tol, low=1e-7, high=0.5)

    def _epsilon_by(self, route: str, delta: float, tol: float) -> tuple[float, float]:
        key = ("eps", route, delta, tol)
        if key in self._cache:
            return self._cache[key]
        if route == "exact":
            mu = self._gdp_mu()
            assert mu is not None

            def up_fn(e: float) -> float:
                return float(gaussian_delta(mu, e)) * (1 + _EXACT_REL)

            def low_fn(e: float) -> float:
                return float(gaussian_delta(mu, e)) * (1 - _EXACT_REL)

            guess = mu * mu / 2 + mu * math.sqrt(2 * math.log(1 / delta))
            res = (epsilon_from_profile(low_fn, delta, guess, upper=False),
                   epsilon_from_profile(up_fn, delta, guess, upper=True))
        elif route == "pld":
            acc = self._accountant()
            res = acc.epsilon(delta, acc.eps_scale(delta), tol)
        elif route == "phi":
            res = (self._epsilon_lower(delta), self._phi().epsilon(delta, tol))
        else:
            res = (self._epsilon_lower(delta), rdp_to_epsilon(self._rdp_curve, delta))
        self._cache[key] = res
        return res

    def _delta_by(self, route: str, eps: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
        if route == "exact":
            mu = self._gdp_mu()
            assert mu is not None
            val = gaussian_delta(mu, eps)
            return val * (1 - _EXACT_REL), np.minimum(val * (1 + _EXACT_REL) + 1e-300, 1.0)
        if route == "pld":
            acc = self._accountant()
            return acc.delta(eps, acc.eps_scale(1e-6), tol)
        if route == "phi":
            return np.zeros(eps.shape), self._phi().delta(eps, tol)
        return np.zeros(eps.shape), rdp_to_delta(self._rdp_curve, eps)

    # ----- f-DP ----------------------------------------------------------------------
    def tradeoff(self, fpr: Any, via: str = "auto") -> Any:
        """Lower bound on the tradeoff function f(fpr): the smallest type II error at type I error fpr.

        Exact for Gaussian mechanisms; from the PLD by duality (certified
        discretisation) otherwise; "rdp" converts the RDP curve for comparison.
        """
        a = check.real_array("fpr", fpr, low=0.0, high=1.0)
        route = self._route(via)
        if route == "auto":
            route = next(r for r in ("exact", "pld", "rdp") if r in self.routes)
        if route == "exact":
            mu = self._gdp_mu()
            assert mu is not None
            val = special.ndtr(special.ndtri(1.0 - a) - mu) - 1e-15
        elif route == "pld":
            acc = self._accountant()
            val = acc.tradeoff(a, acc.eps_scale(1e-6))
        elif route == "phi":
            val = self._phi().tradeoff(a)
        else:
            # Up to where the RDP profile is negligible, so that small fpr are covered too.
            top = rdp_to_epsilon(self._rdp_curve, 1e-15)
            top = max(top, 1.0) if np.isfinite(top) else 10.0 ** 2.5
            eps_grid = np.concatenate(([0.0], np.geomspace(1e-3, top, 300)))
            val = tradeoff_from_profile(lambda e: rdp_to_delta(self._rdp_curve, e, polish=False),
                                        a, eps_grid)
        val = np.clip(val, 0.0, 1.0 - a)
        return float(val) if np.ndim(val) == 0 else val


class Transformer(ABC):
    """A callable that maps mechanisms to a new mechanism, never changing its inputs."""

    @abstractmethod
    def __call__(self, *args: Any, **kwargs: Any) -> Mechanism:
        """Return the transformed mechanism."""


class Calibrator(ABC):
    """Searches one parameter of a mechanism family for a target privacy budget."""

    @abstractmethod
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Return the calibrated parameter or mechanism."""
