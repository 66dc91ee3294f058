"""Sampling with replacement (replace-one): a Gaussian or pure-DP base run on batch_size records drawn uniformly."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from autoacct import _validation as check
from autoacct.losses import GaussianLoss, PrivacyLoss, randomized_response_loss
from autoacct.mechanism import LossPart, Mechanism, Neighboring
from autoacct.subsampling.base import DRAW_TAIL, Sampler, SubsampledMechanism
from autoacct.subsampling.poisson import PoissonRemoveLoss
from autoacct.subsampling.represented import Representation, RepresentedLoss, representation
from autoacct.subsampling.without_replacement import SymmetrizedLoss


class MixtureLoss(RepresentedLoss):
    """Loss of the disjoint union of pairs: with probability w_i the pair i, plus an infinite part.

    The pair is (sum_i w_i P_i (+) w_inf U, sum_i w_i Q_i (+) w_inf V) on the
    disjoint union of the components' outcome spaces, where U and V are point
    masses on two extra outcomes that only one side can produce: the loss law
    is the w-mixture of the components' laws, plus P-mass w_inf at +inf and
    Q-mass w_inf at -inf. The mixture is symmetric when every component is.

    Parameters
    ----------
    components:
        Loss laws of the component pairs.
    weights:
        Their probabilities w_i >= 0, with sum(w) + w_inf = 1.
    w_inf:
        Probability of the part where the outcome reveals which side it came from.
    """

    def __init__(self, components: list[PrivacyLoss], weights: np.ndarray, w_inf: float = 0.0) -> None:
        w = np.asarray(weights, dtype=float)
        if len(components) != len(w) or len(components) == 0:
            raise ValueError("components and weights must be non-empty and of the same length")
        if np.any(w < 0) or w_inf < 0:
            raise ValueError("weights must be non-negative")
        self.components = list(components)
        self.weights = w
        self.w_inf = float(w_inf)
        self.p_inf = float(np.dot(w, [c.p_inf for c in components])) + self.w_inf
        self.p_inf_truncated = float(np.dot(w, [c.p_inf_truncated for c in components]))
        self.q_ninf = float(np.dot(w, [c.q_ninf for c in components])) + self.w_inf
        self.has_atoms = any(c.has_atoms for c in components)
        self.tight = all(c.tight for c in components)
        self.cell_cost = float(sum(c.cell_cost for c in components))

    @property
    def key(self) -> tuple:
        return ("mixture", tuple((c.key, float(w)) for c, w in zip(self.components, self.weights)),
                self.w_inf)

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(edges, dtype=float)
        p = np.zeros(len(e) - 1)
        qm = np.zeros(len(e) - 1)
        for c, w in zip(self.components, self.weights):
            mp, mq = c.cell_masses(e)
            p += w * np.asarray(mp, dtype=float)
            qm += w * np.asarray(mq, dtype=float)
        return p, qm

    def profile(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        val = np.full(eps.shape, self.w_inf)
        for c, w in zip(self.components, self.weights):
            val = val + w * np.asarray(c.profile(eps), dtype=float)
        return np.clip(val, 0.0, 1.0)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        """Component i is cut at tail mass eta / (m w_i) (m components), so the mixture's
        tails total at most eta; components lighter than eta / m need no range."""
        m = len(self.components)
        ranges = [c.quantile_range(eta / (m * w)) for c, w in zip(self.components, self.weights)
                  if m * w > eta]
        if not ranges:
            ranges = [c.quantile_range(eta) for c in self.components]
        return min(r[0] for r in ranges), max(r[1] for r in ranges)

    @property
    def _representation(self) -> Representation:
        parts = [representation(c) for c in self.components]
        values = np.concatenate([r[0] for r in parts])
        p = np.concatenate([w * r[1] for r, w in zip(parts, self.weights)])
        qm = np.concatenate([w * r[2] for r, w in zip(parts, self.weights)])
        return values, p, qm


def _pure_eps(base: Mechanism) -> float | None:
    """eps when ``base`` certifies (eps, 0)-DP with a finite eps, else None."""
    guarantee = base.dp_guarantee()
    if guarantee is None or guarantee[1] != 0.0 or not math.isfinite(guarantee[0]):
        return None
    return float(guarantee[0])


@dataclass(frozen=True, eq=False, repr=False)
class SampledWithReplacementMechanism(SubsampledMechanism):
    """A Gaussian or pure-DP ``base`` run on ``batch_size`` records drawn uniformly with replacement.

    Replace-one relation. The differing record is drawn l ~ Binomial(batch_size,
    1/dataset_size) times, and the base then sees it l times: a Gaussian (noise
    multiplier sigma = 1/mu, sensitivity under replace-one) has the pair
    (N(l mu, 1), N(0, 1)); an eps-DP base is (l eps)-DP for the l copies (group
    privacy), dominated by randomized response with log-odds l eps. Dominating pair:
    the symmetric pair with profile, at eps >= 0, that of the Poisson removal
    pair with rate eta = P(l >= 1) over the disjoint union of the pairs for each l,
    weighted by P(l | l >= 1). Draw counts whose total probability is below 1e-30
    count as total disclosure. That pair lets the adversary see l, which no pair of
    datasets does, so lower bounds come from the pair one fixed pair of datasets attains
    (:meth:`attained_parts`), for Gaussian bases only (the group-privacy pair of a pure-DP
    base need not be attained).

    Parameters
    ----------
    base:
        A Gaussian mechanism (exactly mu-GDP) or one with a pure-DP guarantee (eps, 0).
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
        if self.base.exact_gdp_mu() is None and _pure_eps(self.base) is None:
            raise ValueError(f"mechanism {self.base.name!r} is neither a Gaussian nor a pure-DP mechanism; "
                             "SampleWithReplacement needs the pair of a record seen l times, which only "
                             "these give (sensitivity l, group privacy l eps)")
        self._set(batch_size=b, dataset_size=n)

    def loss_parts(self) -> list[LossPart]:
        law = self._law()
        return [LossPart(law, law, 1)]

    def attained_parts(self) -> list[LossPart] | None:
        """For a Gaussian base, the laws of a pair attained at every run by one fixed pair of
        datasets (None for a pure-DP base, whose group-privacy pair need not be attained).

        Take D' = (y, ..., y) and D = (x, y, ..., y), n records each, and a query through
        the count of x, scaled to the sensitivity. A batch of D' always sums to the same
        value; a batch of D holds x l ~ Binomial(B, 1/n) times, independently at every run.
        The outputs are then (sum_l Pr(l) N(l mu, 1), N(0, 1)) on (D, D') and the reverse on
        (D', D): the user-level step of :func:`~autoacct.subsampling.schemes.user_step` with
        rate 1/n over B examples, whose counts past a tail of 1e-30 are moved down to the
        last count kept, a pair this one dominates. The dominating pair of
        :meth:`loss_parts` lets the adversary see l: its lower bounds exceed the mechanism's
        (at B = 10, n = 1000, sigma = 1, delta(1) is 1.25e-6 for it, 1.24e-8 for this pair).
        """
        mu = self.base.exact_gdp_mu()
        if mu is None or self.dataset_size == 1:
            return None
        from autoacct.subsampling.schemes import user_step  # (schemes imports this module)
        step = self.cached(("attained",), lambda: user_step(1.0 / self.dataset_size, 1.0 / mu, self.batch_size,
                                                           dominated=True))
        return step.loss_parts()

    def _seen(self, times: int) -> PrivacyLoss:
        """The pair of the base when the batch holds the differing record ``times`` times.

        A Gaussian sees a sum moved by ``times`` sensitivities: N(times mu, 1) against N(0, 1).
        An eps-DP base is (times eps)-DP for datasets differing in ``times`` records (group
        privacy), so randomized response with log-odds times eps dominates it; no mechanism
        need attain that pair, so it gives no lower bound (not ``tight``).
        """
        mu = self.base.exact_gdp_mu()
        if mu is not None:
            return GaussianLoss(float(times) * mu)
        eps = _pure_eps(self.base)
        assert eps is not None
        # times * eps is within half an ulp of the product: one ulp up keeps it above.
        return randomized_response_loss(math.nextafter(float(times) * eps, math.inf), tight=False)

    def _law(self) -> PrivacyLoss:
        b, n = self.batch_size, self.dataset_size
        p = 1.0 / n
        if n == 1:
            return self._seen(b)
        log_b0 = b * math.log1p(-p)
        eta = -math.expm1(log_b0)
        sf = stats.binom.sf(np.arange(0, b + 1), b, p)
        beyond = np.flatnonzero(sf <= DRAW_TAIL * eta)
        l_max = int(beyond[0]) if beyond.size else b
        l_max = max(l_max, 1)
        draws = np.arange(1, l_max + 1)
        w, w_inf = _draw_weights(sf, eta, l_max, b)
        mixture = MixtureLoss([self._seen(int(j)) for j in draws], w, w_inf)
        if len(draws) > 1 or w_inf > 0:
            # The disjoint union over the draw count l dominates the mechanism's mixture over l
            # (joint convexity), but no pair of datasets reveals l: no lower bound is read off it
            # (see attained_parts).
            mixture.tight = False
        if eta >= 1.0:
            return mixture
        return SymmetrizedLoss(PoissonRemoveLoss(mixture, eta))


def _draw_weights(sf: np.ndarray, eta: float, l_max: int, b: int) -> tuple[np.ndarray, float]:
    """Weights of the draw counts 1..l_max given at least one draw, and of the counts beyond
    (w_inf, 0 where l_max = b), from the binomial's upper tails ``sf`` (sf[l] = P(L > l)) and
    eta = P(L >= 1). Each conditional tail P(L >= l | L >= 1), l >= 2, is rounded up by
    :func:`binomial_rel` of the b draws (scipy's tails and pmf are within a relative 2.4e-14 of the
    exact ones at small b, measured; their error grows with the trials, 1.2e-11 at 1e8, beyond
    SF_REL)
    and the weights are the tails' differences: every tail of the weights is at least the true
    one, so the mixture puts at least the true mass on each set of larger counts, whose pairs
    dominate the smaller ones', and dominates the mixture of the exact weights (a coupling of
    the counts). Normalising pmf values by their sum, as before, moved mass either way."""
    tails = np.minimum(sf[1:l_max + 1] / eta * (1.0 + binomial_rel(b)), 1.0)
    tails = np.minimum.accumulate(np.concatenate(([1.0], tails)))
    w_inf = float(tails[-1]) if l_max < b else 0.0
    if l_max >= b:
        tails[-1] = 0.0
    return np.maximum(tails[:-1] - tails[1:], 0.0), w_inf


#: Relative accuracy allowed to scipy's binomial distribution and survival functions
#: (regularised incomplete beta functions; against exact rational sums, at most 1.4e-13 off in
#: 300 random (n <= 5000, q, B) within 10 sd of the mean, a cdf in the lower tail; the pmf
#: within 2.4e-14 here): weights are rounded by it so that mass only ever moves to larger
#: counts or rates (beyond 10^4 trials through :func:`binomial_rel`).
SF_REL = 1e-12


def binomial_rel(trials: int) -> float:
    """The relative accuracy allowed to scipy's binomial distribution and survival functions at
    ``trials`` trials: SF_REL (checked at up to 5000 trials), or 1e-14 sqrt(trials) beyond 10^4.
    Their error grows with the trials: against sums over the counts within 12 sd of the mean
    (each block of 1000 counts anchored by log-gamma at 40 digits), 9.6e-13 at 10^6, 1.2e-11
    at 10^8, 1.5e-11 at 10^10 and 4.5e-10 at 10^12 (q = 0.5, 8 sd below the mean), where
    rounding by SF_REL left :func:`~autoacct.subsampling.truncated.kept_rate` above the exact
    rate (a relative 1.1e-11 at n = 10^12, q = 0.9, B = 900000150001)."""
    return max(SF_REL, 1e-14 * math.sqrt(trials))


@dataclass(frozen=True)
class SampleWithReplacement(Sampler):
    """``SampleWithReplacement(batch_size, dataset_size)(G)``: a Gaussian G on draws with replacement.

    Replace-one relation; see :class:`SampledWithReplacementMechanism`. Raises
    ValueError naming ``batch_size`` when it is not a positive integer at most
    ``dataset_size``.
    """

    mechanism_type = SampledWithReplacementMechanism

    batch_size: int
    dataset_size: int

    def __post_init__(self) -> None:
        b = check.positive_int("batch_size", self.batch_size)
        n = check.positive_int("dataset_size", self.dataset_size)
        if b > n:
            raise ValueError(f"batch_size must not exceed dataset_size ({n}), got {self.batch_size!r}")
        self._set(batch_size=b, dataset_size=n)
