"""The terms of a split law's composition (autoacct/pld/terms.py): each term's bounds, the
shifts they are read at, and a narrow bulk bounded by Jensen's inequality."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from closed_forms import poisson_gaussian_lattice_delta, poisson_gaussian_two_step_delta
from hypothesis import given, settings
from hypothesis import strategies as st

import autoacct
from autoacct.errors import AccuracyWarning
from autoacct.pld import jumps, terms
from autoacct.pld.accountant import FFTAccountant


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.floats(-1e-3, 1e-3), st.integers(0, 10**7), st.floats(0.0, 1e-3))
def test_a_terms_shift_is_rounded_to_its_side_even_where_its_parts_cancel(jensen, copies, offset):
    # Jensen's shift minus the copies' offsets, exactly (Fractions), against the stored shift:
    # at or below it for an upper profile, at or above it for a lower one. The parts are drawn
    # so that they often nearly cancel (the sum far below either part).
    if copies and offset:
        jensen = copies * offset * (1.0 + jensen)
    exact = Fraction(jensen) - copies * Fraction(offset)
    assert Fraction(terms.term_shift(jensen, copies, offset, True)) <= exact
    assert Fraction(terms.term_shift(jensen, copies, offset, False)) >= exact


#: A record sampled at all in about one of 6,000 such runs (k q = 1.6e-4; benchmarks/sweep.py
#: case 12, rounded): q = 1.8e-5, sigma = 0.337, k = 9, delta = 5.85e-6. eps near 0.13 is
#: decided by one sampled step, and the 8 other steps' bulk composes to a spike 6e-4 wide at
#: -3e-5, just below a point of the tail's lattice (6.6e-3 apart).
_SPIKE_CASE = (1.8e-5, 0.337, 9, 5.85e-6)


def test_a_narrow_bulk_is_bounded_by_jensen_against_a_lattice_reference(monkeypatch, split_calls):
    # Re-discretised on the tail's lattice, the spike's lower PLD fell a cell short: the first
    # lower bound was 4% below the answer, and refinements reached tol (four split
    # compositions here, seven at the sweep's q, 0.54 s). By Jensen's inequality the terms'
    # lower bounds give up only the spike's spread, and the first lattice meets tol (two
    # compositions: the normal approximation's aim, then the answer's). Against an independent
    # lattice composition aligned with the spike (closed_forms, second order in its spacing:
    # 1.4e-7 of delta between spacings 2e-5 and 1e-5; the mass above its top bounds what it
    # leaves out, 1.4e-5 of delta), with 1e-5 of delta to spare at each end.
    q, sigma, k, delta = _SPIKE_CASE
    narrow = []
    real = terms._narrow

    def spy(law, copies):
        narrow.append(real(law, copies))
        return narrow[-1]
    monkeypatch.setattr(terms, "_narrow", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert upper - lower <= 1e-3 * upper
    assert narrow and all(narrow)
    assert len(split_calls) <= 2
    values, left_out = poisson_gaussian_lattice_delta(q, sigma, k, np.array([lower, upper]), 2e-5, lam=2.0,
                                                      top=8.0, points=1 << 22)
    assert left_out < 1e-4 * delta
    assert values[0] >= delta * (1 - 1e-5) and values[1] <= delta * (1 + 1e-5) + left_out


def test_jensen_terms_and_lattice_terms_bracket_each_other(monkeypatch, split_calls):
    # The same split composed with the narrow bulk's copies bounded by Jensen's inequality and
    # on the coarse lattice: both are certified, so each lower profile lies below the other's
    # upper one over the whole range, and Jensen's lower bound is the closer one at the answer
    # (a first-order gap on the lattice, 4% of eps at the first aim).
    q, sigma, k, delta = _SPIKE_CASE
    autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    args, kwargs = split_calls[-1]
    jensen_up, jensen_low = terms.split_profiles(*args, **kwargs)
    monkeypatch.setattr(terms, "_narrow", lambda law, copies: False)
    lattice_up, lattice_low = terms.split_profiles(*args, **kwargs)
    eps = np.linspace(0.0, 0.5, 501)
    assert np.all(jensen_low.delta(eps) <= lattice_up.delta(eps))
    assert np.all(lattice_low.delta(eps) <= jensen_up.delta(eps))
    assert float(lattice_low.epsilon(delta)) < float(jensen_low.epsilon(delta)) <= float(lattice_up.epsilon(delta))


@settings(max_examples=6, derandomize=True, deadline=None)
@given(log_q=st.floats(math.log(1e-5), math.log(1e-4)), sigma=st.floats(0.3, 0.45),
       log_delta=st.floats(math.log(1e-9), math.log(1e-5)))
def test_two_steps_with_a_jensen_term_never_on_the_wrong_side(log_q, sigma, log_delta):
    # Two runs of a rarely sampled law with little noise: the split's term of one tail copy
    # bounds its one bulk copy by Jensen's inequality. The exact delta (quadrature) at the
    # bracket's ends lies on either side of delta.
    q, delta = math.exp(log_q), math.exp(log_delta)
    law = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=1).loss_parts()[0].forward
    narrow = []
    real = terms._narrow

    def spy(law, copies):
        narrow.append(real(law, copies))
        return narrow[-1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(terms, "_narrow", spy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            lower, upper = FFTAccountant([(law, law, 2)]).epsilon(delta, 1.0)
    assert any(narrow)
    assert 0.0 < lower <= upper
    assert poisson_gaussian_two_step_delta(q, sigma, upper) <= delta * (1 + 1e-6)
    assert poisson_gaussian_two_step_delta(q, sigma, lower) >= delta * (1 - 1e-6)


#: A record sampled in about one of 1e5 runs of few steps, asked a tiny delta: the answer is
#: decided by one sampled step far out in the noise's tail (issue 18, calibrating at delta 1e-15).
_FAR_Q, _FAR_SIGMA = 1e-5, 1.0466


@pytest.mark.parametrize("delta", [1e-15, 1e-17])
def test_two_steps_with_a_far_term_against_quadrature(split_calls, delta):
    # The tail's window reaches losses where its mass, tilted, outweighs that near the answer:
    # the tilt is capped far below the rate at which delta falls there, so the tail is split
    # again above the answer. Within tol; the exact delta at the bracket's ends (quadrature,
    # tests/closed_forms.py) lies on either side of delta.
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=_FAR_Q, noise_multiplier=_FAR_SIGMA, steps=2).epsilon_bounds(delta)
    assert any(args[0].far is not None for args, _ in split_calls)
    assert upper - lower <= 1e-3 * upper
    assert poisson_gaussian_two_step_delta(_FAR_Q, _FAR_SIGMA, upper) <= delta * (1 + 1e-6)
    assert poisson_gaussian_two_step_delta(_FAR_Q, _FAR_SIGMA, lower) >= delta * (1 - 1e-6)


@pytest.mark.parametrize("k, delta", [(10, 1e-13), (1000, 1e-15)])
def test_a_far_term_and_the_whole_tail_bracket_each_other(monkeypatch, split_calls, k, delta):
    # The same query with the far part split off and without: both certified, so each lower
    # profile lies below the other's upper one over the whole range, and both within tol.
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        autoacct.dpsgd(sample_rate=_FAR_Q, noise_multiplier=_FAR_SIGMA, steps=k).epsilon_bounds(delta)
    args, kwargs = split_calls[-1]
    assert args[0].far is not None
    far_up, far_low = terms.split_profiles(*args, **kwargs)
    monkeypatch.setattr(jumps, "far_cut", lambda *a, **kw: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        autoacct.dpsgd(sample_rate=_FAR_Q, noise_multiplier=_FAR_SIGMA, steps=k).epsilon_bounds(delta)
    args, kwargs = split_calls[-1]
    assert args[0].far is None
    whole_up, whole_low = terms.split_profiles(*args, **kwargs)
    eps = np.linspace(0.0, 0.05, 501)
    assert np.all(far_low.delta(eps) <= whole_up.delta(eps))
    assert np.all(whole_low.delta(eps) <= far_up.delta(eps))
    f_low, f_up = float(far_low.epsilon(delta)), float(far_up.epsilon(delta))
    w_low, w_up = float(whole_low.epsilon(delta)), float(whole_up.epsilon(delta))
    assert f_up - f_low <= 1e-3 * f_up
    assert w_up - w_low <= 1e-3 * w_up
