"""Mechanisms with integer outputs: binomial, discrete Gaussian, discrete Laplace, k-ary randomized response.

Each mechanism is given by a dominating pair (P, Q) of output distributions of
neighbouring datasets, through the law of the privacy loss L = log(dP/dQ)
under P (the PLD) and, where it is known in closed form, its Renyi divergence.

Infinite supports are truncated soundly: the P-mass of every truncated tail
(at most :data:`TAIL_MASS` per tail) is moved to the atom L = +inf, which can
only raise the privacy profile; when a support is too large to enumerate,
adjacent outcomes are merged into one whose loss is the largest loss of the
group, which again only raises it (see :func:`autoacct.losses.atoms.atoms`). The certified
``lower`` bounds of ``epsilon_bounds`` then refer to this slightly pessimistic
pair: they may exceed the truth by 2 * TAIL_MASS in delta (plus the merging
error, when a support was merged).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from autoacct import _validation as check
from autoacct.exactness import rational_up, round_up
from autoacct.losses import DiscreteLoss, PrivacyLoss
from autoacct.losses.atoms import MAX_ATOMS, TAIL_MASS, AtomLoss, atoms
from autoacct.mechanism import LossPart, Mechanism, PairRdp
from autoacct.zoo.custom import finite_pair_dp, finite_pair_rdp
from autoacct.zoo.mechanisms import LAPLACE_LOG_ULPS, log_g

__all__ = ["Binomial", "DiscreteGaussian", "DiscreteLaplace", "KaryRandomizedResponse"]


def _binomial_range(n: int, p: float) -> tuple[int, int]:
    """Outcomes [i_lo, i_hi] outside which each tail of Bin(n, p) has mass <= TAIL_MASS.

    Chernoff: P(Bin >= n x) <= e^{-n KL(x || p)} for x > p (and symmetrically below p).
    """
    budget = math.log(1.0 / TAIL_MASS)

    def excess(x: float) -> float:
        return n * float(special.xlogy(x, x / p) + special.xlogy(1.0 - x, (1.0 - x) / (1.0 - p))) - budget

    i_hi = n if excess(1.0) <= 0 else min(n, int(math.ceil(n * optimize.brentq(excess, p, 1.0))))
    i_lo = 0 if excess(0.0) <= 0 else max(0, int(math.floor(n * optimize.brentq(excess, 0.0, p))))
    return i_lo, i_hi


def _binomial_losses(n: int, p: float, shift: int) -> tuple[PrivacyLoss, PrivacyLoss]:
    """Forward (Bin(n, p) + shift || Bin(n, p)) and backward loss laws, for 1 <= shift <= n."""
    dist = stats.binom(n, p)
    i_lo, i_hi = _binomial_range(n, p)
    safety = 1.0 + 1e-9

    def below(k: int) -> float:
        return float(dist.cdf(k - 1)) * safety if k > 0 else 0.0

    def above(k: int) -> float:
        return float(dist.sf(k)) * safety if k < n else 0.0

    # Forward: P = Bin + shift, Q = Bin. With i ~ Bin under P the outcome is
    # i + shift, finite loss for i <= n - shift, loss +inf beyond.
    f_lo = min(i_lo, n - shift)
    f_hi = min(i_hi, n - shift)

    def fwd_fn(i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lp = dist.logpmf(i)
        return lp - dist.logpmf(i + shift), lp

    vals, pm, qm = atoms(f_lo, f_hi, fwd_fn)
    # Of the mass put at +inf only i > n - shift is genuinely there; the rest is truncation.
    fwd_inf = below(f_lo) + above(f_hi)
    fwd = AtomLoss(("binomial", n, p, shift, "forward", TAIL_MASS), vals, pm, qm,
                   p_inf=fwd_inf, q_ninf=below(shift),
                   p_inf_truncated=fwd_inf - float(dist.sf(n - shift)) * (1.0 - 1e-9),
                   tight=len(vals) == f_hi - f_lo + 1)

    # Backward: P = Bin, Q = Bin + shift; outcome k ~ Bin, finite loss for k >= shift.
    b_lo = max(i_lo, shift)
    b_hi = max(i_hi, shift)

    def bwd_fn(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lp = dist.logpmf(k)
        return lp - dist.logpmf(k - shift), lp

    vals, pm, qm = atoms(b_lo, b_hi, bwd_fn)
    bwd_inf = below(b_lo) + above(b_hi)
    bwd = AtomLoss(("binomial", n, p, shift, "backward", TAIL_MASS), vals, pm, qm,
                   p_inf=bwd_inf, q_ninf=above(n - shift),
                   p_inf_truncated=bwd_inf - float(dist.cdf(shift - 1)) * (1.0 - 1e-9),
                   tight=len(vals) == b_hi - b_lo + 1)
    return fwd, bwd


@dataclass(frozen=True, eq=False, repr=False)
class Binomial(Mechanism):
    """The binomial mechanism of Agarwal et al. (2018), as accounted by Koskela et al. (2021, 6.2, Theorem 11).

    M(X) = f(X) + (Z - n p) s, with f valued in (sZ)^d and independent
    Z_i ~ Bin(n, p). For a pair of datasets X, Y whose difference
    f(X) - f(Y) = s (shift_1, ..., shift_d) is given in units of s (integers),
    the pair is (Bin(n, p) + shift, Bin(n, p)) per coordinate:

        f_X(t) = sum_i C(n, i) p^i (1-p)^{n-i} delta_{i + shift}(t),  f_Y(t) = same with delta_i,

    with loss L(t) = log(f_X(t) / f_Y(t)) = log(C(n, t - shift) / C(n, t) ((1-p)/p)^shift)
    at the outcomes shift <= t <= n (Koskela et al. print the binomial ratio the other
    way up), and the atom at +inf of mass sum_{i > n - shift} C(n, i) p^i (1-p)^{n-i}. By
    their Theorem 11 the d-dimensional mechanism has the PLD of the
    composition of its d one-dimensional pairs (coordinates with equal shifts
    are composed by one spectrum power). As in that paper the guarantee is for
    the given difference vector (the worst-case pair of datasets, when it is
    known), in both orders (forward (f_X, f_Y), backward (f_Y, f_X)). A negative
    shift is the mirror image: shift -k with p is shift k with 1 - p.

    Renyi DP is +inf at every order (f_X has mass where f_Y has none); ``rdp``
    returns that true value.

    Parameters
    ----------
    n:
        Number of Bernoulli trials per coordinate, >= 1.
    p:
        Success probability, 0 < p < 1.
    shift:
        A nonzero integer, or a sequence of them, one per coordinate:
        (f(X) - f(Y))_i / s, with |shift_i| <= n.
    """

    n: int
    p: float = 0.5
    shift: int | tuple[int, ...] = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        nn = check.bounded_int("n", self.n)
        pp = check.real("p", self.p, low=0.0, high=1.0, low_open=True, high_open=True)
        shift: Any = self.shift
        if isinstance(shift, (Sequence, np.ndarray)) and not isinstance(shift, str):
            if len(shift) == 0:
                raise ValueError("shift must not be empty")
            many = tuple(check.nonzero_int(f"shift[{i}]", s) for i, s in enumerate(shift))
            labelled = [(f"shift[{i}]", s) for i, s in enumerate(many)]
            shifts: int | tuple[int, ...] = many
        else:
            one = check.nonzero_int("shift", shift)
            labelled = [("shift", one)]
            shifts = one
        for lab, s in labelled:
            if abs(s) > nn:
                raise ValueError(f"{lab} must satisfy |{lab}| <= n = {nn}, got {s!r}")
        self._set(n=nn, p=pp, shift=shifts)

    def _counts(self) -> tuple[tuple[tuple[int, float], int], ...]:
        """((|shift|, p or 1 - p), number of coordinates) for each distinct coordinate pair."""
        shifts = self.shift if isinstance(self.shift, tuple) else (self.shift,)
        counts: dict[tuple[int, float], int] = {}
        for s in shifts:
            key = (abs(s), self.p if s > 0 else 1.0 - self.p)
            counts[key] = counts.get(key, 0) + 1
        return tuple(sorted(counts.items()))

    def loss_parts(self) -> list[LossPart]:
        return self.cached(("parts",), lambda: [LossPart(*_binomial_losses(self.n, p, s), k)
                                                for (s, p), k in self._counts()])

    def rdp_curve(self) -> PairRdp:
        return lambda alpha: np.full((2,) + np.shape(alpha), np.inf)


# ----- discrete Gaussian -------------------------------------------------------------------


def _dg_log_norm(sigma: float) -> float:
    """log sum_{x in Z} e^{-x^2 / (2 sigma^2)}: Poisson summation for sigma >= 1, direct below."""
    if sigma >= 1.0:
        k = np.arange(1, 8)
        return math.log(math.sqrt(2.0 * math.pi) * sigma) + math.log1p(
            2.0 * float(np.sum(np.exp(-2.0 * math.pi ** 2 * sigma ** 2 * k ** 2))))
    x = np.arange(-60, 61, dtype=float)
    return float(special.logsumexp(-x * x / (2.0 * sigma ** 2)))


def _dg_log_ratio(sigma: float, c: np.ndarray) -> np.ndarray:
    """log(Z(c) / Z(0)) <= 0 with Z(c) = sum_{x in Z} e^{-(x - c)^2 / (2 sigma^2)}."""
    c = np.asarray(c, dtype=float)
    frac = c - np.floor(c)
    if sigma >= 1.0:
        # Z(c) = sqrt(2 pi) sigma sum_k e^{-2 pi^2 sigma^2 k^2} cos(2 pi k c).
        k = np.arange(1, 8, dtype=float)
        w = np.exp(-2.0 * math.pi ** 2 * sigma ** 2 * k ** 2)
        den = 1.0 + 2.0 * float(w.sum())
        dip = 4.0 * np.sum(w * np.sin(math.pi * k * frac[..., None]) ** 2, axis=-1)
        return np.log1p(-dip / den)
    x = np.arange(-80, 81, dtype=float)
    lz0 = special.logsumexp(-x * x / (2.0 * sigma ** 2))
    lzc = special.logsumexp(-(x - frac[..., None]) ** 2 / (2.0 * sigma ** 2), axis=-1)
    return np.minimum(lzc - lz0, 0.0)


@dataclass(frozen=True, eq=False, repr=False)
class DiscreteGaussian(Mechanism):
    """Discrete Gaussian mechanism (Canonne, Kamath and Steinke 2020).

    N_Z(mu, sigma^2) has mass e^{-(x - mu)^2 / (2 sigma^2)} / Z on the integers,
    Z = sum_{y in Z} e^{-y^2 / (2 sigma^2)}. For an integer query of
    sensitivity Delta (``sensitivity``) the dominating pair is
    (N_Z(Delta, sigma^2), N_Z(0, sigma^2)) with loss
    L(x) = (2 Delta x - Delta^2) / (2 sigma^2), on the lattice Delta / (2 sigma^2) Z
    (both orders of the pair have the same law, by x -> Delta - x). A smaller
    difference |f(D) - f(D')| < Delta gives a smaller profile (checked
    numerically in the tests; the shift Delta is the worst case).

    PLD: exact pmf on the integers, each tail beyond mass TAIL_MASS moved to
    L = +inf (bounded by the integral of the Gaussian density, so
    over-counted, never dropped); supports wider than MAX_ATOMS are merged
    soundly. RDP, exact: D_alpha = alpha Delta^2 / (2 sigma^2) +
    log(Z(alpha Delta) / Z(0)) / (alpha - 1), Z(c) = sum_x e^{-(x - c)^2 / (2 sigma^2)},
    which is at most alpha Delta^2 / (2 sigma^2) (equality at integer alpha Delta).

    Parameters
    ----------
    sigma:
        Scale sigma > 0 (for large sigma the standard deviation).
    sensitivity:
        Integer L1 = L2 sensitivity Delta >= 1 of the scalar integer query.
    """

    sigma: float
    sensitivity: int = field(default=1, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(sigma=check.real("sigma", self.sigma, low=0.0, high=1e7, low_open=True),
                  sensitivity=check.bounded_int("sensitivity", self.sensitivity, high=10 ** 6))
        # Below, the loss Delta^2 / (2 sigma^2) passes 5e11 and the lattice a PLD composes on
        # would need indices beyond 64 bits (the tradeoff of sigma = 1e-9 overflowed; at
        # 1e-162, 2 sigma^2 underflowed to 0).
        if self.sigma < _MIN_SIGMA * self.sensitivity:
            least = _MIN_SIGMA * self.sensitivity
            raise ValueError(f"sigma must be at least {_MIN_SIGMA:g} * sensitivity = {least:g}, "
                             f"got sigma={self.sigma!r}")

    def loss_parts(self) -> list[LossPart]:
        loss = self.cached(("loss",), self._loss)
        return [LossPart(loss, loss, 1)]

    def _loss(self) -> PrivacyLoss:
        s, d = self.sigma, self.sensitivity
        two_var = 2.0 * s * s
        log_z = _dg_log_norm(s)
        reach = math.sqrt(2.0 * math.log(1.0 / TAIL_MASS)) * s + 2.0
        r = int(math.ceil(reach))
        lo, hi = d - r, d + r
        # Values are multiples of the lattice: L(x) = (2x - d) * d / (2 sigma^2).
        step = 2.0 if d % 2 == 0 else 1.0
        lattice = step * d / two_var

        def fn(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            loss = ((2.0 * x - d) / step) * lattice
            return loss, -(x - d) ** 2 / two_var - log_z

        vals, pm, qm = atoms(lo, hi, fn)
        # Each tail sum_{x > d + r} e^{-(x-d)^2/(2 s^2)} <= int_r^inf e^{-u^2/(2 s^2)} du.
        tail = s * math.sqrt(math.pi / 2.0) * math.exp(float(special.log_ndtr(-r / s))
                                                       + math.log(2.0)) / math.exp(log_z)
        # The lattice pins the grid spacing to it: worth it only while it is coarse
        # against the spread Delta / sigma of L (it then keeps every atom on a grid point).
        coarse = lattice >= 0.1 * d / s
        use_lattice = lattice if (coarse and len(vals) == hi - lo + 1) else None
        loss = AtomLoss(("discrete-gaussian", s, d, TAIL_MASS, MAX_ATOMS), vals, pm, qm,
                        p_inf=2.0 * tail * (1.0 + 1e-9), lattice=use_lattice,
                        p_inf_truncated=2.0 * tail * (1.0 + 1e-9), tight=len(vals) == hi - lo + 1)
        return loss

    def rdp_curve(self) -> PairRdp:
        def curve(alpha: np.ndarray) -> np.ndarray:
            a = np.asarray(alpha, dtype=float)
            d = self.sensitivity
            bound = a * d * d / (2.0 * self.sigma ** 2)
            with np.errstate(invalid="ignore", divide="ignore"):
                v = bound + _dg_log_ratio(self.sigma, a * d) / (a - 1.0)
            # Order 1: KL = d^2 / (2 sigma^2) (E_P[x] = d by symmetry), the bound there.
            v = np.where(a == 1.0, bound, v)
            v = np.minimum(np.maximum(v, 0.0), bound)
            return np.stack([v, v])
        return curve


#: Smallest sigma per unit of sensitivity a discrete Gaussian may have (see DiscreteGaussian).
_MIN_SIGMA = 1e-6


# ----- discrete Laplace ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class DiscreteLaplace(Mechanism):
    """Discrete Laplace (geometric) mechanism: mass (1 - r)/(1 + r) r^{|x|} on Z, r = e^{-1/t}.

    For an integer query of sensitivity Delta the dominating pair is
    (Lap_Z(Delta, t), Lap_Z(0, t)), with loss L(x) = (|x| - |x - Delta|) / t.
    Its law under P has Delta + 1 atoms (two, +-1/t, for Delta = 1; three,
    -2/t, 0, 2/t, for Delta = 2):

        L = +Delta/t       with P-mass 1/(1 + r)        (x >= Delta),
        L = (2j - Delta)/t with P-mass c r^{Delta - j}  (x = j, 0 < j < Delta; c = (1-r)/(1+r)),
        L = -Delta/t       with P-mass r^Delta/(1 + r)  (x <= 0),

    and Q-mass e^{-L} times the P-mass; both orders of the pair have this law
    (x -> Delta - x). The mechanism is (Delta / t)-DP. RDP is exact:
    log(sum_L P(L) e^{(alpha - 1) L}) / (alpha - 1).

    Parameters
    ----------
    t:
        Scale t > 0 (noise mass proportional to e^{-|x|/t}).
    sensitivity:
        Integer sensitivity Delta >= 1.
    """

    t: float
    sensitivity: int = field(default=1, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        tt = check.real("t", self.t, low=0.0, low_open=True)
        d = check.bounded_int("sensitivity", self.sensitivity, high=10 ** 6)
        if d / tt > 700.0:
            raise ValueError(f"sensitivity / t must be at most 700, got t={self.t!r} "
                             f"(sensitivity {d})")
        self._set(t=tt, sensitivity=d)

    def _atoms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """(integer multiples m of the lattice, losses, log P-masses, lattice)."""
        t, d = self.t, self.sensitivity
        log_r = -1.0 / t
        log_1pr = math.log1p(math.exp(log_r))
        log_c = math.log(-math.expm1(log_r)) - log_1pr
        j = np.arange(0, d + 1, dtype=float)
        logp = log_c + (d - j) * log_r
        logp[0] = d * log_r - log_1pr
        logp[-1] = -log_1pr
        step = 2.0 if d % 2 == 0 else 1.0
        lattice = step / t
        m = (2.0 * j - d) / step
        return m, m * lattice, logp, lattice

    def loss_parts(self) -> list[LossPart]:
        _, vals, logp, lattice = self._atoms()
        loss = DiscreteLoss(vals, np.exp(logp), np.exp(logp - vals), lattice=lattice)
        return [LossPart(loss, loss, 1)]

    def rdp_curve(self) -> PairRdp:
        _, vals, logp, _ = self._atoms()
        eps = self.dp_guarantee()[0]

        def curve(alpha: np.ndarray) -> np.ndarray:
            v = _lattice_pair_rdp(vals, logp, eps, np.asarray(alpha, dtype=float))
            return np.stack([v, v])
        return curve

    def dp_guarantee(self) -> tuple[float, float]:
        return rational_up(Fraction(self.sensitivity) / Fraction(self.t)), 0.0


def _lattice_pair_rdp(vals: np.ndarray, logp: np.ndarray, eps: float, alpha: np.ndarray) -> np.ndarray:
    """Renyi divergence D_alpha(P || Q), alpha >= 1, of a pair whose loss L = log(dP/dQ) takes
    the values ``vals`` with P-masses e^logp, P and Q both of total mass 1 (exactly, for the
    exact masses; the floats are their roundings), capped by ``eps``, the max divergence, and
    by the zCDP bound alpha eps^2 / 2 (pure eps-DP is eps^2/2-zCDP; Bun and Steinke 2016,
    Proposition 1.4), which stands in where the sum below underflows.

    With beta = alpha - 1 and g(y) = e^y - 1 - y >= 0 the bracket sum_L P(L) e^{beta L} minus 1
    is S = sum_L P(L) g(beta L) + beta KL, KL = sum_L P(L) L = sum_L P(L) g(-L) (as sum Q =
    sum P): sums of non-negative terms, so no cancellation near alpha = 1 or for a
    near-uniform pair (large t). The log-sum of the terms P(L) e^{beta L} cancelled there: at
    t = 1e8 its rounding margin, 24 ulps of the terms' size a step, was 9e-15 at order 2 where
    the divergence is 1e-16, and k = 2^49 steps composed it to 5.1 (exact 0.056).

    Rounding. Each term's log is off by a few ulps of its parts' sizes: log P(L) (a few ulps
    of |log P(L)|), log g(beta L) (g's own 20 ulps at most, see mechanisms.log_g, and beta L's
    rounding, 3 ulps, moving g by a relative (2 + |beta L|) times it), and the n-term sum adds
    n ulps: log S is raised by 4 ulps of the sum of these sizes, the count and |log S| (as
    Laplace's closed form is, mechanisms.Laplace._rdp), and the value rounded up."""
    beta = alpha - 1.0
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_g_kl = log_g(-vals)
        kl_terms = logp + log_g_kl
        log_kl = float(special.logsumexp(kl_terms))
        kl_size = float(np.max(np.abs(logp) + np.abs(log_g_kl) + np.abs(vals), initial=0.0,
                               where=np.isfinite(kl_terms)))
        bl = beta[..., None] * vals
        log_g_bl = log_g(bl)
        terms = logp + log_g_bl
        sizes = np.max(np.where(np.isfinite(terms), np.abs(logp) + np.abs(log_g_bl) + np.abs(bl), 0.0), axis=-1)
        log_beta = np.log(beta)
        log_s = np.logaddexp(special.logsumexp(terms, axis=-1), log_beta + log_kl)
        sizes = 40.0 + vals.size + sizes + kl_size + np.abs(log_beta) + abs(log_kl) + np.abs(log_s)
        v = np.logaddexp(0.0, log_s + LAPLACE_LOG_ULPS * sizes) / beta
        # Order 1: the KL divergence, the limit of the formula.
        kl = math.exp(log_kl + LAPLACE_LOG_ULPS * (40.0 + vals.size + kl_size + abs(log_kl)))
        v = np.where(beta == 0.0, kl, v)
        v = np.where(np.isfinite(log_s) | (beta == 0.0), round_up(v), np.inf)
        zcdp = round_up(alpha * 0.5 * eps * eps)
    return np.clip(np.minimum(v, zcdp), 0.0, eps)


# ----- k-ary randomized response ---------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class KaryRandomizedResponse(Mechanism):
    """Randomized response over ``num_buckets`` values (the semantics of dp_accounting's
    ``RandomizedResponsePrivacyLoss``): with probability 1 - p output the input bucket, with
    probability p a bucket drawn uniformly from all k.

    Changing the input from x to x' gives the pair P = M(x), Q = M(x'): P puts
    1 - p + p/k on x, p/k on x' and p/k on each of the other k - 2 buckets; Q is its
    mirror image. The losses are +eps0 (on x), -eps0 (on x') and 0 (elsewhere), with
    eps0 = log((1 - p + p/k) / (p/k)); both directions have the same law. The pair is
    the mechanism's own (lower bounds are certified), accounted exactly as a
    :class:`~autoacct.zoo.custom.DiscretePair` of three outcome classes; k = 2 is
    binary randomized response, truthful with probability 1 - p/2.

    Parameters
    ----------
    noise_parameter:
        p in (0, 1]: the probability of a uniformly random output (p = 0 would
        reveal the input: no privacy).
    num_buckets:
        k >= 2, the number of input (and output) values.
    """

    noise_parameter: float
    num_buckets: int

    def __post_init__(self) -> None:
        super().__post_init__()
        p = check.real("noise_parameter", self.noise_parameter, low=0.0, high=1.0, low_open=True)
        k = check.bounded_int("num_buckets", self.num_buckets)
        if k < 2:
            raise ValueError(f"num_buckets must be at least 2, got {self.num_buckets!r}")
        self._set(noise_parameter=p, num_buckets=k)

    def _pair(self) -> tuple[np.ndarray, np.ndarray]:
        p, k = self.noise_parameter, self.num_buckets
        # 1 - p (k - 1)/k, not 1 - p + p/k: one rounding fewer.
        top, low = 1.0 - p * (k - 1) / k, p / k
        rest = [p * (k - 2) / k] if k > 2 else []
        return np.array([top, low, *rest]), np.array([low, top, *rest])

    def loss_parts(self) -> list[LossPart]:
        return self.cached(("parts",), self._parts)

    def _parts(self) -> list[LossPart]:
        # The losses are -eps0, 0, eps0 exactly, eps0 = log(1 + k (1 - p) / p): given so (rather
        # than as log-ratios of the rounded masses, which need not be exact multiples of one
        # another), they lie on the lattice eps0 Z, which the accountant keeps on grid points.
        p, k = self.noise_parameter, self.num_buckets
        eps0 = math.log1p(k * (1.0 - p) / p)
        top, low, *rest = self._pair()[0]
        values = [-eps0, *([0.0] * len(rest)), eps0]
        loss = DiscreteLoss(np.array(values), np.array([low, *rest, top]), np.array([top, *rest, low]),
                            lattice=eps0 if eps0 > 0 else None)
        return [LossPart(loss, loss, 1)]

    def rdp_curve(self) -> PairRdp:
        return finite_pair_rdp(*self._pair())

    def dp_guarantee(self) -> tuple[float, float] | None:
        return finite_pair_dp(*self._pair())
