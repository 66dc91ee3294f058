"""Lower bounds of subsampled bases whose law truncates its tails, against exact sums in mpmath.

A discrete Gaussian's law moves its far tails to L = +inf (sound for upper bounds only,
``p_inf_truncated``). The addition pair (Q, (1-q) Q + q P) of Poisson subsampling has its
profile (1 - (1-q) e^eps) H_beta(P || Q) through the base pair's symmetry, so that moved mass
enters it too, while eps < -log(1 - q) (long, for q near 1): a lower bound must leave it out.
The truth is summed here over the integers with mpmath at 60 digits, from the discrete
Gaussian's pmf (not from autoacct).
"""

from __future__ import annotations

import mpmath as mp
import pytest

from autoacct.subsampling import PoissonSubsample
from autoacct.zoo import DiscreteGaussian


def _subsampled_dg_delta(sigma: float, q: float, eps: float) -> mp.mpf:
    """max over both directions of H_{e^eps} of the Poisson-subsampled discrete Gaussian's pair,
    summed over x in [-300, 301] (the rest has mass below e^-10000 at these sigma)."""
    with mp.workdps(60):
        s2 = 2 * mp.mpf(sigma) ** 2
        xs = range(-300, 302)
        z = mp.fsum(mp.exp(-mp.mpf(x) ** 2 / s2) for x in xs)
        p = [mp.exp(-(mp.mpf(x) - 1) ** 2 / s2) / z for x in xs]
        qm = [mp.exp(-mp.mpf(x) ** 2 / s2) / z for x in xs]
        qq, g = mp.mpf(q), mp.exp(mp.mpf(eps))
        mixed = [(1 - qq) * b + qq * a for a, b in zip(p, qm)]
        removal = mp.fsum(max(mp.mpf(0), m - g * b) for m, b in zip(mixed, qm))
        addition = mp.fsum(max(mp.mpf(0), b - g * m) for m, b in zip(mixed, qm))
        return max(removal, addition)


@pytest.mark.parametrize("sigma, q, eps", [(1.8, 1.0 - 1e-7, 10.0), (1.8, 1.0 - 1e-7, 14.0), (1.2, 0.999, 5.0)])
def test_poisson_subsampled_discrete_gaussian_lower_delta_leaves_out_truncated_tails(
        sigma: float, q: float, eps: float) -> None:
    lo, up = PoissonSubsample(q)(DiscreteGaussian(sigma)).delta_bounds(eps)
    truth = _subsampled_dg_delta(sigma, q, eps)
    assert lo <= truth <= up


@pytest.mark.parametrize("sigma, q, delta", [(1.8, 1.0 - 1e-7, 1e-100), (1.8, 1.0 - 1e-7, 1e-187)])
def test_poisson_subsampled_discrete_gaussian_lower_epsilon_leaves_out_truncated_tails(
        sigma: float, q: float, delta: float) -> None:
    lo, up = PoissonSubsample(q)(DiscreteGaussian(sigma)).epsilon_bounds(delta)
    # lo <= eps(delta) <= up: the profile at up is at most delta, at lo at least delta.
    assert _subsampled_dg_delta(sigma, q, up) <= delta
    assert _subsampled_dg_delta(sigma, q, lo) >= delta
