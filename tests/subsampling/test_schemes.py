"""The DP-SGD sampling schemes by name (autoacct.subsampling.schemes): their runs' shapes and
the validation of their public ``run``.

Reference for the shapes: the arithmetic of an epoch of t = ceil(1/q) steps (k // t whole
epochs, then k mod t steps of one more), written here without the module's helpers.
"""

from __future__ import annotations

import math
import re

import pytest

from autoacct.subsampling.schemes import SCHEMES, epoch_steps, scheme


@pytest.mark.parametrize("name", sorted(SCHEMES))
@pytest.mark.parametrize("q, sigma, k, exc, words", [
    # balls-in-bins raised ZeroDivisionError at q = 0 and q = inf, a ValueError naming nothing at
    # NaN and one naming "steps" at q = -0.5; every scheme accepted q = 2 and k = True, and
    # balls-in-bins returned counts [-1, 1] at k = -5.
    (0.0, 1.0, 10, ValueError, ("q", "0.0")),
    (math.inf, 1.0, 10, ValueError, ("q", "inf")),
    (math.nan, 1.0, 10, ValueError, ("q", "NaN")),
    (-0.5, 1.0, 10, ValueError, ("q", "-0.5")),
    (2.0, 1.0, 10, ValueError, ("q", "2.0")),
    ("0.1", 1.0, 10, TypeError, ("q", "'0.1'")),
    (0.1, 1.0, True, TypeError, ("k", "True")),
    (0.1, 1.0, -5, ValueError, ("k", "-5")),
    (0.1, 1.0, 0, ValueError, ("k", "0")),
    (0.1, 1.0, 2.5, ValueError, ("k", "2.5")),
    (0.1, 0.0, 10, ValueError, ("sigma", "0.0")),
    (0.1, "a", 10, TypeError, ("sigma", "'a'")),
])
def test_run_refuses_bad_input_naming_the_parameter_and_value(name, q, sigma, k, exc, words):
    with pytest.raises(exc) as info:
        scheme(name).run(q, sigma, k)
    message = str(info.value)
    assert message.startswith(words[0] + " "), message
    assert words[1] in message, message


@pytest.mark.parametrize("q, k", [(0.1, 25), (0.1, 30), (0.3, 2), (1 / 3, 7), (1.0, 4), (256 / 60000, 1000)])
def test_balls_in_bins_run_counts_whole_epochs_then_the_rest(q, k):
    t = round(1 / q) if abs(1 / q - round(1 / q)) <= 1e-9 / q else math.ceil(1 / q)
    mechs, counts = scheme("balls-in-bins").run(q, 1.0, k)
    expected = ([k // t] if k // t else []) + ([1] if k % t else [])
    assert counts == expected
    assert len(mechs) == len(counts)
    for name in ("poisson", "without-replacement"):
        assert scheme(name).run(q, 1.0, k)[1] == [k]


def test_epoch_steps_refuses_a_rate_whose_epoch_is_no_float_integer():
    # 1/q overflowed to inf (OverflowError from ceil) for a subnormal q; beyond 2**52 steps the
    # count is no longer exact as a float.
    assert epoch_steps(2.0 ** -52) == 2 ** 52
    for q in (5e-324, 1e-300, 2.0 ** -53):
        with pytest.raises(ValueError, match=re.escape(f"q must be at least 2**-52 = {2.0 ** -52!r}")):
            epoch_steps(q)
    with pytest.raises(ValueError, match=r"q must lie in \(0.0, 1.0\], got 0.0"):
        epoch_steps(0.0)
