"""Answers read from the parts' closed forms without composing (autoacct.shortcuts): the total
variation bound on delta at 0, against the subsampled Gaussian's own total variation in mpmath,
and the PLD route's use of it."""

from __future__ import annotations

from unittest import mock

import mpmath
import pytest

from autoacct import dpsgd
from autoacct.pld import FFTAccountant
from autoacct.shortcuts import variation_up
from autoacct.zoo import Composition, Gaussian, Laplace, MixtureOfGaussians, PoissonSubsample


def mp_subsampled_gaussian_tv(q: float, sigma: float) -> mpmath.mpf:
    """TV((1-q) N(0, s^2) + q N(1, s^2), N(0, s^2)) = q TV(N(1, s^2), N(0, s^2)) = q (2 Phi(1/(2s)) - 1)."""
    with mpmath.workdps(40):
        return mpmath.mpf(q) * (2 * mpmath.ncdf(1 / (2 * mpmath.mpf(sigma))) - 1)


@pytest.mark.parametrize(("steps", "counts"), [([(1.04e-4, 21.6)], [2]),
                                               ([(0.01, 1.1), (0.3, 4.0), (1e-6, 0.5)], [3, 1, 1000])])
def test_variation_bound_is_the_sum_of_the_steps_total_variations(steps, counts) -> None:
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps], counts)
    parts = m.loss_parts()
    assert parts is not None
    truth = mpmath.fsum(k * mp_subsampled_gaussian_tv(q, s) for (q, s), k in zip(steps, counts))
    got = variation_up(parts)
    assert truth <= got <= truth * (1 + 1e-9)


def test_variation_bound_stopped_above_a_level_exceeds_it_or_is_whole() -> None:
    """Summed only until past ``stop_above``: above that level wherever the whole bound is
    (never a partial sum at or below it), and the whole bound where that is below it."""
    steps, counts = [(0.01, 1.1), (0.3, 4.0), (1e-6, 0.5)], [3, 1, 1000]
    parts = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps], counts).loss_parts()
    assert parts is not None
    whole = variation_up(parts)
    for level in (0.0, 1e-9, whole / 2, whole * (1 - 1e-12)):
        got = variation_up(parts, stop_above=level)
        assert level < got <= whole
    # The first step's terms alone exceed 1e-9: the rest are not read.
    assert variation_up(parts, stop_above=1e-9) < whole
    assert variation_up(parts, stop_above=whole) == whole


def test_laws_without_closed_form_profiles_give_no_bound() -> None:
    # A mixture of Gaussians' profile is computed, not a closed form with a rounding bound.
    parts = Composition()([PoissonSubsample(0.1)(Laplace(1.0)), MixtureOfGaussians(1.0, [1.0, 0.5], [0.5, 0.5])],
                          [2, 1]).loss_parts()
    assert parts is not None
    assert variation_up(parts) == float("inf")
    laplace = Composition()([PoissonSubsample(0.1)(Laplace(1.0))], [2]).loss_parts()
    assert laplace is not None and variation_up(laplace) < 1.0


def test_eps_is_zero_without_composing_where_the_variations_sum_below_delta() -> None:
    # 2 runs at q = 1.04e-4, sigma = 21.6: TV <= 2 q (2 Phi(1/43.2) - 1) = 3.8e-6, so delta(0) is
    # below delta = 6.8e-4 and eps(delta) = 0 (a sweep case that took 15 ms to compose).
    m = dpsgd(1.04e-4, 21.6, 2)
    assert float(2 * mp_subsampled_gaussian_tv(1.04e-4, 21.6)) < 6.8e-4
    with mock.patch.object(FFTAccountant, "epsilon", side_effect=AssertionError("composed")):
        assert m.epsilon_bounds(6.8e-4) == (0.0, 0.0)
    # At a delta below the total variation the composition is asked, and eps is positive.
    lo, up = dpsgd(1.04e-4, 21.6, 2).epsilon_bounds(1e-7)
    assert 0.0 < lo <= up
