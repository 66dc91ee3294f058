"""autoacct.risk: attack-risk views (TPR at FPR, advantage, GDP mu, exported PLDs) against truths
computed here: the Gaussian tradeoff Phi(Phi^-1(a) + mu) in closed form, the exact
Neyman-Pearson curve of randomized-response compositions from binomial sums, and the analytic
Gaussian profile of Balle and Wang (2018)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, rr_composition_tpr, rr_delta_closed
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from autoacct import risk
from autoacct.dpsgd import dpsgd
from autoacct.pld.compose import LAW_REL
from autoacct.zoo import ZCDP, ApproxDP, Composition, Gaussian, Laplace, PureDP, RandomizedResponse

FPR = np.concatenate(([0.0], np.geomspace(1e-9, 1.0, 120), np.linspace(0.0, 1.0, 41)))


def gaussian_tpr(mu: float, fpr: np.ndarray) -> np.ndarray:
    return stats.norm.cdf(stats.norm.ppf(fpr) + mu)


# ----- TPR at FPR -------------------------------------------------------------------------------

@pytest.mark.parametrize("sigma, k", [(2.0, 4), (0.5, 1), (5.0, 30)])
def test_gaussian_tpr_is_the_closed_form(sigma: float, k: int):
    m = Composition()([Gaussian(sigma)], [k])
    truth = gaussian_tpr(math.sqrt(k) / sigma, FPR)
    got = m.tpr(FPR)
    assert got.shape == FPR.shape
    assert np.all(got >= truth)
    np.testing.assert_allclose(got, truth, atol=1e-6, rtol=0)
    assert m.tpr(0.01) == pytest.approx(float(gaussian_tpr(math.sqrt(k) / sigma, np.array(0.01))), abs=1e-6)
    assert isinstance(m.tpr(0.01), float)


@pytest.mark.parametrize("p, k", [(0.75, 20), (0.6, 5), (0.9, 1), (0.55, 200)])
def test_randomized_response_tpr_is_the_neyman_pearson_curve(p: float, k: int):
    m = Composition()([RandomizedResponse(p)], [k])
    truth = rr_composition_tpr(p, k, FPR)
    got = m.tpr(FPR)
    # The reference's own sums and interpolation round: a margin of 1e-14 absolute.
    assert np.all(got >= truth - 1e-14)
    np.testing.assert_allclose(got, truth, atol=1e-6, rtol=0)
    lower, upper = risk.tpr_bounds(m, FPR)
    assert np.all(lower <= truth + 1e-14) and np.all(upper >= truth - 1e-14)
    np.testing.assert_allclose(lower, truth, atol=1e-6, rtol=0)


def test_dpsgd_tpr_is_never_below_a_finer_reference():
    m = dpsgd(0.01, 1.1, 1000)
    got = m.tpr(FPR)
    # A finer composition's certified lower bound on the largest TPR (lower PLDs, tol 1e-5).
    fine_lower, fine_upper = risk.tpr_bounds(dpsgd(0.01, 1.1, 1000), FPR, tol=1e-5)
    assert np.all(got >= fine_lower)
    assert np.all(fine_lower <= fine_upper)
    # And tight: the default curve is within 1e-3 (relative) of the fine lower bound.
    assert np.all(got - fine_lower <= 1e-3 * fine_lower + 1e-9)
    tpr_1e3 = m.tpr(1e-3)
    assert 1e-3 < tpr_1e3 < 0.01


def test_tpr_bounds_of_a_gaussian_are_exact():
    lower, upper = risk.tpr_bounds(Gaussian(1.0), FPR)
    truth = gaussian_tpr(1.0, FPR)
    assert np.all(lower <= truth) and np.all(truth <= upper)
    np.testing.assert_allclose(lower, upper, atol=1e-12, rtol=0)


@pytest.mark.parametrize("make, fpr, truth", [
    # Pure eps-DP and randomized response: the best test reaches TPR = e^eps a exactly at small a.
    (lambda: PureDP(1.0), 1e-6, math.e * 1e-6),
    (lambda: RandomizedResponse(0.9), 1e-15, 9.0 * 1e-15),
    (lambda: Laplace(1.0), 1e-12, math.e * 1e-12),
    # (eps, delta)-DP: its pair reaches delta + e^eps a.
    (lambda: ApproxDP(1.0, 1e-20), 1e-300, 1e-20),
])
def test_tpr_bounds_upper_end_holds_far_below_the_unit_roundoff(make, fpr: float, truth: float):
    # 1 - (a tradeoff value within an ulp of 1) cannot resolve a TPR below 1e-16: the upper
    # end was 1e-300 for ApproxDP(1, 1e-20), and e^1 1e-6 less 5e-17 for PureDP(1).
    lower, upper = risk.tpr_bounds(make(), fpr)
    assert lower <= truth <= upper
    assert upper <= truth * (1 + 1e-6)


def _two_point_np_tpr(a: float, b: float, k: int, fpr: np.ndarray) -> np.ndarray:
    """The Neyman-Pearson TPR at ``fpr`` of k runs of the two-point pair P = (a, 1 - a) against
    Q = (b, 1 - b), a > b: the count j of first outcomes is sufficient, its likelihood ratio
    rises with j, so the best tests take the largest j first, randomising on the boundary
    (linear interpolation of the cumulative sums)."""
    j = np.arange(k, -1, -1)
    tpr = np.concatenate(([0.0], np.cumsum(stats.binom.pmf(j, k, a))))
    fp = np.concatenate(([0.0], np.cumsum(stats.binom.pmf(j, k, b))))
    return np.interp(fpr, fp, np.minimum(tpr, 1.0))


@pytest.mark.parametrize("q, p, k", [(0.1, 0.8, 40), (0.02, 0.9, 150)])
def test_tpr_lower_end_without_replacement_is_an_attained_attack(q: float, p: float, k: int):
    """k runs of randomized response sampled without replacement: the lower end of the TPR
    comes from the Poisson-like pair (q P + (1 - q) Q, Q) that fixed datasets attain at every
    run, so it lies below that pair's exact Neyman-Pearson curve (an attack on the mechanism),
    is the lower end of Poisson subsampling's composition (the same pair), and lies above
    guessing (it was fpr before)."""
    from autoacct.zoo import PoissonSubsample, SampleWithoutReplacement

    m = Composition()([SampleWithoutReplacement(q)(RandomizedResponse(p))], [k])
    fpr = np.array([1e-4, 1e-3, 0.01, 0.05, 0.2, 0.5])
    lower, upper = risk.tpr_bounds(m, fpr)
    mixed = q * p + (1 - q) * (1 - p)
    # Both directions: (P', Q) and (Q, P') with P' the mixture; as counts of the first outcome
    # the second is the pair (1 - p, 1 - mixed) up to relabelling the outcomes.
    attack = np.maximum(_two_point_np_tpr(mixed, 1 - p, k, fpr), _two_point_np_tpr(p, 1 - mixed, k, fpr))
    assert np.all(lower <= attack * (1 + 1e-9)) and np.all(lower <= upper)
    poisson = risk.tpr_bounds(Composition()([PoissonSubsample(q)(RandomizedResponse(p))], [k]), fpr)
    np.testing.assert_array_equal(lower, poisson[0])
    assert np.all(lower > fpr * 1.01) and np.all(attack - lower <= 0.25 * attack)


# ----- advantage --------------------------------------------------------------------------------

@pytest.mark.parametrize("mu", [0.1, 1.0, 3.0])
def test_gaussian_advantage(mu: float):
    m = Gaussian(1.0 / mu)
    truth = 2 * stats.norm.cdf(mu / 2) - 1
    assert truth <= m.advantage() <= truth + 1e-12
    lo, up = risk.advantage_bounds(m)
    assert lo <= truth <= up


@pytest.mark.parametrize("m", [Composition()([RandomizedResponse(0.75)], [20]), dpsgd(0.01, 1.1, 1000),
                               Laplace(1.0)], ids=["rr", "dpsgd", "laplace"])
def test_advantage_agrees_with_the_roc(m):
    """max_a (TPR(a) - a) read off the certified curve agrees with the certified delta(0)."""
    a = np.linspace(0.0, 1.0, 20_001)
    from_roc = float(np.max(m.tpr(a) - a))
    adv = m.advantage()
    assert from_roc <= adv * (1 + 1e-3) + 1e-9
    assert adv <= from_roc * (1 + 1e-2) + 1e-4


def test_rr_advantage_is_the_total_variation():
    truth = rr_delta_closed(math.log(3.0), 20, 0.0)
    adv = Composition()([RandomizedResponse(0.75)], [20]).advantage()
    assert truth <= adv <= truth * (1 + 1e-9) + 1e-15


# ----- GDP mu -----------------------------------------------------------------------------------

def test_gdp_mu_of_an_exactly_gdp_mechanism():
    assert Composition()([Gaussian(2.0)], [4]).gdp_mu() == (1.0, 1.0)


def test_gdp_mu_of_randomized_response_is_certified():
    p, k = 0.75, 20
    certified, estimate = Composition()([RandomizedResponse(p)], [k]).gdp_mu()
    eps0 = math.log(p / (1 - p))
    grid = np.linspace(0.0, k * eps0, 801)
    exact = np.array([rr_delta_closed(eps0, k, e) for e in grid])

    def gdp(mu: float) -> np.ndarray:
        return np.array([max(gaussian_delta_closed(mu, e), 0.0) for e in grid])

    assert np.all(exact <= gdp(certified) * (1 + 1e-9) + 1e-300)      # sound
    assert np.any(exact > gdp(certified * 0.99))                        # and within 1%
    # The estimate meets the profile at delta 1e-5.
    eps5 = Composition()([RandomizedResponse(p)], [k]).epsilon(1e-5)
    assert gaussian_delta_closed(estimate, eps5) == pytest.approx(1e-5, rel=1e-6)
    assert estimate <= certified


# ----- exported PLDs ----------------------------------------------------------------------------

def hockey(losses: np.ndarray, pmf: np.ndarray, eps: float) -> float:
    return float(np.sum(np.where(losses > eps, -np.expm1(np.minimum(eps - losses, 0.0)), 0.0) * pmf))


def test_pld_export_of_a_gaussian_composition():
    m = Composition()([Gaussian(2.0)], [4])            # 1-GDP
    remove, add = m.pld()
    assert (remove.direction, add.direction) == ("remove", "add")
    for d in (remove, add):
        assert np.all(d.pmf_upper >= 0) and np.all(d.pmf_lower >= 0)
        assert d.pmf_upper.sum() + d.inf_mass <= 1 + 1e-9
        assert d.pmf_lower.sum() + d.inf_mass_lower <= 1 + 1e-9
        np.testing.assert_allclose(d.losses, (d.offset + np.arange(d.losses.size)) * d.h, rtol=1e-12)
        for eps in (0.0, 0.5, 1.0, 2.0, 4.0):
            truth = gaussian_delta_closed(1.0, eps)
            up = (hockey(d.losses, d.pmf_upper, eps) + d.inf_mass
                  + math.exp(d.error_log_scale - d.error_rate * eps))
            low = (hockey(d.losses, d.pmf_lower, eps) + d.inf_mass_lower
                   - math.exp(d.error_log_scale_lower - d.error_rate_lower * eps))
            assert low <= truth <= up
            # Accurate to the tolerance on the eps scale, and never below the mechanism's answer.
            # At eps = 0 that is delta itself: one step (the four Gaussians merge) is exported
            # with its masses scaled up by LAW_REL, whose sum then rounds by a few ulps more
            # (3e-15 relatively on an AVX-512 machine, where the bound had no room for it).
            assert up <= gaussian_delta_closed(1.0, eps * (1 - d.tol)) * (1 + LAW_REL) * (1 + 1e-12) + 1e-15
            assert float(m.delta(eps, via="pld")) <= up * (1 + 1e-9)


def test_pld_export_of_randomized_response_is_its_binomial_law():
    p, k = 0.75, 20
    remove, _ = Composition()([RandomizedResponse(p)], [k]).pld()
    eps0 = math.log(p / (1 - p))
    j = np.arange(k + 1)
    truth = dict(zip(np.round(eps0 * (2 * j - k) / remove.h).astype(int), stats.binom.pmf(j, k, p)))
    got = dict(zip(remove.offset + np.arange(remove.losses.size), remove.pmf_upper))
    for idx, mass in truth.items():
        assert got[idx] == pytest.approx(mass, rel=1e-9, abs=1e-14)   # FFT round-off: absolute
    for eps in (0.0, 1.0, 5.0):
        up = hockey(remove.losses, remove.pmf_upper, eps) + remove.inf_mass
        assert up == pytest.approx(rr_delta_closed(eps0, k, eps), rel=1e-9, abs=1e-15)


def test_pld_of_a_mechanism_without_laws_is_unavailable():
    from autoacct.errors import RouteUnavailableError
    with pytest.raises(RouteUnavailableError):
        ZCDP(0.5).pld()


# ----- properties -------------------------------------------------------------------------------

_MECHANISMS = [Composition()([Gaussian(1.5)], [3]), Composition()([RandomizedResponse(0.7)], [6]),
               Laplace(0.8), Composition()([Laplace(2.0)], [3])]


@settings(derandomize=True, max_examples=25, deadline=None)
@given(i=st.integers(0, len(_MECHANISMS) - 1),
       fpr=st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=20))
def test_tpr_is_a_monotone_curve_above_the_diagonal(i: int, fpr: list[float]):
    a = np.sort(np.array(fpr))
    t = _MECHANISMS[i].tpr(a)
    assert not np.any(np.isnan(t))
    assert np.all(t >= a) and np.all(t <= 1.0)
    assert np.all(np.diff(t) >= 0)
