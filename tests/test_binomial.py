"""autoacct.binomial: k runs of a pair on two outcomes answered from the binomial law of its
outcomes, against exact binomial sums at 60 digits (tests/closed_forms.py)."""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from closed_forms import mp_poisson_two_point_delta, mp_rr_masses, mp_two_point_delta, poisson_rr_delta_closed
from hypothesis import given
from hypothesis import strategies as st
from property_checks import (
    budget,
    call,
    check_delta_bracket,
    check_eps_against_delta_truth,
    collecting,
    deltas,
    log_uniform,
)
from warning_policy import strict_warnings

from autoacct import AccuracyWarning
from autoacct.binomial import binomial_profiles
from autoacct.converters.profile import epsilon_from_profile
from autoacct.zoo import (
    Composition,
    DiscreteLaplace,
    DiscretePair,
    Gaussian,
    PoissonSubsample,
    PureDP,
    RandomizedResponse,
    SampleWithoutReplacement,
)

#: The brackets are exact sums up to roundings: a relative width this small, where the PLD
#: accountant's are about its tol (1e-3) or wider.
_WIDTH = 1e-8


def poisson_pure(q: float, eps0: float, k: int) -> Composition:
    return Composition()([PoissonSubsample(q)(PureDP(eps0))], [k])


def truth(q: float, eps0: float, k: int):
    """delta(eps) of k Poisson-subsampled (rate q) runs of randomized response with log-odds
    eps0 (PureDP(eps0)'s pair), the larger of removal and addition, as exact binomial sums."""
    p, base = mp_rr_masses(eps0)
    return lambda e: mp_poisson_two_point_delta(q, p, base, k, e)


CASES = [(0.01, 1.0, 1000), (0.1, 0.5, 50), (1e-9, 20.0, 40), (0.5, 3.0, 7), (1e-4, 5.0, 300), (1.0, 0.2, 200),
         (1e-24, 1.0, 10)]


@pytest.mark.parametrize("q, eps0, k", CASES)
def test_delta_brackets_the_binomial_sum_tightly(q, eps0, k):
    m = poisson_pure(q, eps0, k)
    eps = np.array([0.0, 1e-12, 0.3, 1.0, 3.0, 0.5 * k * eps0])
    lo, up = m.delta_bounds(eps)
    ref = truth(q, eps0, k)
    for e, a, b in zip(eps, lo, up):
        t = ref(float(e))
        check_delta_bracket(float(a), float(b), t)
        assert b - a <= _WIDTH * b + 1e-300, (e, a, b, t)


@pytest.mark.parametrize("q, eps0, k", CASES)
@pytest.mark.parametrize("delta", [1e-12, 1e-6, 1e-3])
def test_epsilon_brackets_the_binomial_root_tightly(q, eps0, k, delta):
    lo, up = poisson_pure(q, eps0, k).epsilon_bounds(delta)
    check_eps_against_delta_truth(lo, up, delta, truth(q, eps0, k))
    assert up - lo <= _WIDTH * up, (lo, up)


def test_randomized_response_with_computed_log_odds():
    """RandomizedResponse(0.75)'s log-odds log 3 is computed (its ``value_error``): the exact pair
    (3/4, 1/4) against (1/4, 3/4) is still bracketed."""
    m = Composition()([RandomizedResponse(0.75)], [100])
    p, q = (mp.mpf(3) / 4, mp.mpf(1) / 4), (mp.mpf(1) / 4, mp.mpf(3) / 4)

    def exact(e):
        return mp_two_point_delta(p, q, 100, e, log_ratio=(mp.log(3), -mp.log(3)))
    lo, up = m.epsilon_bounds(1e-6)
    check_eps_against_delta_truth(lo, up, 1e-6, exact)
    assert up - lo <= _WIDTH * up
    dlo, dup = m.delta_bounds(20.0)
    check_delta_bracket(dlo, dup, exact(20.0))


def test_discrete_laplace_is_randomized_response():
    """DiscreteLaplace(t) of sensitivity 1 has the pair of randomized response with log-odds 1/t
    (its two atoms, from a DiscreteLoss): 10,000 Poisson-subsampled runs at q = 1e-3 gave eps(1e-8)
    in [0.0017, 1.84] after 7.7 s on the lattice."""
    lo, up = Composition()([PoissonSubsample(0.01)(DiscreteLaplace(2.0))], [500]).epsilon_bounds(1e-8)
    check_eps_against_delta_truth(lo, up, 1e-8, truth(0.01, 0.5, 500))
    assert up - lo <= 1e-7 * up
    lo, up = Composition()([PoissonSubsample(1e-3)(DiscreteLaplace(1.0))], [10 ** 5]).epsilon_bounds(1e-8)
    assert up - lo <= 1e-7 * up


def test_parts_of_equal_laws_are_counted_together():
    """[PureDP(1), PureDP(1)] run 3 and 4 times is 7 runs of randomized response with log-odds 1."""
    m = Composition()([PureDP(1.0), PureDP(1.0)], [3, 4])
    assert binomial_profiles(m) is not None
    lo, up = m.epsilon_bounds(1e-6)
    check_eps_against_delta_truth(lo, up, 1e-6, truth(1.0, 1.0, 7))
    assert up - lo <= _WIDTH * up


def test_a_two_outcome_discrete_pair():
    p, q = (0.3, 0.7), (0.1, 0.9)
    m = Composition()([DiscretePair(p, q)], [200])
    ref = lambda e: max(mp_two_point_delta(p, q, 200, e), mp_two_point_delta(q, p, 200, e))  # noqa: E731
    lo, up = m.epsilon_bounds(1e-9)
    check_eps_against_delta_truth(lo, up, 1e-9, ref)
    assert up - lo <= 1e-7 * up
    dlo, dup = m.delta_bounds(3.0)
    check_delta_bracket(dlo, dup, ref(3.0))


def test_many_runs_at_a_small_rate():
    """q = 1e-3, eps0 = 2, 20,000 runs: the PLD grid this pair needed had 1e8-1e9 points, and at
    1e5 runs eps(1e-6) was [2.885, 3.514] with AccuracyWarnings; the sum answers within 1e-8,
    against a 60-digit sum over the terms within 40 standard deviations of the mean."""
    q, eps0, k = 1e-3, 2.0, 20_000
    p, base = mp_rr_masses(eps0)
    with mp.workdps(60):
        mix = tuple((1 - mp.mpf(q)) * b + mp.mpf(q) * a for a, b in zip(p, base))
    pairs = ((mix, base), (base, mix))

    def windowed(e):
        out = []
        for a, b in pairs:
            mean = k * float(a[0])
            sd = math.sqrt(mean * float(a[1]))
            terms = range(max(0, int(mean - 40 * sd)), min(k, int(mean + 40 * sd)) + 1)
            out.append(mp_two_point_delta(a, b, k, e, terms=terms))
        return max(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lo, up = poisson_pure(q, eps0, k).epsilon_bounds(1e-6)
    assert up - lo <= _WIDTH * up
    check_eps_against_delta_truth(lo, up, 1e-6, windowed)
    lo, up = poisson_pure(q, eps0, 100_000).epsilon_bounds(1e-6)
    assert up - lo <= _WIDTH * up and 2.885 < lo < up < 3.51422


def test_delta_at_eps_near_zero_of_a_rarely_sampled_step():
    """40 runs of PoissonSubsample(1e-9)(PureDP(20)) at eps 1e-12: the PLD accountant gave
    [0, 1.1e-6] around the exact 4.0e-8."""
    lo, up = poisson_pure(1e-9, 20.0, 40).delta_bounds(1e-12)
    check_delta_bracket(lo, up, truth(1e-9, 20.0, 40)(1e-12))
    assert 3.99e-8 < lo <= up < 4.01e-8


def test_profiles_are_monotone_and_finite_everywhere():
    b = binomial_profiles(poisson_pure(0.05, 2.0, 500))
    assert b is not None
    eps = np.concatenate(([-np.inf, -50.0, -1.0], np.linspace(0.0, 1100.0, 2001), [np.inf]))
    lo, up = b.lower(eps), b.upper(eps)
    assert not np.any(np.isnan(lo) | np.isnan(up))
    assert np.all((0.0 <= lo) & (lo <= up) & (up <= 1.0))
    assert np.all(np.diff(up) <= 0.0) and np.all(np.diff(lo) <= 0.0)
    # Beyond the largest loss k * log(1 + q (e^eps0 - 1)) only the tail bound of the upper end
    # is left, and at -inf delta is P's whole mass, 1.
    assert up[-1] <= 1e-300 and lo[-1] == 0.0 and lo[0] > 1.0 - 1e-9


@pytest.mark.parametrize("m", [
    Composition()([PureDP(0.1)], [2 ** 36]),  # a window of about 1e7 terms
    Composition()([PoissonSubsample(1e-15)(PureDP(30.0))], [2 ** 51]),  # (1 + move)^k past 1e-4
    Composition()([PureDP(700.0)], [5]),  # the small mass e^-700 is below 1e-280
    PureDP(1.0),  # one run: the closed form
    Composition()([PureDP(1.0), Gaussian(1.0)], [3, 3]),
    Composition()([PoissonSubsample(0.1)(Gaussian(1.0))], [10]),
], ids=["2^36-runs", "2^51-runs-of-a-rare-outcome", "eps0-700", "one-run", "two-parts", "gaussian"])
def test_other_mechanisms_are_left_to_the_accountant(m):
    assert binomial_profiles(m) is None


@budget(25)
@given(q=log_uniform(1e-8, 1.0), eps0=log_uniform(0.01, 30.0), k=st.integers(2, 300),
       frac=st.floats(0.0, 1.2), d=deltas)
@collecting
def test_brackets_contain_the_binomial_sum(q, eps0, k, frac, d):
    m = poisson_pure(q, eps0, k)
    ref = truth(q, eps0, k)
    e = frac * k * eps0
    dlo, dup = call(lambda: m.delta_bounds(e))
    assert not (math.isnan(dlo) or math.isnan(dup)) and 0.0 <= dlo <= dup <= 1.0
    check_delta_bracket(dlo, dup, ref(e))
    lo, up = call(lambda: m.epsilon_bounds(d))
    assert 0.0 <= lo <= up
    check_eps_against_delta_truth(lo, up, d, ref)


def test_upper_end_allows_for_underflow():
    """21 runs of PoissonSubsample(1.03e-19)(PureDP(480.9)) at eps = 7154.45, where only the
    tail of 4 rare outcomes in 5 runs is left, about 9.14e-320: its geometric bound t_16 r / (1 - r)
    was formed in subnormal floats, whose spacing 4.9e-324 is a relative 5e-5 there, and the
    upper end came out 9.1400e-320, below the exact 9.14036e-320 (114 of 50,646 subnormal points
    checked fell so, each by less than one spacing)."""
    q, eps0, k, eps = 1.0252212397649107e-19, 480.9298725750019, 21, 7154.451451991184
    with mp.workdps(60):
        # (1 / (1 + e^eps0) directly: 1 - p at 60 digits would lose all of e^-481)
        big, small = 1 / (1 + mp.exp(-mp.mpf(eps0))), 1 / (1 + mp.exp(mp.mpf(eps0)))
        p, base = (big, small), (small, big)
        mix = tuple((1 - mp.mpf(q)) * b + mp.mpf(q) * a for a, b in zip(p, base))
        exact = max(mp_two_point_delta(a, b, k, eps, log_ratio=tuple(mp.log(x / y) for x, y in zip(a, b)))
                    for a, b in ((mix, base), (base, mix)))
    prof = binomial_profiles(poisson_pure(q, eps0, k))
    assert prof is not None
    assert mp.mpf("9.1403e-320") < exact < mp.mpf("9.1404e-320")
    assert mp.mpf(float(prof.lower(eps))) <= exact <= mp.mpf(float(prof.upper(eps)))


def test_upper_end_is_positive_where_the_left_terms_underflow():
    """10 runs of PoissonSubsample(1e-200)(PureDP(600)) at eps = 600: only the runs with 5 or more
    sampled steps have a loss above eps, delta = 2.5e-998 (below the floats), and the geometric
    bound on the terms past t_1 = 1e-199 underflowed to 0: delta_bounds gave [0, 0]."""
    q, eps0, k, eps = 1e-200, 600.0, 10, 600.0
    with mp.workdps(60):
        big, small = 1 / (1 + mp.exp(-mp.mpf(eps0))), 1 / (1 + mp.exp(mp.mpf(eps0)))
        p, base = (big, small), (small, big)
        mix = tuple(b + mp.mpf(q) * (a - b) for a, b in zip(p, base))
        loss = tuple(mp.log1p(mp.mpf(q) * (a - b) / b) for a, b in zip(p, base))
        exact = max(mp_two_point_delta(mix, base, k, eps, log_ratio=loss),
                    mp_two_point_delta(base, mix, k, eps, log_ratio=tuple(-x for x in loss)))
    assert mp.mpf("2.5e-998") < exact < mp.mpf("2.6e-998")
    lo, up = poisson_pure(q, eps0, k).delta_bounds(eps)
    assert lo == 0.0 and up > 0.0


def test_no_warning_where_the_losses_are_near_the_smallest_floats():
    """3 runs of PureDP(1e-310): the float search's quotient (eps - k a0) / (a1 - a0) overflowed at
    eps = 1 and leaked numpy's RuntimeWarning; every loss is below eps there, delta(1) = 0."""
    with strict_warnings():
        lo, up = Composition()([PureDP(1e-310)], [3]).delta_bounds(np.array([0.0, 1.0]))
    assert up[1] == lo[1] == 0.0 and up[0] >= 0.0


def test_a_sum_wider_than_tol_asks_the_lattice():
    """A DiscreteLoss's losses carry 1024 u (|v| + 1) each: 1e8 runs of DiscreteLaplace(1e6), the
    pair of randomized response with log-odds 1e-6, leave the sum 1.4e-3 wide on eps(1e-6). The
    route then asks the lattice too and keeps the better end of each: within tol, and holding
    the eps of PureDP(1e-6)'s exact sum, whose losses are exact."""
    m = Composition()([DiscreteLaplace(1e6)], [10 ** 8])
    sums = binomial_profiles(m)
    assert sums is not None
    sum_lo = epsilon_from_profile(sums.lower, 1e-6, sums.guess, upper=False, vectorised=True)
    sum_up = epsilon_from_profile(sums.upper, 1e-6, sums.guess, upper=True, vectorised=True)
    assert sum_up - sum_lo > 1e-3 * sum_up
    exact_lo, exact_up = Composition()([PureDP(1e-6)], [10 ** 8]).epsilon_bounds(1e-6)
    assert exact_up - exact_lo <= 1e-6 * exact_up
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lo, up = m.epsilon_bounds(1e-6)
    assert lo <= exact_lo <= exact_up <= up and up - lo <= 1e-3 * up


def test_the_smallest_delta_is_answered_tightly():
    """Terms below 1e-306 are left to a tail bound a millionth of the smallest delta a query
    takes: with the cut at 1e-300, 1e6 runs of PoissonSubsample(1e-6)(PureDP(1)) had eps(1e-300)
    in [0.0386, 0.668] (the bound stood near delta)."""
    lo, up = poisson_pure(1e-6, 1.0, 10 ** 6).epsilon_bounds(1e-300)
    assert 0.0 < lo <= up <= lo * (1 + 1e-6)


def test_a_sum_below_the_delta_floor_is_not_sent_to_the_lattice():
    """Two runs of PureDP(5e-324) at eps = 5e-324: delta is 1.2e-324, the sum's upper end 1e-323,
    not within tol of its lower end 0 but below DELTA_FLOOR, where the lattice cannot say more;
    asked, the lattice raised OverflowError on the subnormal loss. (The dp route's upper end,
    (1 - e^(eps - 2 eps0)) / 2, underflowed to 0 there, below the truth: now the smallest float.)"""
    lo, up = Composition()([PureDP(5e-324)], [2]).delta_bounds(5e-324)
    assert lo == 0.0 and 5e-324 <= up <= 1e-300


@pytest.mark.parametrize("base", [PureDP(1.0), DiscreteLaplace(1.0)])
def test_sampling_without_replacement_takes_its_lower_end_from_the_attained_pairs_sum(base):
    """k runs sampled without replacement (replace-one) are accounted through a dominating
    symmetric pair, which no pair of datasets attains over several runs (Lebeda et al. 2024);
    the lower end comes from the pair (q P + (1 - q) Q, Q) and its reverse, attained at every
    run, here randomized response with log-odds 1 subsampled (DiscreteLaplace(1)'s pair is the
    same). Its binomial sum puts the lower end within 1e-6 of that pair's exact eps (60-digit
    sums); the accountant of the pair had it at 0.41746 for DiscreteLaplace(1) and 0.41678 for
    PureDP(1), 5e-4 and 2e-3 below."""
    q, k, delta = 1e-3, 10_000, 1e-6
    with warnings.catch_warnings():
        # (PureDP(1)'s dominating three-atom pair needs a grid past the cap for its upper end,
        # which warns; the lower end does not depend on it)
        warnings.simplefilter("ignore", AccuracyWarning)
        lower, upper = Composition()([SampleWithoutReplacement(q)(base)], [k]).epsilon_bounds(delta)
    p, base_masses = mp_rr_masses(1.0)

    def attained(eps: float) -> float:
        return float(mp_poisson_two_point_delta(q, p, base_masses, k, eps))
    assert attained(lower) >= delta
    assert attained(lower * (1.0 + 1e-6)) < delta
    assert lower < upper


@pytest.mark.parametrize("q, k, delta", [(1e-4, 100_000, 1e-6), (0.01, 100_000, 1e-10)])
def test_a_pair_no_dataset_attains_keeps_the_sums_upper_end(q, k, delta):
    # Poisson-subsampled permute-and-flip: its pair is PureDP's (randomized response with
    # log-odds eps0), which it need not attain, and no fixed pair of datasets is known to attain
    # a subsampled instance: the lower end is 0 on every route. The upper end is the exact
    # binomial sum's root, where the lattice took 4.5-7.7 s with grid-cap warnings and ended
    # 1.8e-6 above it.
    from autoacct.zoo import PermuteAndFlip
    m = Composition()([PoissonSubsample(q)(PermuteAndFlip(1.0))], [k])
    profiles = binomial_profiles(m)
    assert profiles is not None and profiles.final and not profiles.lowers
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lo, up = m.epsilon_bounds(delta)
    # (the binomial sum in floats: its logpmf's rounding moves it by about 1e-10 relatively at
    # k = 1e5, far below the margins here; the mpmath sum takes 10 s a point)
    p = 1.0 / (1.0 + math.exp(-1.0))

    def ref(e: float) -> float:
        return poisson_rr_delta_closed(q, p, k, e)
    assert lo == 0.0
    assert ref(up) <= delta * (1 + 1e-8) and ref(up * (1 - 1e-6)) > delta
    _, d_up = m.delta_bounds(up)
    assert ref(up) * (1 - 1e-8) <= d_up <= ref(up) * (1 + 1e-6)
