"""The finite atom law (autoacct/losses/base.py, DiscreteLoss) where a Q- or P-mass is below the
normal floats, against the pair's hockey-stick divergence evaluated in mpmath."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from closed_forms import mp_counting_pair, mp_two_point_delta
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.losses import DiscreteLoss
from autoacct.zoo import BinaryCountingExponential, Composition


def mp_counting_delta(eps_tilde: float, n: int, m: int, eps: float) -> mp.mpf:
    """delta(eps) of BinaryCountingExponential's pair (closed_forms.mp_counting_pair): the larger
    of sum_y (P(y) - e^eps Q(y))^+ over the two orders, in mpmath."""
    with mp.workdps(60):
        px, py = mp_counting_pair(eps_tilde, n, m, 60)
        scale = mp.exp(mp.mpf(eps))
        return max(sum(max(p - scale * q, 0) for p, q in zip(px, py)),
                   sum(max(q - scale * p, 0) for p, q in zip(px, py)))


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(eps_tilde=st.floats(300.0, 700.0), gap=st.one_of(st.floats(-0.1, 2.0), st.floats(-1.0, 700.0)),
       m=st.sampled_from([1, 2]))
def test_an_underflowed_q_mass_is_bracketed(eps_tilde, gap, m):
    # n = 3, m = 1: outcome 0 has P-mass e^-eps_tilde and Q-mass e^-2 eps_tilde, subnormal past
    # eps_tilde 354 and 0 past 372, which the atom sum read as mass Q cannot produce:
    # BinaryCountingExponential(400, 3, 1).delta_bounds(399) was (1.92e-174, ...) for 1.21e-174,
    # and delta_bounds(360) of (360, 3, 1) was (0, 0) for 7.8e-208. (m = 2 is the mirror pair.)
    eps = max(eps_tilde - gap, 0.0)
    lower, upper = BinaryCountingExponential(eps_tilde, 3, m).delta_bounds(eps)
    truth = mp_counting_delta(eps_tilde, 3, m, eps)
    assert mp.mpf(lower) <= truth <= mp.mpf(upper), (eps_tilde, m, eps, lower, upper, truth)


def test_faint_atoms_are_read_from_their_values():
    # Two atoms, losses 400 and -1e-3 (P-masses e^-400 and 1 - e^-400 less a bit), the first
    # one's Q-mass e^-800 underflowed to 0: its term is p (1 - e^{eps - 400}), within the bound.
    with mp.workdps(60):
        p0, v0, v1 = mp.exp(-400), mp.mpf(400), mp.mpf("-1e-3")
        p1 = 1 - p0
        q0, q1 = p0 * mp.exp(-v0), p1 * mp.exp(-v1)
    loss = DiscreteLoss(np.array([float(v1), 400.0]), np.array([float(p1), float(p0)]),
                        np.array([float(q1), float(q0)]))
    eps = np.array([0.0, 100.0, 399.0, 399.999999])
    value, error = loss.profile_with_error(eps)
    for x, val, err in zip(eps, value, error):
        with mp.workdps(60):
            truth = p0 * -mp.expm1(mp.mpf(x) - v0) + max(p1 - mp.exp(mp.mpf(x)) * q1, 0)
        assert mp.mpf(val) - mp.mpf(err) <= truth <= mp.mpf(val) + mp.mpf(err), (x, val, err, truth)
        # (the value's own rounding bound, ~1e-10, over the distance 1e-6 to it near 400)
        assert mp.mpf(err) <= (1e-9 if x <= 399.0 else 1e-3) * truth


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("via", ["pld", "phi"])
def test_an_underflowed_p_mass_keeps_a_positive_upper_end(via, k):
    # BinaryCountingExponential(74.6, 20, 5): a = -746, outcome 0 has P-mass e^-746 (read 0) at
    # loss 74.6, and delta(eps) is about k e^-746 (1 - e^{eps - 74.6}) for eps < 74.6: 1.04e-324
    # at k = 1, eps = 1. Its largest loss was taken among the atoms read positive (-e^-746), and
    # every route's upper end was 0 below the truth.
    with mp.workdps(60):
        px, py = mp_counting_pair(74.6, 20, 5, 60)
    one = BinaryCountingExponential(74.6, 20, 5)
    mech = one if k == 1 else Composition()([one], [k])
    eps = np.array([1.0, 50.0, 74.0])
    upper = np.asarray(mech.delta(eps, via=via))
    for x, up in zip(eps, upper):
        truth = max(mp_two_point_delta(tuple(px), tuple(py), k, x), mp_two_point_delta(tuple(py), tuple(px), k, x))
        assert truth > 0 and mp.mpf(up) >= truth, (via, k, x, up, truth)


@pytest.mark.parametrize("ell", [1.0, 0.1, 1.0 / 3.0, 5.555555555555555, 2.0 ** -30])
def test_purely_atomic_only_on_exact_multiples_of_the_lattice(ell):
    # Values that are the float products n ell, or whose quotients by ell round to n, are within
    # the unit roundoff of n ell: purely atomic. A value a relative 1e-11 off (the former check
    # allowed 1e-9 of ell) is not: its lower PLD would be its connect-the-dots split as it is.
    n = np.array([-7.0, -1.0, 0.0, 1.0, 3.0, 1000.0])
    p = np.full(n.size, 1.0 / n.size)
    exact = n * ell
    assert DiscreteLoss(exact, p, p * np.exp(-exact), lattice=ell).purely_atomic
    quotient = np.array([np.nextafter(v, np.inf) if np.nextafter(v, np.inf) / ell == k else v
                         for v, k in zip(exact, n)])
    assert DiscreteLoss(quotient, p, p * np.exp(-quotient), lattice=ell).purely_atomic
    off = exact.copy()
    off[4] *= 1.0 + 1e-11
    assert not DiscreteLoss(off, p, p * np.exp(-off), lattice=ell).purely_atomic
