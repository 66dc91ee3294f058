"""Closed-form bounds on the inverse of the mu-GDP profile (autoacct/losses/gdp.py), and the exact
route's epsilon bounds of Gaussians with a huge mu, against the analytic profile in mpmath.

The truth is read through the monotone inverse (tests/property_checks.py): lo <= eps(delta) iff
delta(lo) >= delta, up >= eps(delta) iff delta(up) <= delta, with delta(eps) = Phi(mu/2 - eps/mu)
- e^eps Phi(-mu/2 - eps/mu) (Balle and Wang 2018) at 60 digits beyond the size of mu^2, so that
eps/mu - mu/2 keeps 60 digits where eps is of order mu^2.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.losses.gdp import gaussian_epsilon_closed_lower, gaussian_epsilon_closed_upper
from autoacct.zoo import Composition, Gaussian


def mp_gdp_delta(mu: mp.mpf | float, eps: float) -> mp.mpf:
    """delta(eps) of mu-GDP, with digits for eps/mu - mu/2 to keep 60 of its own."""
    digits = 60 + 2 * max(0, int(mp.log10(mp.mpf(mu)))) + max(0, int(math.log10(max(eps, 1.0))))
    with mp.workdps(digits):
        m, e = mp.mpf(mu), mp.mpf(eps)
        return mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m)


@settings(max_examples=300, derandomize=True, deadline=None, database=None)
@given(log_mu=st.floats(0.0, 154.0), log_delta=st.floats(-300.0, -1e-7))
def test_closed_forms_bracket_the_analytic_epsilon(log_mu, log_delta):
    mu, delta = 10.0 ** log_mu, 10.0 ** log_delta
    lo, up = gaussian_epsilon_closed_lower(mu, delta), gaussian_epsilon_closed_upper(mu, delta)
    assert lo == 0.0 or mp_gdp_delta(mu, lo) >= delta
    assert up == math.inf or mp_gdp_delta(mu, up) <= delta
    if mu >= 1e4:
        # Tight where the bisection fails: Mills' ratio leaves a relative |a| / mu of delta.
        assert 0.0 < lo <= up <= lo * (1 + 1e-7)


@pytest.mark.parametrize("sigma", [2.5e-8, 2e-8, 1e-8, 1e-10, 1e-30, 1e-100, 1e-154, 7.4e-155, 6e-155, 1e-300])
@pytest.mark.parametrize("delta", [1e-300, 1e-5, 0.5, 0.999999])
def test_a_gaussian_with_a_huge_mu_has_a_positive_lower_epsilon(sigma, delta):
    # mu = 1/sigma above 4e7: the lower end was 0 (Gaussian(1e-8).epsilon_bounds(1e-5) was
    # (0, 5.0000004e15)); the profile's bisection certified nothing where eps + log Phi(b)
    # - log Phi(a) is a difference of terms of size mu^2/2. Past mu = 1.3e154 mu^2 overflowed and
    # the bisection warned of it (7.4e-155, 6e-155); past 1.9e154 eps(delta) is beyond the floats.
    lo, up = Gaussian(sigma).epsilon_bounds(delta)
    mu = 1 / mp.mpf(sigma)
    assert 0.0 < lo
    if sigma >= 5.3e-155:
        assert mp_gdp_delta(mu, lo) >= delta
        assert mp_gdp_delta(mu, up) <= delta
        assert up - lo <= 1e-13 * up
    else:
        # mpmath's erfc fails at arguments past 1.3e154 (its series check squares a float), so
        # delta(lo) is bounded below through Mills' ratio Phi(b) <= phi(b) / |b| (b < 0) at
        # mu = 1.9e154, whose eps(delta) is below the larger mu's (a post-processing of it).
        assert up == math.inf and lo >= 1.7e308
        with mp.workdps(700):
            m, e = mp.mpf("1.9e154"), mp.mpf(lo)
            b = -m / 2 - e / m
            assert mp.ncdf(m / 2 - e / m) - mp.exp(e - b * b / 2) / (mp.sqrt(2 * mp.pi) * -b) >= delta


def test_a_composition_of_gaussians_with_a_huge_mu_has_a_positive_lower_epsilon():
    # 1e4 runs of Gaussian(1e-6): mu = 1e8, eps(1e-5) = 5.0000004264890e15.
    lo, up = Composition()([Gaussian(1e-6)], [10**4]).epsilon_bounds(1e-5)
    with mp.workdps(60):
        mu = mp.sqrt(10**4) / mp.mpf(1e-6)
    assert 0.0 < lo and mp_gdp_delta(mu, lo) >= 1e-5 >= mp_gdp_delta(mu, up)
    assert up - lo <= 1e-13 * up


@pytest.mark.parametrize("sigma, width", [(1e-6, 1e-8), (1e-8, 1e-6), (1e-9, 1e-5), (1e-12, 1e-2)])
@pytest.mark.parametrize("eps", [0.0, 0.5, 1e3])
def test_a_gaussian_with_a_huge_mu_has_a_tight_delta(sigma, width, eps):
    # mu = 1/sigma: a and b = -eps/mu -+ mu/2 are off by an ulp of mu/2 (5e-9 at mu = 1e8), which
    # the profile's rounding bound took for a relative error of 2 in delta: Gaussian(1e-8)
    # bounded delta(0.5) by [0, 1]. It moves log Phi(b) by about |b| da, but 1 - e^r not at all
    # where r is of order -mu^2 / 2; the truth, 1 to within 1e-300, lies in a bracket `width`
    # wide.
    lo, up = Gaussian(sigma).delta_bounds(eps)
    truth = mp_gdp_delta(1 / mp.mpf(sigma), eps)
    assert lo <= truth <= up
    assert up - lo <= width
