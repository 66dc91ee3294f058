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



#: (mechanism, eps just at or below its computed top loss, its pair (P, Q) as exact rationals of
#: the parameters) found by a review: KaryRandomizedResponse(p, 2) puts 1 - p/2 on the input
#: (Q mirrors it); DiscreteLaplace(3, sensitivity 2) has top loss 2/3 with P-mass 1/(1 + r),
#: r = e^(-1/3), and Q-mass e^(-2/3) times that; DiscretePair's masses are its own.
_TOP_CASES = {
    "kary": ("KaryRandomizedResponse", (0.4222598569767717, 2), 1.3181279136042379),
    "discrete-laplace": ("DiscreteLaplace", (3.0,), 0.6666666666666666),
    "pair": ("DiscretePair", ([0.5, 0.27620696249543847, 0.22379303750456153],
                              [0.24213118193378447, 0.5, 0.25786881806621553]), 0.7251284450280528),
}


def _exact_delta(case: str, eps: float) -> float:
    """sum_i (p_i - e^eps q_i)_+ of the case's pair in 60 digits."""
    with mp.workdps(60):
        e = mp.e ** mp.mpf(eps)
        if case == "kary":
            keep = 1 - mp.mpf(_TOP_CASES[case][1][0]) / 2
            pairs = [(keep, 1 - keep), (1 - keep, keep)]
        elif case == "discrete-laplace":
            r = mp.e ** (-mp.mpf(1) / 3)
            top = 1 / (1 + r)
            pairs = [(top, top * mp.e ** (-mp.mpf(2) / 3))]
        else:
            p, q = _TOP_CASES[case][1]
            pairs = list(zip(map(mp.mpf, p), map(mp.mpf, q)))
        return float(sum(max(a - e * b, 0) for a, b in pairs))


@pytest.mark.parametrize("via", ["auto", "pld", "phi"])
@pytest.mark.parametrize("case", sorted(_TOP_CASES))
def test_one_run_read_at_its_computed_top_loss_is_not_below_the_truth(case, via):
    # Each law's top loss is computed in floats (log1p of a quotient, step / t, a log-ratio)
    # and sits at or just below the true one: read there as exact, delta came out 0 on every
    # route where the truth is 1e-16 to 2e-17 (only faint atoms' values were taken as uncertain).
    import autoacct.zoo as zoo

    name, args, eps = _TOP_CASES[case]
    truth = _exact_delta(case, eps)
    assert truth > 0.0
    assert float(getattr(zoo, name)(*args, **({"sensitivity": 2} if case == "discrete-laplace" else {}))
                 .delta(eps, via=via)) >= truth
