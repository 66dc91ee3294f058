"""The batch samplers a DP-SGD run can be accounted for, by name.

One DP-SGD step clips every per-example gradient to L2 norm C, sums the
gradients of a random batch and adds N(0, (sigma C)^2 I). Which subsampled
Gaussian describes the step depends on how the batch is drawn, and so does
the neighbouring relation the guarantee refers to. Each scheme records both,
and the factor by which the relation scales the sensitivity of the sum:
adding or removing a record moves it by at most C, replacing one by at most
2 C. ``dpsgd``, the calibrators and the command line read the schemes from
here, so a new scheme is its module in this package plus one entry.

User level (Poisson only): a user has m examples, each joining the batch independently
with probability q, and neighbouring datasets differ in all of one user's examples.
:func:`user_step` gives the step of that relation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from autoacct import _validation as check
from autoacct.losses.mixture import MixtureGaussianLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring
from autoacct.subsampling.allocation import RandomAllocation
from autoacct.subsampling.partial_epoch import PartialEpochMechanism
from autoacct.subsampling.poisson import PoissonSubsample
from autoacct.subsampling.without_replacement import SampleWithoutReplacement
from autoacct.zoo.mechanisms import Gaussian
from autoacct.zoo.mixture import MixtureOfGaussians


@dataclass(frozen=True)
class SamplingScheme:
    """How a DP-SGD batch is drawn.

    Parameters
    ----------
    name:
        The scheme's name (``dpsgd(..., sampling=name)``, ``--sampling name``).
    relation:
        The neighbouring relation D ~ D' of the guarantee.
    sensitivity_factor:
        L2 sensitivity of the clipped gradient sum under ``relation``, in units of C.
    step:
        (sample rate q, noise multiplier sigma) -> the mechanism of one unit of the run: a step,
        or for balls-in-bins one epoch.
    description:
        One line for help texts.
    units:
        (sample rate q, steps K) -> how many whole units a run of K steps composes (K by
        default).
    partial:
        For units of several steps (an epoch): (q, sigma, K) -> the mechanism of the steps
        a run of K steps takes beyond its whole units, or None when there are none.
    """

    name: str
    relation: Neighboring
    sensitivity_factor: float
    step: Callable[[float, float], Mechanism]
    description: str
    units: Callable[[float, int], int] = field(default=lambda q, k: k)
    partial: Callable[[float, float, int], Mechanism | None] = field(default=lambda q, sigma, k: None)

    def run(self, q: float, sigma: float, k: int) -> tuple[list[Mechanism], list[int]]:
        """The mechanisms of a run of k steps at (q, sigma) and their counts: its whole units,
        then the steps beyond them (balls-in-bins: the first k mod t steps of an epoch).

        q is the sample rate in (0, 1], sigma the noise multiplier (> 0; the step's Gaussian
        checks its own range), k the number of steps, a positive integer (as :func:`dpsgd`'s
        ``sample_rate``, ``noise_multiplier`` and ``steps``); ValueError or TypeError naming
        the parameter otherwise.
        """
        q = check.real("q", q, low=0.0, high=1.0, low_open=True)
        sigma = check.real("sigma", sigma, low=0.0, low_open=True)
        k = check.positive_int("k", k)
        whole, rest = self.units(q, k), self.partial(q, sigma, k)
        mechs, counts = ([self.step(q, sigma)], [whole]) if whole else ([], [])
        if rest is not None:
            mechs.append(rest)
            counts.append(1)
        return mechs, counts


def _poisson_step(q: float, sigma: float) -> Mechanism:
    return PoissonSubsample(q)(Gaussian(sigma))


def _without_replacement_step(q: float, sigma: float) -> Mechanism:
    # Replacing a record moves the sum by up to 2 C: a unit-sensitivity Gaussian with sigma / 2.
    return SampleWithoutReplacement(q)(Gaussian(sigma / 2.0))


def epoch_steps(q: float) -> int:
    """t, the steps of a balls-in-bins epoch at sample rate q: ceil(1/q) (1/q itself when it is
    within 1e-9 of an integer, so that q = 1/t gives t). With q = B / N this is ceil(N / B), the
    batches per epoch of a data loader; each record's step is uniform, probability 1/t <= q.
    q must lie in [2^-52, 1] (ValueError naming q otherwise): 1/q is no step count outside
    (0, 1], and the epoch's step count, an integer parameter, must stay exactly representable
    as a float (:data:`~autoacct._validation.INT_MAX`; below 2^-52 1/q even overflows to inf
    for subnormal q)."""
    q = check.real("q", q, low=0.0, high=1.0, low_open=True)
    if q < 1.0 / check.INT_MAX:
        raise ValueError(f"q must be at least 2**-52 = {1.0 / check.INT_MAX!r} for balls-in-bins "
                         f"(an epoch has ceil(1/q) steps, at most 2**52), got {q!r}")
    inv = 1.0 / q
    near = round(inv)
    if near >= 1 and abs(inv - near) <= 1e-9 * inv:
        return int(near)
    return math.ceil(inv)


def _allocation_step(q: float, sigma: float) -> Mechanism:
    return RandomAllocation(epoch_steps(q))(Gaussian(sigma))


def _allocation_epochs(q: float, k: int) -> int:
    return k // epoch_steps(q)


def _allocation_rest(q: float, sigma: float, k: int) -> Mechanism | None:
    # A last, partial epoch (partial_epoch.py). One step of it (r = 1) takes each record
    # independently with probability 1/t: a Poisson-subsampled step, at 1/t rounded up for the
    # upper ends and down for the lower ones (1/t is a float only where t is a power of 2).
    t = epoch_steps(q)
    r = k % t
    return None if r == 0 else PartialEpochMechanism(sigma, t, r)


#: The schemes by name, the default first.
SCHEMES: dict[str, SamplingScheme] = {s.name: s for s in (
    SamplingScheme("poisson", Neighboring.ADD_REMOVE, 1.0, _poisson_step,
                   "each example joins the batch independently with probability q (add/remove)"),
    SamplingScheme("without-replacement", Neighboring.REPLACE_ONE, 2.0, _without_replacement_step,
                   "each batch is a uniformly random subset of fixed size q n (replace-one)"),
    SamplingScheme("balls-in-bins", Neighboring.ADD_REMOVE, 1.0, _allocation_step,
                   "each example is used in exactly one of the t = ceil(1/q) steps of each epoch, "
                   "chosen uniformly and independently (add/remove)", _allocation_epochs, _allocation_rest),
)}


def scheme(name: object) -> SamplingScheme:
    """The scheme called ``name``; ValueError naming ``sampling`` for any other value."""
    if not isinstance(name, str) or name not in SCHEMES:
        raise ValueError(f"sampling must be one of {tuple(SCHEMES)}, got {name!r}")
    return SCHEMES[name]


# ----- user level -------------------------------------------------------------------------

#: Binomial tail mass below which :func:`user_step` stops listing the counts one by one.
USER_TAIL = 1e-30


def binomial_counts(q: float, m: int) -> tuple[int, np.ndarray, float]:
    """(J, (Pr(B = 0), ..., Pr(B = J)), Pr(B > J)) for B ~ Binomial(m, q).

    J = m (nothing cut, tail 0) unless cutting pays: J is then the smallest count with
    Pr(B > J) <= :data:`USER_TAIL`, taken when it drops at least half of the m + 1
    counts, or when some probability is below 1e-280 (it could underflow to 0, which
    would drop its count unsoundly).
    """
    j = np.arange(m + 1)
    pmf = stats.binom.pmf(j, m, q)
    if q >= 1.0:
        return m, (j == m).astype(float), 0.0
    # Pr(B > j) from the regularised incomplete beta, accurate to relative precision far
    # into the tail (not 1 - cdf); it decreases in j.
    sf = stats.binom.sf(j, m, q)
    small = sf <= USER_TAIL
    cut = int(np.argmax(small)) if np.any(small) else m
    if cut < m and (2 * (m - cut) >= m + 1 or float(pmf.min()) < 1e-280):
        return cut, pmf[:cut + 1], float(sf[cut])
    return m, pmf, 0.0


@dataclass(frozen=True, eq=False, repr=False)
class _DominatingMixture(MixtureOfGaussians):
    """A :class:`MixtureOfGaussians` that dominates the mechanism accounted without being its
    own pair: its loss laws are not ``tight``, so no lower bound is read off them."""

    def loss_parts(self) -> list[LossPart]:
        def make() -> list[LossPart]:
            shifts, probs = self._components()
            laws = [MixtureGaussianLoss(shifts, probs, d) for d in ("remove", "add")]
            for law in laws:
                law.tight = False
            return [LossPart(laws[0], laws[1], 1)]
        return self.cached(("parts",), make)


def user_step(q: float, sigma: float, m: int, *, dominated: bool = False) -> Mechanism:
    """One Poisson DP-SGD step under add/remove of a user with at most m examples.

    Each of the user's m examples joins the batch independently with probability q, so B of
    them do, B ~ Binomial(m, q); the clipped gradient sum moves by at most B C. With noise
    N(0, (sigma C)^2), the step's pair is

        (P, Q) = (sum_b Pr(B = b) N(b, sigma^2), N(0, sigma^2))   (units of C),

    ``MixtureOfGaussians(sigma, (0, 1, ..., m), Binomial(m, q) pmf)``, exact for independent
    per-example sampling. A user with fewer examples has a Binomial count with fewer
    trials, stochastically smaller: a coupling moves each of its counts up to this one's,
    which dominates it (below). m = 1 is ``PoissonSubsample(q)(Gaussian(sigma))`` itself.

    The divergence H_g(P || Q) = E_Q[(dP/dQ - g)_+] does not decrease when one component's
    sensitivity s_b grows, for every g >= 0: {dP/dQ > g} is a half-line {x > c} (dP/dQ
    increases in x), and the derivative in s_b is
    Pr(B = b) E[(X - s_b) 1{X > c}] / sigma^2 = Pr(B = b) phi((c - s_b) / sigma) / sigma >= 0
    for X ~ N(s_b, sigma^2). As this holds for every g, the larger pair dominates in the
    tradeoff (Blackwell) order, which composition preserves.
    So moving probability to a larger sensitivity gives a dominating pair, to a smaller one
    a dominated pair. Counts beyond J, the smallest with Pr(B > J) <= :data:`USER_TAIL`,
    are cut: their mass goes to sensitivity m (the default, a dominating pair, whose
    loss laws are then not flagged ``tight``: it gives upper bounds only), or to J
    (``dominated=True``: a pair dominated by the step, whose lower bounds are certified
    lower bounds on the step and its compositions; its upper bounds are not bounds).
    When nothing is cut both are the exact pair.

    Parameters
    ----------
    q:
        Per-example sampling probability in (0, 1].
    sigma:
        Noise multiplier, > 0 (noise std over the clipping norm C).
    m:
        Examples per user, a positive integer.
    dominated:
        Which side of a cut tail to take (above).
    """
    q = check.real("sample_rate", q, low=0.0, high=1.0, low_open=True)
    sigma = check.real("noise_multiplier", sigma, low=0.0, low_open=True)
    m = check.positive_int("examples_per_user", m)
    if m == 1:
        return _poisson_step(q, sigma)
    cut, pmf, tail = binomial_counts(q, m)
    sens = list(range(cut + 1))
    probs = [float(x) for x in pmf]
    if cut == m:
        return MixtureOfGaussians(sigma, tuple(float(s) for s in sens), tuple(probs))
    if dominated:
        probs[-1] += tail
        return MixtureOfGaussians(sigma, tuple(float(s) for s in sens), tuple(probs))
    # The cut mass goes up to m; at least the smallest normal number, so that an
    # underflowed tail still moves mass upward (any extra mass moved up only dominates more).
    sens.append(m)
    probs.append(max(tail, math.ulp(0.0) * 2 ** 52))
    return _DominatingMixture(sigma, tuple(float(s) for s in sens), tuple(probs))


def user_step_is_cut(q: float, m: int) -> bool:
    """Whether :func:`user_step` cuts the binomial tail (its two sides then differ)."""
    return m > 1 and binomial_counts(q, m)[0] < m
