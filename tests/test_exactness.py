"""autoacct.exactness: bounds written as text are rounded outward, against exact decimals."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.exactness import bound_text


@pytest.mark.parametrize("x, upper, text", [(1.5159233, True, "1.51593"), (1.2823971, False, "1.28239"),
                                            (1.5159233, False, "1.51592"), (9.9999995, True, "10"),
                                            (2.5, True, "2.5"), (0.0, False, "0"), (math.inf, True, "inf")])
def test_bound_text_rounds_outward(x: float, upper: bool, text: str) -> None:
    assert bound_text(x, upper) == text


@settings(max_examples=300, derandomize=True, deadline=None)
@given(x=st.floats(min_value=1e-300, max_value=1e300), upper=st.booleans())
def test_bound_text_is_on_the_bound_side_and_within_six_digits(x: float, upper: bool) -> None:
    shown = Decimal(bound_text(x, upper))
    exact = Decimal(x)
    assert shown >= exact if upper else shown <= exact
    assert abs(shown - exact) <= exact * Decimal("1e-5")
