"""The common part of the subsampled mechanisms and sampling transformers."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from autoacct import _validation as check
from autoacct.exactness import round_up
from autoacct.losses import GaussianLoss, PrivacyLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp, RdpFamily, Transformer
from autoacct.rdp_curves import rdp_of
from autoacct.subsampling.gaussian_rdp import sgm_rdp
from autoacct.subsampling.gaussian_rdp_family import family_log_moment
from autoacct.subsampling.numerics import UNIT_ROUNDOFF, log1p_q_expm1_up

#: Integer orders up to which the general subsampled RDP bounds are tabulated;
#: above it the joint-convexity bound log(1 + q (e^{(a-1) eps(a)} - 1)) / (a - 1) is used.
RDP_TABLE_MAX = 1024
#: Binomial tail mass below which draws of the differing record are no longer enumerated
#: (the rest is counted as total disclosure).
DRAW_TAIL = 1e-30
#: Largest mu = 1/sigma of a Gaussian base a sampler takes (its noise multiplier at least 1e-20).
MAX_MU = 1e20


def require_mechanism(mechanism: Any) -> Mechanism:
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    return mechanism


def _protects_groups(m: Mechanism) -> bool:
    """Whether ``m`` is a group-privacy mechanism (:class:`~autoacct.zoo.GroupMechanism`) or
    composes one."""
    # (imported here: the zoo's transformers import the subsampling package)
    from autoacct.zoo.transformers import ComposedMechanism, GroupMechanism
    if isinstance(m, GroupMechanism):
        return True
    return isinstance(m, ComposedMechanism) and any(_protects_groups(c) for c in m.children)


def single_symmetric_loss(base: Mechanism, sampler: str) -> PrivacyLoss | None:
    """The loss law of the base's one symmetric dominating pair; None if it has no PLD.

    A mu-GDP base gives the Gaussian law (also for compositions of Gaussians).
    Raises ValueError for several parts or an asymmetric part.
    """
    mu = base.exact_gdp_mu()
    if mu is not None:
        return GaussianLoss(mu)
    parts = base.loss_parts()
    if parts is None:
        return None
    if len(parts) == 1 and parts[0][2] == 1 and parts[0][0].key == parts[0][1].key:
        return parts[0][0]
    raise ValueError(
        f"mechanism {base.name!r} is not described by a single symmetric dominating pair "
        "(it is a composition, or its two directions differ), so "
        f"{sampler} cannot subsample it as a whole; subsample each mechanism and then compose: "
        f"Composition()([{sampler}(...)(m) for m in mechanisms], counts)")


def sampler_params(base: Mechanism, prefix: str, own: Mapping[str, float]) -> dict[str, float]:
    """The sampler's own parameters followed by the base's; a clashing key gets the base's name."""
    out: dict[str, float] = {}
    for key, val in own.items():
        full = f"{prefix}.{key}"
        if full in base.params:
            full = f"{prefix}({base.name}).{key}"
        out[full] = val
    out.update(base.params)
    return out


def convexity_rdp(base_eps: np.ndarray, q: float, alpha: np.ndarray) -> np.ndarray:
    """log(1 + q (e^{(a-1) eps(a)} - 1)) / (a - 1): joint convexity of int p^a r^(1-a).

    Each subsampled pair is a q-mixture of a base pair with a pair of equal
    distributions, so its log-moment is at most this.
    """
    k = (alpha - 1.0) * base_eps
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        big = k > 1.0
        log_em1 = np.where(big, k + np.log1p(-np.exp(-np.where(big, k, 1.0))),
                           np.log(np.expm1(np.where(big, 1.0, np.maximum(k, 0.0)))))
        val = np.logaddexp(0.0, math.log(q) + log_em1) / (alpha - 1.0)
    val = np.where(k <= 0.0, 0.0, val)
    return np.where(np.isinf(k), np.inf, val)


class SubsampledRdp:
    """Upper bounds on the Renyi DP of a subsampled mechanism from its base curve.

    ``bound(curve, q, orders)`` (the theorem of the scheme's module, e.g.
    :func:`autoacct.subsampling.poisson.poisson_rdp_bound`) is evaluated once at the integer
    orders 2..``RDP_TABLE_MAX``; fractional orders interpolate the log-moments
    K(n) = (n-1) eps(n) (convex in the order, K(1) = 0), and higher orders use the
    joint-convexity bound. The minimum with the joint-convexity bound is taken
    everywhere; every value is rounded up.
    """

    def __init__(self, curve: Callable[[np.ndarray], np.ndarray], q: float,
                 bound: Callable[..., np.ndarray]) -> None:
        self._curve = curve
        self._q = q
        self._bound = bound
        self._table: np.ndarray | None = None

    def _log_moments(self) -> np.ndarray:
        if self._table is None:
            orders = np.arange(2.0, RDP_TABLE_MAX + 1.0)
            eps = np.asarray(self._bound(self._curve, self._q, orders), dtype=float)
            self._table = np.concatenate(([0.0, 0.0], (orders - 1.0) * eps))
        return self._table

    def __call__(self, alpha: np.ndarray) -> np.ndarray:
        a = np.asarray(alpha, dtype=float)
        base_eps = np.asarray(self._curve(a), dtype=float)
        out = convexity_rdp(base_eps, self._q, a)
        inside = a <= RDP_TABLE_MAX
        if np.any(inside):
            table = self._log_moments()
            x = a[inside]
            n = np.minimum(np.floor(x).astype(int), RDP_TABLE_MAX - 1)
            frac = x - n
            with np.errstate(invalid="ignore"):
                k = (1.0 - frac) * table[n] + frac * table[n + 1]
                val = np.where(np.isfinite(k), k / (x - 1.0), np.inf)
            out[inside] = np.minimum(out[inside], val)
        return round_up(np.asarray(out, dtype=float))


def base_curve(base: Mechanism) -> Callable[[np.ndarray], np.ndarray]:
    """alpha -> the base's Renyi DP (larger order of its pair), >= 0, inf where undefined."""

    def curve(alpha: np.ndarray) -> np.ndarray:
        return np.maximum(rdp_of(base, np.asarray(alpha, dtype=float)), 0.0)

    return curve


# ----------------------------------------------------------------------------------
# mechanisms
# ----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False, repr=False)
class SubsampledMechanism(Mechanism, abstract=True):
    """Common part of the subsampled mechanisms: the base, the derived name and parameters.

    Parameters
    ----------
    base:
        The mechanism run on the sample.
    """

    #: The transformer's name, prefix of the mechanism's name and parameters.
    _SAMPLER = ""
    #: The relation the sampler works under (a base declared under the other is rejected).
    _RELATION = Neighboring.ADD_REMOVE

    base: Mechanism

    def __post_init__(self) -> None:
        base = require_mechanism(self.base)
        other = next(r for r in Neighboring if r is not self._RELATION)
        if base.neighboring is other:
            raise ValueError(f"mechanism {base.name!r} is declared under the {other.value} relation; "
                             f"{self._SAMPLER} needs a mechanism under {self._RELATION.value} (or a "
                             "base mechanism without a declared relation)")
        mu = base.exact_gdp_mu()
        if mu is not None and mu > MAX_MU:
            # Subsampled, the Gaussian's losses (about mu^2 / 2) overflowed the accountant's
            # moments and shifts past mu = 1e50 (sigma 1e-60, k = 10); at 1e20 every sampler answers.
            raise ValueError(f"mechanism {base.name!r} has noise multiplier 1/mu = {1.0 / mu:g}; a sampled "
                             f"Gaussian needs at least {1.0 / MAX_MU:g}")
        if _protects_groups(base):
            # A sampler draws records one by one: the g records of a group are not sampled
            # together, as the group's pair (one shift of g sensitivities) would have them. At
            # q = 0.01 that pair gave PoissonSubsample(0.01)(Group(2)(Gaussian(1))) a lower end
            # of 3.03 for eps(1e-5), where one record's is at most 0.20 and a group's of two
            # records, each sampled on its own, 0.47 (user-level accounting).
            raise ValueError(f"mechanism {base.name!r} protects groups of records; {self._SAMPLER} samples "
                             "records one by one, which the group's pair does not describe (for groups "
                             "of records each sampled independently, use user-level accounting: "
                             "dpsgd(..., examples_per_user=g))")
        self._set(name=self.name or f"{self._SAMPLER}({base.name})", neighboring=self._RELATION)
        super().__post_init__()

    @property
    def params(self) -> Mapping[str, Any]:
        own = {f.name: getattr(self, f.name) for f in fields(self)
               if f.init and f.name not in ("base", "name", "neighboring")}
        return MappingProxyType(sampler_params(self.base, self._SAMPLER, own))

    def _cached_rdp(self, compute: Callable[[np.ndarray], np.ndarray]) -> PairRdp:
        """``compute`` as a pair curve (both orders equal), cached per array of orders."""
        def curve(alpha: np.ndarray) -> np.ndarray:
            a = np.asarray(alpha, dtype=float)

            def both() -> np.ndarray:
                v = np.asarray(compute(a), dtype=float).reshape(a.shape)
                return np.stack([v, v])
            return self.cached(("rdp", a.shape, a.tobytes()), both)
        return curve


@dataclass(frozen=True, eq=False, repr=False)
class RateSubsampledMechanism(SubsampledMechanism, abstract=True):
    """Common part of the mechanisms subsampled at a rate q: checks, loss law, q = 1, RDP.

    Subclasses set the transformer's name, the neighbouring relation they work
    under, the RDP bound for general bases, and the pairs of the subsampled loss.
    """

    _RDP_BOUND: ClassVar[Callable[..., np.ndarray]]
    #: Whether a Gaussian base has its own exact RDP (then the general bound is not needed for it).
    _EXACT_GAUSSIAN_RDP = False

    q: float

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(q=check.real("q", self.q, low=0.0, high=1.0))
        self._loss()  # a base that is not a single symmetric pair is rejected here

    def _loss(self) -> PrivacyLoss | None:
        if self.q == 1.0:
            return None
        return self.cached(("base_loss",), lambda: single_symmetric_loss(self.base, self._SAMPLER))

    def exact_gdp_mu(self) -> float | None:
        # q = 0: the record is never used, the output's law does not depend on it (0-GDP).
        if self.q == 0.0:
            return 0.0
        return self.base.exact_gdp_mu() if self.q == 1.0 else None

    def dp_guarantee(self) -> tuple[float, float] | None:
        """Amplification by subsampling of the base's (eps, delta) (Balle, Barthe and Gaboardi
        2018, Theorems 8 and 9: Poisson under add/remove, without replacement under
        replace-one): (log(1 + q (e^eps - 1)), q delta)."""
        if self.q == 0.0:
            return 0.0, 0.0
        g = self.base.dp_guarantee()
        if g is None:
            return None
        eps = log1p_q_expm1_up(self.q, g[0]) if np.isfinite(g[0]) else math.inf
        slack = 1.0 + 8.0 * UNIT_ROUNDOFF
        return eps * slack, self.q * g[1] * slack

    def loss_parts(self) -> list[LossPart] | None:
        if self.q == 0.0:
            return []  # the record is never used: no pair to compose
        if self.q == 1.0:
            return self.base.loss_parts()
        loss = self._loss()
        if loss is None:
            return None
        return self._subsampled_parts(loss)

    def _subsampled_parts(self, loss: PrivacyLoss) -> list[LossPart]:
        raise NotImplementedError

    def rdp_curve(self) -> PairRdp | None:
        if self.q == 0.0:
            return lambda alpha: np.zeros((2,) + np.shape(alpha))
        if self.q == 1.0:
            return self.base.rdp_curve()
        mu = self.base.exact_gdp_mu()
        if mu is not None and self._EXACT_GAUSSIAN_RDP:
            sigma = 1.0 / mu
            return self._cached_rdp(lambda a: sgm_rdp(self.q, sigma, a))
        if mu is None and self.base.rdp_curve() is None:
            return None
        general = self.cached(("general_rdp",), lambda: SubsampledRdp(
            base_curve(self.base), self.q, self._rdp_bound()))
        return self._cached_rdp(general)

    def rdp_family(self) -> tuple[RdpFamily, tuple[float, ...]] | None:
        # A Gaussian base sampled at 0 < q < 1 by a scheme whose curve is sgm_rdp's: the family
        # of (q, sigma), evaluated at integer orders as sgm_rdp does (gaussian_rdp_family).
        mu = self.base.exact_gdp_mu()
        if not self._EXACT_GAUSSIAN_RDP or mu is None or not 0.0 < self.q < 1.0:
            return None
        return family_log_moment, (self.q, 1.0 / mu)

    def _rdp_bound(self) -> Callable[..., np.ndarray]:
        """The scheme's bound at integer orders, ``bound(curve, q, orders)``; the class's
        ``_RDP_BOUND`` unless the scheme can use the base's pair."""
        return type(self)._RDP_BOUND


class Sampler(Transformer):
    """Base of the sampling transformers: a frozen dataclass of the scheme's parameters.

    A subclass is a ``@dataclass(frozen=True)`` whose fields are the parameters
    its mechanism takes after the base (validated in ``__post_init__``, so that
    a bad value is reported when the transformer is built), and names that
    mechanism in ``mechanism_type``. Calling it runs the mechanism on the sample:
    ``Sampler(...)(m) == mechanism_type(m, *fields)``; ``m`` itself is never changed.
    """

    mechanism_type: ClassVar[type[SubsampledMechanism]]

    def _set(self, **values: Any) -> None:
        """Store validated field values; for ``__post_init__`` only (the dataclass is frozen)."""
        check.store(self, **values)

    def __call__(self, mechanism: Mechanism) -> Mechanism:
        return self.mechanism_type(require_mechanism(mechanism),
                                   *(getattr(self, f.name) for f in fields(self)))  # type: ignore[arg-type]
