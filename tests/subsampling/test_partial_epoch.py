"""The first steps of a balls-in-bins epoch (autoacct/subsampling/partial_epoch.py): lower ends
from the pairs its outputs' post-processings attain."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from autoacct import dpsgd
from autoacct.subsampling.partial_epoch import PartialEpochMechanism


def _poisson_gaussian_delta(q: float, sigma: float, eps: float) -> float:
    """delta(eps) of the remove pair ((1 - q) N(0, s^2) + q N(1, s^2), N(0, s^2)) in closed form,
    the larger direction for these parameters (eps > 0): the likelihood ratio is increasing in
    the output, so the event is one threshold x*."""
    x = sigma * sigma * math.log((math.expm1(eps) + q) / q) + 0.5
    return float((1 - q) * stats.norm.sf(x / sigma) + q * stats.norm.sf((x - 1) / sigma)
                 - math.exp(eps) * stats.norm.sf(x / sigma))


@pytest.mark.parametrize("sigma, steps, used", [(0.8, 10, 2), (0.8, 10, 3), (1.0, 100, 2)])
def test_a_partial_epochs_lower_end_is_at_least_its_first_steps(sigma, steps, used):
    # The first output alone is a Poisson-subsampled Gaussian at rate 1/t (the record is in it
    # with probability 1/t, independently of the others) of the same datasets: a run of r steps
    # attains at least its delta. Before, only the r outputs' sum was read: at t = 10,
    # sigma = 0.8, two steps' lower end was 1.959, below one step's 2.727.
    delta = 1e-5
    lower, upper = PartialEpochMechanism(sigma, steps, used).epsilon_bounds(delta)
    one = dpsgd(sample_rate=1.0 / steps, noise_multiplier=sigma, steps=1, sampling="balls-in-bins")
    one_lower = one.epsilon_bounds(delta)[0]
    # (each lower end rounded down by its route: a few ulps apart)
    assert lower >= one_lower * (1 - 1e-14)
    # The first step's exact delta at the lower end is at least delta: the end is certified.
    assert _poisson_gaussian_delta(1.0 / steps, sigma, lower) >= delta * (1 - 1e-9)
    assert lower <= upper


def test_a_partial_epochs_lower_end_is_monotone_in_the_steps_run():
    # dpsgd's run of k balls-in-bins steps (t = 10): the first k outputs include the first k - 1,
    # so each lower end is at least the one before it (up to the few ulps each is rounded down by).
    lows = [dpsgd(sample_rate=0.1, noise_multiplier=0.8, steps=k, sampling="balls-in-bins").epsilon_bounds(1e-5)[0]
            for k in range(1, 10)]
    assert np.all(np.diff(lows) >= -1e-14 * np.array(lows[:-1]))
    assert lows[1] > 2.7  # was 1.959
