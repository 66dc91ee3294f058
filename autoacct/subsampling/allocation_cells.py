"""One summand's masses on the lattice of random allocation's epoch laws, with error bounds.

The summand is l = exp(Z / s - 1/(2 s^2)) with Z ~ N(0, 1) under Q (log l ~ N(-1/(2 s^2),
1/s^2), E_Q l = 1); the lattice is x_k = k d, its cells C_k = (x_k, x_k+1]. Here: the cells'
masses m_k = Q(l in C_k) and mu_k = E_Q[l; l in C_k] (differences of normal tail functions,
each taken on the side where it is small), the hat masses w that spread each l to its cell's
ends keeping its mean, and their first moments, each entry with a bound on its error; a
lower bound on the summand's mean offset within any cell, and a convex minorant of the cells'
offsets; and the summand's mass beyond the lattice. The epoch's laws built from them are
:mod:`autoacct.subsampling.allocation_pld`'s.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy import special

from autoacct.exactness import MACHINE_EPSILON
from autoacct.pld.hull import lower_hull

_U = MACHINE_EPSILON
#: Relative error allowed to scipy's normal tail function (documented as a few roundings).
_NDTR_REL = 2e-15
#: Cells whose masses (per unit of l) exceed this are computed in mpmath (:func:`_exact_shares`).
_EXACT_TAIL = 1e-7


def _cells(a: np.ndarray, extra: float) -> tuple[np.ndarray, np.ndarray]:
    """Normal masses Phi(a_k+1) - Phi(a_k) of the cells between the increasing computed
    arguments a = s log(k d) -+ 1/(2 s) (the first may be -inf, exactly), and bounds on their
    errors (``extra`` = s + 1/s).

    The computed a is within 2 u (|a| + s + 1/s) of the exact one (u the machine epsilon:
    k d, its logarithm, the product with s and the sum with 1/(2 s) are each one rounding,
    and s |log x| <= |a| + 1/(2 s)), which moves the tail min(Phi(a), Phi(-a)) by a relative
    (|a| + 1) times as much (the Mills ratio phi / tail is at most |a| + 1; 2.02 allows for the
    second order); scipy's ndtr adds a relative 2e-15 (a few roundings) and its own argument's
    rounding, u (|a| + 1)^2. Left of 0 a
    cell is a difference of distribution functions, right of it of survival functions; a cell
    straddling 0 is 1 less both tails."""
    finite = np.isfinite(a)
    tail = special.ndtr(-np.abs(a))
    absa = np.where(finite, np.abs(a), 0.0)
    rel = _NDTR_REL + 2.02 * _U * (absa + extra) * (absa + 1.0) + _U * (absa + 1.0) ** 2
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


#: Gauss-Legendre nodes and weights on [-1, 1] for the thin cells (:func:`_thin_cells`).
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)
#: Widest cell in Z (Delta = s log(1 + 1/k)) integrated by quadrature: Delta^16 bounds its error.
_THIN = 1.0 / 16.0
#: A cell's float error bound below which it is not integrated again.
_NEGLIGIBLE = 1e-22


def _thin_cells(sigma: float, d: float, ks: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """m_k, mu_k and the shares of the cells k in ``ks`` (k >= 1, Delta_k <= :data:`_THIN`),
    with error bounds, by quadrature of integrals that cancel nothing.

    In Z (Q: Z ~ N(0, 1), l = exp((Z - a_k) / s) x_k on the cell), cell k is (a_k, a_k + Delta],
    a_k = s log(k d) + 1/(2 s), Delta = s log(1 + 1/k), and with e(y) = exp(-a_k y - y^2/2),
    phi(a_k + y) = phi(a_k) e(y):

        m_k = phi(a_k) int_0^Delta e,    E_Q[(l - x_k) / d; C_k] = k phi(a_k) int_0^Delta expm1(y/s) e,
        E_Q[(x_k+1 - l) / d; C_k] = k phi(a_k) int_0^Delta e^(y/s) expm1((Delta - y)/s) e

    (k expm1(Delta / s) = 1), and mu_k = d (k m_k + the right share). Differences of normal tails
    lose a factor up to k to cancellation, and the shares, differences of mu_k / d and k m_k,
    another k: at sigma = 1 the float route's shares beyond the mpmath bulk were off by up to a
    relative 3e-7, which t summands and the record's first moments (a further factor l) made
    1e-10 of mass at +inf per epoch at t = 100. Here every integrand is positive.

    Each integral is an 8-point Gauss-Legendre sum. Its integrand f is entire; on the Bernstein
    ellipse with rho = 1 / Delta of [0, Delta] (within |y| <= Y = (1 + Delta) / 2) |f| <= M, and
    the rule is within (Delta / 2) (64/15) M rho^(-14) / (rho^2 - 1) (Trefethen 2008, Theorem 4.5,
    whose (n + 1)-point rule has rho^(-2n); n = 7 here), with M from |e(y)| <= exp(|a| Y + Y^2/2),
    |expm1(y / s)| <= expm1(|y| / s) and |Delta - y| <= 2 Y. The sums' rounding (positive terms,
    nodes and weights to a few roundoffs) is a relative 256 u; the computed a_k is within
    2 u (|a| + s + 1/s) (as in :func:`_cells`), which moves phi(a_k) and the integrals by a
    relative (|a| + 1) times that, and phi(a_k) is computed to a relative 4 u (a^2 + 1); the
    bounds take twice those.

    Parameters: ``sigma`` s > 0, the lattice spacing ``d`` > 0 and the cells ``ks`` (integers)."""
    s = sigma
    k = ks.astype(float)
    a = s * np.log(k * d) + 1.0 / (2.0 * s)
    delta = s * np.log1p(1.0 / k)
    y = 0.5 * delta[:, None] * (1.0 + _GL_NODES[None, :])
    rest = 0.5 * delta[:, None] * (1.0 - _GL_NODES[None, :])  # Delta - y, without cancelling
    e = np.exp(-a[:, None] * y - 0.5 * y * y)
    phi_a = np.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi)
    scale = phi_a * 0.5 * delta
    # Row sums, not BLAS products: eight terms each.
    m = scale * (e * _GL_WEIGHTS).sum(axis=1)
    right = k * scale * (np.expm1(y / s) * e * _GL_WEIGHTS).sum(axis=1)
    left = k * scale * (np.exp(y / s) * np.expm1(rest / s) * e * _GL_WEIGHTS).sum(axis=1)
    big_y = 0.5 * (1.0 + delta)
    # phi(a_k) (Delta / 2) (64/15) rho^-14 / (rho^2 - 1) M_e, rho = 1 / Delta.
    rule = scale * (64.0 / 15.0) * delta ** 16 / (1.0 - delta * delta) * np.exp(np.abs(a) * big_y + 0.5 * big_y * big_y)
    da = 2.0 * _U * (np.abs(a) + s + 1.0 / s)
    rel = 2.0 * (256.0 * _U + (np.abs(a) + 1.0) * da + 4.0 * _U * (a * a + 1.0))
    # Far out phi(a_k) and the products leave the normal floats (a_k > 37): their rounding is
    # then absolute, below 1e-300 even times k.
    floor = 1e-300 * (k + 1.0)
    err_m = m * rel + rule + floor
    err_right = right * rel + rule * k * np.expm1(big_y / s) + floor
    err_left = left * rel + rule * k * np.exp(big_y / s) * np.expm1(2.0 * big_y / s) + floor
    mu = d * (k * m + right)
    err_mu = d * (k * err_m + err_right) + 2.0 * _U * mu
    return {"m": (m, err_m), "mu": (mu, err_mu), "right": (right, err_right), "left": (left, err_left)}


def summand_masses(sigma: float, d: float, points: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One summand's lattice vectors with per-entry error bounds: ``m`` and ``mu`` (cells
    k < K = points - 1), the cells' offset masses ``right`` = E_Q[(l - x_k) / d; l in C_k] (the
    share each cell sends to its right end), the hat masses ``w`` and their first moments ``xw``
    (points k <= K).

    From the first to the last cell whose masses m_k and mu_k both exceed :data:`_EXACT_TAIL` d
    (the bulk, where the hat shares cancel by a factor k against masses of order 1), the cells
    are computed in mpmath
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
    # Thin cells outside the bulk whose float bounds are not negligible (the many beyond, at
    # most 3.5e5 of them, add less than 1e-16): by quadrature where its bounds are the smaller.
    thin = np.flatnonzero((kc >= math.ceil(s / _THIN)) & (e_right + e_left > _NEGLIGIBLE))
    if bulk.size:
        thin = thin[(thin < bulk[0]) | (thin > bulk[-1])]
    if thin.size:
        quad = _thin_cells(s, d, thin)
        better = quad["right"][1] + quad["left"][1] < e_right[thin] + e_left[thin]
        at = thin[better]
        for name, arr, err in (("m", m, em), ("mu", mu, emu), ("right", to_right, e_right), ("left", to_left, e_left)):
            arr[at], err[at] = quad[name][0][better], quad[name][1][better]
    w = np.zeros(points)
    ew = np.zeros(points)
    w[:-1] += to_left
    w[1:] += to_right
    ew[:-1] += e_left
    ew[1:] += e_right
    ew += 2.0 * _U * w
    out["m"], out["mu"] = (m, em), (mu, emu)
    out["right"] = (to_right, e_right)
    out["w"] = (w, ew)
    out["xw"] = (k * d * w, k * d * ew + 3.0 * _U * k * d * w)
    return out


def overflow_masses(sigma: float, d: float, top: int) -> tuple[float, float]:
    """Upper bounds on Q(l > x_K) and E_Q[l; l > x_K] = P_1(l > x_K) (P_1: Z ~ N(1/s, 1), the
    summand that carries the record), x_K = ``top`` d the lattice's last point: the mass of one
    summand beyond it (normal tails, with :func:`_cells`' error bounds)."""
    s = sigma
    log_x = math.log(top * d)
    out = []
    for shift in (1.0 / (2.0 * s), -1.0 / (2.0 * s)):
        mass, bound = _cells(np.array([s * log_x + shift, np.inf]), s + 1.0 / s)
        out.append(float(mass[0] + bound[0]) * (1.0 + 2.0 * _U))
    return out[0], out[1]


def least_offset(sigma: float, d: float) -> float:
    """A lower bound on E_Q[l - x_k | l in C_k] over every cell C_k = (x_k, x_k + d] (the
    summand's mean offset within its cell), so that given N = n, E_Q[R | N = n] =
    (n d + sum_j E[l_j - x_k_j | k_j]) / t >= (n d + t o) / t: given the cells, the summands
    are independent, each with its law restricted to its cell.

    With u = log l ~ N(-1/(2 s^2), 1/s^2), the density f of l has (log f)'(l) = -(s^2 u + 3/2) / l,
    which is least at u = 1 - 3/(2 s^2): s_min = -s^2 e^(3/(2 s^2) - 1). On a cell f(x) e^(-s_min x)
    then increases, so the offset is at least that of the density e^(s_min x) on [0, d] (larger in
    the likelihood-ratio order), d h(s_min d) with h(y) = 1/(1 - e^-y) - 1/y, increasing and
    convex for y < 0: at least its tangent at 0, 1/2 + y/12, which serves for -1 < y < 0 (no
    cancellation), h itself below (rounded down by 1e-12 relatively, far above its few ulps).
    Near the summand's mode this is about d/2, where the a priori bound has 0: half a cell of
    the ratio R moved the removal lower law's tail losses down by 0.005 at t = 1e4, s = 2."""
    y = -sigma * sigma * math.exp(min(1.5 / (sigma * sigma) - 1.0, 700.0)) * d
    if not math.isfinite(y) or y < -700.0:
        return 0.0
    share = 0.5 + y / 12.0 if y > -1.0 else (1.0 / (-math.expm1(-y)) - 1.0 / y) * (1.0 - 1e-12)
    return max(share, 0.0) * d * (1.0 - 4.0 * _U)


def _offset_shares(y: np.ndarray) -> np.ndarray:
    """Lower bounds on h(y) = 1/(1 - e^-y) - 1/y (h(0) = 1/2), the mean offset on [0, 1] of the
    density proportional to e^(y x): below -1 and above 1 the formula (no cancellation there)
    less a relative 1e-12; between, the tangent 1/2 + y/12 for y < 0 (h is convex there) and
    1/2 + y/12 - y^3/720 for y >= 0 (the alternating series' partial sum ending on a negative
    term, its terms decreasing for y < 2 pi)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        direct = (1.0 / (-np.expm1(-y)) - 1.0 / y) * (1.0 - 1e-12)
    near = np.where(y < 0.0, 0.5 + y / 12.0, 0.5 + y / 12.0 - y ** 3 / 720.0) * (1.0 - 4.0 * _U)
    return np.clip(np.where(np.abs(y) < 1.0, near, np.where(y < -700.0, 0.0, direct)), 0.0, 1.0)


def offset_minorant(sigma: float, d: float, points: int) -> tuple[np.ndarray, np.ndarray]:
    """A convex piecewise-linear function L (its vertices (x, L(x)), x increasing from 0 to the
    last cell's left end) with L(x_k) at most the mean offset E_Q[l - x_k | l in C_k] of every
    cell k < K = points - 1, so that given N = n (the cells' sum), by Jensen's inequality,
    E_Q[R | N = n] >= (n d + t L(n d / t)) / t: the cells' left ends x_{k_j} sum to n d.

    Each cell's offset is at least d h(g_k d) (:func:`least_offset`'s argument on the one
    cell), g_k the least slope of the log-density over it, (log f)'(l) = -(s^2 log l + 3/2) / l,
    which falls to its least at l* = e^(1 - 3/(2 s^2)) and rises beyond: its value at the
    cell's right end, its left end or l*, less 1e-12 of its magnitude's allowance for rounding.
    L is those bounds' greatest convex minorant (:func:`autoacct.pld.hull.lower_hull`),
    lowered by the most any cell's bound lies below it (a few roundings) and 1e-12 d; each cell's
    bound is first raised to :func:`least_offset`'s constant, so L is not below it but for that
    lowering (a reader may take the larger of the two at each point). Near the mode of the summand the log-density's
    slope is about -3/2 where :func:`least_offset` takes its least (-9.8 at s = 5): at s = 5
    L(1) is about 0.4995 d against 0.4967 d, and the tail losses of the lower laws sit that
    much closer to the truth."""
    s = sigma
    k = np.arange(points - 1, dtype=float)
    lo, hi = k * d, (k + 1.0) * d
    peak = math.exp(min(1.0 - 1.5 / (s * s), 700.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        at = np.where(hi <= peak, hi, np.where(lo >= peak, lo, peak))
        scale = (s * s * np.abs(np.log(at)) + 1.5) / at
        slope = -(s * s * np.log(at) + 1.5) / at - 1e-12 * scale
    y = slope * d
    offsets = np.maximum(d * _offset_shares(np.where(np.isfinite(y), y, -np.inf)) * (1.0 - 4.0 * _U),
                         least_offset(sigma, d))
    vertices = lower_hull(lo, offsets)
    xs, ys = lo[vertices], offsets[vertices]
    # The convex hull's computed slopes are non-decreasing up to rounding: where not, the
    # vertex goes (its neighbours' chord lies lower than the kink's top).
    while xs.size > 2:
        slopes = np.diff(ys) / np.diff(xs)
        kinks = np.flatnonzero(slopes[1:] < slopes[:-1]) + 1
        if kinks.size == 0:
            break
        xs, ys = np.delete(xs, kinks[:1]), np.delete(ys, kinks[:1])
    above = float(np.max(np.interp(lo, xs, ys) - offsets, initial=0.0))
    return xs, ys - max(above, 0.0) * (1.0 + 4.0 * _U) - 1e-12 * d
