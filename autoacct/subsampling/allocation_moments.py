"""Renyi log-moments of one epoch of random allocation (balls-in-bins) of a Gaussian, both
directions, as upper bounds with their rounding: the mechanism's RDP route
(:class:`~autoacct.subsampling.allocation.RandomAllocatedMechanism`, whose module docstring
derives each bound) and the tails that the epoch's PLD laws drop (:mod:`allocation_pld`).

The epoch's pair, with t steps and noise multiplier s: under Q, l_j = exp(Z_j / s - 1/(2 s^2)),
Z_j iid N(0, 1), and R = (1/t) sum_j l_j = dP/dQ. Removal, integer orders n: E_Q[R^n] exactly
from the multinomial expansion (Feldman and Shenfeld 2025); addition: bounds on E_Q[R^{1-n}]
from the exact central moments of R (a Taylor bound and an excess bound), a split at a point
below which R's lower tail (that of the geometric mean, and a Chernoff bound) is integrated,
and the geometric mean's closed form.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from scipy import special

from autoacct.subsampling.numerics import UNIT_ROUNDOFF


def _log_factorials(n_max: int) -> tuple[np.ndarray, np.ndarray]:
    """log(k!) for k = 0..n_max, and a bound on each entry's absolute rounding error.

    A running sum of log(k) (each one rounding of a value at most log k + 1), each partial sum
    one rounding of its own magnitude.
    """
    k = np.arange(1, n_max + 1, dtype=float)
    logs = np.log(k)
    lf = np.concatenate(([0.0], np.cumsum(logs)))
    err = np.concatenate(([0.0], np.cumsum(2.0 * UNIT_ROUNDOFF * (logs + 1.0)
                                           + 2.0 * UNIT_ROUNDOFF * np.abs(np.cumsum(logs)))))
    return lf, err


def _combine(a: np.ndarray, a_err: np.ndarray, b: np.ndarray, b_err: np.ndarray, lf: np.ndarray,
             lf_err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log E[(A + B)^n] for n = 0..N from log E[A^i] and log E[B^i] (A, B independent), with a
    bound on each entry's absolute error: E[(A + B)^n] = sum_i C(n, i) E[A^i] E[B^(n-i)], every
    term positive.

    Rounding, per order n: a log-sum-exp of terms each off by at most its inputs' errors plus
    five roundings of its magnitude is off by at most the largest of those (adding d_i to term i
    moves the log of the sum by at most max d_i); the exponentials of differences to the top term,
    their sum and its logarithm cost 2 (n + 4) roundings relative to the sum, and the final
    addition one rounding of the magnitudes.
    """
    n_len = a.size
    n = np.arange(n_len)[:, None]
    i = np.arange(n_len)[None, :]
    inside = i <= n
    j = np.where(inside, n - i, 0)
    terms = np.where(inside, lf[n] - lf[i] - lf[j] + a[i] + b[j], -np.inf)
    magnitude = lf[n] + lf[i] + lf[j] + np.abs(a[i]) + np.abs(b[j])
    term_err = np.where(inside, lf_err[n] + lf_err[i] + lf_err[j] + a_err[i] + b_err[j]
                        + 5.0 * UNIT_ROUNDOFF * magnitude, 0.0)
    top = np.max(terms, axis=1)
    with np.errstate(under="ignore"):
        out = top + np.log(np.sum(np.exp(terms - top[:, None]), axis=1))
    err = np.max(term_err, axis=1) + 2.0 * (n[:, 0] + 4.0) * UNIT_ROUNDOFF \
        + 2.0 * UNIT_ROUNDOFF * (np.abs(out) + np.abs(top))
    # Order 0 is log 1 = 0 exactly (else its allowance would double at every combination).
    out[0], err[0] = 0.0, 0.0
    return out, err


def log_sum_moments(steps: int, sigma: float, n_max: int) -> tuple[np.ndarray, np.ndarray]:
    """(log E[S^n] for n = 0..n_max, a bound on the absolute error of each entry), where
    S = X_1 + ... + X_t, t = ``steps``, X_j iid with log E[X^a] = a^2 / (2 sigma^2).

    Binary powering of the moment sequence (:func:`_combine` of independent partial sums, each
    with its error bounds): the multinomial expansion of E[S^n], grouped.
    """
    lf, lf_err = _log_factorials(n_max)
    orders = np.arange(n_max + 1, dtype=float)
    single = orders * orders / (2.0 * sigma * sigma)
    single_err = 4.0 * UNIT_ROUNDOFF * np.abs(single)
    single_err[0] = 0.0

    def combine(x: tuple[np.ndarray, np.ndarray], y: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return _combine(x[0], x[1], y[0], y[1], lf, lf_err)

    result: tuple[np.ndarray, np.ndarray] | None = None
    power = (single, single_err)
    k = steps
    while True:
        if k & 1:
            result = power if result is None else combine(result, power)
        k >>= 1
        if not k:
            break
        power = combine(power, power)
    assert result is not None
    return result


def remove_log_moments(steps: int, sigma: float, n_max: int) -> np.ndarray:
    """Upper bounds on K(n) = log E_Q[R^n] = (n - 1) D_n(P || Q), n = 0..n_max (removal).

    log E_Q[R^n] = log E[S^n] - n log t - n / (2 sigma^2), plus the error bounds, at least 0
    (Renyi divergences are non-negative) and at most the Gaussian's n (n - 1) / (2 sigma^2).
    """
    log_s, err = log_sum_moments(steps, sigma, n_max)
    n = np.arange(n_max + 1, dtype=float)
    shift = n * math.log(steps) + n / (2.0 * sigma * sigma)
    k = log_s - shift + err + 4.0 * UNIT_ROUNDOFF * (np.abs(log_s) + shift)
    gauss = n * (n - 1.0) / (2.0 * sigma * sigma) * (1.0 + 4.0 * UNIT_ROUNDOFF)
    return np.minimum(np.maximum(k, 0.0), gauss)


def add_log_moment_gm(steps: int, sigma: float, alpha: np.ndarray) -> np.ndarray:
    """Upper bound on (alpha - 1) D_alpha(Q || P) at real orders alpha > 1 (addition), from
    R >= (prod_j l_j)^{1/t}: E_Q[R^{1-a}] <= prod_j E_Q[l_j^{-(a-1)/t}]
    = exp((a - 1) (1 + (a - 1) / t) / (2 sigma^2))."""
    b = np.asarray(alpha, dtype=float) - 1.0
    return b * (1.0 + b / steps) / (2.0 * sigma * sigma) * (1.0 + 8.0 * UNIT_ROUNDOFF)


#: Largest order at which the Taylor bound on the addition direction is evaluated.
TAYLOR_MAX_ORDER = 256
#: Orders 2K of the Taylor remainder tried (each gives a valid bound; the least is kept).
_TAYLOR_ORDERS = (2, 4, 6, 8)
#: Relative rounding allowance of each term of the Taylor bound (see :func:`add_log_moments_taylor`).
_TAYLOR_REL_ERR = 1e-10
#: s = -log x on which the lower tail of R is integrated (fine near x = 1, coarser beyond s = 2).
_TAIL_GRID = np.concatenate((np.linspace(0.0, 2.0, 4001)[1:], np.linspace(2.0, 60.0, 5801)[1:]))
#: Split points x0 of the Taylor bound: every this-many-th point of the grid with 1 - x0 >= 0.01.
_SPLIT_EVERY = 16
#: Standard normal quantiles whose cells give the upper Riemann sums of the Laplace transform.
_Z_GRID = np.linspace(-12.0, 12.0, 4801)
#: Exponents lambda of the Chernoff bound on the lower tail of R (each gives a valid bound).
_CHERNOFF_LAMBDAS = np.geomspace(1e-2, 1e5, 200)


def central_moments(steps: int, sigma: float, n_max: int) -> np.ndarray:
    """E_Q[(R - 1)^n] for n = 0..n_max (R = (1/t) sum_j l_j, l_j iid log-normal with mean 1 and
    E[l^i] = e^{i (i - 1) / (2 sigma^2)}), in mpmath with 40 digits to spare, rounded outward
    (up in absolute value by 1e-25 relative).

    The moments of l - 1 are binomial sums of the E[l^i]; cumulants are additive over the t
    independent summands and homogeneous of degree n, so kappa_n(R - 1) = t^{1-n} kappa_n(l - 1).
    """
    scale = 2.0 + sigma * sigma
    # (past sigma ~ 1.3e154 the square is inf: 2 log10(sigma) + 1 digits are as many)
    digits = math.ceil(math.log10(scale)) if math.isfinite(scale) else math.ceil(2.0 * math.log10(sigma)) + 1
    with mpmath.workdps(40 + 8 * digits):
        s2 = mpmath.mpf(sigma) ** 2
        raw = [mpmath.exp(mpmath.mpf(i * (i - 1)) / (2 * s2)) for i in range(n_max + 1)]
        single = [mpmath.fsum(mpmath.binomial(n, i) * (-1) ** (n - i) * raw[i] for i in range(n + 1))
                  for n in range(n_max + 1)]
        cum = [mpmath.mpf(0)] * (n_max + 1)
        for n in range(1, n_max + 1):
            cum[n] = single[n] - mpmath.fsum(mpmath.binomial(n - 1, i - 1) * cum[i] * single[n - i]
                                             for i in range(1, n))
        cum_r = [c * mpmath.mpf(steps) ** (1 - n) for n, c in enumerate(cum)]
        mom = [mpmath.mpf(1)] + [mpmath.mpf(0)] * n_max
        for n in range(1, n_max + 1):
            mom[n] = mpmath.fsum(mpmath.binomial(n - 1, i - 1) * cum_r[i] * mom[n - i] for i in range(1, n + 1))
        out = np.array([float(m * (1 + mpmath.mpf(10) ** -25 * mpmath.sign(m))) for m in mom])
    out[0], out[1] = 1.0, 0.0
    return out


def laplace_upper(sigma: float, lam: np.ndarray) -> np.ndarray:
    """Upper bounds on psi(lambda) = E[exp(-lambda l)], l = exp(z / sigma - 1/(2 sigma^2)), z ~ N(0, 1).

    exp(-lambda l(z)) decreases in z, so on each cell of :data:`_Z_GRID` it is at most its value
    at the cell's left end (the upper Riemann sum), and at most 1 below the grid. The cells'
    normal masses are differences of the distribution function on the left half and of the
    survival function on the right (no cancellation); the sum is allowed a relative 1e-9 and an
    absolute 1e-13 for their rounding (scipy's ndtr is accurate to a few roundings).
    """
    z = _Z_GRID
    cdf, sf = special.ndtr(z), special.ndtr(-z)
    mass = np.where(z[1:] <= 0.0, cdf[1:] - cdf[:-1], sf[:-1] - sf[1:])
    ell = np.exp(z / sigma - 1.0 / (2.0 * sigma * sigma))
    with np.errstate(under="ignore", over="ignore"):
        inside = np.sum(mass[None, :] * np.exp(-lam[:, None] * ell[None, :-1]), axis=1)
        psi = cdf[0] + inside + sf[-1] * np.exp(-lam * ell[-1])
    return np.minimum(psi * (1.0 + 1e-9) + 1e-13, 1.0)


def lower_tail_log_bound(steps: int, sigma: float, s: np.ndarray) -> np.ndarray:
    """Upper bounds on log Q(R < e^{-s}) at the points s > 0 (non-decreasing in e^{-s}).

    The least of 0, the geometric mean's (R >= G and log G ~ N(m, v) under Q,
    m = -1/(2 sigma^2), v = 1/(t sigma^2)) and Chernoff's: Q(R < x) <= e^{lambda t x} psi(lambda)^t
    for every lambda > 0 (Markov's inequality for e^{-lambda t R}; psi from :func:`laplace_upper`).
    """
    m, v = -1.0 / (2.0 * sigma * sigma), 1.0 / (steps * sigma * sigma)
    gm = special.log_ndtr((-s - m) / math.sqrt(v))
    lam = _CHERNOFF_LAMBDAS
    log_psi = np.log(laplace_upper(sigma, lam))
    chernoff = np.min(lam[:, None] * steps * np.exp(-s)[None, :] + steps * log_psi[:, None], axis=0)
    # 1e-9 relative: the roundings of the exponents (each a few roundings of its magnitude).
    return np.minimum(np.minimum(gm, chernoff) * (1.0 - 1e-9) + 1e-9, 0.0)


def add_log_moments_excess(steps: int, sigma: float, n_max: int) -> np.ndarray:
    """Upper bounds on (n - 1) D_n(Q || P) = log E_Q[R^{1-n}] for n = 0..n_max (addition; entries
    0 and 1 are 0), from the variance of R and its lower tail.

    With b = n - 1, f(x) = x^{-b} and c = f''(1) / 2 = b (b + 1) / 2: f(x) = 1 - b (x - 1) + h(x),
    h(x) = (x - 1)^2 g(x) with g decreasing (the Taylor remainder of
    :func:`add_log_moments_taylor`), so h(x) <= c (x - 1)^2 for x >= 1, and for x < 1
    h(x) = c (1 - x)^2 + e(x), e(x) = f(x) - 1 + b (x - 1) - c (1 - x)^2 >= 0, decreasing on (0, 1)
    (e'(x) = -b (x^{-b-1} - 1) + 2 c (1 - x) <= 0 as x^{-b-1} >= 1 + (b + 1)(1 - x)), e(1) = 0.
    With E[R] = 1 and Q(R < x) <= B(x) (:func:`lower_tail_log_bound`):

        E_Q[R^{-b}] <= 1 + c Var(R) + E[e(R) 1{R < 1}] = 1 + c Var(R) + int_0^1 Q(R < x) |e'(x)| dx
                    <= 1 + c (e^{1/sigma^2} - 1) / t + sum_cells B(left end) (e(x_lo) - e(x_hi)),

    the cells those of :data:`_TAIL_GRID` in s = -log x; beyond it |e'(x)| <= b x^{-b-1} and the
    geometric mean's closed form bound the rest. Where b s > 600 a cell's e-increment is bounded
    by that of x^{-b} (the subtracted polynomial increases in 1 - x), computed in log space;
    elsewhere it is computed directly with an allowance of 8 roundings of the magnitudes at both
    ends. The sum is allowed a relative 1e-6, as the tail terms of :func:`add_log_moments_taylor`.
    """
    m, v = -1.0 / (2.0 * sigma * sigma), 1.0 / (steps * sigma * sigma)
    with np.errstate(over="ignore"):
        var = float(np.expm1(1.0 / (sigma * sigma))) / steps * (1.0 + 8.0 * UNIT_ROUNDOFF)
    s = np.concatenate(([0.0], _TAIL_GRID))
    log_b = np.concatenate(([0.0], lower_tail_log_bound(steps, sigma, _TAIL_GRID)))
    bb = np.arange(n_max + 1, dtype=float)[:, None] - 1.0
    bb[:2] = 1.0  # orders 0 and 1 are set to 0 below
    y = -np.expm1(-s)[None, :]
    c = bb * (bb + 1.0) / 2.0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        xb = np.exp(bb * s[None, :])
        poly = 1.0 + bb * y + c * y * y
        direct = np.diff(xb - poly, axis=1)
        allowance = 8.0 * UNIT_ROUNDOFF * (xb[:, :-1] + xb[:, 1:] + 2.0 * poly[:, 1:])
        log_direct = np.log(np.maximum(direct, 0.0) + allowance)
        log_power = bb * s[None, 1:] + np.log(-np.expm1(-bb * np.diff(s)[None, :]))
        log_de = np.where(bb * s[None, 1:] > 600.0, log_power, log_direct)
        log_terms = log_b[None, :-1] + log_de
        top = np.max(log_terms, axis=1, keepdims=True)
        log_sum = top[:, 0] + np.log(np.sum(np.exp(log_terms - top), axis=1))
        b1 = bb[:, 0]
        beyond = -b1 * m + b1 * b1 * v / 2.0 + special.log_ndtr((-s[-1] - m + b1 * v) / math.sqrt(v))
        total = 1.0 + c[:, 0] * var + (np.exp(log_sum) + np.exp(beyond)) * (1.0 + 1e-6) + 1e-300
        k = np.log(total)
    k = np.where(np.isnan(k), np.inf, k) * (1.0 + 4.0 * UNIT_ROUNDOFF) + 4.0 * UNIT_ROUNDOFF
    k[:2] = 0.0
    return np.maximum(k, 0.0)


#: Highest order of :func:`add_log_moments_split` (its cost grows with the orders).
SPLIT_MAX_ORDER = 64


def add_log_moments_split(steps: int, sigma: float, n_max: int) -> np.ndarray:
    """Upper bounds on (n - 1) D_n(Q || P) = log E_Q[R^{1-n}] for n = 0..n_max (addition; entries
    0 and 1 are 0): the Taylor bound of :func:`add_log_moments_taylor` above a split point x1,
    and below it only the excess over that bound, integrated against the lower tail of R.

    With b = n - 1, f(x) = x^{-b}, T its Taylor polynomial at 1 of degree 2K - 1 and
    g(x) = (f(x) - T(x)) / (x - 1)^{2K} (decreasing, see :func:`add_log_moments_taylor`):

    * f(R) <= T(R) + g(x1) (R - 1)^{2K} + e(R) 1{R < x1}, e(x) = (1 - x)^{2K} (g(x) - g(x1)),
      since for R >= x1 the remainder is at most g(x1) (R - 1)^{2K};
    * on (0, x1), e >= 0 and e decreases (e' = -2K (1 - x)^{2K-1} (g(x) - g(x1)) + (1 - x)^{2K} g'(x)),
      with e(x1) = 0, so E[e(R) 1{R < x1}] = int_0^x1 Q(R < x) |e'(x)| dx
      <= sum over the cells of :data:`_TAIL_GRID` below x1 of B(left end) times e's increment,
      B from :func:`lower_tail_log_bound`;
    * E[T(R) + g(x1) (R - 1)^{2K}] is a combination of the exact central moments of R.

    Where b s > 600 (and beyond the grid) a cell's increment of e is bounded by that of x^{-b}
    (T and (1 - x)^{2K} increase as x decreases), summed in log space, and the geometric mean's
    closed form bounds the rest. Increments are clipped at 0 (they are >= 0) with an allowance
    of 8 roundings of their magnitudes per cell; the other terms are allowed as in
    :func:`add_log_moments_taylor`.
    """
    mu = central_moments(steps, sigma, max(_TAYLOR_ORDERS))
    m, v = -1.0 / (2.0 * sigma * sigma), 1.0 / (steps * sigma * sigma)
    s = np.concatenate(([0.0], _TAIL_GRID))
    log_b_left = np.concatenate(([0.0], lower_tail_log_bound(steps, sigma, _TAIL_GRID)))[:-1]
    b_left = np.exp(log_b_left)
    y = -np.expm1(-s)
    cand = np.unique(np.searchsorted(s, -np.log1p(-np.geomspace(0.01, 1.0 - math.exp(-5.0), 32))))
    out = np.zeros(n_max + 1)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for n in range(2, n_max + 1):
            b = n - 1.0
            cut = int(np.searchsorted(s, 600.0 / b, side="right")) - 1  # cells 0..cut-1 computed directly
            xb = np.exp(b * s[:cut + 1])
            # Beyond the cut: increments of x^{-b} in log space, then the closed form past the grid.
            log_far = log_b_left[cut:] + b * s[cut + 1:] + np.log(-np.expm1(-b * np.diff(s[cut:])))
            beyond = -b * m + b * b * v / 2.0 + special.log_ndtr((-s[-1] - m + b * v) / math.sqrt(v))
            log_rest = float(np.logaddexp(np.logaddexp.reduce(log_far), beyond)) if log_far.size else beyond
            far = float(np.exp(log_rest))  # inf past the floats: that order's bound is inf
            best = math.inf
            for order in _TAYLOR_ORDERS[:2]:
                coef, moment_sum, magnitude = 1.0, 1.0, 1.0
                taylor = np.ones(cut + 1)
                yy = y[:cut + 1]
                for i in range(1, order):
                    coef = coef * (b + i - 1.0) / i
                    taylor = taylor + coef * yy ** i
                    moment_sum += coef * (-1.0) ** i * mu[i]
                    magnitude += abs(coef * mu[i])
                d = xb - taylor
                yk = yy ** order
                ks = cand[cand < cut]
                if ks.size == 0:
                    continue
                g = (d[ks] / yk[ks])[:, None]
                dd, dy = np.diff(d)[None, :], np.diff(yk)[None, :]
                inc = dd - g * dy
                allow = 8.0 * UNIT_ROUNDOFF * ((np.abs(d[:-1]) + np.abs(d[1:]))[None, :]
                                               + g * (yk[:-1] + yk[1:])[None, :])
                cells = np.arange(cut)[None, :] >= ks[:, None]
                below = np.sum(np.where(cells, b_left[None, :cut] * (np.maximum(inc, 0.0) + allow), 0.0), axis=1)
                total = (moment_sum + g[:, 0] * mu[order] + (below + far) * (1.0 + 1e-6)
                         + _TAYLOR_REL_ERR * (magnitude + np.abs(g[:, 0]) * mu[order]) + 1e-300)
                total = np.where(np.isfinite(total), total, np.inf)
                best = min(best, float(np.min(total)))
            out[n] = math.log(best) if best > 0.0 else math.inf
    out = np.where(np.isnan(out), np.inf, out) * (1.0 + 4.0 * UNIT_ROUNDOFF) + 4.0 * UNIT_ROUNDOFF
    out[:2] = 0.0
    return np.maximum(out, 0.0)


def add_log_moments_taylor(steps: int, sigma: float, n_max: int) -> np.ndarray:
    """Upper bounds on (n - 1) D_n(Q || P) = log E_Q[R^{1-n}] for n = 0..n_max (addition; inf where
    the bound is infinite; entries 0 and 1 are 0).

    With b = n - 1 and f(x) = x^{-b}, for any x0 in (0, 1) and K >= 1:

    * on R >= x0, f(R) <= p(R) = T(R) + g (R - 1)^{2K}, T the Taylor polynomial of f at 1 of
      degree 2K - 1 and g = (f(x0) - T(x0)) / (x0 - 1)^{2K}: the remainder is (R - 1)^{2K} times
      int_0^1 (1 - s)^{2K-1} f^(2K)(1 + s (R - 1)) ds / (2K - 1)!, which decreases in R because
      f^(2K) > 0 does;
    * p >= 0 on [0, 1) (T's terms are C(b + i - 1, i) (1 - R)^i >= 0 there), so
      E[f(R) 1{R >= x0}] <= E[p(R)], a combination of the central moments of R;
    * f decreases, so f(R) 1{R < x0} = f(x0) 1{R < x0} + int_0^x0 1{R < x} |f'(x)| dx, and
      E[f(R) 1{R < x0}] <= f(x0) B(x0) + int_0^x0 B(x) |f'(x)| dx for any B >= Q(R < .)
      non-decreasing (:func:`lower_tail_log_bound`); in s = -log x the integral is
      int_{-log x0}^inf B(e^{-s}) b e^{b s} ds, bounded by the upper Riemann sum on
      :data:`_TAIL_GRID` (B at each cell's left end) plus, beyond the grid, the geometric mean's
      E[G^{-b} 1{G < e^{-s_max}}] = e^{-b m + b^2 v / 2} Phi((-s_max - m + b v) / sqrt(v)).
      The closed form E[G^{-b} 1{G < x0}] (R >= G) is kept where it is smaller.

    The least bound over (K, x0) is kept, x0 on a subset of the grid. Rounding: each Taylor term
    is a product of at most 2K + 2 rounded factors and an exponential whose argument is below
    710 in magnitude (else inf or 0, and an underflow is covered by an absolute 1e-300), so its
    relative error is below 4000 roundings; each term's magnitude is allowed a relative
    :data:`_TAYLOR_REL_ERR` = 1e-10, far above that. The term below x0 is summed in log space and
    allowed a relative 1e-6 (its exponents carry sigma sqrt(t) times the rounding of log x0 in
    scipy's log_ndtr, whose derivative |z| + 1 <= 55 multiplies it before it underflows).
    """
    mu = central_moments(steps, sigma, max(_TAYLOR_ORDERS))
    m, v = -1.0 / (2.0 * sigma * sigma), 1.0 / (steps * sigma * sigma)
    s = _TAIL_GRID
    log_b = lower_tail_log_bound(steps, sigma, s)
    bb = np.arange(n_max + 1, dtype=float)[:, None] - 1.0
    bb[:2] = 1.0  # orders 0 and 1 are set to 0 below
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        # log of the cells B(e^{-s_j}) (e^{b s_{j+1}} - e^{b s_j}), then their sums from each cell up.
        log_cells = log_b[None, :-1] + bb * s[None, 1:] + np.log(-np.expm1(-bb * np.diff(s)[None, :]))
        beyond = -bb * m + bb * bb * v / 2.0 + special.log_ndtr((-s[-1] - m + bb * v) / math.sqrt(v))
        log_upper = np.logaddexp.accumulate(np.concatenate((beyond, log_cells[:, ::-1]), axis=1), axis=1)
        log_int = log_upper[:, ::-1]  # log of int_{s_k}^inf, k = 0..len(s) - 1
        pick = np.flatnonzero(-np.expm1(-s) >= 0.01)[::_SPLIT_EVERY]
        w = s[pick][None, :]
        below_log = np.logaddexp(bb * w + log_b[pick][None, :], log_int[:, pick])
        closed = -bb * m + bb * bb * v / 2.0 + special.log_ndtr((-w - m + bb * v) / math.sqrt(v))
        below = np.exp(np.minimum(below_log, closed))
        u = -np.expm1(-w)
        f_x0 = np.exp(bb * w)
        best = np.full(bb.shape[0], np.inf)
        for order in _TAYLOR_ORDERS:
            coef = np.ones_like(bb)  # C(b + i - 1, i), i = 0
            head = np.ones_like(w * bb)  # T(x0) = sum_i C(b + i - 1, i) u^i
            moment_sum = np.ones_like(bb)  # sum_i C(b + i - 1, i) (-1)^i mu_i
            magnitude = np.ones_like(bb)
            for i in range(1, order):
                coef = coef * (bb + i - 1.0) / i
                head = head + coef * u ** i
                moment_sum = moment_sum + coef * (-1.0) ** i * mu[i]
                magnitude = magnitude + np.abs(coef * mu[i])
            g = (f_x0 - head) / u ** order
            main = moment_sum + g * mu[order]
            err = _TAYLOR_REL_ERR * (magnitude + (f_x0 + head) / u ** order * mu[order]) + 1e-6 * below + 1e-300
            total = main + below + err
            total = np.where(np.isfinite(total), total, np.inf)
            best = np.minimum(best, np.min(total, axis=1))
        k = np.log(best)
    k = np.where(np.isnan(k), np.inf, k) * (1.0 + 4.0 * UNIT_ROUNDOFF) + 4.0 * UNIT_ROUNDOFF
    k[:2] = 0.0
    return np.maximum(k, 0.0)
