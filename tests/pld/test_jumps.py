"""A law composed k times, split into bulk and tail (autoacct/pld/jumps.py): the binomial
expansion's bookkeeping, and certified bounds against independent references."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from closed_forms import poisson_gaussian_two_step_delta
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from split_laws import SPLIT_DEFAULTS, force_split

import autoacct
from autoacct.errors import AccuracyWarning
from autoacct.pld import jumps, lawcache, mixture, terms
from autoacct.pld.accountant import FFTAccountant
from autoacct.pld.query import PldQuery


@pytest.mark.parametrize("k, t", [(10, 0.01), (1000, 2.5e-4), (10_000, 2e-5), (50, 0.02), (7, 0.1)])
@pytest.mark.parametrize("terms", [1, 2, 4, 8])
def test_omitted_mass_bounds_the_binomial_tail(k, t, terms):
    # sum_{j > J} C(k, j) (1 - t)^(k - j) t^j is the binomial tail P(Bin(k, t) > J); the bound
    # takes C(k, j) <= k^j / j! and drops the factors (1 - t)^(k - j), so it lies above it, and
    # not far above when J is small against k.
    exact = float(stats.binom.sf(terms, k, t))
    bound = jumps.omitted_mass(k * t, terms)
    assert bound >= exact
    if k >= 50 * terms:
        assert bound <= exact * math.exp(k * t) * 1.5


@settings(max_examples=100, derandomize=True, deadline=None)
@given(k=st.integers(2, 25), t=st.floats(0.0, 0.05), f=st.floats(0.0, 0.05), terms=st.sampled_from([None, 0, 1, 2]))
def test_far_omitted_bounds_the_multinomial_sum(k, t, f, terms):
    # The terms of k copies of b + t + f left out: those of two far copies or more, and those of
    # one far copy with more than ``terms`` tail copies. Exactly, in fractions, the sum of
    # k! / (j! m! (k - j - m)!) t^j f^m over them (the bulk's powers taken as 1, their largest
    # value), at most the bound.
    tt, ff = Fraction(t), Fraction(f)
    exact = sum(Fraction(math.factorial(k), math.factorial(j) * math.factorial(m) * math.factorial(k - j - m))
                * tt ** j * ff ** m
                for m in range(1, k + 1) for j in range(0, k - m + 1)
                if m >= 2 or (terms is not None and j > terms))
    assert Fraction(jumps.far_omitted(k * t, k * f, terms)) >= exact


def test_terms_needed_is_the_fewest_within_budget():
    for kt, budget in [(0.25, 1e-18), (0.01, 1e-12), (1.0, 1e-9)]:
        j = jumps.terms_needed(kt, budget)
        assert j is not None
        assert jumps.omitted_mass(kt, j) <= budget
        assert j == 1 or jumps.omitted_mass(kt, j - 1) > budget
    assert jumps.terms_needed(50.0, 1e-300) is None


def _split_used(monkeypatch) -> list:
    """Record what each split composition made (its profiles, or None)."""
    made: list = []
    inner = terms.split_profiles

    def spy(*args, **kwargs):
        out = inner(*args, **kwargs)
        made.append(out)
        return out
    monkeypatch.setattr(terms, "split_profiles", spy)
    return made



@pytest.mark.parametrize("q, sigma, delta", [(1e-3, 0.8, 1e-9), (3e-3, 0.7, 1e-10)])
def test_two_steps_split_against_quadrature(monkeypatch, q, sigma, delta):
    # Two runs of the remove pair, forced through the split (every term composed: j = 0, 1
    # and 2 tail copies), bracket eps(delta); the exact delta at the bracket's ends, by
    # quadrature (tests/closed_forms.py, accurate to about 1e-6 relatively), lies on either
    # side of delta.
    force_split(monkeypatch)
    made = _split_used(monkeypatch)
    law = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=1).loss_parts()[0].forward
    acc = FFTAccountant([(law, law, 2)])
    lower, upper = acc.epsilon(delta, acc.eps_scale(delta))
    assert made and all(p is not None for p in made)
    assert upper - lower <= 1e-3 * upper
    assert poisson_gaussian_two_step_delta(q, sigma, upper) <= delta * (1 + 1e-6)
    assert poisson_gaussian_two_step_delta(q, sigma, lower) >= delta * (1 - 1e-6)


@pytest.mark.parametrize("q, sigma, k, delta", [(1e-3, 0.8, 1000, 1e-5), (1e-4, 0.6, 10_000, 1e-6)])
def test_split_and_one_lattice_brackets_overlap(monkeypatch, q, sigma, k, delta):
    # Where one lattice also reaches the tolerance, both certified brackets hold the truth,
    # so they overlap; the split is at least as tight.
    made = _split_used(monkeypatch)
    split = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert any(p is not None for p in made)
    monkeypatch.setattr(jumps, "MIN_CELLS", 1 << 62)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        one = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert split[0] <= one[1] and one[0] <= split[1]
    assert split[1] - split[0] <= 1e-3 * split[1]


def test_issue_case_against_saddle_point():
    # Issue 18: at q = 0.015076882531215165, sigma = 0.9877213495113802, k = 37967 a
    # saddle-point integration gives delta(34.48) = 4.384e-12 and delta(34.52) = 4.104e-12,
    # so eps(4.1801730506405885e-12) lies in (34.48, 34.52).
    m = autoacct.dpsgd(sample_rate=0.015076882531215165, noise_multiplier=0.9877213495113802, steps=37967)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = m.epsilon_bounds(4.1801730506405885e-12)
    assert upper >= 34.48 and lower <= 34.52
    assert upper - lower <= 1e-3 * upper


@pytest.mark.parametrize("q, sigma, k, delta, bracket", [
    (1e-4, 0.8, 10_000, 1e-9, (0.24583, 0.24753)),
    (1.17e-4, 0.76, 204, 3e-10, (0.2526, 0.2534)),
    (1e-3, 0.8, 1000, 1e-7, (0.6550, 0.7037)),
    (1e-4, 0.1, 10, 1e-5, (63.269, 63.305)),
])
def test_tiny_rates_within_tolerance(q, sigma, k, delta, bracket):
    # Issue 18's slow cases: now within tol without a warning. The issue's table gives the
    # certified brackets one lattice reached (too wide, or after a minute): both hold the
    # truth, so they overlap. (dp_accounting's default answers 0.24689 and 63.305 for the
    # first and last.)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert upper - lower <= 1e-3 * upper
    assert lower <= bracket[1] and bracket[0] <= upper


@pytest.mark.parametrize("q, sigma, k, delta", [
    (4.621479579890544e-05, 1.565269062199635, 6, 2.380256343759769e-11),
    (1e-3, 0.8, 1000, 1e-7),
])
def test_bounds_within_tol_are_not_aimed_again(monkeypatch, q, sigma, k, delta):
    # Cases of benchmarks/sweep.py whose split law is first aimed at the normal
    # approximation's eps (2.5 and 1.36 times the answer): the first bracket is already
    # within tol, and every profile is certified whatever its tilt, so it is the answer, with
    # no second composition aimed at it. Both sides of it hold the truth: the one-lattice
    # bracket overlaps it. (The first case's six copies span few cells, where the accountant
    # now composes them on one lattice: the split is asked for here.)
    monkeypatch.setattr(jumps, "PAYING_SHARE", 1.0)
    aims = []
    real = PldQuery.aimed_at
    monkeypatch.setattr(PldQuery, "aimed_at", lambda self, t: (aims.append(t), real(self, t))[1])
    made = _split_used(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert any(p is not None for p in made) and not aims
    assert upper - lower <= 1e-3 * upper
    monkeypatch.setattr(jumps, "MIN_CELLS", 1 << 62)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        one = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert lower <= one[1] and one[0] <= upper


@pytest.mark.parametrize("q, sigma, k, delta", [
    (0.0023812492084149, 0.56115128635992, 157, 4.2254916143174e-06),
    (4.621479579890544e-05, 1.565269062199635, 6, 2.380256343759769e-11),
    (0.00011048008085469139, 1.5224112469906594, 51, 5.036360545390013e-07),
])
def test_few_copies_of_a_short_range_stay_on_one_lattice(request, monkeypatch, q, sigma, k, delta):
    # Cases of benchmarks/sweep.py whose law has a tail side at TAIL_RATE with a bulk share
    # of 12%, 2.3% and 5%, and whose k copies span at most 1.3e6 cells of the fine lattice:
    # composed on one lattice (no split asked), within tol, and that bracket and the split's
    # (asked for) overlap.
    for name, value in SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    lawcache.clear_caches()
    request.addfinalizer(lawcache.clear_caches)
    made = _split_used(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert not made
    assert upper - lower <= 1e-3 * upper
    monkeypatch.setattr(jumps, "PAYING_SHARE", 1.0)
    lawcache.clear_caches()
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        split = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert any(p is not None for p in made)
    assert lower <= split[1] and split[0] <= upper


def test_pays_takes_one_lattice_only_for_a_strict_side_of_few_cells(monkeypatch):
    # At TAIL_RATE a bulk share above PAYING_SHARE over few cells stays on one lattice; at
    # PAYING_SHARE or below, over more cells, or at the loose or heavy rate, the split is
    # judged as before (the bulk's share against MAX_BULK_SHARE, or LOOSE_BULK_SHARE on a
    # wide range).
    for name, value in SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    def side(share, rate=jumps.TAIL_RATE):
        return jumps.TailSide(1, 0.5, share, rate)
    few = jumps.FEW_CELLS / 100
    assert not jumps.pays(side(0.03), 10.0, 1.0, 100, few)
    assert jumps.pays(side(0.03), 10.0, 1.0, 101, few)
    assert jumps.pays(side(jumps.PAYING_SHARE), 1.0, 1.0, 100, few)
    assert jumps.pays(side(0.03, jumps.LOOSE_TAIL_RATE), 1.0, 1.0, 100, few)
    assert jumps.pays(side(0.03, jumps.HEAVY_TAIL_RATE), 1.0, 1.0, 100, few)
    assert not jumps.pays(side(0.1), 1.0, 1.0, 10**6, few)
    assert jumps.pays(side(0.1), 10.0, 1.0, 10**6, few)


def test_pays_splits_an_atom_law_at_a_right_tail_over_many_cells(monkeypatch):
    # A subsampled discrete law on one lattice needs a fine one to merge its isolated sampled
    # atoms: over MANY_CELLS cells its right tail at TAIL_RATE pays up to LOOSE_BULK_SHARE,
    # however narrow the range; a left tail, fewer cells, another rate or a law without atoms
    # is judged as before (here: a share above MAX_BULK_SHARE on a narrow range does not pay).
    for name, value in SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    def side(share, sign=1, rate=jumps.TAIL_RATE):
        return jumps.TailSide(sign, 0.5, share, rate)
    many = jumps.MANY_CELLS / 100
    share = (jumps.MAX_BULK_SHARE + jumps.LOOSE_BULK_SHARE) / 2
    assert jumps.pays(side(share), 1.0, 1.0, 100, many, atoms=True)
    assert not jumps.pays(side(1.01 * jumps.LOOSE_BULK_SHARE), 1.0, 1.0, 100, many, atoms=True)
    assert not jumps.pays(side(share, -1), 1.0, 1.0, 100, many, atoms=True)
    assert not jumps.pays(side(share), 1.0, 1.0, 99, many, atoms=True)
    assert not jumps.pays(side(share, rate=jumps.LOOSE_TAIL_RATE), 1.0, 1.0, 100, many, atoms=True)
    assert not jumps.pays(side(share), 1.0, 1.0, 100, many)
    # (on a wide range the loose share paid already)
    assert jumps.pays(side(share, -1), 10.0, 1.0, 100, many, atoms=True)


def test_dp_accounting_pessimistic_is_not_below_our_lower():
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    q, sigma, k, delta = 1e-4, 0.8, 10_000, 1e-7
    ref = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=2e-4,
                                      use_connect_dots=True).self_compose(k).get_epsilon_for_delta(delta)
    lower, upper = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    assert lower <= ref
    assert upper <= ref * (1 + 1e-2)


def test_mixture_profile_epsilon_and_delta_agree(monkeypatch):
    made = _split_used(monkeypatch)
    autoacct.dpsgd(sample_rate=1e-4, noise_multiplier=0.8, steps=10_000).epsilon_bounds(1e-8)
    up, low = next(p for p in made if p is not None)
    # eps(delta) is solved on the terms' pointwise bounds, delta(eps) read off their running
    # extrema: both bounds, rounded apart by a few ulps (1.5e-13 relatively here), so they agree
    # to that; the routes keep delta(eps(d)) <= d exactly by the points they remember.
    for d in (1e-6, 1e-8, 1e-10):
        e_up, e_low = float(up.epsilon(d)), float(low.epsilon(d))
        assert e_low <= e_up
        assert float(up.delta(np.array(e_up))) <= d * (1 + 1e-12)
        if e_low > 0:
            assert float(low.delta(np.array(e_low))) > d * (1 - 1e-12)
    eps = np.linspace(0.0, 1.0, 101)
    assert np.all(np.diff(up.delta(eps)) <= 0) and np.all(low.delta(eps) <= up.delta(eps))



def test_mixture_solve_reads_few_points_and_no_whole_window(monkeypatch):
    """A split law's eps(delta) takes a handful of evaluations of the terms' pointwise bounds
    and never makes a term's monotone deltas (a whole-window pass, half a million points at
    tiny rates); its answers are those a fine bisection of the monotone delta finds, to the
    solve's relative width (the monotone delta is at most the pointwise one above the
    answer's crossing, and the two agree there to rounding: the terms' block sums and whole
    sums round differently, each within the allowance it carries)."""
    made = _split_used(monkeypatch)
    calls = []
    inner = mixture.MixtureProfile._summed

    def spy(self, eps, pointwise):
        calls.append(pointwise)
        return inner(self, eps, pointwise)
    autoacct.dpsgd(sample_rate=6e-5, noise_multiplier=1.09, steps=50_000).epsilon_bounds(1.5e-6)
    up, low = next(p for p in made if p is not None)
    monkeypatch.setattr(mixture.MixtureProfile, "_summed", spy)
    targets = (1e-5, 1.5e-6, 1e-9)
    solved = []
    for d in targets:
        up._solved.clear()
        low._solved.clear()
        calls.clear()
        e_up, e_low = float(up.epsilon(d)), float(low.epsilon(d))
        assert len(calls) <= 12 and all(calls)
        # What each answer rests on: the certified pointwise bounds on either side of d.
        assert float(up._summed(np.array([e_up]), True)[0]) <= d < float(low._summed(np.array([e_low]), True)[0])
        solved.append((e_up, e_low))
    assert not any("grid_deltas" in t.__dict__ for t in (*up.terms, *low.terms))
    # A bisection of the monotone delta (each bound's own side) to 1e-14 relatively.
    for d, (e_up, e_low) in zip(targets, solved):
        for prof, e in ((up, e_up), (low, e_low)):
            a, b = 0.0, 2.0 * e + 1.0
            while b - a > 1e-14 * b:
                mid = 0.5 * (a + b)
                a, b = (mid, b) if float(prof.delta(np.array([mid]))[0]) > d else (a, mid)
            assert abs(e - b) <= 1e-12 * b


@settings(max_examples=5, deadline=None)
@given(log_q=st.floats(math.log(1e-5), math.log(3e-3)), sigma=st.floats(0.5, 1.2),
       log_delta=st.floats(math.log(1e-12), math.log(1e-6)))
def test_two_steps_split_never_on_the_wrong_side(monkeypatch_module, log_q, sigma, log_delta):
    # Drawn two-step runs through the forced split: the exact delta (quadrature) at the
    # bracket's ends lies on either side of delta, whatever the rate, noise and delta.
    q, delta = math.exp(log_q), math.exp(log_delta)
    law = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=1).loss_parts()[0].forward
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        lower, upper = FFTAccountant([(law, law, 2)]).epsilon(delta, 1.0)
    assert 0.0 <= lower <= upper
    if upper > 0:
        assert poisson_gaussian_two_step_delta(q, sigma, upper) <= delta * (1 + 1e-6)
    if lower > 0:
        assert poisson_gaussian_two_step_delta(q, sigma, lower) >= delta * (1 - 1e-6)


@pytest.fixture(scope="module")
def monkeypatch_module():
    """The split forced for every law of this module's property test (hypothesis runs every
    example in one test call, so a function-scoped monkeypatch would not do)."""
    with pytest.MonkeyPatch.context() as mp:
        force_split(mp)
        yield mp


def test_a_subsampled_discrete_law_is_split_into_atom_parts():
    # tail_side left out every law with atoms. The Poisson-subsampled discrete Gaussian's atoms
    # stand off any lattice and its lower PLD merges them (merged_lower): split, its parts are
    # atom laws merged the same way, and k times the tail's mass is within the rate.
    from autoacct.zoo import DiscreteGaussian, Gaussian, Laplace
    dg = autoacct.PoissonSubsample(1e-4)(DiscreteGaussian(1.0)).loss_parts()[0]
    for law, sign in ((dg.forward, 1), (dg.backward, -1)):
        assert jumps.splits(law)
        side = jumps.tail_side(law, 10_000, 1e-17)
        assert side is not None and side.side == sign and side.rate == jumps.TAIL_RATE
        bulk, tail = jumps.parts_at(law, side.side, side.tau)
        assert bulk.merged_lower and tail.merged_lower
        tail_p = float(tail.p_mass.sum()) + tail.p_inf
        assert 10_000 * tail_p <= 1.5 * side.rate
        assert len(bulk.values) + len(tail.values) == len(law.values)
    # Laws on a lattice compose exactly there; other laws with atoms keep them on lattices.
    assert not jumps.splits(DiscreteGaussian(1.0).loss_parts()[0].forward)
    assert not jumps.splits(autoacct.PoissonSubsample(1e-3)(Laplace(1.0)).loss_parts()[0].forward)
    assert jumps.splits(autoacct.PoissonSubsample(1e-3)(Gaussian(1.0)).loss_parts()[0].forward)
