"""Tests of the subsampled RDP bounds (gaussian_rdp, poisson, without_replacement).

Reference values never come from the functions under test: the sampled
Gaussian is checked against mpmath quadrature of its defining integral, the
general bounds against adaptive (scipy) quadrature of the exact Renyi divergences
of subsampled Laplace and Gaussian pairs, and against closed forms.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.special import gammaln

from autoacct.subsampling.gaussian_rdp import sgm_rdp
from autoacct.subsampling.poisson import poisson_rdp_bound
from autoacct.subsampling.without_replacement import swor_rdp_bound
from autoacct.zoo import Composition, Gaussian, SampleWithoutReplacement

QS_SIGMAS = [(0.01, 1.0), (0.1, 2.0), (0.001, 0.8), (0.5, 5.0)]
ORDERS = [1.5, 2.5, 3.5, 2.0, 8.0, 32.0]


# ----------------------------------------------------------------------------------
# independent references by quadrature
# ----------------------------------------------------------------------------------

def _breakpoints(lo: mpmath.mpf, hi: mpmath.mpf, width: mpmath.mpf) -> list[mpmath.mpf]:
    """-inf, a grid of lo..hi with spacing about width, +inf: breakpoints for mpmath.quad."""
    n = int(mpmath.ceil((hi - lo) / width))
    return [-mpmath.inf] + list(mpmath.linspace(lo, hi, n + 1)) + [mpmath.inf]


def quad_sgm_rdp(q: float, sigma: float, alpha: float, dps: int = 20) -> float:
    """log(A_alpha)/(alpha-1) with A_alpha = E_{z~N(0,s^2)}[((1-q) + q e^{(2z-1)/(2s^2)})^alpha]."""
    with mpmath.workdps(dps):
        q_, s, a = mpmath.mpf(q), mpmath.mpf(sigma), mpmath.mpf(alpha)
        c = 1 / (2 * s * s)

        def f(z: mpmath.mpf) -> mpmath.mpf:
            return mpmath.exp(-z * z * c) * ((1 - q_) + q_ * mpmath.exp((2 * z - 1) * c)) ** a

        pts = _breakpoints(-10 * s, a + 10 * s, 8 * s)
        big_a = mpmath.quad(f, pts) / mpmath.sqrt(2 * mpmath.pi * s * s)
        return float(mpmath.log(big_a) / (a - 1))


def quad_sgm_kl(q: float, sigma: float, dps: int = 30) -> float:
    """KL((1-q)N(0,s^2) + qN(1,s^2) || N(0,s^2)), the alpha -> 1 limit."""
    with mpmath.workdps(dps):
        q_, s = mpmath.mpf(q), mpmath.mpf(sigma)
        c = 1 / (2 * s * s)

        def f(z: mpmath.mpf) -> mpmath.mpf:
            ratio = (1 - q_) + q_ * mpmath.exp((2 * z - 1) * c)
            return mpmath.exp(-z * z * c) * ratio * mpmath.log(ratio)

        val = mpmath.quad(f, _breakpoints(-10 * s, 1 + 10 * s, 2 * s))
        return float(val / mpmath.sqrt(2 * mpmath.pi * s * s))


def quad_renyi(log_p: Callable[[float], float], log_r: Callable[[float], float], alpha: float,
               points: list[float]) -> float:
    """D_alpha(P || R) = log(int p^alpha r^(1-alpha))/(alpha-1) by adaptive quadrature.

    ``log_p`` and ``log_r`` are log-densities (evaluated in log space so that the
    tails neither underflow nor overflow); ``points`` are the integration limits
    and the kinks in between.
    """
    def f(z: float) -> float:
        return math.exp(alpha * log_p(z) + (1.0 - alpha) * log_r(z))

    total = sum(integrate.quad(f, a, b, epsabs=0.0, epsrel=1e-12, limit=200)[0]
                for a, b in zip(points[:-1], points[1:]))
    return math.log(total) / (alpha - 1.0)


# ----------------------------------------------------------------------------------
# sgm_rdp
# ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("q", "sigma"), QS_SIGMAS)
def test_sgm_rdp_matches_quadrature(q: float, sigma: float) -> None:
    got = sgm_rdp(q, sigma, ORDERS)
    for alpha, value in zip(ORDERS, got):
        ref = quad_sgm_rdp(q, sigma, alpha)
        assert value == pytest.approx(ref, rel=1e-6, abs=0.0), (alpha, value, ref)
        assert value >= ref * (1.0 - 1e-12), (alpha, value, ref)


@pytest.mark.parametrize(("q", "sigma", "alpha"), [
    (1e-6, 10.0, 1.5), (1e-6, 10.0, 2.0), (1e-12, 100.0, 3.5), (1e-3, 1e4, 1.5),
])
def test_sgm_rdp_extreme_parameters_match_quadrature(q: float, sigma: float, alpha: float) -> None:
    """Cancellation-prone corners: log A_alpha down to 1e-28."""
    value = float(sgm_rdp(q, sigma, alpha))
    ref = quad_sgm_rdp(q, sigma, alpha, dps=50)
    assert value == pytest.approx(ref, rel=1e-6, abs=0.0)
    assert value >= ref * (1.0 - 1e-12)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 7.0])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 7.25, 64.0])
def test_sgm_rdp_q_one_is_gaussian(sigma: float, alpha: float) -> None:
    assert float(sgm_rdp(1.0, sigma, alpha)) == pytest.approx(alpha / (2 * sigma**2), rel=1e-15)


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(log_sigma=st.floats(-2.0, 100.0), log_beta=st.floats(-8.0, 6.0))
def test_sgm_rdp_q_one_is_never_below_the_exact_gaussian(log_sigma: float, log_beta: float) -> None:
    # sgm_rdp(1, sigma, alpha) was alpha / (2 sigma^2) unrounded, below its exact value by up to
    # two roundings; against exact rationals it is now never below, and within 1e-14 above.
    sigma, alpha = 10.0 ** log_sigma, 1 + 10.0 ** log_beta
    exact = Fraction(alpha) / (2 * Fraction(sigma) ** 2)
    got = Fraction(float(sgm_rdp(1.0, sigma, alpha)))
    assert exact <= got <= exact * (1 + Fraction(1, 10 ** 14)) + Fraction(1, 10 ** 320)


@pytest.mark.parametrize(("q", "sigma"), QS_SIGMAS + [(1e-5, 30.0), (0.9, 0.2)])
def test_sgm_rdp_monotone_in_alpha(q: float, sigma: float) -> None:
    alphas = np.concatenate([1 + np.geomspace(1e-10, 1, 8), np.linspace(2, 12, 21),
                             [16, 31.5, 63.5, 64, 255.5, 1000]])
    values = sgm_rdp(q, sigma, alphas)
    assert np.all(np.diff(values) >= 0.0)


@pytest.mark.parametrize(("alpha", "sigma"), [(1 + 1e-8, 1.3), (1.5, 0.5), (2.0, 20.0),
                                               (3.7, 1.3), (16.0, 0.5)])
def test_sgm_rdp_monotone_in_q(alpha: float, sigma: float) -> None:
    qs = np.concatenate([np.geomspace(1e-9, 0.5, 20), np.linspace(0.55, 1.0, 8)])
    values = np.array([float(sgm_rdp(q, sigma, alpha)) for q in qs])
    assert np.all(np.diff(values) >= 0.0)


@pytest.mark.parametrize(("q", "sigma"), QS_SIGMAS)
def test_sgm_rdp_alpha_near_one_is_finite_and_tends_to_kl(q: float, sigma: float) -> None:
    kl = quad_sgm_kl(q, sigma)
    for alpha in (1 + 1e-8, 1 + 1e-12, float(np.nextafter(1.0, 2.0))):
        value = float(sgm_rdp(q, sigma, alpha))
        assert math.isfinite(value)
        # D_alpha is increasing with limit KL at alpha = 1, and its slope there is
        # finite, so at alpha - 1 <= 1e-8 it is within 1e-6 of KL.
        assert value >= kl * (1.0 - 1e-12)
        assert value == pytest.approx(kl, rel=1e-6)


def test_sgm_rdp_emits_no_runtime_warnings() -> None:
    alphas = [1 + 1e-15, 1 + 1e-8, 1.5, 2.0, 7.3, 100.5, 9999.5, 1e4]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for q in (5e-324, 1e-300, 1e-9, 0.5, 1 - 1e-16):
            for sigma in (0.05, 1.0, 1e4):
                values = sgm_rdp(q, sigma, alphas)
                assert np.all(np.isfinite(values)) and np.all(values >= 0.0)


def test_sgm_rdp_shapes_and_validation() -> None:
    assert sgm_rdp(0.1, 1.0, 2.0).shape == ()
    grid = np.array([[1.5, 2.0], [2.0, 8.25]])
    out = sgm_rdp(0.1, 1.0, grid)
    assert out.shape == (2, 2)
    assert out[0, 1] == out[1, 0]
    for bad in ({"q": 0.0}, {"q": 1.5}, {"sigma": 0.0}, {"sigma": -1.0}, {"alpha": 1.0},
                {"alpha": [2.0, 0.5]}, {"alpha": math.nan}, {"q": math.nan}):
        kwargs = {"q": 0.1, "sigma": 1.0, "alpha": 2.0} | bad
        with pytest.raises(ValueError):
            sgm_rdp(**kwargs)


def mp_sgm_rdp_binomial(q: float, sigma: float, n: int, top: int | None = None) -> mpmath.mpf:
    """log(A_n)/(n - 1) at an integer order by the binomial sum
    A_n = sum_k C(n, k) (1-q)^(n-k) q^k e^{k(k-1)/(2 sigma^2)} in 40-digit arithmetic: over its
    terms within 150 nats of the largest (found in double precision; the n others add below
    n e^-150 relative), or with ``top`` over k = n - top..n only (for n so large that
    n / sigma^2 >> log(n / q): each term is then below e^{-n/(2 sigma^2)} of the next above it,
    and the lower half of the sum below 2^n e^{n^2/(8 sigma^2)}, far below the last term)."""
    with mpmath.workdps(40):
        q_, s2, n_ = mpmath.mpf(q), 2 * mpmath.mpf(sigma) ** 2, mpmath.mpf(n)

        def log_term(k: int) -> mpmath.mpf:
            return (mpmath.loggamma(n_ + 1) - mpmath.loggamma(k + 1) - mpmath.loggamma(n_ - k + 1)
                    + k * mpmath.log(q_) + (n_ - k) * mpmath.log1p(-q_) + k * (k - 1) / s2)
        if top is None:
            k = np.arange(n + 1, dtype=float)
            approx = (gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0) + k * math.log(q)
                      + (n - k) * math.log1p(-q) + k * (k - 1.0) / (2.0 * sigma ** 2))
            ks = [int(i) for i in np.flatnonzero(approx >= np.max(approx) - 150.0)]
        else:
            ks = [n - j for j in range(top + 1)]
        logs = [log_term(k) for k in ks]
        peak = max(logs)
        return (peak + mpmath.log(mpmath.fsum(mpmath.exp(v - peak) for v in logs))) / (n_ - 1)


@pytest.mark.parametrize(("q", "sigma", "alpha", "top", "rel"), [
    (0.01, 1.0, 100_001, None, 1e-12), (0.01, 30.0, 200_000, None, 1e-12),
    (1e-3, 300.0, 100_001, None, 1.5e3), (0.01, 1.0, 30_000_000, 50, 1e-12),
    (0.5, 2.0, 10 ** 20, 50, 1e-12),
])
def test_sgm_rdp_huge_orders_are_cheap_and_sound(q: float, sigma: float, alpha: int, top: int | None,
                                                 rel: float) -> None:
    # The expansions hold about alpha terms: rdp(3e7) took 13.7 s and 3.1 GB, rdp(1e20) raised
    # numpy's "Maximum allowed size exceeded". Above SERIES_MAX_ORDER the Minkowski bound: never
    # below the binomial sum, within rounding of it where (alpha - 1)/(2 sigma^2) >> log(1/q),
    # and at most alpha / (2 sigma^2) where it is not (at sigma = 300, about 1/q times the truth,
    # against 10^6 times for alpha / (2 sigma^2)).
    from autoacct.zoo import PoissonSubsample

    got = float(sgm_rdp(q, sigma, float(alpha)))
    truth = mp_sgm_rdp_binomial(q, sigma, alpha, top)
    assert truth <= got <= truth * (1 + rel)
    assert got <= mpmath.mpf(alpha) / (2 * mpmath.mpf(sigma) ** 2) * (1 + 1e-14)
    assert PoissonSubsample(q)(Gaussian(sigma)).rdp(float(alpha)) >= got


@pytest.mark.parametrize(("q", "sigma"), [(0.5, 1e101), (0.01, 1e150), (0.5, 1e300)])
def test_sgm_rdp_huge_sigma_is_answered_and_sound(q: float, sigma: float) -> None:
    # Above sigma = 1e100 sgm_rdp refused sigma at query time ("sigma must lie in [1e-100, 1e+100]"),
    # so PoissonSubsample(q)(Gaussian(1e300)).rdp(2) raised. Now the Minkowski bound, against the
    # binomial sum (the truth is below 1e-200; at most 1/q times it here).
    from autoacct.zoo import PoissonSubsample

    for n in (2, 3, 10):
        got = float(sgm_rdp(q, sigma, float(n)))
        with mpmath.workdps(40):
            # A_n - 1 = sum_{k>=2} C(n, k) (1-q)^(n-k) q^k (e^{k(k-1)/(2 sigma^2)} - 1): no 1 + tiny
            q_, s2 = mpmath.mpf(q), 2 * mpmath.mpf(sigma) ** 2
            excess = mpmath.fsum(mpmath.binomial(n, k) * (1 - q_) ** (n - k) * q_ ** k
                                 * mpmath.expm1(k * (k - 1) / s2) for k in range(2, n + 1))
            truth = mpmath.log1p(excess) / (n - 1)
        assert truth <= got <= max(truth * (1.01 / q) * n / (n - 1), mpmath.mpf(1e-299))
    assert PoissonSubsample(q)(Gaussian(sigma)).rdp(2.0) >= float(sgm_rdp(q, sigma, 2.0))


def test_family_huge_orders_are_sound() -> None:
    from autoacct.zoo import PoissonSubsample

    rates = [0.01 * (1 + i / 20) for i in range(16)]
    m = Composition()([PoissonSubsample(q)(Gaussian(1.0)) for q in rates], [10] * 16)
    got = m.rdp(np.array([200_000.0, 200_000.5, 1e20]))
    truth = mpmath.fsum(10 * mp_sgm_rdp_binomial(q, 1.0, 200_000) for q in rates)
    assert truth <= got[0] <= truth * (1 + 1e-13) and got[0] <= got[1]
    assert mpmath.fsum(10 * mp_sgm_rdp_binomial(q, 1.0, 10 ** 20, 50) for q in rates) <= got[2]


def _sorted_alphas() -> st.SearchStrategy[list[float]]:
    order = st.one_of(st.floats(min_value=1.0, max_value=1e4, exclude_min=True),
                      st.integers(min_value=2, max_value=10_000).map(float),
                      st.floats(min_value=-12.0, max_value=0.0).map(lambda e: 1.0 + 10.0**e))
    return st.lists(order, min_size=2, max_size=4).map(sorted)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(q=st.floats(min_value=0.0, max_value=1.0, exclude_min=True),
       sigma=st.floats(min_value=0.05, max_value=1e4),
       alphas=_sorted_alphas())
def test_sgm_rdp_properties(q: float, sigma: float, alphas: list[float]) -> None:
    """Never NaN, never negative, non-decreasing in alpha (up to the 1e-9 rounding margin
    that separates independently certified evaluations at orders closer than that)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = sgm_rdp(q, sigma, alphas)
    assert not np.any(np.isnan(values))
    assert np.all(values >= 0.0)
    assert np.all(np.diff(values) >= -1e-9 * values[1:])


# ----------------------------------------------------------------------------------
# poisson_rdp_bound
# ----------------------------------------------------------------------------------

def gaussian_rdp(sigma: float) -> Callable[[np.ndarray], np.ndarray]:
    """The Gaussian mechanism's Renyi DP curve alpha / (2 sigma^2)."""
    return lambda a: np.asarray(a, dtype=float) / (2.0 * sigma**2)


@pytest.mark.parametrize(("q", "sigma"), QS_SIGMAS + [(1e-5, 0.7), (0.9, 3.0)])
def test_poisson_bound_dominates_exact_sgm(q: float, sigma: float) -> None:
    integers = np.arange(2, 33, dtype=float)
    bound = poisson_rdp_bound(gaussian_rdp(sigma), q, integers)
    exact = sgm_rdp(q, sigma, integers)
    # At alpha = 2 the theorem is exact for the Gaussian; both sides are certified
    # upper bounds of the same number there, equal up to their rounding margins.
    assert np.all(bound >= exact * (1.0 - 1e-12))
    # Its moment is at most 3 times the exact one (Zhu and Wang's optimality).
    assert np.all(bound <= exact + math.log(3.0) / (integers - 1.0) + 1e-12)
    fractional = np.array([1.5, 2.5, 7.75, 31.5])
    assert np.all(poisson_rdp_bound(gaussian_rdp(sigma), q, fractional)
                  >= sgm_rdp(q, sigma, fractional))
    if q <= 0.01:
        # Close for small q, until the orders where the high moments take over
        # (there the factor 3 of the theorem shows, up to log(3)/(alpha - 1)).
        low = integers <= 8
        assert np.all(bound[low] <= 2.0 * exact[low])


def test_poisson_bound_dominates_subsampled_laplace() -> None:
    """Soundness for a non-Gaussian base: Laplace(b), exact RDP from Mironov (2017),
    against both directions of the Poisson-subsampled pair by quadrature."""
    b = 1.0

    def laplace_rdp(a: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=float)
        return np.log(a / (2 * a - 1) * np.exp((a - 1) / b)
                      + (a - 1) / (2 * a - 1) * np.exp(-a / b)) / (a - 1)

    def log_lap(mu: float) -> Callable[[float], float]:
        return lambda z: -abs(z - mu) / b - math.log(2 * b)

    for q in (0.05, 0.3):
        def log_mix(z: float, q: float = q) -> float:
            return float(np.logaddexp(math.log1p(-q) + log_lap(0.0)(z),
                                      math.log(q) + log_lap(1.0)(z)))

        for alpha in (2.0, 3.0, 5.5, 8.0):
            points = [-80.0, 0.0, 1.0, 81.0]
            exact = max(quad_renyi(log_mix, log_lap(0.0), alpha, points),
                        quad_renyi(log_lap(0.0), log_mix, alpha, points))
            bound = float(poisson_rdp_bound(laplace_rdp, q, alpha))
            assert bound >= exact * (1.0 - 1e-10)


def test_poisson_bound_edge_cases() -> None:
    # q = 1: the subsampled mechanism is the base mechanism.
    sigma = 1.3
    alphas = np.array([2.0, 3.0, 10.0])
    np.testing.assert_allclose(poisson_rdp_bound(gaussian_rdp(sigma), 1.0, alphas),
                               alphas / (2 * sigma**2), rtol=1e-12)
    # A base curve that only takes scalars.
    scalar_only = poisson_rdp_bound(lambda a: math.log(a), 0.1, [2.0, 5.5])
    assert np.all(np.isfinite(scalar_only)) and np.all(scalar_only > 0.0)
    assert np.all(np.isinf(poisson_rdp_bound(lambda a: np.full_like(a, np.inf), 0.1, [2.0, 3.5])))
    with pytest.raises(ValueError):
        poisson_rdp_bound(lambda a: -np.ones_like(a), 0.1, 3.0)
    with pytest.raises(ValueError):
        poisson_rdp_bound(gaussian_rdp(1.0), 0.0, 3.0)
    with pytest.raises(ValueError):
        poisson_rdp_bound(gaussian_rdp(1.0), 0.1, 1.0)


# ----------------------------------------------------------------------------------
# swor_rdp_bound
# ----------------------------------------------------------------------------------

@pytest.mark.parametrize("sigma", [0.8, 2.0, 5.0])
def test_swor_bound_basic_properties(sigma: float) -> None:
    base = gaussian_rdp(sigma)
    alphas = np.array([1.5, 2.0, 3.0, 4.5, 8.0, 32.0])
    qs = np.concatenate([np.geomspace(1e-6, 0.5, 15), [0.7, 0.9, 1.0]])
    values = np.array([swor_rdp_bound(base, q, alphas) for q in qs])
    assert np.all(values >= 0.0)
    assert np.all(np.diff(values, axis=0) >= 0.0)
    at_one = values[-1]
    assert np.all(at_one >= base(alphas))
    np.testing.assert_allclose(at_one[alphas % 1 == 0], base(alphas[alphas % 1 == 0]), rtol=1e-12)
    small = swor_rdp_bound(base, 1e-3, alphas)
    assert np.all(small < base(alphas))


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.1, 2.0), (0.05, 0.8), (0.3, 3.0)])
def test_swor_bound_dominates_exact_gaussian_pair(q: float, sigma: float) -> None:
    """Soundness: the replace-one subsampled Gaussian pair of Koskela, Jalko and Honkela (2020, 6.2),
    ((1-q)N(0) + qN(1), (1-q)N(0) + qN(-1)), whose base pair N(1) vs N(-1) has
    Renyi DP 2 alpha / sigma^2; its divergence is computed by quadrature."""
    def base(a: np.ndarray) -> np.ndarray:
        return 2.0 * np.asarray(a, dtype=float) / sigma**2

    def log_mix(mu: float) -> Callable[[float], float]:
        def f(z: float) -> float:
            log_n0 = -0.5 * (z / sigma) ** 2
            log_n1 = -0.5 * ((z - mu) / sigma) ** 2
            return (float(np.logaddexp(math.log1p(-q) + log_n0, math.log(q) + log_n1))
                    - math.log(sigma * math.sqrt(2 * math.pi)))
        return f

    for alpha in (1.5, 2.0, 3.0, 4.5, 8.0):
        points = list(np.linspace(-40 * sigma - 2 * alpha, 40 * sigma + 2 * alpha, 11))
        exact = quad_renyi(log_mix(1.0), log_mix(-1.0), alpha, points)
        assert float(swor_rdp_bound(base, q, alpha)) >= exact


def test_swor_bound_uses_pure_dp_epsilon() -> None:
    def flat(a: np.ndarray) -> np.ndarray:
        return np.full_like(np.asarray(a, dtype=float), 0.5)

    loose = swor_rdp_bound(flat, 0.1, [2.0, 6.0])
    tight = swor_rdp_bound(flat, 0.1, [2.0, 6.0], eps_inf=0.5)
    assert np.all(tight <= loose)
    assert np.all(tight > 0.0)
    with pytest.raises(ValueError):
        swor_rdp_bound(flat, 0.1, 2.0, eps_inf=-1.0)


# ----- sampling without replacement of a Gaussian: Wang, Balle and Kasiviswanathan's Theorem 27 ----

def test_swor_gaussian_rdp_is_the_gaussian_specific_bound():
    """The Gaussian-specific bound (Theorem 27) is below the general one (Theorem 9) and
    equals dp_accounting's evaluation of the same theorem (a peer's independent code)."""
    rdp_acc = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")

    orders = np.array([2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0, 100.0])
    for q, sigma in [(0.05, 2.0), (0.01, 1.0), (0.2, 5.0)]:
        m = SampleWithoutReplacement(q)(Gaussian(sigma))
        got = m.rdp(orders)
        peer = np.asarray(rdp_acc._compute_rdp_sample_wor_gaussian(q, sigma, orders))
        general = swor_rdp_bound(lambda a, s=sigma: np.asarray(a) / (2 * s ** 2), q, orders)
        assert np.all(got <= general * (1 + 1e-12))
        np.testing.assert_allclose(got, peer, rtol=1e-9)


def test_swor_gaussian_dpsgd_rdp_epsilon_not_above_dp_accounting():
    # q = 0.05, sigma = 2, k = 2000, delta = 1e-6: Theorem 9 gave 14.962, dp_accounting 14.661.
    rdp_mod = pytest.importorskip("dp_accounting.rdp")
    dp_event = pytest.importorskip("dp_accounting.dp_event")
    acc = rdp_mod.RdpAccountant(neighboring_relation=rdp_mod.rdp_privacy_accountant.NeighborRel.REPLACE_ONE)
    event = dp_event.SampledWithoutReplacementDpEvent(10000, 500, dp_event.GaussianDpEvent(2.0))
    acc.compose(dp_event.SelfComposedDpEvent(event, 2000))
    peer = acc.get_epsilon(1e-6)
    ours = Composition()([SampleWithoutReplacement(0.05)(Gaussian(2.0))], [2000]).epsilon(1e-6, via="rdp")
    # Equal up to the rounding margins autoacct adds (dp_accounting rounds to nearest).
    assert ours <= peer * (1 + 1e-9)
    assert ours == pytest.approx(14.6615, abs=1e-4)
