"""The summed Renyi DP of many subsampled Gaussians at once (autoacct.subsampling.gaussian_rdp_family),
against the binomial sum A_n = sum_k C(n, k) (1-q)^(n-k) q^k e^{k(k-1)/(2 sigma^2)} in mpmath at 60
digits (Mironov, Talwar and Zhang 2019, Section 3.2), and its use by compositions."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoacct import routes
from autoacct.subsampling.gaussian_rdp import sgm_rdp
from autoacct.subsampling.gaussian_rdp_family import family_log_moment
from autoacct.zoo import Composition, Gaussian, Laplace, PoissonSubsample


def mp_log_a(q: float, sigma: float, n: int) -> mpmath.mpf:
    """log A_n by the binomial sum, exactly in 60-digit arithmetic."""
    with mpmath.workdps(60):
        q_, s = mpmath.mpf(q), mpmath.mpf(sigma)
        total = mpmath.fsum(mpmath.binomial(n, k) * (1 - q_) ** (n - k) * q_ ** k
                            * mpmath.exp(k * (k - 1) / (2 * s * s)) for k in range(n + 1))
        return mpmath.log(total)


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(lq=st.floats(-8.0, -0.01), ls=st.floats(-0.7, 1.7), n=st.integers(2, 200))
def test_one_step_brackets_the_binomial_sum(lq: float, ls: float, n: int) -> None:
    q, sigma = 10.0 ** lq, 10.0 ** ls
    got = family_log_moment(np.array([[q, sigma]]), np.array([1.0]), n)
    truth = mp_log_a(q, sigma, n)
    assert got >= truth
    assert got <= truth * (1 + 1e-9) + 1e-300


def test_rows_and_counts_sum() -> None:
    rows = np.array([[0.01, 1.1], [0.003, 0.8], [0.02, 2.0]])
    counts = np.array([3.0, 1.0, 1000.0])
    n = 7
    got = family_log_moment(rows, counts, n)
    truth = mpmath.fsum(c * mp_log_a(q, s, n) for (q, s), c in zip(rows, counts))
    assert truth <= got <= truth * (1 + 1e-9)


def test_blocks_of_rows_at_a_large_order() -> None:
    # 3000 rows at order 600 take several blocks of the computation: the same sum as row by row.
    rows = np.column_stack([np.full(3000, 0.01), np.linspace(0.8, 2.0, 3000)])
    whole = family_log_moment(rows, np.ones(3000), 600)
    parts = sum(family_log_moment(rows[i:i + 1000], np.ones(1000), 600) for i in range(0, 3000, 1000))
    assert whole == pytest.approx(parts, rel=1e-12)
    assert whole >= float(mp_log_a(0.01, 0.8, 600))


def test_overflow_is_infinite_and_tiny_rates_tiny() -> None:
    assert family_log_moment(np.array([[0.5, 1e-170]]), np.array([1.0]), 40) == math.inf
    tiny = family_log_moment(np.array([[1e-12, 1.0]]), np.array([1.0]), 3)
    truth = float(mp_log_a(1e-12, 1.0, 3))
    assert truth <= tiny <= truth * (1 + 1e-9)


def _schedule(n: int) -> list[tuple[float, float]]:
    return [(0.005 + 0.015 * ((i * 7) % n) / (n - 1), 0.8 + 1.2 * ((i * 11) % n) / (n - 1)) for i in range(n)]


def test_composition_sums_the_family_at_integer_orders_and_bounds_fractional_ones() -> None:
    steps = _schedule(20)
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps], [2] * 20)
    curve = m.rdp_curve()
    assert curve is not None
    orders = np.array([2.0, 3.0, 10.0, 32.0])
    got = curve(orders)
    exact = sum(2 * sgm_rdp(q, s, orders) for q, s in steps)
    assert np.all(got[0] == got[1])
    assert np.all(got[0] >= exact * (1 - 1e-12)) and np.all(got[0] <= exact * (1 + 1e-8))
    # At a fractional order the interpolated bound is above the members' own fractional values
    # (which are certified upper bounds themselves, within 1e-10 of the truth).
    frac = np.array([1.5, 4.5, 12.25])
    assert np.all(curve(frac)[0] >= sum(2 * sgm_rdp(q, s, frac) for q, s in steps) * (1 - 1e-9))


def test_families_below_the_minimum_and_other_children_are_summed_one_by_one() -> None:
    steps = _schedule(20)
    few = [PoissonSubsample(q)(Gaussian(s)) for q, s in steps[:5]]
    m = Composition()([*few, Laplace(2.0)], [1] * 5 + [3])
    curve = m.rdp_curve()
    assert curve is not None
    frac = np.array([2.5])
    lap = Laplace(2.0).rdp_curve()
    assert lap is not None
    expected = sum(float(sgm_rdp(q, s, frac)[0]) for q, s in steps[:5]) + 3 * float(lap(frac)[0][0])
    assert float(curve(frac)[0][0]) == pytest.approx(expected, rel=1e-12)


def test_many_distinct_steps_via_rdp_are_between_the_pld_and_the_members_integer_orders() -> None:
    # 100 distinct steps: the order search reads the family's integer orders (before, each
    # step's series at every polished fractional order). The answer is an upper bound, so at
    # least the certified PLD bracket's lower end; and at most the conversion (Balle et al.
    # 2020, Theorem 21) of the members' own curves at the best integer order.
    steps = _schedule(100)
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    delta = 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, rdp_up = routes.epsilon_bounds(m, delta, "rdp", 1e-3)
        pld_lo, _ = routes.epsilon_bounds(m, delta, "pld", 1e-3)
    a = np.arange(2.0, 65.0)
    curve = sum(sgm_rdp(q, s, a) for q, s in steps)
    converted = curve + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)
    assert pld_lo <= rdp_up <= float(np.min(converted)) * (1 + 1e-8)


def mp_kl_both(q: float, sigma: float) -> tuple[mpmath.mpf, mpmath.mpf]:
    """KL(P || Q) and KL(Q || P) for P = (1-q) N(0, sigma^2) + q N(1, sigma^2), Q = N(0, sigma^2),
    by quadrature in 20-digit arithmetic; the log-ratio log(1 + q (e^l - 1)), l = (2x - 1)/(2 sigma^2),
    is formed without cancellation."""
    with mpmath.workdps(20):
        q_, s = mpmath.mpf(q), mpmath.mpf(sigma)

        def ratio(x: mpmath.mpf) -> mpmath.mpf:
            return mpmath.log1p(q_ * mpmath.expm1((2 * x - 1) / (2 * s * s)))

        def forward(x: mpmath.mpf) -> mpmath.mpf:
            return ((1 - q_) * mpmath.npdf(x, 0, s) + q_ * mpmath.npdf(x, 1, s)) * ratio(x)

        def reverse(x: mpmath.mpf) -> mpmath.mpf:
            return -mpmath.npdf(x, 0, s) * ratio(x)
        cuts = [-mpmath.inf, -12 * s, -s, 0, 0.5, 1, 1 + s, 1 + 12 * s, mpmath.inf]
        return mpmath.quad(forward, cuts), mpmath.quad(reverse, cuts)


@settings(max_examples=25, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(lq=st.floats(-6.0, -0.05), ls=st.floats(-0.7, 1.5))
def test_order_one_bounds_both_kl_divergences(lq: float, ls: float) -> None:
    # The family's value at order 1 is a bound on the steps' KL divergences (both orders of the
    # pair), within the 4 q (e^{3/sigma^2} - 3 e^{1/sigma^2} + 2) / (e^{1/sigma^2} - 1) relative
    # slack of its second-order term where that term is the least of its bounds.
    q, sigma = 10.0 ** lq, 10.0 ** ls
    got = family_log_moment(np.array([[q, sigma]]), np.array([3.0]), 1)
    forward, reverse = mp_kl_both(q, sigma)
    assert got >= 3 * forward >= 3 * reverse
    if q <= 0.02 and sigma >= 0.8:
        assert got <= 3 * forward * 1.1


def test_composition_of_a_family_has_a_kl_divergence() -> None:
    # rdp(1.0) of 16 or more distinct subsampled Gaussians (a family) divided by zero in the
    # interpolation of the log-moments at order 1, and RepeatAndSelect of such a composition
    # failed at construction; 15 are summed member by member and answered.
    from autoacct.zoo import RepeatAndSelect

    rates = [0.01 * (1 + i / 20) for i in range(16)]
    m = Composition()([PoissonSubsample(q)(Gaussian(1.0)) for q in rates], [10] * 16)
    truth = mpmath.fsum(10 * mp_kl_both(q, 1.0)[0] for q in rates)
    got = m.rdp(1.0)
    assert truth <= got <= truth * 1.05
    assert got <= m.rdp(1.5)
    assert math.isfinite(RepeatAndSelect(m, 10.0, 1.0).rdp(2.0))


def test_a_sigma_whose_square_overflows_keeps_its_value() -> None:
    # sigma * sigma overflowed to inf past sigma = 1.3e154, so the family's log-moment was 5e-324
    # where the binomial sum is about q^2 n (n - 1) / (2 sigma^2) (2.5e-309 at n = 2).
    sigma = 1.4e155
    for n in (2, 5):
        got = family_log_moment(np.array([[0.5, sigma]]), np.array([4.0]), n)
        with mpmath.workdps(60):
            q_, s = mpmath.mpf(0.5), mpmath.mpf(sigma)
            # (as log1p of A_n - 1, whose terms e^{k(k-1)/(2 sigma^2)} - 1 are tiny)
            truth = 4 * mpmath.log1p(mpmath.fsum(mpmath.binomial(n, k) * (1 - q_) ** (n - k) * q_ ** k
                                                 * mpmath.expm1(k * (k - 1) / (2 * s * s)) for k in range(2, n + 1)))
        assert truth <= got <= truth * (1 + 1e-9) + 1e-323
