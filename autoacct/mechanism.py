"""Mechanism and Transformer bases, and the neighbouring-relation enum.

A :class:`Mechanism` is an immutable value (a frozen dataclass whose fields are
its parameters) describing the privacy guarantee of a randomised algorithm
through the representations it knows exactly; every query (epsilon, delta,
bounds, tradeoff curves, Renyi DP) is derived from them by the routes of
:mod:`autoacct.routes`.

Every public number is a certified bound: epsilon and delta are upper bounds
on the truth, tradeoff values and ``lower`` ends are lower bounds.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple, TypeVar

import numpy as np

from autoacct import _validation as check
from autoacct import routes
from autoacct.errors import RouteUnavailableError
from autoacct.exactness import MACHINE_EPSILON, ExactFloat, outward, public_delta, round_up
from autoacct.losses import GaussianLoss, PrivacyLoss
from autoacct.rdp_curves import rdp_of

#: Smallest delta a query accepts: below it (subnormal floats) profiles lose their precision.
MIN_DELTA = routes.MIN_DELTA
ROUTES = routes.ROUTE_NAMES

#: Orders alpha -> Renyi DP of both orders of a pair, shape (2,) + alpha.shape.
PairRdp = Callable[[np.ndarray], np.ndarray]
#: ``log_moment(rows, counts, n)``: see :meth:`Mechanism.rdp_family`.
RdpFamily = Callable[[np.ndarray, np.ndarray, int], float]

_T = TypeVar("_T")
#: Ulps by which an ``exact_gdp_mu`` may miss the pair's mu (see ``Mechanism.rdp_curve``).
_GDP_MU_ULPS = 4.0
_HOOKS = ("exact_gdp_mu", "loss_parts", "rdp_curve", "dp_guarantee")


class Neighboring(enum.Enum):
    """Neighbouring relation between datasets D ~ D'.

    ADD_REMOVE: D' is D with one record added or removed. REPLACE_ONE: D' is D
    with one record replaced (same size).
    """

    ADD_REMOVE = "add/remove"
    REPLACE_ONE = "replace-one"


class LossPart(NamedTuple):
    """A dominating pair (P, Q) run ``times`` times, given by its two privacy-loss laws.

    ``forward`` is the law of log(dP/dQ) under P (the removal direction of the
    pair), ``backward`` that of log(dQ/dP) under Q (the addition direction).
    """

    forward: PrivacyLoss
    backward: PrivacyLoss
    times: int


@dataclass(frozen=True, eq=False, repr=False)
class Mechanism:
    """Base class of all mechanisms: parameters as frozen dataclass fields, queries derived.

    Parameters
    ----------
    name:
        Provenance name of the mechanism (keyword-only; default: the class's
        ``default_name``). ``params`` keys are ``"<name>.<field>"``.
    neighboring:
        The neighbouring relation D ~ D' the guarantee refers to, or None when
        the guarantee holds for whichever relation the caller's sensitivity
        refers to (base mechanisms). Keyword-only.

    Subclassing
    -----------
    A mechanism is a ``@dataclass(frozen=True, eq=False, repr=False)`` subclass whose
    fields are its parameters. It validates them in ``__post_init__`` (call
    ``super().__post_init__()`` first), storing normalised values with
    :meth:`_set`, and defines at least one of three hooks. Each hook returns
    None when the mechanism cannot give that representation (a composition
    whose child lacks it, say); a class that overrides none of them is
    rejected when it is defined.

    ``exact_gdp_mu() -> float | None``
        mu when the mechanism is exactly mu-GDP: its tradeoff curve is that of
        the pair (N(mu, 1), N(0, 1)). Gives closed forms for every query, and
        by default the other two hooks (the Gaussian law and RDP alpha mu^2 / 2).
    ``loss_parts() -> list[LossPart] | None``
        Dominating pairs as privacy-loss laws (:mod:`autoacct.losses`), each
        with a count; the mechanism is dominated by their composition. Gives
        the FFT (``"pld"``) and characteristic-function (``"phi"``) routes.
        Lower bounds are certified only for laws flagged ``tight`` (attained
        by a mechanism of the class).
    ``rdp_curve() -> PairRdp | None``
        A function of an array of orders alpha > 1 returning Renyi DP of both
        orders of the pair, shape (2,) + alpha.shape (+inf where infinite).
        Gives the ``"rdp"`` route.
    ``dp_guarantee() -> tuple[float, float] | None``
        (eps0, delta0) such that the mechanism is (eps0, delta0)-DP under its
        relation: for every eps, delta(eps) is at most the profile of the leaky
        randomized response with these parameters. Gives the ``"dp"`` route,
        which the auto policy always consults, so that no answer is above a
        pure- or approximate-DP bound the library itself certifies.

    Optional:

    ``epsilon_lower(delta) -> float | None``
        A certified lower bound on eps(delta) for mechanisms whose routes give
        none (no tight loss law): the phi and RDP routes report it as their
        lower end. None (the default) means 0.
    ``attained_parts() -> list[LossPart] | None``
        For a mechanism whose ``loss_parts`` are attained by one run but whose
        composition need not be (sampling without replacement: Lebeda, Regehr,
        Kamath and Steinke 2024): pairs, as loss laws with counts, that one fixed
        pair of neighbouring datasets attains at every run. A composition of
        several runs marks the mechanism's own laws not ``tight`` and reads its
        lower ends off the composition of these (where their laws are ``tight``).
        None (the default): ``loss_parts`` serve for both.
    ``brackets_own_pair() -> bool``
        Whether ``loss_parts`` and ``attained_parts`` bound one and the same pair
        (random allocation's epoch): a bracket between them wider than ``tol`` is
        then reported (AccuracyWarning). False (the default).
    ``params`` (property)
        Override only when a parameter is not a field: by default it lists
        every init field other than ``name`` and ``neighboring``, sequences as
        ``field[i]``, booleans left out.

    The base derives everything else and caches it per instance
    (:meth:`cached`); overriding a query method is never needed.
    """

    #: Name used when none is given.
    default_name = ""

    name: str = field(default="", kw_only=True)
    neighboring: Neighboring | None = field(default=None, kw_only=True)
    _cache: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False)

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if abstract:
            return
        if not any(getattr(cls, h) is not getattr(Mechanism, h) for h in _HOOKS):
            raise TypeError(f"{cls.__name__} defines none of {', '.join(_HOOKS)}: "
                            "a mechanism must give at least one representation")

    def __post_init__(self) -> None:
        if "__dataclass_fields__" not in type(self).__dict__:
            raise TypeError(f"{type(self).__name__} must be a @dataclass(frozen=True, eq=False, repr=False)")
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        if not self.name:
            self._set(name=type(self).default_name or type(self).__name__)
        if self.neighboring is not None and not isinstance(self.neighboring, Neighboring):
            raise TypeError(f"neighboring must be a Neighboring or None, got {self.neighboring!r}")

    def _set(self, **values: Any) -> None:
        """Store validated, normalised field values; for ``__post_init__`` only."""
        check.store(self, **values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"<{self.name}: {inner}>"

    def __getstate__(self) -> dict[str, Any]:
        """The fields without the cache: a pickled mechanism is its parameters (the cache may
        hold closures, and its answers are recomputed identically from the parameters)."""
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    def cached(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """``make()``, computed once per mechanism and ``key``.

        A mechanism is immutable, so a value derived from it cannot go stale;
        keys are tuples whose first entry names what is cached (a route's
        accountant, an answer with its query arguments, a hook's expensive
        intermediate).
        """
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    # ----- provenance -------------------------------------------------------------
    @property
    def params(self) -> Mapping[str, Any]:
        """Every parameter of the mechanism and of its children (read-only)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if not f.init or f.name in ("name", "neighboring"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, bool):
                continue
            if isinstance(value, (tuple, list)):
                out.update({f"{self.name}.{f.name}[{i}]": v for i, v in enumerate(value)})
            else:
                out[f"{self.name}.{f.name}"] = value
        return MappingProxyType(out)

    # ----- hooks (subclasses override at least one) ------------------------------
    def exact_gdp_mu(self) -> float | None:
        """mu when the mechanism is exactly mu-GDP, else None."""
        return None

    def loss_parts(self) -> list[LossPart] | None:
        """Dominating pairs as privacy-loss laws with counts, or None.

        By default the Gaussian pair of a mu-GDP mechanism (the law of L = mu Z + mu^2 / 2).
        """
        mu = self.exact_gdp_mu()
        if mu is None:
            return None
        loss = GaussianLoss(mu)
        return [LossPart(loss, loss, 1)]

    def kept_loss_parts(self) -> list[LossPart] | None:
        """:meth:`loss_parts`, made once per mechanism (a copy of the list): the routes ask for
        it several times a query, and each call builds every part's laws afresh, losing
        what the laws derive and keep (six times 2,000 laws for 1,000 distinct steps)."""
        parts = self.cached(("loss-parts",), self.loss_parts)
        return None if parts is None else list(parts)

    def rdp_curve(self) -> PairRdp | None:
        """Renyi DP of both orders of the pair as a function of the orders, or None.

        By default alpha mu^2 / 2 for a mu-GDP mechanism (the Gaussian pair's divergence),
        rounded up: formed as ((alpha / 2) mu) mu (two roundings; the first product is at most
        the answer for mu >= 1 and below alpha / 2 for mu < 1, so nothing overflows unless the
        answer does), for a mu within _GDP_MU_ULPS ulps of the pair's own (a noise multiplier's
        reciprocal is off by half an ulp, NoisyGD's root of a sum of squares by 1.25, a group's
        g mu by half an ulp more). It was unrounded: NoisyGD's value fell below
        alpha mu^2 / 2 in 151 of 1000 random cases.
        """
        mu = self.exact_gdp_mu()
        if mu is None:
            return None

        def curve(alpha: np.ndarray) -> np.ndarray:
            with np.errstate(over="ignore"):
                v = np.asarray(alpha, dtype=float) * 0.5 * mu * mu
            v = round_up(v, (2.0 * _GDP_MU_ULPS + 2.0) * MACHINE_EPSILON) if mu > 0.0 else v
            return np.stack([v, v])
        return curve

    def dp_guarantee(self) -> tuple[float, float] | None:
        """(eps0, delta0) with the mechanism (eps0, delta0)-DP under its relation, or None."""
        return None

    def epsilon_lower(self, delta: float) -> float | None:
        """A certified lower bound on eps(delta) where no route gives one, or None (meaning 0)."""
        return None

    def delta_lower(self, eps: np.ndarray) -> np.ndarray | None:
        """Certified lower bounds on delta at the array ``eps`` where no route gives one, or
        None (meaning 0): the counterpart of :meth:`epsilon_lower`."""
        return None

    def attained_parts(self) -> list[LossPart] | None:
        """Pairs attained at every run by one fixed pair of datasets, where ``loss_parts`` are
        attained by one run only; None when ``loss_parts`` serve for lower bounds too."""
        return None

    def brackets_own_pair(self) -> bool:
        """Whether ``loss_parts`` dominate and ``attained_parts`` are dominated by one and the
        same pair, the one the mechanism attains at every run (random allocation's epoch: both
        are certified approximations of its pair), so that the gap between the ends they give
        is the accountant's error, and a warning where it exceeds tol; False (the default)
        where the gap may be the one between a dominating pair and the pairs attained
        (sampling without replacement), which no accuracy closes."""
        return False

    def snap(self, ratio: float, up: bool) -> tuple[Hashable, Callable[[], Mechanism]] | None:
        """This mechanism with its parameters moved onto the geometric grid ratio^Z (ratio > 1):
        ``(key, make)``, where ``make()`` builds the moved mechanism and ``key`` tells equal
        ones apart without building them. With ``up`` the moved mechanism dominates this one
        (this one's dominating pairs are post-processings of its pairs, in each direction, so
        every upper bound on it holds here, also under composition); without ``up`` this one
        dominates it, and attains what it attains (every lower bound on it holds here). None
        (the default) where no such move is known. A composition of thousands of distinct
        steps is bounded through a few hundred moved ones (``ComposedMechanism.grouped``)."""
        return None

    def grouped(self, up: bool, most: int) -> tuple[Mechanism, float] | None:
        """A mechanism with at most ``most`` distinct parts that dominates this one (``up``) or
        that this one dominates and attains (not ``up``), with the ratio of the parameter grid
        it was made on; None (the default) where there is none. Compositions of many distinct
        steps have one (``Mechanism.snap``; :mod:`autoacct.zoo.grouping`)."""
        return None

    def rdp_family(self) -> tuple[RdpFamily, tuple[float, ...]] | None:
        """This mechanism as a member of a family whose summed Renyi DP a composition of many
        members computes at once: ``(log_moment, row)``, where ``log_moment(rows, counts, n)``
        is an upper bound on sum_i counts_i (n - 1) D_n over members given by their ``rows``
        (D_n the Renyi DP of the member's pair at the integer order n >= 2, both orders of the
        pair), at n = 1 on sum_i counts_i D_1 (the KL divergence, the log-moment's slope at 1),
        and ``row`` is this member's; None (the default) where there is no such family.
        See ``ComposedMechanism.rdp_curve``."""
        return None

    #: Whether :meth:`dominating` may answer this mechanism alone more tightly than its own
    #: routes do: False where it never does (a Poisson step's base, the rate-1 pair), so that
    #: such a mechanism, or a composition of such parts only, does not pay for the dominating
    #: one's answer on every query (about 1 ms a DP-SGD query, 8% of the light ones).
    dominating_alone: ClassVar[bool] = True

    def dominating(self) -> Mechanism | None:
        """A mechanism that dominates this one: at every e^eps, both directions' hockey-stick
        divergences of this one's pairs are at most those of its pairs, under the same
        neighbouring relation, so that its upper bounds on eps and delta, and its tradeoff
        curve's lower bound, hold for this one. The auto policy takes the better of both.
        None by default (balls-in-bins epochs: their base Gaussian)."""
        return None

    def dominated(self) -> Mechanism | None:
        """A post-processing of this mechanism (so every lower bound of it, also under
        composition, holds for this one), for the lower ends of compositions where this
        mechanism's own are not composed (it has no PLD); None by default."""
        return None

    def dominated_gaussian(self) -> Mechanism | None:
        """An exactly GDP post-processing of this mechanism, as :meth:`dominated`, attained by
        the same pair of datasets: compositions take its closed form's lower ends, which cost
        nothing and can be the larger ones where composing the other pairs is capped (2^39
        balls-in-bins epochs: their summed outputs); None by default."""
        return None

    # ----- capabilities -----------------------------------------------------------
    @property
    def routes(self) -> tuple[str, ...]:
        """The routes this mechanism can answer by, among "exact", "pld", "phi" and "rdp"."""
        return self.cached(("routes",), lambda: routes.available(self))

    # ----- Renyi DP ---------------------------------------------------------------
    def rdp(self, alpha: Any) -> Any:
        """Renyi-DP epsilon at order(s) ``alpha`` in [1, inf]: the larger of the two orders of the pair.

        Array in, array out; a scalar gives a float. The value is an upper bound
        on sup_{D ~ D'} D_alpha(M(D) || M(D')), +inf where that is infinite.
        Order 1 is the KL divergence, order inf the max divergence (the pure-DP
        epsilon where the mechanism has one).
        """
        a = check.real_array("alpha", alpha, low=1.0, allow_inf=True)
        if "rdp" not in self.routes:
            raise RouteUnavailableError(f"{self.name} has no Renyi-DP representation; "
                                        f"available routes: {self.routes}")
        val = routes.bounded("the Renyi DP", lambda: rdp_of(self, a), np.full(a.shape, np.inf))
        return outward(np.maximum(val, 0.0), upper=True)

    # ----- epsilon and delta ------------------------------------------------------
    def epsilon(self, delta: Any, via: str = "auto", tol: float | None = None) -> Any:
        """Certified upper bound on the smallest eps such that the mechanism is (eps, delta)-DP.

        ``delta`` lies in [MIN_DELTA, 1) (MIN_DELTA = 1e-300); an array of deltas gives
        an array of answers (a float for a scalar). ``via``: "auto"
        (the tightest route, to within ``tol``), "exact" (closed form), "pld"
        (FFT accountant), "phi" (characteristic-function accountant, upper
        bounds only), "rdp" (RDP conversion). ``tol``: relative accuracy of the
        PLD route (default 1e-3: within 0.1% of the truth).
        """
        return self._epsilon_pairs(delta, via, tol)[1]

    def epsilon_bounds(self, delta: Any, tol: float | None = None) -> tuple[Any, Any]:
        """(lower, upper) with lower <= the true eps(delta) <= upper.

        ``delta`` may be an array: then both ends are arrays of its shape.
        """
        return self._epsilon_pairs(delta, "auto", tol)

    def _epsilon_pairs(self, delta: Any, via: str, tol: float | None) -> tuple[Any, Any]:
        """Outward-rounded (lower, upper) eps at a delta or an array of deltas, one query each."""
        d = check.real_array("delta", delta, low=MIN_DELTA, high=1.0, high_open=True)
        t = routes.tolerance(tol)
        pairs = [routes.epsilon_bounds(self, float(x), via, t) for x in d.ravel()]
        lo = np.array([p[0] for p in pairs]).reshape(d.shape)
        up = np.array([p[1] for p in pairs]).reshape(d.shape)
        exact = np.array([isinstance(p[1], ExactFloat) for p in pairs]).reshape(d.shape)
        return outward(lo, upper=False), outward(up, upper=True, exact=exact)

    def delta(self, epsilon: Any, via: str = "auto", tol: float | None = None) -> Any:
        """Certified upper bound on delta(eps), the smallest delta with (eps, delta)-DP.

        ``epsilon`` may be an array (one accountant run serves all of it).
        """
        e = check.real_array("epsilon", epsilon, low=0.0)
        return public_delta(routes.delta_bounds(self, e, via, routes.tolerance(tol))[1])

    def delta_bounds(self, epsilon: Any, tol: float | None = None) -> tuple[Any, Any]:
        """(lower, upper) with lower <= the true delta(eps) <= upper."""
        e = check.real_array("epsilon", epsilon, low=0.0)
        lo, up = routes.delta_bounds(self, e, "auto", routes.tolerance(tol))
        return public_delta(lo, upper=False), public_delta(up)

    # ----- f-DP ----------------------------------------------------------------------
    def tradeoff(self, fpr: Any, via: str = "auto") -> Any:
        """Lower bound on the tradeoff function f(fpr): the smallest type II error at type I error fpr.

        Exact for Gaussian mechanisms; from the PLD by duality (certified
        discretisation) otherwise; "rdp" converts the RDP curve for comparison.
        """
        a = check.real_array("fpr", fpr, low=0.0, high=1.0)
        return outward(np.clip(routes.tradeoff(self, a, via), 0.0, 1.0 - a), upper=False)

    # ----- attack risk (autoacct.risk) ------------------------------------------------
    def tpr(self, fpr: Any, via: str = "auto") -> Any:
        """Upper bound on every membership-inference attack's true-positive rate at false-positive
        rate ``fpr`` in [0, 1]: 1 - ``tradeoff(fpr)``, rounded up, in [fpr, 1]. Array in, array out."""
        from autoacct import risk
        return risk.tpr(self, fpr, via)

    def advantage(self, tol: float | None = None) -> float:
        """Upper bound on the membership advantage max over fpr of (TPR - FPR): delta(0), the
        total variation distance between the pair."""
        from autoacct import risk
        return risk.advantage(self, tol)

    def gdp_mu(self, tol: float | None = None) -> tuple[float, float]:
        """(certified, estimate): the smallest mu with the mechanism certified mu-GDP (Dong, Roth
        and Su 2022), and the mu whose GDP profile meets its profile at delta 1e-5
        (see :func:`autoacct.risk.gdp_mu`)."""
        from autoacct import risk
        return risk.gdp_mu(self, tol)

    def pld(self, tol: float | None = None) -> Any:
        """(remove, add): the certified discrete PLDs (upper and lower) of the composed mechanism,
        as :class:`autoacct.risk.PrivacyLossDistribution` arrays (see :func:`autoacct.risk.pld`)."""
        from autoacct import risk
        return risk.pld(self, tol)



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
