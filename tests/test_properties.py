"""Property-based tests (hypothesis): drawn mechanisms, compositions and queries, checked against
independent truths (tests/closed_forms.py, mpmath at 60 digits) and generic invariants.

Soundness: every upper bound is >= the truth and every lower bound <= it; tradeoff values are
lower bounds on the true tradeoff curve. Invariants: no NaN, nothing negative, delta in [0, 1],
lower <= upper, delta(epsilon(d)) <= d, curves monotone, scalar queries equal the array query's
entries, no warning but AccuracyWarning.

Budget. The draws are derandomised (the same cases on every run). The CI budget (default) draws
2,075 cases (the sum of max_examples; plus the former and known failures' explicit cases) in
88 to 103 s wall time on a shared 2-core machine (load average 2.5 to 3.5).
``AUTOACCT_PROPERTY_SCALE=N`` multiplies every test's number of examples by N and, for N > 1,
opens the slow draw regions that the CI budget leaves out (each is named where it is restricted);
``AUTOACCT_PROPERTY_RANDOM=1`` draws fresh cases (then ``--hypothesis-seed=S`` reproduces a run);
``AUTOACCT_PROPERTY_COLLECT=path`` logs every failing or slow case and goes on;
``AUTOACCT_PROPERTY_TIME_LIMIT`` is the per-query limit in seconds (30). See README, Development.

Exact-truth comparisons use the monotone inverse where a root would be needed: the true
delta(eps) is continuous and non-increasing, strictly decreasing where positive, so for d > 0
    up >= eps_true(d)  iff  delta_true(up) <= d,
    lo <= eps_true(d)  iff  lo == 0 or delta_true(lo) >= d,
one high-precision evaluation each, with no tolerance.
"""

from __future__ import annotations

import math
import os
import pickle
import time
import warnings
from collections.abc import Callable
from typing import Any

import mpmath as mp
import numpy as np
import pytest
from closed_forms import (
    mp_bounded_range_delta,
    mp_gaussian_delta,
    mp_gaussian_tradeoff,
    mp_laplace_delta,
    mp_leaky_rr_delta,
    mp_poisson_gaussian_delta,
    mp_poisson_two_point_delta,
    mp_rr_delta,
    mp_two_point_delta,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.errors import UnsatisfiedAssumption

from autoacct import AccuracyWarning
from autoacct.mechanism import Mechanism
from autoacct.zoo import (
    ZCDP,
    ApproxDP,
    BinaryCountingExponential,
    Binomial,
    Composition,
    DiscreteGaussian,
    DiscreteLaplace,
    DiscretePair,
    ExponentialMechanism,
    Gaussian,
    GaussianSVT,
    Group,
    KaryRandomizedResponse,
    Laplace,
    LaplaceSVT,
    MixtureOfGaussians,
    NoisyGD,
    PoissonSubsample,
    PureDP,
    RandomizedResponse,
    RepeatAndSelect,
    SampleWithoutReplacement,
    SampleWithReplacement,
    TreeAggregation,
)

SCALE = float(os.environ.get("AUTOACCT_PROPERTY_SCALE", "1"))
LONG = SCALE > 1
RANDOM = os.environ.get("AUTOACCT_PROPERTY_RANDOM", "") not in ("", "0")
# A single query slower than this fails the case (a hang is a bug too).
TIME_LIMIT = float(os.environ.get("AUTOACCT_PROPERTY_TIME_LIMIT", "30"))


COLLECT = os.environ.get("AUTOACCT_PROPERTY_COLLECT", "")


def collecting(fn: Callable[..., None]) -> Callable[..., None]:
    """With AUTOACCT_PROPERTY_COLLECT=path, log failing cases to path and go on (a survey mode
    for finding many failures in one run); otherwise the test itself."""
    if not COLLECT:
        return fn

    def wrapped(**kwargs: Any) -> None:
        start = time.perf_counter()
        try:
            fn(**kwargs)
            err = None
        except UnsatisfiedAssumption:
            raise  # a draw the test assumes away, not a failure
        except Exception as exc:  # noqa: BLE001 - the survey records every failure
            err = f"{type(exc).__name__}: {str(exc)[:300]}"
        elapsed = time.perf_counter() - start
        if err or elapsed > 5:
            with open(COLLECT, "a") as f:
                f.write(f"{fn.__name__} {kwargs!r} {elapsed:.2f}s {err}\n")
    wrapped.__name__ = fn.__name__
    return wrapped


def budget(n: int) -> settings:
    """The settings of a property with n examples in the CI budget."""
    return settings(max_examples=max(1, round(n * SCALE)), derandomize=not RANDOM, deadline=None,
                    database=None, suppress_health_check=list(HealthCheck), print_blob=True)


# ----- strategies --------------------------------------------------------------------------------

def log_uniform(lo: float, hi: float, extremes: bool = True) -> st.SearchStrategy[float]:
    """Log-uniform on [lo, hi], with both ends drawn on purpose."""
    body = st.floats(math.log10(lo), math.log10(hi)).map(lambda x: min(max(10.0 ** x, lo), hi))
    return st.one_of(st.sampled_from([lo, hi]), body) if extremes else body


def log_int(lo: int, hi: int) -> st.SearchStrategy[int]:
    """Integers log-uniform on [lo, hi], ends included."""
    return st.one_of(st.sampled_from([lo, hi]),
                     st.floats(math.log10(lo), math.log10(hi)).map(lambda x: min(max(round(10.0 ** x), lo), hi)))


deltas = st.one_of(st.sampled_from([1e-300, 1e-100, 1e-12, 0.5, 0.999999]), log_uniform(1e-300, 0.999999))
# The whole range down to 1e-300 (the Gaussian tradeoff there was a few ulps above the truth
# until the argument's rounding was accounted for; test_former_failures keeps the case).
alphas = st.one_of(st.sampled_from([0.0, 1e-300, 1e-200, 1e-12, 0.5, 1.0]), log_uniform(1e-300, 1.0))


# ----- query helpers ------------------------------------------------------------------------------

def call(fn: Callable[[], Any], queries: int = 1) -> Any:
    """Run ``queries`` queries (an array of deltas asked for epsilon is one query per entry, each
    with its own budget: README, Consistency): only AccuracyWarning may escape, and they must
    finish within TIME_LIMIT each."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    elapsed = time.perf_counter() - start
    leaked = [f"{w.category.__name__}: {w.message}" for w in caught if not issubclass(w.category, AccuracyWarning)]
    assert not leaked, leaked
    assert elapsed < TIME_LIMIT * queries, f"{queries} queries took {elapsed:.1f} s"
    return out


def mpf(x: float) -> mp.mpf:
    return mp.mpf(float(x))


# The truths are computed at 60 digits with at most a few thousand roundings, so they carry a
# relative error far below 1e-40; comparisons allow exactly that and nothing else (a double ulp
# is 1.1e-16).
MP_SLACK = mp.mpf("1e-40")


def check_eps_against_delta_truth(lo: float, up: float, d: float, truth: Callable[[float], mp.mpf],
                                  abs_slack: float = 0.0) -> None:
    """lo <= eps_true(d) <= up through the monotone inverse (module docstring). ``abs_slack``:
    the truth's absolute 60-digit rounding where it is a difference of masses (about 1e-60
    times the largest mass), for the few truths that cannot be written with exact losses."""
    with mp.workdps(60):
        at_up = truth(up)
        assert at_up <= mpf(d) * (1 + MP_SLACK) + abs_slack, \
            f"upper eps {up!r} is below the truth at delta {d!r}: delta({up!r}) = {at_up}"
        assert lo == 0 or truth(lo) >= mpf(d) * (1 - MP_SLACK) - abs_slack, \
            f"lower eps {lo!r} is above the truth at delta {d!r}"


def check_delta_bracket(lo: float, up: float, truth: mp.mpf, abs_slack: float = 0.0) -> None:
    with mp.workdps(60):
        assert mpf(lo) <= truth * (1 + MP_SLACK) + abs_slack and truth * (1 - MP_SLACK) - abs_slack <= mpf(up), \
            f"delta bracket ({lo!r}, {up!r}) misses the truth {truth}"


def fresh(m: Mechanism) -> Mechanism:
    """A copy of m with an empty cache (no certified points, no accountant)."""
    return pickle.loads(pickle.dumps(m))


def check_invariants(m: Mechanism, ds: list[float], es: list[float]) -> None:
    """The generic invariants of the eps and delta queries at sorted deltas ds and epsilons es."""
    ds, es = sorted(ds), sorted(es)
    lo, up = call(lambda: m.epsilon_bounds(np.array(ds)), len(ds))
    eps = call(lambda: m.epsilon(np.array(ds)), len(ds))
    assert lo.shape == up.shape == eps.shape == (len(ds),)
    for a in (lo, up, eps):
        assert not np.any(np.isnan(a)) and np.all(a >= 0)
    assert np.all(lo <= up)
    # eps is non-increasing in delta (ds ascending).
    # (compared entrywise, not by np.diff: inf - inf is nan, and an all-inf eps is monotone; the
    # diff form failed ApproxDP(1e-5, 0.5) at delta 1e-30, a test bug)
    assert np.all(up[1:] <= up[:-1]) and np.all(eps[1:] <= eps[:-1])
    # The scalar query is the array query's entry.
    i = len(ds) // 2
    slo, sup = call(lambda: m.epsilon_bounds(ds[i]))
    assert isinstance(sup, float) and (slo, sup) == (lo[i], up[i])
    assert call(lambda: m.epsilon(ds[i])) == eps[i]
    # delta(epsilon(d)) <= d, where epsilon(d) is finite (for Gaussians and discrete Gaussians it
    # once failed; test_former_failures keeps those cases).
    for d, e in zip(ds, eps):
        if np.isfinite(e):
            assert call(lambda e=e: m.delta(e)) <= d, f"delta(epsilon({d!r})) > {d!r}"
    dlo, dup = call(lambda: m.delta_bounds(np.array(es)))
    dd = call(lambda: m.delta(np.array(es)))
    for a in (dlo, dup, dd):
        assert not np.any(np.isnan(a)) and np.all((a >= 0) & (a <= 1))
    assert np.all(dlo <= dup)
    assert np.all(dup[1:] <= dup[:-1]) and np.all(dd[1:] <= dd[:-1])
    # The scalar delta query against the array query's entry, each asked first of a fresh copy
    # (a pickled mechanism is its parameters, without the cache): the auto route tightens later
    # answers by the profile points earlier ones certified (README, Consistency), and a repeated
    # delta query then came back one ulp lower (former failure "delta-repeat-query-one-ulp-lower").
    # Where the exact route answers they are equal. Elsewhere an array is one accountant run
    # whose grid is sized by its largest eps, and a scalar query's grid is aimed at its eps, so
    # the two certified brackets may differ below tol (README, Consistency; the former known
    # failure "scalar-delta-not-array-entry"): they must overlap.
    j = len(es) // 2
    fa, fs = fresh(m), fresh(m)
    blo, bup = call(lambda: fa.delta_bounds(np.array(es)))
    slo, sup = call(lambda: fs.delta_bounds(es[j]))
    if "exact" in m.routes:
        assert (slo, sup) == (blo[j], bup[j])
        fa, fs = fresh(m), fresh(m)
        assert call(lambda: fs.delta(es[j])) == call(lambda: fa.delta(np.array(es)))[j]
    else:
        assert slo <= bup[j] and blo[j] <= sup


# ----- 1. Gaussian compositions against the analytic mu-GDP truth ---------------------------------

# The whole range: sigma in [1e-2, 1e4], k up to 1e7, delta in [1e-300, 1). The exact route
# answers every case in about a millisecond, so nothing is held back from the CI budget.
gaussian_steps = st.lists(st.tuples(log_uniform(1e-2, 1e4), log_int(1, 10**7)), min_size=1, max_size=3)


def gaussian_mechanism(steps: list[tuple[float, int]]) -> tuple[Mechanism, mp.mpf]:
    with mp.workdps(60):
        mu = mp.sqrt(sum(k / mpf(s) ** 2 for s, k in steps))
    if len(steps) == 1 and steps[0][1] == 1:
        return Gaussian(steps[0][0]), mu
    return Composition()([Gaussian(s) for s, _ in steps], [k for _, k in steps]), mu


@budget(350)
@given(steps=gaussian_steps, d=deltas, frac=st.floats(0.0, 2.0), alpha=alphas)
@collecting
def test_gaussian_compositions_bracket_the_analytic_truth(steps, d, frac, alpha):
    m, mu = gaussian_mechanism(steps)
    lo, up = call(lambda: m.epsilon_bounds(d))
    # Through the monotone inverse (module docstring): no root of the truth is needed.
    check_eps_against_delta_truth(lo, up, d, lambda e: mp_gaussian_delta(mu, e))
    assert call(lambda: m.epsilon(d)) == up
    assert call(lambda: m.delta(up)) <= d, f"delta(epsilon({d!r})) > {d!r}"
    # delta at an eps drawn around the answer.
    e = float(frac * up) if math.isfinite(up) else float(frac)
    dlo, dup = call(lambda: m.delta_bounds(e))
    check_delta_bracket(dlo, dup, mp_gaussian_delta(mu, e))
    # The tradeoff is a lower bound on Phi(Phi^-1(1 - alpha) - mu), and at most 1 - alpha.
    f = call(lambda: m.tradeoff(alpha))
    assert 0 <= f <= 1 - alpha
    assert mpf(f) <= mp_gaussian_tradeoff(mu, alpha), f"tradeoff({alpha!r}) = {f!r} above the truth"
    fa = call(lambda: m.tradeoff(np.array([alpha, 0.5])))
    assert fa[0] == f


# Other routes give upper bounds only; they must be above the truth too. The PLD and phi routes
# run an accountant (tens of ms), so the CI budget keeps sigma in [0.3, 100] and k <= 1e4; the long
# run opens the whole range.
_route_sigma = log_uniform(1e-2, 1e4) if LONG else log_uniform(0.3, 100.0)
_route_k = log_int(1, 10**7) if LONG else log_int(1, 10**4)


@budget(300)
@given(sigma=_route_sigma, k=_route_k, d=deltas, via=st.sampled_from(["pld", "phi", "rdp"]))
@collecting
def test_gaussian_other_routes_are_upper_bounds(sigma, k, d, via):
    m = Composition()([Gaussian(sigma)], [k])
    mu = mp.sqrt(k) / mpf(sigma)
    up = call(lambda: m.epsilon(d, via=via))
    assert not math.isnan(up) and up >= 0
    if math.isfinite(up):
        check_eps_against_delta_truth(0.0, up, d, lambda e: mp_gaussian_delta(mu, e))


# The zoo's other mu-GDP mechanisms: NoisyGD (mu^2 = sum 1/sigma_i^2), Group(g) of a Gaussian
# (mu = g/sigma), TreeAggregation (mu = sqrt(floor(log2 steps) + 1)/sigma, Kairouz et al. 2021)
# and a mixture of Gaussians with one sensitivity s (mu = s/sigma), each composed k times.
@st.composite
def gaussian_family(draw: st.DrawFn) -> tuple[Mechanism, mp.mpf]:
    kind = draw(st.sampled_from(["noisygd", "group", "tree", "mixture"]))
    k = draw(log_int(1, 10**6))
    with mp.workdps(60):
        if kind == "noisygd":
            sigmas = draw(st.lists(log_uniform(1e-1, 1e4), min_size=1, max_size=4))
            m: Mechanism = NoisyGD(tuple(sigmas))
            mu2 = sum(1 / mpf(x) ** 2 for x in sigmas)
        elif kind == "group":
            g, sigma = draw(st.integers(1, 100)), draw(log_uniform(1e-1, 1e4))
            m, mu2 = Group(g)(Gaussian(sigma)), (g / mpf(sigma)) ** 2
        elif kind == "tree":
            sigma, steps = draw(log_uniform(1e-1, 1e4)), draw(log_int(1, 10**6))
            m = TreeAggregation(sigma, steps)
            mu2 = (steps.bit_length()) / mpf(sigma) ** 2  # floor(log2 steps) + 1 levels
        else:
            sigma, sens = draw(log_uniform(1e-1, 1e4)), draw(log_uniform(1e-2, 10.0))
            m, mu2 = MixtureOfGaussians(sigma, (sens,), (1.0,)), (mpf(sens) / mpf(sigma)) ** 2
        if k > 1:
            m = Composition()([m], [k])
        return m, mp.sqrt(k * mu2)


@budget(200)
@given(case=gaussian_family(), d=deltas, frac=st.floats(0.0, 2.0), alpha=alphas)
@collecting
def test_gaussian_family_brackets_the_analytic_truth(case, d, frac, alpha):
    m, mu = case
    lo, up = call(lambda: m.epsilon_bounds(d))
    check_eps_against_delta_truth(lo, up, d, lambda e: mp_gaussian_delta(mu, e))
    e = float(frac * up)
    dlo, dup = call(lambda: m.delta_bounds(e))
    check_delta_bracket(dlo, dup, mp_gaussian_delta(mu, e))
    f = call(lambda: m.tradeoff(alpha))
    assert 0 <= f <= 1 - alpha and mpf(f) <= mp_gaussian_tradeoff(mu, alpha), f"tradeoff({alpha!r}) = {f!r}"


# ----- 2. Two-outcome laws against exact binomial sums --------------------------------------------

# k <= 200 keeps each case near 0.1 s (binomial sums in mpmath, a PLD for pairs); the long run
# goes to 2000. (k = 1, one step, had rounding failures of a few ulps; test_former_failures
# keeps those cases.)
_two_point_k = log_int(1, 2000 if LONG else 200)


@budget(110)
@given(kind=st.sampled_from(["rr", "pure", "approx", "group", "pair"]), eps0=log_uniform(1e-4, 20.0),
       k=_two_point_k, delta0=log_uniform(1e-300, 0.5), d=deltas, frac=st.floats(0.0, 1.2),
       g=st.integers(1, 5), b=st.floats(0.0, 1.0))
@collecting
def test_two_point_compositions_bracket_the_binomial_sum(kind, eps0, k, delta0, d, frac, g, b):
    slack = 0.0
    if kind == "pair" and not LONG:
        # Two outcomes with incommensurate losses run the PLD accountant on a fine grid: composed
        # 282 to 500 times, 12 to 19 s a case; the CI budget keeps k <= 10.
        k = min(k, 10)
    if kind == "pair":
        # DiscretePair on two outcomes, P = (a, 1 - a), Q = (b, 1 - b): both directions count.
        a = 1.0 / (1.0 + math.exp(-eps0))
        if not 0.0 < a < 1.0 or a == b:
            a, b = 0.75, 0.25
        # A Q-mass below 1e-300 gives a finite loss above 690, and beyond 709.78 (= log of the
        # largest float) the PLD route's delta upper bound collapses (known failure
        # "pair-loss-above-709"): such masses are drawn as 0 (loss +inf) instead.
        if 0.0 < b < 1e-300:
            b = 0.0
        base: Mechanism = DiscretePair((a, 1.0 - a), (b, 1.0 - b))
        # The complements at the reference's precision: at mpmath's default 15 digits 1 - b
        # rounded to 1 for b = 1.2e-38, Q's masses summed to 1 + b and the "truth" exceeded 1
        # by k b (a long-run failure of this test, not of the library).
        with mp.workdps(60):
            pp, qq = (mpf(a), 1 - mpf(a)), (mpf(b), 1 - mpf(b))
        # The losses log(a/b) are not exact here: the masses' difference is a 60-digit rounding
        # of up to ~1e-60 where the true delta is 0, and d goes down to 1e-300.
        slack = 1e-55
        def truth(e: float) -> mp.mpf:
            return max(mp_two_point_delta(pp, qq, k, e), mp_two_point_delta(qq, pp, k, e))
        with np.errstate(divide="ignore"):
            top = max(abs(math.log(a / b)) if b > 0 else 50.0, abs(math.log((1 - a) / (1 - b))) if b < 1 else 50.0)
        eps0 = min(top, 50.0)
    elif kind == "group":
        # Group(g) of eps0-DP is g eps0-DP, dominated by randomized response with log-odds g eps0.
        base = Group(g)(PureDP(eps0))
        eps0_group = g * mpf(eps0)  # exact: g is a small integer
        def truth(e: float) -> mp.mpf:
            return mp_rr_delta(eps0_group, k, e)
        eps0 = g * eps0
    elif kind == "rr":
        p = 1.0 / (1.0 + math.exp(-eps0))
        if not 0.5 <= p < 1.0:
            p = 0.5
        base = RandomizedResponse(p)
        with mp.workdps(60):
            eps0_exact = mp.log(mpf(p) / (1 - mpf(p)))
        def truth(e: float) -> mp.mpf:
            return mp_rr_delta(eps0_exact, k, e)
    elif kind == "pure":
        base = PureDP(eps0)
        # Exact losses eps0 (2j - k): with the masses' difference instead, the truth at
        # eps = k eps0 (exactly 0) was a 60-digit rounding of ~1e-61, above d = 1e-300, and the
        # exact upper bound k eps0 failed against it (a test bug, not the library's).
        def truth(e: float) -> mp.mpf:
            return mp_rr_delta(eps0, k, e)
    else:
        base = ApproxDP(eps0, delta0)
        def truth(e: float) -> mp.mpf:
            return mp_leaky_rr_delta(eps0, delta0, k, e)
    m = Composition()([base], [k])
    e = frac * k * eps0
    dlo, dup = call(lambda: m.delta_bounds(e))
    check_delta_bracket(dlo, dup, truth(e), slack)
    lo, up = call(lambda: m.epsilon_bounds(d))
    if math.isfinite(up):
        check_eps_against_delta_truth(lo, up, d, truth, slack)
    else:  # inf is only right where delta never reaches d (a mass where Q has none is above d)
        assert kind in ("approx", "pair") and truth(1e300) > d


# Poisson-subsampled randomized response runs the PLD accountant on a represented law: seconds per
# query already at k = 5 (see test_known_failures), so the CI budget keeps k <= 3; the long run
# goes to 40.
@budget(15)
# q down to 1e-24 (there epsilon(d) was 0 while the true delta(0) ~ q > d; test_former_failures).
@given(q=st.one_of(st.just(1.0), log_uniform(1e-24, 1.0)), p=st.floats(0.5, 0.999),
       k=st.integers(1, 40 if LONG else 3), frac=st.floats(0.0, 1.2), d=deltas)
@collecting
def test_poisson_rr_brackets_the_binomial_sum(q, p, k, frac, d):
    m = PoissonSubsample(q)(RandomizedResponse(p))
    if k > 1:
        m = Composition()([m], [k])
    pair = ((mpf(p), 1 - mpf(p)), (1 - mpf(p), mpf(p)))

    def truth(e: float) -> mp.mpf:
        return mp_poisson_two_point_delta(q, pair[0], pair[1], k, e)
    eps0 = math.log(p / (1 - p))
    e = frac * k * eps0
    dlo, dup = call(lambda: m.delta_bounds(e))
    check_delta_bracket(dlo, dup, truth(e))
    lo, up = call(lambda: m.epsilon_bounds(d))
    check_eps_against_delta_truth(lo, up, d, truth)


# ----- 3. Single steps with closed forms ----------------------------------------------------------

# The whole range, eps = 1/b (frac = 1) on purpose: just below it the lower bound was above the
# truth, and at eps = fl(1/b) the upper bound was 0 (test_former_failures).
@budget(670)
@given(b=log_uniform(1e-3, 1e4), frac=st.one_of(st.just(1.0), st.floats(0.0, 1.5)), d=deltas)
@collecting
def test_laplace_step_matches_its_closed_form(b, frac, d):
    m = Laplace(b)
    e = frac / b
    dlo, dup = call(lambda: m.delta_bounds(e))
    check_delta_bracket(dlo, dup, mp_laplace_delta(b, e))
    lo, up = call(lambda: m.epsilon_bounds(d))
    check_eps_against_delta_truth(lo, up, d, lambda x: mp_laplace_delta(b, x))


# Sampling without replacement under replace-one has the same tight pair for a Gaussian base
# as Poisson sampling under add/remove: the neighbour that swaps the one record of sensitivity 1
# for one of contribution 0 gives exactly ((1-q) Q + q P, Q) and its reverse (Zhu, Dong and Wang
# 2022, Proposition 30, which also shows it dominates), so one step of either has the closed form
# mp_poisson_gaussian_delta.
# Time, not soundness, bounds this draw in CI: PoissonSubsample(1e-15)(Gaussian(0.5))
# .epsilon_bounds(1e-100) did not return within minutes, q = 1e-6, sigma = 0.5, delta = 1e-30
# took 5 to 9 s, and q = 1e-4, sigma = 1 at delta 1e-30 takes 7 s of CPU; so the CI budget keeps
# q >= 1e-4, sigma >= 1 and delta >= 1e-12, and the long run opens q to 1e-24, sigma to 0.05 and
# delta to 1e-300. (q below 1e-16 once gave eps 0 against a true delta(0) ~ q and a delta upper
# bound 13 orders below the truth; test_former_failures keeps those cases.)
_sub_q = (st.one_of(st.sampled_from([0.0, 1e-24, 1.0]), log_uniform(1e-24, 1.0)) if LONG
          else st.one_of(st.sampled_from([0.0, 1e-4, 1.0]), log_uniform(1e-4, 1.0)))
_sub_sigma = log_uniform(0.05, 1e3) if LONG else log_uniform(1.0, 1e3)
# Sampling without replacement at delta 1e-20 took 5 to 8 s a query (q = 0.99998, sigma = 128;
# q = 1e-4, sigma = 1) after the merge of main, so the CI budget keeps delta >= 1e-12 here.
_sub_deltas = deltas if LONG else st.one_of(st.sampled_from([1e-12, 0.5, 0.999999]), log_uniform(1e-12, 0.999999))


@budget(40)
@given(scheme=st.sampled_from(["poisson", "swor"]),
       q=_sub_q, sigma=_sub_sigma, frac=st.floats(0.0, 1.5), d=_sub_deltas)
@collecting
def test_subsampled_gaussian_step_matches_its_closed_form(scheme, q, sigma, frac, d):
    sampler = PoissonSubsample(q) if scheme == "poisson" else SampleWithoutReplacement(q)
    m = sampler(Gaussian(sigma))

    def truth(e: float) -> mp.mpf:
        return mp_poisson_gaussian_delta(q, sigma, e)
    lo, up = call(lambda: m.epsilon_bounds(d))
    check_eps_against_delta_truth(lo, up, d, truth)
    e = frac * up
    dlo, dup = call(lambda: m.delta_bounds(e))
    check_delta_bracket(dlo, dup, truth(e))


# One eps0-bounded-range step: any sound delta upper bound is above every eps0-BR two-point pair
# (a grid of them, mp_bounded_range_delta); the lower bound is below the class's supremum, which
# is (e^{eps0/2} - e^{eps/2})^2 / (e^eps0 - 1) (maximise the two-point profile over t: the
# maximum is at e^t = e^{(eps0 + eps)/2}); the grid maximum must be below that supremum too.
@budget(150)
@given(eps0=log_uniform(1e-3, 50.0), frac=st.floats(0.0, 1.2))
@collecting
def test_bounded_range_step_is_above_every_two_point_pair(eps0, frac):
    m = ExponentialMechanism(eps0)
    e = frac * eps0
    dlo, dup = call(lambda: m.delta_bounds(e))
    grid = mp_bounded_range_delta(eps0, e)
    with mp.workdps(60):
        sup = (mp.exp(mpf(eps0) / 2) - mp.exp(mpf(e) / 2)) ** 2 / mp.expm1(mpf(eps0)) if e < eps0 else mp.mpf(0)
    with mp.workdps(60):  # both at 60 digits: the grid's maximum agrees with sup to ~1e-55
        # (+1e-50: slack for 60-digit rounding; beyond eps0 the grid's terms are exactly 0 since
        # mp_bounded_range_delta writes each as mass * -expm1(eps - loss), which fixed a false
        # failure: an upper bound of exactly 0 against a grid maximum of 1.1e-61 rounding)
        assert grid <= sup * (1 + mp.mpf("1e-40")) + mp.mpf("1e-50")
        assert mpf(dup) >= grid, f"delta upper {dup!r} below a {eps0}-BR pair's {grid}"
        assert mpf(dlo) <= sup


# ----- 4. Generic invariants over a broad zoo -----------------------------------------------------

# The CI budget keeps counts of PLD-accounted mechanisms at <= 1e3 (Laplace at k = 1e7 takes ~8 s);
# the long run goes to 1e7.
# (DiscreteGaussian(1.0) composed 1e4 times takes 7 to 10 s a query at delta 1e-30: CI keeps k <= 1e3.)
_k = log_int(1, 10**7 if LONG else 10**3)
# Composed subsampled mechanisms run the PLD accountant on a mixture: in the CI budget's draw
# PoissonSubsample(0.00184)(PureDP(0.00184)) composed 153 times took 40 to 53 s a query at delta
# 7.5e-23, PoissonSubsample(1.29e-4)(Gaussian(189.2)) composed 1000 times 15 to 44 s, and
# PoissonSubsample(1e-4)(DiscreteLaplace(1000)) composed 10 times 10 s at delta 1e-30. The CI
# budget keeps subsampled mechanisms uncomposed (k = 1); the long run goes to k = 1e7.
_k_sub = st.just(1)
# Tiny sampling rates with small noise hang or take seconds (see _sub_q): the CI budget keeps
# q >= 1e-4 and zoo deltas >= 1e-30; the long run draws q down to 1e-24 and deltas to 1e-300.
_q = (st.one_of(st.sampled_from([0.0, 1e-24, 1.0]), log_uniform(1e-24, 1.0)) if LONG
      else st.one_of(st.sampled_from([0.0, 1e-4, 1.0]), log_uniform(1e-4, 1.0)))
_zoo_deltas = deltas if LONG else st.one_of(st.sampled_from([1e-30, 0.5, 0.999999]), log_uniform(1e-30, 0.999999))


@st.composite
def base_mechanisms(draw: st.DrawFn) -> Mechanism:
    kind = draw(st.sampled_from(["gaussian", "laplace", "rr", "pure", "approx", "dgauss", "dlaplace", "exp"]))
    if kind == "gaussian":
        return Gaussian(draw(log_uniform(1e-2, 1e4)))
    if kind == "laplace":  # b = 0.011 (0.108) composed 668 times takes 20 s (14 s): CI keeps b >= 1
        return Laplace(draw(log_uniform(1e-2 if LONG else 1.0, 1e4)))
    if kind == "rr":
        return RandomizedResponse(draw(st.one_of(st.sampled_from([0.5, 0.999999]), st.floats(0.5, 0.999999))))
    if kind == "pure":
        return PureDP(draw(st.one_of(st.just(0.0), log_uniform(1e-6, 30.0))))
    if kind == "approx":
        return ApproxDP(draw(log_uniform(1e-6, 30.0)), draw(st.one_of(st.just(0.0), log_uniform(1e-300, 0.5))))
    if kind == "dgauss":  # composed 4 times, 1 to 3 s a query: CI keeps it uncomposed (_k_of)
        return DiscreteGaussian(draw(log_uniform(0.1, 1e3)))
    if kind == "dlaplace":
        return DiscreteLaplace(draw(log_uniform(0.1, 1e3)))
    return ExponentialMechanism(draw(log_uniform(1e-3, 30.0)))


@st.composite
def mechanisms(draw: st.DrawFn) -> Mechanism:
    m = draw(base_mechanisms())
    wrap = draw(st.sampled_from(["none", "poisson", "swor", "swr"]))
    if wrap == "poisson":
        m = PoissonSubsample(draw(_q))(m)
    elif wrap == "swor" and isinstance(m, Gaussian | RandomizedResponse | Laplace) and (
            LONG or not (isinstance(m, Gaussian) and m.sigma < 0.5)):
        # CI leaves out SampleWithoutReplacement(1e-4)(Gaussian(0.0999)): 6 to 7 s a query.
        m = SampleWithoutReplacement(draw(_q))(m)
    elif wrap == "swr" and isinstance(m, Gaussian) and LONG:
        # Long run only: SampleWithReplacement(1, 145)(Gaussian(1.05)) takes 81 s at delta 1e-300.
        n = draw(log_int(2, 10**6))
        m = SampleWithReplacement(draw(st.integers(1, min(n, 1000))), n)(m)
    k = draw(_k if LONG else _k_sub if wrap != "none" or isinstance(m, DiscreteGaussian) else _k)
    if k > 1 or draw(st.booleans()):
        m = Composition()([m], [k])
    return m


def _zoo_case(m: Mechanism, ds: list[float], es: list[float]) -> None:
    if not LONG and any(name in repr(m) for name in ("Subsample", "Sample", "Mixture")):
        # A subsampled mechanism or a mixture of Gaussians at delta 1e-30 takes 2 to 70 s a query
        # (PoissonSubsample(1e-4)(Gaussian(1.0)): 7 s of CPU; MixtureOfGaussians(100.0, (0.01,
        # 0.291, 0.760), (1/3, 1/3, 1/3)): 31 s): the CI budget keeps their deltas >= 1e-12.
        ds = [max(d, 1e-12) for d in ds]
    check_invariants(m, ds, es)


# The zoo's other mechanisms (the discrete, composite, mixture and RDP-only ones), composed up to
# 10 times in the CI budget (1e4 in the long run), each also as Group(2) where that applies.
_k_extra = log_int(1, 10**4 if LONG else 10)


@st.composite
def extra_mechanisms(draw: st.DrawFn) -> Mechanism:
    kind = draw(st.sampled_from(["kary", "binomial", "zcdp", "gsvt", "lsvt", "pair", "mixture", "tree",
                                 "noisygd", "repeat", "counting"]))
    m: Mechanism
    if kind == "kary":
        m = KaryRandomizedResponse(draw(log_uniform(1e-3, 1.0)), draw(log_int(2, 1000)))
    elif kind == "binomial":
        m = Binomial(draw(log_int(10, 10**4)), draw(st.floats(0.05, 0.95)), draw(st.integers(1, 3)))
    elif kind == "zcdp":
        m = ZCDP(draw(log_uniform(1e-6, 10.0)), draw(st.one_of(st.just(0.0), log_uniform(1e-6, 1.0))))
    elif kind == "gsvt":
        k_svt = draw(log_int(1, 100))
        m = GaussianSVT(draw(log_uniform(0.5, 100.0)), draw(log_uniform(0.5, 100.0)), k_svt,
                        draw(st.integers(1, min(3, k_svt))), draw(st.booleans()))
    elif kind == "lsvt":
        m = LaplaceSVT(draw(log_uniform(0.1, 100.0)), draw(log_uniform(0.1, 100.0)), draw(st.integers(1, 3)),
                       draw(st.booleans()))
    elif kind == "pair":
        n = draw(st.integers(2, 5))
        w = draw(st.lists(st.lists(log_uniform(1e-6, 1.0), min_size=n, max_size=n), min_size=2, max_size=2))
        p, q = (tuple(float(x) / math.fsum(v) for x in v) for v in w)
        m = DiscretePair(p, q)
    elif kind == "mixture":
        n = draw(st.integers(1, 3))
        sens = draw(st.lists(log_uniform(1e-2, 3.0), min_size=n, max_size=n, unique=True))
        w = draw(st.lists(log_uniform(1e-3, 1.0), min_size=n, max_size=n))
        m = MixtureOfGaussians(draw(log_uniform(0.3, 100.0)), tuple(sens), tuple(x / math.fsum(w) for x in w))
    elif kind == "tree":
        m = TreeAggregation(draw(log_uniform(1e-1, 1e3)), draw(log_int(1, 10**6)))
    elif kind == "noisygd":
        m = NoisyGD(tuple(draw(st.lists(log_uniform(1e-1, 1e3), min_size=1, max_size=5))))
    elif kind == "repeat":
        m = RepeatAndSelect(Gaussian(draw(log_uniform(0.5, 100.0))), draw(log_uniform(1.0, 100.0)),
                            draw(st.sampled_from([0.0, 1.0, math.inf])))
    else:
        n = draw(log_int(2, 1000))
        m = BinaryCountingExponential(draw(log_uniform(1e-3, 3.0)), n, draw(st.integers(1, n)))
    if kind in ("pair", "kary") and draw(st.booleans()):  # pure DP; Group rejects the RDP-only ones
        m = Group(2)(m)
    # Composed 10 times, DiscretePair((0.76, 0.24), (1e-6, 1 - 1e-6)) takes 8 s a query at delta
    # 1e-30 and a mixture 20 s, and Binomial(229, 0.837, 2) composed 3 times 6 to 10 s: the CI
    # budget keeps pairs, mixtures and binomials uncomposed.
    k = 1 if kind in ("pair", "mixture", "binomial") and not LONG else draw(_k_extra)
    if k > 1 or draw(st.booleans()):
        m = Composition()([m], [k])
    return m


#: The queries every zoo case asks: three deltas and three epsilons (0 among them).
_ZOO_QUERIES = dict(ds=st.lists(_zoo_deltas, min_size=3, max_size=3),
                    es=st.lists(st.one_of(st.just(0.0), log_uniform(1e-6, 1e3)), min_size=3, max_size=3))


@budget(90)
@given(m=extra_mechanisms(), **_ZOO_QUERIES)
@collecting
def test_extra_zoo_invariants(m, ds, es):
    _zoo_case(m, ds, es)


@budget(150)
@given(m=mechanisms(), **_ZOO_QUERIES)
@collecting
def test_zoo_invariants(m, ds, es):
    _zoo_case(m, ds, es)


# Long run only: in the CI budget's first try a drawn mix of subsampled and composed mechanisms
# did not return within minutes (not yet narrowed to one case).
@pytest.mark.skipif(not LONG, reason="long run only (AUTOACCT_PROPERTY_SCALE > 1)")
@budget(60)
@given(ms=st.lists(mechanisms(), min_size=2, max_size=3), ds=st.lists(_zoo_deltas, min_size=3, max_size=3),
       es=st.lists(st.one_of(st.just(0.0), log_uniform(1e-6, 1e3)), min_size=3, max_size=3))
@collecting
def test_mixed_composition_invariants(ms, ds, es):
    # Mechanisms of different neighbouring relations do not compose: the library says so
    # (a ValueError naming the relations), and such a draw has nothing else to check.
    try:
        m = Composition()(ms, [1] * len(ms))
    except ValueError as err:
        assume("neighbouring relations" not in str(err))
        raise
    _zoo_case(m, ds, es)


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
