"""Sampling with replacement: the draw counts' weights against exact binomial tails (mpmath)."""

from __future__ import annotations

import mpmath as mp
import pytest

from autoacct import SampleWithReplacement
from autoacct.zoo import Gaussian


def _mixture(law):
    """The mixture over draw counts inside the mechanism's law (symmetrised, Poisson-mixed)."""
    while not hasattr(law, "weights"):
        law = getattr(law, "half", None) or law.base
    return law


@pytest.mark.parametrize("b, n", [(10, 100), (256, 60000), (3, 7), (1000, 1000), (64, 50000), (500, 2000)])
def test_every_tail_of_the_draw_count_weights_is_at_least_the_exact_one(b, n):
    # The mixture over the record's draw count L (given L >= 1) dominates only if it puts at
    # least the exact mass P(L >= l | L >= 1) on every set of counts l and more. Normalised pmf
    # values fell short by up to 1.4e-14 relatively (b = n = 1000).
    mix = _mixture(SampleWithReplacement(b, n)(Gaussian(1.0))._law())
    with mp.workdps(50):
        p = mp.mpf(1) / n
        eta = 1 - (1 - p) ** b
        pmf = [mp.binomial(b, j) * p ** j * (1 - p) ** (b - j) for j in range(b + 1)]
        for count in range(2, len(mix.weights) + 1):
            exact = mp.fsum(pmf[count:]) / eta
            got = mp.fsum([mp.mpf(float(x)) for x in mix.weights[count - 1:]]) + mp.mpf(mix.w_inf)
            assert got >= exact, (count, float(got / exact - 1))
        total = mp.fsum([mp.mpf(float(x)) for x in mix.weights]) + mp.mpf(mix.w_inf)
        assert abs(total - 1) <= 1e-15
