"""RepeatAndSelect (Papernot and Steinke 2022) against closed forms and dp_accounting's RDP accountant."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from autoacct import Composition, Gaussian, Laplace, PoissonSubsample
from autoacct.zoo import RepeatAndSelect
from autoacct.zoo.tuning import _ORDERS, tnb_log_gamma, tnb_log_mean

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as ev  # noqa: E402
from dp_accounting.rdp import RdpAccountant  # noqa: E402


def _sgd() -> tuple[object, object]:
    step = ev.PoissonSampledDpEvent(0.01, ev.GaussianDpEvent(1.0))
    return (Composition()([PoissonSubsample(0.01)(Gaussian(1.0))], [1000]), ev.SelfComposedDpEvent(step, 1000))


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 2.0, math.inf])
@pytest.mark.parametrize("mean", [1.5, 10.0, 100.0])
def test_not_above_dp_accountings_rdp_answer(shape: float, mean: float) -> None:
    base, event = _sgd()
    ours = RepeatAndSelect(base, mean, shape).epsilon(1e-6)
    theirs = RdpAccountant().compose(ev.RepeatAndSelectDpEvent(event, mean, shape)).get_epsilon(1e-6)
    assert ours <= theirs
    # The best of K >= 1 runs is never cheaper than the bound's own floor: the base's RDP answer.
    assert ours >= base.epsilon(1e-6, via="rdp") * (1 - 1e-9) or math.isinf(shape)


def test_poisson_count_uses_the_certified_delta() -> None:
    """Theorem 6's delta-hat from the base's certified profile, not from its RDP: much tighter."""
    base, event = _sgd()
    ours = RepeatAndSelect(base, 100.0, math.inf).epsilon(1e-6)
    theirs = RdpAccountant().compose(ev.RepeatAndSelectDpEvent(event, 100.0, math.inf)).get_epsilon(1e-6)
    assert ours < 0.8 * theirs


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 3.0])
def test_one_run_is_the_base(shape: float) -> None:
    """mean 1 forces K = 1 (gamma = 1): the bound is the base's RDP at every order."""
    alpha = np.array([1.5, 2.0, 7.0, 40.0])
    m = RepeatAndSelect(Laplace(2.0), 1.0, shape)
    assert np.allclose(m.rdp(alpha), Laplace(2.0).rdp(alpha), rtol=1e-12, atol=0)


@pytest.mark.parametrize("shape", [0.0, 0.3, 1.0, 2.0, 7.5])
@pytest.mark.parametrize("mean", [1.01, 3.0, 50.0, 1e4])
def test_gamma_meets_the_mean_from_the_safe_side(shape: float, mean: float) -> None:
    """The truncated negative binomial's mean at the returned gamma is the target, gamma rounded down."""
    log_gamma = tnb_log_gamma(shape, mean)
    reached = math.exp(tnb_log_mean(-log_gamma, shape)[0])
    assert reached == pytest.approx(mean, rel=1e-9)
    assert reached >= mean * (1 - 1e-15)
    if shape == 1.0:
        # geometric: gamma = 1 / mean, rounded down by a relative margin
        assert -math.log(mean) * (1 + 1e-12) <= log_gamma <= -math.log(mean)


def test_tnb_mean_against_its_series() -> None:
    """E[K] of P[K = k] ~ (1 - gamma)^k C(k + eta - 1, k), k >= 1, summed directly."""
    from scipy.special import gammaln
    k = np.arange(1, 20000, dtype=float)
    for shape, gamma in ((0.5, 0.2), (2.0, 0.05), (0.0, 0.1)):
        if shape == 0.0:
            logw = k * math.log1p(-gamma) - np.log(k)
        else:
            logw = k * math.log1p(-gamma) + gammaln(k + shape) - gammaln(k + 1) - gammaln(shape)
        w = np.exp(logw - logw.max())
        mean = math.exp(tnb_log_mean(-math.log(gamma), shape)[0])
        assert mean == pytest.approx(float((k * w).sum() / w.sum()), rel=1e-9)


def _mp_t(shape: float, mean: float) -> mp.mpf:
    """t = log(1/gamma) with E[K] = eta (1 - gamma) / (gamma (1 - gamma^eta)) = mean ((1 - gamma) /
    (gamma log(1/gamma)) at eta = 0), by bisection on log t in mpmath (E[K] increases in t)."""
    with mp.workdps(60):
        eta, target = mp.mpf(shape), mp.log(mp.mpf(mean))

        def log_mean(t: mp.mpf) -> mp.mpf:
            head = mp.log(-mp.expm1(-t)) + t
            return head - mp.log(t) if eta == 0 else head + mp.log(eta) - mp.log(-mp.expm1(-eta * t))
        lo, hi = mp.mpf(-800), mp.mpf(10)
        for _ in range(400):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if log_mean(mp.exp(mid)) < target else (lo, mid)
        return mp.exp(hi)


def _mp_theorem2(sigma: float, shape: float, mean: float, lam: mp.mpf) -> mp.mpf:
    """Papernot and Steinke (2022), Theorem 2, for the Gaussian (eps(a) = a / (2 sigma^2)) at
    order lam: eps(lam) + (1 + eta) min over lam-hat >= 1 of [(1 - 1/lam-hat) eps(lam-hat)
    + log(1/gamma) / lam-hat] + log(mean) / (lam - 1). The bracket is (lam-hat - 1) / (2 sigma^2)
    + t / lam-hat, least at lam-hat = sqrt(2 sigma^2 t) when that is at least 1, else at 1."""
    with mp.workdps(60):
        s2, t = 2 * mp.mpf(sigma) ** 2, _mp_t(shape, mean)
        hat = max(mp.sqrt(s2 * t), mp.mpf(1))
        inner = (hat - 1) / s2 + t / hat
        return lam / s2 + (1 + mp.mpf(shape)) * inner + mp.log(mp.mpf(mean)) / (lam - 1)


@pytest.mark.parametrize("mean, shape", [
    (2.0, 1e15),              # an absolute 1e-12 margin on log gamma, times 1 + eta: 1002.5 for 2.54
    (1.5, 1e-25),             # eta log gamma underflowed: ZeroDivisionError
    (1e200, 0.5), (1e200, 0.0), (1e200, 2.0),   # gamma = e^lo underflowed while bracketing
    (1.7e308, 0.0), (2.0, 1.7e308), (1.0 + 1e-12, 1e300), (10.0, 1.0), (3.0, 0.3),
])
def test_theorem2_against_mpmath(mean: float, shape: float) -> None:
    """The bound at order 2 lies between Theorem 2's least value over orders >= 2 (each order's
    bound holds at every lower one) and its value at 2 itself, both evaluated in mpmath; and the
    gamma used is at most the true one, relatively close to it."""
    t = _mp_t(shape, mean)
    got_t = -tnb_log_gamma(shape, mean)
    assert t <= got_t <= t * (1 + 1e-9) + 1e-12
    ours = mp.mpf(RepeatAndSelect(Gaussian(2.0), mean, shape).rdp(2.0))
    with mp.workdps(60):
        # lam / 8 + log(mean) / (lam - 1) is least at lam = 1 + sqrt(8 log(mean)), or at 2.
        best = max(1 + mp.sqrt(8 * mp.log(mp.mpf(mean))), mp.mpf(2))
        assert _mp_theorem2(2.0, shape, mean, best) <= ours <= _mp_theorem2(2.0, shape, mean, mp.mpf(2)) * (1 + 1e-9)


def test_more_runs_cost_more() -> None:
    eps = [RepeatAndSelect(Gaussian(2.0), mean, 1.0).epsilon(1e-6) for mean in (1.0, 2.0, 10.0, 100.0)]
    assert eps == sorted(eps) and eps[0] < eps[-1]


@pytest.mark.parametrize("kwargs, words", [
    ({"mean": 0.5, "shape": 1.0}, "mean"),
    ({"mean": math.nan, "shape": 1.0}, "mean"),
    ({"mean": math.inf, "shape": 1.0}, "mean"),
    ({"mean": 2.0, "shape": -1.0}, "shape"),
    ({"mean": 2.0, "shape": math.nan}, "shape"),
])
def test_bad_parameters_name_themselves(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        RepeatAndSelect(Gaussian(1.0), **kwargs)


def test_a_base_with_infinite_renyi_dp_is_refused() -> None:
    from autoacct import ApproxDP
    with pytest.raises(ValueError, match="mechanism 'ApproxDP' has infinite Renyi DP"):
        RepeatAndSelect(ApproxDP(1.0, 1e-6), 5.0, 1.0)


def test_mechanism_must_be_a_mechanism() -> None:
    with pytest.raises(TypeError, match="mechanism"):
        RepeatAndSelect(1.0, 2.0, 1.0)  # type: ignore[arg-type]


@settings(max_examples=200, derandomize=True, deadline=None, database=None)
@given(sigma=st.floats(0.05, 0.6), mean=st.floats(1.01, 1e3), shape=st.floats(0.0, 5.0),
       lam=st.floats(1.01, 100.0))
@example(sigma=0.1410857221959826, mean=184.81722236597113, shape=1.4441431925684445, lam=1.1705368283971276)
@example(sigma=0.1415017353975106, mean=7.940355784953171, shape=3.231661664578882, lam=1.2170634802703493)
@example(sigma=0.06176943748797168, mean=715.7248890667549, shape=2.3829669433067076, lam=1.0261161577227416)
def test_theorem2_is_not_below_its_own_formula_in_mpmath(sigma: float, mean: float, shape: float,
                                                          lam: float) -> None:
    """Theorem 2's sums, rounded up: where 2 sigma^2 log(1/gamma) < 1 the free order's bracket
    (lam-hat - 1) / (2 sigma^2) + log(1/gamma) / lam-hat is least at lam-hat = 1, so the bound at
    order o is eps(o) + log(mean) / (o - 1) + (1 + eta) log(1/gamma), with the base's RDP and
    gamma as the code reads them; the answer at lam, the least of that at lam and at the grid's
    orders above it, is at least its mpmath value (the unrounded sums were up to 2.4e-16 below,
    and the answer, one ulp above them, 3.9e-17 below at the second example)."""
    log_gamma = tnb_log_gamma(shape, mean)
    assume(2.0 * sigma * sigma * -log_gamma < 0.9)
    base = Gaussian(sigma)
    got = mp.mpf(float(RepeatAndSelect(base, mean, shape).rdp(lam)))
    with mp.workdps(60):
        constant = (1 + mp.mpf(shape)) * -mp.mpf(log_gamma)

        def bound(order: float) -> mp.mpf:
            return mp.mpf(float(base.rdp(order))) + mp.log(mp.mpf(mean)) / (mp.mpf(order) - 1) + constant
        least = min(bound(float(o)) for o in (lam, *_ORDERS[_ORDERS >= lam]))
        assert got >= least, (sigma, mean, shape, lam, got, least)
