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


@pytest.mark.parametrize("eps", [4000.0 - math.log(2.0), 3999.3068528194394, 3999.3068524072])
def test_delta_is_not_rounded_below_a_nearly_tight_conversion(eps):
    # The same pair by eps: the conversion at order 2 is tight to 1e-13 there, and without a
    # rounding allowance rdp_to_delta returned 0.4999997938846762 at eps = 4000 - log 2, below
    # the exact binomial profile 0.49999979388476665 (mpmath).
    from closed_forms import mp_rr_delta

    from autoacct import Composition, PureDP
    from autoacct.zoo.mechanisms import rr_rdp

    truth = mp_rr_delta(20.0, 200, eps)
    got = float(rdp_to_delta(lambda a: 200 * rr_rdp(20.0, np.asarray(a, dtype=float)), np.array([eps]))[0])
    assert truth <= got <= truth * (1 + 1e-9)
    public = Composition()([PureDP(20.0)], [200]).delta(eps, via="rdp")
    assert truth <= public <= truth * (1 + 1e-9)


def _dense_conversion_minimum(curve, delta: float) -> float:
    """min over a dense order grid (2e5 orders in (1, 1e4]) of the conversion's eps, computed
    here from its formula (Balle et al. 2020, Theorem 21), for comparison with the tiered search."""
    alphas = 1.0 + np.logspace(-4.5, 4, 200001)
    vals = curve(alphas) + np.log1p(-1.0 / alphas) - (math.log(delta) + np.log(alphas)) / (alphas - 1.0)
    return float(np.min(vals))


@pytest.mark.parametrize("sigma, delta, where", [
    (1.0, 0.5, "below 2"),        # a large delta: the best order is fractional, near 1
    (0.05, 1e-5, "below 2"),
    (2.0, 1e-5, "2 to 64"),
    (30.0, 1e-200, "above 64"),   # a tiny delta and a large sigma: the best order is large
])
def test_tiered_search_finds_the_best_order_in_every_tier(sigma, delta, where):
    """The search evaluates the orders 2..64 first and the others only where the best of
    those is at an end. Its answer matches the dense minimum over the real orders to
    within the polish's precision, in each tier, and counts which tiers it asked."""
    asked: list[np.ndarray] = []

    def curve(alpha):
        asked.append(np.asarray(alpha, dtype=float))
        return np.asarray(alpha, dtype=float) / (2.0 * sigma ** 2)

    got = rdp_to_epsilon(curve, delta)
    dense = _dense_conversion_minimum(lambda a: a / (2.0 * sigma ** 2), delta)
    assert got == pytest.approx(dense, rel=1e-6)
    grid = np.concatenate([a for a in asked if a.size > 1])
    assert (np.min(grid) < 2.0) == (where == "below 2")
    assert (np.max(grid) > 64.0) == (where == "above 64")


def test_polish_stops_at_the_deadline_and_keeps_a_valid_order():
    """Where the curve stops at the query's deadline during the polish (a composition's curve
    raises BudgetExceeded between its parts), the answer is the best grid order's bound, still
    above the exact Gaussian eps; with time it is the polished one, no larger."""
    from autoacct.errors import BudgetExceeded

    sigma, delta = 2.0, 1e-5
    exact = gaussian_eps_closed(1.0 / sigma, delta)
    polished = rdp_to_epsilon(_gaussian_curve(sigma), delta)

    def stopping(alpha):
        alpha = np.asarray(alpha, dtype=float)
        if alpha.size == 1:  # the polish asks one order at a time
            raise BudgetExceeded("time", "past the deadline")
        return alpha / (2.0 * sigma ** 2)
    unpolished = rdp_to_epsilon(stopping, delta)
    alphas = np.arange(2.0, 65.0)
    grid_best = float(np.min(alphas / (2 * sigma ** 2) + np.log1p(-1 / alphas)
                             - (math.log(delta) + np.log(alphas)) / (alphas - 1)))
    assert exact <= polished < unpolished
    assert unpolished == pytest.approx(grid_best, rel=1e-14)
