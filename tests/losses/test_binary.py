"""The closed-form laws of randomized response and of the leaky randomized response
(autoacct/losses/binary.py), against their profiles evaluated in mpmath."""

from __future__ import annotations

import mpmath as mp
from closed_forms import mp_leaky_rr_delta
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct import ApproxDP

_DPS = 60


def mp_leaky_delta(eps0: float, delta0: float, eps: float) -> mp.mpf:
    """delta(eps) of one run of the leaky randomized response (closed_forms.mp_leaky_rr_delta),
    for 0 <= eps the closed form delta0 + (1 - delta0) (1 - e^{eps - eps0})^+ / (1 + e^{-eps0})."""
    return mp_leaky_rr_delta(eps0, delta0, 1, eps)


def mp_leaky_eps(eps0: float, delta0: float, delta: float) -> mp.mpf:
    """The smallest eps >= 0 with delta(eps) <= delta: the closed form above solved for eps,
    eps0 + log(1 - (delta - delta0) (1 + e^{-eps0}) / (1 - delta0)) (0 where that is negative)."""
    with mp.workdps(_DPS):
        e0, d0, d = mp.mpf(eps0), mp.mpf(delta0), mp.mpf(delta)
        return max(e0 + mp.log1p(-(d - d0) * (1 + mp.exp(-e0)) / (1 - d0)), mp.mpf(0))


# Log-odds across [1, 1e4]: below ~708 the small mass e^-eps0 / (1 + e^-eps0) is a normal float,
# beyond it subnormal, beyond ~745 zero, where the atom sum read the atom at eps0 as mass Q
# cannot produce (ApproxDP(800, 0).delta_bounds(799.9) had lower end 0.99999999999977, the truth
# 0.0951625819640).
_EPS0 = st.one_of(st.floats(1.0, 1e4), st.floats(700.0, 760.0), st.sampled_from([705.0, 710.0, 712.0, 800.0]))
_DELTA0 = st.sampled_from([0.0, 1e-10, 0.1])


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(eps0=_EPS0, delta0=_DELTA0, share=st.floats(0.0, 1.0))
def test_leaky_rr_delta_bounds_bracket_the_closed_form(eps0, delta0, share):
    eps = eps0 * share if share < 1.0 else eps0 - 0.1
    lower, upper = ApproxDP(eps0, delta0).delta_bounds(eps)
    truth = mp_leaky_delta(eps0, delta0, eps)
    assert mp.mpf(lower) <= truth <= mp.mpf(upper), (eps0, delta0, eps, lower, upper, truth)
    # The closed form leaves the bracket narrow (the lower end was ~1 at 800 and 799.9).
    assert mp.mpf(upper) - mp.mpf(lower) <= 1e-9 * (1 + truth)


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(eps0=_EPS0, delta0=_DELTA0, share=st.floats(0.01, 0.99))
def test_leaky_rr_epsilon_bounds_bracket_the_closed_form(eps0, delta0, share):
    # delta between delta0 and the profile at 0, where eps(delta) is positive.
    top = float(mp_leaky_delta(eps0, delta0, 0.0))
    delta = delta0 + share * (top - delta0)
    truth = mp_leaky_eps(eps0, delta0, delta)
    m = ApproxDP(eps0, delta0)
    for via in ("auto", "pld"):
        lower, upper = m._epsilon_pairs(delta, via, None)
        assert mp.mpf(lower) <= truth <= mp.mpf(upper), (via, eps0, delta0, delta, lower, upper, truth)


def test_leaky_rr_at_800_is_read_off_the_closed_form():
    # The probe's cases: the atom sum gave delta lower end 0.99999999999977 at 799.9 and the PLD
    # route eps lower end 799.9999999999417 at delta 0.5 (truth 799.30685281944005).
    m = ApproxDP(800.0, 0.0)
    lower, upper = m.delta_bounds(799.9)
    assert mp.mpf(lower) <= mp_leaky_delta(800.0, 0.0, 799.9) <= mp.mpf(upper)
    for via in ("auto", "pld"):
        lower, upper = m._epsilon_pairs(0.5, via, None)
        assert mp.mpf(lower) <= mp_leaky_eps(800.0, 0.0, 0.5) <= mp.mpf(upper)
