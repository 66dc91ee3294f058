"""autoacct.subsampling.numerics: the amplified loss log(1 + q (e^x - 1)) against mpmath, and the
interpolation of log-moments against the Gaussian's closed form."""

from __future__ import annotations

import math

import mpmath
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.subsampling.numerics import interpolate_log_moments, log1p_q_expm1_up


@settings(max_examples=300, derandomize=True, deadline=None)
@given(log_q=st.floats(-700.0, 0.0), x=st.floats(0.0, 2000.0))
def test_log1p_q_expm1_up_is_an_upper_bound_within_a_few_roundoffs(log_q: float, x: float) -> None:
    # Past x = 700 the value is x + log q + ...: at q = 1e-300, x = 710 two terms near 700 cancel
    # to about 19, where 8 ulps of the result (dp_guarantee's slack) would not cover them.
    q = math.exp(log_q)
    if q == 0.0:
        return
    with mpmath.workdps(60):
        exact = mpmath.log1p(mpmath.mpf(q) * mpmath.expm1(mpmath.mpf(x)))
        got = log1p_q_expm1_up(q, x)
        assert got >= exact
        assert got - exact <= 1e-13 * (abs(x) + abs(log_q) + abs(exact)) + 2e-300


def test_interpolation_at_order_one_is_the_chord_slope() -> None:
    # Order 1 divided K(1) = 0 by zero. The KL divergence is the slope K'(1), at most the chord's
    # K(2): for the Gaussian (K(n) = n (n - 1) / (2 sigma^2)) the KL is 1/(2 sigma^2), K(2) twice it.
    sigma = 1.5
    got = interpolate_log_moments(lambda n: n * (n - 1) / (2 * sigma ** 2), np.array([1.0, 2.0]))
    assert got[0] >= 1.0 / (sigma ** 2) >= 1.0 / (2 * sigma ** 2)
    assert got[0] == got[1]
