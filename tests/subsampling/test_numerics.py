"""autoacct.subsampling.numerics: the amplified loss log(1 + q (e^x - 1)) against mpmath."""

from __future__ import annotations

import math

import mpmath
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.subsampling.numerics import log1p_q_expm1_up


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
