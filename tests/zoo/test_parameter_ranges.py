"""Robustness sweep of the discrete and composite zoo, every route, against independent truths.

Truths are computed here in numpy/scipy from the mechanisms' definitions, never from
autoacct: k-fold discrete Laplace by direct convolution of the exact pmf of its privacy
loss; the discrete Gaussian's hockey-stick divergence summed over the integers (the
exact profile of Canonne, Kamath and Steinke 2020); the binary-counting exponential
mechanism by the binomial closed form of Dong, Durfee and Rogers (2020, Theorem 2);
Binomial mechanisms by summing over the product of their pmfs; NoisyGD by the
analytic Gaussian (tests/closed_forms.py). Each result must be finite where the
truth is, monotone, never below the truth (lower ends never above it), free of NaN,
negative epsilons and numpy warnings. The last section holds regression tests for
cases other accountants are known to get wrong.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed, kary_rr_delta_closed, rr_delta_closed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import special, stats
from warning_policy import strict_warnings

from autoacct import AccuracyWarning
from autoacct.zoo import (
    Binomial,
    Composition,
    DiscreteGaussian,
    DiscreteLaplace,
    DiscretePair,
    ExponentialMechanism,
    Gaussian,
    GaussianSVT,
    KaryRandomizedResponse,
    Laplace,
    LaplaceSVT,
    NoisyGD,
)

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
TOL = 1e-3
REL = 1e-9      # rounding slack of a comparison with a truth computed in floating point
DELTAS = (1e-15, 1e-10, 1e-5, 0.1, 0.5)


def routes(m) -> list[str]:
    return ["auto", *m.routes]


def check_curves(m, eps_grid: np.ndarray, deltas=DELTAS) -> None:
    """Finite where the truth is, monotone, lower <= upper, no NaN or negative epsilon, per route."""
    eps_grid = np.sort(eps_grid)
    for via in routes(m):
        eps = [m.epsilon(d, via=via) for d in deltas]
        assert all(not math.isnan(e) and e >= 0.0 for e in eps), (via, eps)
        assert all(a >= b - 1e-12 for a, b in zip(eps, eps[1:])), (via, eps)
        d = np.asarray(m.delta(eps_grid, via=via))
        assert np.all(np.isfinite(d)) and np.all((d >= 0.0) & (d <= 1.0)), (via, d)
        assert np.all(np.diff(d) <= 1e-15), (via, d)
    for dd in deltas:
        lo, up = m.epsilon_bounds(dd)
        assert 0.0 <= lo <= up, (dd, lo, up)
    lo, up = m.delta_bounds(eps_grid)
    assert np.all(np.asarray(lo) <= np.asarray(up))


def check_against_truth(m, truth_delta, eps_grid: np.ndarray, tight: float | None = TOL) -> None:
    """Every route's delta is >= the truth; the auto route's lower end is <= it; the auto
    route's upper end is within ``tight`` on the epsilon scale (delta at eps (1 - tight))."""
    true = np.array([truth_delta(e) for e in eps_grid])
    for via in routes(m):
        got = np.asarray(m.delta(eps_grid, via=via))
        assert np.all(got >= true * (1 - REL)), (via, got, true)
    lo, up = m.delta_bounds(eps_grid)
    assert np.all(np.asarray(lo) <= true * (1 + REL) + 1e-300), (lo, true)
    if tight is not None:
        slack = np.array([truth_delta(e * (1 - 2 * tight)) for e in eps_grid])
        assert np.all(np.asarray(up) <= np.maximum(slack, true * (1 + 2 * tight)) + 1e-12), (up, true)


# ----- discrete Laplace: direct convolution of the privacy loss pmf -----------------------------


def dl_loss_pmf(t: float, sens: int) -> tuple[np.ndarray, np.ndarray]:
    """(m, P(t L = m)): law of the integer t L under P = Lap_Z(sens, t), from the pmf on |x| <= N."""
    r = math.exp(-1.0 / t)
    n = int(60 * t) + sens + 60
    x = np.arange(-n, n + 1)
    pmf = (1 - r) / (1 + r) * r ** np.abs(x - sens)
    m = np.abs(x) - np.abs(x - sens)                       # t L(x), an integer in [-sens, sens]
    out = np.bincount(m + sens, weights=pmf, minlength=2 * sens + 1)
    out[-1] += r ** (n - sens + 1) / (1 + r)               # the cut upper tail (loss +sens / t)
    return np.arange(-sens, sens + 1), out


def dl_composed_delta(t: float, sens: int, k: int, eps: float) -> float:
    m, p = dl_loss_pmf(t, sens)
    pk = np.array([1.0])
    for _ in range(k):
        pk = np.convolve(pk, p)
    mk = np.arange(pk.size) - k * sens
    loss = mk / t
    return float(np.sum(np.where(loss > eps, pk * -np.expm1(np.minimum(eps - loss, 0.0)), 0.0)))


@SETTINGS
@given(t=st.floats(0.05, 1e4), sens=st.integers(1, 3), k=st.integers(1, 40))
def test_discrete_laplace_composed_matches_convolution(t, sens, k):
    if sens / t > 700:
        return
    m = Composition()([DiscreteLaplace(t, sensitivity=sens)], [k])
    scale = k * sens / t
    grid = np.array([0.0, 0.05, 0.3, 0.7, 0.95]) * scale
    with strict_warnings():
        check_curves(m, np.concatenate((grid, [scale * 1.01, 1000.0])))
        check_against_truth(m, lambda e: dl_composed_delta(t, sens, k, e), grid)


@pytest.mark.parametrize("t, k", [(0.05, 1), (0.05, 10_000), (1e4, 1), (1e4, 10_000_000)])
def test_discrete_laplace_extremes(t, k):
    m = Composition()([DiscreteLaplace(t)], [k])
    with strict_warnings():
        check_curves(m, np.array([0.0, 1e-3, 0.1, 1.0, 10.0, 1000.0]), deltas=(1e-15, 1e-5, 0.5))
        if k <= 10_000:
            grid = np.array([0.0, 0.5, 2.0]) * math.sqrt(k) / t
            check_against_truth(m, lambda e: dl_composed_delta(t, 1, k, e) if k < 50
                                else _rr_like_dl(t, k, e), grid, tight=None)
        # A pure-DP mechanism composed k times is (k / t)-DP: nothing beyond k / t.
        assert m.epsilon(1e-15) <= k / t * (1 + REL)


def _rr_like_dl(t: float, k: int, eps: float) -> float:
    """k-fold DiscreteLaplace(t), sensitivity 1: its loss is +-1/t, i.e. randomised response
    with log-odds 1/t (P-mass 1/(1+r) at +1/t): the binomial sum of closed_forms."""
    return rr_delta_closed(1.0 / t, k, eps)


# ----- discrete Gaussian: hockey stick summed over the integers ---------------------------------


def dg_delta(sigma: float, sens: int, eps: float) -> float:
    """sum_x P(x) (1 - e^{eps - L(x)})_+, P = N_Z(sens, sigma^2), L(x) = (2 x sens - sens^2)/(2 sigma^2)."""
    r = int(40 * sigma) + 40 + sens
    x = np.arange(-r, r + 1, dtype=float)
    logw = -x * x / (2 * sigma ** 2)
    logp = -(x - sens) ** 2 / (2 * sigma ** 2) - special.logsumexp(logw)
    loss = (2 * x * sens - sens ** 2) / (2 * sigma ** 2)
    with np.errstate(divide="ignore"):
        terms = logp + np.log(-np.expm1(np.minimum(eps - loss, 0.0)))
    return float(np.exp(special.logsumexp(terms))) if np.any(loss > eps) else 0.0


@SETTINGS
@given(sigma=st.floats(0.2, 300.0), sens=st.integers(1, 3))
def test_discrete_gaussian_matches_hockey_stick(sigma, sens):
    m = DiscreteGaussian(sigma, sensitivity=sens)
    spread = sens / sigma * (1 + sens / sigma)
    grid = np.array([0.0, 0.3, 1.0, 2.5]) * spread
    with strict_warnings():
        check_curves(m, np.concatenate((grid, [100.0, 1000.0])), deltas=(1e-10, 1e-5, 0.5))
        check_against_truth(m, lambda e: dg_delta(sigma, sens, e), grid)


def test_truncated_tails_do_not_raise_the_lower_bound():
    """The truncated tails (mass 2e-40 moved to +inf for the upper bound) once made delta's
    lower bound 1.6e-44 at eps = 100, where the truth and the RDP upper bound are 0."""
    # The upper end is that truncated mass alone, a floor the accountant accepts: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        lo, up = DiscreteGaussian(6.0).delta_bounds(np.array([100.0, 1000.0]))
    assert np.all(lo == 0.0) and np.all(lo <= up)


@pytest.mark.parametrize("sigma, sens, delta", [(1.0, 2, 1e-15), (0.05, 1, 1e-15), (0.3, 3, 1e-12)])
def test_discrete_gaussian_single_phi_route_is_exact(sigma, sens, delta):
    """One step of a discrete law is enumerated exactly on the phi route (any delta, fast)."""
    from scipy import optimize
    truth = optimize.brentq(lambda e: dg_delta(sigma, sens, e) - delta, 0.0, 1e4, xtol=1e-13)
    with strict_warnings():
        got = DiscreteGaussian(sigma, sensitivity=sens).epsilon(delta, via="phi")
    assert truth * (1 - REL) <= got <= truth * (1 + 1e-7)


def test_discrete_gaussian_small_sigma_pld_route_is_warning_free():
    with strict_warnings():
        assert DiscreteGaussian(0.05).epsilon(1e-6, via="pld") >= 0.0


@pytest.mark.parametrize("sigma", [2e3, 1e4])
def test_discrete_gaussian_large_sigma_is_gaussian(sigma):
    """Canonne, Kamath and Steinke (2020): for large sigma the discrete Gaussian's profile
    approaches the Gaussian's; exact truth from the integer sum, and the analytic Gaussian."""
    m = DiscreteGaussian(sigma)
    grid = np.array([0.0, 0.5, 2.0, 4.0]) / sigma
    with strict_warnings():
        check_against_truth(m, lambda e: dg_delta(sigma, 1, e), grid)
        for d in (1e-5, 1e-10):
            assert m.epsilon(d) == pytest.approx(gaussian_eps_closed(1 / sigma, d), rel=5e-3)


# ----- exponential mechanism ---------------------------------------------------------------------


def grr_delta(t: float, eps0: float, k: int, eps: float) -> float:
    """Dong, Durfee and Rogers (2020, Thm 2): delta of k copies of the t-pair of eps0-BR:
    loss t with P-mass (e^eps0 - e^t)/(e^eps0 - 1), t - eps0 otherwise; j ~ Bin(k, p_t) at t."""
    p = float(np.clip(-np.expm1(t - eps0) / -np.expm1(-eps0), 0.0, 1.0))
    j = np.arange(k + 1)
    logw = stats.binom.logpmf(j, k, p)
    loss = k * t - (k - j) * eps0
    with np.errstate(divide="ignore"):
        terms = logw + np.log(-np.expm1(np.minimum(eps - loss, 0.0)))
    return float(np.exp(special.logsumexp(terms))) if np.any(loss > eps) else 0.0


def counting_delta(eps_tilde: float, n: int, m: int, k: int, eps: float) -> float:
    """k-fold binary-counting exponential mechanism on (X, Y), both orders (Koskela et al. 2021, 6.1).

    P[M(X) = y] is proportional to e^{eps_tilde u(X, y)}; each order of the pair is a
    two-outcome pair, i.e. a t-pair of Dong et al. (Thm 2): j ~ Bin(k, P(0)) copies of
    outcome 0. Summed in log space from the masses themselves.
    """
    a = eps_tilde * (2 * m - n)
    lx = np.array([special.log_expit(a), special.log_expit(-a)])
    ly = np.array([special.log_expit(a - eps_tilde), special.log_expit(eps_tilde - a)])
    out = 0.0
    j = np.arange(k + 1)
    log_binom = special.gammaln(k + 1.0) - special.gammaln(j + 1.0) - special.gammaln(k - j + 1.0)
    for lp, lq in ((lx, ly), (ly, lx)):
        logw = log_binom + j * lp[0] + (k - j) * lp[1]
        loss = j * (lp[0] - lq[0]) + (k - j) * (lp[1] - lq[1])
        with np.errstate(divide="ignore"):
            terms = logw + np.log(-np.expm1(np.minimum(eps - loss, 0.0)))
        if np.any(loss > eps):
            out = max(out, float(np.exp(special.logsumexp(terms))))
    return out


@pytest.mark.parametrize("eps_tilde, n, m, k", [
    (1e-3, 10, 5, 1), (0.05, 100, 50, 1000), (2.0, 7, 3, 30), (0.5, 2 ** 40, 2 ** 39, 10),
    (10.0, 5, 1, 1), (1.0, 100, 90, 1), (1.0, 1000, 999, 5), (300.0, 3, 2, 1)])
def test_binary_counting_extremes_phi_route(eps_tilde, n, m, k):
    """The characteristic-function route on extreme parameters (a rare atom far from a heavy one)."""
    # k = 1 unwrapped: a composition's lower end asks the child's PLD route (slow here).
    one = ExponentialMechanism.binary_counting(eps_tilde, n, m)
    mech = one if k == 1 else Composition()([one], [k])
    grid = np.array([0.0, 0.01, 0.3, 1.0, 5.0]) * max(k * eps_tilde, 1e-3)
    true = np.array([counting_delta(eps_tilde, n, m, k, e) for e in grid])
    # The route raises every atom by its law's bound on how far a computed value may be from
    # the true log-ratio (DiscreteLoss.value_bounds, k times): at a grid point on an atom that
    # moves delta by up to that much (p (1 - e^{-s}) <= s), where the truth may be 0.
    part = one.loss_parts()[0]
    shift = k * max(float(np.max(law.value_bounds())) for law in (part.forward, part.backward))
    with strict_warnings():
        got = mech.delta(grid, via="phi")
        assert np.all(got >= true * (1 - REL))
        assert np.all(got <= true * (1 + 1e-6) + 1e-15 + shift)
        for d in (1e-12, 1e-5, 0.3):
            e = mech.epsilon(d, via="phi")
            assert e >= 0.0 and counting_delta(eps_tilde, n, m, k, e) <= d * (1 + REL)


@pytest.mark.parametrize("eps_tilde, n, m, k", [(0.05, 100, 50, 100), (0.3, 40, 25, 20)])
def test_binary_counting_composed_bounds_bracket_truth(eps_tilde, n, m, k):
    mech = Composition()([ExponentialMechanism.binary_counting(eps_tilde, n, m)], [k])
    grid = np.array([0.0, 0.3, 1.0]) * math.sqrt(k) * eps_tilde
    with strict_warnings():
        check_against_truth(mech, lambda e: counting_delta(eps_tilde, n, m, k, e), grid)


def test_binary_counting_composed_epsilon_lower_is_certified():
    """Regression: the PLD route once returned lower 0.947 > upper 0.918 (truth 0.91796) here."""
    from scipy import optimize
    mech = Composition()([ExponentialMechanism.binary_counting(0.05, 100, 50)], [100])
    truth = optimize.brentq(lambda e: counting_delta(0.05, 100, 50, 100, e) - 1e-5, 0.0, 5.0,
                            xtol=1e-14)
    lo, up = mech.epsilon_bounds(1e-5)
    assert lo <= truth <= up


@SETTINGS
@given(eps0=st.floats(1e-3, 50.0), k=st.sampled_from([1, 3, 100]))
def test_exponential_mechanism_dominates_dong_optimal_bound(eps0, k):
    """ExponentialMechanism(eps0) bounds every eps0-BR mechanism: it is never below the best
    t-pair of Dong et al. (the class's optimal bound) at any eps, on any route."""
    m = Composition()([ExponentialMechanism(eps0)], [k])
    grid = np.array([0.0, 0.1, 0.5, 0.9]) * min(k * eps0, 5 * math.sqrt(k) * eps0 + eps0)
    ts = np.linspace(0.0, eps0, 41)
    with strict_warnings():
        check_curves(m, np.concatenate((grid, [k * eps0 * 1.01, 1000.0])), deltas=(1e-12, 1e-5, 0.5))
        best = np.array([max(grr_delta(t, eps0, k, e) for t in ts) for e in grid])
        for via in routes(m):
            assert np.all(np.asarray(m.delta(grid, via=via)) >= best * (1 - REL)), via


@pytest.mark.parametrize("eps0", [1e-3, 1.0, 100.0, 699.0])
def test_exponential_mechanism_single_far_eps_is_fast_and_exact(eps0):
    """One eps0-BR step: delta = 0 beyond eps0 on every route (the phi route's time there is
    measured in benchmarks/; unit tests assert no times)."""
    m = ExponentialMechanism(eps0)
    with strict_warnings():
        for via in routes(m):
            d = np.asarray(m.delta(np.array([eps0 * 1.001 + 1e-9, 10 * eps0, 1000.0]), via=via))
            # The phi route smooths the law, so just past eps0 it is only small, not zero;
            # the RDP conversion is loose by construction.
            if via != "rdp":
                assert np.all(d[1 if via == "phi" else 0:] <= 1e-200), (via, d)
            assert d[0] <= 1e-5
        assert m.epsilon(1e-15) <= eps0 * (1 + 2 * TOL)


# ----- binomial, also multi-dimensional -----------------------------------------------------------


def binomial_product_delta(n: int, p: float, shifts: tuple[int, ...], eps: float) -> float:
    """max over both orders of sum_o (P(o) - e^eps Q(o))_+ over the product of per-coordinate pmfs."""
    out = 0.0
    for order in (0, 1):
        logp = np.zeros(1)
        logq = np.zeros(1)
        for s in shifts:
            a = abs(s)
            k = np.arange(n + a + 1)
            pp = 1 - p if s < 0 else p
            with np.errstate(divide="ignore"):
                f1, f0 = stats.binom.logpmf(k - a, n, pp), stats.binom.logpmf(k, n, pp)
            if order:
                f1, f0 = f0, f1
            logp = (logp[:, None] + f1[None, :]).ravel()
            logq = (logq[:, None] + f0[None, :]).ravel()
        with np.errstate(invalid="ignore", over="ignore"):
            terms = np.exp(logp) * -np.expm1(np.minimum(eps + logq - logp, 0.0))
        out = max(out, float(np.nansum(np.where(np.isfinite(logp), terms, 0.0))))
    return out


@pytest.mark.parametrize("n, p, shifts", [(1, 0.5, (1,)), (30, 0.5, (1, -2)), (20, 0.3, (2, 2, -1))])
def test_binomial_matches_product_pmf(n, p, shifts):
    m = Binomial(n, p, list(shifts) if len(shifts) > 1 else shifts[0])
    grid = np.array([0.0, 0.2, 1.0, 3.0])
    with strict_warnings():
        check_curves(m, np.concatenate((grid, [1000.0])), deltas=(1e-12, 1e-5, 0.5))
        check_against_truth(m, lambda e: binomial_product_delta(n, p, shifts, e), grid)


def test_binomial_full_shift_is_infinite_not_an_error():
    assert Binomial(15, 0.999, 15).epsilon(1e-5) == math.inf


@pytest.mark.parametrize("n, p, shift, k", [(10 ** 6, 0.5, 1, 1), (10 ** 8, 0.3, [1, 2, -3], 1),
                                            (100, 0.5, 1, 100)])
def test_binomial_large_is_finite_and_near_gaussian(n, p, shift, k):
    """Large n: finite, monotone, and close to the Gaussian of the same variance (Koskela et al. 2021, Fig. 3)."""
    m = Composition()([Binomial(n, p, shift)], [k])
    shifts = shift if isinstance(shift, list) else [shift]
    mu = math.sqrt(k * sum(s * s for s in shifts) / (n * p * (1 - p)))
    with strict_warnings():
        check_curves(m, np.array([0.0, 0.1, 1.0, 1000.0]), deltas=(1e-10, 1e-5, 0.5))
        assert m.epsilon(1e-5) == pytest.approx(gaussian_eps_closed(mu, 1e-5), rel=0.05)


# ----- composite mechanisms ----------------------------------------------------------------------


@SETTINGS
@given(sigmas=st.lists(st.floats(0.05, 1e4), min_size=1, max_size=6), k=st.integers(1, 10 ** 7))
def test_noisy_gd_is_gaussian_on_every_route(sigmas, k):
    m = Composition()([NoisyGD(sigmas)], [k])
    mu = math.sqrt(k * math.fsum(1 / s ** 2 for s in sigmas))
    if mu > 300:
        return
    with strict_warnings():
        for via in routes(m):
            for d in (1e-12, 1e-5, 0.3):
                truth = gaussian_eps_closed(mu, d)
                got = m.epsilon(d, via=via)
                assert got >= truth * (1 - REL) - 1e-12, (via, d)
                if via in ("auto", "exact", "pld"):
                    assert got <= truth * (1 + REL) + 1e-12
        lo, up = m.epsilon_bounds(1e-6)
        assert lo <= gaussian_eps_closed(mu, 1e-6) * (1 + REL) <= up * (1 + 2 * REL)
        for e in (0.0, mu, 1000.0):
            assert m.delta(e) >= gaussian_delta_closed(mu, e) * (1 - REL) - 1e-300
            assert m.delta(e, via="phi") >= gaussian_delta_closed(mu, e) * (1 - REL) - 1e-300


@SETTINGS
@given(b1=st.floats(0.01, 1e4), b2=st.floats(0.05, 1e4), c=st.integers(1, 5),
       k=st.sampled_from([1, 7, 1000, 10 ** 6]))
def test_laplace_svt_is_randomized_response(b1, b2, c, k):
    """Dominated by randomised response with eps0 = 1/b1 + 2c/b2 (Lyu, Su and Li 2017, Thm 2)."""
    eps0 = 1 / b1 + 2 * c / b2
    if eps0 > 700:
        return
    m = Composition()([LaplaceSVT(b1, b2, c)], [k])
    grid = np.array([0.0, 0.2, 0.6]) * min(k * eps0, math.sqrt(k) * eps0 * 5 + eps0)
    with strict_warnings():
        check_curves(m, np.concatenate((grid, [1000.0])), deltas=(1e-12, 1e-5, 0.5))
        if k <= 1000:
            true = np.array([rr_delta_closed(eps0, k, e) for e in grid])
            for via in routes(m):
                assert np.all(np.asarray(m.delta(grid, via=via)) >= true * (1 - REL)), via


@SETTINGS
@given(s1=st.floats(0.05, 1e4), s2=st.floats(0.05, 1e4), kq=st.sampled_from([1, 50, 10 ** 6, 2 ** 40]),
       c=st.integers(1, 20), k=st.sampled_from([1, 100, 10 ** 7]))
def test_gaussian_svt_is_finite_monotone_and_warning_free(s1, s2, kq, c, k):
    if c > kq:
        return
    m = Composition()([GaussianSVT(s1, s2, kq, c)], [k])
    with strict_warnings():
        check_curves(m, np.array([0.0, 0.1, 1.0, 10.0, 1000.0]), deltas=(1e-15, 1e-5, 0.5))
        r = m.rdp(np.array([1 + 1e-8, 1.5, 2.0, 1e3, 1e6]))
        assert np.all(np.isfinite(r)) and np.all(np.diff(r) >= -1e-12) and np.all(r >= 0)
        # The threshold alone is a Gaussian mechanism: the bound is never below its RDP.
        assert np.all(r >= k * np.array([1 + 1e-8, 1.5, 2.0, 1e3, 1e6]) / (2 * s1 ** 2) * (1 - REL))


# ----- the known slow path ------------------------------------------------------------------------


@pytest.mark.parametrize("via", ["auto", "rdp"])
def test_discrete_gaussian_composed_ten_thousand_times(via):
    """DiscreteGaussian(sigma) composed 1e4 times: finite and sound (never below the Gaussian
    with the same RDP bound's lower end: the exact discrete truth lies above Gaussian(sigma
    * 1.0001)'s profile minus the CKS gap). Its time is measured in benchmarks/, not here."""
    sigma, k = 2.0, 10_000
    m = Composition()([DiscreteGaussian(sigma)], [k])
    with strict_warnings():
        e = m.epsilon(1e-5, via=via)
    # N_Z(0, sigma^2) has variance within 1e-9 of sigma^2 at sigma = 2 and its loss is the
    # Gaussian loss restricted to a lattice: the composed profile is the Gaussian's to 1%.
    ref = gaussian_eps_closed(math.sqrt(k) / sigma, 1e-5)
    assert math.isfinite(e) and e >= ref * 0.99
    assert e <= ref * 1.05


# ----- regression tests: cases other accountants are known to fail ----------------------------------


@pytest.mark.parametrize("make, kl", [
    (lambda: Gaussian(0.7), 1 / (2 * 0.7 ** 2)),
    (lambda: Laplace(0.5), 1 / 0.5 + math.exp(-1 / 0.5) - 1),
    (lambda: DiscreteGaussian(1.3), 1 / (2 * 1.3 ** 2)),      # mean of N_Z(1, s^2) is 1
    (lambda: DiscreteLaplace(2.0), None),
    (lambda: ExponentialMechanism.binary_counting(0.3, 40, 25), None),
    (lambda: NoisyGD([1.0, 2.0]), (1 + 1 / 4) / 2),
])
def test_rdp_order_near_one_is_the_kl_divergence(make, kl):
    """rdp(1 + 1e-8) is finite and equals the order-1 limit, the KL divergence, to 1e-6."""
    m = make()
    if kl is None:
        if isinstance(m, DiscreteLaplace):
            mm, p = dl_loss_pmf(m.t, 1)
            kl = float(np.dot(p, mm / m.t))
        else:
            # The exponential mechanism's two outcome probabilities on X and on its neighbour Y.
            e, a = m.eps_tilde, m.eps_tilde * (2 * m.m - m.n)
            lx = np.log([1 / (1 + math.exp(-a)), 1 / (1 + math.exp(a))])
            ly = np.log([1 / (1 + math.exp(e - a)), 1 / (1 + math.exp(a - e))])
            kl = max(float(np.dot(np.exp(lx), lx - ly)), float(np.dot(np.exp(ly), ly - lx)))
    with strict_warnings():
        r = m.rdp(1 + 1e-8)
        assert math.isfinite(r) and r >= kl * (1 - 1e-6) and r == pytest.approx(kl, rel=1e-5)


@pytest.mark.parametrize("make, limit", [
    (lambda: Gaussian(2.0), 1e6 / 8),
    (lambda: Laplace(0.5), 2.0),
    (lambda: DiscreteLaplace(0.5), 2.0),
    (lambda: DiscreteGaussian(2.0), 1e6 / 8),
    (lambda: ExponentialMechanism(0.5), 0.5),
    (lambda: LaplaceSVT(2.0, 4.0), 1.0),
])
def test_rdp_very_large_order(make, limit):
    """rdp(1e6): finite, at most the pure-DP epsilon (or alpha / (2 sigma^2) for Gaussians),
    and not far below it (the order-infinity limit)."""
    with strict_warnings():
        r = make().rdp(1e6)
    assert math.isfinite(r) and 0.99 * limit <= r <= limit * (1 + 1e-9)


@pytest.mark.parametrize("make", [
    lambda: Gaussian(1.0), lambda: Laplace(1.0), lambda: DiscreteGaussian(1.0),
    lambda: DiscreteLaplace(1.0), lambda: ExponentialMechanism(1.0), lambda: NoisyGD([1.0]),
    lambda: Binomial(50, 0.5, 1), lambda: LaplaceSVT(2.0, 4.0), lambda: GaussianSVT(2.0, 2.0, 10)])
def test_delta_near_one_and_eps_target_1000(make):
    """A single step: eps(1 - 1e-12) and delta(1000) on every route are finite, >= 0, and
    delta(1000) is zero or tiny (never negative, never NaN); for the binomial mechanism it
    is its atom at +inf, P(Bin(50, 1/2) = 50) = 2^-50."""
    m = make()
    p_inf = 2.0 ** -50 if isinstance(m, Binomial) else 0.0
    with strict_warnings():
        for via in routes(m):
            if p_inf and via == "rdp":
                continue    # its Renyi divergence is infinite: eps(delta) via RDP is inf
            e = m.epsilon(1 - 1e-12, via=via)
            assert math.isfinite(e) and e >= 0.0, via
            d = m.delta(1000.0, via=via)
            assert p_inf * (1 - REL) <= d <= p_inf * (1 + 1e-6) + 1e-20, (via, d)
            assert m.delta(0.0, via=via) >= d


def test_gaussian_eps_1000_matches_closed_form():
    with strict_warnings():
        assert 0.0 <= Gaussian(0.05).delta(1000.0) <= 1e-100
        assert Gaussian(0.05).delta(1000.0) >= gaussian_delta_closed(20.0, 1000.0)


# ----- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("build, name", [
    (lambda: ExponentialMechanism(float("inf")), "eps"),
    (lambda: ExponentialMechanism(701.0), "eps"),
    (lambda: ExponentialMechanism.binary_counting(0.1, 2 ** 60, 3), "n"),
    (lambda: Binomial(10, 0.0, 1), "p"),
    (lambda: Binomial(10, 0.5, [1, 11]), "shift[1]"),
    (lambda: DiscreteGaussian(float("nan")), "sigma"),
    (lambda: DiscreteGaussian(1e8), "sigma"),
    (lambda: DiscreteLaplace(1e-3), "t"),
    (lambda: DiscreteLaplace(float("inf")), "t"),
    (lambda: GaussianSVT(1.0, 1.0, 2 ** 53), "k"),
    (lambda: LaplaceSVT(1e-3, 1e-3), "b_threshold"),
    (lambda: NoisyGD([1.0, float("nan")]), "sigmas[1]"),
    (lambda: NoisyGD([1e-200]), "sigmas"),
    (lambda: Composition()([DiscreteGaussian(1.0)], [0]), "counts[0]"),
])
def test_bad_input_names_the_parameter(build, name):
    with pytest.raises(ValueError, match=name.replace("[", r"\[").replace("]", r"\]")):
        build()


@pytest.mark.parametrize("call, name", [
    (lambda m: m.epsilon(0.0), "delta"), (lambda m: m.epsilon(1.0), "delta"),
    (lambda m: m.delta(-1.0), "epsilon"), (lambda m: m.delta(float("nan")), "epsilon"),
    (lambda m: m.rdp(0.5), "alpha"), (lambda m: m.epsilon(1e-5, via="fft"), "via"),
])
def test_bad_query_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call(DiscreteLaplace(1.0))


# ----- finite pairs: enumeration of the composed outcomes' counts ---------------------------------


def pair_composed_delta(p: np.ndarray, q: np.ndarray, k: int, eps: float) -> float:
    """delta(eps) of k runs of the pair (P, Q) on n outcomes, both directions: a sum over the
    count vectors c (c_i runs gave outcome i), with multinomial weights, of
    max(P^k(c) - e^eps Q^k(c), 0), where P^k(c) = multinom(k; c) prod p_i^c_i."""
    n = len(p)
    counts = np.array([c for c in itertools.product(range(k + 1), repeat=n) if sum(c) == k], dtype=float)
    log_m = special.gammaln(k + 1) - special.gammaln(counts + 1).sum(axis=1)
    with np.errstate(divide="ignore"):
        lp = log_m + special.xlogy(counts, p).sum(axis=1)
        lq = log_m + special.xlogy(counts, q).sum(axis=1)
    pk, qk = np.exp(lp), np.exp(lq)
    w = math.exp(eps)
    return float(max(np.maximum(pk - w * qk, 0.0).sum(), np.maximum(qk - w * pk, 0.0).sum()))


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(3, 4), seed=st.integers(0, 2**16), k=st.integers(1, 5), zero=st.booleans())
def test_discrete_pair_composed_matches_enumeration(n, seed, k, zero):
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))
    if zero:
        # A little Q-mass on an outcome P never produces: delta >= it in the addition direction.
        # (With n >= 3 the other outcomes keep losses of order 1: with only one, its loss is
        # ~1e-9, where the FFT grid is far coarser than the law and the bounds, though valid,
        # are wider than the tolerance, with an AccuracyWarning.)
        p[0], q[0] = 0.0, 1e-9
    one = DiscretePair(p / p.sum(), q / q.sum())
    m = Composition()([one], [k])
    pp, qq = np.array(one.p), np.array(one.q)
    scale = k * float(np.max(np.abs(np.log(pp[pp > 0] / qq[pp > 0]))))
    grid = np.array([0.0, 0.1, 0.4, 0.8]) * scale
    with strict_warnings():
        check_curves(m, np.concatenate((grid, [scale * 1.01, 1000.0])), deltas=(0.1, 0.5) if zero else DELTAS)
        check_against_truth(m, lambda e: pair_composed_delta(pp, qq, k, e), grid)


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(noise=st.floats(0.01, 1.0), buckets=st.integers(2, 1000), k=st.integers(1, 30))
def test_kary_rr_composed_matches_trinomial(noise, buckets, k):
    m = Composition()([KaryRandomizedResponse(noise, buckets)], [k])
    scale = k * math.log1p(buckets * (1 - noise) / noise)
    grid = np.array([0.0, 0.1, 0.4, 0.8]) * scale
    with strict_warnings():
        check_curves(m, np.concatenate((grid, [scale * 1.01 + 1e-9, 1000.0])))
        check_against_truth(m, lambda e: kary_rr_delta_closed(noise, buckets, k, e), grid)
