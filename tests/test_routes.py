"""The routes and the auto policy: the (eps, delta)-DP route, the pure-DP limit of the RDP
route, Renyi orders 1 and infinity, the single-step closed form, and outward rounding.

Truths are closed forms computed here: basic composition, the leaky randomized
response's profile, the Laplace pair's profile 1 - e^{(eps - 1/b)/2}, KL divergences
of the Laplace and randomized-response pairs, and exact sums over two outcomes.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from closed_forms import mp_gaussian_tradeoff
from hypothesis import given, settings
from hypothesis import strategies as st

from autoacct.exactness import outward
from autoacct.zoo import (
    ApproxDP,
    Composition,
    DiscreteGaussian,
    DiscreteLaplace,
    ExponentialMechanism,
    Gaussian,
    Laplace,
    NoisyGD,
    PoissonSubsample,
    PureDP,
    RandomizedResponse,
    SampleWithoutReplacement,
)

ULP3 = float(np.nextafter(3.0, 4.0))


# ----- the (eps, delta)-DP route ------------------------------------------------------------

def test_basic_composition_of_pure_dp_is_exact():
    m = Composition()([ExponentialMechanism(1.0), ExponentialMechanism(2.0)])
    assert m.dp_guarantee() == (3.0, 0.0)
    # Before the dp route the PLD alone gave 3.00205 here.
    # 1 + 2 is exact in floats, so the API's outward rounding leaves it (ExactFloat).
    assert m.epsilon(1e-300) == 3.0 and m.epsilon([1e-300])[0] == 3.0
    assert m.delta(3.0) == 0.0
    assert Composition()([PureDP(0.5)], [4]).epsilon(1e-300) == 2.0


def test_a_rational_guarantee_that_floats_cannot_hold_is_rounded_up():
    # 1/3 is not a float: Laplace(3)'s guarantee is the float above it, and three runs sum
    # to the float at or above 3 * that (never below the true 1).
    assert Laplace(3.0).dp_guarantee()[0] > 1 / 3
    assert Composition()([Laplace(3.0)], [3]).epsilon(1e-300) >= 1.0


def test_approximate_dp_composition_is_never_below_the_exact_delta():
    # Two leaky randomized responses: at eps = 3 only the two leaks remain,
    # delta = 1 - (1 - 0.1)(1 - 0.2) = 0.28 exactly; the PLD's float gave one ulp below. (The
    # upper profile is read a few ulps below eps, where a lattice point may lie from its loss
    # (DiscreteProfile.slack): in the top atom's cell, whose error term is the cell's left end's,
    # 9e-13 above 0.28.)
    m = Composition()([ApproxDP(1.0, 0.1), ApproxDP(2.0, 0.2)])
    lo, up = m.delta_bounds(3.0)
    assert up >= 0.28 and up - 0.28 < 1e-11
    assert lo <= 0.28
    assert m.dp_guarantee() == (3.0, pytest.approx(0.3, rel=1e-15))


def test_dp_route_profile_and_tradeoff_are_the_leaky_rr_closed_forms():
    eps0, d0 = 1.3, 1e-3
    m = ApproxDP(eps0, d0)
    eps = np.array([0.0, 0.4, 1.0, 1.3, 2.0])
    want = d0 + (1 - d0) * np.maximum(np.exp(eps0) - np.exp(eps), 0) / (np.exp(eps0) + 1)
    got = m.delta(eps, via="dp")
    assert np.all(got >= want) and np.allclose(got, want, rtol=1e-13)
    fpr = np.array([0.0, 0.01, 0.2, 0.9])
    f = np.maximum.reduce([np.zeros(4), 1 - d0 - np.exp(eps0) * fpr, np.exp(-eps0) * (1 - d0 - fpr)])
    t = m.tradeoff(fpr, via="dp")
    assert np.all(t <= f) and np.allclose(t, f, atol=1e-14)
    # epsilon(delta) inverts the profile: delta(eps) at the answer is at most delta.
    for delta in (2e-3, 0.05, 0.3):
        e = m.epsilon(delta, via="dp")
        assert m.delta(e, via="dp") <= delta * (1 + 1e-12)
    assert m.epsilon(1e-4, via="dp") == math.inf  # below delta0 no eps is certified


def test_amplification_of_pure_dp_by_poisson_sampling():
    q, eps0 = 0.05, 2.0
    m = PoissonSubsample(q)(PureDP(eps0))
    amp = math.log1p(q * math.expm1(eps0))
    g = m.dp_guarantee()
    assert g is not None and amp <= g[0] <= amp * (1 + 1e-14) and g[1] == 0.0
    # The max divergence of the subsampled pair is that amplified epsilon, and the auto
    # answer at any delta is at most it.
    assert m.rdp(math.inf) == pytest.approx(amp, rel=1e-13)
    assert m.epsilon(1e-300) <= amp * (1 + 1e-13)
    w = SampleWithoutReplacement(q)(PureDP(eps0))
    assert w.dp_guarantee()[0] == pytest.approx(amp, rel=1e-14)


def test_dp_guarantee_absent_where_no_pure_or_approximate_guarantee_exists():
    assert Gaussian(1.0).dp_guarantee() is None
    assert PoissonSubsample(0.1)(Gaussian(1.0)).dp_guarantee() is None
    assert Composition()([Laplace(1.0), Gaussian(1.0)]).dp_guarantee() is None
    assert "dp" not in Gaussian(1.0).routes and "dp" in Laplace(1.0).routes


# ----- the RDP route's orders 1 and infinity ---------------------------------------------------

def test_rdp_order_one_is_the_kl_divergence():
    b = 0.7
    x = 1 / b
    assert Laplace(b).rdp(1.0) == pytest.approx(x + math.exp(-x) - 1, rel=1e-14)
    assert Gaussian(2.0).rdp(1) == pytest.approx(1 / 8, rel=1e-15)
    p = 0.8
    eps = math.log(p / (1 - p))
    kl = p * math.log(p / (1 - p)) + (1 - p) * math.log((1 - p) / p)
    assert RandomizedResponse(p).rdp(1.0) == pytest.approx(kl, rel=1e-14)
    assert PureDP(eps).rdp(1.0) == pytest.approx(kl, rel=1e-14)
    assert DiscreteGaussian(2.0).rdp(1.0) == pytest.approx(1 / 8, rel=1e-14)
    # Two-point sum for the discrete Laplace with sensitivity 1: atoms +-1/t.
    t = 1.5
    r = math.exp(-1 / t)
    kl_dl = (1 / (1 + r)) * (1 / t) + (r / (1 + r)) * (-1 / t)
    assert DiscreteLaplace(t).rdp(1.0) == pytest.approx(kl_dl, rel=1e-13)


def test_rdp_order_one_of_a_curve_without_a_value_there_is_an_upper_bound():
    m = PoissonSubsample(0.01)(Laplace(1.0))
    kl = m.rdp(1.0)
    assert math.isfinite(kl) and kl <= m.rdp(2.0) * (1 + 1e-12)


def test_rdp_order_infinity_is_the_max_divergence():
    assert Laplace(0.5).rdp(math.inf) == pytest.approx(2.0, rel=1e-15)
    assert RandomizedResponse(0.75).rdp(math.inf) == pytest.approx(math.log(3), rel=1e-15)
    assert Gaussian(1.0).rdp(math.inf) == math.inf
    assert Composition()([Laplace(1.0), Laplace(2.0)], [2, 3]).rdp(math.inf) == pytest.approx(3.5, rel=1e-15)
    alphas = np.array([1.0, 2.0, 10.0, 100.0, math.inf])
    vals = Laplace(1.0).rdp(alphas)
    assert np.all(np.diff(vals) >= 0)


def test_rdp_conversion_uses_the_pure_dp_limit():
    # Before: 1.00121 at delta 1e-10 (orders stopped short of infinity).
    assert Laplace(1.0).epsilon(1e-10, via="rdp") <= 1.0
    assert Laplace(1.0).delta(1.0, via="rdp") == 0.0
    assert np.all(Laplace(1.0).delta(np.array([0.5, 1.0, 2.0]), via="rdp")[1:] == 0.0)


def test_rdp_orders_below_one_are_rejected_with_the_range():
    with pytest.raises(ValueError, match=r"alpha must lie in \[1.0, inf\]"):
        Laplace(1.0).rdp(0.5)


# ----- single steps in closed form -------------------------------------------------------------

def test_single_laplace_step_is_its_closed_form():
    # dp_accounting's test asserts 0.5276334 to 5e-8; the PLD used to give 0.5276614.
    b = 0.5
    for eps in (0.0, 0.5, 1.0, 1.999):
        want = -math.expm1((eps - 1 / b) / 2)
        lo, up = Laplace(b).delta_bounds(eps)
        # Width: a relative 1e-12 each way, plus the absolute rounding of 1/b and eps - 1/b.
        assert lo <= want <= up and up - lo <= 1e-11 * want + 1e-14
    assert Laplace(b).delta(2.5) == 0.0
    delta = 1e-3
    want = 1 / b + 2 * math.log1p(-delta)
    lo, up = Laplace(b).epsilon_bounds(delta)
    assert lo <= want <= up and up - lo < 1e-11


# ----- q = 0 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("sampler", [PoissonSubsample, SampleWithoutReplacement])
@pytest.mark.parametrize("base", [Gaussian(1.0), Laplace(0.3), PureDP(2.0)], ids=["gauss", "lap", "pure"])
def test_sampling_rate_zero_reveals_nothing(sampler, base):
    m = sampler(0.0)(base)
    assert m.epsilon(1e-5) == 0.0 and m.epsilon_bounds(1e-9) == (0.0, 0.0)
    assert m.delta(0.0) == 0.0 and m.rdp(2.0) == 0.0
    assert m.tradeoff(0.3) == pytest.approx(0.7, abs=1e-14)
    # Composed with another mechanism it adds nothing.
    other = Laplace(2.0) if sampler is PoissonSubsample else SampleWithoutReplacement(0.1)(Laplace(2.0))
    both = Composition()([m, other], [5, 1])
    assert both.epsilon(1e-6) == pytest.approx(other.epsilon(1e-6), rel=1e-12)


# ----- outward rounding ----------------------------------------------------------------------

def test_outward_rounding_moves_bounds_away_from_the_truth_and_keeps_exact_ends():
    assert outward(0.28, upper=True) > 0.28 and outward(0.28, upper=False) < 0.28
    assert outward(0.0, upper=True) == 0.0 and outward(math.inf, upper=True) == math.inf
    assert outward(1.0, upper=True, cap=1.0) == 1.0
    assert outward(np.array([0.1, -0.0]), upper=False).tolist() == [np.nextafter(0.1, 0), 0.0]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(eps0=st.floats(0.01, 5.0), d0=st.floats(0.0, 0.2), k=st.integers(1, 4), eps=st.floats(0.0, 10.0))
def test_composed_approx_dp_delta_never_below_the_exact_sum(eps0, d0, k, eps):
    # k-fold leaky RR: outcomes with a leak have infinite loss; the rest is k-fold RR,
    # whose delta is a binomial sum. Computed here exactly in fractions of floats.
    m = Composition()([ApproxDP(eps0, d0)], [k])
    p = 1 / (1 + math.exp(-eps0))
    j = np.arange(k + 1)
    loss = eps0 * (2 * j - k)
    pm = np.array([math.comb(k, int(i)) * p ** i * (1 - p) ** (k - i) for i in j])
    rr = float(np.sum(np.where(loss > eps, pm * -np.expm1(np.minimum(eps - loss, 0)), 0.0)))
    want = 1 - (1 - d0) ** k + (1 - d0) ** k * rr
    assert m.delta(eps) >= want * (1 - 1e-12) - 1e-15


# ----- soundness reproducers (each once returned a bound on the wrong side of the truth) ------

def _gaussian_delta_mp(mu: float, eps: float) -> mp.mpf:
    mp.mp.dps = 60
    m, e = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-e / m + m / 2) - mp.e ** e * mp.ncdf(-e / m - m / 2)


def test_gaussian_tradeoff_at_tiny_fpr_is_not_above_the_exact_curve():
    # 1 - a was rounded before the inverse normal CDF: 0.2474290 against the exact 0.2473966.
    mp.mp.dps = 40
    for sigma, a in [(0.12, 1e-14), (0.3, 1e-9), (1.0, 1e-5), (2.0, 0.999)]:
        exact = mp.ncdf(-mp.sqrt(2) * mp.erfinv(2 * mp.mpf(a) - 1) - 1 / mp.mpf(sigma))
        got = Gaussian(sigma).tradeoff(a)
        assert got <= exact and got >= float(exact) * (1 - 1e-12) - 1e-15


def test_gaussian_tradeoff_at_fpr_1e_300_is_not_above_the_exact_curve():
    # Phi^-1(1e-300) = -37.05: an ulp of the argument Phi^-1(1 - a) - mu (7e-15) is above the
    # absolute margin. Gaussian(0.027428794482378425).tradeoff(1e-300) was 0.7220893026813894,
    # 2.4e-16 above the truth 0.72208930268138914 (mpmath at 60 digits, Phi^-1 by Newton).
    for sigma, a in [(0.027428794482378425, 1e-300), (0.0274, 1e-280), (0.05, 1e-250)]:
        exact = mp_gaussian_tradeoff(1 / mp.mpf(sigma), a)
        got = Gaussian(sigma).tradeoff(a)
        assert got <= exact and got >= float(exact) * (1 - 1e-9) - 1e-15


def test_gaussian_delta_far_in_the_tail_keeps_its_lower_bound_below_the_truth():
    # NoisyGD with huge noise: delta near 1e-108, where the log-space profile loses ~1e-9
    # relative; the lower end was above the analytic value.
    m = NoisyGD([1303.2119409654742, 1273.2855255464424])
    eps = 0.023743726111
    lo, up = m.delta_bounds(eps)
    truth = _gaussian_delta_mp(m.exact_gdp_mu(), eps)
    assert lo <= truth <= up
    assert up <= float(truth) * (1 + 1e-6)


def test_gaussian_with_tiny_sigma_has_a_finite_certified_epsilon():
    # mu = 1e150: the profile's bisection cannot certify anything (eps/mu - mu/2 cancels);
    # mu^2/2 - mu Phi^-1(delta) is an upper bound whatever mu is.
    lo, up = Gaussian(1e-150).epsilon_bounds(1e-5)
    assert math.isfinite(up) and 0.0 <= lo <= up
    assert up == pytest.approx(0.5e300, rel=1e-12)
    with pytest.raises(ValueError, match="sigma"):
        Gaussian(5e-324)


def test_auto_does_not_warn_when_another_route_meets_tol():
    import warnings

    from autoacct.errors import AccuracyWarning
    m = Composition()([ExponentialMechanism(1.0), ExponentialMechanism(2.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        assert m.epsilon(1e-300) <= ULP3


def test_approx_dp_with_huge_epsilon_has_no_finite_epsilon_below_its_delta():
    # Reproducer: one leaky RR step at eps0 = 4.5e14 read e^eps * 0 as NaN beyond eps = 709
    # and reported epsilon(1e-5) = 709.78 although delta(eps) >= 0.001 everywhere.
    m = ApproxDP(4.5e14, 0.001)
    assert m.epsilon_bounds(1e-5)[1] == math.inf
    assert np.all(m.delta(np.array([0.0, 800.0, 1e15])) >= 0.001)


@pytest.mark.parametrize(("make", "delta"), [
    *((lambda: Gaussian(1.0), d) for d in (1e-5, 1e-100, 1e-300)),
    *((lambda: PoissonSubsample(1 / 403310)(Gaussian(230.3)), d) for d in (1e-5, 1e-100, 1e-300)),
    (lambda: Composition()([PoissonSubsample(0.01)(Gaussian(1.0))], [100]), 1e-5)])
def test_delta_at_the_returned_epsilon_is_within_the_asked_delta(make, delta):
    # The delta query's own grid may be coarser than the one that solved eps(delta) (its upper
    # bound was 1.00002e-100 at a subsampled Gaussian's eps(1e-100)); the certified point
    # (eps, delta) recorded by the epsilon query bounds it.
    m = make()
    eps = m.epsilon(delta)
    assert m.delta(eps) <= delta
    lo, up = m.delta_bounds(eps)
    assert lo <= up <= delta
    # and the other way round, on a fresh mechanism (delta kept in the domain epsilon accepts:
    # a closed-form profile may answer just below 1e-300)
    m = make()
    d = max(float(m.delta(eps)), 1e-300)
    assert m.epsilon(d) <= eps


def test_a_gaussian_too_sharp_for_floats_has_an_infinite_epsilon():
    # mu = 1.8e158: eps(delta) >= mu^2/2 - 9 mu overflows; no NaN from inf - inf inside.
    lo, up = Gaussian(5.588e-159).epsilon_bounds(2.69e-300)
    assert lo >= 9.99e307 and up == math.inf


# ----- the wall-clock deadline of the Renyi-DP and phi routes ---------------------------------

def _distinct_steps(n: int):
    """n distinct Poisson-subsampled Gaussian steps (the benchmark's heterogeneous run)."""
    return Composition()([PoissonSubsample(0.005 + 0.015 * ((i * 7919) % n) / (n - 1))(
        Gaussian(0.8 + 1.2 * ((i * 104729) % n) / (n - 1))) for i in range(n)])


@pytest.mark.parametrize("via", ["rdp", "phi"])
def test_routes_without_a_size_to_predict_stop_at_their_deadline(via):
    """A route whose cost is series expansions per part (its Renyi DP) or per-part laws (phi)
    gives up at its deadline: the trivial valid bound, with a BudgetWarning naming the budget.
    One part alone takes over 10 ms on either route, so 1e-3 s cannot suffice. (Fewer parts than
    FAMILY_MIN: more distinct subsampled Gaussians have their Renyi DP summed at once.)"""
    import autoacct
    from autoacct.errors import BudgetWarning
    from autoacct.zoo.transformers import ComposedMechanism

    m = _distinct_steps(ComposedMechanism.FAMILY_MIN - 1)
    with autoacct.limits(seconds=1e-3), pytest.warns(BudgetWarning, match="time budget of 0.001 s"):
        assert m.epsilon(1e-5, via=via) == math.inf
    with autoacct.limits(seconds=1e-3), pytest.warns(BudgetWarning, match="time budget"):
        assert np.all(m.delta(np.array([0.5, 1.0]), via=via) == 1.0)
    if via == "rdp":
        # One order of a part takes about 0.2 ms: a 1e-5 s budget's deadline has passed after it.
        with autoacct.limits(seconds=1e-5), pytest.warns(BudgetWarning, match="time budget"):
            assert m.rdp(8.0) == math.inf


def test_composition_lower_end_asks_few_children(monkeypatch):
    """The lower end a composition gives the Renyi-DP route is the best of its most repeated
    children's, run once: a valid lower bound (below the PLD upper end of the whole), asked
    of at most LOWER_CHILDREN children however many there are."""
    from autoacct.zoo.transformers import ComposedMechanism

    def make():
        steps = [PoissonSubsample(0.01)(Gaussian(1.0 + i / 100)) for i in range(40)]
        return steps, Composition()(steps, [1] * 39 + [5])

    steps, m = make()
    fresh_lower, fresh_upper = m.epsilon_lower(1e-5), m.epsilon_bounds(1e-5)[1]
    assert 0.0 < fresh_lower <= fresh_upper
    steps, m = make()
    asked = []

    def spy(self, delta, tol=None):
        asked.append(self)
        return 0.0, 1.0
    monkeypatch.setattr(type(steps[0]), "epsilon_bounds", spy)
    assert m.epsilon_lower(1e-5) == 0.0
    assert len(asked) == ComposedMechanism.LOWER_CHILDREN
    assert asked[0] is steps[-1]  # the most repeated first


def _mp_gaussian_delta(mu: float, eps: float) -> float:
    """delta(eps) of mu-GDP, Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), in mpmath with 60
    digits beyond the -log10(mu) to which the two terms agree."""
    with mp.workdps(60 + 2 * max(0, -math.floor(math.log10(mu)))):
        m, e = mp.mpf(mu), mp.mpf(eps)
        return float(mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2))


@pytest.mark.parametrize("sigma", [1e8, 1e12, 1e15, 1e17, 1e20, 1e100, 1e300])
def test_gaussian_closed_form_brackets_the_truth_at_tiny_mu(sigma):
    # Below mu ~ 1e-16 both Phi terms round to the same float: the computed profile is 0 with an
    # infinite relative error bound, which the exact route read as 0, so Gaussian(1e17).delta(0)
    # was 1e-300 against a truth of 3.99e-18 (and eps queries warned "invalid value" from 0 * inf).
    eps = [0.0, 1e-300, 1e-9 / sigma, 1.0 / sigma]
    lo, up = Gaussian(sigma).delta_bounds(eps)
    truth = np.array([_mp_gaussian_delta(1.0 / sigma, e) for e in eps])
    assert np.all(lo <= truth) and np.all(truth <= up)
    # The spread bound mu phi(0) is tight at eps = 0: within 1e-6 relative (plus the floor).
    assert up[0] <= truth[0] * (1 + 1e-6) + 1e-300
    lo_e, up_e = Gaussian(sigma).epsilon_bounds(1e-5)
    assert lo_e == up_e == 0.0      # delta(0) < 1e-5 at these sigma


def test_a_routes_warning_names_the_answer_where_other_routes_tightened_it():
    """The PLD route stopped by the budget warns of its own bracket, [0, inf]; the auto answer
    also takes the Renyi-DP route's, and the warning the user sees says so (it showed only
    the route's bracket: [0, 15.28] where the answer was 0.956 at 2^49 discrete Laplace runs)."""
    import warnings

    import autoacct
    from autoacct.errors import BudgetWarning

    m = Composition()([PoissonSubsample(0.01)(Gaussian(1.0))], [1000])
    with warnings.catch_warnings(record=True) as caught, autoacct.limits(seconds=1e-6):
        warnings.simplefilter("always")
        lo, up = m.epsilon_bounds(1e-5)
    assert 0.0 < lo <= up < math.inf
    told = [str(w.message) for w in caught if issubclass(w.category, BudgetWarning)]
    assert told and all(msg.endswith(f"the answer over all routes: [{lo:.6g}, {up:.6g}])") for msg in told)
    assert "bounds [0, inf]" in told[0]


def test_internal_delta_bounds_take_a_float_eps():
    """routes.delta_bounds at a float eps (Mechanism passes a 0-d array) raised AttributeError on
    every route but the PLD; each now answers as at the 0-d array, around 20 randomized
    responses' closed-form delta(2)."""
    from closed_forms import rr_delta_closed

    from autoacct import routes
    m = Composition()([RandomizedResponse(0.8)], [20])
    truth = rr_delta_closed(math.log(4.0), 20, 2.0)
    for via in ("auto", "pld", "phi", "rdp", "dp"):
        lo, up = routes.delta_bounds(m, 2.0, via, 1e-3)
        assert np.shape(lo) == np.shape(up) == ()
        assert (lo, up) == routes.delta_bounds(m, np.array(2.0), via, 1e-3)
        assert lo <= truth * (1 + 1e-12) and truth <= up * (1 + 1e-12)
