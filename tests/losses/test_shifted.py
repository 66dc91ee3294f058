"""A law moved by a constant (autoacct/losses/shifted.py): its cells, its profile and its
composition against the Gaussian closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed
from scipy import integrate, stats

from autoacct.losses import GaussianLoss, randomized_response_loss
from autoacct.losses.shifted import ShiftedLoss
from autoacct.pld.accountant import FFTAccountant


@pytest.mark.parametrize("mu, d", [(0.5, 0.013), (2.0, -0.4), (0.01, 3e-4)])
def test_cells_are_the_gaussian_laws_moved(mu, d):
    # L = log(dP/dQ) of (N(mu, 1), N(0, 1)) is N(mu^2/2, mu^2) under P and N(-mu^2/2, mu^2)
    # under Q; X = L - d has P-mass P(a + d < L <= b + d) in (a, b] and Q-mass
    # E_P[e^{-X}; cell] = e^d Q(a + d < L <= b + d).
    edges = np.concatenate(([-np.inf], np.linspace(-3 * mu, 3 * mu, 41) + mu * mu / 2 - d, [np.inf]))
    m_p, m_q = ShiftedLoss(GaussianLoss(mu), d).cell_masses(edges)
    p_cdf = stats.norm.cdf(edges + d, loc=mu * mu / 2, scale=mu)
    q_cdf = stats.norm.cdf(edges + d, loc=-mu * mu / 2, scale=mu)
    np.testing.assert_allclose(m_p, np.diff(p_cdf), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(m_q, math.exp(d) * np.diff(q_cdf), rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("mu, d", [(0.5, 0.013), (1.5, -0.2)])
def test_profile_is_the_hockey_stick_of_the_moved_losses(mu, d):
    # E_P[(1 - e^{eps - X})_+] by quadrature over X = L - d, L ~ N(mu^2/2, mu^2).
    loss = ShiftedLoss(GaussianLoss(mu), d)
    for eps in (-0.1, 0.0, 0.4, 1.3):
        def integrand(x: float, eps: float = eps) -> float:
            return -math.expm1(eps - x) * stats.norm.pdf(x + d, loc=mu * mu / 2, scale=mu)
        ref, _ = integrate.quad(integrand, eps, eps + 12 * mu + 2, epsabs=0, epsrel=1e-11, limit=200)
        assert float(loss.profile(np.array(eps))) == pytest.approx(ref, rel=1e-8, abs=1e-14)
        assert float(loss.profile(np.array(eps))) == pytest.approx(gaussian_delta_closed(mu, eps + d), rel=1e-9)


@pytest.mark.parametrize("mu, k, d, delta", [(0.5, 20, 0.004, 1e-5), (0.5, 20, 0.05, 1e-5),
                                             (0.3, 50, -0.002, 1e-7)])
def test_k_moved_copies_compose_to_the_gaussian_moved_by_k_d(mu, k, d, delta):
    # k copies of X = L - d compose to the Gaussian loss of mu sqrt(k) moved by -k d: eps(delta)
    # of the composition is the closed form's less k d. The accountant treats the moved law
    # as any other (its Q-mass e^d exceeds 1 for d > 0), and certifies a bracket around it.
    truth = gaussian_eps_closed(mu * math.sqrt(k), delta) - k * d
    acc = FFTAccountant([(ShiftedLoss(GaussianLoss(mu), d), ShiftedLoss(GaussianLoss(mu), d), k)])
    lower, upper = acc.epsilon(delta, acc.eps_scale(delta))
    assert lower <= truth <= upper
    assert upper - lower <= 2e-3 * upper


def test_moments_and_range_move_with_the_losses():
    base = GaussianLoss(0.7)
    loss = ShiftedLoss(base, 0.25)
    assert loss.moments[0] == pytest.approx(base.moments[0] - 0.25)
    assert loss.moments[1] == base.moments[1]
    a, b = base.quantile_range(1e-12)
    a2, b2 = loss.quantile_range(1e-12)
    assert a2 <= a - 0.25 and b2 >= b - 0.25 and b2 - a2 == pytest.approx(b - a)
    assert loss.key != ShiftedLoss(base, 0.5).key


def test_a_law_with_atoms_off_any_lattice_moves_its_atoms_with_its_cells():
    # The Poisson-subsampled Laplace law (b = 0.1, q = 1e-4) has atoms at log(1 - q + q e^{-+10})
    # read through its cells. Moved by d, every cell of X = L - d holds the base's cell moved by
    # d (its Q-mass times e^d), the atom near -q included, and the profile is the base's at
    # eps + d.
    from autoacct.subsampling import PoissonSubsample
    from autoacct.zoo import Laplace
    base = PoissonSubsample(1e-4)(Laplace(0.1)).loss_parts()[0].forward
    assert base.has_atoms and base.lattice is None and not base.merged_lower
    atom = math.log1p(1e-4 * math.expm1(-10.0))
    d = atom - (-3.0e-4)  # puts the atom at -3e-4
    loss = ShiftedLoss(base, d)
    assert loss.has_atoms
    edges = np.array([-np.inf, -3.5e-4, -3.0e-4, -2.5e-4, 0.0, 0.5, np.inf])
    m_p, m_q = loss.cell_masses(edges)
    b_p, b_q = base.cell_masses(edges + d)
    np.testing.assert_array_equal(m_p, b_p)
    np.testing.assert_allclose(m_q, b_q * math.exp(d), rtol=1e-15)
    assert m_p[1] > 0.49  # the atom (P-mass about 1/2) sits in (-3.5e-4, -3e-4]
    eps = np.array([0.0, 0.3, 1.0])
    np.testing.assert_array_equal(loss.profile(eps), base.profile(eps + d))


def test_bad_shifts_and_laws_on_lattices_are_refused():
    with pytest.raises(ValueError, match="shift"):
        ShiftedLoss(GaussianLoss(1.0), math.nan)
    with pytest.raises(ValueError, match="shift"):
        ShiftedLoss(GaussianLoss(1.0), math.inf)
    with pytest.raises(TypeError, match="shift='0.1'"):
        ShiftedLoss(GaussianLoss(1.0), "0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lattice"):
        ShiftedLoss(randomized_response_loss(1.0), 0.1)
    from autoacct.subsampling import PoissonSubsample
    from autoacct.zoo import DiscreteGaussian
    merged = PoissonSubsample(1e-3)(DiscreteGaussian(1.0)).loss_parts()[0].forward
    assert merged.merged_lower
    with pytest.raises(ValueError, match="lattice"):
        ShiftedLoss(merged, 0.1)
