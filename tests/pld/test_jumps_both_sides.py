"""The PLD split with a tail on both sides (autoacct/pld/jumps.py, side 0 of tail_side): the
symmetric pair of sampling without replacement (replace-one), whose losses reach far on both
sides of a bulk near 0, composed many times at tiny rates."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from closed_forms import swor_discrete_gaussian_composed_delta, swor_gaussian_composed_delta

from autoacct import AccuracyWarning
from autoacct.pld import jumps
from autoacct.zoo import (
    Composition,
    DiscreteGaussian,
    Gaussian,
    PoissonSubsample,
    SampleWithoutReplacement,
    SampleWithReplacement,
)


def _swor(q: float, sigma: float, k: int):
    return Composition()([SampleWithoutReplacement(q)(Gaussian(sigma))], [k])


def test_a_symmetric_law_has_its_tail_on_both_sides():
    # Neither side alone leaves a small bulk (the mirrored losses reach as far below 0 as the
    # sampled ones above it); both together leave 5.8% of the range at q = 1e-3, sigma = 1.
    law = SampleWithoutReplacement(1e-3)(Gaussian(1.0)).loss_parts()[0].forward
    side = jumps.tail_side(law, 10_000, 1e-20)
    assert side is not None and side.side == 0
    assert side.low < 0.0 < side.tau
    a, b = law.quantile_range(1e-20)
    assert side.share == pytest.approx((side.tau - side.low) / (b - a))
    assert side.share <= jumps.BOTH_SIDES_SHARE
    # Each tail keeps at most half of the rate's mass: k times the tails' P-mass at most the rate
    # (up to the quantiles' reading on a grid of the range, which only moves tau outward).
    m_p, _ = law.cell_masses(np.array([-math.inf, side.low, side.tau, math.inf]))
    assert 10_000 * (m_p[0] + m_p[2] + law.p_inf) <= 1.01 * jumps.TAIL_RATE
    # A one-sided law keeps its one side: the Poisson remove pair's tail is on the right.
    one = PoissonSubsample(1e-3)(Gaussian(1.0)).loss_parts()[0].forward
    assert jumps.tail_side(one, 10_000, 1e-20).side == 1


def test_a_wide_bulk_on_both_sides_does_not_pay():
    side = jumps.TailSide(0, 1.0, jumps.BOTH_SIDES_SHARE * 1.01, jumps.TAIL_RATE, -1.0)
    assert not jumps.pays(side, 100.0, 1.0, 10_000, 1e9)
    assert jumps.pays(side._replace(share=jumps.BOTH_SIDES_SHARE * 0.99), 100.0, 1.0, 10_000, 1e9)


@pytest.mark.parametrize("q, sigma, k, delta", [
    (1e-3, 1.0, 10_000, 1e-10),
    (1e-3, 0.7, 10_000, 1e-10),
    (1e-4, 0.7, 1_000_000, 1e-10),
])
def test_sampled_without_replacement_within_tol_against_saddle_point(q, sigma, k, delta):
    # One lattice capped its grid here (brackets on the pair's own eps up to 2% wide, 3 to 5 s,
    # with AccuracyWarnings). The upper end is the symmetric pair's: a saddle-point integration
    # of its k-fold law (tests/closed_forms.py) puts delta at or below the target there, and
    # above it 2 tol lower. (The lower end is that of a pair one fixed pair of datasets attains,
    # by design further below: see autoacct/subsampling/without_replacement.py.)
    m = _swor(q, sigma, k)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = m.epsilon_bounds(delta)
    assert 0.0 < lower <= upper
    assert swor_gaussian_composed_delta(q, sigma, k, upper) <= delta * (1 + 1e-5)
    assert swor_gaussian_composed_delta(q, sigma, k, upper * (1 - 2e-3)) > delta


def test_sampled_without_replacement_delta_against_saddle_point():
    q, sigma, k, eps = 1e-3, 1.0, 10_000, 1.02
    truth = swor_gaussian_composed_delta(q, sigma, k, eps)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = _swor(q, sigma, k).delta_bounds(eps)
    assert lower <= truth * (1 + 1e-5) and truth * (1 - 1e-5) <= upper <= truth * (1 + 4e-3)


def test_only_laws_with_a_density_beside_listed_atoms_split():
    # A finite atom law lists its atoms too, but they hold all its mass: a quantile threshold
    # lands on one of them (the restriction would refuse it), so it is left whole, as before.
    from autoacct.losses.base import DiscreteLoss
    p, q = np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.3, 0.2])
    finite = DiscreteLoss(np.log(p / q), p, q)
    assert not jumps.splits(finite)
    law = SampleWithoutReplacement(1e-3)(Gaussian(1.0)).loss_parts()[0].forward
    assert jumps.splits(law)
    # Its thresholds must lie clear of the atom at 0.
    assert jumps.cuttable(law, (-0.1, 0.1)) and not jumps.cuttable(law, (0.0, 0.1))


def _pair_bracket(m, delta: float) -> tuple[float, float]:
    """The PLD accountant's own bracket on eps(delta) of the mechanism's dominating pair."""
    from autoacct import routes
    acc = routes.PLD.accountant(m)
    acc.epsilon(delta, acc.eps_scale(delta), 1e-3)
    return acc._best_epsilon(delta)


def test_sampled_with_replacement_split_and_one_lattice_overlap(monkeypatch):
    # With replacement (100 of 10^4 records, sigma = 1.5, 200 runs) one lattice is within tol
    # too: both certified brackets on the symmetric pair hold its eps, so they overlap.
    def mech():
        return Composition()([SampleWithReplacement(100, 10_000)(Gaussian(1.5))], [200])
    law = mech().loss_parts()[0].forward
    assert jumps.tail_side(law, 200, 1e-20).side == 0
    split = _pair_bracket(mech(), 1e-6)
    monkeypatch.setattr(jumps, "BOTH_SIDES_SHARE", 0.0)
    one = _pair_bracket(mech(), 1e-6)
    for lo, up in (split, one):
        assert 0.0 < lo <= up <= lo * (1 + 1e-3)
    assert split[0] <= one[1] and one[0] <= split[1]


def test_sampled_with_replacement_at_a_tiny_rate_is_finite():
    # 10 of 10^5 records drawn with replacement, 10^4 runs: one lattice over the law's range of
    # 40 at a spacing of 1.1e-5 needed 3.5e6 cells a law, past the time budget, and the answer
    # was [0.047, inf] with a warning; split on both sides, the pair's bracket is within tol.
    m = Composition()([SampleWithReplacement(10, 100_000)(Gaussian(1.0))], [10_000])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = m.epsilon_bounds(1e-6)
    assert 0.0 < lower <= upper < math.inf
    lo, up = _pair_bracket(m, 1e-6)
    assert up <= upper <= up * (1 + 1e-12) and up - lo <= 1e-3 * up


def test_an_atom_law_on_both_sides_pays_over_many_cells():
    # A subsampled discrete law's symmetric pair (atoms merged onto lattices) pays at a bulk share
    # up to LOOSE_BULK_SHARE where k copies span MANY_CELLS cells or more, as its right tail does.
    side = jumps.TailSide(0, 0.02, 0.06, jumps.TAIL_RATE, -0.02)
    assert jumps.pays(side, 0.8, 0.3, 100_000, 1.6e5, atoms=True)
    assert not jumps.pays(side, 0.8, 0.3, 100_000, 1.6e5, atoms=False)
    assert not jumps.pays(side, 0.8, 0.3, 1000, 1.6e5, atoms=True)


@pytest.mark.parametrize("k", [100_000, 1_000_000])
def test_discrete_gaussian_without_replacement_against_a_bromwich_reference(k):
    # q = 1e-4, DiscreteGaussian(1), delta = 1e-10: one lattice capped its grid ([0.29996, 0.30409]
    # with 3 warnings in 1.7 s at k = 1e5; [1.00121, 1.00291], 3.2 s at 1e6). The Bromwich integral
    # of the pair's k-fold atom law (tests/closed_forms.py, built from the integers' masses) puts
    # delta above the target at the pair's lower end and at or below it at its upper end.
    q, sigma, delta = 1e-4, 1.0, 1e-10
    m = Composition()([SampleWithoutReplacement(q)(DiscreteGaussian(sigma))], [k])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lo, up = _pair_bracket(m, delta)
    assert up - lo <= 1e-3 * up
    assert swor_discrete_gaussian_composed_delta(q, sigma, k, up) <= delta * (1 + 1e-5)
    assert swor_discrete_gaussian_composed_delta(q, sigma, k, lo) >= delta * (1 - 1e-5)
