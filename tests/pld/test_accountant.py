"""The FFT accountant's refinement passes (autoacct/pld/accountant.py)."""

from __future__ import annotations

import autoacct
from autoacct.pld.accountant import FFTAccountant


def test_a_settled_direction_is_not_composed_again(monkeypatch):
    # Sweep case 59 of benchmarks/sweep.py: the normal approximation puts the smaller
    # direction first, and the first pass leaves the bracket at 2.5e-3 wide. Its second pass
    # must refine the larger direction only: the smaller one's upper bound is already below
    # the larger one's lower bound, so no finer grid of it can move eps. Every composition
    # is asked for a direction that is not settled, and the answer is within tol.
    q, sigma, k, delta = 1.2e-05, 0.92, 3632059, 7.44e-11
    settled = []
    real = FFTAccountant.aimed_profiles

    def spy(self, h, log_eta, query, directions, grid_tol, lower=True):
        settled.extend(d for d in directions if self._settled(d, delta))
        return real(self, h, log_eta, query, directions, grid_tol, lower)
    monkeypatch.setattr(FFTAccountant, "aimed_profiles", spy)
    lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert not settled
    assert upper - lower <= 1e-3 * upper
