"""Composite algorithms given as one mechanism: sparse vector technique, noisy gradient descent
and tree aggregation (DP-FTRL).

Sensitivity is 1 throughout: noise scales are in units of the queries' (or
gradients') sensitivity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy import optimize, special

from autoacct import _validation as check
from autoacct.exactness import MACHINE_EPSILON, ExactFloat, rational_up, round_up
from autoacct.mechanism import Mechanism, PairRdp
from autoacct.subsampling.numerics import log_binom_table, lse_err
from autoacct.zoo.mechanisms import RandomizedResponsePair, gaussian_rdp

__all__ = ["GaussianSVT", "LaplaceSVT", "NoisyGD", "TreeAggregation"]

#: Smallest noise scales GaussianSVT accepts: alpha / (2 sigma^2) is then below 1e300 at
#: order 1, a finite float with room (below about 7e-155 it is not).
SVT_MIN_SIGMA = 1e-150


def _cutoff(c: int, k: int | None) -> int:
    cc = check.bounded_int("c", c)
    if k is not None and cc > k:
        raise ValueError(f"c must be at most k = {k}, got {c!r}")
    return cc


@dataclass(frozen=True, eq=False, repr=False)
class LaplaceSVT(RandomizedResponsePair):
    """Sparse vector technique with Laplace noise (Lyu, Su and Li 2017, Algorithm 1).

    Given adaptively chosen queries q_1, q_2, ... of sensitivity 1 and
    thresholds T_1, T_2, ..., draw rho ~ Lap(b_threshold) once and, for each
    query, nu_i ~ Lap(b_query); output "above" when q_i(D) + nu_i >= T_i + rho,
    "below" otherwise, and halt after the c-th "above". The number of queries
    screened may be unbounded. The output sequence is eps-DP with

        eps = 1 / b_threshold + 2 c / b_query         (Lyu et al. 2017, Theorem 2),
        eps = 1 / b_threshold + c / b_query           (monotone queries: all q_i move the same way),

    so the mechanism is dominated by randomised response with that eps
    (PureDP): PLD and RDP are those of randomised response. Randomised
    response is not known to be attained by SVT, so ``lower`` ends derived from
    this PLD bound the class of eps-DP mechanisms, not SVT itself (the loss
    law is flagged ``tight = False``).

    Parameters
    ----------
    b_threshold:
        Laplace scale of the threshold noise rho, per unit sensitivity, > 0.
    b_query:
        Laplace scale of each query's noise nu_i, per unit sensitivity, > 0.
    c:
        Cut-off: number of "above" answers after which the algorithm halts, >= 1.
    monotone:
        Whether the queries are monotone (for neighbours D ~ D', either
        q_i(D) >= q_i(D') for all i or q_i(D) <= q_i(D') for all i).
    """

    # Randomised response dominates SVT but is not known to be attained by it.
    attained = False

    b_threshold: float
    b_query: float
    c: int = 1
    monotone: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        b1 = check.real("b_threshold", self.b_threshold, low=0.0, low_open=True)
        b2 = check.real("b_query", self.b_query, low=0.0, low_open=True)
        cc = _cutoff(self.c, None)
        if not isinstance(self.monotone, (bool, np.bool_)):
            raise TypeError(f"monotone must be a bool, got {self.monotone!r}")
        eps = 1.0 / b1 + (1.0 if self.monotone else 2.0) * cc / b2
        if not math.isfinite(eps) or eps > 700.0:
            raise ValueError(f"b_threshold and b_query give eps = {eps!r}, above 700; "
                             "increase the noise scales")
        self._set(b_threshold=b1, b_query=b2, c=cc, monotone=bool(self.monotone))

    @property
    def eps0(self) -> float:
        """The pure-DP epsilon of the class docstring, summed in rationals and rounded up (the
        float sum is three roundings off, on either side: 1/1.5 + 2/3 gave 1.3333333333333333,
        below 4/3), so that it bounds the true one; exact where a float holds it."""
        return rational_up(Fraction(1) / Fraction(self.b_threshold)
                           + Fraction(1 if self.monotone else 2) * self.c / Fraction(self.b_query))

    def exact_eps0(self) -> ExactFloat | None:
        """eps0 where it equals the epsilon of the class docstring (1/2 + 2/4 = 1)."""
        eps = self.eps0
        return eps if isinstance(eps, ExactFloat) else None


@dataclass(frozen=True, eq=False, repr=False)
class GaussianSVT(Mechanism):
    """Sparse vector technique with Gaussian noise (Zhu and Wang 2020), as a Renyi-DP bound.

    Given adaptively chosen queries q_1, ..., q_k of sensitivity 1 and
    thresholds T_i, draw rho ~ N(0, sigma_threshold^2) once and, for each
    query, nu_i ~ N(0, sigma_query^2); output "above" when
    q_i(D) + nu_i >= T_i + rho, "below" otherwise; halt after the c-th "above"
    or after k queries. With a = alpha / (2 sigma_threshold^2) and
    b = alpha s^2 / (2 sigma_query^2), s = 2 (s = 1 for monotone queries),

        eps(alpha) = a + log( sum_{m=0}^{c} C(k, m) e^{(alpha - 1) m b} ) / (alpha - 1).

    For c = 1 this is a + log(k e^{(alpha-1) b} + 1) / (alpha - 1) <= a + b +
    log(k + 1) / (alpha - 1), the form of Zhu and Wang (2020, Theorem 8:
    threshold RDP + query RDP at sensitivity 2 + log k / (alpha - 1)), with
    k + 1 outcomes counted. Derivation (a short proof of this bound): an
    output is the set S of "above" positions (|S| <= c). If the noise
    (rho, nu) produces S on D, then (rho + 1, nu + 2 e_S) produces S on D'
    (below: q' + nu <= q + 1 + nu < T + rho + 1; above: q' + nu + 2 >= q + 1 + nu >=
    T + rho + 1). So P'(S) >= Q_S(E_S) with Q_S the noise law shifted by
    -(1, 2 e_S), while P(S) = P_0(E_S). Hoelder gives
    P(S)^alpha P'(S)^{1 - alpha} <= E_{Q_S}[(dP_0/dQ_S)^alpha] = e^{(alpha-1)(a + |S| b)},
    and there are C(k, m) sets of size m. Monotone queries need only the
    shifts (1, e_S) (or (0, e_S)). Both orders of the pair obey the same bound.
    Since Renyi divergences are non-decreasing in the order, ``rdp(alpha)``
    reports eps(max(alpha, alpha*)), alpha* the minimiser of eps (the bound
    falls from +inf at alpha = 1, then rises), so that it is non-decreasing.

    Only a Renyi-DP representation is available ("rdp" route).

    Parameters
    ----------
    sigma_threshold:
        Standard deviation of the threshold noise rho, per unit sensitivity, >= 1e-150.
    sigma_query:
        Standard deviation of each query's noise nu_i, per unit sensitivity, >= 1e-150.
    k:
        Maximum number of queries screened before the algorithm halts, >= 1.
    c:
        Cut-off: number of "above" answers after which it halts, 1 <= c <= k.
    monotone:
        Whether the queries are monotone (for neighbours, all q_i move the same way).
    """

    sigma_threshold: float
    sigma_query: float
    k: int
    c: int = 1
    monotone: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        # Below SVT_MIN_SIGMA the bound's alpha / (2 sigma^2) is beyond every float at every
        # order (sigma_threshold = 1e-300 answered eps = inf at every delta).
        s1 = check.real("sigma_threshold", self.sigma_threshold, low=SVT_MIN_SIGMA)
        s2 = check.real("sigma_query", self.sigma_query, low=SVT_MIN_SIGMA)
        kk = check.bounded_int("k", self.k)
        cc = _cutoff(self.c, kk)
        if cc > 10_000:
            raise ValueError(f"c must be at most 10000, got {self.c!r}")
        if not isinstance(self.monotone, (bool, np.bool_)):
            raise TypeError(f"monotone must be a bool, got {self.monotone!r}")
        self._set(sigma_threshold=s1, sigma_query=s2, k=kk, c=cc, monotone=bool(self.monotone))

    def _log_binom(self) -> np.ndarray:
        """Upper bounds on log C(k, m) for m = 0..c: the running sum of log((k - j)/(j + 1)) with
        its error bound added (``log_binom_table``); a difference of gammaln's lost an absolute
        ulp of gammaln(k + 1) ~ k log k, 0.004 at k = 2^40."""
        logc, err = log_binom_table(float(self.k), self.c + 1)
        return logc + err

    def _bound(self, alpha: np.ndarray) -> np.ndarray:
        """The bound eps(alpha) of the class docstring (not monotone in alpha), rounded up.

        a and b are Gaussian RDPs (``gaussian_rdp``: rounded up, and neither overflows before its
        value does; sigma_query ** 2 overflowed past 1.3e154). The exponents m (alpha - 1) b
        take two roundings (raised by 2 ulps), their log-sum-exp at most ``lse_err`` of its
        terms, and the division and the sum one rounding each (``round_up``)."""
        a = np.asarray(alpha, dtype=float)
        s = 1.0 if self.monotone else 2.0
        rho_term = gaussian_rdp(a, self.sigma_threshold)
        # (halving sigma_query is exact: it is at least SVT_MIN_SIGMA, far from the subnormals)
        b = gaussian_rdp(a, self.sigma_query / s)
        m = np.arange(self.c + 1, dtype=float)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            moments = np.where(m > 0.0, m * ((a[..., None] - 1.0) * b[..., None]), 0.0)
            terms = self.cached(("log_binom",), self._log_binom) + moments * (1.0 + 2.0 * MACHINE_EPSILON)
            log_sum = special.logsumexp(terms, axis=-1)
            log_sum = log_sum + lse_err(m.size, np.max(terms, axis=-1), log_sum)
            return round_up(rho_term + log_sum / (a - 1.0))

    def _argmin_order(self) -> float:
        """The order minimising the bound (it falls, from +inf at alpha = 1, then rises)."""
        grid = 1.0 + np.logspace(-8.0, 8.0, 1601)
        vals = self._bound(grid)
        i = int(np.argmin(vals))
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        res = optimize.minimize_scalar(lambda x: float(self._bound(np.array([x]))[0]), bounds=(lo, hi),
                                       method="bounded", options={"xatol": 1e-12 * hi})
        return float(res.x) if res.success and res.fun <= vals[i] else float(grid[i])

    def rdp_curve(self) -> PairRdp:
        alpha_min = self.cached(("argmin_order",), self._argmin_order)

        def curve(alpha: np.ndarray) -> np.ndarray:
            # Renyi divergence is non-decreasing in the order, so the bound at any
            # order alpha' >= alpha also bounds order alpha: use alpha' = max(alpha, argmin).
            v = self._bound(np.maximum(np.asarray(alpha, dtype=float), alpha_min))
            return np.stack([v, v])
        return curve


@dataclass(frozen=True, eq=False, repr=False)
class NoisyGD(Mechanism):
    """Full-batch noisy gradient descent: the composition of Gaussian mechanisms N(g_i, sigma_i^2).

    Step i releases the gradient sum (each example's gradient clipped to norm
    1, so sensitivity 1) plus N(0, sigma_i^2 I); the steps compose adaptively.
    The composition of Gaussians with noise multipliers sigma_i is exactly
    mu-GDP with mu = sqrt(sum_i 1 / sigma_i^2), i.e. it is Gaussian(1 / mu):
    closed forms everywhere, RDP alpha mu^2 / 2.

    Parameters
    ----------
    sigmas:
        Noise multipliers sigma_i > 0 of the steps (noise std / sensitivity), non-empty.
    """

    sigmas: tuple[float, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        sigmas = self.sigmas
        if isinstance(sigmas, (str, bytes)) or not isinstance(sigmas, (Sequence, np.ndarray)):
            raise TypeError(f"sigmas must be a sequence of positive numbers, got {sigmas!r}")
        nested = any(isinstance(x, (Sequence, np.ndarray)) and not isinstance(x, str) for x in sigmas)
        if nested or (isinstance(sigmas, np.ndarray) and sigmas.ndim != 1):
            raise ValueError(f"sigmas must be a one-dimensional sequence of numbers, got {sigmas!r}")
        if len(sigmas) == 0:
            raise ValueError("sigmas must not be empty")
        ss = tuple(check.real(f"sigmas[{i}]", s, low=0.0, low_open=True) for i, s in enumerate(sigmas))
        self._set(sigmas=ss)
        if not math.isfinite(self.mu):
            raise ValueError(f"sigmas give mu = {self.mu!r}; the noise multipliers are too small")

    @property
    def mu(self) -> float:
        """mu = sqrt(sum_i 1 / sigma_i^2) of the composition."""
        return math.sqrt(math.fsum(1.0 / s / s for s in self.sigmas))  # s * s could underflow to 0

    def exact_gdp_mu(self) -> float:
        # (its RDP alpha mu^2 / 2 is Mechanism's default, rounded up)
        return self.mu


@dataclass(frozen=True, eq=False, repr=False)
class TreeAggregation(Mechanism):
    """One epoch of tree aggregation (DP-FTRL; Kairouz et al. 2021, Appendix D).

    Prefix sums of ``steps`` per-step gradient sums are released through the nodes
    of a binary tree over the steps, each node (a sum over a dyadic block of steps)
    with its own N(0, noise_multiplier^2) noise per unit sensitivity. A record takes
    part in one step only, so it changes one node per level whose block has been
    completed, by at most the sensitivity: at most levels = floor(log2(steps)) + 1 =
    ceil(log2(steps + 1)) nodes, the convention of dp_accounting's
    ``SingleEpochTreeAggregationDpEvent`` (its RDP accountant's depth). The nodes'
    noises are independent, so the release is that many Gaussian mechanisms: exactly
    mu-GDP with mu = sqrt(levels) / noise_multiplier. Epochs compose
    (``Composition``), each record once per epoch. The sensitivity is that of one
    record's contribution under the caller's relation: dp_accounting accounts the event
    under replace-special (a record replaced by a zero one), where it is the clip norm.

    Parameters
    ----------
    noise_multiplier:
        Noise std per node over the sensitivity of one record's contribution, > 0.
    steps:
        Number of steps (leaves) of the epoch, >= 1.
    """

    noise_multiplier: float
    steps: int

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(noise_multiplier=check.real("noise_multiplier", self.noise_multiplier, low=1e-300),
                  steps=check.bounded_int("steps", self.steps))

    @property
    def levels(self) -> int:
        """Tree levels a record's step touches: floor(log2(steps)) + 1, exactly (integers)."""
        return int(self.steps).bit_length()

    def exact_gdp_mu(self) -> float:
        return math.sqrt(self.levels) / self.noise_multiplier
