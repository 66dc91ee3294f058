"""A law composed k times, split into bulk and tail (autoacct/pld/jumps.py): the binomial
expansion's bookkeeping, and certified bounds against independent references."""

from __future__ import annotations

import dataclasses
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from closed_forms import poisson_gaussian_lattice_delta, poisson_gaussian_two_step_delta
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import autoacct
from autoacct.errors import AccuracyWarning
from autoacct.losses import GaussianLoss
from autoacct.losses.binary import RandomizedResponseLoss
from autoacct.losses.shifted import ShiftedLoss
from autoacct.pld import blocks, jumps, lawcache, levels, mixture, splitting, terms
from autoacct.pld.accountant import FFTAccountant
from autoacct.pld.components import Component
from autoacct.pld.discretize import discretize
from autoacct.pld.grid import index_range
from autoacct.pld.query import PldQuery
from autoacct.subsampling.poisson import PoissonRemoveLoss
from autoacct.zoo import Composition, Gaussian, PoissonSubsample


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


def _force_split(mp: pytest.MonkeyPatch, loose: bool = True) -> None:
    """The split taken for every law with a tail side, whatever its bulk's share (with
    ``loose``, whatever its range against the answer's scale too)."""
    mp.setattr(jumps, "MIN_CELLS", 0)
    mp.setattr(jumps, "MAX_BULK_SHARE", 1.0)
    mp.setattr(jumps, "PAYING_SHARE", 1.0)
    if loose:
        mp.setattr(jumps, "LOOSE_BULK_SHARE", 1.0)


@pytest.mark.parametrize("q, sigma, delta", [(1e-3, 0.8, 1e-9), (3e-3, 0.7, 1e-10)])
def test_two_steps_split_against_quadrature(monkeypatch, q, sigma, delta):
    # Two runs of the remove pair, forced through the split (every term composed: j = 0, 1
    # and 2 tail copies), bracket eps(delta); the exact delta at the bracket's ends, by
    # quadrature (tests/closed_forms.py, accurate to about 1e-6 relatively), lies on either
    # side of delta.
    _force_split(monkeypatch)
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
    from autoacct.pld.query import PldQuery
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
    for name, value in _SPLIT_DEFAULTS.items():
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
    for name, value in _SPLIT_DEFAULTS.items():
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
        _force_split(mp)
        yield mp


@pytest.mark.parametrize("q, sigma, k, delta", [(1e-4, 0.8, 10_000, 1e-9), (0.02, 0.9, 40, 1e-8)])
def test_bulk_shift_bounds_the_bulks_masses(monkeypatch, split_calls, q, sigma, k, delta):
    # The bulk's P-mass m_P and Q-mass m_Q, from the tail's cell masses at the threshold (the
    # law's P-mass is 1; this law has no Q-mass at -inf), against the bounds the shared terms
    # use: log m_P >= log_p and log(m_Q / m_P) <= c, up to the reference's own rounding
    # (1e-9 relative), and c within a millionth of it.
    _force_split(monkeypatch, loose=False)
    calls = split_calls
    m = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        m.epsilon_bounds(delta)
    law = calls[0][0][0]
    loss = m.loss_parts()[0].forward
    # The threshold is a point of the coarse lattice: the tail's first positive mass (its
    # upper PLD sends each cell's mass to the cell's two ends).
    tail = law.tail_coarse.upper
    tau = (tail.start + tail.support[0]) * tail.h
    m_p, m_q = loss.cell_masses(np.array([-np.inf, tau, np.inf]))
    log_p, c = terms._bulk_shift(law)
    exact_p = math.log1p(-(m_p[1] + loss.p_inf))
    exact = math.log1p(-m_q[1]) - exact_p
    assert log_p <= exact_p + 1e-9 * abs(exact_p)
    assert exact - 1e-9 * abs(exact) <= c <= exact + 1e-6 * abs(exact)


def _bracket_each_other(shared, alone, delta, cost):
    """Two (upper, lower) profile pairs of one split law, terms sharing compositions of the
    bulk and terms composed one by one: both hold the truth, so each lower profile lies below
    the other's upper one, and sharing moves eps(delta) by at most ``cost`` (relatively)."""
    (up, low), (one_up, one_low) = shared, alone
    e_one = float(one_up.epsilon(delta))
    eps = np.linspace(0.5, 1.5, 201) * e_one
    assert np.all(low.delta(eps) <= one_up.delta(eps))
    assert np.all(one_low.delta(eps) <= up.delta(eps))
    assert float(low.epsilon(delta)) >= float(one_low.epsilon(delta)) * (1 - cost)
    assert float(up.epsilon(delta)) <= e_one * (1 + cost)


@pytest.mark.parametrize("q, sigma, k, delta, cost, rate", [(1e-4, 0.8, 10_000, 1e-9, 1e-4, jumps.TAIL_RATE),
                                                            (0.02, 0.9, 40, 1e-8, 1e-2, 0.3)])
def test_shared_terms_against_the_terms_composed_one_by_one(monkeypatch, split_calls, q, sigma, k, delta, cost, rate):
    # The same split law's profiles with the terms j >= 1 composed one by one, and sharing
    # one composition of the bulk (its lower bounds moved by Jensen's inequality, its upper
    # ones composed with coarse bulk copies): both hold the truth, so each lower profile lies
    # below the other's upper profile; and sharing costs little (k = 40 with J = 3 shares
    # far more than the accountant lets it, and costs the lower bound 0.4%).
    _force_split(monkeypatch, loose=False)
    monkeypatch.setattr(jumps, "TAIL_RATE", rate)
    split = terms.split_profiles
    calls = split_calls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    args, _ = calls[0]
    monkeypatch.setattr(terms, "SHARED_PER_TOL", 0.0)
    one_up, one_low = split(*args)
    monkeypatch.setattr(terms, "SHARED_PER_TOL", 1e9)
    shared = []
    monkeypatch.setattr(terms, "_shared_terms",
                        lambda *a, inner=terms._shared_terms: shared.append(1) or inner(*a))
    up, low = split(*args)
    assert shared and any(low.shifts)
    _bracket_each_other((up, low), (one_up, one_low), delta, cost)


#: The split's thresholds as the package sets them (the property test above forces the split
#: for the rest of this module through a module-scoped fixture).
_SPLIT_DEFAULTS = {name: getattr(jumps, name) for name in ("MIN_CELLS", "MAX_BULK_SHARE", "LOOSE_BULK_SHARE",
                                                          "PAYING_SHARE", "FEW_CELLS")}


@pytest.mark.parametrize("q, sigma, k, delta, forced, cost", [(1e-5, 0.3, 1_000_000, 1e-5, False, 1e-4),
                                                              (0.02, 0.9, 40, 1e-8, True, 1e-3)])
def test_terms_grouped_by_tilt_against_the_terms_composed_one_by_one(request, monkeypatch, split_calls, q, sigma, k,
                                                                    delta, forced, cost):
    # Terms that do not all share one composition of the bulk (shares() is false) share one
    # per tilt. Against the terms composed one by one, each lower profile lies below the
    # other's upper one, and the bracket moves by at most ``cost``. First as the accountant
    # splits: a record sampled about k q = 10 times with little noise (the tail's weight
    # k t = 0.27, 9 terms); then a split forced on a law of 40 runs, where the 6 bulk copies
    # a term gives up move eps by 0.05% (Jensen's shift, 1.3e-3 a copy, exceeds the bracket).
    for name, value in _SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    if forced:
        _force_split(monkeypatch, loose=False)
        monkeypatch.setattr(jumps, "TAIL_RATE", 0.3)
        monkeypatch.setattr(terms, "SHARED_PER_TOL", 1e9)
        monkeypatch.setattr(terms, "shares", lambda *a: False)
    # Tail sides are cached by law: those found at other thresholds, here or by other tests,
    # are not kept.
    lawcache.clear_caches()
    request.addfinalizer(lawcache.clear_caches)
    calls = split_calls
    sizes: list[int] = []
    monkeypatch.setattr(terms, "_shared_terms",
                        lambda *a, inner=terms._shared_terms: sizes.append(len(a[3])) or inner(*a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    args, _ = calls[0]
    law, count, tol = args[0], args[1], args[6]
    sizes.clear()
    up, low = terms.split_profiles(*args)
    made = sum(sizes)
    assert not terms.shares(count, made, tol, count * law.tail_mass) and terms.groups_share(count, made, tol)
    # Fewer compositions of the bulk than terms: some group holds several.
    assert max(sizes) > 1
    monkeypatch.setattr(terms, "SHARED_PER_TOL", 0.0)
    sizes.clear()
    one_up, one_low = terms.split_profiles(*args)
    assert not sizes
    _bracket_each_other((up, low), (one_up, one_low), delta, cost)


def _first_split(monkeypatch, q, sigma, k, delta):
    """The bulk the first split of dpsgd(q, sigma, k) discretises (at its threshold on the
    coarse lattice), its split law, and the certified answer at delta."""
    for name, value in _SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    seen: dict = {}
    parts, law = jumps.parts_at, jumps.split_law

    def parts_spy(*args):
        seen["last"] = parts(*args)
        return seen["last"]

    def law_spy(*args):
        out = law(*args)
        seen.setdefault("law", out)
        seen.setdefault("bulk", seen["last"][0])
        return out
    monkeypatch.setattr(jumps, "parts_at", parts_spy)
    monkeypatch.setattr(jumps, "split_law", law_spy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        answer = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    return seen["bulk"], seen["law"], answer


def test_a_bulk_spike_moves_the_fine_lattice(monkeypatch):
    # q = 1e-5, sigma = 0.257, k = 1e4 (calibrate_dpsgd's answer for eps 10 at delta 1e-5):
    # the bulk's mass sits within about 1e-5 of log(1 - q), at the right end of the cell
    # (-h, 0], and its lower PLD on hZ falls 0.95 h short of the upper one per copy; the
    # lattice the split takes instead loses at most a hundredth of that.
    bulk, law, (lower, upper) = _first_split(monkeypatch, 1e-5, 0.257177, 10_000, 1e-5)
    h = law.bulk_fine.upper.h
    assert 0.0 < law.offset < h

    def gap(part):
        up, low = discretize(part, h, *index_range(part, h, 1e-16))
        return (up.moment - low.moment) / h
    moved = gap(ShiftedLoss(bulk, law.offset))
    assert gap(bulk) > 0.5 and moved < 0.01 * gap(bulk)
    # dp_accounting 0.6.0's connect-the-dots PLD (pessimistic, an upper bound) at
    # value_discretization_interval 1e-5 gives 9.9923137, its privacy-buckets estimate
    # (optimistic) 9.9769364: the certified bracket lies between them, within tol.
    assert 9.9769364 <= upper and lower <= 9.9923137
    assert upper - lower <= 1e-3 * upper


@pytest.mark.parametrize("q, sigma, k, delta, share", [(1e-4, 0.8, 10_000, 1e-9, 0.3),
                                                       (1e-4, 0.8, 10_000, 1e-9, 0.7),
                                                       (1e-5, 0.257177, 10_000, 1e-5, 0.97)])
def test_a_moved_fine_lattice_keeps_the_bounds(monkeypatch, split_calls, q, sigma, k, delta, share):
    # The same split law with its bulk on the lattice hZ + d instead (terms read at eps less
    # their copies' offsets, rounded to each side): both hold the truth, so each lower profile
    # lies below the other's upper profile. (At q = 1e-5 the bulk's lower PLD on hZ is so
    # short that the split fails there; d = 0.97 h puts its spike near a lattice point.)
    bulk, law, _ = _first_split(monkeypatch, q, sigma, k, delta)
    h = law.bulk_fine.upper.h
    calls = split_calls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    args, kwargs = calls[0]
    pairs = []
    for d in (law.offset, share * h):
        part = bulk if d == 0.0 else ShiftedLoss(bulk, d)
        fine = Component(*discretize(part, h, *index_range(part, h, 1e-16)), k)
        moved = dataclasses.replace(args[0], bulk_fine=fine, offset=d)
        pairs.append(terms.split_profiles(moved, *args[1:], **kwargs))
    (up0, low0), (up1, low1) = pairs
    assert any(up1.shifts) and any(low1.shifts)
    assert law.offset == 0.0 or any(up0.shifts)
    e0 = float(up0.epsilon(delta))
    eps = np.linspace(0.5, 1.5, 201) * e0
    assert np.all(low1.delta(eps) <= up0.delta(eps))
    assert np.all(low0.delta(eps) <= up1.delta(eps))
    assert float(low1.epsilon(delta)) <= e0
    assert float(low0.epsilon(delta)) <= float(up1.epsilon(delta))


def test_a_heavy_sampled_part_is_split_at_the_loose_rate(monkeypatch):
    # q = 1e-5, sigma = 0.151, k = 1e4 (calibrate_dpsgd's answer for eps 50 at delta 1e-5): the
    # sampled losses (near 10 +- 6.6) sit far above the unsampled spike near log(1 - q), and
    # k q = 0.1 puts the strict rate's threshold inside them; the loose one splits between
    # the two, and each term is composed with its own tilt.
    for name, value in _SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    loss = autoacct.dpsgd(sample_rate=1e-5, noise_multiplier=0.151184, steps=1).loss_parts()[0].forward
    eta = 1e-16
    side = jumps.tail_side(loss, 10_000, eta)
    assert side is not None and side.side == 1 and side.rate == jumps.LOOSE_TAIL_RATE
    m_p, _ = loss.cell_masses(np.array([-np.inf, side.tau, np.inf]))
    assert m_p[1] + loss.p_inf <= jumps.LOOSE_TAIL_RATE / 10_000
    assert side.tau < 0.1  # below the sampled part, which holds mass q = 1e-5 above 1
    # The same law over 1e6 runs (k q = 10) is not split, nor a typical DP-SGD law.
    assert jumps.tail_side(loss, 1_000_000, eta) is None
    strict = autoacct.dpsgd(sample_rate=1e-4, noise_multiplier=0.8, steps=1).loss_parts()[0].forward
    found = jumps.tail_side(strict, 10_000, eta)
    assert found is not None and found.rate == jumps.TAIL_RATE
    # The terms do not share the bulk's composition at that weight.
    assert terms.shares(10_000, 8, 1e-3, 2e-3)
    assert not terms.shares(10_000, 8, 1e-3, 0.1)

    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=1e-5, noise_multiplier=0.151184, steps=10_000).epsilon_bounds(1e-5)
    # dp_accounting 0.6.0 at value_discretization_interval 3e-5: connect-the-dots
    # (pessimistic, an upper bound) 49.9652088, privacy buckets (optimistic) 49.7652128.
    assert 49.7652128 <= upper and lower <= 49.9652088
    assert upper - lower <= 1e-3 * upper


def _law(q: float, sigma: float):
    return autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=1).loss_parts()[0].forward


def test_the_loose_rate_wins_where_only_it_finds_the_gap(monkeypatch):
    # q = 1.06e-5, sigma = 0.196, k = 2548 (k q = 0.027): the strict rate splits inside the
    # sampled part (a quarter of the range in the bulk); the loose one splits between the
    # spike and the sampled part, its tail holding k t = 0.06 (under half its rate).
    # At q = 6e-5, sigma = 1.09, k = 50511 there is no gap (k t = 0.22 at the loose rate):
    # the strict split stays.
    for name, value in _SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    gap = jumps.tail_side(_law(1.0558155429619294e-05, 0.19585239746517644), 2548, 1e-16)
    assert gap is not None and gap.rate == jumps.LOOSE_TAIL_RATE and gap.share <= jumps.MAX_BULK_SHARE / 4
    flat = jumps.tail_side(_law(5.989041025986441e-05, 1.0909392178618984), 50511, 1e-16)
    assert flat is not None and flat.rate == jumps.TAIL_RATE
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = autoacct.dpsgd(sample_rate=1.0558155429619294e-05, noise_multiplier=0.19585239746517644,
                                      steps=2548).epsilon_bounds(6.344930888485144e-08)
    assert upper - lower <= 1e-3 * upper
    # dp_accounting 0.6.0's connect-the-dots epsilon (pessimistic, interval 1e-3), an upper
    # bound: 28.43 (the one lattice this law had before: [27.06, 28.43] with a warning).
    assert lower <= 28.4283


def test_the_heavy_rate_splits_just_above_the_spike(monkeypatch):
    # q = 1e-5, sigma = 0.23, k = 1e6 (k q = 10): the loose rate leaves 13% of a range of 48
    # in the bulk (its sampled losses spread over units); the heavy one puts tau just above
    # the unsampled spike near log(1 - q), its tail holding k t between 1 and its rate.
    for name, value in _SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    loss, k = _law(1e-5, 0.2305800893975811), 1_000_000
    loose = jumps.tail_side(loss, k, 1e-16)
    assert loose is None or loose.share > jumps.MAX_BULK_SHARE
    heavy = jumps.heavy_side(loss, k, 1e-16)
    assert heavy is not None and heavy.side == 1 and heavy.rate == jumps.HEAVY_TAIL_RATE
    assert heavy.share <= jumps.MAX_BULK_SHARE and heavy.tau < 1.0
    m_p, _ = loss.cell_masses(np.array([-np.inf, heavy.tau, np.inf]))
    assert 1.0 <= k * (m_p[-1] + loss.p_inf) <= jumps.HEAVY_TAIL_RATE * (1 + 1e-9)
    # Where the loose rate already leaves a small bulk, there is nothing for the heavy one.
    assert jumps.tail_side(_law(1e-4, 0.8), 10_000, 1e-16).share <= jumps.MAX_BULK_SHARE


def test_a_record_sampled_ten_times_is_bounded_from_below(monkeypatch):
    # q = 1e-4, sigma = 0.25, k = 1e5, delta = 1e-5 (k q = 10): one lattice's first pass has
    # a lower bound of 0 on a window of 1.35e5 points, and refined it stopped at the time
    # budget at [3.1, 53.6] before the heavy split. The heavy split's terms bound it within
    # 0.5% in the same budget. Both are certified: the brackets overlap.
    for name, value in _SPLIT_DEFAULTS.items():
        monkeypatch.setattr(jumps, name, value)
    m = autoacct.dpsgd(sample_rate=1e-4, noise_multiplier=0.25, steps=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        lower, upper = m.epsilon_bounds(1e-5)
        monkeypatch.setattr(splitting.SplitDirections, "_heavy_side", lambda *args: None)
        again = autoacct.dpsgd(sample_rate=1e-4, noise_multiplier=0.25, steps=100_001)
        one_lower, one_upper = again.epsilon_bounds(1e-5)
    assert upper - lower <= 5e-3 * upper
    assert one_lower <= upper and lower <= one_upper


def _fine_points(monkeypatch) -> list:
    """Record (spacing, points) of each convolution the split's terms make."""
    sizes: list = []
    inner = blocks.convolve

    def spy(comps, h, *args, **kwargs):
        out = inner(comps, h, *args, **kwargs)
        if out is not None:
            sizes.append((h, out.dens.shape[-1]))
        return out
    monkeypatch.setattr(blocks, "convolve", spy)
    monkeypatch.setattr(levels, "convolve", spy)
    return sizes


@pytest.mark.parametrize("q, sigma, k, delta, share", [
    (1e-4, 0.8, 1_000_000, 1e-9, 0.5),
    (1.1964780270382939e-05, 0.9196370451712449, 3_632_059, 7.439543952020695e-11, 0.25),
])
def test_bulk_blocks_and_one_fine_composition_bracket_each_other(monkeypatch, split_calls, q, sigma, k, delta, share):
    # The same split law's profiles with the bulk's copies composed in blocks and in one fine
    # composition: both are certified, so each lower profile lies below the other's upper
    # one, and both meet tol; the blocks read at most a ``share`` of the fine lattice's
    # points (the second case is benchmarks/sweep.py's case 59: one fine composition takes
    # 531,441 and 614,400 points).
    calls = split_calls
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
    args, kwargs = calls[0]
    h_fine = args[0].bulk_fine.upper.h
    sizes = _fine_points(monkeypatch)
    blocked = []
    monkeypatch.setattr(blocks, "blocked", lambda *a, inner=blocks.blocked: blocked.append(inner(*a)) or blocked[-1])
    up, low = terms.split_profiles(*args, **kwargs)
    assert any(b is not None for b in blocked)
    fine_blocked = sum(n for h, n in sizes if h == h_fine)
    sizes.clear()
    monkeypatch.setattr(blocks, "MIN_BLOCKS", 10**12)
    one_up, one_low = terms.split_profiles(*args, **kwargs)
    fine_one = sum(n for h, n in sizes if h == h_fine)
    assert fine_blocked <= share * fine_one
    e = float(one_up.epsilon(delta))
    eps = np.linspace(0.8, 1.2, 161) * e
    assert np.all(low.delta(eps) <= one_up.delta(eps))
    assert np.all(one_low.delta(eps) <= up.delta(eps))
    for u, lo in ((up, low), (one_up, one_low)):
        upper, lower = float(u.epsilon(delta)), float(lo.epsilon(delta))
        assert lower <= upper <= lower * (1 + 1e-3)


def test_ten_million_rare_steps_within_tol_in_one_pass(monkeypatch):
    # q = 3e-5, sigma = 1, k = 1e7, delta = 1e-12: with the bulk in blocks the first pass meets
    # tol on windows under 2^19 points; one fine composition (1.15e6 points) misses it and
    # refines on 4.2e6 points, about 6 s. Its lower bound lies below the RDP route's upper
    # bound, another method's.
    sizes = _fine_points(monkeypatch)
    m = autoacct.dpsgd(sample_rate=3e-5, noise_multiplier=1.0, steps=10_000_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lower, upper = m.epsilon_bounds(1e-12)
    assert upper - lower <= 1e-3 * upper
    assert max(n for _, n in sizes) < 1 << 19
    assert lower <= m.epsilon(1e-12, via="rdp")


def test_a_split_laws_coarse_ratio_is_a_multiple_of_the_block_ratio(monkeypatch, split_calls):
    # The bulk's blocks on R h refine the coarse lattice only where R divides its ratio.
    calls = split_calls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        autoacct.dpsgd(sample_rate=1e-4, noise_multiplier=0.8, steps=1_000_000).epsilon_bounds(1e-9)
    law = calls[0][0][0]
    r = blocks.block_ratio(1_000_000)
    assert r >= 2 and law.ratio % r == 0
    assert blocks.block_ratio(levels.MIN_COUNT - 1) == 0


def test_blocks_on_the_coarse_lattice_itself_bracket_one_fine_composition(monkeypatch, split_calls):
    # The shared bulk's blocks may sit on the law's coarse lattice itself (R = law.ratio, no
    # second re-discretisation): forced here (one block ratio, the largest; any cost), its
    # profiles and one fine composition's still bracket each other.
    calls = split_calls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        autoacct.dpsgd(sample_rate=1e-4, noise_multiplier=0.8, steps=1_000_000).epsilon_bounds(1e-9)
    args, kwargs = calls[0]
    law, delta = args[0], 1e-9
    monkeypatch.setattr(blocks, "MIN_BLOCKS", 1)
    monkeypatch.setattr(blocks, "BLOCK_GAIN", math.inf)
    taken = []

    def largest(fine, n, log_eta, lam, ratios, inner=blocks.blocked):
        out = inner(fine, n, log_eta, lam, ratios[-1:])
        taken.append(None if out is None else out[0])
        return out
    monkeypatch.setattr(blocks, "blocked", largest)
    up, low = terms.split_profiles(*args, **kwargs)
    assert law.ratio in taken
    monkeypatch.setattr(blocks, "blocked", lambda *a: None)
    one_up, one_low = terms.split_profiles(*args, **kwargs)
    e = float(one_up.epsilon(delta))
    eps = np.linspace(0.8, 1.2, 161) * e
    assert np.all(low.delta(eps) <= one_up.delta(eps))
    assert np.all(one_low.delta(eps) <= up.delta(eps))


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
    for name, value in _SPLIT_DEFAULTS.items():
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


def test_a_law_with_atoms_is_never_moved(monkeypatch):
    # Its atoms sit on its own lattice (a ShiftedLoss refuses it): even where one lattice has
    # failed, the direction keeps its lattice, and the query answers from it.
    law = PoissonRemoveLoss(RandomizedResponseLoss(1.0), 0.01)
    assert law.has_atoms
    acc = FFTAccountant([(law, law, 50)])
    with monkeypatch.context() as m:
        m.setattr(splitting.SplitDirections, "_one_lattice_failed", lambda *args: True)
        assert acc._aligned(0, 1e-3, math.log(1e-14), PldQuery(2.0, 1e-6, 1e-3)) is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        lower, upper = acc.epsilon(1e-6, acc.eps_scale(1e-6))
    assert 0.0 < lower <= upper


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
    for name, value in _SPLIT_DEFAULTS.items():
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
    loss = _law(q, sigma)
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
