"""Poisson-subsampled discrete bases, checked against exact enumeration of the subsampled pair.

The subsampled pair of a discrete base (P, Q) is itself a pair on the integers:
removal ((1-q) Q + q P, Q), addition (Q, (1-q) Q + q P). Here its pmf is written
down with numpy from the base's closed form (not from autoacct), the k-fold
composition is enumerated exactly (a binomial count for the two-atom discrete
Laplace, outer sums for a few discrete Gaussian steps), and the privacy profile
delta(eps) = E_P[(1 - e^{eps - L})_+] of both directions is summed directly.
The certified brackets must contain that truth.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import optimize, special

from autoacct import AccuracyWarning
from autoacct.subsampling import PoissonSubsample, SampleWithoutReplacement
from autoacct.zoo import Composition, DiscreteGaussian, DiscreteLaplace, KaryRandomizedResponse, PureDP

TOL = 1e-3


def _profile(loss: np.ndarray, p_mass: np.ndarray, eps: float) -> float:
    """sum_i p_i (1 - e^{eps - L_i})_+ for finite losses (the exact hockey-stick divergence)."""
    above = loss > eps
    return float(np.sum(p_mass[above] * -np.expm1(eps - loss[above])))


def _pair_directions(log_p: np.ndarray, log_q: np.ndarray, q: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """(loss, first-distribution mass) per outcome of the removal and addition pairs, from the
    base's log-masses (all finite)."""
    log_mixed = np.logaddexp(math.log1p(-q) + log_q, math.log(q) + log_p)
    loss = log_mixed - log_q
    return [(loss, np.exp(log_mixed)), (-loss, np.exp(log_q))]


def _epsilon_of(profile, delta: float, hi: float = 20.0) -> float:
    """The smallest eps with profile(eps) <= delta, by bisection to 1e-12."""
    return optimize.brentq(lambda e: profile(e) - delta, 0.0, hi, xtol=1e-13, rtol=1e-13)


def _discrete_laplace_truth(t: float, q: float, k: int, delta: float) -> float:
    """eps(delta) of k compositions of the Poisson-subsampled discrete Laplace (sensitivity 1).

    Its pair has two outcome classes, x >= 1 and x <= 0 (mass 1/(1+r) and r/(1+r) under
    P = Lap_Z(1, t), the other way round under Q, r = e^{-1/t}), so the composed loss is
    a function of the binomial count of the first class.
    """
    r = math.exp(-1.0 / t)
    log_p = np.log(np.array([r, 1.0]) / (1.0 + r))      # P: x <= 0, x >= 1
    log_q = np.log(np.array([1.0, r]) / (1.0 + r))      # Q
    j = np.arange(k + 1)
    log_binom = special.gammaln(k + 1) - special.gammaln(j + 1) - special.gammaln(k - j + 1)
    directions = []
    for loss, mass in _pair_directions(log_p, log_q, q):
        total = j * loss[1] + (k - j) * loss[0]
        prob = np.exp(log_binom + j * np.log(mass[1]) + (k - j) * np.log(mass[0]))
        directions.append((total, prob))
    return max(_epsilon_of(lambda e, d=d: _profile(*d, e), delta) for d in directions)


def _discrete_gaussian_truth(sigma: float, q: float, k: int, delta: float) -> float:
    """eps(delta) of k compositions of the Poisson-subsampled discrete Gaussian (sensitivity 1),
    by enumerating the k-tuples of outcomes in [-40, 41] (the rest has mass below 1e-80)."""
    x = np.arange(-40, 42, dtype=float)
    log_w0 = -x * x / (2.0 * sigma ** 2)
    log_w1 = -(x - 1.0) ** 2 / (2.0 * sigma ** 2)
    log_q = log_w0 - special.logsumexp(log_w0)
    log_p = log_w1 - special.logsumexp(log_w1)
    directions = []
    for loss, mass in _pair_directions(log_p, log_q, q):
        total, prob = loss, mass
        for _ in range(k - 1):
            total = np.add.outer(total, loss).ravel()
            prob = np.multiply.outer(prob, mass).ravel()
        directions.append((total, prob))
    return max(_epsilon_of(lambda e, d=d: _profile(*d, e), delta) for d in directions)


@pytest.mark.parametrize("t, q, k, delta", [(0.5, 0.01, 100, 1e-6), (1.0, 0.05, 30, 1e-5), (0.25, 0.001, 400, 1e-8),
                                         (0.25, 0.001, 400, 1e-6), (3.0, 0.001, 10_000, 1e-8),
                                         (0.5, 1e-4, 20_000, 1e-10)])
def test_subsampled_discrete_laplace_bracket_contains_exact_enumeration(t: float, q: float, k: int,
                                                                         delta: float) -> None:
    truth = _discrete_laplace_truth(t, q, k, delta)
    lo, up = Composition()([PoissonSubsample(q)(DiscreteLaplace(t))], [k]).epsilon_bounds(delta)
    assert lo <= truth <= up
    assert up - lo <= TOL * up


@pytest.mark.parametrize("sigma, q, k, delta", [(2.0, 0.01, 3, 1e-7), (1.0, 0.1, 2, 1e-5), (0.7, 0.02, 3, 1e-6)])
def test_subsampled_discrete_gaussian_bracket_contains_exact_enumeration(sigma: float, q: float, k: int,
                                                                          delta: float) -> None:
    truth = _discrete_gaussian_truth(sigma, q, k, delta)
    lo, up = Composition()([PoissonSubsample(q)(DiscreteGaussian(sigma))], [k]).epsilon_bounds(delta)
    assert lo <= truth <= up
    assert up - lo <= TOL * up


def test_subsampled_discrete_gaussian_delta_bracket_contains_exact_enumeration() -> None:
    """delta(eps) of two steps at a few eps: the certified pair brackets the exact sum."""
    sigma, q = 1.5, 0.05
    x = np.arange(-40, 42, dtype=float)
    log_w0 = -x * x / (2.0 * sigma ** 2)
    log_w1 = -(x - 1.0) ** 2 / (2.0 * sigma ** 2)
    dirs = _pair_directions(log_w1 - special.logsumexp(log_w1), log_w0 - special.logsumexp(log_w0), q)
    eps = np.array([0.01, 0.05, 0.1, 0.2])
    truth = np.array([max(_profile(np.add.outer(lo, lo).ravel(), np.multiply.outer(m, m).ravel(), e)
                          for lo, m in dirs) for e in eps])
    lo, up = Composition()([PoissonSubsample(q)(DiscreteGaussian(sigma))], [2]).delta_bounds(eps)
    assert np.all(lo <= truth) and np.all(truth <= up)



def test_sampled_without_replacement_discrete_gaussian_brackets_symmetrized_pair() -> None:
    """Sampling without replacement (replace-one) of a discrete Gaussian, two steps. Its
    dominating pair (Zhu, Dong and Wang 2022) is the symmetric pair whose profile for eps >= 0
    is that of the removal pair ((1-q) Q + q P, Q): built here outcome by outcome (the
    removal pair's outcomes of positive loss, those same outcomes mirrored with the two
    masses swapped, and one outcome of loss 0 holding the rest of both distributions) and
    composed by enumeration."""
    sigma, q, delta = 2.0, 0.05, 1e-6
    x = np.arange(-40, 42, dtype=float)
    log_w0 = -x * x / (2.0 * sigma ** 2)
    log_w1 = -(x - 1.0) ** 2 / (2.0 * sigma ** 2)
    (loss, mixed), (_, base_q) = _pair_directions(log_w1 - special.logsumexp(log_w1),
                                                  log_w0 - special.logsumexp(log_w0), q)
    pos = loss > 0
    a0 = 1.0 - mixed[pos].sum() - base_q[pos].sum()
    values = np.concatenate((loss[pos], [0.0], -loss[pos]))
    first = np.concatenate((mixed[pos], [a0], base_q[pos]))
    total = np.add.outer(values, values).ravel()
    prob = np.multiply.outer(first, first).ravel()
    truth = _epsilon_of(lambda e: _profile(total, prob, e), delta)
    lo, up = Composition()([SampleWithoutReplacement(q)(DiscreteGaussian(sigma))], [2]).epsilon_bounds(delta)
    # The upper end is the dominating pair's, within tol of it; the lower end comes from the
    # pair one fixed pair of datasets attains at every step (Lebeda et al. 2024), lower.
    assert lo <= truth <= up <= truth * (1 + TOL)


@pytest.mark.parametrize("p, buckets, q", [(0.9, 3, 0.1), (0.99, 4, 0.3), (0.9, 10, 1e-3)])
def test_sampled_without_replacement_k_ary_randomized_response_brackets_symmetrized_pair(
        p: float, buckets: int, q: float) -> None:
    """k-ary randomized response sampled without replacement, two steps. Its removal pair
    puts (1-q) p/k + q (1 - p + p/k) on the input's bucket against p/k, and the same on each
    other bucket but one (loss exactly 0); the symmetrized pair keeps the positive outcome,
    its mirror image, and an outcome of loss 0 holding the rest. With the zero-loss outcomes
    an ulp above 0 (1 - q + q rounded), symmetrizing failed with a ValueError at
    (0.9, 3, 0.1) and 23 other parameters."""
    low, high = p / buckets, 1.0 - p + p / buckets
    first = (1.0 - q) * low + q * high
    plus = math.log(first / low)
    values = np.array([plus, 0.0, -plus])
    masses = np.array([first, 1.0 - first - low, low])
    total = np.add.outer(values, values).ravel()
    prob = np.multiply.outer(masses, masses).ravel()
    delta = 0.5 * _profile(total, prob, 0.0)
    truth = _epsilon_of(lambda e: _profile(total, prob, e), delta, hi=2.0 * plus + 1.0)
    lo, up = Composition()([SampleWithoutReplacement(q)(KaryRandomizedResponse(p, buckets))], [2]).epsilon_bounds(delta)
    assert lo <= truth <= up <= truth * (1 + TOL)


@pytest.mark.parametrize("sigma, sensitivity, q, k", [(50.0, 60, 1e-4, 10_000), (0.8, 1, 1e-3, 1000)])
def test_subsampled_discrete_gaussian_at_small_rates_is_within_tol(sigma: float, sensitivity: int, q: float,
                                                                   k: int) -> None:
    # Rounding the atoms down left [0.0004, 0.0559] and [0.2915, 0.2920] here, with warnings:
    # k times a first-order shift. Merged onto the grid, the lower PLD meets tol.
    mech = Composition()([PoissonSubsample(q)(DiscreteGaussian(sigma, sensitivity=sensitivity))], [k])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lo, up = mech.epsilon_bounds(1e-5)
    assert 0 < lo <= up <= lo * (1 + TOL)


@pytest.mark.parametrize("eps0, q, k, delta", [(0.5, 1e-3, 100_000, 1e-10), (1.0, 1e-2, 10_000, 1e-6)])
def test_sampled_without_replacement_binary_randomized_response_upper_end_is_its_pair(
        eps0: float, q: float, k: int, delta: float) -> None:
    """Binary randomized response (PureDP(eps0)) sampled without replacement, k steps. Its
    symmetrized pair is three outcomes of losses (-v, 0, v), v = log(1 - q + q e^eps0), with
    P-masses (B, 1 - A - B, A) for A the removal pair's mass on the positive outcome and B
    that outcome's Q-mass; its k-fold loss is v (n+ - n-), whose law is the k-th power of
    B/z + (1 - A - B) + A z, composed here by squaring on the integers. Held as the continuous
    symmetrized law it asked for lattices past the grid's cap (2.85 s and five warnings at the
    first case); held as atoms, its upper end is that pair's within tol and warns of nothing.
    (Its lower end is the attained pair's, below: Lebeda et al. 2024.)"""
    e = math.exp(eps0)
    big, small = e / (1.0 + e), 1.0 / (1.0 + e)
    a = (1.0 - q) * small + q * big
    v = math.log(a / small)
    step = np.array([small, 1.0 - a - small, a])  # on -1, 0, +1

    def power(pmf: np.ndarray, n: int) -> np.ndarray:
        out = np.array([1.0])
        while n:
            if n & 1:
                out = np.convolve(out, pmf)
            n >>= 1
            if n:
                pmf = np.convolve(pmf, pmf)
                pmf[pmf < 1e-300] = 0.0
            out[out < 1e-300] = 0.0
        return out
    pmf = power(step, k)
    d = np.arange(-k, k + 1, dtype=float)
    keep = pmf > 0.0
    truth = _epsilon_of(lambda x: _profile(v * d[keep], pmf[keep], x), delta, hi=k * v + 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lo, up = Composition()([SampleWithoutReplacement(q)(PureDP(eps0))], [k]).epsilon_bounds(delta)
    assert lo <= truth <= up <= truth * (1 + TOL)
