"""The summed Renyi DP of many Poisson-subsampled Gaussian mechanisms, at an integer order, at once.

A composition of thousands of distinct DP-SGD steps (a schedule of sampling rates q_i and noise
multipliers sigma_i, add/remove relation) has as its Renyi DP the sum of its steps' (Mironov 2017,
Proposition 1). :func:`~autoacct.subsampling.gaussian_rdp.sgm_rdp` bounds one step at a time, and
at a fractional order through a series, about 25 ms a step; a composition's order search then
costs minutes. Here one integer order n >= 2 of every step is one array computation, and
:func:`family_log_moment` returns an upper bound on

    K(n) = sum_i k_i (n - 1) eps_i(n) = sum_i k_i log A_n(q_i, sigma_i),

from which a composition bounds fractional orders by the convexity of K
(:func:`~autoacct.subsampling.numerics.interpolate_log_moments`): looser than the series at a
fractional order, but every value is a certified upper bound.

The expansion is that of ``sgm_rdp`` at integer orders (Mironov, Talwar and Zhang 2019,
Section 3.2): A_n - 1 = sum_{k=2}^n C(n, k) (1-q)^(n-k) q^k (e^{k(k-1)/(2 sigma^2)} - 1), every
term non-negative, summed in log space per step with the same per-term error bounds; the rows
of steps are taken a block at a time so that memory stays bounded at large orders.
"""

from __future__ import annotations

import math

import numpy as np

from autoacct.exactness import round_up
from autoacct.limits import check_deadline
from autoacct.subsampling.gaussian_rdp import SERIES_MAX_ORDER, minkowski_rdp
from autoacct.subsampling.numerics import UNIT_ROUNDOFF, log_binom_table, log_expm1, lse_err

#: Most entries (steps x terms) of one block of the computation.
_BLOCK_ENTRIES = 1 << 20


def family_log_moment(params: np.ndarray, counts: np.ndarray, n: int) -> float:
    """An upper bound on sum_i counts_i log A_n(q_i, sigma_i) (inf where one overflows).

    Parameters
    ----------
    params:
        One row (q_i, sigma_i) per step: Poisson sampling rate 0 < q_i < 1 and noise
        multiplier sigma_i > 0 (noise std over the L2 sensitivity) of the Gaussian mechanism
        subsampled; the pair is ((1 - q) N(0, sigma^2) + q N(1, sigma^2), N(0, sigma^2)),
        whose larger Renyi divergence is the first (Mironov, Talwar and Zhang 2019, Theorem 5).
    counts:
        How many times each step runs (positive).
    n:
        The Renyi order, an integer >= 2; or 1, where the bound is on the steps' summed
        KL divergence (the log-moment's slope at 1, not its value 0; :func:`family_kl`).
    """
    params = np.asarray(params, dtype=float).reshape(-1, 2)
    counts = np.asarray(counts, dtype=float)
    if n == 1:
        return family_kl(params, counts)
    if n > SERIES_MAX_ORDER:
        # Above it the expansion's n terms per step cost too much (sgm_rdp's bound there):
        # counts_i (n - 1) eps_i(n), each product rounded up.
        return _sum_up(np.array([round_up(round_up((n - 1.0) * minkowski_rdp(float(q), float(s), float(n))) * c)
                                 for (q, s), c in zip(params, counts)]))
    logc, logc_err = log_binom_table(float(n), n + 1)
    k = np.arange(2, n + 1, dtype=float)
    logc, logc_err = logc[2:], logc_err[2:]
    rows = max(1, _BLOCK_ENTRIES // k.size)
    total = 0.0
    for start in range(0, len(params), rows):
        if start:
            # A sum over some of the steps bounds nothing: past the deadline, stop.
            check_deadline(f"the Renyi DP of {len(params)} subsampled Gaussian steps")
        block = params[start:start + rows]
        log_a = _log_a_up(block[:, 0], block[:, 1], n, k, logc, logc_err)
        if not np.all(np.isfinite(log_a)):
            return math.inf
        total += _sum_up(log_a * counts[start:start + rows])
    return total


def family_kl(params: np.ndarray, counts: np.ndarray) -> float:
    """An upper bound on sum_i counts_i KL(P_i || Q_i): the steps' Renyi DP at order 1.

    With P = (1 - q) Q + q R, Q = N(0, sigma^2), R = N(1, sigma^2) and Y = dR/dQ - 1 (Y >= -1,
    E_Q Y = 0, E_Q Y^2 = chi^2 = e^{1/sigma^2} - 1), KL(P || Q) = E_Q phi(qY) with
    phi(u) = (1 + u) log(1 + u). Each step takes the least of three bounds on it:

    * q / (2 sigma^2), by joint convexity of KL (P, Q is a q-mixture of the pair R, Q with the
      pair Q, Q), the one that stays finite for tiny sigma;
    * log(1 + q^2 chi^2) = D_2(P || Q), the binomial sum A_2 (KL is at most any higher order);
    * q^2 chi^2 / 2 + q^3 min(1, chi^2) / (6 (1 - q)): phi(u) - u - u^2/2 has derivative
      log(1 + u) - u <= 0 and vanishes at 0, so it is <= 0 for u >= 0, and for u = qY < 0 it is
      int_u^0 (s - log(1 + s)) ds <= int_0^{|u|} t^2 / (2 (1 - t)) dt <= q^3 |Y|^3 / (6 (1 - q)),
      where E_Q |Y|^3 1{Y < 0} <= min(1, E_Q Y^2) as |Y| <= 1 there; then E_Q with E_Q Y = 0.
      For small q it is the KL to O(q^3) (4% over it at q = 0.0175, sigma = 1), where D_2 is
      twice it.

    The reverse KL(Q || P) is at most KL(P || Q): the limit at 1 of Mironov, Talwar and Zhang
    (2019, Theorem 5) for the orders above 1. Roundings: q/(2 sigma^2) takes 3 (formed as
    (q/sigma)/sigma, which does not pass through a subnormal sigma^2); the others a few plus
    expm1's, whose relative error is (1 + t) times its argument t = 1/sigma^2's (2 roundings).
    """
    q, sigma = params[:, 0], params[:, 1]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        convex = 0.5 * (q / sigma) / sigma * (1.0 + 4.0 * UNIT_ROUNDOFF)
        t = 1.0 / sigma / sigma
        a = q * q * np.expm1(t)
        tail = q ** 3 * np.minimum(np.expm1(t), 1.0) / (6.0 * (1.0 - q))
        series = np.minimum(np.log1p(a), 0.5 * a + tail) * (1.0 + (16.0 + 4.0 * t) * UNIT_ROUNDOFF)
        each = np.nextafter(np.minimum(convex, np.where(np.isnan(series), np.inf, series)), np.inf)
    if not np.all(np.isfinite(each)):
        return math.inf
    return _sum_up(each * counts)


def _log_a_up(q: np.ndarray, sigma: np.ndarray, n: int, k: np.ndarray, logc: np.ndarray,
              logc_err: np.ndarray) -> np.ndarray:
    """Upper bounds on log A_n for each step (rows), as ``sgm_rdp``'s ``_log_a_int`` bounds one.

    Term k of row i is t_ik = log C(n, k) + k log q_i + (n - k) log(1 - q_i) + log(e^{g_ik} - 1),
    g_ik = k (k - 1) / (2 sigma_i^2), off by at most the table's error plus 8 roundings of the
    magnitudes summed. Each magnitude is at most its largest over k (k |log q|, (n - k)
    |log(1 - q)| and g grow with k; |log(e^g - 1)| is largest at an end, as log(e^g - 1)
    grows with g), so one bound per row, e_i, serves all its terms. Then sum_k e^{t_ik} <=
    e^{e_i} times the computed terms' sum, whose log-sum-exp is off by at most (terms + 2)
    roundings plus two of the magnitudes of its maximum and its value (``numerics.lse_err``);
    log(1 + e^x) is then a few roundings of itself, covered by the final factor.
    """
    lq, l1q = np.log(q), np.log1p(-q)
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        # (k (k - 1) / 2 / sigma / sigma: sigma * sigma overflowed to inf past sigma = 1.3e154,
        # making g 0 and the bound 5e-324 where the truth is up to 1e-299; now only g itself may
        # leave the normal range: +inf for a tiny sigma, and so is the bound, or a subnormal,
        # off by half a spacing, far below the final rounding's 5e-324)
        g = np.multiply.outer(1.0 / sigma, k * (k - 1.0) * 0.5) / sigma[:, None]
    terms = log_expm1(g)
    ends = np.max(np.abs(terms[:, [0, -1]]), axis=1)
    worst = float(np.max(logc_err)) + 8.0 * UNIT_ROUNDOFF * (
        float(np.max(np.abs(logc))) + n * (np.abs(lq) + np.abs(l1q)) + ends + g[:, -1] + 1.0)
    terms += logc
    terms += np.multiply.outer(lq, k)
    terms += np.multiply.outer(l1q, n - k)
    # Terms whose logarithm underflows to -inf are below e^(-1e308): zeros here, as in sgm_rdp
    # (a row of them only has A_n = 1).
    top = np.max(terms, axis=1)
    ok = np.isfinite(top) | (top == -np.inf)
    safe_top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(under="ignore", divide="ignore", invalid="ignore"):
        terms -= safe_top[:, None]
        np.exp(terms, out=terms)
        value = safe_top + np.log(np.sum(terms, axis=1))
        rounding = lse_err(k.size, safe_top, np.where(np.isfinite(value), value, 0.0))
        out = np.logaddexp(0.0, value + worst + rounding) * (1.0 + 8.0 * UNIT_ROUNDOFF)
    # A term that is +inf (sigma so small that g overflows) makes the bound infinite.
    return np.where(ok, np.nextafter(out, np.inf), np.inf)


def _sum_up(x: np.ndarray) -> float:
    """An upper bound on the sum of the non-negative entries of ``x``: a sum of m terms is off
    by at most (m - 1) roundings of the total."""
    s = float(np.sum(x))
    return float(np.nextafter(s * (1.0 + (x.size + 1) * UNIT_ROUNDOFF), math.inf))
