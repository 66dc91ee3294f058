"""Spike laws and lattices moved onto their spikes (autoacct/pld/jumps.py, splitting.py), and the
quantiles of the split, against lattice references."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from closed_forms import poisson_gaussian_lattice_delta, two_point_delta_closed
from split_laws import SPLIT_DEFAULTS, step_law

import autoacct
from autoacct.errors import AccuracyWarning
from autoacct.losses import GaussianLoss
from autoacct.losses.binary import RandomizedResponseLoss
from autoacct.losses.shifted import ShiftedLoss
from autoacct.pld import jumps, lawcache, splitting, terms
from autoacct.pld.accountant import FFTAccountant
from autoacct.pld.components import Component
from autoacct.pld.discretize import discretize
from autoacct.pld.grid import index_range
from autoacct.pld.query import PldQuery
from autoacct.subsampling.poisson import PoissonRemoveLoss
from autoacct.zoo import Composition, DiscreteGaussian, Gaussian, PoissonSubsample


def test_a_spike_law_against_a_lattice_reference(monkeypatch):
    # q = 1e-5, sigma = 0.6, k = 1e4, delta = 1e-10: the unsampled losses are a spike narrower
    # than a cell at log(1 - q), the answer is decided by one or two sampled steps (the
    # split's terms 1 and 2), and the bulk's 1e4 copies move it by a few 1e-4. Against an
    # independent lattice composition, second order in its spacing (closed_forms; 5e-6 of
    # delta from the two-step quadrature at k = 2, 6e-6 between spacings 4e-6 and 2e-6
    # here), each end with 1e-4 of delta to spare. dp_accounting's default PLDAccountant
    # answers 0.45441 here, below the truth: the reference puts delta(0.45441) near 1.01e-10.
    # The split law's own Chernoff bound (splitting.split_chernoff) lies above the reference too:
    # loosely (30 times at eps = 0, 1e7 at the answer, which one large step decides), but
    # without its tail's MGF it falls below at the answer.
    chernoffs = []
    real = splitting.split_chernoff

    def spy(law, count):
        pair = real(law, count)
        if float(law.tail_coarse.upper.losses.mean()) > 0.0:  # the remove direction's
            chernoffs.append(pair[0])
        return pair
    monkeypatch.setattr(splitting, "split_chernoff", spy)
    q, sigma, k, delta = 1e-5, 0.6, 10_000, 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert upper - lower <= 1e-3 * upper
    eps = np.array([lower, upper, 0.45441, 0.0, 0.005, 0.2])
    values, left_out = poisson_gaussian_lattice_delta(q, sigma, k, eps, 4e-6, points=1 << 22)
    assert left_out < 1e-5 * delta
    assert values[0] >= delta * (1 - 1e-4) and values[1] <= delta * (1 + 1e-4) + left_out
    assert values[2] > 1.005 * delta
    assert chernoffs
    for up in chernoffs:
        assert np.all(up.delta(eps) >= values * (1 - 1e-4))


@pytest.mark.parametrize("q, sigma, k, delta, compare", [(3e-3, 0.15, 100, 1e-5, True),
                                                         (1e-2, 0.15, 1000, 1e-5, False)])
def test_a_failed_lattice_is_moved_onto_the_spike(monkeypatch, q, sigma, k, delta, compare):
    # The unsampled losses are a spike narrower than a cell at log(1 - q) and the law is not
    # split. At q = 3e-3 one lattice's first pass bounds eps from below by less than half its
    # upper bound and, refined, stopped at [90.651, 90.793], wider than tol; at q = 1e-2 by
    # 0.72 of it, and refined 600 times finer it stopped at the time budget at [463.7, 475.6].
    # On the lattice moved onto the spike (splitting._aligned) the first lattice answers
    # within tol. Both are certified, each from its own lattices: the brackets overlap, and
    # the moved one's lower end lies above the other's.
    for name, value in SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    lawcache.clear_caches()
    moved = []
    real = terms.moved_profiles

    def spy(comp, count, offset, *args):
        moved.append((offset, comp.upper.h, count))
        return real(comp, count, offset, *args)
    monkeypatch.setattr(terms, "moved_profiles", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert moved and all(0.0 < d < h and count == k for d, h, count in moved)
    assert upper - lower <= 1e-3 * upper
    if not compare:
        return
    monkeypatch.setattr(splitting.SplitDirections, "_aligned", lambda *args: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        one_lower, one_upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert one_lower <= upper and lower <= one_upper
    assert one_lower < lower
    assert len(moved) == 1


def test_moved_profiles_bracket_the_laws_on_one_lattice(monkeypatch):
    # k copies of one law (the case above) from its component on hZ and from its components
    # on hZ + d for offsets d (splitting._aligned takes one): every pair is certified, so each
    # lower profile lies below every upper profile, on eps around the answer.
    q, sigma, k, delta = 3e-3, 0.15, 100, 1e-5
    law = PoissonRemoveLoss(GaussianLoss(1.0 / sigma), q)
    h, eta, target = 2.0 ** -8, 1e-16, 90.77
    pairs = []
    for d in (0.0, 0.3 * h, 0.77 * h):
        part = law if d == 0.0 else ShiftedLoss(law, d)
        comp = Component(*discretize(part, h, *index_range(part, h, eta)), k)
        pairs.append(terms.moved_profiles(comp, k, d, math.log(1e-14), target, math.log(1e-8), 1e-3))
    eps = np.linspace(80.0, 100.0, 81)
    for up, _ in pairs:
        for _, low in pairs:
            assert np.all(low.delta(eps) <= up.delta(eps))
    assert all(float(low.epsilon(delta)) <= float(up.epsilon(delta)) for up, low in pairs)


def test_a_law_on_a_lattice_of_its_own_or_merging_its_atoms_is_never_moved(monkeypatch):
    # Randomized response's atoms sit on its own lattice, and a subsampled discrete Gaussian's
    # lower PLD merges its atoms onto any lattice (a ShiftedLoss refuses both): even where one
    # lattice has failed, the direction keeps its lattice.
    own = RandomizedResponseLoss(1.0)
    merged = PoissonSubsample(1e-3)(DiscreteGaussian(1.0)).loss_parts()[0].forward
    assert own.lattice is not None and merged.merged_lower
    with monkeypatch.context() as m:
        m.setattr(splitting.SplitDirections, "_one_lattice_failed", lambda *args: True)
        for law in (own, merged):
            acc = FFTAccountant([(law, law, 50)])
            assert acc._aligned(0, 1e-3, math.log(1e-14), PldQuery(2.0, 1e-6, 1e-3)) is None


def test_a_law_of_atoms_off_any_lattice_may_be_moved(monkeypatch):
    # Poisson-subsampled randomized response (log-odds 1, q = 0.01), 50 runs: two atoms off any
    # lattice, read through the law's cells. Where one lattice has failed, its lattice may be
    # moved (jumps.aligned_bulk); the moved bracket holds the exact eps(1e-6) of the removal
    # pair's binomial sum.
    law = PoissonRemoveLoss(RandomizedResponseLoss(1.0), 0.01)
    assert law.has_atoms and law.lattice is None and not law.merged_lower
    p = math.e / (1.0 + math.e)
    mix, base = ((1 - 0.01) * (1 - p) + 0.01 * p, (1 - 0.01) * p + 0.01 * (1 - p)), (1 - p, p)
    offsets = []
    real = jumps.aligned_bulk

    def spy(*args, **kwargs):
        got = real(*args, **kwargs)
        offsets.append(got[1])
        return got
    acc = FFTAccountant([(law, law, 50)])
    with monkeypatch.context() as m, warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        m.setattr(splitting.SplitDirections, "_one_lattice_failed", lambda *args: True)
        m.setattr(jumps, "aligned_bulk", spy)
        lower, upper = acc.epsilon(1e-6, acc.eps_scale(1e-6))
    assert any(offset != 0.0 for offset in offsets)
    assert two_point_delta_closed(mix, base, 50, lower) >= 1e-6 >= two_point_delta_closed(mix, base, 50, upper)
    assert upper - lower <= 1e-3 * upper


def test_a_lattice_of_astronomic_spacing_is_not_moved():
    # At sigma = 1e-20 the losses reach 5e39 and the capped grid's spacing is 1.2e33: a moved
    # lattice's Q-masses, e^d times the law's, overflowed (OverflowError from ShiftedLoss
    # once the time budget let the query reach the move). The offset 0 answers.
    with warnings.catch_warnings(), autoacct.limits(seconds=60):
        warnings.simplefilter("ignore")
        lower, upper = autoacct.dpsgd(0.01, 1e-20, 3).epsilon_bounds(1e-5)
    assert 0.0 <= lower <= upper < math.inf


def test_moved_blocks_that_miss_tol_give_way_to_one_fine_composition(monkeypatch):
    # q = 1e-4, sigma = 0.15, k = 1e6, delta = 1e-5: on the moved lattice the blocks bound eps
    # within about 1.3% only (each block's composed spike falls between the points of its
    # coarser lattice again), and refining them took 4.6 s to [1885.30, 1887.09]; one fine
    # composition of the moved copies meets tol on the same lattice. Both pairs are
    # certified: each lower profile lies below the other's upper one.
    for name, value in SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    lawcache.clear_caches()
    calls = []
    real = terms.moved_profiles

    def spy(*args, **kwargs):
        pair = real(*args, **kwargs)
        calls.append((kwargs.get("in_blocks", True), pair))
        return pair
    monkeypatch.setattr(terms, "moved_profiles", spy)
    delta = 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=1e-4, noise_multiplier=0.15, steps=1_000_000).epsilon_bounds(delta)
    assert upper - lower <= 1e-3 * upper
    (first_blocked, (b_up, b_low)), (second_blocked, (f_up, f_low)) = calls[:2]
    assert first_blocked and not second_blocked
    assert float(b_up.epsilon(delta)) - float(b_low.epsilon(delta)) > 1e-3 * upper
    assert float(f_up.epsilon(delta)) - float(f_low.epsilon(delta)) <= 1e-3 * upper
    eps = np.linspace(0.98, 1.02, 81) * upper
    assert np.all(b_low.delta(eps) <= f_up.delta(eps))
    assert np.all(f_low.delta(eps) <= b_up.delta(eps))


def test_several_laws_are_moved_each_onto_its_spike(monkeypatch):
    # 500 steps at sigma 0.15 and 500 at sigma 0.17, q = 1e-2, delta = 1e-5: both laws keep
    # their unsampled mass in a spike at log(1 - q); one lattice stopped at the time budget
    # at [407.13, 416.74] after 3.8 s. Each law on its own moved lattice, composed at once,
    # answers within tol; the bracket overlaps one lattice's (cut here by a 1 s budget).
    lawcache.clear_caches()
    made = []
    real = terms.moved_composition

    def spy(parts, *args):
        made.append([(c.count, d, c.upper.h) for c, d in parts])
        return real(parts, *args)
    monkeypatch.setattr(terms, "moved_composition", spy)
    steps = [(0.15, 500), (0.17, 500)]

    def mechanism():
        return Composition()([PoissonSubsample(1e-2)(Gaussian(s)) for s, _ in steps], [k for _, k in steps])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = mechanism().epsilon_bounds(1e-5)
    assert upper - lower <= 1e-3 * upper
    assert made and all(len(m) == 2 and all(0.0 <= d < h for _, d, h in m) for m in made)
    monkeypatch.setattr(splitting.SplitDirections, "_aligned", lambda *args: None)
    with warnings.catch_warnings(), autoacct.limits(seconds=1.0):
        warnings.simplefilter("ignore", AccuracyWarning)
        one_lower, one_upper = mechanism().epsilon_bounds(1e-5)
    assert one_lower <= upper and lower <= one_upper


def test_moved_compositions_of_two_laws_bracket_each_other():
    # Two laws each on the lattice moved by its own offset, composed at once and read at eps
    # less the sum of the copies' offsets: every choice of offsets gives certified profiles.
    # The offsets aligned_bulk picks (each spike on the lattice) give a lower profile short
    # only at second order; other offsets' upper profiles are second order too, so each of
    # them lies above the aligned lower one, and each lower one below the aligned upper one
    # (a shift with the wrong sign on either side fails).
    laws = [(PoissonRemoveLoss(GaussianLoss(1.0 / sigma), 1e-2), 200) for sigma in (0.15, 0.17)]
    h, eta, target = 2.0 ** -7, 1e-16, 160.0

    def make(k):
        return lambda part: Component(*discretize(part, h, *index_range(part, h, eta)), k)
    aligned = [jumps.aligned_bulk(law, h, k, target, 1e-4 * target, eta, make(k)) for law, k in laws]
    assert all(d > 0.0 for _, d in aligned)
    pairs = []
    for shares in ((0.0, 0.0), (0.3, 0.8), (0.9, 0.1)):
        parts = []
        for (law, k), share in zip(laws, shares):
            part = law if share == 0.0 else ShiftedLoss(law, share * h)
            parts.append((make(k)(part), share * h))
        pairs.append(terms.moved_composition(parts, math.log(1e-14), target, math.log(1e-8)))
    best_up, best_low = terms.moved_composition(aligned, math.log(1e-14), target, math.log(1e-8))
    eps = np.linspace(140.0, 180.0, 81)
    assert np.all(best_low.delta(eps) <= best_up.delta(eps))
    for up, low in pairs:
        assert np.all(best_low.delta(eps) <= up.delta(eps))
        assert np.all(low.delta(eps) <= best_up.delta(eps))


@pytest.mark.parametrize("q, sigma", [(1e-4, 0.8), (1.0558155429619294e-05, 0.19585239746517644), (0.02, 3.0)])
def test_quantiles_of_several_masses_are_each_masses_quantiles(q, sigma):
    # One reading of the cell masses serves every mass (tail_side asks two rates at once):
    # each pair equals the one asked alone, and bounds the law's tails as promised, read off
    # the law's own cell masses at the returned points (Gaussian closed forms of its base).
    loss = step_law(q, sigma)
    a, b = loss.quantile_range(1e-16)
    masses = [1e-3 / 10_000, 0.5 / 10_000, 1e-2]
    both = jumps.quantiles_at(loss, masses, a, b)
    for mass, (low, high) in zip(masses, both):
        assert (low, high) == jumps.quantiles(loss, mass, a, b)
        assert a <= low <= high <= b
        m_p, _ = loss.cell_masses(np.array([-np.inf, low, high, np.inf]))
        # P(L <= low) and P(high < L < inf), with the summation's rounding.
        assert m_p[0] <= mass * (1 + 1e-9) and m_p[2] <= mass * (1 + 1e-9)
    assert jumps.quantiles_at(loss, masses, b, b) == [(b, b)] * 3
