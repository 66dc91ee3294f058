"""Robustness sweep of the base mechanisms and of composition over the full parameter ranges.

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
import warnings
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed, rr_delta_closed, rr_eps_closed
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from scipy import optimize, special, stats
from warning_policy import strict_warnings

from autoacct import AccuracyWarning, risk
from autoacct.zoo import ZCDP, ApproxDP, Composition, Gaussian, Laplace, PureDP, RandomizedResponse


def sweep(n: int) -> settings:
    """Hypothesis settings of this file: n examples, no deadline (accountant runs vary in time)."""
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def _warnings_are_errors():
    with strict_warnings():
        yield


def log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda x: float(10.0 ** x))


SIGMAS = log_uniform(0.05, 1e4)
COUNTS = st.floats(0.0, 7.0).map(lambda x: int(round(10.0 ** x)))
DELTAS = log_uniform(1e-15, 0.5)


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


def laplace_delta_closed(b: float, eps: float) -> float:
    return max(0.0, -math.expm1((eps - 1.0 / b) / 2.0))


def laplace_eps_closed(b: float, delta: float) -> float:
    return max(0.0, 1.0 / b + 2.0 * math.log1p(-delta))


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

def approx_truth(eps0: float, d0: float, k: int) -> tuple[float, Callable[[float], float]]:
    """P(L = +inf) of the k-fold leaky RR and its profile: p_inf + (1 - p_inf) * RR_k(eps)."""
    p_inf = -math.expm1(k * math.log1p(-d0))
    return p_inf, lambda e: p_inf + (1 - p_inf) * rr_delta_closed(eps0, k, e)


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


# ----- RDP: closed forms against mpmath, orders from 1 + 1e-8 to 1e300 --------------------------

ORDERS = [1 + 1e-12, 1 + 1e-8, 1 + 1e-5, 1.01, 1.5, 2.0, 10.0, 1e3, 1e6, 1e10, 1e100, 1e300]


def _mp_laplace_rdp(b: float, a: float) -> mpmath.mpf:
    b, a = mpmath.mpf(b), mpmath.mpf(a)
    val = mpmath.log(a / (2 * a - 1) * mpmath.exp((a - 1) / b)
                     + (a - 1) / (2 * a - 1) * mpmath.exp(-a / b)) / (a - 1)
    return min(val, 1 / b)


def _mp_rr_rdp(eps: float, a: float) -> mpmath.mpf:
    eps, a = mpmath.mpf(eps), mpmath.mpf(a)
    p = 1 / (1 + mpmath.exp(-eps))
    val = mpmath.log(p * mpmath.exp((a - 1) * eps) + (1 - p) * mpmath.exp(-(a - 1) * eps)) / (a - 1)
    return min(val, eps)


@pytest.mark.parametrize("mechanism, reference, param", [
    *[(Laplace, _mp_laplace_rdp, b) for b in (0.05, 1.0, 100.0, 1e4)],
    *[(PureDP, _mp_rr_rdp, eps0) for eps0 in (1e-6, 1e-3, 1.0, 1000.0)],
])
def test_laplace_and_randomized_response_rdp_match_mpmath_at_every_order(mechanism, reference, param):
    got = mechanism(param).rdp(np.array(ORDERS))
    with mpmath.workdps(80):
        ref = [reference(param, a) for a in ORDERS]
    for a, g, r in zip(ORDERS, got, ref):
        # An upper bound: never below, and above by at most the rounding allowance of the
        # log-space closed forms (2e-13 near alpha = 1).
        assert r <= g <= r * (1 + 1e-12), (a, g, float(r))


def _exact_gaussian_rdp(sigma: float, alpha: float) -> Fraction:
    return Fraction(alpha) / (2 * Fraction(sigma) ** 2)


def _derandomised(n: int) -> settings:
    return settings(max_examples=n, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@_derandomised(300)
@given(log_sigma=st.floats(-3.0, 150.0), log_beta=st.floats(-8.0, 6.0), integer=st.booleans())
def test_gaussian_rdp_is_never_below_its_exact_value(log_sigma, log_beta, integer):
    # alpha / (2 sigma^2) takes two roundings, and the one ulp outward rounding did not always
    # make them up: Gaussian(0.7246739307107954).rdp(89.0) was 84.73732192381371, below the
    # exact 84.737321923813709656 (15 of 1500 random cases). The reference is exact (rationals).
    sigma = 10.0 ** log_sigma
    alpha = float(round(1 + 10.0 ** log_beta)) if integer else 1 + 10.0 ** log_beta
    exact = _exact_gaussian_rdp(sigma, alpha)
    m = Gaussian(sigma)
    curve = m.rdp_curve()
    for got in (m.rdp(alpha), float(curve(np.array([alpha]))[0][0])):
        assert exact <= Fraction(got) <= exact * (1 + Fraction(1, 10 ** 14)) + Fraction(1, 10 ** 320)


@pytest.mark.parametrize("sigma, alpha", [(1e300, 2.0), (1.7e308, 1e308), (1e160, 7.5), (2e154, 1e300)])
def test_gaussian_rdp_of_a_huge_sigma_is_a_tiny_upper_bound(sigma, alpha):
    # sigma ** 2 on a Python float raised OverflowError past sigma = 1.3e154 (Gaussian(1e300).rdp(2)).
    exact = _exact_gaussian_rdp(sigma, alpha)
    got = Gaussian(sigma).rdp(alpha)
    assert exact <= Fraction(got) <= exact * (1 + Fraction(1, 10 ** 14)) + Fraction(1, 10 ** 320)


@_derandomised(300)
@given(log_b=st.floats(-3.0, 9.0), log_beta=st.floats(-12.0, 4.0), kind=st.sampled_from(["real", "integer", "kl"]))
def test_laplace_rdp_is_never_below_its_exact_value(log_b, log_beta, kind):
    # Laplace's closed form is read in log space, off by a relative few ulps of |log S|:
    # Laplace(16525.1759799698).rdp(1.000001166225003) was 1.830920825273698e-09, a relative
    # 1e-14 below the truth 1.83092082527371679e-09 (1450 of 4000 random cases below).
    b = 10.0 ** log_b
    alpha = {"real": 1 + 10.0 ** log_beta, "integer": float(round(2 + 10.0 ** log_beta)), "kl": 1.0}[kind]
    with mpmath.workdps(120):
        x = 1 / mpmath.mpf(b)
        exact = mpmath.expm1(-x) + x if alpha == 1.0 else _mp_laplace_rdp(b, alpha)
    m = Laplace(b)
    for got in (m.rdp(alpha), float(m.rdp_curve()(np.array([alpha]))[0][0])):
        assert exact <= got <= exact * (1 + 1e-12)


@_derandomised(200)
@given(log_sigma=st.floats(-1.0, 2.0), log_b=st.floats(-1.0, 3.0), log_beta=st.floats(-3.0, 3.0),
       k1=st.integers(1, 50), k2=st.integers(1, 50))
def test_composed_gaussian_and_laplace_rdp_is_never_below_the_sum(log_sigma, log_b, log_beta, k1, k2):
    # The sum of the parts' (rounded-up) values rounds too: it came out an ulp below the sum
    # of the exact values in 118 of 1000 random cases.
    sigma, b, alpha = 10.0 ** log_sigma, 10.0 ** log_b, 1 + 10.0 ** log_beta
    with mpmath.workdps(120):
        exact = k1 * mpmath.mpf(_exact_gaussian_rdp(sigma, alpha)) + k2 * _mp_laplace_rdp(b, alpha)
        got = Composition()([Gaussian(sigma), Laplace(b)], [k1, k2]).rdp(alpha)
        assert exact <= got <= exact * (1 + 1e-12)


@_derandomised(300)
@given(log_eps=st.floats(-8.0, 2.5), log_beta=st.floats(-12.0, 4.0), kind=st.sampled_from(["pure", "rr", "kl"]))
def test_randomized_response_rdp_is_never_below_its_exact_value(log_eps, log_beta, kind):
    # The same log-space reading as Laplace's: PureDP's RDP was below the truth in half of 3000
    # random cases (up to 1.2e-14 relative at eps = 1.5e-7, alpha = 1 + 1.9e-12). For
    # RandomizedResponse(p) the truth is the pair's own, p exact.
    eps = 10.0 ** log_eps
    alpha = 1.0 if kind == "kl" else 1 + 10.0 ** log_beta
    if kind == "rr":
        p = 1 / (1 + math.exp(-eps))
        if not 0.5 <= p < 1.0:
            return
        m = RandomizedResponse(p)
    else:
        m = PureDP(eps)
    with mpmath.workdps(150):
        # (1 - p formed from p would keep few digits of a q below 1e-137)
        pp = mpmath.mpf(p) if kind == "rr" else 1 / (1 + mpmath.exp(-mpmath.mpf(eps)))
        qq = 1 - pp if kind == "rr" else 1 / (1 + mpmath.exp(mpmath.mpf(eps)))
        a = mpmath.mpf(alpha)
        exact = ((pp - qq) * mpmath.log(pp / qq) if alpha == 1.0 else
                 mpmath.log(pp ** a * qq ** (1 - a) + qq ** a * pp ** (1 - a)) / (a - 1))
    for got in (m.rdp(alpha), float(m.rdp_curve()(np.array([alpha]))[0][0])):
        assert exact <= got <= exact * (1 + 1e-12)


@_derandomised(150)
@given(p=st.one_of(st.floats(0.5, 0.999999), st.floats(1e-13, 1e-3).map(lambda x: 0.5 + x)),
       shave=st.sampled_from([1e-6, 1e-9, 1e-12]))
@example(p=0.6, shave=1e-9)
@example(p=0.5 + 1e-12, shave=1e-9)
def test_randomized_response_is_bracketed_by_its_pair_from_p(p, shave):
    # The truth is the pair ((p, 1 - p), (1 - p, p)) with p exact: log-odds L = log(p / (1 - p))
    # and delta(eps) = p - e^eps (1 - p) below L, read at eps just below L and at the float
    # nearest to it. eps0 = logit(p) is a rounding of L (logit(0.6) is 1.6e-17 below it), which
    # the phi route took as the atom's exact value: delta(L (1 - 1e-9)) came out 4e-8
    # relatively below the truth at p = 0.6, and 0 at the float nearest L (truth 9.4e-18).
    m = RandomizedResponse(p)
    with mpmath.workdps(60):
        pp = mpmath.mpf(p)
        log_odds = mpmath.log(pp / (1 - pp))
        points = [float(log_odds * (1 - mpmath.mpf(shave))), float(log_odds)]
        truth = [max(pp - mpmath.exp(mpmath.mpf(e)) * (1 - pp), 0) for e in points]
        for via in ("phi", "pld"):
            for t, got in zip(truth, np.atleast_1d(m.delta(points, via=via))):
                assert t <= got, (p, via, got, t)
        lower, upper = m.delta_bounds(points)
        assert all(lo <= t <= up for lo, t, up in zip(lower, truth, upper))
        assert log_odds <= m.epsilon(1e-300, via="dp") and log_odds <= m.dp_guarantee()[0]


RDP_MECHANISMS = [
    ("gaussian-0.05", lambda: Gaussian(0.05)), ("gaussian-1e4", lambda: Gaussian(1e4)),
    ("laplace-0.05", lambda: Laplace(0.05)), ("laplace-1e4", lambda: Laplace(1e4)),
    ("rr", lambda: RandomizedResponse(0.999999)), ("pure-1000", lambda: PureDP(1000.0)),
    ("approx", lambda: ApproxDP(1.0, 1e-9)), ("zcdp", lambda: ZCDP(1e3)),
    ("mixed-1e7", lambda: Composition()([Gaussian(0.05), Laplace(0.05), PureDP(1.0)], [10**7, 10, 3])),
]


@pytest.mark.parametrize("name, make", RDP_MECHANISMS, ids=[n for n, _ in RDP_MECHANISMS])
def test_rdp_is_nonnegative_monotone_and_never_nan_at_extreme_orders(name, make):
    m = make()
    alpha = np.array(ORDERS)
    val = m.rdp(alpha)
    assert val.shape == alpha.shape and not np.any(np.isnan(val)) and np.all(val >= 0)
    assert np.all(val[1:] >= val[:-1] * (1 - 1e-12))      # Renyi divergence grows with the order
    assert m.rdp(2.0) == pytest.approx(float(m.rdp(np.array([2.0]))[0]), rel=1e-15)


@pytest.mark.parametrize("k", [1, 1000, 10**7])
def test_rdp_of_a_composition_is_k_times_the_rdp(k):
    alpha = np.array(ORDERS[:9])
    for base in (Laplace(3.0), PureDP(0.3), Gaussian(7.0)):
        np.testing.assert_allclose(Composition()([base], [k]).rdp(alpha), k * base.rdp(alpha), rtol=1e-12)


# ----- near the ends of the delta range -------------------------------------------------------

END_CASES = [
    ("gaussian", lambda: Gaussian(2.0), lambda: gaussian_delta_closed(0.5, 0.0)),
    ("gaussian-narrow", lambda: Gaussian(0.5), lambda: gaussian_delta_closed(2.0, 0.0)),
    ("laplace", lambda: Laplace(0.7), lambda: laplace_delta_closed(0.7, 0.0)),
    ("pure-composed", lambda: Composition()([PureDP(0.2)], [60]), lambda: rr_delta_closed(0.2, 60, 0.0)),
    ("rr", lambda: RandomizedResponse(0.9), lambda: 0.8),
    ("approx", lambda: ApproxDP(0.5, 0.3), lambda: approx_truth(0.5, 0.3, 1)[1](0.0)),
]


@pytest.mark.parametrize("name, make, delta0", END_CASES, ids=[c[0] for c in END_CASES])
def test_epsilon_is_zero_above_delta_at_zero(name, make, delta0):
    m = make()
    d0 = delta0()
    for d in (d0 + (1 - d0) * 0.5, 0.999999):
        if d <= d0 * (1 + 1e-6):
            continue
        assert m.epsilon(d) == 0.0
        assert m.epsilon_bounds(d) == (0.0, 0.0)
        for via in set(m.routes) - ({"rdp"} if name == "approx" else set()):   # leaky RR: RDP is inf
            eps = m.epsilon(d, via=via)
            assert 0.0 <= eps < math.inf, via


@pytest.mark.parametrize("name, make, delta0", END_CASES, ids=[c[0] for c in END_CASES])
def test_epsilon_below_delta_at_zero_is_positive_and_delta_at_zero_is_sound(name, make, delta0):
    m = make()
    d0 = delta0()
    lo, up = m.delta_bounds(0.0)
    assert lo <= d0 * (1 + 1e-9) and d0 * (1 - 1e-9) <= up <= 1.0
    d = d0 * 0.5
    assert m.epsilon(d) > 0.0


# ----- bad input ------------------------------------------------------------------------------

BAD_SCALARS = [(-1.0, ValueError), (math.nan, ValueError), (math.inf, ValueError), (-math.inf, ValueError),
               (True, TypeError), ("1.0", TypeError), (None, TypeError), (1j, TypeError),
               (np.array([1.0, 2.0]), TypeError), ([1.0], TypeError)]


@pytest.mark.parametrize("value, exc", BAD_SCALARS, ids=repr)
@pytest.mark.parametrize("make, name", [(Gaussian, "sigma"), (Laplace, "b"), (RandomizedResponse, "p"),
                                        (PureDP, "eps"), (ZCDP, "rho"),
                                        (lambda v: ApproxDP(v, 1e-6), "eps"),
                                        (lambda v: ApproxDP(1.0, v), "delta")])
def test_constructors_reject_bad_scalars_naming_the_parameter(make, name, value, exc):
    with pytest.raises(exc, match=name):
        make(value)


@pytest.mark.parametrize("make, name", [(lambda: Laplace(1e-101), "b"), (lambda: PureDP(1e101), "eps"),
                                        (lambda: ApproxDP(1e308, 0.1), "eps")])
def test_constructors_reject_losses_past_max_eps(make, name):
    # These raised from deep inside the accountant on a tradeoff (overflows, h = inf).
    with pytest.raises(ValueError, match=name):
        make()


@pytest.mark.parametrize("make", [lambda: Laplace(1e-100), lambda: Laplace(1e100), lambda: PureDP(1e100),
                                  lambda: ApproxDP(1e100, 1e-3), lambda: Laplace(1e-10),
                                  lambda: Composition()([Laplace(1e-10), Gaussian(1.0)], [2, 3])])
def test_extreme_parameters_give_ordered_answers_on_every_view(make):
    # Laplace(1e100) (a lattice finer than h: spacing ell / 0), a composition with Laplace(1e-10)
    # (divisors of a lattice 1e10 times h overflowed int64) and tpr_bounds near e^710 raised.
    m = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo, up = m.epsilon_bounds(1e-5)
        f = m.tradeoff(np.array([0.0, 0.1, 0.5, 1.0]))
        t_lo, t_up = risk.tpr_bounds(m, 0.1)
    assert 0.0 <= lo <= up
    assert np.all((0.0 <= f) & (f <= 1.0)) and np.all(np.diff(f) <= 0.0)
    assert 0.1 * (1 - 1e-15) <= t_lo <= t_up <= 1.0


@pytest.mark.parametrize("value", [0.0, np.float64(0.0), np.int64(0)])
@pytest.mark.parametrize("make, name", [(Gaussian, "sigma"), (Laplace, "b"), (ZCDP, "rho")])
def test_constructors_reject_zero_scale(make, name, value):
    with pytest.raises(ValueError, match=name):
        make(value)


@pytest.mark.parametrize("value, exc", [(0.0, ValueError), (1.0, ValueError), (1.5, ValueError),
                                        (-1e-9, ValueError), (1e-320, ValueError), (math.nan, ValueError),
                                        (math.inf, ValueError), (True, TypeError), ("1e-5", TypeError),
                                        (None, TypeError)], ids=repr)
@pytest.mark.parametrize("method", ["epsilon", "epsilon_bounds"])
def test_epsilon_rejects_bad_delta(method, value, exc):
    m = Composition()([Laplace(1.0)], [3])
    with pytest.raises(exc, match="delta"):
        getattr(m, method)(value)


@pytest.mark.parametrize("value, exc", [(-1.0, ValueError), (-1e-300, ValueError), (math.inf, ValueError),
                                        ([0.1, math.nan], ValueError), (True, TypeError), ("0.1", TypeError),
                                        (None, TypeError), ([[1.0], [1.0, 2.0]], TypeError), (1j, TypeError)],
                         ids=repr)
@pytest.mark.parametrize("method", ["delta", "delta_bounds"])
def test_delta_rejects_bad_epsilon(method, value, exc):
    m = Composition()([Laplace(1.0)], [3])
    with pytest.raises(exc, match="epsilon"):
        getattr(m, method)(value)


@pytest.mark.parametrize("value, exc", [(0.999, ValueError), (0.5, ValueError), (-3.0, ValueError),
                                        (math.nan, ValueError), (-math.inf, ValueError),
                                        ([2.0, 0.9], ValueError), (True, TypeError), ("2", TypeError),
                                        (None, TypeError)], ids=repr)
def test_rdp_rejects_orders_below_one(value, exc):
    with pytest.raises(exc, match="alpha"):
        Gaussian(1.0).rdp(value)


@pytest.mark.parametrize("value, exc", [(-0.1, ValueError), (1.1, ValueError), (math.nan, ValueError),
                                        (True, TypeError), ("0.1", TypeError), (None, TypeError)], ids=repr)
def test_tradeoff_rejects_bad_fpr(value, exc):
    with pytest.raises(exc, match="fpr"):
        Laplace(1.0).tradeoff(value)


@pytest.mark.parametrize("value, exc", [(0.0, ValueError), (-1.0, ValueError), (1.0, ValueError),
                                        (math.nan, ValueError), (True, TypeError), ("1e-3", TypeError)],
                         ids=repr)
def test_tol_is_validated(value, exc):
    with pytest.raises(exc, match="tol"):
        Laplace(1.0).epsilon(1e-5, tol=value)


@pytest.mark.parametrize("via", ["magic", "AUTO", None, 3])
@pytest.mark.parametrize("method, arg", [("epsilon", 1e-5), ("delta", 1.0), ("tradeoff", 0.1)])
def test_unknown_routes_are_rejected(method, arg, via):
    with pytest.raises(ValueError, match="via"):
        getattr(Laplace(1.0), method)(arg, via=via)


@pytest.mark.parametrize("counts, exc", [([math.inf], ValueError), ([True], TypeError), (["3"], TypeError),
                                         ([None], TypeError), ([np.int64(0)], ValueError),
                                         ([np.float64(2.5)], ValueError), ([-10**20], ValueError),
                                         (3, TypeError), ([[1, 2]], TypeError)], ids=repr)
def test_composition_rejects_bad_counts(counts, exc):
    with pytest.raises(exc, match="counts"):
        Composition()([Gaussian(1.0)], counts)


@pytest.mark.parametrize("mechanisms, exc", [([], ValueError), ((), ValueError), ("x", TypeError),
                                             ({1}, TypeError), (None, TypeError)], ids=repr)
def test_composition_rejects_bad_mechanism_lists(mechanisms, exc):
    with pytest.raises(exc, match="mechanisms"):
        Composition()(mechanisms)


def test_integral_counts_are_accepted_as_integers():
    m = Composition()([Gaussian(2.0)], [np.float64(4.0)])
    assert m.counts == (4,) and isinstance(m.counts[0], int)
    assert m.epsilon(1e-5) == Gaussian(1.0).epsilon(1e-5)


# ----- once-broken cases of the phi and PLD routes ----------------------------------------------

def test_phi_route_on_large_pure_dp():
    assert PureDP(100.0).delta(0.0, via="phi") >= rr_delta_closed(100.0, 1, 0.0)


def test_phi_route_on_zero_loss():
    assert PureDP(0.0).epsilon(1e-5, via="phi") == 0.0


def test_phi_route_on_leaky_randomized_response():
    assert ApproxDP(1.0, 0.5).epsilon(0.5, via="phi") < math.inf


def test_phi_accuracy_warning_is_an_accuracy_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=AccuracyWarning)
        PureDP(1000.0).epsilon(0.999999, via="phi")


def test_pld_route_on_laplace_with_wide_pure_dp():
    """A lattice far wider than the grid spacing (once: numpy's size limit while snapping)."""
    m = Composition()([Laplace(1.0), PureDP(100.0)], [1, 1])
    assert m.delta(1.0) >= rr_delta_closed(100.0, 1, 1.0)


@pytest.mark.parametrize("count", [1e300, 10 ** 400, 2 ** 53])
def test_composition_counts_beyond_float_precision_are_rejected(count):
    with pytest.raises(ValueError, match=r"counts\[0\]"):
        Composition()([Gaussian(1.0)], [count])


def _leaky_rr_delta(eps0: float, d0: float, eps: float) -> mpmath.mpf:
    """The (eps0, d0)-DP class's profile (Kairouz, Oh and Viswanath 2015) in 50 digits."""
    mpmath.mp.dps = 50
    e0, dd, e = mpmath.mpf(eps0), mpmath.mpf(d0), mpmath.mpf(eps)
    return dd + (1 - dd) * max(1 - mpmath.e ** (e - e0), 0) / (1 + mpmath.e ** (-e0))


def _rr_delta(p: float, eps: float) -> mpmath.mpf:
    mpmath.mp.dps = 50
    pp = mpmath.mpf(p)
    return max(pp - mpmath.e ** mpmath.mpf(eps) * (1 - pp), 0)


@pytest.mark.parametrize(("eps0", "d0", "eps"), [(20.0, 1e-300, 10.537595921254406), (20.0, 0.5, 6.8766055),
                                                (1.0, 1e-6, 0.3)])
def test_approx_dp_delta_brackets_the_class_profile(eps0, d0, eps):
    # At eps0 = 20, 1 - expit(20) cancelled to 5e-8 relative: the upper end was 2.6e-12 low.
    lo, up = ApproxDP(eps0, d0).delta_bounds(eps)
    truth = _leaky_rr_delta(eps0, d0, eps)
    assert lo <= truth <= up


@pytest.mark.parametrize("delta", [0.999999, 0.6, 0.5000001])
def test_approx_dp_epsilon_is_where_the_class_profile_is_below_delta(delta):
    # 1 - c with c near 1 lost 5e-11 of eps: delta at the returned eps was 1.3e-17 above delta.
    assert _leaky_rr_delta(20.0, 0.5, ApproxDP(20.0, 0.5).epsilon(delta)) <= delta


@pytest.mark.parametrize(("p", "eps"), [(0.7310585786300049, 0.99999), (0.5000318183289373, 0.0001272720431876037)])
def test_randomized_response_near_its_log_odds_brackets_the_exact_delta(p, eps):
    # eps0 - eps = 1e-5: the rounding of the computed log-odds is 7.5e-12 of the closed form.
    lo, up = RandomizedResponse(p).delta_bounds(eps)
    truth = _rr_delta(p, eps)
    assert lo <= truth <= up


def test_laplace_at_its_rounded_pure_epsilon_keeps_the_leftover_delta():
    # fl(1/b) is below 1/b for b = 5.62...: the true delta there is 1.85e-18, not 0.
    b = 5.623413251903491
    x = 1.0 / b
    mpmath.mp.dps = 50
    truth = 1 - mpmath.e ** ((mpmath.mpf(x) - 1 / mpmath.mpf(b)) / 2)
    lo, up = Laplace(b).delta_bounds(x)
    assert truth > 0 and lo <= truth <= up


def test_a_lower_bound_at_one_is_rounded_below_one():
    # 32 runs of ApproxDP(10, 0.5): delta(160) = 1 - 0.5^32 e^{-10 * 32}..., below 1 by 4e-38.
    lo, up = Composition()([ApproxDP(10.0, 0.5)], [32]).delta_bounds(160.0)
    assert lo < 1.0 <= up


# ----- zCDP with xi ------------------------------------------------------------------------------


def _zcdp_eps_closed(xi: float, rho: float, delta: float) -> float:
    """min over real alpha > 1 of the conversion of Balle et al. (2020, Theorem 21) applied to
    RDP xi + rho alpha, written out here and minimised by scipy on a log scale of alpha - 1."""
    def eps(t: float) -> float:
        a = 1.0 + math.exp(t)
        return xi + rho * a + math.log1p(-1.0 / a) - (math.log(delta) + math.log(a)) / (a - 1.0)
    res = optimize.minimize_scalar(eps, bounds=(-12.0, 12.0), method="bounded", options={"xatol": 1e-10})
    return float(res.fun)


@pytest.mark.parametrize("rho, xi", [(0.1, 0.0), (0.1, 0.05), (0.5, 1.0), (2e-3, 0.2)])
def test_zcdp_with_xi_has_rdp_xi_plus_rho_alpha_and_its_conversion(rho, xi):
    m = ZCDP(rho, xi)
    alpha = np.array([1.5, 2.0, 10.0, 100.0])
    assert np.allclose(m.rdp(alpha), xi + rho * alpha, rtol=1e-14)
    for delta in (1e-3, 1e-6, 1e-10):
        truth = _zcdp_eps_closed(xi, rho, delta)
        got = m.epsilon(delta)
        assert truth * (1 - 1e-12) <= got <= truth * (1 + 1e-6)
    # Composition adds both parameters.
    c = Composition()([ZCDP(rho, xi)], [7])
    assert c.epsilon(1e-6) == pytest.approx(_zcdp_eps_closed(7 * xi, 7 * rho, 1e-6), rel=1e-6)


def test_zcdp_xi_is_validated_and_listed_only_when_nonzero():
    with pytest.raises(ValueError, match="xi"):
        ZCDP(0.1, -0.1)
    with pytest.raises(ValueError, match="xi"):
        ZCDP(0.1, math.nan)
    with pytest.raises(TypeError, match="xi"):
        ZCDP(0.1, "0")
    assert dict(ZCDP(0.3).params) == {"ZCDP.rho": 0.3}
    assert dict(ZCDP(0.3, 0.1).params) == {"ZCDP.rho": 0.3, "ZCDP.xi": 0.1}


@pytest.mark.parametrize("rho", [9e307, 1e308, 1.7e308, 1e200])
def test_zcdp_with_a_huge_rho_answers(rho):
    # epsilon_lower built Gaussian(1 / sqrt(2 rho)); 2 rho overflowed past rho = 9e307, and
    # ZCDP(1e308).epsilon_bounds(1e-5) raised "sigma must lie in [1e-300, inf), got 0.0", naming
    # a parameter the user never gave. The class contains the Gaussian with mu = sqrt(2 rho),
    # whose delta at eps = rho is about 1/2 > 1e-5: the true eps(1e-5) exceeds rho.
    m = ZCDP(rho)
    with warnings.catch_warnings():
        # (the exact Gaussian route warns of an inf * 0 at mu = 1e100 and beyond; its value stands)
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, up = m.epsilon_bounds(1e-5)
    assert 0.0 <= lo <= up and up >= rho


@_derandomised(200)
@given(log_rho=st.floats(-6.0, 6.0), log_xi=st.floats(-6.0, 3.0), log_beta=st.floats(-6.0, 6.0))
def test_zcdp_rdp_is_never_below_xi_plus_rho_alpha(log_rho, log_xi, log_beta):
    # xi + rho alpha takes two roundings, which the one outward ulp did not always cover.
    rho, xi, alpha = 10.0 ** log_rho, 10.0 ** log_xi, 1 + 10.0 ** log_beta
    exact = Fraction(xi) + Fraction(rho) * Fraction(alpha)
    m = ZCDP(rho, xi)
    for got in (m.rdp(alpha), float(m.rdp_curve()(np.array([alpha]))[0][0])):
        assert exact <= Fraction(got) <= exact * (1 + Fraction(1, 10 ** 14))


def test_composed_approx_dp_is_never_below_its_mass_at_infinity():
    # 10 runs of ApproxDP(1, 4.6e-7): delta is 1 - (1 - 4.6e-7)^10 at every eps past 10, which
    # -expm1(10 log1p(-4.6e-7)) had 1.7 ulps low: delta(1e5) came out below it (the outward ulp
    # did not make it up), and eps(delta) was 10 for a delta just below it (truly infinite).
    m = Composition()([ApproxDP(1.0, 4.6e-07)], [10])
    with mpmath.workdps(60):
        exact = 1 - (1 - mpmath.mpf(4.6e-07)) ** 10
    assert mpmath.mpf(m.delta(1e5)) >= exact
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        assert m.epsilon(math.nextafter(float(exact), 0.0)) == math.inf
