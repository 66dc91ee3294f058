"""The bounded-resource contract: queries stay within the memory budget and say so.

No timing asserts: the time budget counts the predicted seconds of a query's grid steps
(not the wall clock), so a budget below the first step's prediction is deterministic.
"""

from __future__ import annotations

import math
import tracemalloc
import warnings

import numpy as np
import pytest

import autoacct
from autoacct import BudgetWarning, Composition, Gaussian, PoissonSubsample, RandomizedResponse
from autoacct.limits import Limits, current, limits, set_limits
from autoacct.pld import FFTAccountant


def _accountant(q: float = 0.01, sigma: float = 1.0, k: int = 1000) -> FFTAccountant:
    m = Composition()([PoissonSubsample(q)(Gaussian(sigma))], [k])
    return FFTAccountant([(p.forward, p.backward, p.times) for p in m.loss_parts()])


def _reference(delta: float) -> tuple[float, float]:
    acc = _accountant()
    return acc.epsilon(delta, acc.eps_scale(delta))


def test_tiny_memory_budget_returns_valid_bracket_without_allocating() -> None:
    lo_ref, up_ref = _reference(1e-6)
    acc = _accountant()
    tracemalloc.start()
    try:
        with limits(memory=1e5), pytest.warns(BudgetWarning, match="memory budget"):
            lo, up = acc.epsilon(1e-6, acc.eps_scale(1e-6))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Nothing affordable but the two directions' Chernoff bounds (no FFT, laws on a lattice
    # 4 times coarser), which order them: a lower end of 0, an upper end from those bounds
    # (above the reference's), and no grid was allocated.
    assert lo == 0.0 and up_ref <= up < math.inf
    assert peak < 2e6


def test_budget_met_midway_keeps_certified_bracket() -> None:
    lo_ref, up_ref = _reference(1e-6)
    acc = _accountant()
    with limits(memory=1e5), pytest.warns(BudgetWarning):
        acc.epsilon(1e-6, acc.eps_scale(1e-6), tol=1e-9)
    # A loose answer first, then a tighter tol under a budget that affords nothing more:
    coarse = acc.epsilon(1e-6, acc.eps_scale(1e-6), tol=0.5)
    with limits(memory=acc.held_bytes() + 1.0), pytest.warns(BudgetWarning, match="tol=1e-09"):
        lo, up = acc.epsilon(1e-6, acc.eps_scale(1e-6), tol=1e-9)
    assert lo <= lo_ref + 1e-12 and up >= up_ref - 1e-12
    assert coarse[0] <= lo and up <= coarse[1]
    assert math.isfinite(up)


def test_delta_and_tradeoff_under_tiny_budget() -> None:
    acc = _accountant()
    eps = np.array([0.5, 1.0, 2.0])
    with limits(memory=1e5), pytest.warns(BudgetWarning):
        lo, up = acc.delta(eps, acc.eps_scale(1e-6))
    assert np.all(lo == 0.0) and np.all(up == 1.0)
    # A curve reads the upper PLDs alone, which fit the budget on a capped grid for one
    # direction (the other is stopped, and bounded by its inverse): a lower bound on the
    # curve composed without the budget, and not the trivial one.
    alpha = np.array([0.0, 1e-3, 0.5, 1.0])
    ref = _accountant().tradeoff(alpha, acc.eps_scale(1e-6))
    with limits(memory=1e5), pytest.warns(BudgetWarning):
        curve = acc.tradeoff(alpha, acc.eps_scale(1e-6))
    assert np.all(curve <= ref) and curve[2] > 0.9 * ref[2]


def test_time_budget_stops_before_the_first_step() -> None:
    acc = _accountant()
    with limits(seconds=1e-12), pytest.warns(BudgetWarning, match="time budget"):
        lo, up = acc.epsilon(1e-6, acc.eps_scale(1e-6))
    assert lo <= up


def test_public_query_falls_back_to_rdp_under_tiny_budget() -> None:
    m = Composition()([PoissonSubsample(0.01)(Gaussian(1.0))], [1000])
    ref_lo, ref_up = Composition()([PoissonSubsample(0.01)(Gaussian(1.0))], [1000]).epsilon_bounds(1e-6)
    with limits(memory=1e5), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lo, up = m.epsilon_bounds(1e-6)
    assert any(issubclass(w.category, BudgetWarning) for w in caught)
    assert lo <= ref_lo and ref_up <= up < math.inf


def test_grid_is_capped_by_the_memory_budget() -> None:
    from autoacct.pld.compose import N_MAX, max_window
    from autoacct.pld.grid import MAX_CELLS, max_cells
    assert max_cells() <= MAX_CELLS and max_window() == N_MAX
    with limits(memory=1e8):
        assert max_cells() * 224 <= 0.5e8 and max_window() * 80 <= 0.5e8
    with limits(memory=math.inf):
        assert max_cells() == MAX_CELLS


def test_context_manager_restores_previous_values() -> None:
    before = current()
    with limits(memory=2e9, seconds=60) as inner:
        assert current() == inner == Limits(2e9, 60.0)
        with limits(seconds=5):
            assert current() == Limits(2e9, 5.0)
        assert current() == inner
    assert current() == before
    with pytest.raises(RuntimeError), limits(memory=3e9):
        raise RuntimeError("inside")
    assert current() == before


def test_set_limits_is_global_and_returns_previous() -> None:
    before = current()
    try:
        old = set_limits(memory=5e8)
        assert old == before and current() == Limits(5e8, before.seconds)
        with limits(memory=1e10):
            assert current().memory == 1e10
        assert current().memory == 5e8
    finally:
        set_limits(before.memory, before.seconds)
    assert current() == before


@pytest.mark.parametrize("kwargs, name", [({"memory": 0}, "memory"), ({"memory": -1e9}, "memory"),
                                          ({"memory": float("nan")}, "memory"), ({"memory": "1GB"}, "memory"),
                                          ({"memory": True}, "memory"), ({"seconds": 0.0}, "seconds"),
                                          ({"seconds": -3}, "seconds"), ({"seconds": float("nan")}, "seconds")])
def test_bad_budget_values_raise_value_error_naming_parameter(kwargs: dict, name: str) -> None:
    before = current()
    with pytest.raises(ValueError, match=name), limits(**kwargs):
        pass
    with pytest.raises(ValueError, match=name):
        set_limits(**kwargs)
    assert current() == before


def test_time_budget_is_deterministic() -> None:
    # The same query under the same budget gives the same bounds, whatever the load.
    answers = set()
    for _ in range(2):
        acc = _accountant()
        with limits(seconds=0.05), warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetWarning)
            answers.add(acc.epsilon(1e-6, acc.eps_scale(1e-6), tol=1e-9))
    assert len(answers) == 1


def test_exported() -> None:
    assert autoacct.limits is limits and autoacct.set_limits is set_limits
    with autoacct.limits(memory=math.inf, seconds=math.inf):
        assert RandomizedResponse(0.75).epsilon(1e-6) >= 0.0


def _rr_delta(p: float, k: int, eps: float) -> float:
    """Exact delta(eps) of k-fold randomized response (truthful with probability p)."""
    from scipy import stats
    e0 = math.log(p / (1 - p))
    i = np.arange(k + 1)
    loss = (k - 2 * i) * e0                    # i of the k answers flipped
    pm = stats.binom.pmf(i, k, 1 - p)
    qm = stats.binom.pmf(i, k, p)
    return float(np.sum(np.where(loss > eps, pm - math.exp(eps) * qm, 0.0)))


@pytest.mark.parametrize("seconds", [1e-9, 1e-6, 1e-3, 0.05])
def test_budget_stopped_bracket_contains_the_truth(seconds: float) -> None:
    p, k = 0.52, 3000
    m = Composition()([RandomizedResponse(p)], [k])
    acc = FFTAccountant([(q.forward, q.backward, q.times) for q in m.loss_parts()])
    with limits(seconds=seconds), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lo, up = acc.epsilon(1e-6, acc.eps_scale(1e-6), tol=1e-6)
        d_lo, d_up = acc.delta(np.array([1.0]), acc.eps_scale(1e-6), tol=1e-6)
    # The smallest budget affords no FFT; larger ones may finish (the lattice is exact).
    assert any(issubclass(w.category, BudgetWarning) for w in caught) or seconds > 1e-6
    assert up == math.inf or _rr_delta(p, k, up) <= 1e-6 * (1 + 1e-9)
    assert lo == 0.0 or _rr_delta(p, k, lo) >= 1e-6 * (1 - 1e-9)
    truth = _rr_delta(p, k, 1.0)
    assert d_lo[0] <= truth * (1 + 1e-9) and truth <= d_up[0] * (1 + 1e-9)


def test_phi_route_answers_by_chernoff_when_its_spectrum_is_over_budget() -> None:
    m = Composition()([PoissonSubsample(0.01)(Gaussian(1.0))], [1000])
    ref = m.epsilon_bounds(1e-6)
    with limits(memory=1e5), pytest.warns(BudgetWarning, match="Chernoff"):
        eps = m.epsilon(1e-6, via="phi")
        d = m.delta(1.0, via="phi")
    assert ref[1] <= eps < math.inf
    assert m.delta(1.0) <= d <= 1.0


def test_an_answer_cut_short_by_the_budget_is_asked_again_under_a_larger_one():
    # The cache key holds the budget: raising it after a BudgetWarning must not return the
    # loose answer cached under the small one.
    import warnings

    from autoacct import limits
    from autoacct.zoo import Composition, Gaussian, PoissonSubsample
    m = Composition()([PoissonSubsample(0.01)(Gaussian(1.0))], [1000])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with limits(memory=1e5):
            lo_small, up_small = m.epsilon_bounds(1e-5)
    lo, up = m.epsilon_bounds(1e-5)
    assert up - lo <= 1e-3 * up < up_small - lo_small


def test_thousand_distinct_steps_fit_the_default_budget():
    # 1000 distinct DP-SGD steps (the benchmark's heterogeneous run): each further component of
    # one composition was predicted to cost a whole composition's time per point (7.2 s
    # predicted for 1.96 s measured), so the default 10 s budget stopped the query at [0, inf]
    # and the auto policy spent minutes on other routes. The bracket must be that of one
    # lattice, within tol, with no budget warning; the truth lies between the compositions
    # of the smallest-rate, largest-noise and largest-rate, smallest-noise steps.
    steps = [(0.005 + 0.015 * ((i * 7919) % 1000) / 999, 0.8 + 1.2 * ((i * 104729) % 1000) / 999)
             for i in range(1000)]
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetWarning)
        lower, upper = m.epsilon_bounds(1e-5)
    assert upper - lower <= 1e-3 * upper
    least = Composition()([PoissonSubsample(0.005)(Gaussian(2.0))], [1000]).epsilon(1e-5)
    most = Composition()([PoissonSubsample(0.02)(Gaussian(0.8))], [1000]).epsilon_bounds(1e-5)[0]
    assert least <= upper and lower <= most


def test_a_law_costing_more_per_cell_is_charged_for_it() -> None:
    """A mixture's cell masses cost the sum of its components' (``PrivacyLoss.cell_cost``): 10 runs
    of a Gaussian with noise multiplier 0.01 sampled with replacement (a mixture over the
    record's multiplicities) composed with a without-replacement step took 40 s of CPU on a
    predicted 10 (the long property run). Charged for its 24 components, the discretisation is
    refused before it starts, with a BudgetWarning and a valid bracket."""
    from autoacct import SampleWithoutReplacement, SampleWithReplacement
    from autoacct.pld.lawcache import law_cache

    m = Composition()([Composition()([SampleWithoutReplacement(1e-24)(Gaussian(10000.0))], [11]),
                       Composition()([SampleWithReplacement(240, 20265)(Gaussian(0.01))], [10])], [1, 1])
    costs = [(p.forward.cell_cost, p.backward.cell_cost) for p in m.loss_parts()]
    assert costs[0] == (2.0, 2.0) and costs[1][0] > 10
    made = law_cache().misses
    with pytest.warns(BudgetWarning, match="discretising"):
        lo, up = m.epsilon_bounds(3.33860266145879e-05)
    assert law_cache().misses == made and 0.0 <= lo <= up
