"""DiscretePair and KaryRandomizedResponse against independent references.

References: binary randomized response (autoacct's own RandomizedResponse, itself checked
against the binomial closed form, and that closed form); the trinomial closed form of
composed k-ary randomized response (tests/closed_forms.py); Renyi divergences and
profiles summed directly in numpy/mpmath from the definitions; dp_accounting's PLDs
(``from_two_probability_mass_functions`` and ``from_randomized_response``).
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from closed_forms import eps_from_delta_closed, finite_pair_delta_closed, kary_rr_delta_closed, rr_eps_closed

from autoacct.zoo import Composition, DiscretePair, KaryRandomizedResponse, RandomizedResponse


def _random_pair(seed: int, n: int, zeros: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
    if zeros:
        p[0] = 0.0
        q[1] = 0.0
    return p / p.sum(), q / q.sum()


def _renyi_mp(p, q, alpha: float) -> float:
    """D_alpha(P || Q) in 50-digit arithmetic from the definition."""
    mpmath.mp.dps = 50
    if alpha == 1.0:
        return float(mpmath.fsum(mpmath.mpf(a) * mpmath.log(mpmath.mpf(a) / mpmath.mpf(b))
                                 for a, b in zip(p, q) if a > 0))
    s = mpmath.fsum(mpmath.mpf(a) ** alpha * mpmath.mpf(b) ** (1 - alpha) for a, b in zip(p, q) if a > 0)
    return float(mpmath.log(s) / (alpha - 1))


# ----- DiscretePair ------------------------------------------------------------------------------


@pytest.mark.parametrize("prob", [0.6, 0.8, 0.95])
def test_pair_reproduces_binary_randomized_response(prob):
    pair = DiscretePair((prob, 1 - prob), (1 - prob, prob))
    rr = RandomizedResponse(prob)
    eps = np.array([0.0, 0.1, 0.5, 1.0, 3.0])
    assert np.allclose(pair.delta(eps), rr.delta(eps), rtol=1e-12, atol=1e-15)
    alpha = np.array([1.0, 1.5, 2.0, 8.0, 64.0])
    assert np.allclose(pair.rdp(alpha), rr.rdp(alpha), rtol=1e-10)
    for d in (1e-3, 1e-8):
        assert pair.epsilon(d) == pytest.approx(rr.epsilon(d), rel=1e-12)


def test_composed_pair_matches_the_binomial_closed_form():
    eps0 = math.log(0.7 / 0.3)
    m = Composition()([DiscretePair((0.7, 0.3), (0.3, 0.7))], [50])
    for d in (1e-3, 1e-6, 1e-10):
        truth = rr_eps_closed(eps0, 50, d)
        lo, up = m.epsilon_bounds(d)
        assert lo <= truth * (1 + 1e-10) and truth <= up <= truth * (1 + 1e-3)


@pytest.mark.parametrize("seed, zeros", [(0, False), (1, False), (2, True)])
def test_single_pair_profile_is_the_direct_sum(seed, zeros):
    p, q = _random_pair(seed, 6, zeros)
    m = DiscretePair(p, q)
    eps = np.array([0.0, 0.2, 0.7, 1.5])
    truth = np.array([finite_pair_delta_closed(p, q, e) for e in eps])
    lo, up = m.delta_bounds(eps)
    assert np.all(up >= truth * (1 - 1e-12)) and np.all(up <= truth * (1 + 1e-9) + 1e-15)
    assert np.all(lo <= truth * (1 + 1e-12))


@pytest.mark.parametrize("seed", [3, 4])
def test_rdp_is_the_exact_renyi_divergence_of_both_orders(seed):
    p, q = _random_pair(seed, 5)
    m = DiscretePair(p, q)
    p, q = m.p, m.q     # the stored (renormalised) vectors define the pair
    for alpha in (1.0, 1.001, 1.5, 2.0, 7.0, 40.0):
        truth = max(_renyi_mp(p, q, alpha), _renyi_mp(q, p, alpha))
        got = float(m.rdp(alpha))
        assert truth <= got <= truth * (1 + 1e-9) + 1e-13
    # Order inf: the max divergence, the largest |log(p/q)|.
    assert float(m.rdp(math.inf)) >= float(np.max(np.abs(np.log(np.divide(p, q)))))


def test_rdp_of_nearly_equal_distributions_keeps_its_relative_precision():
    p = np.array([0.25, 0.25, 0.25, 0.25])
    q = p + np.array([1e-7, -1e-7, 2e-7, -2e-7])
    m = DiscretePair(p, q)
    p, q = m.p, m.q
    for alpha in (1.0, 1.01, 2.0):
        truth = max(_renyi_mp(p, q, alpha), _renyi_mp(q, p, alpha))
        assert truth <= float(m.rdp(alpha)) <= truth * (1 + 1e-6) + 1e-13


def test_zero_masses_give_infinite_loss_mass():
    p = (0.6, 0.4, 0.0)
    q = (0.5, 0.45, 0.05)
    m = DiscretePair(p, q)
    # Q(p = 0) = 0.05 at loss +inf in the addition direction: delta >= 0.05 at every eps.
    assert m.delta(50.0) >= 0.05
    assert m.epsilon(0.01) == math.inf
    # Renyi DP is infinite at every order (the addition direction), including KL.
    assert np.all(np.isinf(m.rdp(np.array([1.0, 2.0]))))
    eps0, delta0 = m.dp_guarantee()
    assert eps0 >= math.log(0.6 / 0.5) and delta0 >= 0.05
    assert delta0 <= 0.05 * (1 + 1e-12) and eps0 <= math.log(0.6 / 0.5) * (1 + 1e-12)
    # Past the largest finite loss the profile is exactly the infinite-loss mass.
    assert m.delta(0.2) == pytest.approx(0.05, rel=1e-12)


def test_subnormal_mass_gives_no_overflow_warning():
    # DiscretePair((0.6322, 0.3678), (2.225073858507203e-309, 1.0)) warned "overflow encountered
    # in divide" (a discarded branch of the log ratio; found by tests/test_properties.py). The
    # loss of the first outcome is log(0.6322 / 2.225073858507203e-309) = 710.6 (its P-mass at
    # a finite loss: delta(eps) >= 0.6322 (1 - e^(eps - 710.6)) below it).
    m = DiscretePair((0.6322, 0.3678), (2.225073858507203e-309, 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        d = m.delta(700.0)
        eps = m.epsilon(0.5)
    truth = 0.6322 * -math.expm1(700.0 - math.log(0.6322) + math.log(2.225073858507203e-309))
    assert truth <= d <= 1.0 and math.isfinite(eps) and 700.0 < eps


def test_pure_dp_guarantee_of_a_full_support_pair():
    p, q = _random_pair(5, 4)
    eps0, delta0 = DiscretePair(p, q).dp_guarantee()
    truth = float(np.max(np.abs(np.log(p) - np.log(q))))
    assert delta0 == 0.0 and truth <= eps0 <= truth * (1 + 1e-12)
    assert DiscretePair(p, q).epsilon(1e-300) <= eps0 * (1 + 1e-12)


def _dp_accounting_pld(p, q, count: int):
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    lp = {i: math.log(x) if x > 0 else -math.inf for i, x in enumerate(p)}
    lq = {i: math.log(x) if x > 0 else -math.inf for i, x in enumerate(q)}
    one = pld.from_two_probability_mass_functions(lq, lp, value_discretization_interval=1e-4, symmetric=False)
    return one.self_compose(count) if count > 1 else one


@pytest.mark.parametrize("seed, count", [(6, 1), (7, 10), (8, 30)])
def test_pair_matches_dp_accounting(seed, count):
    p, q = _random_pair(seed, 5)
    ref = _dp_accounting_pld(p, q, count)
    m = Composition()([DiscretePair(p, q)], [count]) if count > 1 else DiscretePair(p, q)
    for d in (1e-3, 1e-6, 1e-8):
        theirs = ref.get_epsilon_for_delta(d)
        assert m.epsilon(d) == pytest.approx(theirs, rel=1e-3)


# ----- KaryRandomizedResponse ------------------------------------------------------------------


@pytest.mark.parametrize("noise, k", [(0.5, 2), (0.3, 3), (0.8, 10)])
def test_kary_rr_pure_epsilon_is_the_closed_form(noise, k):
    eps0 = math.log((1 - noise + noise / k) / (noise / k))
    m = KaryRandomizedResponse(noise, k)
    e, d0 = m.dp_guarantee()
    assert d0 == 0.0 and eps0 <= e <= eps0 * (1 + 1e-12)
    assert float(m.rdp(math.inf)) == pytest.approx(eps0, rel=1e-12)
    assert m.delta(eps0 * (1 + 1e-9)) == 0.0


def test_binary_kary_rr_is_randomized_response():
    # k = 2: truthful with probability 1 - noise / 2.
    m = KaryRandomizedResponse(0.4, 2)
    rr = RandomizedResponse(0.8)
    eps = np.array([0.0, 0.3, 1.0])
    assert np.allclose(m.delta(eps), rr.delta(eps), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("noise, k, n", [(0.8, 4, 20), (0.5, 3, 40), (0.9, 50, 15)])
def test_composed_kary_rr_matches_the_trinomial_closed_form(noise, k, n):
    m = Composition()([KaryRandomizedResponse(noise, k)], [n])

    def delta_of(e: float) -> float:
        return kary_rr_delta_closed(noise, k, n, e)

    for d in (1e-3, 1e-6, 1e-9):
        truth = eps_from_delta_closed(delta_of, d, 1.0)
        lo, up = m.epsilon_bounds(d)
        assert lo <= truth * (1 + 1e-10) and truth * (1 - 1e-10) <= up <= truth * (1 + 1e-3)
    for e in (0.1, 1.0):
        assert m.delta(e) >= delta_of(e) * (1 - 1e-10)


@pytest.mark.parametrize("noise, k, n", [(0.7, 5, 1), (0.6, 4, 25)])
def test_kary_rr_matches_dp_accounting(noise, k, n):
    pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    ref = pld.from_randomized_response(noise, k, value_discretization_interval=1e-4)
    ref = ref.self_compose(n) if n > 1 else ref
    m = Composition()([KaryRandomizedResponse(noise, k)], [n]) if n > 1 else KaryRandomizedResponse(noise, k)
    for d in (1e-3, 1e-6, 1e-8):
        assert m.epsilon(d) == pytest.approx(ref.get_epsilon_for_delta(d), rel=1e-3)


# ----- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("make, match", [
    (lambda: DiscretePair((0.5, 0.5), (0.2, 0.3, 0.5)), "same length"),
    (lambda: DiscretePair((1.2, -0.2), (0.5, 0.5)), "p must lie"),
    (lambda: DiscretePair((0.5, 0.5), (0.5, math.nan)), "q must not contain NaN"),
    (lambda: DiscretePair((0.5, 0.5), (0.5, math.inf)), "q must be finite"),
    (lambda: DiscretePair((0.5, 0.6), (0.5, 0.5)), "p must sum to 1"),
    (lambda: DiscretePair((), ()), "p must be a non-empty"),
    (lambda: DiscretePair((1.0, 0.0), (0.0, 1.0)), "share an outcome"),
    (lambda: KaryRandomizedResponse(0.0, 3), "noise_parameter"),
    (lambda: KaryRandomizedResponse(1.5, 3), "noise_parameter"),
    (lambda: KaryRandomizedResponse(0.5, 1), "num_buckets"),
    (lambda: KaryRandomizedResponse(0.5, 2.5), "num_buckets"),
])
def test_bad_parameters_name_themselves(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("make, match", [
    (lambda: DiscretePair("ab", (0.5, 0.5)), "p must be a sequence"),
    (lambda: DiscretePair((0.5, 0.5), 1.0), "q must be a sequence"),
    (lambda: DiscretePair(("a", "b"), (0.5, 0.5)), "p must be a real"),
    (lambda: KaryRandomizedResponse("0.5", 3), "noise_parameter"),
])
def test_non_numeric_parameters_are_type_errors(make, match):
    with pytest.raises(TypeError, match=match):
        make()


def test_probabilities_are_renormalised_and_stored_as_tuples():
    m = DiscretePair([0.5, 0.5 + 5e-10], np.array([0.25, 0.75]))
    assert isinstance(m.p, tuple) and math.fsum(m.p) == pytest.approx(1.0, abs=1e-15)
    assert m.params == {"DiscretePair.p[0]": m.p[0], "DiscretePair.p[1]": m.p[1],
                        "DiscretePair.q[0]": 0.25, "DiscretePair.q[1]": 0.75}
