"""Property tests: the generic invariants over a broad zoo of mechanisms and transformers
(subsampled, composed, grouped). The suite, its budget and
the checks' reading of the truths: tests/property_checks.py."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from property_checks import LONG, budget, check_invariants, collecting, deltas, log_int, log_uniform

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
# Tiny sampling rates with small noise hang or take seconds (see _sub_q,
# tests/subsampling/test_properties.py): the CI budget keeps q >= 1e-4 and zoo deltas >= 1e-30;
# the long run draws q down to 1e-24 and deltas to 1e-300.
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
