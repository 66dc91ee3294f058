"""FFT composition (autoacct/pld/compose.py) of discretised laws, against exact binomial sums.

Randomized response with log-odds eps0 lives on the lattice eps0 Z, so on h = eps0 its
discrete PLDs are exact and k-fold composition must reproduce the binomial sum of
k-fold randomized response, up to the accounted FFT error, with the upper profile
above and the lower profile below it.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, rr_delta_closed
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.losses import GaussianLoss, randomized_response_loss
from autoacct.pld.components import Component
from autoacct.pld.compose import _tilt, compose
from autoacct.pld.discretize import DiscretePLD, discretize


@pytest.mark.parametrize("eps0, k", [(0.3, 50), (1.0, 7), (0.05, 400)])
def test_randomized_response_composition_matches_the_binomial_sum(eps0, k):
    h = eps0
    upper, lower = discretize(randomized_response_loss(eps0), h, -2, 2)
    up, low = compose([Component(upper, lower, k)], h, math.log(1e-18))
    eps = np.array([0.0, 0.5 * eps0, 2 * eps0, 5 * eps0])
    truth = np.array([rr_delta_closed(eps0, k, e) for e in eps])
    d_up, d_low = up.delta(eps), low.delta(eps)
    assert np.all(d_low <= truth * (1 + 1e-9) + 1e-15)
    assert np.all(d_up >= truth * (1 - 1e-9))
    assert np.all(d_up - d_low <= 1e-9 + 1e-6 * truth)


@pytest.mark.parametrize("sigma, k", [(2.0, 100), (0.8, 10)])
def test_gaussian_composition_brackets_the_analytic_gaussian(sigma, k):
    """Gaussian laws on a grid: the composed profiles bracket the analytic Gaussian with
    mu = sqrt(k) / sigma (Balle and Wang 2018), and the bracket narrows as h does."""
    mu1, mu = 1.0 / sigma, math.sqrt(k) / sigma
    eps = np.array([0.5, 1.0, 2.0]) * mu
    truth = np.array([gaussian_delta_closed(mu, e) for e in eps])
    widths = []
    for h in (0.02 * mu1, 0.005 * mu1):
        lo_j = math.floor((-mu1 * mu1 / 2 - 12 * mu1) / h)
        hi_j = math.ceil((mu1 * mu1 / 2 + 12 * mu1) / h)
        upper, lower = discretize(GaussianLoss(mu1), h, lo_j, hi_j)
        up, low = compose([Component(upper, lower, k)], h, math.log(1e-18))
        d_up, d_low = up.delta(eps), low.delta(eps)
        assert np.all(d_low <= truth) and np.all(d_up >= truth)
        widths.append(float(np.max(d_up - d_low)))
    assert widths[1] < widths[0]


def test_long_transforms_keep_no_plans() -> None:
    """Transforms of long rows leave no memory behind (scipy.fft keeps its last 16 plans,
    about 10 bytes a point each: 8 sizes near 2^21 grew a process by 150-250 MB; numpy.fft's
    transforms are the same bit for bit and keep none), and invert each other."""
    import sys

    from autoacct.pld.transforms import irfft_rows, rfft_rows

    if not sys.platform.startswith("linux"):
        pytest.skip("reads the resident set from /proc")

    def resident() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096.0

    rng = np.random.default_rng(3)
    start = resident()
    for n in (2**21, 2**21 + 2**15, 3 * 2**19, 5 * 2**18, 2**21 + 2**17, 1_944_000, 2_073_600, 2_099_520):
        rows = rng.random((1, n))
        back = irfft_rows(rfft_rows(rows), n)
        assert np.allclose(back, rows, rtol=0, atol=1e-12)
        del rows, back
    assert resident() - start < 64e6


def test_a_deficit_is_counted_against_the_mass_of_sub_probability_parts():
    """j copies of a law's tail (a sub-probability measure of mass t, as a split law's term
    composes them, see autoacct/pld/jumps.py) whose lower PLD was raised by a deficit c by
    clipping: the composed lower profile gives back at most (t + c)^j - t^j, not the
    (1 + c)^j - 1 a law's steps give back, which at t^j = 2e-27 swamps the profile.
    Each is compared with the same composition without the deficit (the bound it gives
    back, no more) and stays below the upper profile."""
    import dataclasses

    import autoacct
    from autoacct.losses.restricted import RestrictedLoss

    loss = autoacct.dpsgd(sample_rate=1e-3, noise_multiplier=0.5, steps=1).loss_parts()[0].forward
    tail = RestrictedLoss(loss, 1.0, math.inf)
    h, j, deficit = 0.01, 5, 1e-22
    up, low = discretize(tail, h, int(1.0 / h) - 1, int(loss.quantile_range(1e-30)[1] / h) + 1)
    mass = low.total
    assert 1e-6 < mass < 1e-3
    raised = dataclasses.replace(low, deficit=deficit)
    eps = np.linspace(0.0, 25.0, 51)
    u, plain = compose([Component(up, low, j)], h, math.log(1e-40), 0.2)
    _, counted = compose([Component(up, raised, j)], h, math.log(1e-40), 0.2)
    given_back = mass ** j * math.expm1(j * math.log1p(deficit / mass)) * (1 + 1e-9)
    p, c = plain.delta(eps), counted.delta(eps)
    assert np.all(c <= p) and np.all(c >= p - given_back)
    assert np.all(c <= u.delta(eps))
    big = p > 1e-3 * mass ** j
    assert big.sum() >= 10 and np.all(c[big] >= 0.99 * p[big])


@pytest.mark.parametrize("k", [2, 7, 99, 100, 3200, 100_003])
def test_spectrum_powers_are_within_the_charged_rounding(k):
    # The composer raises each spectrum to its count (compose._power) and charges 4u per
    # factor for the rounding. Against 200-bit powers (mpmath): within sqrt(5) (k - 1) u,
    # the bound of a chain of k - 1 complex products, and exactly 0 off the live points;
    # the powers of the moduli (a bound on the spectrum's) at or above the exact ones.
    import mpmath as mp

    from autoacct.pld.compose import _power

    rng = np.random.default_rng(k)
    n = 200
    # Moduli from 1 down to where |z|^k is 1e-300, the composer's live threshold.
    z = np.exp(-rng.uniform(0.0, 690.0 / k, n)) * np.exp(1j * rng.uniform(-math.pi, math.pi, n))
    live = rng.uniform(size=n) < 0.8
    got = z.copy()
    _power(got, k, live)
    assert np.all(got[~live] == 0.0)
    bound = math.sqrt(5.0) * (k - 1) * 2.0 ** -53
    mods = np.abs(z)
    got_mods = mods.copy()
    _power(got_mods, k, live)
    assert np.all(got_mods[~live] == 0.0)
    with mp.workprec(200):
        for a, b in zip(z[live], got[live]):
            exact = mp.mpc(a.real, a.imag) ** k
            assert float(abs(mp.mpc(b.real, b.imag) - exact) / abs(exact)) <= bound
        for a, b in zip(mods[live], got_mods[live]):
            exact = mp.mpf(a) ** k
            assert exact <= b <= exact * (1 + 6 * k * 2.0 ** -53)


@pytest.mark.parametrize("k", [2, 10 ** 6, 2 ** 50, 3 * 2 ** 49, 2 ** 51, 2 ** 52, 2 ** 53])
def test_power_rounding_covers_the_compounded_chain_at_huge_counts(k):
    """The relative rounding charged for z^k by binary exponentiation, (k + 1) 4u plus
    power_rounding(k), is at least the chain's compounded (1 + sqrt(5) u)^(k - 1) - 1 (60 digits):
    the first-order (k + 1) 4u alone fell short past k = 1.6e15 (4 against 8.4 at 2^52), and it
    is kept bit for bit below that."""
    import mpmath as mp

    from autoacct.exactness import MACHINE_EPSILON as u
    from autoacct.pld.compose import power_rounding

    charged = 4.0 * u * (k + 1.0) + power_rounding(k)
    with mp.workdps(60):
        chain = (1 + mp.sqrt(5) * mp.mpf(u)) ** (k - 1) - 1
    assert charged >= chain
    if k <= 10 ** 15:
        assert power_rounding(k) == 0.0


@settings(max_examples=60, derandomize=True, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), lam=st.floats(-300.0, 300.0), log_h=st.floats(math.log(1e-6), math.log(0.5)),
       start=st.integers(-10**6, 10**6), spread=st.floats(1.0, 700.0))
def test_tilted_masses_times_their_normaliser_are_within_the_bound_tilt_reports(seed, lam, log_h, start, spread):
    # Each tilted, normalised mass times e^{log M} against w_i e^{lam x_i} with x_i = (start + i) h
    # exactly, in 60 digits: within the relative bound _tilt returns (which log K carries, k
    # times, to each row's side), for masses spread over up to e^-700 and tilts up to 300.
    rng = np.random.default_rng(seed)
    h = math.exp(log_h)
    w = np.exp(-rng.uniform(0.0, spread, 50))
    pld = DiscretePLD(h, start, w, 0.0)
    z, log_m, rel = _tilt(pld, lam)
    with mpmath.workdps(60):
        m = mpmath.exp(mpmath.mpf(log_m))
        for i in np.flatnonzero(z > np.finfo(float).tiny):
            exact = mpmath.mpf(float(w[i])) * mpmath.exp(lam * (start + int(i)) * mpmath.mpf(h))
            assert abs(mpmath.mpf(float(z[i])) * m / exact - 1) <= rel


def test_slack_covers_a_composed_point_made_of_large_parts_of_both_signs():
    """A composed lattice point S h stands for the sum of its parts' losses, each at its own
    float point fl(j h) (u |j h| off j h): parts of both signs add their roundings while their
    losses cancel, so a point near 0 inside the window can lie u sum_i |x_i| from its loss,
    far beyond 2.5 u of the window's largest |loss| (the former DiscreteProfile.slack). Here
    500 parts at +a h and 500 at -b h, the roundings of fl(a h) and fl(-b h) of one sign,
    measured exactly in fractions."""
    from fractions import Fraction

    h, k = 1e-3 / 3.0, 1000
    up, low = discretize(GaussianLoss(0.1), h, -3000, 3000)
    profile, _ = compose([Component(up, low, k)], h, math.log(1e-30), 0.0)
    first, last = (up.start + i for i in up.support)

    def rounding(j: int) -> Fraction:
        return Fraction(float(np.float64(j) * h)) - j * Fraction(h)
    # a and b near each other and near the top, the roundings at +a and at -b both positive.
    a, b = max(((i, j) for i in range(last // 2, min(last, -first) - 3) for j in range(i - 3, i + 4)),
               key=lambda ij: rounding(ij[0]) - rounding(ij[1]))
    s = (k // 2) * (a - b)
    assert profile.start <= s < profile.start + len(profile.tilted)
    parts = (k // 2) * (Fraction(float(np.float64(a) * h)) + Fraction(float(np.float64(-b) * h)))
    off = abs(parts - Fraction(float(np.float64(s) * h)))
    assert profile.slack >= off, (profile.slack, float(off))


def _exact_inf_mass(p: float, k: int) -> mpmath.mpf:
    with mpmath.workdps(60):
        return 1 - (1 - mpmath.mpf(p)) ** k


# (p, k) whose mass at +inf -expm1(k log1p(-p)) fell more than an ulp below the exact one (the
# first three) or above it (the last three): unrounded, the upper mass (and every upper delta
# past the support, and eps(delta) for a delta it exceeds) was below the truth, the lower one above.
_INF_CASES = [(4.6e-07, 10), (0.00119, 10), (0.196, 3), (0.000177, 3), (0.000329, 10), (0.0666, 3)]


@pytest.mark.parametrize("p, k", _INF_CASES)
def test_composed_mass_at_infinity_is_rounded_outward(p, k):
    from autoacct.losses.binary import LeakyRandomizedResponseLoss

    upper, lower = discretize(LeakyRandomizedResponseLoss(1.0, p), 1.0, -2, 2)
    up, low = compose([Component(upper, lower, k)], 1.0, math.log(1e-18))
    exact = _exact_inf_mass(p, k)
    assert mpmath.mpf(up.inf_mass) >= exact and mpmath.mpf(low.inf_mass) <= exact
    # Past the largest finite loss (k) the upper delta is the mass at +inf, and no finite eps
    # has a delta below it.
    assert mpmath.mpf(float(up.delta(np.array([2.0 * k]))[0])) >= exact
    below = math.nextafter(float(exact), 0.0)
    assert up.epsilon(below) == math.inf


def test_a_deficit_past_the_floats_leaves_the_lower_profile_zero_not_an_overflow():
    """The clipped mass given back by parts of laws, (t + c)^j - t^j, formed as
    t^j expm1(j log1p(c / t)), overflowed math.expm1 once j log1p(c / t) passed 709:
    dpsgd(1e-7, 5.0, 10**11) raised OverflowError from ``clipped``. Beyond the floats it is
    inf, and the lower profile is 0 (never NaN, never above the one without the deficit)."""
    import dataclasses

    import autoacct
    from autoacct.losses.restricted import RestrictedLoss

    loss = autoacct.dpsgd(sample_rate=1e-3, noise_multiplier=0.5, steps=1).loss_parts()[0].forward
    tail = RestrictedLoss(loss, 1.0, math.inf)
    h, j = 0.01, 5
    up, low = discretize(tail, h, int(1.0 / h) - 1, int(loss.quantile_range(1e-30)[1] / h) + 1)
    raised = dataclasses.replace(low, deficit=1e300)
    eps = np.linspace(0.0, 25.0, 51)
    _, plain = compose([Component(up, low, j)], h, math.log(1e-40), 0.2)
    _, counted = compose([Component(up, raised, j)], h, math.log(1e-40), 0.2)
    c = counted.delta(eps)
    assert not np.any(np.isnan(c)) and np.all(c == 0.0) and np.any(plain.delta(eps) > 0.0)
