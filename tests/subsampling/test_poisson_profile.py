"""The closed-form profiles of Poisson-subsampled Gaussian steps and their rounding bounds
(autoacct/subsampling/poisson.py), read together by ``profile_with_error``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from closed_forms import mp_poisson_gaussian_deltas
from hypothesis import given, settings
from hypothesis import strategies as st

import autoacct
from autoacct import routes
from autoacct.subsampling.poisson import PoissonRemoveLoss
from autoacct.zoo import Gaussian, Laplace, PoissonSubsample


def _laws(q: float, base) -> tuple:
    """The (removal, addition) laws of one Poisson-subsampled step of ``base``."""
    (part,) = routes.PldRoute()._parts(PoissonSubsample(q)(base))
    laws = (part.forward, part.backward)
    return laws if isinstance(laws[0], PoissonRemoveLoss) else laws[::-1]


_EPS = np.array([-3.0, -1e-9, 0.0, 1e-12, 1e-4, 0.03, 0.7, 2.5, 9.0, 40.0, 300.0, 800.0])


@pytest.mark.parametrize("q, base", [(1e-5, Gaussian(0.45)), (0.02, Gaussian(1.1)), (0.5, Gaussian(30.0)),
                                     (1.0, Gaussian(2.0)), (0.1, Laplace(1.5))])
def test_profile_with_error_reads_each_point_on_its_own(q, base):
    # One call gives the profile and a bound on its rounding, on arrays of any shape: the
    # single-step route and the total-variation check read both (they used to evaluate the
    # base's profile six times a law for them). Each point's pair is the one it has alone,
    # and the value is profile's.
    for law in _laws(q, base):
        for eps in (_EPS, _EPS.reshape(3, 4), np.array(0.7)):
            value, error = law.profile_with_error(eps)
            assert value.shape == error.shape == eps.shape
            assert np.array_equal(value, np.asarray(law.profile(eps)))
            assert np.all(np.isfinite(error)) and np.all(error >= 0.0)
            for e, v, err in zip(eps.ravel(), value.ravel(), error.ravel(), strict=True):
                alone = law.profile_with_error(np.array([e]))
                assert (alone[0][0], alone[1][0]) == (v, err)


@settings(max_examples=40, derandomize=True, deadline=None, database=None)
@given(log_q=st.floats(-5.0, 0.0), log_sigma=st.floats(math.log10(0.3), math.log10(50.0)),
       eps=st.floats(0.0, 30.0))
def test_the_rounding_bound_covers_the_error_against_mpmath(log_q, log_sigma, eps):
    # Each direction's value is within its bound of the 60-digit closed form, never on the
    # wrong side by more (the single-step answers add or subtract the bound).
    q, sigma = 10.0 ** log_q, 10.0 ** log_sigma
    truths = mp_poisson_gaussian_deltas(q, sigma, eps)
    for law, truth in zip(_laws(q, Gaussian(sigma)), truths, strict=True):
        value, error = law.profile_with_error(np.array([eps]))
        assert abs(float(value[0]) - float(truth)) <= float(error[0]) + 1e-300


@pytest.mark.parametrize("q, sigma", [(0.01, 1.0), (1e-5, 0.45), (0.5, 30.0)])
def test_far_eps_reads_zero_not_nan(q, sigma):
    # Far out, Phi(-eps/mu + mu/2) underflows and the log-space difference behind the profile
    # cancels (eps = 1e10: two logarithms of size 1e19) or is inf - inf (eps = 1e300): the
    # value used to be NaN there, and the single-step answer [NaN, NaN] (or an upper end of q
    # from an infinite relative bound). delta is below the smallest float there: the value
    # is 0 with no error, and the public answer keeps the floor 1e-300 as its upper end.
    far = np.array([1e4, 1e10, 1e100, 1e300])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for law in _laws(q, Gaussian(sigma)):
            value, error = law.profile_with_error(far)
            assert np.all(value == 0.0) and np.all(error == 0.0)
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=1).delta_bounds(far)
        assert np.all(lower == 0.0) and np.all((1e-300 <= upper) & (upper <= 1.001e-300))
        assert Gaussian(sigma).delta_bounds(far)[1].max() <= 1.001e-300
    # (the smallest of them is already past the floor: the 60-digit value)
    assert max(mp_poisson_gaussian_deltas(q, sigma, 1e4)) < 1e-300
