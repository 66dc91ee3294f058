"""delta(eps) through eps(delta) queries (autoacct/pld/inverted.py): where a rarely sampled
law's tail decides delta, a short array of eps is answered from eps(delta) queries aimed at
each eps, within tol on the eps scale, against independent references."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from closed_forms import poisson_gaussian_lattice_delta, poisson_gaussian_two_step_delta
from hypothesis import given, settings
from hypothesis import strategies as st

import autoacct
from autoacct.errors import AccuracyWarning, BudgetWarning
from autoacct.limits import limits, predicted_seconds
from autoacct.pld import inverted
from autoacct.pld.accountant import FFTAccountant
from autoacct.pld.query import PldQuery

TOL = 1e-3


def _remove_pair(q: float, sigma: float, k: int) -> FFTAccountant:
    """k runs of the Poisson-subsampled Gaussian's remove pair alone."""
    law = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=1).loss_parts()[0].forward
    return FFTAccountant([(law, law, k)])


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The deltas of the eps(delta) queries the accountant makes, in order."""
    asked: list[float] = []
    real = FFTAccountant._epsilon

    def spy(self, delta, eps_scale, tol):
        asked.append(delta)
        return real(self, delta, eps_scale, tol)
    monkeypatch.setattr(FFTAccountant, "_epsilon", spy)
    return asked


def _met(acc: FFTAccountant, eps: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> bool:
    """The delta loop's own target: the upper bound at eps at most the lower one at
    eps (1 - tol), or within tol relatively."""
    shrunk = acc.best_delta(eps * (1 - TOL))[0]
    return bool(np.all((upper <= shrunk) | (upper - lower <= TOL * upper)))


@pytest.fixture
def loop(monkeypatch: pytest.MonkeyPatch) -> list[PldQuery]:
    """The queries of the delta loop's compositions (those without a delta)."""
    made: list[PldQuery] = []
    real = FFTAccountant.profiles

    def spy(self, h, log_eta, query=None, directions=None, lower=True):
        query = PldQuery() if query is None else query
        if query.delta is None:
            made.append(query)
        return real(self, h, log_eta, query, directions, lower)
    monkeypatch.setattr(FFTAccountant, "profiles", spy)
    return made


@pytest.mark.parametrize("q, sigma, eps", [(8.53e-4, 0.82, 0.03144), (4.5e-4, 0.435, 8.81),
                                           (2.82e-4, 1.14, 0.0804), (3e-5, 0.6, 1.0)])
def test_two_steps_against_quadrature(monkeypatch, loop, q, sigma, eps):
    # Two runs of the remove pair, where the law splits: delta(eps) from 1e-14 to 4e-6. The
    # exact delta, by quadrature (tests/closed_forms.py, accurate to about 1e-6 relatively),
    # lies inside the bracket, which meets tol on the eps scale; it came from eps(delta)
    # queries only.
    asked = _asked(monkeypatch)
    acc = _remove_pair(q, sigma, 2)
    at = np.array([eps])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = acc.delta(at, acc.eps_scale(1e-5), TOL)
    truth = poisson_gaussian_two_step_delta(q, sigma, eps)
    assert lower[0] <= truth * (1 + 1e-6) and truth * (1 - 1e-6) <= upper[0]
    assert _met(acc, at, lower, upper)
    assert 1 <= len(asked) <= 3
    assert not loop


def test_a_spike_law_against_a_lattice_reference(monkeypatch):
    # q = 1e-5, sigma = 0.6, k = 1e4 (the unsampled losses a spike narrower than a cell, the
    # answer decided by one or two sampled steps): delta at two eps, 5.9e-10 and 1.0e-10.
    # The delta loop alone put them in [2.5e-10, 9.3e-10] and [7.3e-14, 2.1e-10] after 2.8 s,
    # its grid capped at 2^22 points; through eps(delta) queries each is within tol. Against
    # an independent lattice composition (second order in its spacing, not a bound; its values
    # at spacings 8e-6, 4e-6 and 2e-6 spread over 1.2e-4 of delta here), with 2e-4 of delta
    # to spare.
    asked = _asked(monkeypatch)
    eps = np.array([0.3, 0.45441])
    m = autoacct.dpsgd(sample_rate=1e-5, noise_multiplier=0.6, steps=10_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = m.delta_bounds(eps)
    values, left_out = poisson_gaussian_lattice_delta(1e-5, 0.6, 10_000, eps, 4e-6, points=1 << 22)
    assert left_out < 1e-5 * values.min()
    assert np.all(lower <= values * (1 + 2e-4)) and np.all(values * (1 - 2e-4) <= upper + left_out)
    assert np.all(upper - lower <= TOL * upper)
    assert asked


def test_the_delta_loop_alone_is_wider(monkeypatch):
    # The same query with the eps(delta) queries turned off (no array is short enough): the
    # delta loop's bounds, certified too, overlap and are wider.
    acc = _remove_pair(9.04e-5, 0.903, 31782)
    at = np.array([0.4])
    lower, upper = acc.delta(at, acc.eps_scale(1e-5), TOL)
    assert upper[0] - lower[0] <= TOL * upper[0]
    monkeypatch.setattr(inverted, "THROUGH_POINTS", 0)
    alone = _remove_pair(9.04e-5, 0.903, 31782)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        lo, up = alone.delta(at, alone.eps_scale(1e-5), TOL)
    assert lo[0] <= upper[0] and lower[0] <= up[0]
    assert up[0] - lo[0] > 10 * (upper[0] - lower[0])


def test_no_split_no_eps_queries(monkeypatch):
    # A law that does not split (q = 0.01, sigma = 1, k = 1000) is answered by the delta loop
    # as before: no eps(delta) query is made.
    asked = _asked(monkeypatch)
    m = autoacct.dpsgd(sample_rate=0.01, noise_multiplier=1.0, steps=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        m.delta_bounds(np.array([1.0, 2.0]))
    assert not asked


def test_a_delta_below_the_floor_is_not_asked(monkeypatch):
    # q = 1.28e-5, sigma = 0.562, k = 24793 at eps 1.49, 2.99 and 5.97: delta about 2.9e-11,
    # 4.1e-14 and 1e-20. The last is not asked (an eps(1e-20) query can be slow and wide)
    # but met by the floor from the others' profiles. The delta loop alone took 2.3 s and
    # answered [2.77e-11, 2.97e-11] at the first, with a warning.
    asked = _asked(monkeypatch)
    eps = np.array([1.49267573, 2.98535145, 5.97070291])
    m = autoacct.dpsgd(sample_rate=1.2816268563814204e-05, noise_multiplier=0.5621466171358818, steps=24793)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = m.delta_bounds(eps)
    assert asked and min(asked) >= 1e-18
    assert upper[2] <= 1e-15 and np.all(upper[:2] - lower[:2] <= TOL * upper[:2])


def test_eps_zero_takes_the_delta_loop(monkeypatch):
    # eps(delta) is 0 for every delta from delta(0) on, so it aims nothing at eps = 0 (the
    # advantage calibrator's query): delta(0) is left to the delta loop.
    asked = _asked(monkeypatch)
    acc = _remove_pair(1e-5, 0.6, 10_000)
    acc.delta(np.array([0.0]), acc.eps_scale(1e-5), TOL)
    assert not asked


def test_a_long_curve_is_asked_at_anchors(monkeypatch, loop):
    # 50 eps from 0.1 to 1 (more than THROUGH_POINTS): asked at THROUGH_POINTS of them spread
    # over the curve, then at those their profiles leave short. The delta loop alone took
    # 2.0 s there, answered [0, upper] at some points and warned of a grid capped at 2^22
    # points; every point now meets tol on the eps scale from a few eps(delta) queries, and
    # the bounds overlap those of three of its points asked alone.
    asked = _asked(monkeypatch)
    acc = _remove_pair(9.04e-5, 0.903, 31782)
    eps = np.linspace(0.1, 1.0, 50)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = acc.delta(eps, acc.eps_scale(1e-5), TOL)
    assert _met(acc, eps, lower, upper)
    assert 1 <= len(asked) <= 2 * inverted.THROUGH_POINTS and not loop
    few = _remove_pair(9.04e-5, 0.903, 31782)
    lo, up = few.delta(eps[[0, 24, 49]], few.eps_scale(1e-5), TOL)
    assert np.all(lower[[0, 24, 49]] <= up) and np.all(lo <= upper[[0, 24, 49]])


def test_a_long_curve_of_a_law_that_does_not_split_takes_the_delta_loop(monkeypatch):
    # 40 eps at q = 0.01, sigma = 1, k = 1000: no anchor splits, so no eps(delta) query.
    asked = _asked(monkeypatch)
    m = autoacct.dpsgd(sample_rate=0.01, noise_multiplier=1.0, steps=1000)
    acc = FFTAccountant([(p.forward, p.backward, p.times) for p in m.loss_parts()])
    acc.delta(np.linspace(0.5, 8.0, 40), acc.eps_scale(1e-5), TOL)
    assert not asked


def test_a_budget_the_eps_queries_pass_leaves_the_rest_to_the_delta_loop(monkeypatch):
    # Under a budget too small for the eps(delta) query, its BudgetExceeded stops only that
    # try: the delta loop goes on with the rest of the budget, and the answer holds the
    # quadrature's value (with a warning, as the loop's bounds are then loose).
    q, sigma, eps = 3e-5, 0.6, 1.0
    asked = _asked(monkeypatch)
    acc = _remove_pair(q, sigma, 2)
    start = predicted_seconds()
    with limits(seconds=1e-3), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lower, upper = acc.delta(np.array([eps]), acc.eps_scale(1e-5), TOL)
    assert asked
    assert predicted_seconds() - start <= 1e-3
    truth = poisson_gaussian_two_step_delta(q, sigma, eps)
    assert lower[0] <= truth * (1 + 1e-6) and truth * (1 - 1e-6) <= upper[0]
    assert any(issubclass(w.category, (BudgetWarning, AccuracyWarning)) for w in caught)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(log_q=st.floats(-4.5, -2.5), sigma=st.floats(0.4, 1.2), log_eps=st.floats(-2.0, 1.0))
def test_two_steps_never_miss_the_quadrature(log_q, sigma, log_eps):
    # Over small rates and noises: the bracket is never NaN, ordered, and holds the exact
    # delta (quadrature, 1e-6), whichever way it was made.
    q, eps = 10.0 ** log_q, 10.0 ** log_eps
    acc = _remove_pair(q, sigma, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        lower, upper = acc.delta(np.array([eps]), acc.eps_scale(1e-5), TOL)
    assert not np.isnan(lower[0]) and not np.isnan(upper[0]) and 0.0 <= lower[0] <= upper[0] <= 1.0
    truth = poisson_gaussian_two_step_delta(q, sigma, eps)
    assert lower[0] <= truth * (1 + 1e-6) + 1e-300 and truth * (1 - 1e-6) <= upper[0]


def test_a_negligible_eps_draws_no_tilt(monkeypatch):
    # delta at eps 0.4 and 50 (q = 0.01, sigma = 1, k = 1000): the delta loop met both, the
    # second by its absolute floor (delta(50) is below 1e-170), and then tilted a composition
    # towards eps = 50 for relative accuracy there, on a window of over 2^22 points (0.3-0.5 s
    # and a capped-grid warning). The tabulated cumulants put delta(50) below the loop's tail
    # cut, so no composition is aimed at it now: the directions' Chernoff profiles bound it
    # below 1e-15, and the bounds at 0.4 overlap those of eps 0.4 asked alone, within tol.
    aims: list[float | None] = []
    real = FFTAccountant.profiles

    def spy(self, h, log_eta, query=None, directions=None, lower=True):
        query = PldQuery() if query is None else query
        aims.append(query.target)
        return real(self, h, log_eta, query, directions, lower)
    monkeypatch.setattr(FFTAccountant, "profiles", spy)
    m = autoacct.dpsgd(sample_rate=0.01, noise_multiplier=1.0, steps=1000)
    acc = FFTAccountant([(p.forward, p.backward, p.times) for p in m.loss_parts()])
    assert list(acc._negligible(np.array([0.4, 50.0]), math.log(1e-18))) == [False, True]
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = acc.delta(np.array([0.4, 50.0]), acc.eps_scale(1e-5), TOL)
    assert 50.0 not in aims
    assert upper[1] <= 1e-15 and lower[1] <= upper[1]
    alone = FFTAccountant([(p.forward, p.backward, p.times) for p in m.loss_parts()])
    lo, up = alone.delta(np.array([0.4]), alone.eps_scale(1e-5), TOL)
    assert lower[0] <= up[0] and lo[0] <= upper[0]
    assert _met(acc, np.array([0.4]), lower[:1], upper[:1])
