"""Closed forms computed independently of autoacct, for tests to compare against."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import optimize, stats
from scipy.special import gammaln, xlogy


def gaussian_delta_closed(mu: float, eps: float) -> float:
    """Balle and Wang (2018), Theorem 8, written with scipy.stats directly."""
    la = stats.norm.logcdf(-eps / mu + mu / 2)
    lb = stats.norm.logcdf(-eps / mu - mu / 2)
    return float(math.exp(la) - math.exp(eps + lb))


def gaussian_eps_closed(mu: float, delta: float) -> float:
    """Root of gaussian_delta_closed(mu, eps) = delta, by Brent's method."""
    if gaussian_delta_closed(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta_closed(mu, hi) > delta:
        hi *= 2
    return float(optimize.brentq(lambda e: gaussian_delta_closed(mu, e) - delta, 0.0, hi, xtol=1e-13))


def rr_delta_closed(eps0: float, k: int, eps: float) -> float:
    """k-fold randomized response with log-odds eps0: a binomial sum over the number of
    truthful answers j, privacy loss eps0 (2j - k)."""
    p = 1.0 / (1.0 + math.exp(-eps0))
    j = np.arange(k + 1)
    loss = eps0 * (2 * j - k)
    logpmf = stats.binom.logpmf(j, k, p)
    terms = np.where(loss > eps, np.exp(logpmf) * -np.expm1(np.minimum(eps - loss, 0.0)), 0.0)
    return float(terms.sum())


def rr_eps_closed(eps0: float, k: int, delta: float) -> float:
    if rr_delta_closed(eps0, k, 0.0) <= delta:
        return 0.0
    return float(optimize.brentq(lambda e: rr_delta_closed(eps0, k, e) - delta, 0.0, k * eps0, xtol=1e-13))


def two_point_delta_closed(p: tuple[float, float], q: tuple[float, float], k: int, eps: float) -> float:
    """delta(eps) of the pair (P^k, Q^k) for distributions P, Q on two outcomes: a binomial
    sum over the number j of first outcomes, sum_j C(k, j) max(P(j) - e^eps Q(j), 0)."""
    j = np.arange(k + 1)
    log_c = stats.binom.logpmf(j, k, 0.5) + k * math.log(2.0)
    log_p = log_c + j * math.log(p[0]) + (k - j) * math.log(p[1])
    log_q = log_c + j * math.log(q[0]) + (k - j) * math.log(q[1])
    gap = np.exp(log_p) * -np.expm1(np.minimum(eps + log_q - log_p, 0.0))
    return float(gap.sum())


def poisson_rr_delta_closed(q: float, p: float, k: int, eps: float) -> float:
    """k Poisson-subsampled (rate q) randomized responses truthful with probability p, under
    add/remove: the larger of the removal pair ((1-q) Q + q P, Q) and the addition pair
    (Q, (1-q) Q + q P), with P = (p, 1-p) and Q = (1-p, p)."""
    mix = ((1 - q) * (1 - p) + q * p, (1 - q) * p + q * (1 - p))
    base = (1 - p, p)
    return max(two_point_delta_closed(mix, base, k, eps), two_point_delta_closed(base, mix, k, eps))


def eps_from_delta_closed(delta_of, delta: float, hi: float) -> float:
    """Root of delta_of(eps) = delta on [0, hi] (0 when delta_of(0) <= delta), by Brent's method."""
    if delta_of(0.0) <= delta:
        return 0.0
    while delta_of(hi) > delta:
        hi *= 2
    return float(optimize.brentq(lambda e: delta_of(e) - delta, 0.0, hi, xtol=1e-13))


def finite_pair_delta_closed(p, q, eps: float) -> float:
    """max(H_{e^eps}(P || Q), H_{e^eps}(Q || P)) of two probability vectors, summed directly:
    sum over outcomes of max(p - e^eps q, 0) (an outcome with q = 0 contributes p)."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    w = math.exp(eps)
    return float(max(np.maximum(p - w * q, 0.0).sum(), np.maximum(q - w * p, 0.0).sum()))


def kary_rr_delta_closed(noise: float, buckets: int, n: int, eps: float) -> float:
    """n-fold k-ary randomized response (output the input with probability 1 - noise, else a
    uniform bucket): a trinomial sum over the numbers i, j of runs answering x and x'
    (probabilities a = 1 - noise + noise/k and b = noise/k under x), loss (i - j) log(a/b);
    the pair is symmetric, so one direction gives delta."""
    a = 1.0 - noise + noise / buckets
    b = noise / buckets
    c = 1.0 - a - b
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    rest = n - i - j
    ok = rest >= 0
    if buckets == 2:
        ok &= rest == 0
    rest = np.where(ok, rest, 0)
    log_m = gammaln(n + 1) - gammaln(i + 1) - gammaln(j + 1) - gammaln(rest + 1) + xlogy(rest, c)
    log_p = log_m + i * math.log(a) + j * math.log(b)
    log_q = log_m + i * math.log(b) + j * math.log(a)
    gap = np.exp(log_p) * -np.expm1(np.minimum(eps + log_q - log_p, 0.0))
    return float(np.where(ok, gap, 0.0).sum())


def neyman_pearson_tradeoff(p: np.ndarray, q: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Exact tradeoff T(P, Q)(alpha) of two laws on a finite set of outcomes (Neyman and Pearson).

    The most powerful tests of P against Q reject the outcomes in decreasing order of the
    likelihood ratio q / p (randomising on the boundary outcome), so the tradeoff curve is
    piecewise linear through (sum of p, 1 - sum of q) over the rejected outcomes.
    """
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(p > 0, q / np.where(p > 0, p, 1.0), np.inf)
    order = np.argsort(-ratio, kind="stable")
    a = np.concatenate(([0.0], np.cumsum(p[order])))
    b = np.concatenate(([1.0], 1.0 - np.cumsum(q[order])))
    # Outcomes with p = 0 come first: alpha stays 0 while beta drops, so keep the lowest beta there.
    return np.clip(np.interp(alpha, a[np.r_[a[1:] > a[:-1], True]], b[np.r_[a[1:] > a[:-1], True]]), 0.0, 1.0)


def rr_composition_tpr(prob: float, k: int, fpr: np.ndarray) -> np.ndarray:
    """Largest TPR at each fpr of k runs of randomized response truthful with probability prob:
    the number of truthful answers is Bin(k, prob) under one neighbour and Bin(k, 1 - prob) under
    the other; the pair is symmetric, so one order of the test suffices."""
    j = np.arange(k + 1)
    p = stats.binom.pmf(j, k, prob)
    q = stats.binom.pmf(j, k, 1.0 - prob)
    return 1.0 - np.minimum(neyman_pearson_tradeoff(p, q, fpr), neyman_pearson_tradeoff(q, p, fpr))


def composed_pair_tpr(p, q, k: int, fpr: np.ndarray) -> np.ndarray:
    """Largest TPR at each fpr against k independent runs of the finite pair (p, q): the
    counts of each outcome are multinomial, a sufficient statistic, so the Neyman-Pearson
    curve of the product is that of the multinomial laws of the counts; both orders of the test."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    counts = [c for c in itertools.product(range(k + 1), repeat=len(p)) if sum(c) == k]
    c = np.array(counts, dtype=float)
    log_m = gammaln(k + 1) - gammaln(c + 1).sum(axis=1)
    lp = log_m + (c * np.log(p)).sum(axis=1)
    lq = log_m + (c * np.log(q)).sum(axis=1)
    P, Q = np.exp(lp), np.exp(lq)
    return 1.0 - np.minimum(neyman_pearson_tradeoff(P, Q, fpr), neyman_pearson_tradeoff(Q, P, fpr))
