"""Certified privacy-loss laws of one epoch of random allocation of a Gaussian, for the PLD route.

The epoch's dominating pair (module :mod:`autoacct.subsampling.allocation`): with sigma = s,
t steps and Z_j iid N(0, 1) under Q, l_j = exp(Z_j / s - 1/(2 s^2)) (E_Q l = 1),
T = l_1 + ... + l_t and R = T / t = dP/dQ. Both profiles are expectations of convex
functions of R under Q:

    H_g(P || Q) = E_Q[(R - g)_+],   H_g(Q || P) = E_Q[(1 - g R)_+],   g = e^eps >= 0.

Lattice: x_k = k d (d the spacing), cells C_k = (x_k, x_k+1], k < K, and the overflow event
B = {some l_j > x_K}. Masses of one summand under Q, in closed form (log l ~ N(-1/(2 s^2), 1/s^2)):
m_k = Q(l in C_k) and mu_k = E_Q[l; l in C_k] = P_1(l in C_k), P_1 the law with Z_1 ~ N(1/s, 1).

Upper laws (convex order). Send each l_j <= x_K to the two ends of its cell with the weights
that keep its mean (l'_j = x_k w.p. (x_k+1 - l_j) / d, x_k+1 otherwise): E[l'_j | l_j] = l_j,
so on B^c, T' = sum l'_j has E[T' | l] = T and, by Jensen's inequality, E f(T'/t) >= E f(R) for
every convex f: both profiles of the pair (R' Q, Q), R' = T'/t, dominate the true ones at
every g, which is what composition needs (Dong, Roth and Su 2022; the discretiser's
"connect the dots" of Doroshenko et al. 2022, here applied to each summand on the scale of
the likelihood ratio, where its cost is a variance of at most d^2 / 4 per summand instead of a
shift). T' lives on the lattice: its Q-law on B^c is w^{*t}, w the lattice masses of one l'
(hat functions: w_k = E_Q[(1 - |l/d - k|)_+; l <= x_K]), and its P'-law is
(x w) * w^{*(t-1)} (P'(T' = u) = E_Q[(T'/t) 1{T' = u}] = E_Q[l'_1 1{T' = u}] by symmetry).
H_g(P || Q) <= E_Q[(R - g)_+ 1_{B^c}] + P(B) (split any test set on B), so the forward law
is the P'-masses at log(u / t), u < W d, and the rest of the P'-mass, which is
1 - sum of those (E_Q[R' 1_{B^c}] = P(B^c)), at +inf; the backward law the Q-masses at
-log(u / t), 0 < u < W d, and the rest of the Q-mass at +inf.

Lower laws (post-processing). N = sum_j k_j, k_j the cell of l_j (on B^c), is a function of
the output, so the pair of its laws (P_N, Q_N) is dominated by the epoch, and so are its
compositions. Q_N = m^{*t}, P_N = mu * m^{*(t-1)} (as above), and given N = n each l_j lies in
its cell, so the ratio P_N(n) / Q_N(n) = E_Q[R | N = n] lies in (n d / t, (n + t) d / t].
Leaving out mass (B, N >= W, entries below their error) and lowering loss values lowers
a profile, so the lower laws are the entries less their error bound, at the least loss
value the bounds allow.

Arithmetic. The convolutions are FFT products of vectors of length at most W, zero-padded to a
power of two n >= 2 W (no wrap-around), and truncated to W entries (all summands are
non-negative, so a partial sum beyond W d stays beyond). Each vector carries a bound E on the
2-norm of its error: for computed a^, b^ with errors Ea, Eb, the computed product's error is
at most F + Ea |b^|_1 + |a|_1 Eb (Young's inequality |x * y|_2 <= |x|_2 |y|_1; |a|_1 <= 1 for
every true vector here: sub-probability laws and E_Q[l] = 1), where F bounds the FFTs'
rounding: with kappa = log2(n) eta / (1 - log2(n) eta) the relative 2-norm error of a
computed FFT (Higham 2002, Theorem 24.2; eta = 16 u allows for the weights and for the
library's FFT not being the textbook radix-2 one), the spectra X^, Y^ of a^, b^ are within
kappa sqrt(n) |a^|_2 (Parseval), their product within a further 3 u |X^||Y^| per frequency
(a complex product), and the inverse transform within kappa of its result, so

    F = (1 + kappa) (kappa A2 B1 g + kappa A1 B2 + 3 u g (1 + kappa) A1 B2) + kappa A1 B2,

A1 = |a^|_1, A2 = |a^|_2 (B likewise), g = 1 + kappa sqrt(n) (bounding |Y^|_inf <= B1 g).
Clipping a computed entry at 0 and truncation do not increase an error. An error bound E
on a vector of W entries bounds each entry's error by E and the sum of its errors by
sqrt(W) E: the upper laws move that sum to +inf (a profile is at most the finite masses'
plus the masses' total error), the lower laws subtract E from each entry.

The one-summand masses are differences of normal tail functions (each taken on the side where
it is small, so no cancellation against 1), with the error bounds of :func:`_cells`; the hat
weights (k + 1) m_k - mu_k / d cancel up to a factor k, which their bounds carry, and in the
bulk (cells of mass above 1e-7 d) they are computed in mpmath and rounded once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import mpmath
import numpy as np
from scipy import fft as sfft
from scipy import special

from autoacct import _validation as check
from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses.atoms import AtomLoss
from autoacct.mechanism import LossPart, Mechanism, Neighboring

_U = MACHINE_EPSILON
#: Relative 2-norm error per level of a computed FFT (Higham 2002, Theorem 24.2: the weights'
#: error mu plus gamma_4 (sqrt(2) + mu), about 6.7 unit roundoffs for weights accurate to one),
#: 16 unit roundoffs (8 machine epsilons) to leave room for the library's FFT.
_ETA = 8.0 * _U
#: Relative error allowed to scipy's normal tail function (documented as a few roundings).
_NDTR_REL = 2e-15
#: Lattice spacing as a fraction of the standard deviation of one summand, sqrt(e^{1/s^2} - 1).
SPACING = 0.02
#: Standard deviations of Z_1 ~ N(1/s, 1) (the summand that carries the record under P) above
#: its mean covered by the lattice: the truncated summand's P-mass is Phi(-7) ~ 1.3e-12.
_Z_SPAN = 7.0
#: Cells whose masses (per unit of l) exceed this are computed in mpmath (:func:`_exact_shares`).
_EXACT_TAIL = 1e-7
#: Most lattice points per law (about 3 s of FFTs; larger epochs answer by Renyi DP only).
MAX_POINTS = 1 << 19


@dataclass(frozen=True)
class EpochLaws:
    """The four laws of one epoch: upper (dominating, not ``tight``) and lower (``tight``) laws
    of the forward loss log R under P and of the backward loss -log R under Q."""

    forward_upper: AtomLoss
    backward_upper: AtomLoss
    forward_lower: AtomLoss
    backward_lower: AtomLoss
    spacing: float
    points: int


def lattice(steps: int, sigma: float) -> tuple[float, int]:
    """(d, W): the spacing and the number of lattice points 0, d, ..., (W - 1) d of the sums.

    The last point covers t + 1 (the other summands, beyond which their Q-mass is tiny for a
    sum of means t - 1) plus l at Z_1 = 1/s + 7 (the record's own summand)."""
    s = sigma
    if 1.0 / (s * s) > 700.0:
        return math.inf, MAX_POINTS + 1
    d = SPACING * math.sqrt(math.expm1(1.0 / (s * s)))
    top = math.exp(min((1.0 / s + _Z_SPAN) / s - 1.0 / (2.0 * s * s), 700.0))
    return d, int(math.ceil((2.0 * steps + top) / d)) + 1


def _cells(a: np.ndarray, extra: float) -> tuple[np.ndarray, np.ndarray]:
    """Normal masses Phi(a_k+1) - Phi(a_k) of the cells between the increasing computed
    arguments a = s log(k d) -+ 1/(2 s) (the first may be -inf, exactly), and bounds on their
    errors (``extra`` = s + 1/s).

    The computed a is within 2 u (|a| + s + 1/s) of the exact one (u the machine epsilon:
    k d, its logarithm, the product with s and the sum with 1/(2 s) are each one rounding,
    and s |log x| <= |a| + 1/(2 s)), which moves the tail min(Phi(a), Phi(-a)) by a relative
    (|a| + 1) times as much (the Mills ratio phi / tail is at most |a| + 1); scipy's ndtr adds a
    relative 2e-15 (a few roundings) and its own argument's rounding, u (|a| + 1)^2. Left of 0 a
    cell is a difference of distribution functions, right of it of survival functions; a cell
    straddling 0 is 1 less both tails."""
    finite = np.isfinite(a)
    tail = special.ndtr(-np.abs(a))
    absa = np.where(finite, np.abs(a), 0.0)
    rel = _NDTR_REL + 2.5 * _U * (absa + extra + 1.0) * (absa + 1.0)
    err = np.where(finite, tail * rel, 0.0)
    lo, hi = a[:-1], a[1:]
    left = hi <= 0.0
    right = lo >= 0.0
    mass = np.where(left, tail[1:] - tail[:-1], np.where(right, tail[:-1] - tail[1:], 1.0 - tail[:-1] - tail[1:]))
    mass = np.maximum(mass, 0.0)
    bound = err[:-1] + err[1:] + 2.0 * _U * np.where(left | right, mass, 1.0)
    return mass, bound


def _exact_shares(sigma: float, d: float, ks: np.ndarray) -> tuple[np.ndarray, ...]:
    """m_k, mu_k and the cell's shares to its ends for the cells k in ``ks`` (consecutive), in
    mpmath with 40 digits and each rounded once to a float (so each is off by at most a
    relative 2 u: the 40 digits absorb the shares' cancellation, a factor up to k)."""
    with mpmath.workdps(40):
        s = mpmath.mpf(sigma)
        dd = mpmath.mpf(d)
        half = 1 / (2 * s)
        x = [dd * int(k) for k in range(int(ks[0]), int(ks[-1]) + 2)]
        f0 = [mpmath.ncdf(s * mpmath.log(v) + half) for v in x]
        f1 = [mpmath.ncdf(s * mpmath.log(v) - half) for v in x]
        rows = []
        for i, k in enumerate(ks):
            m = f0[i + 1] - f0[i]
            mu = f1[i + 1] - f1[i]
            rows.append((m, mu, mu / dd - int(k) * m, (int(k) + 1) * m - mu / dd))
    return tuple(np.array([float(r[j]) for r in rows]) for j in range(4))


def summand_masses(sigma: float, d: float, points: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One summand's lattice vectors with per-entry error bounds: ``m`` and ``mu`` (cells
    k < K = points - 1), the hat masses ``w`` and their first moments ``xw`` (points k <= K).

    Where the normal tails exceed :data:`_EXACT_TAIL` (the bulk, where the hat shares cancel by
    a factor k against masses of order 1), the cells are computed in mpmath
    (:func:`_exact_shares`); elsewhere in floats with the error bounds of :func:`_cells`."""
    s = sigma
    k = np.arange(points, dtype=float)
    with np.errstate(divide="ignore"):
        log_x = np.log(k * d)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, shift in (("m", 1.0 / (2.0 * s)), ("mu", -1.0 / (2.0 * s))):
        a = s * log_x + shift  # -inf at x = 0, exactly
        out[name] = _cells(a, s + 1.0 / s)
    m, em = out["m"]
    mu, emu = out["mu"]
    kc = k[:-1]
    # Shares of cell k sent to its right end x_k+1 and left end x_k: E[(l - x_k) / d; C_k] and
    # E[(x_k+1 - l) / d; C_k], each within [0, m_k] (clipping moves towards the truth).
    to_right = np.clip(mu / d - kc * m, 0.0, m)
    to_left = np.clip((kc + 1.0) * m - mu / d, 0.0, m)
    # (k + 1) e_m in both: a clip at the computed m_k is off by at most its error.
    e_right = emu / d + (kc + 1.0) * em + 4.0 * _U * (mu / d + kc * m)
    e_left = emu / d + (kc + 1.0) * em + 4.0 * _U * (mu / d + (kc + 1.0) * m)
    bulk = np.flatnonzero(np.minimum(m, mu) > _EXACT_TAIL * d)
    if bulk.size:
        ks = np.arange(bulk[0], bulk[-1] + 1)
        m[ks], mu[ks], to_right[ks], to_left[ks] = _exact_shares(s, d, ks)
        for arr, err in ((m, em), (mu, emu), (to_right, e_right), (to_left, e_left)):
            err[ks] = 2.0 * _U * arr[ks]
    w = np.zeros(points)
    ew = np.zeros(points)
    w[:-1] += to_left
    w[1:] += to_right
    ew[:-1] += e_left
    ew[1:] += e_right
    ew += 2.0 * _U * w
    out["m"], out["mu"] = (m, em), (mu, emu)
    out["w"] = (w, ew)
    out["xw"] = (k * d * w, k * d * ew + 3.0 * _U * k * d * w)
    return out


@dataclass(frozen=True)
class _Vec:
    """A computed non-negative vector x^ of a true one x: the error x^ - x is a + f, with
    |a|_1 <= ``d1`` and |a|_inf <= ``dinf`` (errors of the data, propagated) and |f|_2 <= ``f2``
    (the FFTs' rounding, propagated)."""

    values: np.ndarray
    d1: float
    dinf: float
    f2: float

    @classmethod
    def of(cls, values: np.ndarray, err: np.ndarray) -> _Vec:
        """A vector whose entries are off by at most ``err`` (the norms rounded up)."""
        grow = 1.0 + 2.0 * len(err) * _U
        return cls(values, float(np.sum(err)) * grow, float(np.max(err, initial=0.0)), 0.0)

    def sum_error(self, width: int) -> float:
        """A bound on the sum of the absolute errors of the first ``width`` entries."""
        return (self.d1 + math.sqrt(width) * self.f2) * (1.0 + 1e-9)

    def entry_error(self) -> float:
        """A bound on the error of each entry (|x|_inf <= |x|_1 and |x|_inf <= |x|_2)."""
        return (self.dinf + self.f2) * (1.0 + 1e-9)


def _product(a: _Vec, b: _Vec, width: int) -> _Vec:
    """The first ``width`` entries of the convolution a * b by FFT, with its error bounds (see
    the module docstring): every norm p of the data errors obeys
    |e_a * b^ + a * e_b|_p <= |e_a|_p |b^|_1 + |a|_1 |e_b|_p, |a|_1 <= 1."""
    n = 1 << max(1, math.ceil(math.log2(len(a.values) + len(b.values))))
    fa = sfft.fft(a.values, n)
    fb = sfft.fft(b.values, n)
    c = np.maximum(sfft.ifft(fa * fb).real[:width], 0.0)
    lg = math.log2(n)
    kappa = lg * _ETA / (1.0 - lg * _ETA)
    grow = 1.0 + 2.0 * n * _U
    a1, a2 = float(np.sum(a.values)) * grow, float(np.sqrt(np.sum(a.values ** 2))) * grow
    b1, b2 = float(np.sum(b.values)) * grow, float(np.sqrt(np.sum(b.values ** 2))) * grow
    g = 1.0 + kappa * math.sqrt(n)
    fft_err = ((1.0 + kappa) * (kappa * a2 * b1 * g + kappa * a1 * b2 + 3.0 * _U * g * (1.0 + kappa) * a1 * b2)
               + kappa * a1 * b2)
    slack = 1.0 + 1e-9
    return _Vec(c, (a.d1 * b1 + b.d1) * slack, (a.dinf * b1 + b.dinf) * slack,
                (fft_err + a.f2 * b1 + b.f2) * slack)


def _power(a: _Vec, k: int, width: int) -> _Vec:
    """a^{*k} truncated to ``width`` entries (k >= 1), by binary powering."""
    result: _Vec | None = None
    square = _Vec(a.values[:width], a.d1, a.dinf, a.f2)
    while True:
        if k & 1:
            result = square if result is None else _product(result, square, width)
        k >>= 1
        if not k:
            break
        square = _product(square, square, width)
    assert result is not None
    return result


def _up(x: np.ndarray) -> np.ndarray:
    """x raised past the rounding of a logarithm of a product or quotient (a few ulps of |x| + 1)."""
    return np.nextafter(x + 8.0 * _U * (np.abs(x) + 1.0), np.inf)


def _down(x: np.ndarray) -> np.ndarray:
    return np.nextafter(x - 8.0 * _U * (np.abs(x) + 1.0), -np.inf)


def _upper_laws(t: int, sigma: float, d: float, points: int,
                vec: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[AtomLoss, AtomLoss]:
    w = _Vec.of(*vec["w"])
    xw = _Vec.of(*vec["xw"])
    rest = _power(w, t - 1, points)
    p = _product(xw, rest, points)
    q = _product(w, rest, points)
    n = np.arange(1, points, dtype=float)
    ratio_log = np.log(n * d / t)
    key = ("random allocation epoch", t, sigma, d, points)
    # Forward: P'-masses at log(u / t); the rest of the P'-mass (B, sums beyond the lattice,
    # and the entries' summed errors twice: once for the finite masses, once for the total).
    fv = _up(ratio_log)
    fp = p.values[1:]
    f_inf = 1.0 - math.fsum(fp) + 2.0 * p.sum_error(points) + 4.0 * points * _U
    forward = AtomLoss(key + ("forward upper",), fv, fp, fp * np.exp(-fv), p_inf=f_inf, tight=False)
    # Backward: Q-masses at -log(u / t), u > 0, sorted by loss; T' = 0 has loss +inf.
    bv = _up(-ratio_log)[::-1]
    bq = q.values[1:][::-1]
    b_inf = 1.0 - math.fsum(bq) + 2.0 * q.sum_error(points) + 4.0 * points * _U
    backward = AtomLoss(key + ("backward upper",), bv, bq, bq * np.exp(-bv), p_inf=b_inf, tight=False)
    return forward, backward


def _lower_laws(t: int, sigma: float, d: float, points: int,
                vec: dict[str, tuple[np.ndarray, np.ndarray]]) -> tuple[AtomLoss, AtomLoss]:
    m = _Vec.of(*vec["m"])
    mu = _Vec.of(*vec["mu"])
    rest = _power(m, t - 1, points)
    p = _product(mu, rest, points)
    q = _product(m, rest, points)
    n = np.arange(points, dtype=float)
    p_lo, p_hi = p.values - p.entry_error(), p.values + p.entry_error()
    q_lo, q_hi = q.values - q.entry_error(), q.values + q.entry_error()
    key = ("random allocation epoch", t, sigma, d, points)
    with np.errstate(divide="ignore", invalid="ignore"):
        # E_Q[R | N = n] is in (n d / t, (n + t) d / t] and within the masses' bounds.
        floor = np.log(n * d / t)
        ceiling = np.log((n + t) * d / t)
        v_lo = _down(np.maximum(np.log(p_lo / q_hi), floor))
        v_hi = _up(np.minimum(np.log(p_hi / q_lo), ceiling))
    keep_f = (p_lo > 0.0) & np.isfinite(v_lo)
    fv, fp = v_lo[keep_f], p_lo[keep_f]
    forward = AtomLoss(key + ("forward lower",), fv, fp, fp * np.exp(-fv), tight=True)
    keep_b = (q_lo > 0.0) & np.isfinite(v_hi)
    bv, bq = -v_hi[keep_b], q_lo[keep_b]
    order = np.argsort(bv, kind="stable")
    bv, bq = bv[order], bq[order]
    backward = AtomLoss(key + ("backward lower",), bv, bq, bq * np.exp(-bv), tight=True)
    return forward, backward


@lru_cache(maxsize=2)
def epoch_laws(steps: int, sigma: float) -> EpochLaws | None:
    """The certified upper and lower laws of one epoch of ``steps`` >= 2 steps of a Gaussian with
    noise multiplier ``sigma`` (see the module docstring); None when the lattice would need more
    than :data:`MAX_POINTS` points (a small sigma: the record's summand is too heavy-tailed)."""
    d, points = lattice(steps, sigma)
    if points > MAX_POINTS or not math.isfinite(d) or d <= 0.0:
        return None
    vec = summand_masses(sigma, d, points)
    fu, bu = _upper_laws(steps, sigma, d, points, vec)
    fl, bl = _lower_laws(steps, sigma, d, points, vec)
    return EpochLaws(fu, bu, fl, bl, d, points)


@dataclass(frozen=True, eq=False, repr=False)
class AllocationLowerPair(Mechanism):
    """A pair that one epoch of random allocation dominates (for its lower ends): the epoch's
    attained pair seen through N = sum_j k_j, the sum of the cells of its summands (a
    post-processing), with the masses and loss values of :func:`epoch_laws`' lower laws
    lowered by their error bounds; its laws are ``tight`` (every lower bound read off them,
    also under composition, is one of the epoch).

    Add/remove relation. Parameters: ``steps`` t >= 2 and ``sigma`` s > 0 of the epoch
    (:class:`~autoacct.subsampling.RandomAllocatedMechanism`).
    """

    steps: int
    sigma: float

    def __post_init__(self) -> None:
        super().__post_init__()
        self._set(steps=check.positive_int("steps", self.steps),
                  sigma=check.real("sigma", self.sigma, low=0.0, low_open=True))
        if self.steps < 2:
            raise ValueError(f"steps must be at least 2, got {self.steps!r}")
        if self.neighboring is None:
            self._set(neighboring=Neighboring.ADD_REMOVE)

    def loss_parts(self) -> list[LossPart] | None:
        laws = epoch_laws(self.steps, self.sigma)
        return None if laws is None else [LossPart(laws.forward_lower, laws.backward_lower, 1)]
