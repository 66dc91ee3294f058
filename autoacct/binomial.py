"""k runs of one pair on two outcomes, answered from the binomial law of its outcomes.

A pair P = (p0, p1), Q = (q0, q1) with losses a_i = log(p_i / q_i), a_1 > a_0, run k times
has the loss l_J = k a_0 + J (a_1 - a_0), where J ~ Bin(k, p1) under P counts the runs of
outcome 1, so its privacy profile is the finite sum

    delta(eps) = sum_j C(k, j) p1^j p0^(k - j) (1 - e^(eps - l_j))^+

(Kairouz, Oh and Viswanath 2015, for randomized response). Poisson-subsampled randomized
response is such a pair too, with two incommensurate losses that no lattice holds: at
q = 1e-3, eps0 = 2, k = 1e5 the PLD grid needed 1e8-1e9 points, and the accountant's bracket
on eps(1e-6) was [2.885, 3.514] after 4 s, while the sum has about 8,000 terms that matter.

Bounds. The sum is non-decreasing in p0 and p1 (as masses of unnormalised measures) and in
every loss l_j. With each mass moved by its factor 1 +- rel and each loss a_i by its bound
(both up for an upper end, both down for a lower one; :class:`~autoacct.losses.binary.TwoPoint`)
the exact sum of the moved values bounds the true profile, and that sum is computed with every
rounding bounded:

* Terms t_j = C(k, j) p1^j p0^(k - j), in a window of j around the mode j0: t_j0 from mpmath
  at 30 digits, the others by the ratios t_(j+1) / t_j = (k - j) p1 / ((j + 1) p0), each step
  a few roundings (4 u). Beyond the window, where the terms are below 1e-306, each side's
  ratios fall with the distance from the mode, so a geometric series bounds their sum, which
  the upper end adds.
* Losses: the exact l_j of the moved masses are bounded by j A_1 + (k - j) A_0, with floats A_i
  bounding log(p_i / q_i) from above for the upper end (from below for the lower one), so that
  1 - e^(eps - l_j) is bounded on the right side. (Not c + j d: near j = k, where the loss of a
  rarely sampled step's runs is small, c + j d cancels, and at q = 1e-9, eps0 = 20, k = 40 it
  moved delta(0) by a relative 1.3e-5.)
* Sums: the terms change sign once, at the first j with l_j > eps, so delta(eps) is the largest
  over i of F(i) = sum_(j >= i) t_j (1 - e^(eps - l_j)). With U_j = U_i + (j - i) d, F(i) is
  g S_i + y V_i for y = e^(eps - U_i), g = 1 - y, S_i = sum_(j >= i) t_j and
  V_i = sum_(j > i) t_j (1 - e^(-(j - i) d)): where U_i > eps every part is non-negative, and
  both sums are made by recursions over non-negative terms, so no difference cancels (the
  difference S_i - e^(eps - U_i) R_i lost all of delta(0) = 5e-24 of ten runs at q = 1e-24).
  Every F(i) bounds delta from below; the exact i is within one of the float search for it,
  and the upper end takes the largest bound of the three.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import mpmath as mp
import numpy as np

from autoacct.converters.profile import epsilon_from_profile
from autoacct.exactness import MACHINE_EPSILON

if TYPE_CHECKING:
    from autoacct.losses.binary import TwoPoint
    from autoacct.mechanism import Mechanism

_U = MACHINE_EPSILON
#: Most terms a window holds; beyond, the PLD accountant answers (2^36 runs of randomized
#: response with log-odds 0.1 need about 1e7).
MAX_TERMS = 1 << 22
#: Terms below this are left to the tail bound: a millionth of the smallest delta a query takes
#: (1e-300), so that the bound is far below it, and still a normal float. (At 1e-300 the bound
#: stood near delta at 1e-300: eps(1e-300) of 1e6 runs of PoissonSubsample(1e-6)(PureDP(1)) was
#: [0.0386, 0.668].)
_FLOOR = 1e-306
#: Smallest float: an underflowing product or sum loses at most this much.
_TINY = 5e-324


@dataclass(frozen=True)
class _Side:
    """k runs of one direction's two-point pair, bounded from one side (``upper``).

    Window j = lo, ..., lo + n - 1 of the k runs' terms t_j, with exact losses bounded by
    U_j = j a1 + (k - j) a0 (d = a1 - a0 > 0); the suffix sums ``s`` (S_i, length n + 1, 0 at n)
    and ``v`` (V_i = sum_(j > i) t_j (1 - e^(-(j - i) d))); ``rel``: a relative bound on the
    roundings of both; ``tail``: a bound on the sum of the terms outside the window (0 for a
    lower side)."""

    upper: bool
    k: int
    lo: int
    a0: float
    a1: float
    s: np.ndarray
    v: np.ndarray
    rel: float
    tail: float

    def delta(self, eps: np.ndarray) -> np.ndarray:
        """The side's bound on delta(eps) (see the module docstring: the largest F(i) over the
        float search's index and its two neighbours)."""
        eps = np.asarray(eps, dtype=float)
        n = len(self.s) - 1
        # (the quotient overflows for losses near the smallest floats, PureDP(1e-310), where eps
        # lies far beyond them: the clip below reads it as past the window, as it is)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            first = np.floor((eps - self.k * self.a0) / (self.a1 - self.a0)) + 1.0 - self.lo
        found = np.clip(np.nan_to_num(first, nan=0.0, posinf=n, neginf=0.0), 0, n).astype(np.int64)
        best = np.full(eps.shape, -np.inf)
        for i in (np.maximum(found - 1, 0), found, np.minimum(found + 1, n)):
            best = np.maximum(best, self._f(eps, i))
        if self.upper:
            return np.minimum(np.maximum(best, 0.0) + self.tail, 1.0)
        return np.clip(best, 0.0, 1.0)

    def _f(self, eps: np.ndarray, i: np.ndarray) -> np.ndarray:
        """F(i) = g S_i + y V_i bounded from the side's direction, with y = e^(eps - U_i) and
        g = 1 - y (every term non-negative where U_i > eps, so no difference cancels; -inf
        where g <= 0: that i is not the first with U_i > eps, and F(i) <= delta anyway)."""
        s, v = self.s[i], self.v[i]
        j = (self.lo + i).astype(float)
        ones, zeros = j * self.a1, (self.k - j) * self.a0
        # eps - U_i: four roundings, each within u of the sizes involved (k - j is exact); an
        # infinite eps is exact.
        t = eps - (ones + zeros)
        size = np.where(np.isfinite(eps), np.abs(eps), 0.0) + np.abs(ones) + np.abs(zeros)
        err = 4.0 * _U * size * (1.0 + 4.0 * _U)
        # The upper end takes y and g at their largest over t +- err (each an ulp, 2 u, off).
        up = 1.0 if self.upper else -1.0
        with np.errstate(over="ignore", invalid="ignore"):
            y = np.exp(t + up * err) * (1.0 + up * 2.0 * _U)
            g = -np.expm1(t - up * err) * (1.0 + up * 2.0 * _U)
            # The two products and the sum: three roundings.
            val = (g * s + y * v) * (1.0 + up * (self.rel + 4.0 * _U))
            # Each rounding that underflows (the recursion's products for V, the two here) is
            # off by half a subnormal spacing, relatively more than rel: an allowance of that
            # many spacings, down for the lower end and up for the upper one (where a term is left).
            slack = 4.0 * len(self.s) * _TINY
            val = np.where(s > 0.0, val + slack, val) if self.upper else val - slack
        return np.where((g > 0.0) & ~np.isnan(val), val, -np.inf)


def _terms(p0: float, p1: float, k: int) -> tuple[int, np.ndarray, float, float] | None:
    """(lo, t, e, tail): the terms t_j, j = lo, lo + 1, ..., of at least _FLOOR, a relative bound
    e on their roundings, and a bound on the sum of the others (None past MAX_TERMS)."""
    rho = p1 / p0
    share = p1 / (p0 + p1)
    j0 = min(k, int((k + 1) * share))
    with mp.workdps(30):
        log_t0 = (mp.loggamma(k + 1) - mp.loggamma(j0 + 1) - mp.loggamma(k - j0 + 1)
                  + j0 * mp.log(p1) + (k - j0) * mp.log(p0))
        t0 = float(mp.exp(log_t0))
    if not t0 >= _FLOOR:
        return None
    z = math.sqrt(2.0 * (math.log(max(t0, 2.0 * _FLOOR)) - math.log(_FLOOR))) + 3.0
    width = int(z * math.sqrt(k * share * (1.0 - share)) + z * z + 10.0)
    up, down = min(k - j0, width), min(j0, width)
    if up + down + 1 > MAX_TERMS:
        return None
    j = np.arange(j0, j0 + up, dtype=float)
    above = t0 * np.cumprod((k - j) / (j + 1.0) * rho)
    j = np.arange(j0, j0 - down, -1, dtype=float)
    below = t0 * np.cumprod(j / (k - j + 1.0) / rho)
    t = np.concatenate((below[::-1], [t0], above))
    keep = np.flatnonzero(t >= _FLOOR)
    t, lo = t[keep[0]:keep[-1] + 1], j0 - down + int(keep[0])
    hi = lo + len(t) - 1
    # Each step's ratio is two roundings, rho one more, the running product one: 4 u a step, and
    # t0 and its product 2 u; a term's sum of its relative errors, doubled for their products.
    e = 2.0 * (4.0 * _U * max(up, down) + 3.0 * _U)
    # The terms beyond either end, if any, by the ratio there (the ratios fall away from the mode).
    ends = ([(float(t[-1]), (k - hi) / (hi + 1.0) * rho)] if hi < k else []) + (
        [(float(t[0]), lo / (k - lo + 1.0) / rho)] if lo > 0 else [])
    tail = 0.0
    for edge, ratio in ends:
        ratio *= 1.0 + 8.0 * _U
        tail += math.inf if ratio >= 1.0 else edge * ratio / (1.0 - ratio)
    # Below 2.2e-308 the roundings of the ends' bounds underflow, each off by up to half a
    # subnormal spacing (5e-5 relatively at 1e-319), or to 0 (the terms past t_1 = 1e-199 of 10
    # runs at q = 1e-200, eps0 = 600, 1e-398 and less): as many spacings more (4), so that the
    # upper end stays positive where a term is left.
    return lo, t, e, tail * (1.0 + e + 4.0 * _U) + (4.0 * _TINY if ends else 0.0)


def _side(pair: TwoPoint, k: int, upper: bool) -> _Side | None:
    """k runs of ``pair`` bounded from one side (None where the sums do not apply: a window
    past MAX_TERMS, or losses too close for the float search)."""
    sign = 1.0 if upper else -1.0
    # The moved P-masses, each at least (upper: at most) the exact mass after its own rounding,
    # and the losses moved by their bound, and by an ulp for the sum, the same way.
    move = pair.rel + 2.0 * _U
    # k runs scale the sum by up to (1 + move)^k: beyond a relative 1e-4 (a tenth of the default
    # tol) the lattice answers (2^49 runs of DiscreteLaplace(1e8), masses within 1024 u: e^128).
    # (With move >= 2 u this also keeps k below 2.3e11, where the counts k - j and j + 1 of the
    # terms' ratios are exact floats.)
    if k * move > 1e-4:
        return None
    p = [x * (1.0 + sign * move) for x in pair.p]
    a = [float(np.nextafter(x + sign * e, sign * math.inf)) for x, e in zip(pair.loss, pair.loss_error)]
    if a[0] > a[1]:
        p, a = p[::-1], a[::-1]
    made = _terms(p[0], p[1], k)
    if made is None:
        return None
    lo, t, e, tail = made
    d = a[1] - a[0]
    # The float search for the first loss above eps is then off by less than a quarter step.
    if not d > 16.0 * _U * k * (abs(a[0]) + abs(a[1])):
        return None
    n = len(t)
    # Both suffix sums by recursion over non-negative terms, V_i = (1 - w) S_(i+1) + w V_(i+1)
    # with w = e^-d, so that 1 - w^m is never a difference: S has n roundings, V 3 n more. w and
    # 1 - w = -expm1(-d) are each off by a relative 2 u (an ulp) and u d (d = a1 - a0 is one
    # rounding off); w^m for m < n by n times that.
    s = np.zeros(n + 1)
    s[:-1] = np.cumsum(t[::-1])[::-1]
    w, c = math.exp(-d), -math.expm1(-d)
    v = np.zeros(n + 1)
    # (imported here, as in autoacct.pld.profiles: scipy.signal takes 0.65 s to load)
    from scipy.signal import lfilter
    v[:-1] = lfilter([1.0], [1.0, -w], c * s[1:][::-1])[::-1]
    gamma = (4 * n + 8) * _U / (1.0 - (4 * n + 8) * _U)
    rel = 1.01 * (gamma + e + (n + 2) * 2.0 * _U * (1.0 + d))
    return _Side(upper, k, lo, a[0], a[1], s, v, rel, tail if upper else 0.0)


@dataclass(frozen=True)
class BinomialProfiles:
    """Upper and lower profiles of k runs of a mechanism whose two directions are two-point
    pairs: the larger of the directions' sums (:func:`binomial_profiles`)."""

    uppers: tuple[_Side, ...]
    lowers: tuple[_Side, ...]
    #: Not as tight as the lattice may be where the losses' bounds are loose (a DiscreteLoss's
    #: 1024 u (|v| + 1): 1e8 runs of DiscreteLaplace(1e6) were 1.4e-3 wide on eps).
    final: bool = False

    @property
    def guess(self) -> float:
        """Just beyond the largest loss k a1 the upper sides allow (by more than the rounding
        their reads charge there, 4 u of its size), where an inverse may start: only their tails
        remain there. (The inverse's doubling from 1 stops at 1e6: 1e5 runs of PureDP(100), whose
        eps is near 1e7, gave inf.)"""
        return max(1.0, *(side.k * side.a1 * (1.0 + 64.0 * _U) for side in self.uppers))

    def upper(self, eps: Any) -> np.ndarray:
        return np.maximum(*(side.delta(eps) for side in self.uppers))

    def lower(self, eps: Any) -> np.ndarray:
        if not self.lowers:
            return np.zeros(np.shape(eps))
        return np.maximum(*(side.delta(eps) for side in self.lowers))


def binomial_profiles(m: Mechanism) -> BinomialProfiles | None:
    """The binomial profiles of ``m`` where it is k >= 2 runs of one pair on two outcomes in
    both directions (:meth:`~autoacct.losses.PrivacyLoss.two_point`), else None; kept on m.

    The lower ends come from the same pairs where both are attained (``tight``), else from the
    pairs ``m`` attains (``attained_parts``: randomized response for permute-and-flip) where
    those are k runs of two-point pairs too; where ``m`` attains other pairs, None (the PLD
    route's accountant of the attained pairs gives the lower ends then). Where it attains none
    (``attained_parts`` None and its own pairs not ``tight``: the Poisson-subsampled
    permute-and-flip), no route has a lower end but 0, and the upper sums are final: the
    lattice composes the same pairs, within its tolerance at best (1e5 runs at q = 1e-4,
    eps0 = 1: 4.5 s and 10 grid-cap warnings for an upper end 1.8e-6 above the sums')."""
    def make() -> BinomialProfiles | None:
        parts = _two_point_runs(m.kept_loss_parts())
        if parts is None:
            return None
        pairs, k, tight = parts
        attained = None if tight else m.attained_parts()
        below = (pairs, k, tight) if tight else _two_point_runs(attained)
        uppers = _every([_side(pair, k, True) for pair in pairs])
        if not tight and attained is None:
            return None if uppers is None else BinomialProfiles(uppers, (), final=True)
        if below is None or not below[2]:
            return None
        lowers = _every([_side(pair, below[1], False) for pair in below[0]])
        if uppers is None or lowers is None:
            return None
        return BinomialProfiles(uppers, lowers)
    return m.cached(("binomial",), make)


@dataclass(frozen=True)
class AttainedBinomial:
    """Lower ends from k runs of the two-point pairs a mechanism attains (:func:`attained_binomial`),
    read as the PLD route reads the accountant of its attained pairs (whose upper ends it does not
    use): eps(delta) and delta(eps) brackets with the upper ends inf and 1."""

    lowers: tuple[_Side, ...]

    def eps_scale(self, delta: float) -> float:
        """Where the inverse of the lower profile starts: the largest loss k a1, or 1."""
        return max(1.0, *(side.k * side.a1 for side in self.lowers))

    def lower(self, eps: Any) -> np.ndarray:
        return np.maximum(*(side.delta(eps) for side in self.lowers))

    def epsilon(self, delta: float, eps_scale: float, tol: float) -> tuple[float, float]:
        return epsilon_from_profile(self.lower, delta, eps_scale, upper=False, vectorised=True), math.inf

    def delta(self, eps: np.ndarray, eps_scale: float, tol: float) -> tuple[np.ndarray, np.ndarray]:
        low = self.lower(eps)
        return low, np.ones(np.shape(low))


def attained_binomial(m: Mechanism) -> AttainedBinomial | None:
    """The lower ends of ``m`` from the pairs it attains (``attained_parts``) where its own pairs
    only dominate and the attained ones are k >= 2 runs of two-point pairs, both directions
    attained; else None (kept on m). Sampling without replacement of randomized response or of
    DiscreteLaplace(t) attains the pair (q P + (1 - q) Q, Q) at every run: its binomial sum is
    exact, where the accountant of that pair bounded DiscreteLaplace(1)'s 1e5 runs at q = 1e-4 by
    eps(1e-6) >= 0.000168 (the sum: 0.1059, as for PureDP(1), whose pair's lattice fared better)."""
    def make() -> AttainedBinomial | None:
        own = m.kept_loss_parts()
        if not own or all(p.forward.tight and p.backward.tight for p in own):
            return None
        below = _two_point_runs(m.attained_parts())
        if below is None or not below[2]:
            return None
        lowers = _every([_side(pair, below[1], False) for pair in below[0]])
        return None if lowers is None else AttainedBinomial(lowers)
    return m.cached(("binomial-attained",), make)


def _two_point_runs(parts: list[Any] | None) -> tuple[list[TwoPoint], int, bool] | None:
    """(pairs, k, tight): the two directions' two-point pairs of k >= 2 runs of one pair (parts
    of equal laws counted together: [PureDP(1), PureDP(1)] run 3 and 4 times is 7 runs of one),
    and whether both are attained; None for anything else."""
    if not parts or len({(p.forward.key, p.backward.key, p.forward.tight, p.backward.tight) for p in parts}) != 1:
        return None
    laws, k = (parts[0].forward, parts[0].backward), sum(p.times for p in parts)
    pairs = [law.two_point() for law in laws]
    out = [pair for pair in pairs if pair is not None]
    return (out, k, all(law.tight for law in laws)) if len(out) == 2 and k >= 2 else None


def _every(sides: list[_Side | None]) -> tuple[_Side, ...] | None:
    """The sides, or None if one is missing."""
    out = tuple(side for side in sides if side is not None)
    return out if len(out) == len(sides) else None
