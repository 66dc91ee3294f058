"""MixtureOfGaussians against the Poisson-subsampled Gaussian, quadrature and dp_accounting.

References: PoissonSubsample(q)(Gaussian(sigma)) (the two-component case, whose law is
built independently, from the Poisson map of the Gaussian law); the hockey-stick
divergence integrated by scipy.integrate.quad from the two densities; dp_accounting's
``from_mixture_gaussian_mechanism`` PLD (connect-the-dots, pessimistic).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from closed_forms import gaussian_eps_closed
from scipy import integrate

from autoacct.zoo import Composition, Gaussian, MixtureOfGaussians, PoissonSubsample


def _hockey_stick(sigma, sens, probs, eps):
    """max over both directions of int (f - e^eps g)^+ for f, g the mixture and N(0, sigma^2)."""
    c = 1.0 / (sigma * math.sqrt(2.0 * math.pi))

    def base(x, s=0.0):
        return c * math.exp(-0.5 * ((x - s) / sigma) ** 2)

    def mix(x):
        return sum(p * base(x, s) for s, p in zip(sens, probs))

    w = math.exp(eps)
    lo, hi = -12.0 * sigma, max(sens) + 12.0 * sigma
    pts = np.linspace(lo, hi, 21)[1:-1]
    rem = integrate.quad(lambda x: max(mix(x) - w * base(x), 0.0), lo, hi, points=pts, limit=400,
                         epsabs=1e-13, epsrel=1e-9)[0]
    add = integrate.quad(lambda x: max(base(x) - w * mix(x), 0.0), lo, hi, points=pts, limit=400,
                         epsabs=1e-13, epsrel=1e-9)[0]
    return max(rem, add)


@pytest.mark.parametrize("q, sigma, count", [(0.1, 1.0, 1), (0.01, 0.8, 100), (0.2, 2.0, 30)])
def test_two_components_are_the_poisson_subsampled_gaussian(q, sigma, count):
    m = Composition()([MixtureOfGaussians(sigma, (0.0, 1.0), (1 - q, q))], [count])
    r = Composition()([PoissonSubsample(q)(Gaussian(sigma))], [count])
    for d in (1e-3, 1e-6, 1e-9):
        lo, up = m.epsilon_bounds(d)
        r_lo, r_up = r.epsilon_bounds(d)
        # Both bracket the same truth, each within the default tolerance 1e-3.
        assert lo <= r_up and r_lo <= up
        assert up == pytest.approx(r_up, rel=1e-3)


@pytest.mark.parametrize("sigma, sens, probs", [(1.0, (0.0, 1.0, 2.0), (0.81, 0.18, 0.01)),
                                                (0.7, (0.5, 1.0, 1.5), (0.2, 0.5, 0.3))])
def test_single_run_profile_is_bracketed_around_quadrature(sigma, sens, probs):
    m = MixtureOfGaussians(sigma, sens, probs)
    for eps in (0.0, 1.5):
        truth = _hockey_stick(sigma, sens, probs, eps)
        lo, up = m.delta_bounds(eps)
        assert lo <= truth * (1 + 1e-7) + 1e-13 and truth * (1 - 1e-7) - 1e-13 <= up
        assert up <= truth * 1.01 + 1e-12


_THREE = (1.5, (0.0, 1.0, 2.0), (0.81, 0.18, 0.01))


@pytest.fixture(scope="module")
def dp_accounting_three():
    """dp_accounting's PLD of the three-component mixture (spacing 2e-3: its construction
    takes seconds, and its eps agree with spacing 1e-3 to 1e-5 relative here)."""
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    return pld.from_mixture_gaussian_mechanism(*_THREE, value_discretization_interval=2e-3)


@pytest.mark.parametrize("count", [1, 20])
def test_three_components_match_dp_accounting(dp_accounting_three, count):
    ref = dp_accounting_three.self_compose(count) if count > 1 else dp_accounting_three
    one = MixtureOfGaussians(*_THREE)
    m = Composition()([one], [count]) if count > 1 else one
    for d in (1e-3, 1e-6, 1e-8):
        assert m.epsilon(d) == pytest.approx(ref.get_epsilon_for_delta(d), rel=1e-3)


def test_one_sensitivity_is_the_gaussian_mechanism():
    m = MixtureOfGaussians(2.0, (0.0, 3.0), (0.0, 1.0))
    assert m.exact_gdp_mu() == 1.5
    assert m.epsilon(1e-6) == pytest.approx(gaussian_eps_closed(1.5, 1e-6), rel=1e-9)


@pytest.mark.parametrize("make, match", [
    (lambda: MixtureOfGaussians(0.0, (0.0, 1.0), (0.5, 0.5)), "sigma"),
    (lambda: MixtureOfGaussians(1.0, (0.0, -1.0), (0.5, 0.5)), "sensitivities"),
    (lambda: MixtureOfGaussians(1.0, (0.0, math.nan), (0.5, 0.5)), "sensitivities"),
    (lambda: MixtureOfGaussians(1.0, (0.0, 1.0), (0.5, 0.6)), "probabilities must sum"),
    (lambda: MixtureOfGaussians(1.0, (0.0, 1.0), (0.5, 0.25, 0.25)), "same length"),
    (lambda: MixtureOfGaussians(1.0, (0.0, 1.0), (1.0, 0.0)), "positive"),
    (lambda: MixtureOfGaussians(1.0, (), ()), "sensitivities"),
])
def test_bad_parameters_name_themselves(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_non_numeric_sensitivities_are_a_type_error():
    with pytest.raises(TypeError, match="sensitivities"):
        MixtureOfGaussians(1.0, 1.0, (1.0,))


@pytest.mark.parametrize("p_far", [1e-300, 1e-100, 1e-20])
def test_a_rare_far_component_is_bounded_by_the_total_variation(p_far: float) -> None:
    """A component of tiny probability far out (shift 100 noise stds) makes the pair's total
    variation p TV(N(100, 1), N(0, 1)) = p erf(100 / (2 sqrt 2)), in mpmath (p the stored
    probability over the stored probabilities' sum): delta(eps) is at most that at every
    eps >= 0, and eps(1e-5) is 0. The discretised PLD of such a law is
    costly: under a one-second budget it answered eps(1e-5) <= inf and delta(eps) <= 1.0. (The
    PLD route may still say it missed tol within the budget: a BudgetWarning, an AccuracyWarning,
    ignored here; the answer does not depend on it.)"""
    import mpmath as mp

    from autoacct import AccuracyWarning, limits
    m = MixtureOfGaussians(0.01, (0.0, 1.0), (1.0 - p_far, p_far))
    with mp.workdps(50):
        weight = mp.mpf(m.probabilities[1]) / (mp.mpf(m.probabilities[0]) + mp.mpf(m.probabilities[1]))
        tv = weight * mp.erf(mp.mpf(m.sensitivities[1]) / mp.mpf(m.sigma) / (2 * mp.sqrt(2)))
    with limits(seconds=1.0), warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        eps_up = m.epsilon_bounds(1e-5)[1]
        delta_up = m.delta_bounds(np.array([0.0, 1.0, 30.0]))[1]
    assert eps_up == 0.0
    assert np.all(delta_up >= float(tv))
    assert np.all(delta_up <= float(tv) * (1 + 1e-12))
