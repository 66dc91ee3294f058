"""Exact Renyi DP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar and Zhang 2019)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from autoacct import _validation
from autoacct.exactness import round_up
from autoacct.subsampling.numerics import (
    CRVZ_RHO,
    REL_TOL,
    UNIT_ROUNDOFF,
    crvz_weights,
    log1p_q_expm1_up,
    log1pexp,
    log_binom_table,
    log_expm1,
    logaddexp_up,
    lse,
    lse_err,
    mp_crvz_weights,
    mp_round_up,
)
from autoacct.zoo.mechanisms import gaussian_rdp

#: Number of tail terms fed to the alternating-series accelerator in double precision.
_TAIL_TERMS = 40
#: Results below this are returned without refinement (absolute accuracy suffices).
_ABS_TINY = 1e-290
#: Largest working precision (decimal digits) of the mpmath fallback.
_MAX_DPS = 4000
#: Noise multipliers whose orders :func:`sgm_rdp` sums by the expansions (sigma^2 and
#: 1/sigma^2 normal doubles); above, every order takes :func:`minkowski_rdp` (the value is
#: below 1e-200 alpha), below, sgm_rdp refuses sigma.
_SIGMA_RANGE = (1e-100, 1e100)
#: Most (terms x digits) one mpmath pass may cost (about half a second).
_MP_MAX_WORK = 1e5
#: Most passes of the mpmath fallback, each asking for 20 more digits.
_MP_PASSES = 6
#: Highest order at which the expansions are summed: they hold about alpha terms (10 ms at
#: 10^5, 13.7 s and 3.1 GB at 3 * 10^7, numpy's array limit at 10^20). Above it the order takes
#: :func:`minkowski_rdp`, within log(1 + (1 - q) e^{-y} / q) alpha / (alpha - 1),
#: y = (alpha - 1) / (2 sigma^2), of the truth: 1e-5 relative at q = 0.01, sigma = 1.
SERIES_MAX_ORDER = 1e5


def sgm_rdp(q: float, sigma: float, alpha: ArrayLike) -> np.ndarray:
    """Renyi DP of the Poisson-subsampled Gaussian mechanism (add/remove adjacency).

    With mu0 = N(0, sigma^2) and mu1 = (1 - q) N(0, sigma^2) + q N(1, sigma^2), the
    value is max(D_alpha(mu1 || mu0), D_alpha(mu0 || mu1)). By Mironov, Talwar and Zhang (2019, Theorem 5)
    the maximum is the first divergence, log(A_alpha) / (alpha - 1) with

        A_alpha = E_{z ~ N(0, sigma^2)} [((1 - q) + q exp((2z - 1) / (2 sigma^2)))^alpha].

    Integer orders use the binomial expansion, rewritten as
    A_alpha - 1 = sum_{k>=2} C(alpha, k) (1-q)^(alpha-k) q^k (exp(k(k-1)/(2 sigma^2)) - 1)
    whose terms are all non-negative, so nothing cancels. Fractional orders use
    the two-series expansion of their Section 3.3, split at
    z0 = 1/2 + sigma^2 log((1 - q)/q): a finite head (the orders i <= floor(alpha),
    all terms positive) plus an alternating tail whose magnitudes form a moment
    sequence, summed with the Cohen-Rodriguez Villegas-Zagier acceleration and its
    rigorous remainder bound.

    Parameters
    ----------
    q:
        Poisson sampling probability, 0 < q <= 1.
    sigma:
        Noise multiplier sigma (noise standard deviation over L2 sensitivity),
        at least 1e-100 (up to 1e100 sigma^2 and 1/sigma^2 stay normal doubles, and the
        expansions are summed; above, the Minkowski bound).
    alpha:
        Renyi order(s), each real and > 1 (fractional orders allowed).

    Returns
    -------
    numpy.ndarray
        Array of alpha's shape: an upper bound on the Renyi DP epsilon at each
        order, within relative 1e-10 of the exact value or, for values below
        1e-290, within that absolute amount, up to order ``SERIES_MAX_ORDER``; above it
        the Minkowski bound (:func:`minkowski_rdp`). q = 1 gives the Gaussian value
        alpha / (2 sigma^2), rounded up. (Outside 0.05 <= sigma <= 1e4, a fractional order
        whose value double precision cannot resolve and whose expansion has
        thousands of significant terms gets the certified but looser convexity
        interpolation between the neighbouring integer orders instead.)
    """
    q = _validation.real("q", q, low=0.0, high=1.0, low_open=True)
    # (above 1e100 a sampled Gaussian of Gaussian(1e300) raised here, at query time)
    sigma = _validation.real("sigma", sigma, low=_SIGMA_RANGE[0])
    a = _validation.real_array("alpha", alpha, low=1.0, low_open=True)
    if q == 1.0:
        return gaussian_rdp(a, sigma)
    uniq, inverse = np.unique(a, return_inverse=True)
    vals = np.array([_sgm_rdp_scalar(q, sigma, float(x)) for x in uniq])
    return vals[inverse].reshape(a.shape)


def minkowski_rdp(q: float, sigma: float, alpha: float) -> float:
    """An upper bound on the SGM Renyi DP at any order alpha > 1, in a few operations.

    With r = exp((2z - 1)/(2 sigma^2)), z ~ mu0, A_alpha = E[((1 - q) + q r)^alpha] and
    E[r^alpha] = e^{alpha (alpha - 1)/(2 sigma^2)}. Minkowski's inequality in L^alpha(mu0)
    gives A_alpha^{1/alpha} <= (1 - q) + q e^{(alpha - 1)/(2 sigma^2)}, so

        eps(alpha) <= alpha / (alpha - 1) log(1 + q (e^y - 1)),  y = (alpha - 1) / (2 sigma^2),

    at most alpha / (2 sigma^2) (the Gaussian's own, by post-processing). For y >> log(1/q)
    it is alpha / (2 sigma^2) + alpha log(q) / (alpha - 1) + O(e^{-y} / q), and that is a lower
    bound too (A_alpha >= q^alpha E[r^alpha]); for small y it is q alpha / (2 sigma^2), about
    1/q times the truth. y is formed in 3 roundings and rounded up (the bound grows with it),
    log(1 + q (e^y - 1)) by ``log1p_q_expm1_up``, the ratio alpha / (alpha - 1) and the
    product rounded up one operation each; nothing overflows before the answer does.
    """
    y = round_up((alpha - 1.0) / sigma / sigma * 0.5)
    return round_up(round_up(alpha / (alpha - 1.0)) * log1p_q_expm1_up(q, y))


def _sgm_rdp_scalar(q: float, sigma: float, alpha: float) -> float:
    """Upper bound on the SGM Renyi DP at one order; 0 < q < 1, alpha > 1."""
    if alpha > SERIES_MAX_ORDER or sigma > _SIGMA_RANGE[1]:
        return minkowski_rdp(q, sigma, alpha)
    if alpha.is_integer():
        log_a = _log_a_int(q, sigma, int(alpha))
        return round_up(log_a / (alpha - 1.0))
    return _frac_eps(q, sigma, alpha)


def _log_a_int(q: float, sigma: float, n: int) -> float:
    """Upper bound on log A_n for an integer order n >= 2 (binomial expansion)."""
    logc, logc_err = log_binom_table(float(n), n + 1)
    k = np.arange(2, n + 1, dtype=float)
    logc, logc_err = logc[2:], logc_err[2:]
    lq, l1q = math.log(q), math.log1p(-q)
    g = k * (k - 1.0) / (2.0 * sigma * sigma)
    lg = log_expm1(g)
    part_q = k * lq
    part_1q = (n - k) * l1q
    terms = logc + part_q + part_1q + lg
    if np.any(terms == math.inf):
        return math.inf
    # Terms whose logarithm underflows to -inf are below e^(-1e308): they are zero here.
    keep = np.isfinite(terms)
    mag = (np.abs(logc) + np.abs(part_q) + np.abs(part_1q) + np.abs(lg) + g + 1.0)[keep]
    err = logc_err[keep] + 8.0 * UNIT_ROUNDOFF * mag
    terms = terms[keep]
    log_am1 = lse(terms)
    if log_am1 == -math.inf:
        return 0.0
    log_rel = lse(terms + log_expm1(err)) - log_am1
    log_am1_up = (log_am1 + log1pexp(log_rel)
                  + lse_err(terms.size, float(np.max(terms)), log_am1))
    # log(1 + e^x) is computed to a relative few roundings, also for tiny results.
    log_a = log1pexp(log_am1_up)
    return log_a * (1.0 + 4.0 * UNIT_ROUNDOFF)


def _frac_terms(q: float, sigma: float, alpha: float, m: int) -> dict[str, np.ndarray]:
    """Logs of the term magnitudes of the fractional-order expansion, i = 0..m-1.

    Term i is C(alpha, i) (s0_i + s1_i) with
    s0_i = q^i (1-q)^(alpha-i) exp((i^2 - i)/(2 sigma^2)) Phi((z0 - i)/sigma) and
    s1_i = (1-q)^i q^(alpha-i) exp((j^2 - j)/(2 sigma^2)) Phi((j - z0)/sigma),
    j = alpha - i: the mu0-expectations over z < z0 and z >= z0 of the i-th
    binomial terms of ((1-q) + q r)^alpha expanded in q r / (1-q) and in
    (1-q) / (q r) respectively, r = exp((2z - 1)/(2 sigma^2)). Returned: ``log_t``
    (log of |C| (s0 + s1)), ``err`` (bound on its absolute error) and ``mag``
    (magnitude of its ingredients, for the mpmath precision).
    """
    logc, logc_err = log_binom_table(alpha, m)
    i = np.arange(m, dtype=float)
    j = alpha - i
    lq, l1q = math.log(q), math.log1p(-q)
    big_l = l1q - lq
    s2 = sigma * sigma
    w0 = sigma * big_l + (0.5 - i) / sigma
    w1 = (j - 0.5) / sigma - sigma * big_l
    ln0 = special.log_ndtr(w0)
    ln1 = special.log_ndtr(w1)
    g0 = i * (i - 1.0) / (2.0 * s2)
    g1 = j * (j - 1.0) / (2.0 * s2)
    log_s0 = logc + i * lq + j * l1q + g0 + ln0
    log_s1 = logc + j * lq + i * l1q + g1 + ln1
    log_t = np.logaddexp(log_s0, log_s1)
    # d log Phi(w)/dw = phi(w)/Phi(w) <= max(-w, 0) + 1 (Mills ratio).
    lw = sigma * (abs(lq) + abs(l1q))
    dw0 = 4.0 * UNIT_ROUNDOFF * (lw + (i + 0.5) / sigma)
    dw1 = 4.0 * UNIT_ROUNDOFF * (lw + (np.abs(j) + 0.5) / sigma)
    mag0 = np.abs(logc) + np.abs(i * lq) + np.abs(j * l1q) + g0 + np.abs(ln0) + 1.0
    mag1 = (np.abs(logc) + np.abs(j * lq) + np.abs(i * l1q) + (np.abs(j) + 1.0) ** 2 / (2.0 * s2)
            + np.abs(ln1) + 1.0)
    err0 = logc_err + 8.0 * UNIT_ROUNDOFF * mag0 + (np.maximum(-w0, 0.0) + 1.0) * dw0
    err1 = logc_err + 8.0 * UNIT_ROUNDOFF * mag1 + (np.maximum(-w1, 0.0) + 1.0) * dw1
    # A series term whose logarithm underflows to -inf is below e^(-1e308) and
    # contributes nothing (its error bound is not needed).
    fin0, fin1 = np.isfinite(log_s0), np.isfinite(log_s1)
    err = np.maximum(np.where(fin0, err0, 0.0), np.where(fin1, err1, 0.0)) + 2.0 * UNIT_ROUNDOFF
    mag = np.maximum(np.where(fin0, mag0, 0.0), np.where(fin1, mag1, 0.0))
    return {"log_t": log_t, "err": err, "mag": mag}


def _accelerated_tail(log_a: np.ndarray, err: np.ndarray) -> tuple[float, float]:
    """log of the alternating tail sum_k (-1)^k a_k and a certified upper bound on it.

    ``log_a`` holds log a_k for k < n with a_k a moment sequence (see
    :func:`_frac_eps`), ``err`` bounds on their absolute errors. The bound adds the
    propagated term errors, the rounding of the weighted sum and the acceleration
    remainder 2 a_0 / d_n (the factor 2 covers the support of nu reaching
    slightly past 1).
    """
    m_t = float(np.max(log_a))
    if m_t == -math.inf:
        return -math.inf, -math.inf
    weights, d_n = crvz_weights(log_a.size)
    with np.errstate(under="ignore", divide="ignore"):
        a = np.exp(log_a - m_t)
        s = max(float(np.dot(weights, a)), 0.0)
        log_aw = np.log(np.abs(weights) * a)
        parts = np.concatenate((log_aw + log_expm1(err),
                                [math.log(4.0 * log_a.size * UNIT_ROUNDOFF) + lse(log_aw),
                                 math.log(2.0 / d_n) + float(log_a[0]) - m_t,
                                 math.log(s) if s > 0.0 else -math.inf]))
    log_s = m_t + math.log(s) if s > 0.0 else -math.inf
    log_up = lse(parts)
    log_up += lse_err(parts.size, float(np.max(parts)), log_up)
    return log_s, m_t + log_up + 2.0 * UNIT_ROUNDOFF * (abs(m_t) + abs(log_up))


def _frac_eps(q: float, sigma: float, alpha: float) -> float:
    """Upper bound on the SGM Renyi DP at a fractional order alpha > 1, 0 < q < 1.

    A_alpha = head + tail with head = sum_{i <= floor(alpha)} (positive terms) and
    tail = sum_{k>=0} (-1)^k a_k, a_k = |term_{floor(alpha)+1+k}|. For i > alpha,
    |C(alpha, i)| = (|sin(pi alpha)|/pi) int_0^1 t^(i-alpha-1) (1-t)^alpha dt, and the
    series variable x = q r/(1-q) (resp. (1-q)/(q r)) lies in [0, 1] on its side of
    z0, so a_k = int s^k dnu(s) for a positive measure nu on [0, 1]: the
    Cohen-Rodriguez Villegas-Zagier bound |tail - S_n| <= tail/d_n <= a_0/d_n
    applies. (Rounding moves the split by a relative 1e-16; that widens the support
    of nu to [0, 1 + eta] with eta ~ 1e-16 |log q|, which multiplies the bound by at
    most 1 + 2 n^2 eta; the factor 2 in :func:`_accelerated_tail` covers it.)
    """
    n0 = math.floor(alpha)
    m = n0 + 1 + _TAIL_TERMS
    t = _frac_terms(q, sigma, alpha, m)
    log_t, err = t["log_t"], t["err"]
    if np.any(log_t == math.inf):
        return math.inf
    head_lt, head_err = log_t[: n0 + 1], err[: n0 + 1]
    tail_lt, tail_err = log_t[n0 + 1:], err[n0 + 1:]
    log_head = lse(head_lt)
    log_rho_head = lse(head_lt + log_expm1(head_err)) - log_head
    log_head_up = (log_head + log1pexp(log_rho_head)
                   + lse_err(head_lt.size, float(np.max(head_lt)), log_head))
    log_tail, log_tail_up = _accelerated_tail(tail_lt, tail_err)
    log_a = float(np.logaddexp(log_head, log_tail))
    log_a_up = logaddexp_up(log_head_up, log_tail_up)
    eps_up = round_up(log_a_up / (alpha - 1.0))
    if log_a_up - log_a <= 0.5 * REL_TOL * max(log_a, 0.0):
        return eps_up
    # Convexity of K(alpha) = log A_alpha with K(1) = 0 bounds K between the
    # neighbouring integers, where the expansion has no cancellation: a cheap
    # certified bound, looser by up to a third but enough where it is negligible.
    n_lo = math.floor(alpha)
    k_hi = _log_a_int(q, sigma, n_lo + 1)
    k_lo = _log_a_int(q, sigma, n_lo) if n_lo >= 2 else 0.0
    eps_up = min(eps_up, round_up(((n_lo + 1 - alpha) * k_lo + (alpha - n_lo) * k_hi)
                                   / (alpha - 1.0)))
    if eps_up <= _ABS_TINY:
        return eps_up
    # Double precision cannot resolve log A: it is tiny (tiny q, large sigma, or
    # alpha near 1) next to the O(1) terms that sum to A ~ 1, so rounding each of
    # them to 1e-16 swamps it. Redo the large terms in mpmath at enough digits.
    eps_mp = _frac_eps_mp(q, sigma, alpha, t, log_a_up)
    return eps_up if eps_mp is None else min(eps_up, eps_mp)


def _log_la_guess(q: float, sigma: float, alpha: float, log_a_up: float) -> float:
    """A rough estimate of log(log A_alpha), for choosing precisions.

    Uses the second-order expansion log A ~ alpha (alpha-1)/2 q^2 (e^(1/sigma^2) - 1)
    (small q), capped by the certified double-precision upper bound.
    """
    second = (math.log(alpha * (alpha - 1.0) / 2.0) + 2.0 * math.log(q)
              + float(log_expm1(np.array([1.0 / (sigma * sigma)]))[0]))
    return min(second, math.log(log_a_up)) if log_a_up > 0.0 else second


def _frac_eps_mp(q: float, sigma: float, alpha: float, t: dict[str, np.ndarray],
                 log_a_up: float) -> float | None:
    """The fractional-order bound with the dominant terms in mpmath; None if out of reach.

    Head terms whose certified double error is negligible against the target stay
    in double (their sum, with its error bound, is added exactly); the others and
    the whole tail are recomputed at ``dps`` digits, the accelerated tail with as
    many terms as its remainder bound needs. If the certified error is not below
    relative ``REL_TOL`` the target is tightened by 20 digits and the pass repeated
    (at most ``_MP_PASSES`` times, ``_MAX_DPS`` digits).
    """
    n0 = math.floor(alpha)
    log_t, err, mag = t["log_t"], t["err"], t["mag"]
    head_lt, head_err = log_t[: n0 + 1], err[: n0 + 1]
    with np.errstate(divide="ignore", over="ignore", under="ignore"):
        head_log_err = head_lt + log_expm1(head_err)
    finite_mag = float(np.max(mag[np.isfinite(mag)]))
    log_a0 = float(log_t[n0 + 1])
    log_budget = _log_la_guess(q, sigma, alpha, log_a_up) + math.log(1e-3 * REL_TOL)
    dps = 0
    for _ in range(_MP_PASSES):
        small = head_log_err <= log_budget - math.log(10.0 * (n0 + 1))
        small_lt = head_lt[small]
        small_sum, small_err = 0.0, 0.0
        if small_lt.size:
            with np.errstate(over="ignore", under="ignore"):
                small_sum = math.exp(lse(small_lt))
                small_err = math.exp(lse(head_log_err[small])) + 2.0 * (n0 + 3) * UNIT_ROUNDOFF * small_sum
        big = [int(i) for i in np.flatnonzero(~small)]
        n_tail = max(2, math.ceil((log_a0 + math.log(40.0) - log_budget) / math.log(CRVZ_RHO)) + 1)
        top = n0 + 1.0 + n_tail
        max_mag = (finite_mag + top * top / (2.0 * sigma * sigma)
                   + top * (abs(math.log(q)) + abs(math.log1p(-q)) + math.log(top)))
        digits = -log_budget / math.log(10.0) + math.log10(max_mag + 1.0)
        dps = int(min(max(30.0, 20.0 + digits), _MAX_DPS))
        if (len(big) + n_tail) * dps > _MP_MAX_WORK:
            return None
        with mpmath.workdps(dps):
            res = _mp_evaluate(q, sigma, alpha, big, n0 + 1, n_tail, small_sum, small_err,
                               max_mag, dps)
        if res is not None:
            return res
        if dps >= _MAX_DPS:
            break
        # The guess of log A was too optimistic: ask for 20 more digits.
        log_budget -= 20.0 * math.log(10.0)
    return None


def _mp_evaluate(q: float, sigma: float, alpha: float, head_idx: list[int], i0: int,
                 n_tail: int, small_sum: float, small_err: float, max_mag: float,
                 dps: int) -> float | None:
    """One mpmath pass at the current precision; None if its error is not small enough."""
    mq, ms, ma = mpmath.mpf(q), mpmath.mpf(sigma), mpmath.mpf(alpha)
    lq, l1q = mpmath.log(mq), mpmath.log1p(-mq)
    z0 = ms * ms * (l1q - lq) + mpmath.mpf(0.5)
    two_s2 = 2 * ms * ms

    def term(i: int, c: mpmath.mpf) -> mpmath.mpf:
        j = ma - i
        s0 = mpmath.exp(i * lq + j * l1q + i * (i - 1) / two_s2) * mpmath.ncdf((z0 - i) / ms)
        s1 = mpmath.exp(j * lq + i * l1q + j * (j - 1) / two_s2) * mpmath.ncdf((j - z0) / ms)
        return c * (s0 + s1)

    head = mpmath.mpf(0)
    abs_sum = mpmath.mpf(0)
    for i in head_idx:
        v = term(i, mpmath.binomial(ma, i))
        head += v
        abs_sum += abs(v)
    weights, d_n = mp_crvz_weights(n_tail)
    c = mpmath.binomial(ma, i0)
    tail = mpmath.mpf(0)
    a = []
    for k in range(n_tail):
        a.append(abs(term(i0 + k, c)))
        tail += weights[k] * a[k]
        abs_sum += a[k]
        c = c * (ma - (i0 + k)) / (i0 + k + 1)
    total = head + tail + mpmath.mpf(small_sum)
    # Each term has relative error below 10^-(dps-5) times the size of the exponents
    # it was built from; the sums add one rounding per term.
    n_terms = n_tail + len(head_idx) + 2
    rounding = mpmath.mpf(10) ** (-(dps - 5)) * (abs_sum + total) * (max_mag + 1) * n_terms
    error = mpmath.mpf(small_err) + 2 * a[0] / d_n + rounding
    if total - error <= 1:
        return None
    log_up = mpmath.log(total + error)
    log_lo = mpmath.log(total - error)
    if log_up - log_lo > REL_TOL * log_lo:
        return None
    return mp_round_up(log_up / (ma - 1))
