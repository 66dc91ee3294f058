"""Property tests: the cases the property suite found false, as regression tests once fixed
(test_former_failures) and strict xfails until then (test_known_failures). The suite, its budget and
the checks' reading of the truths: tests/property_checks.py."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import mpmath as mp
import numpy as np
import pytest
from closed_forms import (
    mp_gaussian_tradeoff,
    mp_laplace_delta,
    mp_leaky_rr_delta,
    mp_poisson_gaussian_delta,
    mp_poisson_two_point_delta,
    mp_rr_delta,
    mp_two_point_delta,
)
from property_checks import check_delta_bracket, check_eps_against_delta_truth, check_invariants, fresh, mpf

from autoacct import AccuracyWarning
from autoacct.zoo import (
    ApproxDP,
    Composition,
    DiscreteGaussian,
    DiscretePair,
    ExponentialMechanism,
    Gaussian,
    Laplace,
    PoissonSubsample,
    PureDP,
    RandomizedResponse,
    SampleWithoutReplacement,
)

# ----- Former failures and known failures ------------------------------------------------------
# Each entry asserts, on one exact case, what the suite once found false (the observed value and
# the truth, mpmath at 60 digits, in its comment). FORMER_FAILURES were found on branch prop
# (fa26f26) and pass since main's fixes: they run as plain regression tests. KNOWN_FAILURES still
# fail: each is a strict xfail (it fails the suite the day it starts passing, so that it moves
# to FORMER_FAILURES), and the draws above stay clear of it where a comment says so.

def _rr_pair(p: float) -> tuple[tuple, tuple]:
    return (mpf(p), 1 - mpf(p)), (1 - mpf(p), mpf(p))


def _known_rr_upper_below_truth() -> None:
    # RandomizedResponse(0.7310585786300049).delta_bounds(0.99999)
    #   observed (7.310549233452379e-06, 7.310549233459699e-06), truth 7.31054923352215e-06:
    #   the upper bound is 6.2e-17 below the truth (a rounding of p - e^eps (1 - p) unaccounted).
    p = 0.7310585786300049
    lo, up = RandomizedResponse(p).delta_bounds(0.99999)
    check_delta_bracket(lo, up, mp_two_point_delta(*_rr_pair(p), 1, 0.99999))


def _known_rr_lower_above_truth() -> None:
    # RandomizedResponse(0.5000318183289373).delta_bounds(0.0001272720431876037)
    #   observed (6.364071617070926e-10, 6.364071617077298e-10), truth 6.36407161697194e-10.
    p, e = 0.5000318183289373, 0.0001272720431876037
    lo, up = RandomizedResponse(p).delta_bounds(e)
    check_delta_bracket(lo, up, mp_two_point_delta(*_rr_pair(p), 1, e))


def _known_approxdp_upper_below_truth() -> None:
    # ApproxDP(20.0, 1e-300).delta_bounds(10.537595921254406)
    #   observed (0.9999222784135983, 0.9999222784140568), truth 0.999922278416617 (2.6e-12 above).
    e = 10.537595921254406
    lo, up = ApproxDP(20.0, 1e-300).delta_bounds(e)
    check_delta_bracket(lo, up, mp_leaky_rr_delta(20.0, 1e-300, 1, e))


def _known_approxdp_eps_upper_below_truth() -> None:
    # ApproxDP(20.0, 0.5).epsilon_bounds(0.999999)
    #   observed upper 6.876605516424976, where the true delta is 0.99999900000000001 > 0.999999.
    lo, up = ApproxDP(20.0, 0.5).epsilon_bounds(0.999999)
    check_eps_against_delta_truth(lo, up, 0.999999, lambda e: mp_leaky_rr_delta(20.0, 0.5, 1, e))


def _known_poisson_rr_tiny_q() -> None:
    # Composition()([PoissonSubsample(1e-24)(RandomizedResponse(0.999))], [3]).epsilon_bounds(1e-300)
    #   observed (0.0, 0.0); the true delta(0) is 2.988e-24 > 1e-300, so eps(1e-300) > 0.
    m = Composition()([PoissonSubsample(1e-24)(RandomizedResponse(0.999))], [3])
    lo, up = m.epsilon_bounds(1e-300)
    check_eps_against_delta_truth(lo, up, 1e-300,
                                  lambda e: mp_poisson_two_point_delta(1e-24, *_rr_pair(0.999), 3, e))


def _known_poisson_gaussian_tiny_q() -> None:
    # PoissonSubsample(5.981395596785809e-22)(Gaussian(199.928265413904)).epsilon_bounds(1e-30)
    #   observed (0.0, 0.0); the true delta(0) is 1.1935e-24 > 1e-30 (delta_bounds(0.0) is (0, 0)).
    q, s = 5.981395596785809e-22, 199.928265413904
    lo, up = PoissonSubsample(q)(Gaussian(s)).epsilon_bounds(1e-30)
    check_eps_against_delta_truth(lo, up, 1e-30, lambda e: mp_poisson_gaussian_delta(q, s, e))


def _known_gaussian_delta_of_epsilon() -> None:
    # delta(epsilon(d)) <= d fails for Gaussians (the eps upper bound itself is sound):
    #   Gaussian(1.0): d = 1e-300 gives delta(epsilon(d)) = 1.999999999952946e-300;
    #   Composition()([Gaussian(0.01)], [10**7]): d = 1e-100 gives 1.0000676481014746e-100,
    #   d = 1e-12 (with two more steps, see below) 1.0001e-12;
    #   Gaussian(10000.0): d = 1.1667485173042017e-53 gives 1.1667485184071044e-53;
    #   Composition()([Gaussian(10000.0), Gaussian(0.024521110426807137)], [1, 1]): d = 0.9999769744141629
    #   gives 0.999976974414163.
    cases = [(Gaussian(1.0), 1e-300), (Composition()([Gaussian(0.01)], [10**7]), 1e-100),
             (Gaussian(10000.0), 1.1667485173042017e-53),
             (Composition()([Gaussian(0.01), Gaussian(1.0)], [10**7, 845438]), 1e-12),
             (Composition()([Gaussian(10000.0), Gaussian(0.024521110426807137)], [1, 1]), 0.9999769744141629)]
    bad = [(m, d, m.delta(m.epsilon(d))) for m, d in cases if m.delta(m.epsilon(d)) > d]
    assert not bad, bad


def _known_swor_gaussian_tiny_q() -> None:
    # SampleWithoutReplacement(1e-24)(Gaussian(0.5955275438837219)).delta_bounds(1.5880057087398104e-15)
    #   observed (2.6826279619958508e-79, 5.005712872274142e-70), truth 3.15934579894486e-57:
    #   the upper bound is 13 orders of magnitude below the truth.
    q, s, e = 1e-24, 0.5955275438837219, 1.5880057087398104e-15
    lo, up = SampleWithoutReplacement(q)(Gaussian(s)).delta_bounds(e)
    check_delta_bracket(lo, up, mp_poisson_gaussian_delta(q, s, e))


def _known_delta_repeat_query() -> None:
    # m = Laplace(1.0); m.delta(0.0) = 0.3934693402877601, then m.delta(np.array([0.0]))[0] =
    #   0.39346934028776004 (one ulp lower; the same in the other order, and for Gaussian(1.0):
    #   0.38292492254841765 then 0.3829249225484176). Both are above the truth
    #   1 - e^-0.5 = 0.39346934028736658, so sound, but the answer depends on what was asked
    #   before: scalar != array entry on the same instance.
    m = Laplace(1.0)
    first = m.delta(0.0)
    assert m.delta(np.array([0.0]))[0] == first


def _known_rr_composed_delta_underflow() -> None:
    # Found by the long run: Composition()([RandomizedResponse(p)], [2000]) with log-odds 1e-4 at
    # eps just below the largest loss 0.2 had delta bracket (0.0, 0.0) against the truth
    # 8.7e-596: the tilted sums' exponentials underflowed to 0 (PLD, and phi's enumeration).
    # Upper bounds below 1e-300 now keep a margin for subnormal and underflowed terms.
    p = 1.0 / (1.0 + math.exp(-1e-4))
    m = Composition()([RandomizedResponse(p)], [2000])
    e = 0.9959340806948909 * 2000 * 1e-4
    with mp.workdps(60):
        truth = mp_rr_delta(mp.log(mpf(p) / (1 - mpf(p))), 2000, e)
    assert 0 < truth < mp.mpf(10) ** -590
    lo, up = m.delta_bounds(e)
    assert lo <= truth <= up
    assert truth <= m.delta(e, via="phi")


def _known_subsampled_gaussian_step_underflow() -> None:
    # Found by the long run: one Poisson-subsampled Gaussian step answered from its closed form
    # had the delta bracket (0.0, 0.0) where the truth is positive but below 1e-300 (8.2e-4350
    # at q = 1e-24, sigma = 6.21; 7.6e-380 at q = 0.1, sigma = 203): the closed form
    # underflowed. Its upper profile now keeps DELTA_FLOOR = 1e-300 below the largest loss.
    q, sigma = 1e-24, 6.213807999378473
    m = PoissonSubsample(q)(Gaussian(sigma))
    e = 0.12839042115581104 * m.epsilon_bounds(1e-300)[1]
    truth = mp_poisson_gaussian_delta(q, sigma, e)
    lo, up = m.delta_bounds(e)
    assert 0 < truth < mp.mpf(10) ** -4000 and lo <= truth <= up


def _known_swor_gaussian_step_beyond_grid_underflow() -> None:
    # Found by the long run: SampleWithoutReplacement(2.84e-20)(Gaussian(489.7)) at eps = 1.5
    # times its eps(1e-300) had the delta bracket (0.0, 0.0) against the truth 3.9e-16294008:
    # beyond its grid the upper PLD keeps only the mass moved to +inf, which underflowed.
    q, sigma = 2.839999269689791e-20, 489.7456402333318
    m = SampleWithoutReplacement(q)(Gaussian(sigma))
    e = 1.5 * m.epsilon_bounds(1e-300)[1]
    lo, up = m.delta_bounds(e)
    assert lo == 0.0 and up > 0.0 and mp_poisson_gaussian_delta(q, sigma, e) > 0


def _known_single_step_delta_not_monotone() -> None:
    # Found by the long run (scale 4): a closed-form single step's delta array was not
    # monotone at rounding level: PoissonSubsample(0.891)(Gaussian(20.1)) once, upper bound
    # at eps 1 + 4e-16 1.2e-11 relatively above that at eps 1 (also a subsampled Laplace and
    # a q = 1 - 3e-7 step). The array's bounds are now made monotone, as delta is.
    cases = [(PoissonSubsample(0.8912509381337456)(Gaussian(20.116499822332077)), [0.0, 1.0, 1.0000000000000004]),
             (PoissonSubsample(0.10524987849325775)(Laplace(0.01)), [1.0, 5.279628449436332, 1000.0]),
             (PoissonSubsample(0.9999997255105045)(Gaussian(0.010679825363391024)),
              [1e-06, 0.43052244127901673, 0.9999997255105045, 1000.0])]
    for m, es in cases:
        lo, up = Composition()([m], [1]).delta_bounds(np.array(es))
        assert np.all(up[1:] <= up[:-1]) and np.all(lo[1:] <= lo[:-1]) and np.all(lo <= up)


def _known_delta_beyond_max_loss_composed() -> None:
    # Found by the long run (scale 3): 10^7 runs of a without-replacement step of randomized
    # response at q = 1e-24 (p = 0.999999) have a largest loss of about 1e-11, yet delta(1000)
    # composed grids sized for eps = 1000 for 13 s of CPU (60 s under load, past the 30 s
    # limit) to answer 0. At and beyond the largest finite loss, with no mass at +inf, delta is 0
    # exactly: the PLD route now says so without composing anything.
    from unittest import mock

    from autoacct.pld import FFTAccountant
    m = Composition()([SampleWithoutReplacement(1e-24)(RandomizedResponse(0.999999))], [10 ** 7])
    with mock.patch.object(FFTAccountant, "delta", side_effect=AssertionError("composed")):
        for e in (1000.0, 1.0446357473463838e-06):
            assert m.delta_bounds(e) == (0.0, 0.0)
        lo, up = m.delta_bounds(np.array([1000.0, 2.6551317272736607e-05]))
    assert np.all(lo == 0.0) and np.all(up == 0.0)


def _known_tilt_at_the_grids_last_exponent() -> None:
    # Found by the long run (scale 2): 10^7 runs each of a discrete Gaussian (sigma = 0.1) and an
    # exponential mechanism (eps = 0.001), composed, at delta = 0.999999: the Chernoff-optimal
    # tilt was the exponent grid's last one, and the tilt choice's curvature read past the grid's
    # end (IndexError). The curvature is now taken on the three exponents nearest the tilt.
    ms = [Composition()([PoissonSubsample(1.0)(DiscreteGaussian(0.1))], [10 ** 7]),
          Composition()([PoissonSubsample(1.0)(ExponentialMechanism(0.001))], [10 ** 7])]
    # The run after that fix found the same composition leaking "RuntimeWarning: invalid value
    # encountered in cast" at delta = 7.3e-5: window ends past int64 (now kept within 2^62).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", AccuracyWarning)
        lo, up = Composition()(ms, [1, 1]).epsilon_bounds(np.array([7.306392864351051e-05, 0.999999]))
    assert np.all(0.0 <= lo) and np.all(lo <= up) and np.all(up < math.inf)


def _known_window_of_an_infinite_cumulant() -> None:
    # Found by the final long run (scale 2): 10^7 runs each of PoissonSubsample(1e-24) of
    # Gaussian(1) and of Gaussian(0.01) leaked "RuntimeWarning: invalid value encountered in
    # subtract" from the window's cumulant differences (K is +inf at large exponents: inf - inf).
    ms = [Composition()([PoissonSubsample(1e-24)(Gaussian(1.0))], [10 ** 7]),
          Composition()([PoissonSubsample(1e-24)(Gaussian(0.01))], [10 ** 7])]
    # The drawn case's own sequence of queries (a leaked warning fails it).
    check_invariants(Composition()(ms, [1, 1]), [1e-100, 1e-300, 1e-300],
                     [0.0, 0.0016649080961098515, 0.0016649080961098515])


def _known_untilted_coarse_mass_overflowed() -> None:
    # Found by the long run (scale 2): 10^7 runs of ExponentialMechanism(2.8007292261884733) at
    # delta = 1e-300 leaked "RuntimeWarning: overflow encountered in exp", then in matmul: a
    # level's window capped at 2^22 points left rounding-level tilted masses far left, and
    # untilting them (e^{K - lam x}) passed the float range. Such a level is now not used, as
    # one whose masses underflow was not.
    m = Composition()([ExponentialMechanism(2.8007292261884733)], [10 ** 7])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", AccuracyWarning)
        lo, up = m.epsilon_bounds(1e-300)
    assert 0.0 <= lo <= up < math.inf


def _known_subsampled_gaussian_step_leaked_warning() -> None:
    # Found by the long run: PoissonSubsample(1e-23)(Gaussian(1000.0)).epsilon_bounds(1e-300)
    # leaked "RuntimeWarning: invalid value encountered in multiply" (0 * inf in the Gaussian
    # profile's error bound where its relative bound is infinite).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", AccuracyWarning)
        lo, up = PoissonSubsample(1e-23)(Gaussian(1000.0)).epsilon_bounds(1e-300)
    assert 0.0 <= lo <= up < math.inf


def _known_scalar_delta_not_array_entry() -> None:
    # Once a strict xfail asking the scalar delta query to equal the array query's entry. On
    # fresh instances, m = Composition()([PureDP(1.9132162975296686e-06)], [10]):
    #   m.delta(1e-6) = 1.9772013141045728e-06 (also delta(np.array([1e-6]))[0]), but
    #   m.delta(np.array([1e-6, 1e-6, 1e-6]))[1] = 1.9772013129500127e-06;
    #   Composition()([ApproxDP(1e-6, 0.0)], [10]): delta(1e-6) = 8.535166291809761e-07,
    #   delta(np.array([0.0, 1e-6, 1000.0]))[1] = 8.535166344750625e-07.
    # The array is one accountant run (its grid sized by its largest eps, untilted), the scalar
    # query is aimed at its eps: equal answers would cost a run per entry. The contract kept
    # (README, Consistency): both bound the truth, and the brackets overlap. The truth: k runs
    # of eps0-DP are dominated by k runs of randomized response with log-odds eps0, whose delta
    # is an exact binomial sum (the bound is attained, so it is the truth for that pair).
    cases = ((PureDP(1.9132162975296686e-06), 1.9132162975296686e-06, [1e-6, 1e-6, 1e-6]),
             (ApproxDP(1e-6, 0.0), 1e-6, [0.0, 1e-6, 1000.0]))
    for base, eps0, es in cases:
        truth = float(mp_rr_delta(mpf(eps0), 10, 1e-6))
        slo, sup = Composition()([fresh(base)], [10]).delta_bounds(1e-6)
        alo, aup = (a[1] for a in Composition()([fresh(base)], [10]).delta_bounds(np.array(es)))
        assert max(slo, alo) <= truth * (1 + 1e-12) and truth <= min(sup, aup)
        assert slo <= aup and alo <= sup
        assert abs(sup - aup) <= 1e-3 * max(sup, aup)


def _known_laplace_lower_above_truth() -> None:
    # Laplace(0.001).delta_bounds(0.99999 / 0.001)
    #   observed (0.004987520807308174, 0.00498752080731815), truth 1 - e^((eps - 1/b)/2) with
    #   the float b = 0.001 exactly: 0.0049875208073028054 (the lower bound is 1.1e-12 relative
    #   above; 1/b rounded to 1000.0 unaccounted, it seems).
    b, e = 0.001, 0.99999 / 0.001
    lo, up = Laplace(b).delta_bounds(e)
    check_delta_bracket(lo, up, mp_laplace_delta(b, e))


def _known_laplace_upper_at_one_over_b() -> None:
    # Laplace(5.623).delta_bounds(1 / 5.623): at eps = fl(1/b) the upper bound was 0 against the
    #   truth 1 - e^((fl(1/b) - 1/b)/2) = 1.85e-18 (fl(1/b) is below 1/b).
    b = 5.623
    lo, up = Laplace(b).delta_bounds(1 / b)
    check_delta_bracket(lo, up, mp_laplace_delta(b, 1 / b))


def _known_gaussian_tradeoff_above_truth() -> None:
    # Gaussian(0.027428794482378425).tradeoff(1e-300)
    #   observed 0.7220893026813894, truth Phi(Phi^-1(1 - 1e-300) - 1/sigma) = 0.72208930268138914
    #   (checked by a 100-digit bisection for Phi^-1): 2.4e-16 above, so not a lower bound.
    #   At alpha = 1e-300 about one sigma in 15 near mu = 36.5 fails (up to 9.6e-16 relative).
    s = 0.027428794482378425
    with mp.workdps(60):
        mu = 1 / mpf(s)
    assert mpf(Gaussian(s).tradeoff(1e-300)) <= mp_gaussian_tradeoff(mu, 1e-300)


def _known_discrete_gaussian_delta_of_epsilon() -> None:
    # m = DiscreteGaussian(1000.0); m.delta(m.epsilon(7.018558754205199e-138))
    #   observed 5.634370345946255e-42, far above d = 7.0e-138 (one of the two is far off).
    m, d = DiscreteGaussian(1000.0), 7.018558754205199e-138
    assert m.delta(m.epsilon(d)) <= d


def _known_rr_composed_eps_below_k_eps0() -> None:
    # eps0 = 1e-4, p = 1/(1 + e^-eps0) = 0.5000249999999792; 62 randomized responses:
    # Composition()([RandomizedResponse(p)], [62]).epsilon_bounds(1e-300)[1] = 0.006200000000003447,
    # below the truth 62 log(p/(1-p)) = 0.0062000000000034466777 (exact p): delta there is
    # 1.9e-38 > 1e-300. The PLD route's loss law is randomized response with log-odds
    # scipy.special.logit(p), 9.3e-21 (0.6 ulp) below log(p/(1-p)), and the composed support's top
    # 62 logit(p) was not rounded up (the dp route rounds logit(p) up by two ulps and is sound).
    # Fixed: an upper profile's answer at its support's top gets the margin every solved eps gets.
    # The same at k = 5 (fresh draw, --hypothesis-seed=42): RandomizedResponse(p) with
    # p = 1/(1 + e^-0.31071101790918393), composed 5 times, epsilon_bounds(1e-300)[1] =
    # 1.5535550895459196, below 5 log(p/(1-p)). The CI draw has not hit it.
    eps0 = 1e-4
    p = 1.0 / (1.0 + math.exp(-eps0))
    lo, up = Composition()([RandomizedResponse(p)], [62]).epsilon_bounds(1e-300)
    with mp.workdps(60):
        e0 = mp.log(mpf(p) / (1 - mpf(p)))
    check_eps_against_delta_truth(lo, up, 1e-300, lambda e: mp_rr_delta(e0, 62, e))


def _known_pair_loss_above_709() -> None:
    # DiscretePair((a, 1 - a), (1e-322, 1 - 1e-322)), a = 1/(1 + e^-1) = 0.7310585786300049: the
    # first outcome's loss is log(a / 1e-322) = 741.13. The true delta at eps = 720 is
    # a (1 - e^(720 - 741.13)) + 0 = 0.73105857862... (the second outcome's loss is negative), but
    # delta_bounds(720.0) = (0.0, 1.675e-13), and epsilon_bounds(0.5) = (709.78, 709.78) against
    # the true 739.98 (phi, rdp and dp routes: 739.98, 739.98, 740.44). Found by
    # AUTOACCT_PROPERTY_RANDOM=1 --hypothesis-seed=11.
    a = 0.7310585786300049
    m = DiscretePair((a, 1.0 - a), (1e-322, 1.0 - 1e-322))
    truth = a * -math.expm1(720.0 - math.log(a) + math.log(1e-322))
    lo, up = m.delta_bounds(720.0)
    assert lo <= truth <= up, (lo, up, truth)
    # eps(0.5): a (1 - e^(eps - L)) = 0.5 with L = log(a / 1e-322), the second outcome's loss negative.
    eps_truth = math.log(a) - math.log(1e-322) + math.log1p(-0.5 / a)
    lo, up = m.epsilon_bounds(0.5)
    assert lo <= eps_truth <= up, (lo, up, eps_truth)


FORMER_FAILURES: dict[str, Callable[[], None]] = {
    "pair-loss-above-709": _known_pair_loss_above_709,
    "rr-delta-upper-below-truth": _known_rr_upper_below_truth,
    "rr-delta-lower-above-truth": _known_rr_lower_above_truth,
    "approxdp-delta-upper-below-truth": _known_approxdp_upper_below_truth,
    "approxdp-eps-upper-below-truth": _known_approxdp_eps_upper_below_truth,
    "poisson-rr-tiny-q-eps-zero": _known_poisson_rr_tiny_q,
    "rr-composed-eps-below-k-eps0": _known_rr_composed_eps_below_k_eps0,
    "poisson-gaussian-tiny-q-eps-zero": _known_poisson_gaussian_tiny_q,
    "swor-gaussian-tiny-q-delta-upper": _known_swor_gaussian_tiny_q,
    "gaussian-delta-of-epsilon-above-delta": _known_gaussian_delta_of_epsilon,
    "discrete-gaussian-delta-of-epsilon-above-delta": _known_discrete_gaussian_delta_of_epsilon,
    "delta-repeat-query-one-ulp-lower": _known_delta_repeat_query,
    "gaussian-tradeoff-above-truth": _known_gaussian_tradeoff_above_truth,
    "laplace-delta-lower-above-truth": _known_laplace_lower_above_truth,
    "laplace-delta-upper-zero-at-eps-1-over-b": _known_laplace_upper_at_one_over_b,
    "scalar-delta-not-array-entry": _known_scalar_delta_not_array_entry,
    "rr-composed-delta-upper-underflow": _known_rr_composed_delta_underflow,
    "subsampled-gaussian-step-delta-underflow": _known_subsampled_gaussian_step_underflow,
    "subsampled-gaussian-step-leaked-warning": _known_subsampled_gaussian_step_leaked_warning,
    "swor-gaussian-step-beyond-grid-underflow": _known_swor_gaussian_step_beyond_grid_underflow,
    "single-step-delta-not-monotone": _known_single_step_delta_not_monotone,
    "composed-delta-beyond-max-loss": _known_delta_beyond_max_loss_composed,
    "tilt-at-the-grids-last-exponent": _known_tilt_at_the_grids_last_exponent,
    "window-of-an-infinite-cumulant": _known_window_of_an_infinite_cumulant,
    "untilted-coarse-mass-overflowed": _known_untilted_coarse_mass_overflowed,
}

KNOWN_FAILURES: dict[str, tuple[Callable[[], None], str]] = {}


@pytest.mark.parametrize("case", sorted(FORMER_FAILURES))
def test_former_failures(case):
    FORMER_FAILURES[case]()


@pytest.mark.parametrize("case", [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason))
                                  for name, (_, reason) in sorted(KNOWN_FAILURES.items())])
def test_known_failures(case):
    KNOWN_FAILURES[case][0]()
