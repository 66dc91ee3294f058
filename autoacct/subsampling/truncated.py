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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from autoacct import _validation as check
from autoacct.losses import GaussianLoss, PrivacyLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring, PairRdp
from autoacct.subsampling.base import DRAW_TAIL, Sampler, SubsampledMechanism
from autoacct.subsampling.numerics import UNIT_ROUNDOFF
from autoacct.subsampling.poisson import PoissonAddLoss, PoissonRemoveLoss, PoissonSubsampledMechanism
from autoacct.subsampling.with_replacement import MixtureLoss, binomial_rel
from autoacct.zoo.mechanisms import Gaussian

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
        # The union's profile is exactly the weighted sum of its parts' (their outcome spaces
        # are disjoint): a closed form where theirs are, so that one step is answered from it
        # without discretisation (n = 10^6, q = 0.1, B = 5: a PLD of 975,243 cells was beyond
        # the time budget, and eps(1e-5) was answered [0, inf]).
        self.exact_profile = all(c.exact_profile for c in components)

    def profile_with_error(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The weighted sum of the parts' profiles and of their rounding bounds, plus that of
        the sum itself (one rounding per term and per product, relative to the sum)."""
        eps = np.asarray(eps, dtype=float)
        val, err = np.full(eps.shape, self.w_inf), np.zeros(eps.shape)
        for c, w in zip(self.components, self.weights):
            v, e = c.profile_with_error(eps)
            val = val + w * np.asarray(v, dtype=float)
            err = err + w * np.asarray(e, dtype=float)
        err = err + 2.0 * (len(self.components) + 2) * UNIT_ROUNDOFF * (val + err)
        return np.clip(val, 0.0, 1.0), err

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        return self.profile_with_error(eps)[1]


def _first_at_most(levels: np.ndarray, tail: Callable[[np.ndarray], np.ndarray], lo: int, hi: int) -> np.ndarray:
    """For each level, the smallest integer s in [lo, hi] with tail(s) <= level, or hi where
    there is none, for a non-increasing ``tail``: bisection, all levels at once, in about
    log2(hi - lo) evaluations (scipy's binom.isf answers n - 1 for every level at n = 1e12)."""
    a = np.full(np.shape(levels), lo, dtype=np.int64)
    b = np.full(np.shape(levels), hi, dtype=np.int64)
    while np.any(a < b):
        mid = (a + b) // 2
        ok = tail(mid) <= levels
        a, b = np.where(ok, a, mid + 1), np.where(ok, mid, b)
    return a


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
    (1 - t, weights, rates) with t = P(s >= b) the sum of the weights, both rounded up by
    :func:`binomial_rel`.

    No count is enumerated: the cuts are found by bisection on the survival function and
    the weights are differences of the binomial's tails, so the work is the same at
    n = 10^12 as at 10^3 (a window of every count up to mean + 20 sd needed 745 GiB at
    q n = 10^11). The masses are rounded so that mass moves only to larger rates (below): a
    dominating pair.
    """
    n1 = n - 1
    rel = binomial_rel(n)
    t = float(stats.binom.sf(b - 1, n1, q))
    # The union over s dominates only if each part weighs at least its true probability: the
    # untruncated part (rate q, shift mu) and the truncated ones (rates q_s <= q, shift 2 mu)
    # are not ordered, so mass lost by either is not made up by the other. scipy's tails are
    # not rounded up (t was 1.9e-14 relatively below the exact rational sum at q = 0.01,
    # n = 1000, B = 60, and P(s < B) 4.2e-14 below at q = 0.05, n = 1000, B = 30): the total
    # handed to the groups, and P(s < B) below, are rounded up by binomial_rel(n).
    t_up = t * (1.0 + rel)
    s_lo = b

    def upper_tail(x: np.ndarray) -> np.ndarray:
        return stats.binom.sf(x, n1, q)

    s_max = int(_first_at_most(np.array(DRAW_TAIL * t), upper_tail, s_lo, n1))
    half = TRUNCATED_GROUPS // 2
    # Cuts at equal steps of log(s + 1) (the rate's log) ...
    log_cuts = np.exp(np.linspace(np.log(s_lo + 1.0), np.log(s_max + 1.0), half + 1)[1:-1]) - 1.0
    cuts_rate = np.ceil(log_cuts).astype(np.int64)
    # ... and at equal steps of the probability of s_lo..s_max: the first s whose upper tail
    # is at most t - k/half of that probability.
    inside = t - float(stats.binom.sf(s_max, n1, q))
    cuts_mass = _first_at_most(t - inside * np.arange(1, half) / half, upper_tail, s_lo, s_max)
    # A cut where P(s_lo <= s <= x) reaches DRAW_TAIL t too, as s_max above (from the
    # distribution function, precise where this matters, below the median): else the group
    # below the first probability cut starts at the last rate cut below it, far in the lower
    # tail when B is far below the mean (its rate 1.6 times its counts' at n = 10^12,
    # q = 0.1, B = 5).
    cdf_lo = float(stats.binom.cdf(s_lo - 1, n1, q))
    s_min = int(_first_at_most(np.array(-(cdf_lo + DRAW_TAIL * t)), lambda x: -stats.binom.cdf(x, n1, q),
                               s_lo, s_max))
    starts = np.unique(np.concatenate(([s_lo, s_min], cuts_rate, cuts_mass)))
    starts = starts[(starts >= s_lo) & (starts <= s_max)]
    # Each group's mass from the tail it lies in, where a difference of that tail keeps its
    # relative precision (at n = 10^12, q = 0.1, B = 5 the first groups' mass is e^-(10^9),
    # which t - P(s >= start) rounds to 0 or to 1e-16): distribution functions below the
    # median, survival functions above it, the group across the median the rest of t rounded
    # up. Lower groups (larger rates) are rounded up by binomial_rel(n), upper ones down: the mass of
    # the groups before any group (at larger rates) is then at least the truth, so is their
    # total, and the last group's
    # weight, its whole upper tail, takes in the far tail below DRAW_TAIL (at a rate larger
    # than theirs).
    ends = np.append(starts[1:] - 1, n1)
    below = stats.binom.cdf(np.append(s_lo - 1, ends), n1, q)
    above = stats.binom.sf(np.append(s_lo - 1, ends), n1, q)
    mid = int(np.argmax(below[1:] >= 0.5))
    weights = np.empty(starts.size)
    weights[:mid] = np.maximum(below[1:mid + 1] * (1.0 + rel) - below[:mid] * (1.0 - rel), 0.0)
    weights[mid + 1:] = np.maximum(above[mid + 1:-1] * (1.0 - rel) - above[mid + 2:] * (1.0 + rel), 0.0)
    weights[mid] = max(t_up - float(weights[:mid].sum()) - float(weights[mid + 1:].sum()), 0.0)
    rates = q * b / (starts + 1.0)
    keep = weights > 0
    weights, rates = weights[keep], rates[keep]
    # P(s < B) itself, not 1 - t: that would be 1e-16 where the truth is e^-(10^5) or 0.
    return float(stats.binom.cdf(b - 1, n1, q)) * (1.0 + rel), weights, rates


#: Ratio of (s + 1) across a group of counts in :func:`kept_rate` (Jensen's gap in a group is
#: of the order of its square's excess over 1, 1e-4 relatively).
_KEPT_RATIO = 1.01
#: Most groups of counts in :func:`kept_rate` (the ratio grows past _KEPT_RATIO beyond).
_KEPT_GROUPS = 4096


def kept_rate(q: float, n: int, b: int) -> float:
    """A lower bound on q E[min(1, b / (s + 1))], s ~ Binomial(n - 1, q): the probability that the
    differing record is in a batch cut to at most b records (:meth:`TruncatedPoissonSubsampledMechanism.kept`).

    E = P(s < b) + sum over groups G of counts s >= b of E[b / (s + 1); G], each group's (s + 1)
    within a ratio of about 1.01. b / (s + 1) is convex in s, so by Jensen's inequality a group's
    term is at least P(G) b / (m_G + 1), m_G = E[s; G] / P(G), where E[s; s >= a] =
    (n - 1) q P(Binomial(n - 2, q) >= a - 1) (s C(n - 1, s) = (n - 1) C(n - 2, s - 1)). scipy's
    binomial tails are moved by :func:`binomial_rel` the way that lowers the result (P(G) and P(s < b) down,
    E[s; G] up; a group whose difference of tails cancels to 0 adds 0), and the sum by a few
    roundoffs more."""
    n1 = n - 1
    if q == 0.0:
        return 0.0
    rel = binomial_rel(n)
    kept = float(stats.binom.cdf(b - 1, n1, q)) * (1.0 - rel)
    roundings = 64.0  # (the products and quotients of each term, the sum's additions below)
    if b <= n1:
        ratio = max(_KEPT_RATIO, ((n1 + 2.0) / (b + 1.0)) ** (1.0 / _KEPT_GROUPS))
        steps = np.arange(math.ceil(math.log((n1 + 2.0) / (b + 1.0)) / math.log(ratio)) + 1)
        # (union1d sorts and removes repeats: floor merges steps at the small counts)
        edges = np.union1d(np.clip(np.floor((b + 1.0) * ratio ** steps) - 1.0, b, n1 + 1).astype(np.int64), [b, n1 + 1])
        lo, hi = edges[:-1], edges[1:]  # groups [lo, hi)
        mass = np.maximum(stats.binom.sf(lo - 1, n1, q) * (1.0 - rel)
                          - stats.binom.sf(hi - 1, n1, q) * (1.0 + rel), 0.0)
        # (n - 1 = 0 leaves no count s >= b >= 1: every group is then empty)
        moment = n1 * q * (stats.binom.sf(lo - 2, n1 - 1, q) * (1.0 + rel)
                           - stats.binom.sf(hi - 2, n1 - 1, q) * (1.0 - rel)) if n1 >= 1 else np.zeros(lo.shape)
        live = mass > 0.0
        terms = mass[live] * mass[live] * b / (np.maximum(moment[live], 0.0) * (1.0 + 4.0 * UNIT_ROUNDOFF) + mass[live])
        kept += float(np.sum(terms))
        roundings += len(terms)
    return q * min(kept, 1.0) * (1.0 - roundings * UNIT_ROUNDOFF)


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
    No pair of datasets need attain the disjoint union, so its lower ends are not the
    mechanism's when t > 0. Those come from the pair :meth:`kept` (attained, below).

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
        """Without truncation Poisson's; else that of ``PoissonSubsample(q)`` of the Gaussian with
        twice the base's shift, which dominates the pair (a fallback for the PLD, which may be
        beyond the time budget; it is loose, see below).

        The pair (class docstring) is the disjoint union of Poisson-subsampled Gaussian pairs
        at rates at most q and shifts mu or 2 mu; a union's divergences are the weighted sums
        of its parts' (any f-divergence), and each part is a post-processing of the pair at
        rate q and shift 2 mu in both directions: a pair at rate r <= q is that at q with each
        output replaced, with probability 1 - r / q, by a fresh draw from Q, and (N(mu), N(0))
        is (N(2 mu), N(0)) under y -> y / 2 + N(0, 3/4). No smaller rate dominates: s < B has
        positive probability whenever 0 < q < 1. Not ``PoissonSubsample(q)(base)``: a cut
        batch moves the sum by up to 2 C, and the pair at shift 2 mu has heavier tails.
        """
        poisson = self._poisson()
        if poisson is not None:
            return poisson.rdp_curve()
        mu = self.base.exact_gdp_mu()
        assert mu is not None
        sigma = 1.0 / (2.0 * mu) * (1.0 - 4.0 * UNIT_ROUNDOFF)  # rounded down: a smaller one dominates
        if not sigma >= 1e-300:
            return None
        above = self.cached(("dominating",), lambda: PoissonSubsampledMechanism(Gaussian(sigma), self.q))
        return above.rdp_curve()

    def loss_parts(self) -> list[LossPart] | None:
        poisson = self._poisson()
        if poisson is not None:
            return poisson.loss_parts()
        return self.cached(("truncated_parts",), self._truncated_parts)

    def kept(self) -> PoissonSubsampledMechanism:
        """The pair one fixed pair of datasets attains at every run: every other record's
        gradient 0, x's at the sensitivity. The output is then the base's noise plus x's
        gradient when x is in the batch (a cut drops only zeros besides), which happens with
        probability q E[min(1, B / (s + 1))]: ``PoissonSubsample`` of the base at that rate
        (:func:`kept_rate`, rounded down: a smaller rate is dominated). Its lower ends are the
        mechanism's, also composed."""
        return self.cached(("kept",), lambda: PoissonSubsampledMechanism(
            self.base, kept_rate(self.q, self.dataset_size, self.max_batch_size)))

    def attained_parts(self) -> list[LossPart] | None:
        return None if self._poisson() is not None else self.kept().loss_parts()

    def dominated(self) -> Mechanism:
        return self.kept()

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
    # (at most 2^52, as every integer parameter: the counts stay exact as floats)
    n = check.bounded_int("dataset_size", dataset_size)
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
