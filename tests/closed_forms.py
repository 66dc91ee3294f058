"""Closed forms computed independently of autoacct, for tests to compare against."""

from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
from scipy import integrate, optimize, special, stats
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


# ----- High-precision truths (mpmath), for the property suite ------------------------------------
# Every function below works at MP_DPS significant digits and takes float parameters exactly (a
# float converts to an mpf without rounding), so its value differs from the mathematical truth by
# far less than one double ulp. They use only textbook formulas, nothing from autoacct.

MP_DPS = 60


def mp_gaussian_delta(mu: float | mp.mpf, eps: float | mp.mpf) -> mp.mpf:
    """delta(eps) of mu-GDP, Balle and Wang (2018), Theorem 8:
    Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    with mp.workdps(MP_DPS):
        mu, eps = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def mp_gaussian_tradeoff(mu: float | mp.mpf, alpha: float) -> mp.mpf:
    """The mu-GDP tradeoff function of Dong, Roth and Su (2022): Phi(Phi^-1(1 - alpha) - mu)."""
    with mp.workdps(MP_DPS):
        a = mp.mpf(alpha)
        if a == 0:
            return mp.mpf(1)
        if a == 1:
            return mp.mpf(0)
        # Phi^-1(1 - a) = -Phi^-1(a), which keeps small alpha accurate.
        return mp.ncdf(-mp_norm_ppf(a) - mp.mpf(mu))


def mp_norm_ppf(a: mp.mpf) -> mp.mpf:
    """Phi^-1(a) for a in (0, 1), by Newton's method from erfinv's value."""
    with mp.workdps(MP_DPS):
        x = mp.sqrt(2) * mp.erfinv(2 * a - 1) if a > mp.mpf("1e-10") else -mp.sqrt(-2 * mp.log(a))
        for _ in range(100):
            step = (mp.ncdf(x) - a) / mp.npdf(x)
            x -= step
            if abs(step) <= mp.mpf(10) ** (-MP_DPS + 10) * (1 + abs(x)):
                break
        return x


def mp_two_point_delta(p: tuple, q: tuple, k: int, eps: float | mp.mpf,
                       log_ratio: tuple | None = None, terms: range | None = None) -> mp.mpf:
    """delta(eps) of (P^k, Q^k) for P, Q on two outcomes, as an exact binomial sum
    sum_j C(k, j) max(p0^j p1^(k-j) - e^eps q0^j q1^(k-j), 0), in mpmath.

    ``log_ratio = (log(p0/q0), log(p1/q1))``, when the caller knows it exactly (randomized
    response with log-odds eps0: (eps0, -eps0)), gives each term as P_j (1 - e^(eps - loss_j))
    with the exact loss: at eps equal to a loss (pure DP composed k times, at eps = k eps0) the
    difference of the masses is then exactly 0, where it is otherwise a 60-digit rounding of
    ~1e-60 P_j, far above a compared delta like 1e-300.

    ``terms``: only the j in this range (a window around the mean, for large k: the sum without
    the others, which are non-negative, is then a lower bound)."""
    with mp.workdps(MP_DPS):
        p0, p1, q0, q1 = (mp.mpf(x) for x in (*p, *q))
        eps = mp.mpf(eps)
        ee = mp.exp(eps)
        total = mp.mpf(0)
        terms = range(k + 1) if terms is None else terms
        c = mp.binomial(k, terms.start)
        for j in terms:
            if log_ratio is None:
                gap = c * (p0 ** j * p1 ** (k - j) - ee * q0 ** j * q1 ** (k - j))
            else:
                loss = j * mp.mpf(log_ratio[0]) + (k - j) * mp.mpf(log_ratio[1])
                gap = c * p0 ** j * p1 ** (k - j) * -mp.expm1(eps - loss) if loss > eps else mp.mpf(0)
            if gap > 0:
                total += gap
            c = c * (k - j) / (j + 1)
        return total


def mp_rr_delta(eps0: float | mp.mpf, k: int, eps: float | mp.mpf) -> mp.mpf:
    """k-fold randomized response with log-odds eps0 (the pure eps0-DP pair), with exact losses
    eps0 (2j - k) (mp_two_point_delta's log_ratio)."""
    with mp.workdps(MP_DPS):
        e0 = mp.mpf(eps0)
        pp, qq = mp_rr_masses(e0)
        return mp_two_point_delta(pp, qq, k, eps, log_ratio=(e0, -e0))


def mp_rr_masses(eps0: float) -> tuple[tuple, tuple]:
    """Randomized response with log-odds eps0: P = (p, 1-p), Q = (1-p, p), p = e^eps0/(1+e^eps0)."""
    with mp.workdps(MP_DPS):
        p = 1 / (1 + mp.exp(-mp.mpf(eps0)))
        return (p, 1 - p), (1 - p, p)


def mp_leaky_rr_delta(eps0: float, delta0: float, k: int, eps: float) -> mp.mpf:
    """k-fold leaky randomized response (the (eps0, delta0)-DP pair): the P-only atom (mass delta0)
    is hit by some coordinate with probability 1 - (1 - delta0)^k and contributes all its mass; the
    Q-only atom has no P-mass and contributes nothing; the rest is (1 - delta0)^k times the k-fold
    randomized response pair. So delta = 1 - (1-d0)^k + (1-d0)^k delta_RR^k(eps)."""
    with mp.workdps(MP_DPS):
        log_keep = k * mp.log1p(-mp.mpf(delta0))  # 1 - (1 - d0)^k loses a tiny d0 otherwise
        return -mp.expm1(log_keep) + mp.exp(log_keep) * mp_rr_delta(eps0, k, eps)


def mp_counting_pair(eps_tilde: float, n: int, m: int, dps: int = MP_DPS) -> tuple[list, list]:
    """BinaryCountingExponential's pair from the exponential mechanism's definition (Koskela et
    al. 2021, 6.1): P[M(X) = 0] = 1 / (1 + e^-a), P[M(Y) = 0] = 1 / (1 + e^-(a - eps_tilde)),
    a = eps_tilde (2m - n); ([P[M(X) = 0], P[M(X) = 1]], [P[M(Y) = 0], P[M(Y) = 1]]) at ``dps``
    digits (each mass to that relative precision, however small)."""
    with mp.workdps(dps):
        e = mp.mpf(eps_tilde)
        a = e * (2 * m - n)
        return [1 / (1 + mp.exp(-a)), 1 / (1 + mp.exp(a))], [1 / (1 + mp.exp(e - a)), 1 / (1 + mp.exp(a - e))]


def mp_poisson_two_point_delta(q: float, p: tuple, base: tuple, k: int, eps: float) -> mp.mpf:
    """k Poisson-subsampled (rate q) uses of the two-outcome pair (P, Q) = (p, base) under
    add/remove: the larger of the removal pair ((1-q) Q + q P, Q) and the addition pair
    (Q, (1-q) Q + q P), each an exact binomial sum."""
    with mp.workdps(MP_DPS):
        qq = mp.mpf(q)
        mix = tuple((1 - qq) * b + qq * a for a, b in zip(p, base))
        return max(mp_two_point_delta(mix, base, k, eps), mp_two_point_delta(base, mix, k, eps))


def mp_laplace_delta(b: float, eps: float) -> mp.mpf:
    """One Laplace step, pair (Lap(1, b), Lap(0, b)): the loss is (|x| - |x - 1|)/b, and
    integrating P - e^eps Q over {x > (1 + b eps)/2} gives delta = 1 - e^{(eps - 1/b)/2} for
    eps < 1/b, 0 beyond (the pair is symmetric, so both directions agree)."""
    with mp.workdps(MP_DPS):
        b, eps = mp.mpf(b), mp.mpf(eps)
        return -mp.expm1((eps - 1 / b) / 2) if eps < 1 / b else mp.mpf(0)


def mp_poisson_gaussian_delta(q: float, sigma: float, eps: float) -> mp.mpf:
    """One Poisson-subsampled Gaussian step (rate q, P = N(1, s^2), Q = N(0, s^2), M = (1-q)Q + qP):
    the larger of its two directions' deltas (:func:`mp_poisson_gaussian_deltas`)."""
    return max(*mp_poisson_gaussian_deltas(q, sigma, eps), mp.mpf(0))


def mp_poisson_gaussian_deltas(q: float, sigma: float, eps: float) -> tuple[mp.mpf, mp.mpf]:
    """delta(eps) of one Poisson-subsampled Gaussian step, (removal, addition), each at least 0.
    P/Q(x) = exp((x - 1/2)/s^2) is increasing, so
    removal (M vs Q): M/Q > e^eps iff x > x1 = s^2 log((e^eps - 1 + q)/q) + 1/2, and
      delta = (1-q) Qbar(x1) + q Pbar(x1) - e^eps Qbar(x1);
    addition (Q vs M): Q/M > e^eps iff x < x2 = s^2 log((e^-eps - 1 + q)/q) + 1/2 (empty when
      e^-eps <= 1 - q), and delta = Q(x < x2) - e^eps ((1-q) Q(x < x2) + q P(x < x2))."""
    with mp.workdps(MP_DPS):
        q, s, eps = mp.mpf(q), mp.mpf(sigma), mp.mpf(eps)
        if q == 0:
            return mp.mpf(0), mp.mpf(0)
        ee = mp.exp(eps)
        x1 = s * s * mp.log((ee - 1 + q) / q) + mp.mpf(1) / 2
        qbar, pbar = mp.ncdf(-x1 / s), mp.ncdf(-(x1 - 1) / s)
        remove = (1 - q) * qbar + q * pbar - ee * qbar
        add = mp.mpf(0)
        if 1 / ee - 1 + q > 0:
            x2 = s * s * mp.log((1 / ee - 1 + q) / q) + mp.mpf(1) / 2
            qcdf, pcdf = mp.ncdf(x2 / s), mp.ncdf((x2 - 1) / s)
            add = qcdf - ee * ((1 - q) * qcdf + q * pcdf)
        return max(remove, mp.mpf(0)), max(add, mp.mpf(0))


def poisson_gaussian_deltas(q: float, sigma: float, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """delta(eps) of one Poisson-subsampled Gaussian step, (remove, add), in double precision
    and each direction on its own (:func:`mp_poisson_gaussian_delta` gives their larger one):
    the same thresholds x1, x2 of the increasing likelihood ratio."""
    eps = np.asarray(eps, dtype=float)
    s2, ee = sigma * sigma, np.exp(eps)
    x1 = s2 * np.log((ee - 1 + q) / q) + 0.5
    qbar, pbar = stats.norm.sf(x1 / sigma), stats.norm.sf((x1 - 1) / sigma)
    remove = (1 - q) * qbar + q * pbar - ee * qbar
    with np.errstate(invalid="ignore"):
        x2 = s2 * np.log((1 / ee - 1 + q) / q) + 0.5
    qcdf, pcdf = stats.norm.cdf(x2 / sigma), stats.norm.cdf((x2 - 1) / sigma)
    add = np.where(1 / ee - 1 + q > 0, qcdf - ee * ((1 - q) * qcdf + q * pcdf), 0.0)
    return np.maximum(remove, 0.0), np.maximum(add, 0.0)

def mp_bounded_range_delta(eps0: float, eps: float, grid: int = 64) -> mp.mpf:
    """A lower bound on the largest delta(eps) over eps0-bounded-range pairs: the maximum over a
    grid of t in [0, eps0] of the two-outcome pair with losses t and t - eps0 (P-masses
    p_t = (e^eps0 - e^t)/(e^eps0 - 1) and 1 - p_t; Q-masses p_t e^-t and (1 - p_t) e^(eps0 - t)).
    Each such pair is eps0-BR, so any sound upper bound on the class is above it."""
    with mp.workdps(MP_DPS):
        e0 = mp.mpf(eps0)
        best = mp.mpf(0)
        for i in range(grid + 1):
            t = e0 * i / grid
            # p_t and 1 - p_t each as one nonnegative product: 1 - p_t at t = 0 was a rounding
            # of +-1e-61, which made a term of an impossible sign count.
            pt = mp.exp(t) * mp.expm1(e0 - t) / mp.expm1(e0)
            qt = mp.expm1(t) / mp.expm1(e0)
            # Each term as mass * (1 - e^(eps - loss)): its sign is then exact (eps >= t gives 0
            # exactly; pt - ee pt e^-t was a 60-digit rounding of ~1e-61 there, which a delta
            # upper bound of exactly 0 beyond eps0 was compared against).
            d = (max(pt * -mp.expm1(mp.mpf(eps) - t), 0)
                 + max(qt * -mp.expm1(mp.mpf(eps) - (t - e0)), 0))
            best = max(best, d)
        return best


def poisson_gaussian_two_step_delta(q: float, sigma: float, eps: float) -> float:
    """delta(eps) of two runs of the Poisson-subsampled Gaussian's remove pair
    P = (1 - q) N(0, s^2) + q N(1, s^2), Q = N(0, s^2), by one-dimensional quadrature.

    Each step's loss l(x) = log(1 - q + q e^{(2x - 1) / (2 s^2)}) is increasing in x, so
    for the first output y the second one's loss exceeds t = eps - l(y) exactly when x > x*(t),
    x*(t) = s^2 log((e^t - 1 + q) / q) + 1/2 (every x when e^t <= 1 - q), and
    delta(eps) = int p(y) [S_P(x*) - e^t S_Q(x*)] dy with S the survival functions: closed
    forms inside, scipy's adaptive quadrature on 160 pieces of [-40 s, 1 + 40 s] outside
    (agrees with mpmath at 30 digits on 200 pieces to 1e-6 relatively, down to delta 1e-13).
    """
    s = sigma

    def surv(x: float, centre: float) -> float:
        return 0.5 * float(special.erfc((x - centre) / (s * math.sqrt(2.0))))

    def dens(y: float, centre: float) -> float:
        return math.exp(-0.5 * ((y - centre) / s) ** 2) / (s * math.sqrt(2.0 * math.pi))

    def inner(y: float) -> float:
        t = eps - math.log1p(q * math.expm1((2.0 * y - 1.0) / (2.0 * s * s)))
        arg = math.expm1(t) + q
        if arg <= 0:
            return -math.expm1(t)
        x = s * s * math.log(arg / q) + 0.5
        return (1.0 - q) * surv(x, 0.0) + q * surv(x, 1.0) - math.exp(t) * surv(x, 0.0)

    def integrand(y: float) -> float:
        return ((1.0 - q) * dens(y, 0.0) + q * dens(y, 1.0)) * inner(y)

    edges = np.linspace(-40.0 * s, 1.0 + 40.0 * s, 161)
    return float(sum(integrate.quad(integrand, a, b, epsabs=0.0, epsrel=1e-11, limit=200)[0]
                     for a, b in zip(edges[:-1], edges[1:])))


def poisson_gaussian_composed_delta(q: float, sigma: float, k: int, eps: float, side: str = "remove") -> float:
    """delta(eps) of k runs of one direction of the Poisson-subsampled Gaussian (rate q, noise
    sigma; ``side`` "remove": P = (1 - q) N(0, s^2) + q N(1, s^2) against Q = N(0, s^2), "add":
    the pair swapped), by Fourier inversion of the k-fold sum of the per-step loss L under P.

    For Re z = c > 0 the two-sided Laplace transform of e(s) = (1 - e^{eps - s})_+ is
    e^{-z eps} / (z (z + 1)), so delta(eps) = E_P[e(S)] is the Bromwich integral
    (1 / pi) int_0^inf Re[exp(k K(c + it) - (c + it) eps) / ((c + it)(c + it + 1))] dt,
    with K(z) = log E_P[e^{z L}]: E_Q[(M/Q)^(z+1)] for removal, E_Q[(M/Q)^-z] for addition. c
    is the saddle point k K'(c) = eps, where the integrand decays like a normal density in t.

    The removal loss log(1 - q + q e^{(2x - 1) / (2 s^2)}) grows exponentially in x, so its MGF
    is infinite for every z > 0: x is truncated at 14 standard deviations of Q (P-mass beyond
    below 1e-40, which moves delta by no more). E_Q is a trapezoid sum on 2801 points (spectrally
    accurate for a smooth integrand over its whole support); t runs to 60 of the integrand's
    widths 1 / sqrt(k K''(c)). At k = 2 it agrees with :func:`poisson_gaussian_two_step_delta`
    to 1e-11 relatively at q = 2e-5, sigma = 7.84, eps = 2e-5 and to 1e-5 at q = 0.2,
    sigma = 0.8, eps = 2. For laws with a spike (small sigma at small q) the integrand decays
    only like 1 / t^2 and this is not accurate: use it where sigma is large.
    """
    y = np.linspace(-14.0, 14.0, 2801)
    x = sigma * y
    ell = np.log1p(q * np.expm1((2.0 * x - 1.0) / (2.0 * sigma * sigma)))
    log_w = -0.5 * y * y + math.log((y[1] - y[0]) / math.sqrt(2.0 * math.pi))
    return _bromwich_delta(log_w, ell, k, eps, side)


def poisson_laplace_composed_delta(q: float, b: float, k: int, eps: float, side: str = "remove",
                                   reach: float | None = None) -> float:
    """delta(eps) of k runs of one direction of the Poisson-subsampled Laplace mechanism (rate q,
    scale b; "remove": P = (1 - q) Lap(0, b) + q Lap(1, b) against Q = Lap(0, b), "add": the pair
    swapped), by the Bromwich integral of :func:`poisson_gaussian_composed_delta`.

    Under Q the loss log(1 - q + q e^{(|o| - |o - 1|) / b}) is the atom at o <= 0 (Q-mass 1/2),
    the atom at o >= 1 (Q-mass e^{-1/b} / 2) and, between them, a smooth function of o of
    density e^{-o/b} / (2 b): E_Q is the two atoms plus 400-point Gauss-Legendre on (0, 1)
    (the integrand is analytic there). The atoms keep |E[e^{(c + it) L}]| from decaying in t, so
    the k-th power decays only like their share of the mass to the k, and where the record is
    rarely sampled the k-fold law has near-atoms (none sampled, one, ...). So where kq < 10 t
    runs to ``reach`` (default 1e4), as :func:`poisson_discrete_gaussian_composed_delta` does:
    at b = 0.1, k = 1e4 and q = 1e-5 or 1e-4 (kq of 0.1 and 1) the 60 widths put delta 2e-4
    off relatively, and reaches of 1e4, 3e4 and 1e5 agree to 7 digits; at q = 1e-5, k = 1e5
    (kq = 1) the two agree to 7 digits. (The panels are a fraction of pi / eps wide: at
    kq = 100 and eps = 373 one value took minutes.)"""
    nodes, weights = np.polynomial.legendre.leggauss(400)
    o = 0.5 * (nodes + 1.0)
    inner = np.log1p(q * np.expm1((2.0 * o - 1.0) / b))
    ell = np.concatenate(([math.log1p(q * math.expm1(-1.0 / b)), math.log1p(q * math.expm1(1.0 / b))], inner))
    w = np.concatenate(([0.5, 0.5 * math.exp(-1.0 / b)], 0.5 * weights * np.exp(-o / b) / (2.0 * b)))
    if reach is None and k * q < 10:
        reach = 1e4
    return _bromwich_delta(np.log(w), ell, k, eps, side, reach=reach)


def poisson_discrete_gaussian_composed_delta(q: float, sigma: float, k: int, eps: float,
                                             side: str = "remove", reach: float | None = None) -> float:
    """delta(eps) of k runs of one direction of the Poisson-subsampled discrete Gaussian (rate q,
    scale sigma on the integers; "remove": P = (1 - q) N_Z(0, s^2) + q N_Z(1, s^2) against
    Q = N_Z(0, s^2), "add": the pair swapped), by the Bromwich integral of
    :func:`poisson_gaussian_composed_delta`: E_Q is the sum over the integers within 14 sigma
    of 0 (P-mass beyond below 1e-40), whose losses log(1 - q + q e^{(2x - 1) / (2 s^2)}) no
    lattice holds.

    A sum over atoms keeps |E[e^{(c + it) L}]| from decaying in t: the k-fold law has near-atoms
    (no record sampled, probability about e^{-kq}; one sampled at each x; ...), and the
    integrand is almost periodic, falling only like 1 / t^2 overall. So where kq < 1000 t runs
    to ``reach`` (default 3e4; :func:`_bromwich_delta`, on panels a fraction of the fastest
    oscillation wide), far past the 60 widths of a continuous law; where kq >= 1000 the
    near-atoms overlap into a smooth law and those 60 widths serve: at kq = 1000 and 10^4
    (q = 1e-3 and 0.01, sigma = 0.7 and 1, k = 1e6) the two agree to 7e-12 relatively, in
    a few milliseconds against 1.3-9 s. Its tail beyond t = T is at most
    e^{k K(c) - c eps} / (pi T) in absolute value, which at T = 3e4 is 0.9 delta at q = 1e-4,
    sigma = 1, k = 1e5, delta = 1e-6 and 8e5 delta at k = 1e4, delta = 1e-12, so that bound
    certifies nothing; but the value is the same to 1e-12 relatively at
    T = 3e3 and 3e4 on every case of the tests (kq from 1 to 1e4), and the same to 1e-7 with 8
    to 64 Gauss-Legendre nodes a panel there. The panels do not resolve the k-fold phase,
    which turns up to k times faster: at sigma = 1, q = 1e-4, delta = 1e-12 (k = 1e4 and 1e5)
    the value moved by 5e-5 and 1e-4 relatively between those rules. At q = 1e-4, sigma = 1,
    k = 1e5 (kq = 10) it gives delta(0.156893) = 0.99991e-6 on the remove side, where tilted
    Monte Carlo (8e7 multinomial draws of the k counts) gives (0.9963 +- 0.0034)e-6 and the
    integral over 60 widths gave 0.80e-6."""
    x = np.arange(-math.ceil(14.0 * sigma) - 1, math.ceil(14.0 * sigma) + 2, dtype=float)
    log_w = -x * x / (2.0 * sigma * sigma)
    log_w -= math.log(float(np.sum(np.exp(log_w))))
    ell = np.log1p(q * np.expm1((2.0 * x - 1.0) / (2.0 * sigma * sigma)))
    if reach is None and k * q < 1000:
        reach = 3e4
    return _bromwich_delta(log_w, ell, k, eps, side, reach=reach)


def poisson_kary_rr_atoms(q: float, p: float, buckets: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(losses, P-masses, Q-masses) of the removal pair ((1 - q) Q + q P, Q) of k-ary randomized
    response (with probability p a uniformly random bucket of K = ``buckets``, else the input):
    P = M(x) puts 1 - p + p / K on x, p / K on x' and p (K - 2) / K on the other buckets (one
    outcome class), Q = M(x') the mirror image. Classes of mass 0 (K = 2) are left out."""
    big, small, others = 1.0 - p + p / buckets, p / buckets, p * (buckets - 2) / buckets
    masses_p, masses_q = np.array([big, small, others]), np.array([small, big, others])
    keep = masses_q > 0
    mixed = ((1.0 - q) * masses_q + q * masses_p)[keep]
    return np.log(mixed / masses_q[keep]), mixed, masses_q[keep]


def poisson_kary_rr_composed_delta(q: float, p: float, buckets: int, k: int, eps: float,
                                   side: str = "remove") -> float:
    """delta(eps) of k runs of one direction of Poisson-subsampled k-ary randomized response
    (the pair of :func:`poisson_kary_rr_atoms`; "add" is that pair swapped). Three atoms, whose
    k-fold law the Bromwich integral of :func:`_bromwich_delta` reads to t = 3e4 (an almost
    periodic integrand, as for :func:`poisson_discrete_gaussian_composed_delta`). At q = 1e-4,
    p = 0.1, K = 10, k = 1e6 it puts the root of delta = 1e-8 in [5.2105550, 5.2105557], as
    the exact trinomial sum does (and at t = 3e3 or 1e5 the same to 1e-15 relatively)."""
    ell, _, masses_q = poisson_kary_rr_atoms(q, p, buckets)
    return _bromwich_delta(np.log(masses_q), ell, k, eps, side, reach=3e4)


def swor_gaussian_composed_delta(q: float, sigma: float, k: int, eps: float) -> float:
    """delta(eps) of k runs of the symmetric pair (X, Y) that accounts for the Gaussian mechanism
    (sensitivity 1, noise sigma) on a sample drawn without replacement at rate q under
    replace-one (Zhu, Dong and Wang 2022): its profile at eps >= 0 is that of the Poisson remove
    pair (A, B) = ((1 - q) N(0, s^2) + q N(1, s^2), N(0, s^2)), whose loss
    L = log(1 - q + q e^{(2x - 1) / (2 s^2)}) is positive for x > 1/2. Under X the loss is L under
    A where L > 0, -L under B there (the mirror image of the positive losses under B), and 0 with
    the rest of the mass, a0 = 1 - A(L > 0) - B(L > 0), under both.

    Written over Y's outcomes (a0 at loss 0, x > 1/2 of Y-mass B(dx) at loss L, and of Y-mass
    A(dx) at loss -L), E_Y is 64-point Gauss-Legendre on each of 40 panels of (1/2, 1 + 20 s)
    (the densities are smooth there; Y-mass beyond below 1e-80) plus the atom, read by the
    Bromwich integral of :func:`poisson_gaussian_composed_delta`. The atom's share a0^k of the
    k-fold law is below 1e-300 for k >= 1000 (a0 is about 0.38 at s = 1), which the integral
    over 60 widths then leaves out no more than it does the normal tail."""
    nodes, gl = np.polynomial.legendre.leggauss(64)
    edges = np.linspace(0.5, 1.0 + 20.0 * sigma, 41)
    x = (edges[:-1, None] + 0.5 * (edges[1:] - edges[:-1])[:, None] * (nodes + 1.0)).ravel()
    dx = (0.5 * (edges[1:] - edges[:-1])[:, None] * gl).ravel()
    b_dens = stats.norm.pdf(x, 0.0, sigma) * dx
    a_dens = (1.0 - q) * b_dens + q * stats.norm.pdf(x, 1.0, sigma) * dx
    ell = np.log1p(q * np.expm1((2.0 * x - 1.0) / (2.0 * sigma * sigma)))
    half = stats.norm.sf(0.5, 0.0, sigma)
    a0 = 1.0 - ((1.0 - q) * half + q * stats.norm.sf(0.5, 1.0, sigma)) - half
    log_w = np.log(np.concatenate(([a0], b_dens, a_dens)))
    return _bromwich_delta(log_w, np.concatenate(([0.0], ell, -ell)), k, eps, "remove")


def swor_discrete_gaussian_composed_delta(q: float, sigma: float, k: int, eps: float) -> float:
    """delta(eps) of k runs of the symmetric pair that accounts for the discrete Gaussian (scale
    sigma on the integers, sensitivity 1) on a sample drawn without replacement at rate q under
    replace-one: as :func:`swor_gaussian_composed_delta`, over the integers x within 14 sigma of 0
    (mass beyond below 1e-40). The half is the Poisson remove pair A = (1 - q) N_Z(0, s^2) +
    q N_Z(1, s^2) against B = N_Z(0, s^2), its loss log(1 - q + q e^{(2x - 1) / (2 s^2)}) positive
    for x >= 1; under Y the symmetric pair has B(x) at that loss, A(x) at its negative, and the
    rest at 0. A finite atom law: read to t = 3e4 as
    :func:`poisson_discrete_gaussian_composed_delta` reads its own."""
    x = np.arange(-math.ceil(14.0 * sigma) - 1, math.ceil(14.0 * sigma) + 3, dtype=float)
    log_b = -x * x / (2.0 * sigma * sigma)
    b = np.exp(log_b - float(np.log(np.sum(np.exp(log_b)))))
    shifted = np.concatenate(([0.0], b[:-1]))  # N_Z(1, s^2) at x: N_Z(0, s^2) at x - 1
    a = (1.0 - q) * b + q * shifted
    pos = x >= 1
    ell = np.log1p(q * np.expm1((2.0 * x[pos] - 1.0) / (2.0 * sigma * sigma)))
    a0 = 1.0 - float(np.sum(a[pos])) - float(np.sum(b[pos]))
    log_w = np.log(np.concatenate(([a0], b[pos], a[pos])))
    return _bromwich_delta(log_w, np.concatenate(([0.0], ell, -ell)), k, eps, "remove", reach=3e4)


#: Most trapezoid points :func:`_bromwich_delta` takes for a law with a density.
_MAX_T_POINTS = 1_000_001


def _bromwich_delta(log_w: np.ndarray, ell: np.ndarray, k: int, eps: float, side: str,
                    reach: float | None = None) -> float:
    """The Bromwich integral of :func:`poisson_gaussian_composed_delta` for a law given by
    the loss log(P / Q) = ``ell`` of the subsampled pair at nodes of Q-weights e^``log_w``:
    t over 60 widths 1 / sqrt(k K''(c)) (a trapezoid of at least 1201 points, its step at
    most c / 20) for a law with a density, or
    to ``reach`` for a law of atoms (8-point Gauss-Legendre panels of width
    pi / (eps + 1 + the largest |loss| of tilted weight above e^-60 of the largest), where
    the integrand is an almost periodic function over (c + it)(c + it + 1)).

    c solves k K'(c) = eps where it can within [1e-9, 1e8] (where it cannot, the end nearer
    to it: any c > 0 gives the same integral); delta is 0 where eps is at least k times the
    largest loss."""
    a, b = (1.0, 1.0) if side == "remove" else (0.0, -1.0)
    if eps >= k * float(np.max(b * ell)):
        return 0.0

    def cgf(z: np.ndarray) -> np.ndarray:
        e = log_w + (a + b * z[..., None]) * ell
        m = np.max(e.real, axis=-1, keepdims=True)
        return np.log(np.sum(np.exp(e - m), axis=-1)) + m[..., 0]

    def real_cgf(c: float) -> float:
        return float(cgf(np.array(c)).real)

    def slope(c: float) -> float:
        d = 1e-6 * max(c, 1.0)
        return (real_cgf(c + d) - real_cgf(c - d)) / (2.0 * d)

    def gap(c: float) -> float:
        return k * slope(c) - eps

    lo, hi = 1e-9, 1e8
    c = lo if gap(lo) > 0 else hi if gap(hi) < 0 else optimize.brentq(gap, lo, hi)
    base = k * real_cgf(c) - c * eps
    if reach is None:
        d = 1e-4 * c
        curvature = (real_cgf(c + d) - 2.0 * real_cgf(c) + real_cgf(c - d)) / (d * d)
        # The trapezoid's step resolves both the normal decay (width 1 / sqrt(k K''(c))) and
        # 1 / (z (z + 1)), which varies on the scale c: a tiny eps has c far below the width
        # (c = 2.6e3, width 1.9e4 at q = 2.3e-5, sigma = 29.7, k = 4799, eps = 6.4e-6, where 1201
        # points put delta 1e-4 high relatively).
        reach_t = 60.0 / math.sqrt(k * curvature)
        points = max(1201, math.ceil(reach_t / (0.05 * c)) + 1)
        if points > _MAX_T_POINTS:
            # (c at the bracket's end 1e-9, where eps lies below k times the mean loss: the
            # step would need more points than memory holds; no test asks there)
            raise ValueError(f"the saddle point c={c:g} lies far below the width {reach_t / 60.0:g}: "
                             f"{points} trapezoid points needed")
        t = np.linspace(0.0, reach_t, points)
        w = np.full(t.size, t[1] - t[0])
        w[[0, -1]] /= 2.0
    else:
        tilted = log_w + (a + b * c) * ell
        fastest = float(np.max(np.abs(ell[tilted - tilted.max() > -60.0])))
        width = math.pi / (fastest + eps + 1.0)
        nodes, weights = np.polynomial.legendre.leggauss(8)
        starts = width * np.arange(math.ceil(reach / width))
        t = (starts[:, None] + 0.5 * width * (nodes + 1.0)).ravel()
        w = np.tile(0.5 * width * weights, starts.size)
    total = 0.0
    for i in range(0, len(t), 4096):
        z = c + 1j * t[i:i + 4096]
        total += float(np.sum((np.exp(k * cgf(z) - z * eps - base) / (z * (z + 1.0))).real * w[i:i + 4096]))
    return total / math.pi * math.exp(base)


def poisson_gaussian_lattice_delta(q: float, sigma: float, k: int, eps: np.ndarray, h: float,
                                   lam: float = 6.0, top: float = 3.0, points: int = 1 << 23) -> np.ndarray:
    """delta(eps) of k runs of the Poisson-subsampled Gaussian's remove pair (P = (1 - q)
    N(0, s^2) + q N(1, s^2), Q = N(0, s^2)) on a lattice of spacing h: second order in h, not
    a bound, for where the law is a spike narrower than any affordable cell of
    :func:`poisson_gaussian_composed_delta` (small sigma at small q).

    The loss l(x) = log(1 - q + q e^{(2x - 1) / (2 s^2)}) is increasing in x, so each cell
    [l_j, l_j + h) of the lattice log(1 - q) + hZ has the P-mass of an interval of x: by
    differences of the CDF where it is below 1/2 and of the survival function above (a
    difference of two numbers near 1 keeps only 1e-16 of them: at q = 1e-5, sigma = 0.6 the
    tail beyond 0.44 then came out 0.3% light). Each cell's mass is split between its ends
    so as to keep its mean, int_cell (F(l_j + h) - F(l)) dl by 5-point Gauss-Legendre; losses
    above ``top`` are left out (their P-mass times k, returned too, bounds what they add).
    The k-fold law is the inverse FFT of the ``points``-point spectrum's k-th power, the
    masses tilted by e^{lam l} first so that the FFT's rounding is relative to the tilted
    law near eps, not to its largest mass; the window runs from k log(1 - q) over
    ``points`` h, and the tilted mass it wraps lands below eps as long as eps lies within
    the window's first (points h - k top) of loss. Returns (delta at each eps, the bound on
    the left-out part)."""
    a = math.log1p(-q)
    n = int(math.ceil((top - a) / h))
    edges = a + h * np.arange(n + 1)
    s2 = sigma * sigma

    def x_of(loss: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            x = s2 * np.log(np.expm1(loss) / q + 1.0) + 0.5
        return np.where(loss <= a, -np.inf, x)

    def cdf(loss: np.ndarray) -> np.ndarray:
        x = x_of(loss)
        return (1 - q) * special.ndtr(x / sigma) + q * special.ndtr((x - 1) / sigma)

    def sf(loss: np.ndarray) -> np.ndarray:
        x = x_of(loss)
        return (1 - q) * special.ndtr(-x / sigma) + q * special.ndtr(-(x - 1) / sigma)

    big_f, big_s = cdf(edges), sf(edges)
    low = big_f[1:] < 0.5
    mass = np.where(low, big_f[1:] - big_f[:-1], big_s[:-1] - big_s[1:])
    nodes, weights = np.polynomial.legendre.leggauss(5)
    first = np.zeros(n)
    for node, weight in zip(nodes, weights):
        at = edges[:-1] + h * (node + 1) / 2
        first += weight * h / 2 * np.where(low, big_f[1:] - cdf(at), sf(at) - big_s[1:])
    right = np.clip(first / h, 0.0, mass)
    pmf = np.zeros(n + 1)
    pmf[:-1] += mass - right
    pmf[1:] += right
    losses = a + h * np.arange(n + 1)
    with np.errstate(divide="ignore"):
        log_tilted = np.log(pmf) + lam * losses
    # (normalised: the tilted law's spectrum is at most 1, and its k-th power stays finite)
    shift = float(special.logsumexp(log_tilted))
    spectrum = np.fft.rfft(np.exp(log_tilted - shift), points)
    composed = np.fft.irfft(np.exp(k * np.log(spectrum)), points)
    sums = k * a + h * np.arange(points)
    out = []
    for e in np.atleast_1d(eps):
        above = sums > e
        log_scale = k * shift - lam * sums[above]
        out.append(float(np.sum(composed[above] * np.exp(log_scale) * -np.expm1(e - sums[above]))))
    return np.array(out), k * float(big_s[-1])


def mp_group_pure_dp_delta(eps0: float, g: int, k: int, eps: float) -> mp.mpf:
    """delta(eps) of k runs of the pair that dominates every eps0-DP mechanism between datasets
    g records apart: tradeoff 1 - h^{o g}, h(a) = min(e^eps0 a, 1 - e^-eps0 (1 - a)) (Dong, Roth
    and Su 2022, Theorem 2.14). h^{o g} is piecewise linear; a segment of slope e^{j eps0} is an
    outcome of loss j eps0 with P-mass its rise and Q-mass its run; k runs convolve in j."""
    with mp.workdps(MP_DPS):
        e0 = mp.mpf(eps0)
        big, kink = mp.exp(e0), 1 / (mp.exp(e0) + 1)

        def h(a: mp.mpf) -> mp.mpf:
            return min(big * a, 1 - (1 - a) / big)
        pts = [(mp.mpf(0), mp.mpf(0)), (mp.mpf(1), mp.mpf(1))]
        for _ in range(g):
            new = []
            for (a0, v0), (a1, v1) in zip(pts[:-1], pts[1:]):
                new.append((a0, h(v0)))
                if v0 < kink < v1:
                    new.append((a0 + (kink - v0) * (a1 - a0) / (v1 - v0), h(kink)))
            pts = [*new, (mp.mpf(1), mp.mpf(1))]
        pair: dict[int, tuple] = {}
        for (a0, v0), (a1, v1) in zip(pts[:-1], pts[1:]):
            if a1 > a0:
                j = int(mp.nint(mp.log((v1 - v0) / (a1 - a0)) / e0))
                p, q = pair.get(j, (0, 0))
                pair[j] = (p + v1 - v0, q + a1 - a0)
        runs: dict[int, tuple] = {0: (mp.mpf(1), mp.mpf(1))}
        for _ in range(k):
            nxt: dict[int, tuple] = {}
            for j, (p, q) in runs.items():
                for i, (pi, qi) in pair.items():
                    a, b = nxt.get(i + j, (0, 0))
                    nxt[i + j] = (a + p * pi, b + q * qi)
            runs = nxt
        ee = mp.exp(mp.mpf(eps))
        return sum((p - ee * q for j, (p, q) in runs.items() if j * e0 > eps), mp.mpf(0))


def binomial_kept_rate(q: float, n: int, b: int, width: float = 12.0, block: int = 1000) -> float:
    """q E[min(1, b / (s + 1))], s ~ Binomial(n - 1, q), for n up to 10^12: the sum over s within
    ``width`` standard deviations of the mean (the rest weighs below e^-70 relatively). Each
    block of ``block`` counts starts from its log-probability in mpmath (log-gamma at 40
    digits) and steps by the pmf's ratio in floats, so each weight is within about block
    roundings (2e-13) relatively; the weights are normalised by their own sum (math.fsum)."""
    n1 = n - 1
    mean, sd = n1 * q, math.sqrt(n1 * q * (1.0 - q))
    lo, hi = max(0, int(mean - width * sd)), min(n1, int(mean + width * sd) + 1)
    with mp.workdps(40):
        lq, l1q = mp.log(mp.mpf(q)), mp.log1p(-mp.mpf(q))
        mode = int(mean)
        top = (mp.loggamma(n1 + 1) - mp.loggamma(mode + 1) - mp.loggamma(n1 - mode + 1)
               + mode * lq + (n1 - mode) * l1q)
        weights, values = [], []
        for start in range(lo, hi + 1, block):
            anchor = float(mp.loggamma(n1 + 1) - mp.loggamma(start + 1) - mp.loggamma(n1 - start + 1)
                           + start * lq + (n1 - start) * l1q - top)
            s = np.arange(start, min(start + block, hi + 1), dtype=np.float64)
            steps = np.log((n1 - s[:-1]) * q / ((s[:-1] + 1.0) * (1.0 - q)))
            logw = anchor + np.concatenate(([0.0], np.cumsum(steps)))
            weights.append(np.exp(logw))
            values.append(np.minimum(1.0, b / (s + 1.0)))
    w, v = np.concatenate(weights), np.concatenate(values)
    return q * math.fsum(w * v) / math.fsum(w)
