"""The profile of a weighted sum of measures (autoacct/pld/mixture.py)."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.pld import mixture


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.floats(-1e3, 1e3), st.floats(-1e4, 1e4))
def test_a_shifted_read_is_rounded_to_the_profiles_side(eps, shift):
    # Read at eps + shift: an upper profile at or below the exact sum (a profile is
    # non-increasing, so it can only read higher), a lower one at or above it, here with the
    # sum's rounding and a shift that is itself a product (count times offset) rounded.
    offset = shift / 7919.0
    moved = 7919 * offset
    exact = Fraction(eps) + 7919 * Fraction(offset)
    assert Fraction(float(mixture._shifted(np.array(eps), moved, True))) <= exact
    assert Fraction(float(mixture._shifted(np.array(eps), moved, False))) >= exact


def test_probes_of_values_one_logarithm_apart_warn_nothing():
    # q = 1e-5, sigma = 0.6, k = 1e7, delta = 1e-10 (a bracket 2e-4 wide): two values an ulp
    # apart round to one logarithm, and Lagrange's weights divided by their difference, 0, with
    # a RuntimeWarning to the user. The secant's guess serves instead.
    fs = np.array([1e-10 * (1 + 2 ** -52), 1e-10, 0.5e-10])
    assert math.log(fs[0]) == math.log(fs[1]) and fs[0] > fs[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        points = mixture._probes(np.array([1.0, 1.5, 2.0]), fs, 1.5, 2.0, 0.75e-10)
    assert points.size > 0 and np.all((points > 1.5) & (points < 2.0))
