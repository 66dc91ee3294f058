"""Subsampling transformers: run a mechanism on a random sample of the dataset.

``PoissonSubsample(q)(M)``, ``SampleWithoutReplacement(q)(M)`` and
``SampleWithReplacement(batch_size, dataset_size)(M)`` return new, immutable
mechanisms holding M; M itself is never changed.

The base mechanism M is described by one symmetric dominating pair (P, Q)
(a single PLD part whose two directions are equal, or an exact mu-GDP
guarantee, whose pair is (N(mu, 1), N(0, 1))). Its sensitivity refers to the
neighbouring relation of the sampler: add/remove for Poisson sampling,
replace-one for the fixed-size samplers. A composition of several different
mechanisms is not a single pair: subsample each mechanism, then compose.

Dominating pairs (q the probability that the differing record is sampled):

* Poisson, add/remove: removal ((1-q) Q + q P, Q), addition (Q, (1-q) Q + q P)
  (Zhu, Dong and Wang 2022; seed 000 section 6.1 for the Gaussian).
* Without replacement, replace-one: the symmetric pair whose privacy profile is
  H_{e^eps}(q P + (1-q) Q || Q) for eps >= 0 (and, the relation being
  symmetric, 1 - e^eps + e^eps times that at -eps for eps < 0). For eps >= 0
  this is Balle, Barthe and Gaboardi's (2018) advanced joint convexity with the
  coupling of the two samples (the bound of Zhu, Dong and Wang 2022,
  Proposition 30); for the Gaussian it is attained by datasets whose other
  records all equal the replacing one, so it cannot be improved. (Seed 000 section
  6.2's pair ((1-q) N(0, s^2) + q N(1, s^2), (1-q) N(0, s^2) + q N(-1, s^2)), for
  records of norm <= 1, is *not* a valid bound: the records x = +1, x' = -1
  with all other records at -1 give ((1-q) N(0, s^2) + q N(2, s^2), N(0, s^2)),
  and at q = 0.05, s = 0.8 these datasets have delta(1) = 1.5e-2 where the
  seed's pair has 2.4e-4.)
* With replacement, replace-one, Gaussian base: the differing record is drawn
  l ~ Binomial(batch_size, 1/dataset_size) times; the same argument with
  eta = P(l >= 1) bounds the profile by that of the Poisson removal pair with
  rate eta over the disjoint union of the pairs (N(l mu, 1), N(0, 1)) weighted by
  P(l | l >= 1), symmetrised as above.

Renyi DP: Mironov, Talwar and Zhang (2019) exactly for the Poisson-subsampled
Gaussian, Zhu and Wang (2019) for other Poisson-subsampled mechanisms, Wang,
Balle and Kasiviswanathan (2019) without replacement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from autoacct import _validation as check
from autoacct.losses import GaussianLoss, PrivacyLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp, Transformer
from autoacct.routes import rdp_of
from autoacct.subsampling.laws import MixtureLoss, PoissonAddLoss, PoissonRemoveLoss, SymmetrizedLoss
from autoacct.subsampling.rdp import poisson_rdp_bound, sgm_rdp, swor_rdp_bound

__all__ = ["PoissonSubsample", "PoissonSubsampledMechanism", "SampleWithReplacement",
           "SampleWithoutReplacement", "SampledWithReplacementMechanism",
           "SampledWithoutReplacementMechanism", "SubsampledMechanism"]

#: Integer orders up to which the general subsampled RDP bounds are tabulated;
#: above it the joint-convexity bound log(1 + q (e^{(a-1) eps(a)} - 1)) / (a - 1) is used.
_RDP_TABLE_MAX = 1024
#: Binomial tail mass below which draws of the differing record are no longer enumerated
#: (the rest is counted as total disclosure).
_DRAW_TAIL = 1e-30
_U = float(np.finfo(float).eps)


# ----------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------

def _require_mechanism(mechanism: Any) -> Mechanism:
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    return mechanism


def _single_symmetric_loss(base: Mechanism, sampler: str) -> PrivacyLoss | None:
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


def _params(base: Mechanism, prefix: str, own: Mapping[str, float]) -> dict[str, float]:
    """The sampler's own parameters followed by the base's; a clashing key gets the base's name."""
    out: dict[str, float] = {}
    for key, val in own.items():
        full = f"{prefix}.{key}"
        if full in base.params:
            full = f"{prefix}({base.name}).{key}"
        out[full] = val
    out.update(base.params)
    return out


def _round_up(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return np.nextafter(x + 4.0 * _U * np.abs(x), np.inf)


def _convexity_rdp(base_eps: np.ndarray, q: float, alpha: np.ndarray) -> np.ndarray:
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


class _SubsampledRdp:
    """Upper bounds on the Renyi DP of a subsampled mechanism from its base curve.

    ``bound(curve, q, orders)`` (one of the theorems of
    :mod:`autoacct.subsampling.rdp`) is evaluated once at the integer
    orders 2..``_RDP_TABLE_MAX``; fractional orders interpolate the log-moments
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
            orders = np.arange(2.0, _RDP_TABLE_MAX + 1.0)
            eps = np.asarray(self._bound(self._curve, self._q, orders), dtype=float)
            self._table = np.concatenate(([0.0, 0.0], (orders - 1.0) * eps))
        return self._table

    def __call__(self, alpha: np.ndarray) -> np.ndarray:
        a = np.asarray(alpha, dtype=float)
        base_eps = np.asarray(self._curve(a), dtype=float)
        out = _convexity_rdp(base_eps, self._q, a)
        inside = a <= _RDP_TABLE_MAX
        if np.any(inside):
            table = self._log_moments()
            x = a[inside]
            n = np.minimum(np.floor(x).astype(int), _RDP_TABLE_MAX - 1)
            frac = x - n
            with np.errstate(invalid="ignore"):
                k = (1.0 - frac) * table[n] + frac * table[n + 1]
                val = np.where(np.isfinite(k), k / (x - 1.0), np.inf)
            out[inside] = np.minimum(out[inside], val)
        return _round_up(out)


def _base_curve(base: Mechanism) -> Callable[[np.ndarray], np.ndarray]:
    """alpha -> the base's Renyi DP (larger order of its pair), >= 0, inf where undefined."""

    def curve(alpha: np.ndarray) -> np.ndarray:
        return np.maximum(rdp_of(base, np.asarray(alpha, dtype=float)), 0.0)

    return curve


# ----------------------------------------------------------------------------------
# mechanisms
# ----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
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
        base = _require_mechanism(self.base)
        other = next(r for r in Neighboring if r is not self._RELATION)
        if base.neighboring is other:
            raise ValueError(f"mechanism {base.name!r} is declared under the {other.value} relation; "
                             f"{self._SAMPLER} needs a mechanism under {self._RELATION.value} (or a "
                             "base mechanism without a declared relation)")
        self._set(name=self.name or f"{self._SAMPLER}({base.name})", neighboring=self._RELATION)
        super().__post_init__()

    @property
    def params(self) -> Mapping[str, Any]:
        own = {f.name: getattr(self, f.name) for f in fields(self)
               if f.init and f.name not in ("base", "name", "neighboring")}
        return MappingProxyType(_params(self.base, self._SAMPLER, own))

    def _cached_rdp(self, compute: Callable[[np.ndarray], np.ndarray]) -> PairRdp:
        """``compute`` as a pair curve (both orders equal), cached per array of orders."""
        def curve(alpha: np.ndarray) -> np.ndarray:
            a = np.asarray(alpha, dtype=float)

            def both() -> np.ndarray:
                v = np.asarray(compute(a), dtype=float).reshape(a.shape)
                return np.stack([v, v])
            return self.cached(("rdp", a.shape, a.tobytes()), both)
        return curve


@dataclass(frozen=True, eq=False)
class _RateSubsampledMechanism(SubsampledMechanism, abstract=True):
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
        self._set(q=check.real("q", self.q, low=0.0, high=1.0, low_open=True))
        self._loss()  # a base that is not a single symmetric pair is rejected here

    def _loss(self) -> PrivacyLoss | None:
        if self.q == 1.0:
            return None
        return self.cached(("base_loss",), lambda: _single_symmetric_loss(self.base, self._SAMPLER))

    def exact_gdp_mu(self) -> float | None:
        return self.base.exact_gdp_mu() if self.q == 1.0 else None

    def loss_parts(self) -> list[LossPart] | None:
        if self.q == 1.0:
            return self.base.loss_parts()
        loss = self._loss()
        if loss is None:
            return None
        return self._subsampled_parts(loss)

    def _subsampled_parts(self, loss: PrivacyLoss) -> list[LossPart]:
        raise NotImplementedError

    def rdp_curve(self) -> PairRdp | None:
        if self.q == 1.0:
            return self.base.rdp_curve()
        mu = self.base.exact_gdp_mu()
        if mu is not None and self._EXACT_GAUSSIAN_RDP:
            sigma = 1.0 / mu
            return self._cached_rdp(lambda a: sgm_rdp(self.q, sigma, a))
        if mu is None and self.base.rdp_curve() is None:
            return None
        general = self.cached(("general_rdp",), lambda: _SubsampledRdp(
            _base_curve(self.base), self.q, type(self)._RDP_BOUND))
        return self._cached_rdp(general)


@dataclass(frozen=True, eq=False)
class PoissonSubsampledMechanism(_RateSubsampledMechanism):
    """``base`` run on a Poisson sample: every record is kept independently with probability ``q``.

    Add/remove relation. Dominating pairs, for the base pair (P, Q): removal
    ((1-q) Q + q P, Q), addition (Q, (1-q) Q + q P). q = 1 is the base itself.
    A Gaussian base has the exact subsampled-Gaussian RDP (seed 002).

    Parameters
    ----------
    base:
        Mechanism given by one symmetric dominating pair under add/remove (or
        relation-agnostic), or by its Renyi DP only.
    q:
        Sampling probability, 0 < q <= 1.
    """

    _SAMPLER = "PoissonSubsample"
    _RELATION = Neighboring.ADD_REMOVE
    _RDP_BOUND = staticmethod(poisson_rdp_bound)
    _EXACT_GAUSSIAN_RDP = True

    def _subsampled_parts(self, loss: PrivacyLoss) -> list[LossPart]:
        return [LossPart(PoissonRemoveLoss(loss, self.q), PoissonAddLoss(loss, self.q), 1)]


@dataclass(frozen=True, eq=False)
class SampledWithoutReplacementMechanism(_RateSubsampledMechanism):
    """``base`` run on a uniformly random subset of fixed size q n of the n records.

    Replace-one relation. For the base's replace-one dominating pair (P, Q) the
    dominating pair is the symmetric pair with profile
    H_{e^eps}(q P + (1-q) Q || Q) at eps >= 0 (module docstring). q = 1 is the
    base itself.

    Parameters
    ----------
    base:
        Mechanism given by one symmetric dominating pair under replace-one (or
        relation-agnostic, its sensitivity then referring to replace-one), or by
        its Renyi DP only.
    q:
        Sampling ratio batch size / dataset size, 0 < q <= 1.
    """

    _SAMPLER = "SampleWithoutReplacement"
    _RELATION = Neighboring.REPLACE_ONE
    _RDP_BOUND = staticmethod(swor_rdp_bound)

    def _subsampled_parts(self, loss: PrivacyLoss) -> list[LossPart]:
        law = SymmetrizedLoss(PoissonRemoveLoss(loss, self.q))
        return [LossPart(law, law, 1)]


@dataclass(frozen=True, eq=False)
class SampledWithReplacementMechanism(SubsampledMechanism):
    """A Gaussian ``base`` run on ``batch_size`` records drawn uniformly with replacement.

    Replace-one relation. The differing record is drawn l ~ Binomial(batch_size,
    1/dataset_size) times, and the base Gaussian (noise multiplier sigma =
    1/mu, sensitivity under replace-one) then sees it l times. Dominating pair:
    the symmetric pair with profile, at eps >= 0, that of the Poisson removal
    pair with rate eta = P(l >= 1) over the disjoint union of the pairs
    (N(l mu, 1), N(0, 1)) weighted by P(l | l >= 1) (module docstring). Draw
    counts whose total probability is below 1e-30 count as total disclosure.

    Parameters
    ----------
    base:
        A Gaussian mechanism (exactly mu-GDP).
    batch_size:
        Number of draws B, a positive integer <= dataset_size.
    dataset_size:
        Number of records n, a positive integer.
    """

    _SAMPLER = "SampleWithReplacement"
    _RELATION = Neighboring.REPLACE_ONE

    batch_size: int
    dataset_size: int

    def __post_init__(self) -> None:
        super().__post_init__()
        b = check.positive_int("batch_size", self.batch_size)
        n = check.positive_int("dataset_size", self.dataset_size)
        if b > n:
            raise ValueError(f"batch_size must not exceed dataset_size ({n}), got {self.batch_size!r}")
        if self.base.exact_gdp_mu() is None:
            raise ValueError(f"mechanism {self.base.name!r} is not a Gaussian mechanism; "
                             "SampleWithReplacement supports Gaussian bases only")
        self._set(batch_size=b, dataset_size=n)

    def loss_parts(self) -> list[LossPart]:
        law = self._law()
        return [LossPart(law, law, 1)]

    def _law(self) -> PrivacyLoss:
        b, n = self.batch_size, self.dataset_size
        mu = self.base.exact_gdp_mu()
        assert mu is not None
        p = 1.0 / n
        if n == 1:
            return GaussianLoss(b * mu)
        log_b0 = b * math.log1p(-p)
        eta = -math.expm1(log_b0)
        sf = stats.binom.sf(np.arange(0, b + 1), b, p)
        beyond = np.flatnonzero(sf <= _DRAW_TAIL * eta)
        l_max = int(beyond[0]) if beyond.size else b
        l_max = max(l_max, 1)
        draws = np.arange(1, l_max + 1)
        w = stats.binom.pmf(draws, b, p) / eta
        w_inf = float(sf[l_max]) / eta if l_max < b else 0.0
        w = w * ((1.0 - w_inf) / w.sum())
        mixture = MixtureLoss([GaussianLoss(float(l) * mu) for l in draws], w, w_inf)
        if eta >= 1.0:
            return mixture
        return SymmetrizedLoss(PoissonRemoveLoss(mixture, eta))


# ----------------------------------------------------------------------------------
# transformers
# ----------------------------------------------------------------------------------

class PoissonSubsample(Transformer):
    """``PoissonSubsample(q)(M)``: M on a Poisson sample keeping each record with probability q.

    Add/remove relation; see :class:`PoissonSubsampledMechanism`. Raises
    ValueError naming ``q`` for q outside (0, 1] and naming ``mechanism`` for a
    replace-one mechanism or one that is not a single dominating pair.
    """

    def __init__(self, q: float) -> None:
        self._q = check.real("q", q, low=0.0, high=1.0, low_open=True)

    @property
    def q(self) -> float:
        """Sampling probability."""
        return self._q

    def __call__(self, mechanism: Mechanism) -> Mechanism:
        return PoissonSubsampledMechanism(mechanism, self._q)


class SampleWithoutReplacement(Transformer):
    """``SampleWithoutReplacement(q)(M)``: M on a uniformly random subset of q n of the n records.

    Replace-one relation; see :class:`SampledWithoutReplacementMechanism`.
    Raises ValueError naming ``q`` for q outside (0, 1] and naming
    ``mechanism`` for an add/remove mechanism or one that is not a single
    dominating pair.
    """

    def __init__(self, q: float) -> None:
        self._q = check.real("q", q, low=0.0, high=1.0, low_open=True)

    @property
    def q(self) -> float:
        """Sampling ratio batch size / dataset size."""
        return self._q

    def __call__(self, mechanism: Mechanism) -> Mechanism:
        return SampledWithoutReplacementMechanism(mechanism, self._q)


class SampleWithReplacement(Transformer):
    """``SampleWithReplacement(batch_size, dataset_size)(G)``: a Gaussian G on draws with replacement.

    Replace-one relation; see :class:`SampledWithReplacementMechanism`. Raises
    ValueError naming ``batch_size`` when it is not a positive integer at most
    ``dataset_size``.
    """

    def __init__(self, batch_size: int, dataset_size: int) -> None:
        b = check.positive_int("batch_size", batch_size)
        n = check.positive_int("dataset_size", dataset_size)
        if b > n:
            raise ValueError(f"batch_size must not exceed dataset_size ({n}), got {batch_size!r}")
        self._batch_size = b
        self._dataset_size = n

    @property
    def batch_size(self) -> int:
        """Number of draws per sample."""
        return self._batch_size

    @property
    def dataset_size(self) -> int:
        """Number of records."""
        return self._dataset_size

    def __call__(self, mechanism: Mechanism) -> Mechanism:
        return SampledWithReplacementMechanism(mechanism, self._batch_size, self._dataset_size)
