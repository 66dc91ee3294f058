"""RDP -> (eps, delta) conversion (autoacct/converters/rdp.py) against the Gaussian's closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed

from autoacct.converters.rdp import rdp_to_delta, rdp_to_epsilon


def _gaussian_curve(sigma: float):
    return lambda alpha: np.asarray(alpha, dtype=float) / (2.0 * sigma ** 2)


@pytest.mark.parametrize("sigma, delta", [(0.8, 1e-5), (2.0, 1e-6), (10.0, 1e-9), (1.0, 0.1)])
def test_epsilon_between_the_exact_gaussian_and_the_classic_conversion(sigma, delta):
    """The Gaussian's RDP alpha / (2 sigma^2) converts to an eps that is never below the exact
    analytic-Gaussian eps (Balle and Wang 2018) and never above the classic conversion
    min_alpha alpha / (2 sigma^2) + log(1 / delta) / (alpha - 1) (Mironov 2017)."""
    got = rdp_to_epsilon(_gaussian_curve(sigma), delta)
    exact = gaussian_eps_closed(1.0 / sigma, delta)
    alphas = 1.0 + np.logspace(-4, 4, 20001)
    classic = float(np.min(alphas / (2 * sigma ** 2) + math.log(1 / delta) / (alphas - 1)))
    assert exact <= got <= classic * (1 + 1e-9)


@pytest.mark.parametrize("sigma", [0.7, 1.5, 6.0])
def test_delta_is_sound_and_consistent_with_epsilon(sigma):
    curve = _gaussian_curve(sigma)
    eps = np.array([0.0, 0.1, 0.5, 1.0, 3.0, 10.0])
    d = rdp_to_delta(curve, eps)
    truth = np.array([gaussian_delta_closed(1.0 / sigma, e) for e in eps])
    assert np.all(d >= truth * (1 - 1e-12)) and np.all(d <= 1.0)
    assert np.all(np.diff(d) <= 0.0)
    for target in (1e-3, 1e-6, 1e-10):
        e = rdp_to_epsilon(curve, target)
        assert float(rdp_to_delta(curve, np.array([e]))[0]) <= target * (1 + 1e-9)


def test_infinite_curve_gives_no_guarantee():
    assert rdp_to_epsilon(lambda a: np.full(np.shape(a), np.inf), 1e-5) == math.inf


def test_epsilon_is_not_rounded_below_a_nearly_tight_conversion():
    # 200 runs of randomized response with log-odds 20: at delta 0.5 the conversion at order 2 is
    # tight to 1e-13 (the law is nearly a point mass). It returned 3999.306852407208, where the
    # true delta (exact binomial sum, mpmath at 60 digits) is 0.5000000000004676 > 0.5.
    from closed_forms import mp_rr_delta

    from autoacct.zoo.mechanisms import rr_rdp

    eps = rdp_to_epsilon(lambda a: 200 * rr_rdp(20.0, np.asarray(a, dtype=float)), 0.5)
    assert mp_rr_delta(20.0, 200, eps) <= 0.5
    assert eps <= 4000.0 + math.log(0.5) + 1e-9
