"""The reversed direction's Chernoff bound from the forward upper PLDs (autoacct/pld/reversal.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from autoacct.losses import GaussianLoss
from autoacct.pld import accountant as acc_module
from autoacct.pld.accountant import FFTAccountant
from autoacct.pld.components import Component
from autoacct.pld.discretize import discretize_upper
from autoacct.pld.grid import index_range
from autoacct.pld.reversal import inverse_tradeoff, reversed_chernoff
from autoacct.subsampling.poisson import PoissonAddLoss, PoissonRemoveLoss


def _never():
    raise AssertionError("the reversed bound reads upper PLDs only")


def _pair(q, sigma):
    base = GaussianLoss(1.0 / sigma)
    return PoissonRemoveLoss(base, q), PoissonAddLoss(base, q)


def _forward(fwd, h, count=1, eta=1e-16):
    j_lo, j_hi = index_range(fwd, h, eta)
    return Component(discretize_upper(fwd, h, j_lo, j_hi), _never, count)


def _add_mgf(q, sigma, theta):
    """E_Q[e^{theta L'}] of the addition pair (N(0,1), (1-q) N(0,1) + q N(mu,1)) by quadrature:
    L' = -log(1 - q + q e^{mu y - mu^2/2}) at y ~ N(0, 1)."""
    mu = 1.0 / sigma

    def f(y):
        return stats.norm.pdf(y) * math.exp(-theta * math.log1p(q * math.expm1(mu * y - mu * mu / 2)))
    value, err = integrate.quad(f, -40.0, 40.0, points=[0.0, mu / 2, mu], epsabs=0.0, epsrel=1e-13, limit=400)
    return value, err


def test_reverses_names_the_reversed_pair_only():
    fwd, rev = _pair(0.01, 1.0)
    assert rev.reverses(fwd) and fwd.reverses(rev)
    assert not fwd.reverses(fwd) and not rev.reverses(rev)
    assert not _pair(0.02, 1.0)[1].reverses(fwd)
    assert not _pair(0.01, 1.1)[1].reverses(fwd)
    assert GaussianLoss(0.5).reverses(GaussianLoss(0.5)) and not GaussianLoss(0.5).reverses(GaussianLoss(0.6))


@pytest.mark.parametrize("q, sigma, h", [(0.01, 1.0, 1e-3), (0.2, 0.7, 5e-3), (1e-4, 2.0, 1e-4), (0.5, 3.0, 0.05)])
def test_cumulant_bounds_the_addition_law_from_above_and_tightly(q, sigma, h):
    """Each tabulated log E_Q[e^{theta L'}] is at least the quadrature's value (less its stated
    error) and, for theta up to 30, within 1e-3 (h^2 scale) above it: the forward PLD's
    connect-the-dots split bounds the reversed law's moment generating function (convex
    order in e^{-L})."""
    fwd, rev = _pair(q, sigma)
    up, _ = reversed_chernoff([_forward(fwd, h)], [rev], [fwd])
    theta = up.k.grid[up.k.zero + 1:]
    got = up.k(np.arange(up.k.zero + 1, up.k.grid.size))
    for t, k in zip(theta, got, strict=True):
        if t > 30.0:
            continue
        value, err = _add_mgf(q, sigma, t)
        assert k >= math.log(value - err) - 1e-12
        assert k <= math.log(value + err) + max(1e-3, 20 * (t * h) ** 2)


@pytest.mark.parametrize("q, sigma", [(0.01, 1.0), (0.2, 0.7), (0.05, 3.0)])
def test_one_step_bound_is_above_the_closed_form_profile(q, sigma):
    """For one step the reversed direction's delta(eps) is the addition law's closed-form
    profile; the Chernoff profile from the forward PLD is above it at every eps."""
    fwd, rev = _pair(q, sigma)
    up, low = reversed_chernoff([_forward(fwd, 2e-3)], [rev], [fwd])
    eps = np.linspace(0.0, 2.0, 81)
    exact = np.asarray(rev.profile(eps), dtype=float)
    assert np.all(up.delta(eps) >= exact * (1 + 1e-12))
    assert np.all(low.delta(eps) == 0.0) and low.epsilon(1e-5) == 0.0


def test_composed_bound_is_above_the_addition_direction_lower_bound():
    """Composed 300 times (two distinct steps, 150 each), the reversed bound's eps(delta) is at
    least the addition direction's certified lower eps from its own fine composition."""
    steps = [_pair(0.01, 1.0), _pair(0.02, 1.5)]
    h = 2e-3
    comps = [_forward(fwd, h, 150) for fwd, _ in steps]
    up, _ = reversed_chernoff(comps, [rev for _, rev in steps], [fwd for fwd, _ in steps])
    acc = FFTAccountant([(rev, rev, 150) for _, rev in steps])
    for delta in (1e-5, 1e-9):
        lower, upper = acc.epsilon(delta, 1.0)
        assert up.epsilon(delta) >= upper >= lower
        assert up.epsilon(delta) <= 1.5 * upper


def test_not_made_for_laws_that_do_not_reverse():
    fwd, rev = _pair(0.01, 1.0)
    other = _pair(0.02, 1.0)[1]
    assert reversed_chernoff([_forward(fwd, 1e-2)], [other], [fwd]) is None
    assert reversed_chernoff([], [], []) is None


def test_hetero_second_direction_is_settled_without_discretising_its_laws(monkeypatch):
    """100 distinct subsampled Gaussian steps, ordered by the normal approximation (as where
    the laws span more than _WEIGH_CELLS cells, e.g. 1,000 such steps): the addition
    direction is settled by the bound from the removal direction's PLDs, so none of its laws
    is discretised, and the bracket is within tol."""
    from autoacct import routes
    from autoacct.zoo import Composition, Gaussian, PoissonSubsample

    made = []
    real = acc_module.discretize_upper

    def spy(loss, h, j_lo, j_hi):
        made.append(type(loss).__name__)
        return real(loss, h, j_lo, j_hi)
    monkeypatch.setattr(acc_module, "discretize_upper", spy)
    monkeypatch.setattr(acc_module, "_WEIGH_CELLS", 0)
    steps = [(0.005 + 0.015 * i / 99, 0.8 + 1.2 * ((i * 37) % 100) / 99) for i in range(100)]
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    lower, upper = routes.epsilon_bounds(m, 1e-5, "pld", 1e-3)
    assert "PoissonAddLoss" not in made
    assert upper - lower <= 1e-3 * upper


def test_one_law_second_direction_is_weighed_and_settled_from_the_first(monkeypatch):
    """Sweep case 13 of benchmarks/sweep.py (q = 5.03e-4, sigma = 1.78, k = 262, delta =
    1.46e-10): the directions are weighed by the removal law's Chernoff bound on its coarse
    lattice and the addition law's from the same PLD, and the addition direction is then
    settled by the bound from the removal direction's fine PLD: its law is never
    discretised, and the bracket is within tol."""
    import autoacct
    from autoacct.pld.lawcache import LawCache

    made = []
    real = LawCache.law

    def spy(self, loss, h, j_lo, j_hi, halves, make):
        made.append(type(loss).__name__)
        return real(self, loss, h, j_lo, j_hi, halves, make)
    monkeypatch.setattr(LawCache, "law", spy)
    lower, upper = autoacct.dpsgd(0.0005029951714075004, 1.7805484294961345, 262).epsilon_bounds(
        1.4649856434989247e-10)
    assert made and "PoissonAddLoss" not in made
    assert upper - lower <= 1e-3 * upper


def test_finer_reversed_bound_is_not_tried_where_the_coarse_one_is_far(monkeypatch):
    """Sweep case 3 (q = 0.344, sigma = 28.3, k = 4.35e6, delta = 1.69e-12): the bound from the
    removal direction's coarse PLDs, 508.27, lies 2% above its lower bound 498.13, far more
    than a finer lattice moves it (at most 0.54% on the sweep), so it is made once; the
    addition direction is then settled by its own passes, within tol."""
    import autoacct
    from autoacct.pld import reversal

    calls = []
    real = reversal.reversed_chernoff

    def spy(*args):
        calls.append(args[0][0].upper.h)
        return real(*args)
    monkeypatch.setattr(acc_module, "reversed_chernoff", spy)
    lower, upper = autoacct.dpsgd(0.34430645530137216, 28.278760874113583, 4347566).epsilon_bounds(
        1.6929155429661214e-12)
    assert len(calls) == 1
    assert upper - lower <= 1e-3 * upper


def test_outer_terms_never_make_nan():
    """A grid that starts above the law's smallest loss, with no mass at its first point, and a
    large q (the outer term's exponential e^{(1 + theta) M'} overflows at theta = 1e4): the
    bound stays a number in [0, 1] at every eps, its eps finite."""
    from dataclasses import replace

    fwd, rev = _pair(0.5, 1.0)
    h = 0.05
    j_lo, j_hi = int(-0.5 / h), int(8.0 / h)
    up = discretize_upper(fwd, h, j_lo, j_hi)
    cut = replace(up, masses=np.concatenate(([0.0], up.masses[1:])))
    for pld in (up, cut):
        upper, _ = reversed_chernoff([Component(pld, _never, 20)], [rev], [fwd])
        values = upper.delta(np.linspace(0.0, 10.0, 51))
        assert np.all(np.isfinite(values)) and np.all((values >= 0.0) & (values <= 1.0))
        assert math.isfinite(upper.epsilon(1e-6))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(sigma=st.floats(0.4, 8.0), log_q=st.floats(-5.0, -0.3), log_h=st.floats(-3.5, -1.0),
       count=st.integers(1, 3))
def test_bound_is_never_nan_monotone_and_above_the_one_step_truth(sigma, log_q, log_h, count):
    """Over sigma, q and the lattice: the reversed bound's delta(eps) is a number in [0, 1],
    non-increasing in eps, and, for one step, at least the addition law's closed-form
    profile; for a few steps at least the profile of one (the composition's delta at eps is
    at least that of any one of its steps: the others can be post-processed away)."""
    fwd, rev = _pair(10.0 ** log_q, sigma)
    up, _ = reversed_chernoff([_forward(fwd, 10.0 ** log_h, count)], [rev], [fwd])
    eps = np.linspace(0.0, 4.0, 41)
    values = up.delta(eps)
    assert np.all(np.isfinite(values)) and np.all((values >= 0.0) & (values <= 1.0))
    assert np.all(np.diff(values) <= 0.0)
    assert np.all(values >= np.asarray(rev.profile(eps), dtype=float) * (1 - 1e-12))


def _gdp(mu: float):
    # The mu-GDP curve G_mu(x) = Phi(Phi^-1(1 - x) - mu), its own inverse (Dong, Roth and Su 2022).
    return lambda x: stats.norm.cdf(stats.norm.isf(np.asarray(x, dtype=float)) - mu)


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
def test_inverse_tradeoff_of_a_gdp_curve_is_the_curve_itself_from_below(mu):
    # G_mu is symmetric: its inverse is itself. From a lower bound a hair under it, the inverse
    # found lies below the truth and within the halving's reach of it.
    a = np.concatenate(([0.0, 1e-12, 1e-6], np.linspace(0.01, 0.99, 50), [1.0]))
    g = _gdp(mu)
    got = inverse_tradeoff(lambda x: g(x) - 1e-13, a)
    assert np.all(got <= g(a))
    # Where the bound exceeds a, G_mu exceeds a + 1e-13: tight up to that, and the halving.
    assert np.all(got >= g(np.minimum(a + 1e-13, 1.0)) - 1e-12)


def test_inverse_tradeoff_of_an_asymmetric_curve_from_a_non_monotone_bound():
    # f(x) = (1 - x)^3 has inverse 1 - a^(1/3); the bound f - bump wiggles (not monotone) but
    # stays under f, and every point it certifies still bounds the inverse from below.
    a = np.linspace(0.0, 1.0, 101)
    f = lambda x: (1.0 - x) ** 3  # noqa: E731
    bump = lambda x: 1e-3 * (1.0 + np.sin(400.0 * x))  # noqa: E731
    got = inverse_tradeoff(lambda x: np.maximum(f(x) - bump(x), 0.0), a)
    assert np.all(got <= 1.0 - np.cbrt(a) + 1e-15)
    # The bound exceeds a wherever f exceeds a + 2e-3, the bump's height.
    assert np.all(got >= 1.0 - np.cbrt(np.minimum(a + 2e-3, 1.0)) - 1e-12)
    # A bound that says nothing (0 everywhere) gives 0, the trivial lower bound.
    assert np.all(inverse_tradeoff(lambda x: np.zeros(np.shape(x)), a) == 0.0)


def test_a_tradeoff_curve_the_budget_stopped_takes_the_composed_directions_inverse():
    # A DP-SGD composition whose budget composes the remove direction only: the add direction
    # reverses it law by law, so its curve is bounded by the remove curve's inverse instead of 0.
    import warnings

    from autoacct import BudgetWarning, dpsgd, limits, routes
    from autoacct.limits import predicted_seconds
    fpr = np.array([1e-6, 1e-3, 0.1, 0.5])
    start = predicted_seconds()
    full = routes.tradeoff(dpsgd(0.001, 0.8, 10_000), fpr, "pld")
    spent = predicted_seconds() - start
    m = dpsgd(0.001, 0.8, 10_000)
    acc = routes.ROUTES["pld"].accountant(m)  # type: ignore[attr-defined]
    with warnings.catch_warnings(record=True) as caught, limits(seconds=0.6 * spent):
        warnings.simplefilter("always")
        got = routes.tradeoff(m, fpr, "pld")
    assert any(issubclass(w.category, BudgetWarning) for w in caught)
    assert [len(made) for made in acc._made] == [1, 0]  # the add direction was not composed
    # Both are lower bounds on the curve: the inverse of the remove direction's curve is nearly
    # as tight as the add direction's own (3.6e-9 relatively below it at fpr 0.5; without the
    # inverse, the add direction's curve is 0).
    assert np.all(got > 0.0)
    np.testing.assert_allclose(got, full, rtol=1e-8)
