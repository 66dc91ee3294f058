"""The base mechanisms near the ends of the delta range, on bad input, and once-broken cases
of the routes and of their roundings, against closed forms and 50-digit mpmath."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, rr_delta_closed
from mechanism_sweeps import (
    approx_truth,
    laplace_delta_closed,
    warnings_are_errors,  # noqa: F401 (autouse: warnings are errors here)
)

from autoacct import AccuracyWarning, risk
from autoacct.zoo import ZCDP, ApproxDP, Composition, Gaussian, Laplace, PureDP, RandomizedResponse

# ----- near the ends of the delta range -------------------------------------------------------

END_CASES = [
    ("gaussian", lambda: Gaussian(2.0), lambda: gaussian_delta_closed(0.5, 0.0)),
    ("gaussian-narrow", lambda: Gaussian(0.5), lambda: gaussian_delta_closed(2.0, 0.0)),
    ("laplace", lambda: Laplace(0.7), lambda: laplace_delta_closed(0.7, 0.0)),
    ("pure-composed", lambda: Composition()([PureDP(0.2)], [60]), lambda: rr_delta_closed(0.2, 60, 0.0)),
    ("rr", lambda: RandomizedResponse(0.9), lambda: 0.8),
    ("approx", lambda: ApproxDP(0.5, 0.3), lambda: approx_truth(0.5, 0.3, 1)[1](0.0)),
]


@pytest.mark.parametrize("name, make, delta0", END_CASES, ids=[c[0] for c in END_CASES])
def test_epsilon_is_zero_above_delta_at_zero(name, make, delta0):
    m = make()
    d0 = delta0()
    for d in (d0 + (1 - d0) * 0.5, 0.999999):
        if d <= d0 * (1 + 1e-6):
            continue
        assert m.epsilon(d) == 0.0
        assert m.epsilon_bounds(d) == (0.0, 0.0)
        for via in set(m.routes) - ({"rdp"} if name == "approx" else set()):   # leaky RR: RDP is inf
            eps = m.epsilon(d, via=via)
            assert 0.0 <= eps < math.inf, via


@pytest.mark.parametrize("name, make, delta0", END_CASES, ids=[c[0] for c in END_CASES])
def test_epsilon_below_delta_at_zero_is_positive_and_delta_at_zero_is_sound(name, make, delta0):
    m = make()
    d0 = delta0()
    lo, up = m.delta_bounds(0.0)
    assert lo <= d0 * (1 + 1e-9) and d0 * (1 - 1e-9) <= up <= 1.0
    d = d0 * 0.5
    assert m.epsilon(d) > 0.0


# ----- bad input ------------------------------------------------------------------------------

BAD_SCALARS = [(-1.0, ValueError), (math.nan, ValueError), (math.inf, ValueError), (-math.inf, ValueError),
               (True, TypeError), ("1.0", TypeError), (None, TypeError), (1j, TypeError),
               (np.array([1.0, 2.0]), TypeError), ([1.0], TypeError)]


@pytest.mark.parametrize("value, exc", BAD_SCALARS, ids=repr)
@pytest.mark.parametrize("make, name", [(Gaussian, "sigma"), (Laplace, "b"), (RandomizedResponse, "p"),
                                        (PureDP, "eps"), (ZCDP, "rho"),
                                        (lambda v: ApproxDP(v, 1e-6), "eps"),
                                        (lambda v: ApproxDP(1.0, v), "delta")])
def test_constructors_reject_bad_scalars_naming_the_parameter(make, name, value, exc):
    with pytest.raises(exc, match=name):
        make(value)


@pytest.mark.parametrize("make, name", [(lambda: Laplace(1e-101), "b"), (lambda: PureDP(1e101), "eps"),
                                        (lambda: ApproxDP(1e308, 0.1), "eps")])
def test_constructors_reject_losses_past_max_eps(make, name):
    # These raised from deep inside the accountant on a tradeoff (overflows, h = inf).
    with pytest.raises(ValueError, match=name):
        make()


@pytest.mark.parametrize("make", [lambda: Laplace(1e-100), lambda: Laplace(1e100), lambda: PureDP(1e100),
                                  lambda: ApproxDP(1e100, 1e-3), lambda: Laplace(1e-10),
                                  lambda: Composition()([Laplace(1e-10), Gaussian(1.0)], [2, 3])])
def test_extreme_parameters_give_ordered_answers_on_every_view(make):
    # Laplace(1e100) (a lattice finer than h: spacing ell / 0), a composition with Laplace(1e-10)
    # (divisors of a lattice 1e10 times h overflowed int64) and tpr_bounds near e^710 raised.
    m = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo, up = m.epsilon_bounds(1e-5)
        f = m.tradeoff(np.array([0.0, 0.1, 0.5, 1.0]))
        t_lo, t_up = risk.tpr_bounds(m, 0.1)
    assert 0.0 <= lo <= up
    assert np.all((0.0 <= f) & (f <= 1.0)) and np.all(np.diff(f) <= 0.0)
    assert 0.1 * (1 - 1e-15) <= t_lo <= t_up <= 1.0


@pytest.mark.parametrize("value", [0.0, np.float64(0.0), np.int64(0)])
@pytest.mark.parametrize("make, name", [(Gaussian, "sigma"), (Laplace, "b"), (ZCDP, "rho")])
def test_constructors_reject_zero_scale(make, name, value):
    with pytest.raises(ValueError, match=name):
        make(value)


@pytest.mark.parametrize("value, exc", [(0.0, ValueError), (1.0, ValueError), (1.5, ValueError),
                                        (-1e-9, ValueError), (1e-320, ValueError), (math.nan, ValueError),
                                        (math.inf, ValueError), (True, TypeError), ("1e-5", TypeError),
                                        (None, TypeError)], ids=repr)
@pytest.mark.parametrize("method", ["epsilon", "epsilon_bounds"])
def test_epsilon_rejects_bad_delta(method, value, exc):
    m = Composition()([Laplace(1.0)], [3])
    with pytest.raises(exc, match="delta"):
        getattr(m, method)(value)


@pytest.mark.parametrize("value, exc", [(-1.0, ValueError), (-1e-300, ValueError), (math.inf, ValueError),
                                        ([0.1, math.nan], ValueError), (True, TypeError), ("0.1", TypeError),
                                        (None, TypeError), ([[1.0], [1.0, 2.0]], TypeError), (1j, TypeError)],
                         ids=repr)
@pytest.mark.parametrize("method", ["delta", "delta_bounds"])
def test_delta_rejects_bad_epsilon(method, value, exc):
    m = Composition()([Laplace(1.0)], [3])
    with pytest.raises(exc, match="epsilon"):
        getattr(m, method)(value)


@pytest.mark.parametrize("value, exc", [(0.999, ValueError), (0.5, ValueError), (-3.0, ValueError),
                                        (math.nan, ValueError), (-math.inf, ValueError),
                                        ([2.0, 0.9], ValueError), (True, TypeError), ("2", TypeError),
                                        (None, TypeError)], ids=repr)
def test_rdp_rejects_orders_below_one(value, exc):
    with pytest.raises(exc, match="alpha"):
        Gaussian(1.0).rdp(value)


@pytest.mark.parametrize("value, exc", [(-0.1, ValueError), (1.1, ValueError), (math.nan, ValueError),
                                        (True, TypeError), ("0.1", TypeError), (None, TypeError)], ids=repr)
def test_tradeoff_rejects_bad_fpr(value, exc):
    with pytest.raises(exc, match="fpr"):
        Laplace(1.0).tradeoff(value)


@pytest.mark.parametrize("value, exc", [(0.0, ValueError), (-1.0, ValueError), (1.0, ValueError),
                                        (math.nan, ValueError), (True, TypeError), ("1e-3", TypeError)],
                         ids=repr)
def test_tol_is_validated(value, exc):
    with pytest.raises(exc, match="tol"):
        Laplace(1.0).epsilon(1e-5, tol=value)


@pytest.mark.parametrize("via", ["magic", "AUTO", None, 3])
@pytest.mark.parametrize("method, arg", [("epsilon", 1e-5), ("delta", 1.0), ("tradeoff", 0.1)])
def test_unknown_routes_are_rejected(method, arg, via):
    with pytest.raises(ValueError, match="via"):
        getattr(Laplace(1.0), method)(arg, via=via)


@pytest.mark.parametrize("counts, exc", [([math.inf], ValueError), ([True], TypeError), (["3"], TypeError),
                                         ([None], TypeError), ([np.int64(0)], ValueError),
                                         ([np.float64(2.5)], ValueError), ([-10**20], ValueError),
                                         (3, TypeError), ([[1, 2]], TypeError)], ids=repr)
def test_composition_rejects_bad_counts(counts, exc):
    with pytest.raises(exc, match="counts"):
        Composition()([Gaussian(1.0)], counts)


@pytest.mark.parametrize("mechanisms, exc", [([], ValueError), ((), ValueError), ("x", TypeError),
                                             ({1}, TypeError), (None, TypeError)], ids=repr)
def test_composition_rejects_bad_mechanism_lists(mechanisms, exc):
    with pytest.raises(exc, match="mechanisms"):
        Composition()(mechanisms)


def test_integral_counts_are_accepted_as_integers():
    m = Composition()([Gaussian(2.0)], [np.float64(4.0)])
    assert m.counts == (4,) and isinstance(m.counts[0], int)
    assert m.epsilon(1e-5) == Gaussian(1.0).epsilon(1e-5)


# ----- once-broken cases of the phi and PLD routes ----------------------------------------------

def test_phi_route_on_large_pure_dp():
    assert PureDP(100.0).delta(0.0, via="phi") >= rr_delta_closed(100.0, 1, 0.0)


def test_phi_route_on_zero_loss():
    assert PureDP(0.0).epsilon(1e-5, via="phi") == 0.0


def test_phi_route_on_leaky_randomized_response():
    assert ApproxDP(1.0, 0.5).epsilon(0.5, via="phi") < math.inf


def test_phi_accuracy_warning_is_an_accuracy_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=AccuracyWarning)
        PureDP(1000.0).epsilon(0.999999, via="phi")


def test_pld_route_on_laplace_with_wide_pure_dp():
    """A lattice far wider than the grid spacing (once: numpy's size limit while snapping)."""
    m = Composition()([Laplace(1.0), PureDP(100.0)], [1, 1])
    assert m.delta(1.0) >= rr_delta_closed(100.0, 1, 1.0)


@pytest.mark.parametrize("count", [1e300, 10 ** 400, 2 ** 53])
def test_composition_counts_beyond_float_precision_are_rejected(count):
    with pytest.raises(ValueError, match=r"counts\[0\]"):
        Composition()([Gaussian(1.0)], [count])


def _leaky_rr_delta(eps0: float, d0: float, eps: float) -> mpmath.mpf:
    """The (eps0, d0)-DP class's profile (Kairouz, Oh and Viswanath 2015) in 50 digits."""
    mpmath.mp.dps = 50
    e0, dd, e = mpmath.mpf(eps0), mpmath.mpf(d0), mpmath.mpf(eps)
    return dd + (1 - dd) * max(1 - mpmath.e ** (e - e0), 0) / (1 + mpmath.e ** (-e0))


def _rr_delta(p: float, eps: float) -> mpmath.mpf:
    mpmath.mp.dps = 50
    pp = mpmath.mpf(p)
    return max(pp - mpmath.e ** mpmath.mpf(eps) * (1 - pp), 0)


@pytest.mark.parametrize(("eps0", "d0", "eps"), [(20.0, 1e-300, 10.537595921254406), (20.0, 0.5, 6.8766055),
                                                (1.0, 1e-6, 0.3)])
def test_approx_dp_delta_brackets_the_class_profile(eps0, d0, eps):
    # At eps0 = 20, 1 - expit(20) cancelled to 5e-8 relative: the upper end was 2.6e-12 low.
    lo, up = ApproxDP(eps0, d0).delta_bounds(eps)
    truth = _leaky_rr_delta(eps0, d0, eps)
    assert lo <= truth <= up


@pytest.mark.parametrize("delta", [0.999999, 0.6, 0.5000001])
def test_approx_dp_epsilon_is_where_the_class_profile_is_below_delta(delta):
    # 1 - c with c near 1 lost 5e-11 of eps: delta at the returned eps was 1.3e-17 above delta.
    assert _leaky_rr_delta(20.0, 0.5, ApproxDP(20.0, 0.5).epsilon(delta)) <= delta


@pytest.mark.parametrize(("p", "eps"), [(0.7310585786300049, 0.99999), (0.5000318183289373, 0.0001272720431876037)])
def test_randomized_response_near_its_log_odds_brackets_the_exact_delta(p, eps):
    # eps0 - eps = 1e-5: the rounding of the computed log-odds is 7.5e-12 of the closed form.
    lo, up = RandomizedResponse(p).delta_bounds(eps)
    truth = _rr_delta(p, eps)
    assert lo <= truth <= up


def test_laplace_at_its_rounded_pure_epsilon_keeps_the_leftover_delta():
    # fl(1/b) is below 1/b for b = 5.62...: the true delta there is 1.85e-18, not 0.
    b = 5.623413251903491
    x = 1.0 / b
    mpmath.mp.dps = 50
    truth = 1 - mpmath.e ** ((mpmath.mpf(x) - 1 / mpmath.mpf(b)) / 2)
    lo, up = Laplace(b).delta_bounds(x)
    assert truth > 0 and lo <= truth <= up


def test_a_lower_bound_at_one_is_rounded_below_one():
    # 32 runs of ApproxDP(10, 0.5): delta(160) = 1 - 0.5^32 e^{-10 * 32}..., below 1 by 4e-38.
    lo, up = Composition()([ApproxDP(10.0, 0.5)], [32]).delta_bounds(160.0)
    assert lo < 1.0 <= up



def test_composed_approx_dp_is_never_below_its_mass_at_infinity():
    # 10 runs of ApproxDP(1, 4.6e-7): delta is 1 - (1 - 4.6e-7)^10 at every eps past 10, which
    # -expm1(10 log1p(-4.6e-7)) had 1.7 ulps low: delta(1e5) came out below it (the outward ulp
    # did not make it up), and eps(delta) was 10 for a delta just below it (truly infinite).
    m = Composition()([ApproxDP(1.0, 4.6e-07)], [10])
    with mpmath.workdps(60):
        exact = 1 - (1 - mpmath.mpf(4.6e-07)) ** 10
    assert mpmath.mpf(m.delta(1e5)) >= exact
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AccuracyWarning)
        assert m.epsilon(math.nextafter(float(exact), 0.0)) == math.inf
