"""Robustness sweep of the base mechanisms and of composition over the full parameter ranges:
the profiles and tradeoffs of every route (RDP: test_mechanisms_rdp.py; ends of the ranges and
bad input: test_mechanisms_edges.py; shared draws and truths: tests/mechanism_sweeps.py).

Ranges: sigma 0.05..1e4, counts 1..1e7, delta 1e-15..0.5 (and 0.999999), eps 0..1000,
RDP orders from 1 + 1e-8 to 1e300, every route. Truths are independent: the analytic Gaussian
and the randomized-response binomial sum (tests/closed_forms.py), the Laplace profile
1 - exp((eps - 1/b) / 2) (checked against quadrature), the leaky randomized response of Zhu, Dong and Wang (2022)
composed by hand, mpmath evaluations of the RDP closed forms (Mironov 2017), and the
Neyman-Pearson tradeoff curve of randomized response. Every test runs with warnings as errors
except autoacct.AccuracyWarning (documented: bounds valid, wider than asked).
"""
from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed, rr_delta_closed, rr_eps_closed
from hypothesis import given
from hypothesis import strategies as st
from mechanism_sweeps import (
    COUNTS,
    DELTAS,
    SIGMAS,
    approx_truth,
    laplace_delta_closed,
    laplace_eps_closed,
    log_uniform,
    sweep,
    warnings_are_errors,  # noqa: F401 (autouse: warnings are errors here)
)
from scipy import special, stats

from autoacct.zoo import ZCDP, ApproxDP, Composition, Gaussian, Laplace, PureDP, RandomizedResponse


def gaussian_tradeoff(mu: float, a: np.ndarray) -> np.ndarray:
    # Phi(Phi^-1(1 - a) - mu) as Phi(-Phi^-1(a) - mu): 1 - a would lose a small a's digits.
    return stats.norm.cdf(-stats.norm.ppf(a) - mu)


def rr_tradeoff(eps0: float, k: int, a: np.ndarray) -> np.ndarray:
    """Exact tradeoff curve of k-fold randomized response (Neyman-Pearson).

    With J ~ Bin(k, p) truthful answers under P and Bin(k, 1 - p) under Q, the optimal
    tests reject for small J; the curve interpolates linearly between the points
    (P(J <= j), Q(J > j)), j = -1..k.
    """
    p = special.expit(eps0)
    j = np.arange(-1, k + 1)
    type1 = np.concatenate(([0.0], stats.binom.cdf(j[1:], k, p)))
    type2 = np.concatenate(([1.0], stats.binom.sf(j[1:], k, 1.0 - p)))
    # f(0) = 1: every outcome has positive P-mass (the cdf may underflow to 0 in floats).
    return np.where(a == 0, 1.0, np.interp(a, type1, type2))



# ----- Gaussian: every route, full sigma / k / delta range ---------------------------------

@sweep(40)
@given(sigma=SIGMAS, k=COUNTS, delta=DELTAS)
def test_gaussian_composition_every_route_is_sound_over_the_full_range(sigma, k, delta):
    m = Composition()([Gaussian(sigma)], [k])
    mu = math.sqrt(k) / sigma
    truth = gaussian_eps_closed(mu, delta)
    lo, up = m.epsilon_bounds(delta)
    assert 0.0 <= lo <= truth <= up <= truth * (1 + 1e-3) + 1e-12
    for via in ("auto", "exact", "pld", "rdp", "phi"):
        eps = m.epsilon(delta, via=via)
        assert math.isfinite(eps) and eps >= truth, via
        if truth > 0:
            # Round trip: at the returned epsilon every route's delta is at least the target.
            assert m.delta(truth, via=via) >= delta * (1 - 1e-6), via


@sweep(25)
@given(sigma=SIGMAS, k=COUNTS, delta=DELTAS)
def test_gaussian_epsilon_is_monotone_in_sigma_k_and_delta(sigma, k, delta):
    def eps(s, n, d, via):
        return Composition()([Gaussian(s)], [n]).epsilon(d, via=via)

    for via in ("auto", "rdp", "phi"):
        base = eps(sigma, k, delta, via)
        assert eps(sigma, 2 * k, delta, via) >= base, via
        assert eps(1.5 * sigma, k, delta, via) <= base, via
        assert eps(sigma, k, min(2 * delta, 0.9), via) <= base, via


@sweep(20)
@given(sigma=SIGMAS, k=COUNTS)
def test_gaussian_delta_curve_is_finite_monotone_and_above_truth(sigma, k):
    m = Composition()([Gaussian(sigma)], [k])
    mu = math.sqrt(k) / sigma
    eps = np.sort(np.concatenate(([0.0, 1000.0], mu * np.array([0.01, 0.1, 1.0, 3.0]) + mu * mu / 2)))
    for via in ("auto", "rdp", "phi"):
        d = m.delta(eps, via=via)
        assert np.all(np.isfinite(d)) and np.all((d >= 0) & (d <= 1)), via
        assert np.all(np.diff(d) <= 1e-12), via
    # delta(0) = 2 Phi(mu/2) - 1 exactly; the closed form is reliable there.
    assert m.delta(0.0) >= gaussian_delta_closed(mu, 0.0) * (1 - 1e-12)


@pytest.mark.parametrize("sigma, k", [(0.05, 10**7), (0.05, 1), (1e4, 1), (1e4, 10**7)])
@pytest.mark.parametrize("delta", [1e-15, 0.5, 0.999999])
def test_gaussian_corners(sigma, k, delta):
    m = Composition()([Gaussian(sigma)], [k])
    truth = gaussian_eps_closed(math.sqrt(k) / sigma, delta)
    for via in ("auto", "rdp", "phi"):
        eps = m.epsilon(delta, via=via)
        assert math.isfinite(eps) and eps >= truth, via
    lo, up = m.epsilon_bounds(delta)
    assert 0.0 <= lo <= truth <= up


@sweep(20)
@given(sigma=SIGMAS, k=COUNTS)
def test_gaussian_tradeoff_never_above_the_gaussian_curve(sigma, k):
    m = Composition()([Gaussian(sigma)], [k])
    a = np.concatenate(([0.0, 1e-12], np.logspace(-6, -1e-3, 12), [1.0]))
    exact = gaussian_tradeoff(math.sqrt(k) / sigma, a)
    for via in ("auto", "exact", "pld", "phi", "rdp"):
        f = m.tradeoff(a, via=via)
        assert np.all(np.isfinite(f)) and np.all(f >= 0) and np.all(f <= 1 - a + 1e-15), via
        assert np.all(f <= exact + 1e-15), via


# ----- randomized response and pure DP --------------------------------------------------------

@sweep(30)
@given(eps0=log_uniform(1e-4, 1000.0), k=st.floats(0.0, 5.0).map(lambda x: int(round(10.0 ** x))),
       frac=st.floats(0.0, 1.5))
def test_pure_dp_composition_profile_brackets_the_binomial_sum(eps0, k, frac):
    m = Composition()([PureDP(eps0)], [k])
    eps = min(frac * k * eps0, 1e12)
    truth = rr_delta_closed(eps0, k, eps)
    lo, up = m.delta_bounds(eps)
    assert 0.0 <= lo <= truth * (1 + 1e-9) + 1e-300
    assert truth * (1 - 1e-9) <= up <= 1.0
    if eps >= k * eps0:
        assert up == 0.0          # pure DP: delta is exactly 0 beyond k eps0, on every exact route
    for via in ("pld", "rdp"):
        d = m.delta(eps, via=via)
        assert 0.0 <= d <= 1.0 and d >= truth * (1 - 1e-9), via


@sweep(30)
@given(eps0=log_uniform(1e-4, 1000.0), k=st.floats(0.0, 5.0).map(lambda x: int(round(10.0 ** x))),
       delta=DELTAS)
def test_pure_dp_composition_epsilon_brackets_the_binomial_sum_and_obeys_the_cap(eps0, k, delta):
    m = Composition()([PureDP(eps0)], [k])
    truth = rr_eps_closed(eps0, k, delta)
    lo, up = m.epsilon_bounds(delta)
    assert 0.0 <= lo <= truth * (1 + 1e-9) + 1e-12
    assert truth * (1 - 1e-9) <= up <= k * eps0 * (1 + 1e-12)
    for via in ("pld", "rdp"):
        eps = m.epsilon(delta, via=via)
        assert math.isfinite(eps) and eps >= truth * (1 - 1e-9), via


@sweep(10)
@given(p=st.floats(0.5, 0.999999), k=st.integers(1, 300))
def test_randomized_response_tradeoff_never_above_neyman_pearson(p, k):
    m = Composition()([RandomizedResponse(p)], [k])
    a = np.concatenate(([0.0, 1e-12], np.logspace(-8, -1e-3, 15), [1.0]))
    exact = rr_tradeoff(float(special.logit(p)), k, a)
    for via in ("auto", "pld", "rdp"):
        f = m.tradeoff(a, via=via)
        assert np.all(np.isfinite(f)) and np.all(f >= 0) and np.all(f <= 1 - a + 1e-15), via
        assert np.all(f <= exact + 1e-9), via


def _one_step_tradeoff(kind: str, x: float, a: float) -> mpmath.mpf:
    """The exact tradeoff function at a, in 40 digits: pure eps-DP (x = eps) and randomized
    response (x = p) from their two-outcome pairs, the Laplace mechanism (x = b, sensitivity 1)
    in the closed form of Dong, Roth and Su (2022)."""
    with mpmath.workdps(40):
        a_ = mpmath.mpf(a)
        if kind == "pure":
            e = mpmath.mpf(x)
            return max(mpmath.mpf(0), 1 - mpmath.e ** e * a_, mpmath.e ** -e * (1 - a_))
        if kind == "rr":
            p = mpmath.mpf(x)
            return 1 - p * a_ / (1 - p) if a_ <= 1 - p else (1 - a_) * (1 - p) / p
        e = 1 / mpmath.mpf(x)
        if a_ < mpmath.e ** -e / 2:
            return 1 - mpmath.e ** e * a_
        return mpmath.e ** -e / (4 * a_) if a_ <= 0.5 else mpmath.e ** -e * (1 - a_)


@sweep(200)
@given(kind=st.sampled_from(["pure", "rr", "laplace"]), u=st.floats(0.0, 1.0),
       log_a=st.lists(st.floats(-32.0, 0.0), min_size=4, max_size=4))
def test_one_step_tradeoff_is_never_above_the_exact_curve_to_the_last_bit(kind, u, log_a):
    # A tradeoff value is a lower bound: rounded down, not to nearest (PureDP(3.94) at
    # 0.0169 was 13 ulps above the truth, RandomizedResponse(1 - 1e-10) at 1e-10 by 1e-15).
    x = {"pure": math.exp(math.log(0.01) + u * math.log(3000.0)), "rr": 1.0 - math.exp(math.log(1e-10) + u * 22.0),
         "laplace": math.exp(math.log(0.05) + u * math.log(400.0))}[kind]
    m = {"pure": PureDP, "rr": RandomizedResponse, "laplace": Laplace}[kind](x)
    a = np.sort(np.exp(np.array(log_a)))
    for ai, f in zip(a, m.tradeoff(a)):
        assert mpmath.mpf(float(f)) <= _one_step_tradeoff(kind, x, float(ai)), (kind, x, ai)


@pytest.mark.parametrize("make", [lambda: RandomizedResponse(0.5), lambda: PureDP(0.0),
                                  lambda: ApproxDP(0.0, 0.0)], ids=["rr-half", "pure-0", "approx-0-0"])
@pytest.mark.parametrize("k", [1, 10**7])
def test_zero_privacy_loss_mechanisms_are_perfectly_private(make, k):
    m = Composition()([make()], [k])
    for d in (1e-15, 0.5, 0.999999):
        assert m.epsilon(d) == 0.0 and m.epsilon(d, via="pld") == 0.0
        assert 0.0 <= m.epsilon(d, via="rdp") < 0.01
    assert m.epsilon_bounds(1e-10) == (0.0, 0.0)
    np.testing.assert_array_equal(m.delta(np.array([0.0, 1.0, 1000.0])), 0.0)
    assert m.rdp(np.array([1 + 1e-8, 2.0, 1e300])).tolist() == [0.0, 0.0, 0.0]


# ----- approximate DP: the leaky randomized response composed by hand ---------------------------

@sweep(30)
@given(eps0=log_uniform(1e-3, 20.0), d0=log_uniform(1e-12, 0.5), k=st.integers(1, 3000),
       frac=st.floats(0.0, 1.2))
def test_approx_dp_composition_profile_brackets_the_truth(eps0, d0, k, frac):
    m = Composition()([ApproxDP(eps0, d0)], [k])
    p_inf, profile = approx_truth(eps0, d0, k)
    eps = frac * k * eps0
    truth = profile(eps)
    lo, up = m.delta_bounds(eps)
    assert lo <= truth * (1 + 1e-9) and truth * (1 - 1e-9) <= up <= 1.0


@sweep(30)
@given(eps0=log_uniform(1e-3, 20.0), d0=log_uniform(1e-12, 0.1), k=st.integers(1, 3000),
       ratio=log_uniform(1e-3, 1e3))
def test_approx_dp_epsilon_is_infinite_exactly_below_the_leak(eps0, d0, k, ratio):
    m = Composition()([ApproxDP(eps0, d0)], [k])
    p_inf, _ = approx_truth(eps0, d0, k)
    delta = min(ratio * p_inf, 0.9)
    if delta < p_inf * (1 - 1e-6):
        assert m.epsilon(delta) == math.inf           # no finite epsilon reaches a delta below the leak
        assert m.epsilon_bounds(delta)[1] == math.inf
    elif delta > p_inf * (1 + 1e-6):
        truth = rr_eps_closed(eps0, k, (delta - p_inf) / (1 - p_inf))
        lo, up = m.epsilon_bounds(delta)
        assert lo <= truth * (1 + 1e-9) + 1e-12 and truth * (1 - 1e-9) <= up <= k * eps0 * (1 + 1e-12)


# ----- Laplace ---------------------------------------------------------------------------------

@sweep(6)
@given(b=log_uniform(0.05, 1e4), delta=DELTAS, frac=st.floats(0.0, 1.5))
def test_single_laplace_matches_its_closed_profile_on_every_route(b, delta, frac):
    m = Laplace(b)
    truth = laplace_eps_closed(b, delta)
    lo, up = m.epsilon_bounds(delta)
    assert lo <= truth * (1 + 1e-9) + 1e-15 and truth * (1 - 1e-9) <= up <= truth * (1 + 1e-3) + 1e-12
    for via in ("pld", "rdp", "phi"):
        eps = m.epsilon(delta, via=via)
        assert math.isfinite(eps) and truth * (1 - 1e-9) <= eps, via
    eps = frac / b
    dtruth = laplace_delta_closed(b, eps)
    dlo, dup = m.delta_bounds(eps)
    assert dlo <= dtruth * (1 + 1e-9) + 1e-300 and dtruth * (1 - 1e-9) <= dup <= 1.0
    if frac >= 1.0:
        assert dup == 0.0


@sweep(10)
@given(b=log_uniform(0.05, 1e4), k=st.floats(0.0, 2.5).map(lambda x: int(round(10.0 ** x))),
       delta=DELTAS)
def test_laplace_composition_is_bracketed_by_the_pure_dp_cap(b, k, delta):
    # Laplace(b) is (1/b)-DP, so its k-fold composition is dominated by k-fold randomized response
    # with eps0 = 1/b: the truth, hence every lower bound, lies below the binomial-sum epsilon;
    # and the first step alone (the single-Laplace closed form) lies below the truth.
    m = Composition()([Laplace(b)], [k])
    lo, up = m.epsilon_bounds(delta)
    cap = rr_eps_closed(1.0 / b, k, delta)
    assert 0.0 <= lo <= cap * (1 + 1e-9) + 1e-12
    assert up >= laplace_eps_closed(b, delta) * (1 - 1e-9)
    assert up <= m.epsilon(delta, via="rdp") * (1 + 1e-3)      # "auto" is the tightest to within tol
    assert m.epsilon(delta, via="phi") >= lo * (1 - 1e-9)
    eps = [m.epsilon(d) for d in sorted({delta, min(10 * delta, 0.5), 0.5})]
    assert all(np.isfinite(eps)) and all(x >= y for x, y in zip(eps, eps[1:]))


def test_laplace_ten_million_fold_is_finite_and_consistent():
    m = Composition()([Laplace(1.0)], [10**7])
    lo, up = m.epsilon_bounds(1e-10)
    assert 0.0 < lo <= up <= m.epsilon(1e-10, via="rdp") and up - lo <= 1e-3 * up
    assert lo <= m.epsilon(1e-10, via="phi")
    assert up <= 1e7    # the pure-DP cap k / b


# ----- zCDP ------------------------------------------------------------------------------------

@sweep(25)
@given(rho=log_uniform(1e-8, 1e3), k=COUNTS, delta=DELTAS)
def test_zcdp_is_above_its_gaussian_and_composes_additively(rho, k, delta):
    m = Composition()([ZCDP(rho)], [k])
    gauss = gaussian_eps_closed(math.sqrt(2 * rho * k), delta)
    lo, up = m.epsilon_bounds(delta)
    assert lo <= gauss * (1 + 1e-9) + 1e-15 and gauss <= up < math.inf
    assert m.epsilon(min(2 * delta, 0.9)) <= up
