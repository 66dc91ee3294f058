"""The Chernoff profile (chernoff.ChernoffProfile): an upper bound on delta(eps) from moment
generating functions alone, used to settle the smaller add/remove direction without an FFT.

Truth: k compositions of the Gaussian loss with mu are the Gaussian loss with mu sqrt(k)
(tests/closed_forms.py); randomized response composed k times, by a binomial sum.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed, rr_delta_closed, rr_eps_closed
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.losses import GaussianLoss, randomized_response_loss
from autoacct.pld.chernoff import chernoff_profiles
from autoacct.pld.components import Component
from autoacct.pld.compose import compose
from autoacct.pld.discretize import discretize
from autoacct.pld.grid import index_range


def _profiles(loss, k: int, h: float):
    j_lo, j_hi = index_range(loss, h, 1e-30)
    up, low = discretize(loss, h, j_lo, j_hi)
    return chernoff_profiles([Component(up, low, k)], h)


@settings(max_examples=25, deadline=None)
@given(mu=st.floats(0.05, 5.0), log_k=st.floats(0.0, 5.0), log_delta=st.floats(-14.0, -1.0))
def test_gaussian_never_below_the_truth(mu, log_k, log_delta):
    k = int(10 ** log_k)
    delta = 10 ** log_delta
    upper, lower = _profiles(GaussianLoss(mu), k, min(0.01, mu / 20))
    total = mu * math.sqrt(k)
    assert upper.epsilon(delta) >= gaussian_eps_closed(total, delta)
    eps = np.linspace(0.0, total * total / 2 + 6 * total, 25)
    truth = np.array([gaussian_delta_closed(total, e) for e in eps])
    assert np.all(upper.delta(eps) >= truth)
    assert np.all(lower.delta(eps) == 0.0) and lower.epsilon(delta) == 0.0


@pytest.mark.parametrize("eps0, k", [(0.5, 10), (1.0, 100), (0.1, 1000)])
@pytest.mark.parametrize("delta", [1e-3, 1e-8, 1e-14])
def test_randomized_response_never_below_the_binomial_sum(eps0, k, delta):
    upper, _ = _profiles(randomized_response_loss(eps0), k, eps0)
    assert upper.epsilon(delta) >= rr_eps_closed(eps0, k, delta)
    eps = np.linspace(0.0, k * eps0, 30)
    truth = np.array([rr_delta_closed(eps0, k, e) for e in eps])
    assert np.all(upper.delta(eps) >= truth)


def test_is_within_a_chernoff_gap_of_the_gaussian_truth():
    # For a Gaussian the bound is about mean + sqrt(2 var log(1/delta)) against
    # mean + z sd: within 30% of eps at delta = 1e-6 for mu = 1.
    upper, _ = _profiles(GaussianLoss(0.1), 100, 0.005)
    truth = gaussian_eps_closed(1.0, 1e-6)
    assert upper.epsilon(1e-6) <= 1.3 * truth


@pytest.mark.parametrize("full_sums", [0, 1 << 40])
def test_discrete_profile_inversion_is_safe_against_the_binomial_sum(monkeypatch, full_sums):
    """eps(delta) read off composed randomized-response profiles: the upper profile's answer
    has certified delta <= the target and is at least the exact eps (binomial sum); the
    lower profile's answer is at most it. Both ways the solve reads its suffix sums (the
    block sums, as above _SOLVE_FULL_SUMS points, and the whole arrays, as below)."""
    from autoacct.pld import profiles

    monkeypatch.setattr(profiles, "_SOLVE_FULL_SUMS", full_sums)
    eps0, k = 0.2, 80
    upper, lower = discretize(randomized_response_loss(eps0), eps0, -2, 2)
    up, low = compose([Component(upper, lower, k)], eps0, math.log(1e-18))
    targets = (1e-2, 1e-4, 1e-8)
    # Every eps solved before any delta is read: delta() makes the whole sums, which the
    # solve then reads at any size.
    solved = [(float(up.epsilon(t)), float(low.epsilon(t))) for t in targets]
    for target, (e_up, e_low) in zip(targets, solved):
        exact = rr_eps_closed(eps0, k, target)
        assert float(up.delta(np.array([e_up]))[0]) <= target * (1 + 1e-12)
        assert e_low <= exact * (1 + 1e-12) + 1e-12 <= e_up * (1 + 1e-9) + 2e-12


def test_cancelling_suffix_sums_keep_the_upper_profile_above_the_truth():
    """A profile read where delta is far below the mass beyond eps: A_i - e^eps B_i cancels
    almost all digits of sums built over hundreds of thousands of cells.

    Reproducer: one Poisson-subsampled Gaussian step with q = 3.1e-6, sigma = 150, queried
    at delta 8.28e-9 (which composes grids down to h = 1.3e-12, 262,152 cells) and then at
    eps = 0, gave an upper bound 2e-5 relative below the exact q (2 Phi(1/(2 sigma)) - 1)
    and above its own lower bound.
    """
    from scipy import stats

    from autoacct.zoo import Gaussian, PoissonSubsample

    q, sigma = 3.1218226167228526e-06, 150.33705753293572
    truth = q * (2 * stats.norm.cdf(1 / (2 * sigma)) - 1)
    m = PoissonSubsample(q)(Gaussian(sigma))
    m.epsilon_bounds(8.28421735110954e-09)
    lo, up = m.delta_bounds(0.0)
    assert lo <= truth <= up
    assert up <= truth * (1 + 1e-3)


def test_block_sums_are_within_the_roundoff_bound_of_the_suffix_sums():
    """The solve's suffix sums S_i = sum_{j >= i} p~_j e^{-lam (x_j - x_i)} (and with lam + 1),
    read from block starts and one block, are within the 3 (N - i) roundoffs that the profile
    charges of the exact sums (computed in extended precision by the recursion), at every i
    (i = 0 too, one more step of the recursion from S_1, as a profile read below its window
    takes it)."""
    from autoacct.pld.profiles import DiscreteProfile

    rng = np.random.default_rng(7)
    for n, lam, h in ((5000, 0.8, 7e-4), (1000, 6.0, 2e-3), (300, 0.0, 0.01), (40, 40.0, 0.05)):
        tilted = rng.random(n) * np.exp(-30.0 * rng.random(n))
        p = DiscreteProfile(h=h, start=-7, tilted=tilted, log_k=0.0, lam=lam, c0=0.0, log_entry_err=-math.inf,
                            log_measure_err=-math.inf, upper=True)
        i = np.arange(0, n + 1)
        got = p._sums_at(i)
        for rate, sums in zip((lam, lam + 1.0), got):
            r = np.longdouble(math.exp(-rate * h))
            exact = np.zeros(n + 1, dtype=np.longdouble)
            for j in range(n - 1, -1, -1):
                exact[j] = np.longdouble(tilted[j]) + r * exact[j + 1]
            ref = exact[i]
            bound = 3.0 * (n - i + 1) * np.finfo(float).eps / 2 * ref
            assert np.all(np.abs(sums - ref) <= bound)


def test_chernoff_profile_is_near_the_best_exponent():
    """The Chernoff profile takes the best of its exponents (16 per decade): for 100 runs of
    GaussianLoss(0.1) (mu = 1 in all) it is within 0.5% of the bound at the best exponent of
    all, min over theta of (log c(theta) + K(theta) - log delta) / theta with the Gaussian's
    K(theta) = theta (theta + 1) mu^2 / 2, and not below the truth."""
    from scipy import optimize

    upper, _ = _profiles(GaussianLoss(0.1), 100, 0.005)
    log_d = math.log(1e-6)

    def bound(theta: float) -> float:
        log_c = theta * math.log(theta / (1.0 + theta)) - math.log1p(theta)
        return (log_c + theta * (theta + 1.0) / 2.0 - log_d) / theta

    best = optimize.minimize_scalar(bound, bounds=(0.01, 100.0), method="bounded").fun
    eps = upper.epsilon(1e-6)
    assert gaussian_eps_closed(1.0, 1e-6) <= eps <= best * 1.005


@pytest.mark.parametrize("full_sums", [0, 1 << 40])
def test_monotone_deltas_made_in_chunks_are_those_of_the_whole_arrays(monkeypatch, full_sums):
    """:attr:`DiscreteProfile.grid_deltas`, made in chunks (with the suffix-sum recursion
    carried between them, as above _FULL_SUMS points, or read from the whole sums, as below)
    equals bit for bit the recursion over whole arrays followed by the running extremum
    (upper: minimum from the left; lower: maximum from the right), on profiles of several
    chunks and a ragged last one."""
    from autoacct.pld import profiles
    from autoacct.pld.profiles import DiscreteProfile

    monkeypatch.setattr(profiles, "_FULL_SUMS", full_sums)
    rng = np.random.default_rng(11)
    n = 3 * profiles._CHUNK + 17
    for upper in (True, False):
        tilted = rng.random(n) * np.exp(-40.0 * rng.random(n))
        tilted[rng.random(n) < 0.01] = -1e-30  # negative computed masses count as 0
        p = DiscreteProfile(h=1e-4, start=-n // 3, tilted=tilted, log_k=-2.0, lam=1.5, c0=1e-9,
                            log_entry_err=-40.0, log_measure_err=-41.0, upper=upper)
        full = p._sums
        raw = p._raw(np.arange(1, n + 1), p.x, p.x, (full[0][1:], full[1][1:]))
        want = np.minimum.accumulate(raw) if upper else np.maximum.accumulate(raw[::-1])[::-1]
        assert np.array_equal(p.grid_deltas, want)


@pytest.mark.parametrize("mu, k", [(0.3, 20), (1.0, 5)])
def test_beyond_the_window_the_upper_profile_is_a_chernoff_bound(mu, k):
    # k Gaussian steps composed untilted on a window short enough to leave a tail mass of
    # about 1e-4 above it: read beyond it, the upper profile is the Chernoff bound on the
    # mass above eps (about e^{-(eps - m)^2 / (2 v)} for the composed N(m, v), up to the
    # exponent grid), far below the mass above the window's top that it said before, and
    # still above the truth.
    loss = GaussianLoss(mu)
    h = 1e-3 * mu
    j_lo, j_hi = index_range(loss, h, 1e-16)
    up_pld, low_pld = discretize(loss, h, j_lo, j_hi)
    up, _ = compose([Component(up_pld, low_pld, k)], h, math.log(1e-4), 0.0)
    assert up.above is not None
    top = (up.start + len(up.tilted)) * h
    mean, sd = k * mu * mu / 2, mu * math.sqrt(k)
    eps = top + sd * np.array([0.0, 0.5, 1.0, 2.0])
    values = up.delta(eps)
    truth = np.array([gaussian_delta_closed(mu * math.sqrt(k), e) for e in eps])
    assert np.all(values >= truth)
    assert np.all(values[1:] <= np.exp(-((eps[1:] - mean) ** 2) / (2 * sd * sd)) * 10)
    assert values[-1] < 1e-3 * up.c0


@pytest.mark.parametrize("full_sums", [0, 1 << 40])
def test_pointwise_bounds_lie_beyond_the_monotone_ones_and_the_truth(monkeypatch, full_sums):
    """The pointwise bound a split law's solve reads (DiscreteProfile.pointwise) is on the
    profile's side of the truth, no tighter than the monotone delta (it drops the running
    extremum; up to rounding where it reads block sums), and equal to it where delta is well
    above the rounding allowances: the Gaussian with mu
    composed 50 times is the one with mu sqrt(50) (closed form). Both ways of reading the
    suffix sums: block sums (as above _SOLVE_FULL_SUMS points) and the whole arrays."""
    from autoacct.pld import profiles

    monkeypatch.setattr(profiles, "_SOLVE_FULL_SUMS", full_sums)
    mu, k, h = 0.2, 50, 2e-3
    loss = GaussianLoss(mu)
    j_lo, j_hi = index_range(loss, h, 1e-30)
    upper, lower = discretize(loss, h, j_lo, j_hi)
    up, low = compose([Component(upper, lower, k)], h, math.log(1e-18))
    total = mu * math.sqrt(k)
    # Inside and beyond the window, off and on the lattice points.
    eps = np.concatenate((np.linspace(-0.5, 9.0, 397), up.x[::97][:40]))
    truth = np.array([gaussian_delta_closed(total, e) if e >= 0 else math.nan for e in eps])
    p_up, p_low = up.pointwise(eps), low.pointwise(eps)
    m_up, m_low = up.delta(eps), low.delta(eps)
    # (Block sums and whole sums differ by rounding, within the bound both carry.)
    assert np.all(p_up >= m_up * (1 - 1e-12)) and np.all(p_low <= m_low * (1 + 1e-12))
    pos = eps >= 0
    assert np.all(p_up[pos] >= truth[pos]) and np.all(p_low[pos] <= truth[pos])
    # Where delta is well above the rounding allowances the two reads agree to rounding.
    big = m_up > 1e-12
    np.testing.assert_allclose(p_up[big], m_up[big], rtol=1e-9)
    big = m_low > 1e-12
    np.testing.assert_allclose(p_low[big], m_low[big], rtol=1e-9)


def _top_atom_delta(eps0: float, k: int, eps: float) -> float:
    """delta(eps) of k runs of randomized response with log-odds eps0 (PureDP(eps0)'s pair)
    for eps between the two largest losses (k - 2) eps0 and k eps0, in mpmath from the exact
    doubles: only the top atom, of P-mass p^k (p = 1 / (1 + e^{-eps0})), lies above eps."""
    import mpmath

    with mpmath.workdps(60):
        e0, e = mpmath.mpf(eps0), mpmath.mpf(eps)
        p = 1 / (1 + mpmath.exp(-e0))
        return p ** k * -mpmath.expm1(e - k * e0)


def _assert_brackets_top_atom(eps0: float, k: int, eps: float) -> None:
    from autoacct import routes
    from autoacct.zoo import Composition, PureDP

    m = Composition()([PureDP(eps0)], [k])
    exact = _top_atom_delta(eps0, k, eps)
    for lo, up in (routes.delta_bounds(m, eps, "pld", 1e-3), m.delta_bounds([eps])):
        lo, up = float(np.ravel(lo)[0]), float(np.ravel(up)[0])
        assert lo <= exact <= up, (eps0, k, eps, lo, float(exact), up)


@pytest.mark.parametrize(("eps0", "k", "eps"), [
    (386.2675232045013, 200, 77253.50464089925),  # the upper was 1.0067e-09 < 1.0082e-09
    (600.5127598360418, 37, 22218.97211393255),  # the lower was 9.9995e-10 > 9.9908e-10
])
def test_the_composed_top_atom_is_bracketed_against_its_closed_form(eps0, k, eps):
    # The lattice point k eps0 = (start + i) h is a float product a few 1e-12 off the true
    # top; 1e-9 below it that moved delta by 1e-3 relatively (DiscreteProfile.slack).
    _assert_brackets_top_atom(eps0, k, eps)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(eps0=st.floats(1e-3, 700.0), k=st.integers(2, 500),
       below=st.one_of(st.integers(1, 8), st.floats(-12.0, -6.0)))
def test_eps_near_the_composed_top_atom_is_bracketed(eps0, k, below):
    # eps a few ulps, or 1e-12 to 1e-6 relatively, below the composed top k eps0.
    top = k * eps0
    if isinstance(below, int):
        eps = top
        for _ in range(below):
            eps = math.nextafter(eps, 0.0)
    else:
        eps = top * (1.0 - 10.0 ** below)
    if not (k - 2) * eps0 < eps < top or _top_atom_delta(eps0, k, eps) <= 0:
        return
    _assert_brackets_top_atom(eps0, k, eps)


def test_chernoff_log_terms_are_never_below_log_c_plus_k():
    # log c(theta) = theta log(theta / (1 + theta)) - log1p(theta) was taken with the quotient
    # rounded, 2 theta roundoffs off: 3.9e-9 below the exact value at theta = 1e8 (exponents
    # run to about 1 / h). Now -theta log1p(1 / theta), and rounded up, against 50-digit mpmath.
    import mpmath

    from autoacct.pld.chernoff import ChernoffProfile
    from autoacct.pld.cumulants import Components, Cumulant

    grid = np.concatenate(([0.0], np.logspace(-3.0, 9.0, 97)))
    k_values = np.where(grid > 0, 7.25 * grid, 0.0)
    up, low = discretize(randomized_response_loss(1.0), 1.0, -2, 2)
    k = Cumulant(Components([Component(up, low, 1)]), "upper", 1.0, values=k_values, grid=grid)
    terms = ChernoffProfile(k, 0.0, True)._log_terms(np.arange(1, grid.size))
    with mpmath.workdps(50):
        for t, kv, got in zip(grid[1:], k_values[1:], terms):
            th = mpmath.mpf(float(t))
            exact = th * mpmath.log(th / (1 + th)) - mpmath.log1p(th) + mpmath.mpf(float(kv))
            assert mpmath.mpf(float(got)) >= exact, (t, float(got - exact))


@pytest.mark.parametrize("p, k", [(4.6e-07, 10), (0.00119, 10), (6.07e-08, 1000), (0.196, 3)])
def test_chernoff_profile_mass_at_infinity_is_rounded_up(p, k):
    # -expm1(k log1p(-p)) came out up to 1.7 ulps below 1 - (1 - p)^k (60-digit mpmath):
    # the profile then answered a finite eps for a delta the mass at +inf alone exceeds.
    import mpmath

    from autoacct.losses.binary import LeakyRandomizedResponseLoss

    upper, _ = _profiles(LeakyRandomizedResponseLoss(1.0, p), k, 1.0)
    with mpmath.workdps(60):
        exact = 1 - (1 - mpmath.mpf(p)) ** k
    assert mpmath.mpf(upper.inf_mass) >= exact
    assert upper.epsilon(math.nextafter(float(exact), 0.0)) == math.inf


def test_the_silent_lower_profile_says_what_chernoffs_lower_says_without_a_table(monkeypatch):
    # A composition of the upper PLDs alone takes a lower profile that says nothing: the same
    # answers as chernoff_profiles' lower one, made without any moment generating function.
    from autoacct.pld import cumulants, mgf
    from autoacct.pld.chernoff import silent_lower

    h = 0.01
    j_lo, j_hi = index_range(GaussianLoss(1.0), h, 1e-14)
    up, low = discretize(GaussianLoss(1.0), h, j_lo, j_hi)
    comps = [Component(up, low, 40)]
    _, reference = chernoff_profiles(comps, h)

    def forbidden(*args, **kwargs):
        raise AssertionError("a table was made")
    monkeypatch.setattr(mgf, "log_mgfs", forbidden)
    monkeypatch.setattr(cumulants, "log_mgf_up", forbidden)
    silent = silent_lower(comps)
    eps = np.array([0.0, 0.5, 3.0, 40.0])
    assert not silent.upper and silent.inf_mass == reference.inf_mass
    assert np.array_equal(silent.delta(eps), reference.delta(eps)) and not np.any(silent.delta(eps))
    for delta in (1e-12, 1e-5, 0.3):
        assert silent.epsilon(delta) == reference.epsilon(delta) == 0.0
    assert np.array_equal(silent.floor(eps), reference.floor(eps))


@pytest.mark.parametrize("h, n, lam", [(1e-6, 2000, 0.0), (1e-4, 3000, 0.0), (2e-4, 4000, 50.0),
                                       (1e-3, 2000, 3.0), (0.05, 400, 0.0)])
def test_the_error_term_weighs_each_mass_as_delta_does(h, n, lam):
    """Every tilted mass off by its whole error E1 (upper: the computed ones short by it; lower:
    over by it) and a measure of tilted mass E2 where it moves delta most (at the lattice point
    nearest eps + log(1 + 1 / lam), or at the window's top without a tilt): the profiles still
    bound the exact delta from either side. The masses' part of the error term is within 1.5
    times their worst case. Windows narrow in loss (2e-3 and 0.3 wide, where delta weighs a mass
    at x by at most x - eps), steep and mild tilts, and a wide window, where each mass weighs
    about 1."""
    from autoacct.pld.profiles import DiscreteProfile

    start = -n // 4
    x = (start + np.arange(n)) * h
    p = np.exp(-(((np.arange(n) - n / 3) / (n / 8)) ** 2)) + 1e-5
    p /= p.sum()
    log_k = float(np.log(np.sum(p * np.exp(lam * (x - x[0]))))) + lam * x[0]
    exact = p * np.exp(lam * x - log_k)  # tilted: p = exact e^{log_k - lam x}
    e1, e2 = 1e-10, 1e-9
    for at in (0.2, 0.5, 0.8):
        eps = x[int(at * n)] + 0.37 * h
        u = x - eps
        j = int(np.argmin(np.abs(x - eps - (math.log1p(1.0 / lam) if lam > 0 else math.inf))))
        hockey = np.where(u > 0, -np.expm1(-np.maximum(u, 0.0)), 0.0)

        def delta_of(tilted: np.ndarray, hockey: np.ndarray = hockey) -> float:
            return math.fsum(tilted * np.exp(log_k - lam * x) * hockey)

        with_measure = exact.copy()
        with_measure[j] += e2
        kw = dict(h=h, start=start, log_k=log_k, lam=lam, c0=0.0, log_entry_err=log_k + math.log(e1))
        upper = DiscreteProfile(tilted=exact - e1, upper=True, log_measure_err=log_k + math.log(e2), **kw)
        lower = DiscreteProfile(tilted=with_measure + e1, upper=False, log_measure_err=log_k + math.log(e2), **kw)
        assert upper.delta(np.array([eps]))[0] >= delta_of(with_measure)
        assert lower.delta(np.array([eps]))[0] <= delta_of(exact)
        masses_only = DiscreteProfile(tilted=exact, upper=True, log_measure_err=-math.inf, **kw)
        worst = delta_of(np.full(n, e1))
        assert worst <= masses_only.error_at(eps) <= 1.5 * worst
