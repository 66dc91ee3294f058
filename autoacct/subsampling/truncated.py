"""Truncated Poisson subsampling (add/remove): a Poisson sample cut to at most max_batch_size records.

Each record joins the sample independently with probability q; a sample larger
than B = max_batch_size is replaced by a uniformly random subset of B of its
records. The base is a Gaussian on the batch sum (noise multiplier sigma,
sensitivity C per record). dp_accounting's ``TruncatedSubsampledGaussianDpEvent``
accounts the same scheme with one averaged rate for the truncated part; this
module conditions on the number of sampled other records instead (below).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from autoacct import _validation as check
from autoacct.losses import GaussianLoss, PrivacyLoss
from autoacct.mechanism import LossPart, Neighboring, PairRdp
from autoacct.subsampling.base import DRAW_TAIL, Sampler, SubsampledMechanism
from autoacct.subsampling.poisson import PoissonAddLoss, PoissonRemoveLoss, PoissonSubsampledMechanism
from autoacct.subsampling.with_replacement import MixtureLoss

#: Most groups of sampled-record counts s >= B, each accounted at the largest rate in it.
TRUNCATED_GROUPS = 96


class DominatingMixtureLoss(MixtureLoss):
    """A :class:`MixtureLoss` that dominates the mechanism's pair without being attained by it.

    The disjoint union over the count s of sampled other records bounds the mixture
    over s from above (joint convexity), but no pair of datasets need produce it, so a
    lower bound read off it would be one on this pair only.
    """

    def __init__(self, components: list[PrivacyLoss], weights: np.ndarray, w_inf: float = 0.0) -> None:
        super().__init__(components, weights, w_inf)
        self.tight = False


def truncated_groups(q: float, n: int, b: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The untruncated weight and the truncated part's (weights, rates) by groups of s.

    s ~ Binomial(n - 1, q) counts the sampled records other than the differing one.
    Given s >= b the differing record is in the batch with probability
    q_s = q b / (s + 1), decreasing in s. The counts b..s_max (s_max: the upper tail
    beyond it is below DRAW_TAIL) are cut into at most TRUNCATED_GROUPS groups, at
    equal steps of the log rate and at equal steps of probability (both sets of cuts,
    so that no group is wide in rate and none is heavy); each group gets its
    probability and its smallest s's rate, the largest in it. The tail beyond s_max
    joins the last group, whose rate exceeds its counts' rates. Returns
    (1 - t, weights, rates) with t = P(s >= b) the sum of the weights.
    """
    s_lo = b
    t = float(stats.binom.sf(b - 1, n - 1, q))
    # s_max: where the upper tail falls below DRAW_TAIL t, searched in a window of 20 standard
    # deviations (plus a margin) above max(B, mean); a window too short only moves more mass
    # into the last group (sound, see below).
    mean, sd = (n - 1) * q, math.sqrt((n - 1) * q * (1.0 - q))
    top = int(min(n - 1, math.ceil(max(s_lo, mean) + 20.0 * sd + 200.0)))
    window = np.arange(s_lo, top + 1)
    beyond = np.flatnonzero(stats.binom.sf(window, n - 1, q) <= DRAW_TAIL * t)
    s_max = int(window[beyond[0]]) if beyond.size else top
    s = np.arange(s_lo, s_max + 1)
    pmf = stats.binom.pmf(s, n - 1, q)
    half = TRUNCATED_GROUPS // 2
    # Cuts at equal steps of log(s + 1) (the rate's log) ...
    log_cuts = np.exp(np.linspace(np.log(s_lo + 1.0), np.log(s_max + 1.0), half + 1)[1:-1]) - 1.0
    cuts_rate = np.ceil(log_cuts).astype(int)
    # ... and at equal steps of the conditional probability.
    cdf = np.cumsum(pmf) / max(float(pmf.sum()), 1e-300)
    cuts_mass = s_lo + np.searchsorted(cdf, np.arange(1, half) / half, side="right")
    starts = np.unique(np.concatenate(([s_lo], cuts_rate, cuts_mass)))
    starts = starts[(starts >= s_lo) & (starts <= s_max)]
    group = np.searchsorted(starts, s, side="right") - 1
    weights = np.bincount(group, weights=pmf, minlength=len(starts))
    # The far tail (below DRAW_TAIL) joins the last group: its rate is larger than theirs.
    weights[-1] += max(t - float(pmf.sum()), 0.0)
    rates = q * b / (starts + 1.0)
    keep = weights > 0
    weights, rates = weights[keep], rates[keep]
    return max(1.0 - float(weights.sum()), 0.0), weights, rates


@dataclass(frozen=True, eq=False, repr=False)
class TruncatedPoissonSubsampledMechanism(SubsampledMechanism):
    """A Gaussian ``base`` run on a Poisson sample (rate q) cut to at most ``max_batch_size`` records.

    Add/remove relation: D' is D plus a record x, and n = dataset_size = |D'|.
    Each record is sampled independently with probability q; a sample of more
    than B = max_batch_size records is cut to a uniformly random B-subset. The
    base (noise multiplier sigma = 1/mu, sensitivity C per record) runs on the batch.

    Dominating pair. Let s ~ Binomial(n - 1, q) be the number of sampled other
    records; its law does not involve x, so each output law is the P(s)-mixture of
    the conditional laws, and by joint convexity of the hockey-stick divergence
    the disjoint union of the conditional pairs weighted by P(s) dominates.

    * s < B: no truncation on either side: the Poisson-subsampled Gaussian with
      rate q and shift one sensitivity (mu).
    * s >= B: on D the batch is a uniform B-subset of the s others; on D' it holds
      x with probability q_s = q B / (s + 1), and is then, coupled, the D-batch with
      a uniform record y replaced by x (the sum moves by x - y, at most 2C); else it
      is distributed as on D. Joint convexity over the batch and over y gives the
      Poisson-subsampled Gaussian with rate q_s and shift 2 mu.

    Counts s >= B are grouped (:func:`truncated_groups`), each group at its largest
    rate (the divergence increases in the rate). Without truncation (t = P(s >= B)
    = 0) this is ``PoissonSubsample(q)(base)`` exactly. dp_accounting averages the
    rates of the truncated part into one (the mean q B P(Bin(n, q) > B) / (n t));
    the divergence is convex in the rate, so this pair can be slightly above theirs.
    Lower bounds are not certified when t > 0: no pair of datasets need attain the
    disjoint union.

    Parameters
    ----------
    base:
        A Gaussian mechanism (exactly mu-GDP).
    q:
        Sampling probability of each record, 0 <= q <= 1.
    dataset_size:
        n = |D'|, a positive integer.
    max_batch_size:
        B, a positive integer at most dataset_size.
    """

    _SAMPLER = "TruncatedPoissonSubsample"
    _RELATION = Neighboring.ADD_REMOVE

    q: float
    dataset_size: int
    max_batch_size: int

    def __post_init__(self) -> None:
        super().__post_init__()
        q, n, b = _check(self.q, self.dataset_size, self.max_batch_size)
        if self.base.exact_gdp_mu() is None:
            raise ValueError(f"mechanism {self.base.name!r} is not a Gaussian (exactly mu-GDP); "
                             "TruncatedPoissonSubsample needs the pair of a batch sum moved by one "
                             "or two sensitivities, which only a Gaussian base gives")
        self._set(q=q, dataset_size=n, max_batch_size=b)

    def truncation_probability(self) -> float:
        """t = P(Binomial(n - 1, q) >= B): the batch of D' could be cut (given x is sampled)."""
        return float(stats.binom.sf(self.max_batch_size - 1, self.dataset_size - 1, self.q))

    def _poisson(self) -> PoissonSubsampledMechanism | None:
        """``PoissonSubsample(q)(base)`` when nothing is ever cut (t = 0), else None."""
        if self.q == 0.0 or self.truncation_probability() == 0.0:
            return PoissonSubsampledMechanism(self.base, self.q)
        return None

    def exact_gdp_mu(self) -> float | None:
        poisson = self._poisson()
        return poisson.exact_gdp_mu() if poisson is not None else None

    def dp_guarantee(self) -> tuple[float, float] | None:
        poisson = self._poisson()
        return poisson.dp_guarantee() if poisson is not None else None

    def rdp_curve(self) -> PairRdp | None:
        poisson = self._poisson()
        return poisson.rdp_curve() if poisson is not None else None

    def loss_parts(self) -> list[LossPart] | None:
        poisson = self._poisson()
        if poisson is not None:
            return poisson.loss_parts()
        return self.cached(("truncated_parts",), self._truncated_parts)

    def _truncated_parts(self) -> list[LossPart]:
        mu = self.base.exact_gdp_mu()
        assert mu is not None
        one, two = GaussianLoss(mu), GaussianLoss(2.0 * mu)
        untruncated, weights, rates = truncated_groups(self.q, self.dataset_size, self.max_batch_size)
        removal: list[PrivacyLoss] = [PoissonRemoveLoss(two, float(r)) for r in rates]
        addition: list[PrivacyLoss] = [PoissonAddLoss(two, float(r)) for r in rates]
        w = weights
        if untruncated > 0.0:
            # s < B: the record is sampled with probability q < 1 (q = 1 leaves s = n - 1 fixed,
            # so t is 0 or 1).
            removal.insert(0, PoissonRemoveLoss(one, self.q))
            addition.insert(0, PoissonAddLoss(one, self.q))
            w = np.concatenate(([untruncated], weights))
        return [LossPart(DominatingMixtureLoss(removal, w), DominatingMixtureLoss(addition, w), 1)]


def _check(q: float, dataset_size: int, max_batch_size: int) -> tuple[float, int, int]:
    q = check.real("q", q, low=0.0, high=1.0)
    n = check.positive_int("dataset_size", dataset_size)
    b = check.positive_int("max_batch_size", max_batch_size)
    if b > n:
        raise ValueError(f"max_batch_size must not exceed dataset_size ({n}), got {max_batch_size!r}")
    return q, n, b


@dataclass(frozen=True)
class TruncatedPoissonSubsample(Sampler):
    """``TruncatedPoissonSubsample(q, dataset_size, max_batch_size)(G)``: a Gaussian G on a Poisson
    sample cut to at most max_batch_size records.

    Add/remove relation; see :class:`TruncatedPoissonSubsampledMechanism`. Raises
    ValueError naming ``q``, ``dataset_size`` or ``max_batch_size`` for a bad value.
    """

    mechanism_type = TruncatedPoissonSubsampledMechanism

    q: float
    dataset_size: int
    max_batch_size: int

    def __post_init__(self) -> None:
        q, n, b = _check(self.q, self.dataset_size, self.max_batch_size)
        self._set(q=q, dataset_size=n, max_batch_size=b)
