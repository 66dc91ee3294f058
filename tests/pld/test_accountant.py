"""The FFT accountant's refinement passes (autoacct/pld/accountant.py)."""

from __future__ import annotations

import gc
import math
import warnings
import weakref

import numpy as np
import pytest
from closed_forms import (
    poisson_discrete_gaussian_composed_delta,
    poisson_gaussian_composed_delta,
    poisson_gaussian_deltas,
    poisson_kary_rr_composed_delta,
    poisson_laplace_composed_delta,
    rr_eps_closed,
)

import autoacct
from autoacct import routes
from autoacct.errors import AccuracyWarning
from autoacct.pld import accountant, splitting
from autoacct.pld.accountant import FFTAccountant


def test_a_settled_direction_is_not_composed_again(monkeypatch):
    # Sweep case 59 of benchmarks/sweep.py: the normal approximation puts the smaller
    # direction first, and the first pass leaves the bracket at 2.5e-3 wide. Its second pass
    # must refine the larger direction only: the smaller one's upper bound is already below
    # the larger one's lower bound, so no finer grid of it can move eps. Every composition
    # is asked for a direction that is not settled, and the answer is within tol.
    q, sigma, k, delta = 1.2e-05, 0.92, 3632059, 7.44e-11
    settled = []
    real = FFTAccountant.aimed_profiles

    def spy(self, h, log_eta, query, directions, grid_tol, lower=True):
        settled.extend(d for d in directions if self._settled(d, delta))
        return real(self, h, log_eta, query, directions, grid_tol, lower)
    monkeypatch.setattr(FFTAccountant, "aimed_profiles", spy)
    lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert not settled
    assert upper - lower <= 1e-3 * upper


def _passes(monkeypatch, q, sigma, k, delta, weigh=True):
    """The passes of one eps(delta) query at the default tol, in order, each as (direction,
    kind), kind "full" (fine grid, both bounds), "upper" (fine grid, upper PLDs only) or
    "coarse" (grid tolerance 16 tol, upper PLDs only); and its bracket. Without ``weigh``
    every second direction gets its coarse pass."""
    passes = []
    real = FFTAccountant.aimed_profiles

    def spy(self, h, log_eta, query, directions, grid_tol, lower=True):
        passes.extend((d, "coarse" if grid_tol > 1e-3 else "full" if lower else "upper") for d in directions)
        return real(self, h, log_eta, query, directions, grid_tol, lower)
    monkeypatch.setattr(FFTAccountant, "aimed_profiles", spy)
    if not weigh:
        monkeypatch.setattr(FFTAccountant, "_coarse_may_settle", lambda self, *args: True)
    bounds = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    return passes, bounds


#: Sweep case 5 of benchmarks/sweep.py: the two directions' answers are 0.15% apart (0.019445
#: and 0.019417); their Chernoff bounds, within 0.2%, put the remove direction (0) first.
_CLOSE = (4.279119921370207e-05, 7.385291564527815, 323328, 1.165760548553726e-12)


def test_a_coarse_pass_is_skipped_where_the_directions_are_close(monkeypatch):
    # A coarse pass, about 4 tol wide, cannot settle the second direction below the first
    # one's lower bound: it goes to the fine grid at once, its upper PLDs alone composed
    # (the first direction's lower bound leaves the bracket within tol). The bracket is the
    # one the coarse pass would have led to.
    passes, bounds = _passes(monkeypatch, *_CLOSE)
    assert set(passes) == {(0, "full"), (1, "upper")}
    assert bounds[1] - bounds[0] <= 1e-3 * bounds[1]
    with monkeypatch.context() as m:
        passes_old, bounds_old = _passes(m, *_CLOSE, weigh=False)
    assert (1, "coarse") in passes_old  # the pass skipped was wasted
    assert bounds == bounds_old


def test_the_second_direction_composes_its_lower_bound_where_it_leads(monkeypatch):
    # Put first by mistake, the smaller direction's bracket cannot bound eps from below: the
    # other one, composed upper-only, leads, and its lower PLDs are then composed on the same
    # grid (no finer pass). The bracket is the one of the right order.
    right = _passes(monkeypatch, *_CLOSE)[1]
    with monkeypatch.context() as m:
        m.setattr(FFTAccountant, "_larger_first", lambda self, *args: [1, 0])
        passes, bounds = _passes(m, *_CLOSE)
    assert passes[0] == (1, "full") and (0, "upper") in passes and (0, "full") in passes
    assert bounds[1] - bounds[0] <= 1e-3 * bounds[1]
    # (its profiles are aimed at the first direction's answer, so their tilt differs a little)
    assert abs(bounds[0] - right[0]) <= 1e-9 * right[0] and abs(bounds[1] - right[1]) <= 1e-9 * right[1]


def test_the_chernoff_bounds_put_the_larger_direction_first(monkeypatch):
    # Sweep case 18: the normal approximation puts the add direction (1) first, by 0.06%; the
    # answers are 0.052942-0.052967 (remove, 0) and 0.051541-0.051567 (add). The Chernoff
    # bounds put the remove direction first, and the add one is settled by its coarse pass.
    case = (5.989041025986441e-05, 1.0909392178618984, 50511, 1.4725740341996848e-06)
    m = autoacct.dpsgd(sample_rate=case[0], noise_multiplier=case[1], steps=case[2])
    scales = FFTAccountant(routes.PldRoute()._parts(m))._direction_scales(case[3])
    assert scales[1] > scales[0]
    passes, bounds = _passes(monkeypatch, *case)
    assert passes[0] == (0, "full") and (1, "coarse") in passes
    assert all(kind == "coarse" for d, kind in passes if d == 1)
    assert bounds[1] - bounds[0] <= 1e-3 * bounds[1] and bounds[0] > 0.0529


def test_the_directions_are_weighed_on_a_lattice_of_few_cells(monkeypatch):
    # Issue 18's named case q = 1e-5, sigma = 0.5, k = 3, delta = 1e-12: the coarse lattice
    # spans 2.4e5 cells, and its Chernoff bound, made only to order the two directions, took
    # half of the query (25 ms). On a lattice 8 times coarser (3e4 cells) the order, the
    # passes and the bracket are the same.
    case = (1e-5, 0.5, 3, 1e-12)
    cells = []
    real = FFTAccountant._weighed

    def spy(self, delta, eps_scale, tol, log_eta, a):
        out = real(self, delta, eps_scale, tol, log_eta, a)
        cells.extend(self._chernoff_cells(d, key[1], log_eta) for key in self._memo if key[0] == "chernoff"
                     for d in [key[3]])
        return out
    monkeypatch.setattr(FFTAccountant, "_weighed", spy)
    with monkeypatch.context() as m:
        passes, bounds = _passes(m, *case)
    assert cells and max(cells) <= accountant._WEIGH_CHEAP
    assert bounds[1] - bounds[0] <= 1e-3 * bounds[1]
    cells.clear()
    monkeypatch.setattr(accountant, "_WEIGH_CHEAP", accountant._WEIGH_CELLS)
    assert _passes(monkeypatch, *case) == (passes, bounds)
    assert max(cells) > 2e5


def test_a_coarse_pass_still_settles_a_direction_well_below(monkeypatch):
    # Sweep case 7: the second direction's Chernoff bound is 3% below the first one's, and a
    # coarse pass settles it: it never goes to the fine grid.
    passes, bounds = _passes(monkeypatch, 0.01099707581430652, 4.987334787103255, 518, 8.37232260804884e-05)
    assert (1, "coarse") in passes and all(kind == "coarse" for d, kind in passes if d == 1)
    assert bounds[1] - bounds[0] <= 1e-3 * bounds[1]


def test_a_split_direction_skips_the_whole_laws_chernoff_bound(monkeypatch):
    # Issue 18's named case q = 1e-4, sigma = 0.1, k = 10, delta = 1e-5: the add direction's
    # law spans 2e6 cells on the lattice of its Chernoff bound (0.5 s), while its split terms
    # take 0.01 s. No Chernoff bound of its whole law or coarse pass is made for it: its split
    # law's own Chernoff bound (splitting._split_chernoff) bounds it below the remove
    # direction's upper bound, so it waits for the remove direction's moved lattice
    # (splitting._deferred), whose lower bound settles it without any composition of its
    # terms. The bracket is within tol (the remove direction decides eps, 63.3).
    chernoffs = []
    real = FFTAccountant._chernoff

    def spy(self, d, h, log_eta):
        chernoffs.append(d)
        return real(self, d, h, log_eta)
    monkeypatch.setattr(FFTAccountant, "_chernoff", spy)
    passes, (lower, upper) = _passes(monkeypatch, 1e-4, 0.1, 10, 1e-5)
    assert (1, "coarse") not in passes and 1 not in chernoffs
    assert not any(d == 1 for d, _ in passes)
    assert upper - lower <= 1e-3 * upper and 63.2 < lower


@pytest.mark.parametrize("q, sigma, k, delta", [
    (2.0846786635008535e-05, 7.842262308614437, 5, 3.848767235460896e-12),
    (2.6777515476585863e-05, 11.576382749415417, 247, 6.828602934423341e-12),
    (1.807910374446998e-05, 29.310031193040153, 11853, 6.384054480669125e-11),
])
def test_a_tiny_eps_is_bracketed_within_tol(q, sigma, k, delta):
    # benchmarks/sweep.py --seed 19 cases 14, 26 and 55: eps between 3e-5 and 3e-4, on lattices
    # of 1e-10 to 1e-7. With tilts only up to 1e4 (the best is near 1e6) the FFT's rounding
    # stayed relative to the total mass, about a fifth of delta: a bracket 1.1-1.4% wide
    # whatever the spacing. Both ends against the Fourier inversion of the k-fold law, which
    # agrees with a two-step quadrature to 1e-11: delta(lower) >= delta >= delta(upper) on the
    # larger direction, each side with 1e-4 to spare for the inversion's own error.
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert upper - lower <= 1e-3 * upper

    def truth(eps: float) -> float:
        return max(poisson_gaussian_composed_delta(q, sigma, k, eps, side) for side in ("remove", "add"))
    assert truth(lower) >= delta * (1.0 + 1e-4)
    assert truth(upper) <= delta * (1.0 - 1e-4)


def test_a_delta_near_the_total_variation_is_bracketed_within_a_tenth_of_tol():
    # benchmarks/sweep.py --seed 53 case 11: delta is 0.87 of delta(0), so eps (6.4e-6) lies near
    # the middle of a composed law 1e-3 wide, where delta weighs each mass x by at most x - eps.
    # Its FFT rounding, weighed 1 a mass, set a floor of 3e-4 of eps on the bracket, which finer
    # lattices (more masses) raised: asked at tol 1e-4, 2.3 s and grid-cap warnings. Both ends
    # against the Fourier inversion of the k-fold law (its trapezoid with 12001 and 96001 points
    # agrees to 1e-8 relatively here).
    q, sigma, k, delta = 2.304194049612426e-05, 29.690516324586323, 4799, 1.8421542504387488e-05
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta,
                                                                                                   tol=1e-4)
    assert upper - lower <= 1e-4 * upper

    def truth(eps: float) -> float:
        return max(poisson_gaussian_composed_delta(q, sigma, k, eps, side) for side in ("remove", "add"))
    assert truth(lower) >= delta >= truth(upper)


def test_a_split_direction_far_below_the_answer_is_settled_by_its_chernoff_bound(monkeypatch):
    # q = 1e-5, sigma = 0.6, k = 1e6, delta = 1e-10: the remove direction sets eps (1.0773);
    # the add direction's terms, aimed at 1.41, said nothing below their windows (from 1.235),
    # and refining them ran the query out of its time budget at [1.0773, 1.2347]. The split
    # law's own Chernoff bound (no FFT) puts the add direction far below.
    seen = []
    real = splitting.split_chernoff

    def spy(law, count):
        pair = real(law, count)
        seen.append((law, count, pair))
        return pair
    monkeypatch.setattr(splitting, "split_chernoff", spy)
    q, sigma, k, delta = 1e-5, 0.6, 10 ** 6, 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert upper - lower <= 1e-3 * upper and 1.07 < lower
    adds = [pair for law, _, pair in seen if float(law.tail_coarse.upper.losses.mean()) < 0.0]
    assert adds and min(up.epsilon(delta) for up, _ in adds) < 0.5 * lower
    # Every one of them bounds its direction from above: one copy against the closed form.
    eps = np.array([0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1])
    remove, add = poisson_gaussian_deltas(q, sigma, eps)
    for law, count, (up, _) in seen:
        one = real(law, 1)[0]
        truth = add if float(law.tail_coarse.upper.losses.mean()) < 0.0 else remove
        assert np.all(one.delta(eps) >= truth * (1 - 1e-9))
        # k copies: the k-th power of one copy's MGF (the copies are independent).
        rows = np.arange(one.k.grid.size)
        assert np.array_equal(up.k.grid, one.k.grid)
        assert np.allclose(up.k(rows), count * one.k(rows), rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("k, delta", [(10_000, 1e-5), (100_000, 1e-5)])
def test_a_spike_at_small_noise_is_bracketed_within_tol(k, delta):
    # q = 1e-5, sigma = 0.3: the unsampled losses are a spike narrower than a cell at either
    # support end (+-log(1 - q)). Its lower PLD rounded it down, a first-order shift over k
    # copies: [4.82748, 5.79682] (k = 1e4) and [0, 7.98709] (k = 1e5) at the time budget.
    # Merged into atoms on the lattice (pld/garbling.py) it is second order. Against
    # dp_accounting's pessimistic PLD at a fine interval, an independent upper bound on the
    # truth (its optimistic one rounds the spike down too: 5.69 at an interval of 2e-5), which
    # the lower bound must not pass: at k = 1e4 it gives 5.796918 (interval 1e-3) and 5.796802
    # (2e-5), our bracket [5.79655, 5.79702].
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    q, sigma = 1e-5, 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert upper - lower <= 1e-3 * upper
    reference = pld.from_gaussian_mechanism(sigma, value_discretization_interval=1e-3, sampling_prob=q,
                                            use_connect_dots=True).self_compose(k)
    assert lower <= reference.get_epsilon_for_delta(delta)


def _within_tol_around_the_truth(base, reference, q: float, k: int, delta: float) -> None:
    """k runs of ``base`` Poisson-subsampled at rate q: eps(delta) bounds within tol with no
    warning, each end on its side of the root of ``reference`` (the Fourier inversion of the
    k-fold law, delta(eps) for a direction), taken on the larger direction."""
    law = autoacct.Composition()([autoacct.PoissonSubsample(q)(base)], [k])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lower, upper = law.epsilon_bounds(delta)
    assert upper - lower <= 1e-3 * upper

    def truth(eps: float) -> float:
        return max(reference(eps, side) for side in ("remove", "add"))
    assert truth(lower) >= delta * (1.0 + 1e-6)
    assert truth(upper) <= delta * (1.0 - 1e-6)


@pytest.mark.parametrize("q, b, k, delta", [(1e-3, 1.0, 100_000, 1e-8), (1e-3, 1.0, 300_000, 1e-8),
                                             (0.02, 0.5, 2_000, 1e-9)])
def test_subsampled_laplace_atoms_are_bracketed_within_tol(q, b, k, delta):
    # The Poisson-subsampled Laplace law has an atom at each support end (68% of the P-mass at
    # q = 1e-3, b = 1), off the lattice. Bounded cell by cell, each was rounded down by up to a
    # cell, a first-order shift over k copies that finer lattices did not cure: at k = 1e5 the
    # query ran out of its time budget at [1.48653, 1.53289] (4.6 s, k = 3e5: [2.614, 2.754],
    # 5.2 s). Merged onto the lattice (pld/garbling.py) it is second order. The reference's
    # quadrature and t-grid move it by under 3e-10 relatively.
    _within_tol_around_the_truth(autoacct.Laplace(b), lambda eps, side: poisson_laplace_composed_delta(
        q, b, k, eps, side), q, k, delta)


@pytest.mark.parametrize("q, b, k, delta", [(1e-3, 0.1, 1_000_000, 1e-6), (0.01, 0.1, 1_000_000, 1e-11),
                                             (1e-3, 0.1, 100_000, 1e-11), (1e-4, 0.1, 1_000_000, 1e-6),
                                             (1e-3, 0.1, 100_000, 1e-6), (1e-3, 0.1, 1_000_000, 1e-11),
                                             (1e-4, 0.1, 10_000, 1e-11)])
def test_subsampled_laplace_is_composed_within_tol(q, b, k, delta):
    # Laws with a continuous part and atoms were left to one lattice, whose lower PLD of the
    # heavy atoms (eps0 = 10) stayed first-order short at the cap: [3.13, 2133.96], [5.40,
    # 39266.5], [365.27, 372.83], [102.05, 105.89], [302.55, 309.67] and [3.14, 2311.93], with
    # grid-cap warnings (2.6-4.1 s). Composed by levels (their blocks coarsened by merging their
    # points, levels.coarsen), or on a lattice moved to put the spike near log(1 - q) on a point
    # (jumps.aligned_bulk) where the finest one's lower PLD is first-order short, within tol.
    # The last case (k q = 1) is decided by near-atoms, where the reference integrates far.
    _within_tol_around_the_truth(autoacct.Laplace(b), lambda eps, side: poisson_laplace_composed_delta(
        q, b, k, eps, side), q, k, delta)


@pytest.mark.parametrize("q, sigma, k, delta", [(1e-3, 1.0, 1_000_000, 1e-12), (0.01, 1.0, 1_000_000, 1e-6),
                                                 (1e-3, 0.7, 1_000_000, 1e-6)])
def test_subsampled_discrete_gaussian_is_composed_by_levels_within_tol(q, sigma, k, delta):
    # The Poisson-subsampled discrete Gaussian's law is atoms that no lattice holds, merged onto
    # the lattice by its lower PLD. Levels left every law with atoms to one lattice, which
    # needed 9e6-1.6e7 points and stopped at its cap: [0.4417, 10.178] (1.9 s), [126.96, 151.09]
    # (3.3 s) and [0.137, 16.21] (2.8 s).
    _within_tol_around_the_truth(autoacct.zoo.DiscreteGaussian(sigma), lambda eps, side: (
        poisson_discrete_gaussian_composed_delta(q, sigma, k, eps, side)), q, k, delta)


@pytest.mark.parametrize("q, sigma, k, delta", [(1e-4, 0.7, 100_000, 1e-12), (1e-4, 0.7, 1_000_000, 1e-12),
                                                 (1e-3, 1.0, 10_000, 1e-12), (1e-4, 1.0, 10_000, 1e-6),
                                                 (1e-3, 0.7, 100_000, 1e-12)])
def test_rarely_sampled_discrete_gaussian_is_split_within_tol(q, sigma, k, delta):
    # A record sampled kq = 1 to 100 times: the law's mass sits in atoms within a few q of 0 and
    # delta is decided by the few sampled steps. One lattice needed 1e7-2.5e8 points, stopped
    # at its cap and left the lower end far down: [0.5671, 2.1742], [0.5671, 2.7042] and
    # [0.4417, 1.2017], each with warnings. Split into bulk and tail (pld/jumps.py), now for
    # atom laws too, each is within tol around the reference's root (its almost periodic
    # integral, not the 60 widths that gave 0.80e-6 for 1e-6 at kq = 10). The last two have
    # bulk shares of 5.5% and 13% (jumps.pays): [0.00096, 0.04696] and [6.771, 6.933], then
    # 3.1 s on the heavy split and one lattice at its cap with warnings. (At sigma = 1,
    # q = 1e-4, delta = 1e-12 the reference moves by 1e-4 between quadratures, more than the
    # margins checked here; these cases move by under 1e-7.)
    _within_tol_around_the_truth(autoacct.zoo.DiscreteGaussian(sigma), lambda eps, side: (
        poisson_discrete_gaussian_composed_delta(q, sigma, k, eps, side)), q, k, delta)


@pytest.mark.parametrize("q, p, buckets, k, delta", [(1e-4, 0.1, 10, 1_000_000, 1e-8),
                                                       (1e-3, 0.9, 3, 1_000_000, 1e-10),
                                                       (1e-3, 0.5, 100, 1_000_000, 1e-8)])
def test_subsampled_kary_randomized_response_is_within_tol(q, p, buckets, k, delta):
    # Three atoms, the lowest holding 91% (40%, 50%) of the P-mass. Rounded down by its lower
    # PLD it asked for lattices of 3e8 and 6e8 points (capped) or ran its lowering rounds into
    # the time budget, and the brackets were [0.0090, 5.5007], [0.00033, 1.5091] and
    # [0.095, 66.69] with warnings. Lifted to the lattice
    # point above (pld/merged.py, sized by pld/grid.py) they were [4.871, 5.211], [1.4025,
    # 1.4396] and [61.24, 64.05], the lowering rounds of the composed blocks' lower PLDs meeting
    # the time budget; those blocks' points merged too (pld/levels.py), each is within tol
    # around the reference's root (the trinomial sum gives 5.210555, 1.439588 and 64.0536).
    _within_tol_around_the_truth(autoacct.zoo.KaryRandomizedResponse(p, buckets), lambda eps, side: (
        poisson_kary_rr_composed_delta(q, p, buckets, k, eps, side)), q, k, delta)


def test_an_accountant_is_freed_without_the_garbage_collector():
    # Its kept profiles (pld/made.py) tell it of a pair dropped through its memo alone: a bound
    # method of the accountant closed a cycle (accountant -> Made -> method -> accountant), and
    # every mechanism's composed profiles and laws waited for the garbage collector (1.5 MB a
    # query of q = 0.01, sigma = 1, k = 1e7, freed about every fourth query, whose heap then
    # shrank and grew again: 1400 page faults). Its bracket holds the binomial sum's eps.
    eps0, k, delta = math.log(0.8 / 0.2), 30, 1e-6
    m = autoacct.Composition()([autoacct.RandomizedResponse(0.8)], [k])
    parts = [(p.forward, p.backward, p.times) for p in m.loss_parts()]
    gc.collect()
    gc.disable()
    try:
        acc = FFTAccountant(parts)
        lower, upper = acc.epsilon(delta, acc.eps_scale(delta))
        freed = weakref.ref(acc)
        del acc
        assert freed() is None
    finally:
        gc.enable()
    assert lower <= rr_eps_closed(eps0, k, delta) <= upper
