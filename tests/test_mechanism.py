"""Composition, provenance, routes and the closed forms the core must reproduce."""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed, rr_delta_closed, rr_eps_closed

from autoacct.zoo import ZCDP, Composition, Gaussian, Laplace, PureDP, RandomizedResponse


def lecture_demo():
    gm1 = Gaussian(5.0, name="GM1")
    gm2 = Gaussian(8.0, name="GM2")
    svt = PureDP(0.1, name="SVT")
    return Composition()([gm1, gm2, svt], [3, 5, 1])


def test_lecture_demo_name_and_params():
    m = lecture_demo()
    assert m.name == "Compose:{GM1: 3, GM2: 5, SVT: 1}"
    assert dict(m.params) == {"GM1.sigma": 5.0, "GM2.sigma": 8.0, "SVT.eps": 0.1}


def test_lecture_demo_rdp_route_reproduces_autodp(reference):
    m = lecture_demo()
    printed = reference["lecture_demo"]["rdp_route_epsilon"]
    for key, value in printed.items():
        assert m.epsilon(float(key), via="rdp") == pytest.approx(value, rel=1e-3)


def test_lecture_demo_default_route_is_tighter_and_bracketed(reference):
    m = lecture_demo()
    printed = reference["lecture_demo"]["rdp_route_epsilon"]
    for key, value in printed.items():
        d = float(key)
        eps = m.epsilon(d)
        lo, up = m.epsilon_bounds(d)
        assert eps < value
        assert lo <= eps == up
        assert (up - lo) <= 1e-3 * up


def test_params_keep_every_child_when_names_collide():
    m = Composition()([Gaussian(1.0), Gaussian(2.0)], [1, 1])
    assert set(m.params.values()) == {1.0, 2.0}
    assert len(m.params) == 2


def test_transformers_do_not_change_their_inputs():
    mechs = [Gaussian(1.0), Laplace(2.0)]
    counts = [3, 4]
    c = Composition()
    first = c(mechs, counts).epsilon(1e-5)
    second = c(mechs, counts).epsilon(1e-5)
    assert mechs[0].sigma == 1.0 and counts == [3, 4] and len(mechs) == 2
    assert first == second


@pytest.mark.parametrize("sigmas, counts", [([1.0], [1]), ([2.0], [10]), ([5.0, 8.0], [3, 5]), ([2e4], [1]),
                                            ([0.8], [100]), ([20.0], [10_000]), ([1.1, 3.0], [1000, 7])])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-10])
def test_gaussian_compositions_match_the_analytic_gaussian(sigmas, counts, delta):
    m = Composition()([Gaussian(s) for s in sigmas], counts)
    mu = math.sqrt(sum(k / s ** 2 for s, k in zip(sigmas, counts)))
    truth = gaussian_eps_closed(mu, delta)
    eps = m.epsilon(delta)
    assert truth <= eps <= truth * (1 + 1e-3) + 1e-12
    lo, up = m.epsilon_bounds(delta)
    assert lo <= truth <= up
    for e in (0.5 * truth, truth, 2.0 * truth):
        d = m.delta(e)
        assert gaussian_delta_closed(mu, e) <= d <= gaussian_delta_closed(mu, e) * (1 + 1e-6) + 1e-300


@pytest.mark.parametrize("eps0, k", [(0.1, 1), (0.5, 10), (1.0, 100), (0.1, 1000), (0.01, 10_000), (2.0, 3)])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10, 1e-15])
def test_pure_dp_compositions_match_the_binomial_sum(eps0, k, delta):
    m = Composition()([PureDP(eps0)], [k])
    truth = rr_eps_closed(eps0, k, delta)
    lo, up = m.epsilon_bounds(delta)
    assert lo <= truth * (1 + 1e-12) + 1e-12
    assert up >= truth * (1 - 1e-12)
    assert up <= truth * (1 + 1e-3) + 1e-12
    assert m.epsilon(delta) == up


@pytest.mark.parametrize("p, k", [(0.6, 50), (0.9, 7)])
def test_randomized_response_delta_matches_binomial_sum(p, k):
    m = Composition()([RandomizedResponse(p)], [k])
    eps0 = math.log(p / (1 - p))
    for e in [0.0, 0.3 * k * eps0, 0.6 * k * eps0]:
        truth = rr_delta_closed(eps0, k, e)
        lo, up = m.delta_bounds(e)
        assert lo <= truth * (1 + 1e-9) + 1e-300
        assert truth * (1 - 1e-9) <= up <= truth * (1 + 1e-3) + 1e-14


def test_fft_route_on_gaussian_laws_is_certified():
    """The FFT accountant itself (not the closed form) on a Gaussian law."""
    from autoacct.losses import GaussianLoss
    from autoacct.pld import FFTAccountant

    for sigma, k in [(1.0, 1), (5.0, 1000), (0.8, 100)]:
        mu = math.sqrt(k) / sigma
        law = GaussianLoss(1.0 / sigma)
        acc = FFTAccountant([(law, law, k)])
        for delta in (1e-5, 1e-10):
            truth = gaussian_eps_closed(mu, delta)
            lo, up = acc.epsilon(delta, acc.eps_scale(delta))
            assert lo <= truth <= up
            assert up - lo <= 1e-3 * up


def test_counts_up_to_ten_million_cost_one_power():
    eps0, k = 1e-4, 10_000_000
    m = Composition()([PureDP(eps0)], [k])
    for e in (1.0,):
        truth = rr_delta_closed(eps0, k, e)
        lo, up = m.delta_bounds(e)
        assert lo <= truth * (1 + 1e-9) and truth * (1 - 1e-9) <= up <= truth * (1 + 1e-2)


def test_zcdp_uses_rdp_and_is_bracketed_by_the_gaussian():
    z = ZCDP(0.5)
    assert z.routes == ("rdp",)
    lo, up = z.epsilon_bounds(1e-5)
    assert lo == pytest.approx(gaussian_eps_closed(1.0, 1e-5), rel=1e-9)
    assert lo < up == z.epsilon(1e-5)
    assert z.rdp(3.0) == pytest.approx(1.5)


def test_rdp_adds_under_composition():
    m = Composition()([Gaussian(2.0), Laplace(1.0)], [3, 2])
    alphas = np.array([1.5, 2.0, 8.0])
    expected = 3 * Gaussian(2.0).rdp(alphas) + 2 * Laplace(1.0).rdp(alphas)
    np.testing.assert_allclose(m.rdp(alphas), expected, rtol=1e-12)


def test_laplace_rdp_closed_form_at_order_two():
    # Mironov (2017), Proposition 6, at alpha = 2: log((2/3) e^{1/b} + (1/3) e^{-2/b}).
    b = 1.5
    assert Laplace(b).rdp(2.0) == pytest.approx(math.log(2 / 3 * math.exp(1 / b) + 1 / 3 * math.exp(-2 / b)))


def test_gaussian_tradeoff_is_the_gaussian_curve_and_never_above():
    from scipy import stats
    mu = math.sqrt(3 / 25 + 5 / 64)
    m = Composition()([Gaussian(5.0), Gaussian(8.0)], [3, 5])
    alpha = np.logspace(-4, math.log10(0.9), 50)
    exact = stats.norm.cdf(-stats.norm.ppf(alpha) - mu)  # not ppf(1 - alpha): 1 - alpha rounds
    got = m.tradeoff(alpha)
    assert np.all(got <= exact)
    np.testing.assert_allclose(got, exact, atol=1e-6)


def test_epsilon_and_its_bounds_accept_arrays_like_delta():
    from autoacct.zoo import Composition, Gaussian, Laplace, PoissonSubsample

    for m in (Composition()([PoissonSubsample(0.01)(Gaussian(1.1))], [1000]), Laplace(0.7), Gaussian(2.0)):
        deltas = np.array([[1e-3, 1e-6], [1e-9, 0.5]])
        eps = m.epsilon(deltas)
        lo, up = m.epsilon_bounds(deltas)
        assert eps.shape == lo.shape == up.shape == deltas.shape
        for idx in np.ndindex(deltas.shape):
            assert eps[idx] == m.epsilon(float(deltas[idx]))
            assert (lo[idx], up[idx]) == m.epsilon_bounds(float(deltas[idx]))
        assert isinstance(m.epsilon(1e-5), float)
    with pytest.raises(ValueError, match=r"delta must lie in .* got 1.5"):
        Gaussian(1.0).epsilon([1e-5, 1.5])


def test_loss_parts_are_built_once_per_mechanism(monkeypatch):
    """A query asks the PLD route for a mechanism's parts several times; the laws are built
    once (each law keeps what it derives: its grid-sizing summaries, its discretisations'
    keys), and every caller gets its own list."""
    from autoacct import routes
    from autoacct.subsampling import poisson
    from autoacct.zoo import PoissonSubsample

    built = []
    real = poisson.PoissonRemoveLoss.__init__

    def spy(self, base, q):
        built.append(q)
        real(self, base, q)
    monkeypatch.setattr(poisson.PoissonRemoveLoss, "__init__", spy)
    steps = [(0.01, 1.0), (0.02, 1.2), (0.03, 1.5)]
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps], [50, 50, 50])
    lower, upper = routes.epsilon_bounds(m, 1e-5, "pld", 1e-3)
    assert sorted(built) == [0.01, 0.02, 0.03]
    first, second = m.kept_loss_parts(), m.kept_loss_parts()
    assert first == second and first is not second
    assert 0.0 < lower <= upper
