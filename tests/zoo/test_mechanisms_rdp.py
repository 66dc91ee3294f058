"""RDP of the base mechanisms against exact values (rationals, mpmath after Mironov 2017) at orders
from 1 + 1e-12 to 1e300, and zCDP with xi (Bun and Steinke 2016)."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from mechanism_sweeps import (
    derandomised,
    warnings_are_errors,  # noqa: F401 (autouse: warnings are errors here)
)
from scipy import optimize

from autoacct.zoo import ZCDP, ApproxDP, Composition, Gaussian, Laplace, PureDP, RandomizedResponse

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


@derandomised(300)
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


@derandomised(300)
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


@derandomised(200)
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


@derandomised(300)
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


@derandomised(150)
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


@derandomised(200)
@given(log_rho=st.floats(-6.0, 6.0), log_xi=st.floats(-6.0, 3.0), log_beta=st.floats(-6.0, 6.0))
def test_zcdp_rdp_is_never_below_xi_plus_rho_alpha(log_rho, log_xi, log_beta):
    # xi + rho alpha takes two roundings, which the one outward ulp did not always cover.
    rho, xi, alpha = 10.0 ** log_rho, 10.0 ** log_xi, 1 + 10.0 ** log_beta
    exact = Fraction(xi) + Fraction(rho) * Fraction(alpha)
    m = ZCDP(rho, xi)
    for got in (m.rdp(alpha), float(m.rdp_curve()(np.array([alpha]))[0][0])):
        assert exact <= Fraction(got) <= exact * (1 + Fraction(1, 10 ** 14))
