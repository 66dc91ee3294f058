"""Lower ends of k-fold randomized response (autoacct/zoo/rr_composition.py) and of long PureDP
compositions, against the exact binomial sum of Kairouz, Oh and Viswanath (2015) in mpmath.

Lower ends are checked through the monotone inverse: lo <= eps(delta) iff delta(lo) >= delta. For
k up to a few thousand delta(lo) is the whole sum (tests/closed_forms.py, 60 digits); for k up to
2^52 it is bounded below by a part of the sum (every term is non-negative), the terms near the
tail summed in blocks each bounded below by a geometric series (the ratio of consecutive binomial
masses decreases in j), in 50 digits.
"""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from closed_forms import mp_rr_delta
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct import AccuracyWarning
from autoacct.zoo import Composition, PureDP
from autoacct.zoo.rr_composition import rr_composition_delta_lower, rr_composition_epsilon_lower


def mp_rr_delta_floor(eps0: float, k: int, eps: float, blocks: int = 4000, width: float = 6.0) -> mp.mpf:
    """A lower bound on delta(eps) of k-fold randomized response: under P the flips J ~ Bin(k, q),
    q = 1/(1 + e^eps0), the loss L_j = eps0 (k - 2j), delta = sum_{L_j > eps} P(J = j) (1 - e^(eps - L_j)).
    Only the j within ``width`` standard deviations below the largest such j are kept: the first
    256 one by one, then in blocks [a, a + B): P(J = a + i) >= P(J = a) r^i with r the smallest
    ratio P(J = j + 1) / P(J = j) = (k - j) q / ((j + 1) p) in the block (at its end), and
    1 - e^(eps - L_j) at its least there."""
    with mp.workdps(50):
        e0, e = mp.mpf(eps0), mp.mpf(eps)
        q = 1 / (1 + mp.exp(e0))
        p = 1 - q
        top = int(mp.ceil((k - e / e0) / 2)) - 1          # the largest j with L_j > eps
        while top >= 0 and e0 * (k - 2 * top) <= e:
            top -= 1
        if top < 0:
            return mp.mpf(0)
        low = max(0, top - int(width * mp.sqrt(k * p * q)))
        size = max(1, (top - low + 1) // blocks)
        log_c = mp.loggamma(k + 1)
        total, end = mp.mpf(0), top
        while end >= low:
            # One term at a time for the first 256 (where 1 - e^(eps - L_j) grows), then blocks.
            a = max(end - (size if top - end >= 256 else 1) + 1, 0)
            mass = mp.exp(log_c - mp.loggamma(a + 1) - mp.loggamma(k - a + 1) + a * mp.log(q) + (k - a) * mp.log(p))
            r = (k - (end - 1)) * q / (end * p) if end > a else mp.mpf(1)
            series = end - a + 1 if r == 1 else (r ** (end - a + 1) - 1) / (r - 1)
            total += mass * series * -mp.expm1(e - e0 * (k - 2 * end))
            end = a - 1
        return total


@settings(max_examples=40, derandomize=True, deadline=None, database=None)
@given(eps0=st.floats(1e-2, 2.0), k=st.integers(200, 3000), delta=st.floats(0.02, 0.6))
def test_lower_ends_are_below_the_binomial_sum(eps0, k, delta):
    lo = rr_composition_epsilon_lower(eps0, k, delta)
    assert lo == 0.0 or mp_rr_delta(eps0, k, lo) >= delta
    eps = np.array([0.0, 0.3 * lo, lo, 0.5 * k * eps0, k * eps0])
    for e, d in zip(eps, rr_composition_delta_lower(eps0, k, eps)):
        assert 0.0 <= d and mp.mpf(d) <= mp_rr_delta(eps0, k, float(e))


def mp_rr_delta_chernoff(eps0: float, k: int, eps: float) -> mp.mpf:
    """An upper bound on delta(eps) of k-fold randomized response: delta(eps) <= P(L > eps)
    = P(J <= j) for the largest j with L_j > eps, at most exp(-k D(j/k || q)) (Chernoff) below kq."""
    with mp.workdps(50):
        e0 = mp.mpf(eps0)
        q = 1 / (1 + mp.exp(e0))
        j = int(mp.ceil((k - mp.mpf(eps) / e0) / 2))
        a = mp.mpf(j) / k
        if a >= q:
            return mp.mpf(1)
        return mp.exp(-k * (a * mp.log(a / q) + (1 - a) * mp.log((1 - a) / (1 - q))))


@pytest.mark.parametrize("k", [2**36, 2**50, 2**52])
@pytest.mark.parametrize("eps0, delta", [(0.1, 1e-5), (0.1, 1e-3), (1.0, 1e-5)])
def test_long_pure_dp_compositions_have_a_tight_positive_lower_end(k, eps0, delta):
    # The PLD grid is capped there: the lower end was one step's eps0 (0.09998 for
    # Composition()([PureDP(0.1)], [2**50]).epsilon_bounds(1e-5), against an upper 5.6254e12),
    # and the lower end on delta at any eps below k eps0 was 0.
    m = Composition()([PureDP(eps0)], [k])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)   # (the capped grid's upper end)
        lo, up = m.epsilon_bounds(delta)
        low_delta = m.delta_bounds(np.array([lo, 0.999 * lo]))[0]
    assert mp_rr_delta_floor(eps0, k, lo) >= delta
    # The central limit's value mean + sd Phi^-1(1 - delta) of L (not certified: tightness only).
    q = 1 / (1 + math.exp(eps0))
    normal = eps0 * (k * (1 - 2 * q) + 2 * math.sqrt(k * q * (1 - q)) * math.sqrt(2) * float(mp.erfinv(1 - 2 * delta)))
    assert normal * (1 - 1e-5) <= lo <= up
    assert low_delta[0] >= delta * (1 - 1e-9) and low_delta[1] > 0.99
    for e, d in zip((lo, 0.999 * lo), low_delta):
        assert mp.mpf(float(d)) <= mp_rr_delta_chernoff(eps0, k, e)


@pytest.mark.parametrize("eps0", [1000.0, 745.0, 40.0, 1e-150, 1e-300])
def test_extreme_log_odds_give_sound_lower_ends_without_warnings(eps0):
    # eps0 = 1000: q = 1 / (1 + e^eps0) underflows to 0 and the central limit's error divided by
    # a standard deviation of 0 (ZeroDivisionError); below 1e-200 losses could be subnormal.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo = rr_composition_epsilon_lower(eps0, 2000, 0.3)
        eps = np.array([0.0, 1e-155, 3 * eps0])
        lows = rr_composition_delta_lower(eps0, 2000, eps)
    assert lo == 0.0 or mp_rr_delta(eps0, 2000, lo) >= 0.3
    for e, d in zip(eps, lows):
        assert 0.0 <= d and mp.mpf(d) <= mp_rr_delta(eps0, 2000, float(e))
