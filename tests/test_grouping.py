"""Grouping the distinct steps of long schedules (autoacct.grouping, Mechanism.snap,
ComposedMechanism.grouped and the PLD route's use of them): moved steps dominate (or are
dominated by) the originals, and the grouped bracket contains the exact one."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct import AccuracyWarning, BudgetWarning, grouping, limits, routes
from autoacct.grouping import RATIOS, group, snap_value
from autoacct.limits import predicted_seconds
from autoacct.mechanism import Mechanism
from autoacct.zoo import Composition, Gaussian, Laplace, PoissonSubsample


@pytest.mark.parametrize("x", [1e-300, 3.7e-6, 0.01, 0.8, 1.0, 1.37, 2.0, 55.5, 1e250])
@pytest.mark.parametrize("ratio", [RATIOS[0], 2.0 ** 0.25, 2.0])
def test_snap_value_lands_on_the_grid_on_the_asked_side(x: float, ratio: float) -> None:
    up, down = snap_value(x, ratio, True), snap_value(x, ratio, False)
    assert down <= x <= up
    assert up <= x * ratio * (1 + 1e-12) and down >= x / ratio * (1 - 1e-12)
    # Points of the grid stay where they are.
    assert snap_value(up, ratio, True) == up and snap_value(down, ratio, False) == down


def test_ratios_run_from_fine_to_coarse() -> None:
    assert list(RATIOS) == sorted(RATIOS) and RATIOS[-1] == 2.0 and RATIOS[0] < 1.0002


def test_moved_subsampled_gaussians_dominate_and_are_dominated() -> None:
    # A single step has closed-form profiles: the moved steps' certified bounds must sit on the
    # right side of the original's at every eps.
    m = PoissonSubsample(0.0123)(Gaussian(1.37))
    eps = np.array([0.0, 0.05, 0.2, 1.0, 3.0])
    lo, up = m.delta_bounds(eps)
    for direction in (True, False):
        moved = m.snap(1.1, direction)
        assert moved is not None
        key, make = moved
        other = make()
        assert key == m.snap(1.1, direction)[0]  # type: ignore[index]
        o_lo, o_up = other.delta_bounds(eps)
        if direction:
            assert other.params["PoissonSubsample.q"] >= 0.0123 and other.params["Gaussian.sigma"] <= 1.37
            assert np.all(o_lo >= up)
        else:
            assert other.params["PoissonSubsample.q"] <= 0.0123 and other.params["Gaussian.sigma"] >= 1.37
            assert np.all(o_up <= lo)


def test_mechanisms_without_a_grid_are_not_moved() -> None:
    assert Laplace(1.0).snap(1.1, True) is None
    assert PoissonSubsample(1.0)(Gaussian(1.0)).snap(1.1, True) is None
    assert PoissonSubsample(0.1)(Laplace(1.0)).snap(1.1, True) is None


def _steps(n: int) -> list[tuple[float, float]]:
    return [(0.005 + 0.015 * ((i * 7) % n) / (n - 1), 0.8 + 1.2 * ((i * 11) % n) / (n - 1)) for i in range(n)]


def test_group_merges_equal_moved_steps_within_the_limit() -> None:
    children = [PoissonSubsample(q)(Gaussian(s)) for q, s in _steps(60)]
    out = group(children, [2] * 60, True, 12)
    assert out is not None
    moved, counts, ratio = out
    assert len(moved) <= 12 and sum(counts) == 120 and ratio in RATIOS
    # The finest grid that fits: the next finer one leaves more than 12 distinct steps.
    finer = RATIOS[RATIOS.index(ratio) - 1]
    assert len({c.snap(finer, True)[0] for c in children}) > 12  # type: ignore[index]
    assert group([*children, Laplace(1.0)], [1] * 61, True, 12) is None


def _grouped_schedule(monkeypatch: pytest.MonkeyPatch, steps: list[tuple[float, float]]) -> Mechanism:
    """The schedule ``steps``, with the route's thresholds lowered so that it is grouped."""
    monkeypatch.setattr(grouping, "GROUP_ABOVE", 20)
    monkeypatch.setattr(grouping, "GROUPS_MOST", 16)
    monkeypatch.setattr(grouping, "GROUPS_FEWEST", 8)
    return Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])


def _grid_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught
            if issubclass(w.category, AccuracyWarning) and "parameter grid" in str(w.message)]


def test_grouped_bounds_are_refined_exactly_where_the_budget_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under the default budget the grouped bracket (wider than tol on a grid of ratio 2) is
    # intersected with the exact composition's: the answer is the tighter end of each.
    steps = _steps(60)
    exact = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    e_lo, e_up = routes.epsilon_bounds(exact, 1e-5, "pld", 1e-3)
    eps = np.array([0.5, 1.0, 2.0])
    d_lo, d_up = routes.delta_bounds(exact, eps, "pld", 1e-3)
    beta = routes.tradeoff(exact, np.array([1e-3, 0.1]), "pld")
    m = _grouped_schedule(monkeypatch, steps)
    pair = routes.ROUTES["pld"].grouped(m)  # type: ignore[attr-defined]
    assert pair is not None and pair.distinct == 60
    assert len(pair.above.children) <= 16 and len(pair.below.children) <= 16
    g_lo = routes.epsilon_bounds(pair.below, 1e-5, "pld", 1e-3)[0]
    g_up = routes.epsilon_bounds(pair.above, 1e-5, "pld", 1e-3)[1]
    assert 0.0 < g_lo < e_lo <= e_up < g_up and g_up - g_lo > 1e-3 * g_up
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert routes.epsilon_bounds(m, 1e-5, "pld", 1e-3) == (max(g_lo, e_lo), min(g_up, e_up))
        gd_lo, gd_up = routes.delta_bounds(m, eps, "pld", 1e-3)
        assert np.all(gd_lo >= d_lo) and np.all(gd_up <= d_up) and np.all(gd_lo <= gd_up)
        np.testing.assert_array_equal(routes.tradeoff(m, np.array([1e-3, 0.1]), "pld"), beta)
    assert not _grid_warnings(caught)


def test_grouped_bounds_say_what_budget_the_exact_composition_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    # The budget's seconds are predicted ones (deterministic): measured here on a fresh
    # schedule, one budget is set that fits the grouped bounds but not the exact composition.
    steps = _steps(60)
    probe = _grouped_schedule(monkeypatch, steps)
    start = predicted_seconds()
    routes.epsilon_bounds(probe, 1e-5, "pld", 1e-3)
    both = predicted_seconds() - start
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    pair = routes.ROUTES["pld"].grouped(m)  # type: ignore[attr-defined]
    start = predicted_seconds()
    g_lo = routes.epsilon_bounds(pair.below, 1e-5, "pld", 1e-3)[0]
    g_up = routes.epsilon_bounds(pair.above, 1e-5, "pld", 1e-3)[1]
    grouped = predicted_seconds() - start
    assert 0.0 < grouped < both
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    with warnings.catch_warnings(record=True) as caught, limits(seconds=grouped + 0.5 * (both - grouped)):
        warnings.simplefilter("always")
        lo, up = routes.epsilon_bounds(m, 1e-5, "pld", 1e-3)
    assert (lo, up) == (g_lo, g_up)
    (msg,) = _grid_warnings(caught)
    assert "more than the time budget left" in msg and "autoacct.limits(seconds=...)" in msg


def test_a_schedule_whose_exact_composition_the_budget_stops_is_bounded_through_the_grid(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Below GROUP_ABOVE the steps are composed exactly first. Under a budget that stops that
    # composition (2,000 distinct DP-SGD steps under the default one answered [0, inf]), the
    # route bounds them through the grid as well and answers the intersection, warning that
    # the exact composition stopped. The budget is set from predicted seconds measured here.
    steps = _steps(60)
    exact = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    start = predicted_seconds()
    e_lo, e_up = routes.epsilon_bounds(exact, 1e-5, "pld", 1e-3)
    whole = predicted_seconds() - start
    m = _grouped_schedule(monkeypatch, steps)
    pair = routes.ROUTES["pld"].grouped(m)  # type: ignore[attr-defined]
    start = predicted_seconds()
    g_lo = routes.epsilon_bounds(pair.below, 1e-5, "pld", 1e-3)[0]
    g_up = routes.epsilon_bounds(pair.above, 1e-5, "pld", 1e-3)[1]
    each = predicted_seconds() - start
    assert each < whole / 2
    monkeypatch.setattr(grouping, "GROUP_ABOVE", 2000)
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    assert routes.ROUTES["pld"].grouped(m) is None  # type: ignore[attr-defined]
    with warnings.catch_warnings(record=True) as caught, limits(seconds=each):
        warnings.simplefilter("always")
        lo, up = routes.epsilon_bounds(m, 1e-5, "pld", 1e-3)
    # The exact composition stopped with a bracket at least as wide as the grid's; its
    # BudgetWarning gives way to the grid's warning (the grouped compositions fit).
    assert g_lo <= lo < e_lo <= e_up < up <= g_up and up - lo <= g_up - g_lo
    (msg,) = _grid_warnings(caught)
    assert "stopped at the time budget" in msg
    assert not any(issubclass(w.category, BudgetWarning) for w in caught)
    # delta: the same, where each composition's own budget warnings stay.
    d_lo, d_up = routes.delta_bounds(exact, np.array([1.0]), "pld", 1e-3)
    with warnings.catch_warnings(record=True) as caught, limits(seconds=each):
        warnings.simplefilter("always")
        b_lo, b_up = routes.delta_bounds(m, np.array([1.0]), "pld", 1e-3)
    assert 0.0 <= b_lo[0] <= d_lo[0] <= d_up[0] <= b_up[0] < 1.0
    assert any("stopped at the time budget" in msg for msg in _grid_warnings(caught))


def test_moves_past_the_float_range_are_refused() -> None:
    # A noise multiplier moved up past the largest float, or down below 1e-300, is no mechanism.
    assert Gaussian(1.7e308).snap(1.5, False) is None
    assert Gaussian(1e-300).snap(1.5, True) is None
    assert snap_value(1.7e308, 1.5, True) == math.inf


def test_a_tradeoff_curve_the_budget_stops_comes_from_the_dominating_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    # The dominating grouped steps' curve is below the schedule's: where the budget stops the
    # exact composition's curve (zero, the trivial lower bound, where no profile was made),
    # the route answers the larger of the two. The budget is the grid curve's predicted seconds.
    steps, fpr = _steps(60), np.array([1e-3, 0.1])
    exact = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    beta = routes.tradeoff(exact, fpr, "pld")
    m = _grouped_schedule(monkeypatch, steps)
    pair = routes.ROUTES["pld"].grouped(m)  # type: ignore[attr-defined]
    start = predicted_seconds()
    grid = routes.tradeoff(pair.above, fpr, "pld")
    each = predicted_seconds() - start
    monkeypatch.setattr(grouping, "GROUP_ABOVE", 2000)
    m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
    with warnings.catch_warnings(record=True) as caught, limits(seconds=each * 1.01):
        warnings.simplefilter("always")
        got = routes.tradeoff(m, fpr, "pld")
    assert np.all(0.0 < grid) and np.all(grid <= got) and np.all(got <= beta)
    (msg,) = _grid_warnings(caught)
    assert "stopped at the time budget" in msg



_EXACT_60: dict[str, tuple[float, float]] = {}


@settings(max_examples=8, derandomize=True, deadline=None, database=None)
@given(seconds=st.floats(-3.0, 0.5).map(lambda x: 10.0 ** x), grid_first=st.booleans())
def test_bounds_through_groups_hold_the_truth_under_any_budget(seconds: float, grid_first: bool) -> None:
    # Whatever the budget stops (the grouped compositions, the exact one, both, neither) and
    # in either order, the answer holds the truth: it meets the certified exact bracket of the
    # unlimited query, and it is never NaN or inverted.
    steps = _steps(60)
    if not _EXACT_60:
        exact = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
        _EXACT_60["eps"] = routes.epsilon_bounds(exact, 1e-5, "pld", 1e-3)
    e_lo, e_up = _EXACT_60["eps"]
    saved = grouping.GROUP_ABOVE, grouping.GROUPS_MOST, grouping.GROUPS_FEWEST
    grouping.GROUP_ABOVE, grouping.GROUPS_MOST, grouping.GROUPS_FEWEST = (20 if grid_first else 2000), 16, 8
    try:
        m = Composition()([PoissonSubsample(q)(Gaussian(s)) for q, s in steps])
        with warnings.catch_warnings(), limits(seconds=seconds):
            warnings.simplefilter("ignore")
            lo, up = routes.epsilon_bounds(m, 1e-5, "pld", 1e-3)
    finally:
        grouping.GROUP_ABOVE, grouping.GROUPS_MOST, grouping.GROUPS_FEWEST = saved
    assert not (math.isnan(lo) or math.isnan(up))
    assert 0.0 <= lo <= e_up and e_lo <= up and lo <= up
