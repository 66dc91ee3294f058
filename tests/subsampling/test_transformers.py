"""Subsampling transformers, checked against independent values.

References: Koskela, Jalko and Honkela (2020, Table 1), closed forms (Gaussian
profile, Renyi divergences by quadrature), and dp_accounting's PLD accountant
(an independent implementation, used for soundness in both directions).
"""

from __future__ import annotations

import itertools
import logging
import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize, special, stats

from autoacct.losses import GaussianLoss, LaplaceLoss, randomized_response_loss
from autoacct.mechanism import Neighboring
from autoacct.subsampling import PoissonSubsample, SampleWithoutReplacement, SampleWithReplacement
from autoacct.subsampling.gaussian_rdp import sgm_rdp
from autoacct.subsampling.poisson import PoissonAddLoss, PoissonRemoveLoss
from autoacct.subsampling.without_replacement import SymmetrizedLoss
from autoacct.zoo import ZCDP, ApproxDP, Composition, Gaussian, Group, Laplace, PureDP, RandomizedResponse

#: Seed 000, Tables 1 and 2: delta(1.0) of the Poisson-subsampled Gaussian,
#: q = 0.01, sigma = 1.5, k = 10^4, converged value.
KOSKELA_DELTA = 0.0496014103163


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """eps(delta) of mu-GDP from the closed form of Balle and Wang (2018), solved independently.

    delta(eps) = Phi(a) - e^eps Phi(b), a = -eps/mu + mu/2, b = a - mu, in logs.
    """
    def log_gap(eps: float) -> float:
        la = special.log_ndtr(-eps / mu + mu / 2)
        lb = special.log_ndtr(-eps / mu - mu / 2)
        return la + math.log(-math.expm1(eps + lb - la)) - math.log(delta)

    if log_gap(0.0) <= 0:
        return 0.0
    hi = 1.0
    while log_gap(hi) > 0:
        hi *= 2
    return optimize.brentq(log_gap, 0.0, hi, xtol=1e-14, rtol=1e-14)


def _hockey_stick(p, q, eps: float, lo: float = -60.0, hi: float = 60.0) -> float:
    """H_{e^eps}(P || Q) for densities p, q on the line, by adaptive quadrature."""
    val, _ = integrate.quad(lambda x: max(p(x) - math.exp(eps) * q(x), 0.0), lo, hi,
                            limit=400, epsabs=1e-15, epsrel=1e-11, points=[0.0, 0.5, 1.0])
    return val


def _dp_accounting_pld():
    pytest.importorskip("dp_accounting")
    logging.getLogger().setLevel(logging.ERROR)
    from dp_accounting.pld import privacy_loss_distribution
    return privacy_loss_distribution


# ----------------------------------------------------------------------------------
# Koskela, Jalko and Honkela (2020), Table 1
# ----------------------------------------------------------------------------------

def test_koskela_table1_delta():
    m = Composition()([PoissonSubsample(0.01)(Gaussian(1.5))], [10_000])
    # tol bounds the answer on the eps scale: upper <= delta(1 - tol), and delta falls by
    # about 0.12 per unit of eps near eps = 1. The table's 1e-6 on delta thus needs
    # tol <= 1e-6 / 0.12 = 8e-6.
    lower, upper = m.delta_bounds(1.0, tol=8e-6)
    assert upper >= KOSKELA_DELTA
    assert upper - KOSKELA_DELTA <= 1e-6
    assert lower <= KOSKELA_DELTA
    assert m.delta(1.0, tol=8e-6) == upper


# ----------------------------------------------------------------------------------
# a grid of DP-SGD configurations against dp_accounting
# ----------------------------------------------------------------------------------

GRID = [(q, s, k) for q, s, k in itertools.product([1e-3, 0.05], [0.8, 2.0, 10.0], [1, 100, 10_000])]


@pytest.mark.parametrize("q,sigma,k", GRID)
def test_poisson_gaussian_grid_against_dp_accounting(q, sigma, k):
    pld = _dp_accounting_pld()
    delta = 1e-5
    m = Composition()([PoissonSubsample(q)(Gaussian(sigma))], [k])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lower, upper = m.epsilon_bounds(delta)
    assert 0.0 <= lower <= upper
    assert upper <= lower * (1 + 1e-3) + 1e-12
    assert m.epsilon(delta) == upper
    # dp_accounting: the pessimistic connect-the-dots PLD bounds the truth from above,
    # the optimistic (privacy buckets) one from below.
    vdi = 2e-4 if upper < 5 else 2e-3
    pess = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=vdi,
                                       use_connect_dots=True).self_compose(k)
    opt = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=vdi,
                                      pessimistic_estimate=False).self_compose(k)
    assert lower <= pess.get_epsilon_for_delta(delta) * (1 + 1e-9) + 1e-12
    assert upper >= opt.get_epsilon_for_delta(delta) * (1 - 1e-9) - 1e-12


@pytest.mark.parametrize("sigma,k", [(0.8, 1), (0.8, 100), (2.0, 10_000), (10.0, 100)])
def test_q_one_is_the_gaussian(sigma, k):
    m = Composition()([PoissonSubsample(1.0)(Gaussian(sigma))], [k])
    exact = _gaussian_epsilon(math.sqrt(k) / sigma, 1e-5)
    lower, upper = m.epsilon_bounds(1e-5)
    assert lower <= exact <= upper
    assert upper == pytest.approx(exact, rel=1e-9)
    g = Composition()([Gaussian(sigma)], [k])
    assert m.epsilon(1e-5) == g.epsilon(1e-5)
    assert m.delta(1.0) == g.delta(1.0)
    alphas = np.array([1.5, 2.0, 10.0])
    np.testing.assert_array_equal(m.rdp(alphas), g.rdp(alphas))
    np.testing.assert_array_equal(m.tradeoff([0.01, 0.1]), g.tradeoff([0.01, 0.1]))
    assert m.neighboring is Neighboring.ADD_REMOVE


def test_q_one_reproduces_a_pld_base():
    base = Composition()([Laplace(2.0)], [20])
    sub = Composition()([PoissonSubsample(1.0)(Laplace(2.0))], [20])
    assert sub.epsilon_bounds(1e-6) == base.epsilon_bounds(1e-6)
    assert sub.delta(0.5) == base.delta(0.5)


# ----------------------------------------------------------------------------------
# loss laws against quadrature of the mixture pairs
# ----------------------------------------------------------------------------------

@pytest.mark.parametrize("q,sigma", [(0.01, 1.5), (0.3, 0.8)])
def test_poisson_profiles_match_quadrature(q, sigma):
    n = stats.norm(0.0, sigma)
    mix = lambda x: (1 - q) * n.pdf(x) + q * n.pdf(x - 1.0)  # noqa: E731
    remove = PoissonRemoveLoss(GaussianLoss(1.0 / sigma), q)
    add = PoissonAddLoss(GaussianLoss(1.0 / sigma), q)
    for eps in (-0.5, 0.0, 0.2, 1.0, 2.0):
        ref_remove = _hockey_stick(mix, n.pdf, eps)
        ref_add = _hockey_stick(n.pdf, mix, eps)
        assert remove.profile(np.array(eps)) == pytest.approx(ref_remove, rel=1e-7, abs=1e-13)
        assert add.profile(np.array(eps)) == pytest.approx(ref_add, rel=1e-7, abs=1e-13)


@pytest.mark.parametrize("law", [
    PoissonRemoveLoss(GaussianLoss(0.7), 0.05),
    PoissonAddLoss(GaussianLoss(0.7), 0.05),
    PoissonRemoveLoss(randomized_response_loss(1.0), 0.2),
    PoissonAddLoss(LaplaceLoss(0.5), 0.2),
    SymmetrizedLoss(PoissonRemoveLoss(GaussianLoss(1.2), 0.1)),
    SymmetrizedLoss(PoissonRemoveLoss(randomized_response_loss(2.0), 0.1)),
])
def test_cell_masses_are_consistent_with_profile(law):
    """Masses sum to one, and H(eps) = P(L > eps) - e^eps Q(L > eps) + p_inf at grid points."""
    edges = np.concatenate(([-np.inf], np.linspace(-6, 6, 120_001), [np.inf]))
    m_p, m_q = law.cell_masses(edges)
    assert m_p.sum() + law.p_inf == pytest.approx(1.0, abs=1e-12)
    assert m_q.sum() + law.q_ninf == pytest.approx(1.0, abs=1e-12)
    assert np.all(m_p >= 0) and np.all(m_q >= 0)
    for i in (30_000, 60_000, 60_001, 75_000):
        eps = edges[i]
        from_cells = m_p[i:].sum() - math.exp(eps) * m_q[i:].sum() + law.p_inf
        assert float(law.profile(np.array(eps))) == pytest.approx(from_cells, rel=1e-9, abs=1e-14)


# ----------------------------------------------------------------------------------
# general bases
# ----------------------------------------------------------------------------------

@pytest.mark.parametrize("scale,q,k", [(1.0, 0.05, 100), (0.5, 0.2, 10)])
def test_poisson_laplace_against_dp_accounting(scale, q, k):
    pld = _dp_accounting_pld()
    m = Composition()([PoissonSubsample(q)(Laplace(scale))], [k])
    with warnings.catch_warnings():
        # The subsampled Laplace law has atoms off the grid; the accountant may
        # stop short of 0.1% (it says so), its bounds staying valid.
        warnings.simplefilter("ignore")
        lower, upper = m.epsilon_bounds(1e-6)
    assert upper <= lower * (1 + 1e-2)
    pess = pld.from_laplace_mechanism(scale, sampling_prob=q, value_discretization_interval=1e-4,
                                      use_connect_dots=True).self_compose(k)
    opt = pld.from_laplace_mechanism(scale, sampling_prob=q, value_discretization_interval=1e-4,
                                     pessimistic_estimate=False).self_compose(k)
    assert lower <= pess.get_epsilon_for_delta(1e-6) * (1 + 1e-9)
    assert upper >= opt.get_epsilon_for_delta(1e-6) * (1 - 1e-9)


def test_poisson_randomized_response_against_dp_accounting():
    pld = _dp_accounting_pld()
    eps0, q, k = 1.0, 0.1, 50
    m = Composition()([PoissonSubsample(q)(PureDP(eps0))], [k])
    lower, upper = m.epsilon_bounds(1e-6)
    assert upper <= lower * (1 + 1e-3)
    p = math.exp(eps0) / (1 + math.exp(eps0))
    # Randomized response as a dominating pair P = (p, 1-p), Q = (1-p, p), subsampled by hand.
    pmf_p = {0: p, 1: 1 - p}
    pmf_q = {0: 1 - p, 1: p}
    mixed = {o: (1 - q) * pmf_q[o] + q * pmf_p[o] for o in (0, 1)}
    remove = pld.PrivacyLossDistribution.create_from_rounded_probability(
        {math.ceil(math.log(mixed[o] / pmf_q[o]) / 1e-4): mixed[o] for o in (0, 1)}, 0.0, 1e-4)
    add = pld.PrivacyLossDistribution.create_from_rounded_probability(
        {math.ceil(math.log(pmf_q[o] / mixed[o]) / 1e-4): pmf_q[o] for o in (0, 1)}, 0.0, 1e-4)
    bound = max(remove.self_compose(k).get_epsilon_for_delta(1e-6),
                add.self_compose(k).get_epsilon_for_delta(1e-6))
    assert lower <= bound + 1e-9


def _renyi(log_p, log_q, alpha: float) -> float:
    """D_alpha(P || Q) for log-densities on the line, by adaptive quadrature."""
    val, _ = integrate.quad(lambda x: math.exp(alpha * log_p(x) + (1 - alpha) * log_q(x)), -60, 60,
                            points=[0.0, 1.0], limit=400, epsabs=0, epsrel=1e-12)
    return math.log(val) / (alpha - 1)


def test_rdp_of_poisson_gaussian_is_sgm_rdp():
    alphas = np.array([1.25, 2.0, 3.5, 8.0, 32.0, 100.0])
    m = PoissonSubsample(0.02)(Gaussian(1.1))
    # The public value is the exact one rounded up by one ulp (the outward rounding rule).
    np.testing.assert_array_equal(m.rdp(alphas), np.nextafter(sgm_rdp(0.02, 1.1, alphas), np.inf))
    assert m.rdp(2.0) == np.nextafter(float(sgm_rdp(0.02, 1.1, 2.0)), np.inf)
    # and sgm_rdp itself is the max over both directions of the exact divergences
    n0 = stats.norm(0, 1.1)

    def mix(x: float) -> float:
        return float(np.logaddexp(math.log(0.98) + n0.logpdf(x), math.log(0.02) + n0.logpdf(x - 1)))

    for a in (2.0, 8.0):
        exact = max(_renyi(mix, n0.logpdf, a), _renyi(n0.logpdf, mix, a))
        assert float(m.rdp(a)) == pytest.approx(exact, rel=1e-7)


@pytest.mark.parametrize("b", [1.0, 0.5])
def test_rdp_of_poisson_general_base_is_a_valid_bound(b):
    """Zhu-Wang bound for the Poisson-subsampled Laplace: at most the base RDP, at least the
    exact Renyi divergences of the two subsampled pairs (quadrature)."""
    q = 0.05
    base = Laplace(b)
    m = PoissonSubsample(q)(base)
    log_p = lambda x: -abs(x - 1.0) / b - math.log(2 * b)  # noqa: E731
    log_q = lambda x: -abs(x) / b - math.log(2 * b)  # noqa: E731
    log_mix = lambda x: float(np.logaddexp(math.log1p(-q) + log_q(x), math.log(q) + log_p(x)))  # noqa: E731
    for a in (1.5, 2.0, 5.0, 12.0, 2000.0):
        val = float(m.rdp(a))
        assert val <= float(base.rdp(a)) * (1 + 1e-12)
        if a < 100:
            exact = max(_renyi(log_mix, log_q, a), _renyi(log_q, log_mix, a))
            assert val >= exact * (1 - 1e-9)


def test_rdp_only_base_gives_rdp_only_mechanism():
    m = PoissonSubsample(0.01)(ZCDP(0.5))
    assert m.routes == ("rdp",)
    assert 0 < m.epsilon(1e-5) < ZCDP(0.5).epsilon(1e-5)


def test_approx_dp_base_is_answered_by_pld():
    m = Composition()([PoissonSubsample(0.1)(ApproxDP(1.0, 1e-7))], [10])
    assert np.isinf(m.rdp(2.0))
    lower, upper = m.epsilon_bounds(1e-5)
    assert 0 < lower <= upper <= lower * (1 + 1e-3)
    # the infinite part: q * delta per step
    assert m.delta(50.0) >= 1 - (1 - 0.1 * 1e-7) ** 10 - 1e-15


# ----------------------------------------------------------------------------------
# sampling without replacement (replace-one)
# ----------------------------------------------------------------------------------

@pytest.mark.parametrize("q,sigma", [(0.05, 0.8), (0.5, 2.0)])
def test_swor_gaussian_dominates_achievable_pairs(q, sigma):
    """Datasets whose other records equal the replacing one give ((1-q) N(0) + q N(1), N(0));
    Koskela et al.'s pair ((1-q) N(0) + q N(1), (1-q) N(0) + q N(-1)) (records at +-1/2, others 0) is
    achievable too but smaller: a valid bound must exceed both."""
    m = SampleWithoutReplacement(q)(Gaussian(sigma))
    n = stats.norm(0.0, sigma)
    achievable = lambda x: (1 - q) * n.pdf(x) + q * n.pdf(x - 1.0)  # noqa: E731
    seed_p = lambda x: (1 - q) * n.pdf(x) + q * n.pdf(x - 0.5)  # noqa: E731
    seed_q = lambda x: (1 - q) * n.pdf(x) + q * n.pdf(x + 0.5)  # noqa: E731
    eps = np.array([0.0, 0.1, 0.5, 1.0, 2.0])
    lower, upper = m.delta_bounds(eps)
    for i, e in enumerate(eps):
        worst = _hockey_stick(achievable, n.pdf, e)
        assert upper[i] >= worst * (1 - 1e-12)
        assert lower[i] <= worst * (1 + 1e-12)
        assert worst >= _hockey_stick(seed_p, seed_q, e) * (1 - 1e-12)
    # and Koskela et al.'s pair (scaled to replace-one sensitivity 1) is far smaller at eps = 1
    assert _hockey_stick(seed_p, seed_q, 1.0) < 0.5 * _hockey_stick(achievable, n.pdf, 1.0)


def test_swor_composed_dominates_poisson_pairs():
    """Both Poisson pairs are achievable under replace-one (reversed datasets give the other),
    so k steps of SWOR leak at least what k Poisson steps leak (dp_accounting, optimistic); and
    the lower end is that of the Poisson pairs, which one fixed pair of datasets attains at
    every step (Lebeda, Regehr, Kamath and Steinke 2024): at most dp_accounting's pessimistic
    value for them, not the composed dominating pair's lower end."""
    pld = _dp_accounting_pld()
    q, sigma, k = 0.01, 1.0, 1000
    m = Composition()([SampleWithoutReplacement(q)(Gaussian(sigma))], [k])
    lower, upper = m.epsilon_bounds(1e-5)
    opt = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4,
                                      pessimistic_estimate=False).self_compose(k)
    pess = pld.from_gaussian_mechanism(sigma, sampling_prob=q, value_discretization_interval=1e-4,
                                       pessimistic_estimate=True).self_compose(k)
    assert upper >= opt.get_epsilon_for_delta(1e-5)
    assert pess.get_epsilon_for_delta(1e-5) * (1 - 2e-3) <= lower <= pess.get_epsilon_for_delta(1e-5)
    assert lower < upper * (1 - 1e-2)  # the width of the attained bracket (1.828 against 2.199)
    d_lower = m.delta_bounds(np.array([0.5, 1.0]))[0]
    assert np.all(d_lower > 0) and np.all(d_lower <= pess.get_delta_for_epsilon([0.5, 1.0]))
    assert m.neighboring is Neighboring.REPLACE_ONE


def test_swor_one_step_keeps_its_own_lower_end():
    """One run attains the symmetrised pair: its lower end stays within tol of the truth, alone and
    as a composition of one run. The truth by quadrature of the attained pair
    ((1 - q) N(0, sigma^2) + q N(1, sigma^2), N(0, sigma^2)), whose profile at eps >= 0 is the
    symmetrised pair's: eps(delta) lies in [lower, upper] and below lower (1 + tol)."""
    q, sigma, delta = 0.05, 0.8, 1e-5
    n = stats.norm(0.0, sigma)
    p = lambda x: (1 - q) * n.pdf(x) + q * n.pdf(x - 1.0)  # noqa: E731
    step = SampleWithoutReplacement(q)(Gaussian(sigma))
    bounds = {step.epsilon_bounds(delta), Composition()([step], [1]).epsilon_bounds(delta)}
    assert len(bounds) == 1
    lower, upper = bounds.pop()
    assert _hockey_stick(p, n.pdf, lower) >= delta >= _hockey_stick(p, n.pdf, upper)
    assert _hockey_stick(p, n.pdf, lower * (1 + 1e-3)) <= delta


def test_swor_in_a_heterogeneous_composition():
    """Laplace steps sampled without replacement, then a Gaussian: the fixed pair of datasets gives
    the Poisson-subsampled Laplace steps and the Gaussian, whose composition dp_accounting's
    pessimistic PLD bounds from above; the lower end must not exceed it (the dominating pair's,
    0.9002, does). A part no mechanism attains leaves the composition the largest of its
    parts' own lower ends only."""
    from autoacct.zoo import DiscreteLaplace, LaplaceSVT
    pld = _dp_accounting_pld()
    q, k, delta = 0.01, 50, 1e-6
    m = Composition()([SampleWithoutReplacement(q)(Laplace(1.0)), Gaussian(5.0)], [k, 1])
    lower, upper = m.epsilon_bounds(delta)
    attained = pld.from_laplace_mechanism(1.0, sampling_prob=q, value_discretization_interval=1e-4,
                                          pessimistic_estimate=True).self_compose(k).compose(
        pld.from_gaussian_mechanism(5.0, value_discretization_interval=1e-4))
    above = attained.get_epsilon_for_delta(delta)
    assert above * (1 - 2e-3) <= lower <= above < upper
    assert 0.0 < m.delta_bounds(0.5)[0] <= attained.get_delta_for_epsilon(0.5)
    # A base held as atoms: the attained pair of its atom laws (dp_accounting's parameter 1/t).
    atoms = Composition()([SampleWithoutReplacement(0.05)(DiscreteLaplace(1.0))], [30])
    above = pld.from_discrete_laplace_mechanism(1.0, sampling_prob=0.05, value_discretization_interval=1e-4
                                                ).self_compose(30).get_epsilon_for_delta(delta)
    lower, upper = atoms.epsilon_bounds(delta)
    assert above * (1 - 5e-3) <= lower <= above < upper
    # Sparse vector's pair is not attained: the composition's lower ends are then its parts' own.
    children = [SampleWithoutReplacement(q)(Gaussian(1.0)), LaplaceSVT(10.0, 20.0)]
    mixed = Composition()(children, [100, 1])
    lower, upper = mixed.epsilon_bounds(delta)
    assert lower <= max(c.epsilon_bounds(delta)[0] for c in children) < upper  # one rounding apart
    assert mixed.delta_bounds(0.5)[0] == 0.0


def test_swor_q_one_and_general_bases():
    g = SampleWithoutReplacement(1.0)(Gaussian(1.3))
    assert g.epsilon(1e-5) == Gaussian(1.3).epsilon(1e-5)
    for base in (Laplace(1.0), RandomizedResponse(0.75)):
        m = SampleWithoutReplacement(0.05)(base)
        lower, upper = m.epsilon_bounds(1e-6)
        assert lower <= upper <= lower * (1 + 1e-3)
        assert upper <= base.epsilon(1e-6)
        # the RDP route (Wang, Balle, Kasiviswanathan 2019) is valid but looser
        assert m.epsilon(1e-6, via="rdp") >= lower


def test_swor_symmetric_profile_identity():
    """For eps < 0 a symmetric relation forces H(eps) = 1 - e^eps + e^eps H(-eps)."""
    law = SampleWithoutReplacement(0.2)(Laplace(0.7)).loss_parts()[0][0]
    for e in (0.1, 0.4, 1.3):
        neg = float(law.profile(np.array(-e)))
        pos = float(law.profile(np.array(e)))
        assert neg == pytest.approx(1 - math.exp(-e) + math.exp(-e) * pos, rel=1e-12)


# ----------------------------------------------------------------------------------
# sampling with replacement
# ----------------------------------------------------------------------------------

def test_swr_single_draw_equals_swor():
    n = 20
    a = SampleWithReplacement(1, n)(Gaussian(0.8))
    b = SampleWithoutReplacement(1 / n)(Gaussian(0.8))
    np.testing.assert_allclose(a.delta_bounds(np.array([0.5, 1.0]))[1],
                               b.delta_bounds(np.array([0.5, 1.0]))[1], rtol=1e-12)


def test_swr_dominates_achievable_pair():
    """Other records equal to the replacing one: the differing record drawn l ~ Bin(B, 1/n)
    times gives the pair (sum_l b_l N(l), N(0))."""
    b_size, n, sigma = 3, 10, 1.0
    m = SampleWithReplacement(b_size, n)(Gaussian(sigma))
    w = stats.binom.pmf(np.arange(b_size + 1), b_size, 1 / n)
    mix = lambda x: sum(w[l] * stats.norm.pdf(x, l, sigma) for l in range(b_size + 1))  # noqa: E741,E731
    for e in (0.0, 0.5, 1.0, 2.0):
        assert m.delta(e) >= _hockey_stick(mix, lambda x: stats.norm.pdf(x, 0, sigma), e,
                                           lo=-40, hi=60)
    assert m.neighboring is Neighboring.REPLACE_ONE
    assert m.params["SampleWithReplacement.batch_size"] == b_size


@pytest.mark.parametrize("b_size, n, sigma", [(10, 1000, 1.0), (3, 10, 1.0), (20, 200, 0.8)])
def test_swr_lower_end_is_below_the_achievable_pair(b_size: int, n: int, sigma: float):
    """The lower end must hold for the mechanism, whose outputs do not reveal how many times
    the differing record was drawn. The achievable pair (sum_l b_l N(l), N(0)) is the worst
    one of a query through the count of x (the other records fixed); the lower end came from
    the disjoint union over l, whose delta(1) at B = 10, n = 1000 is 1.25e-6, 100 times this
    pair's 1.24e-8. Now it comes from this pair, to within its discretisation."""
    m = SampleWithReplacement(b_size, n)(Gaussian(sigma))
    w = stats.binom.pmf(np.arange(b_size + 1), b_size, 1 / n)
    mix = lambda x: sum(w[l] * stats.norm.pdf(x, l, sigma) for l in range(b_size + 1))  # noqa: E741,E731
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    lo, up = m.delta_bounds(eps)
    for e, low in zip(eps, lo):
        truth = _hockey_stick(mix, lambda x: stats.norm.pdf(x, 0, sigma), float(e), lo=-40, hi=60)
        assert truth * 0.99 <= low <= truth * (1 + 1e-6) + 1e-15


# ----------------------------------------------------------------------------------
# validation, provenance, purity
# ----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [-1e-300, -0.1, 1.5, float("nan"), float("inf")])
def test_bad_q(bad):
    for transformer in (PoissonSubsample, SampleWithoutReplacement):
        with pytest.raises(ValueError, match="q"):
            transformer(bad)


def test_bad_q_type():
    with pytest.raises(TypeError, match="q"):
        PoissonSubsample("0.1")


def test_relation_mismatch():
    with pytest.raises(ValueError, match="mechanism"):
        PoissonSubsample(0.1)(Gaussian(1.0, neighboring=Neighboring.REPLACE_ONE))
    with pytest.raises(ValueError, match="mechanism"):
        SampleWithoutReplacement(0.1)(Gaussian(1.0, neighboring=Neighboring.ADD_REMOVE))
    with pytest.raises(ValueError, match="mechanism"):
        SampleWithReplacement(2, 10)(Gaussian(1.0, neighboring=Neighboring.ADD_REMOVE))
    with pytest.raises(ValueError, match="mechanism"):
        SampleWithoutReplacement(0.1)(PoissonSubsample(0.1)(Gaussian(1.0)))


def test_composite_base_is_rejected_with_advice():
    mixed = Composition()([Gaussian(1.0), Laplace(1.0)], [1, 1])
    with pytest.raises(ValueError, match="subsample each mechanism"):
        PoissonSubsample(0.1)(mixed)
    with pytest.raises(ValueError, match="subsample each mechanism"):
        PoissonSubsample(0.1)(PoissonSubsample(0.5)(Gaussian(1.0)))
    # a composition of Gaussians is one Gaussian: accepted
    merged = PoissonSubsample(0.1)(Composition()([Gaussian(2.0)], [4]))
    assert merged.epsilon(1e-5) == PoissonSubsample(0.1)(Gaussian(1.0)).epsilon(1e-5)


@pytest.mark.parametrize("args,name", [((0, 10), "batch_size"), ((11, 10), "batch_size"),
                                      ((2.5, 10), "batch_size"), ((2, 0), "dataset_size")])
def test_bad_sizes(args, name):
    with pytest.raises(ValueError, match=name):
        SampleWithReplacement(*args)


@pytest.mark.parametrize("sampler", [PoissonSubsample(0.01), SampleWithoutReplacement(0.01),
                                     SampleWithReplacement(10, 1000)], ids=repr)
def test_samplers_refuse_a_group_privacy_base(sampler):
    """A sampler draws records one by one; a group's pair (one shift of g sensitivities) has
    the g records sampled together. Accepted, PoissonSubsample(0.01)(Group(2)(Gaussian(1)))
    gave eps(1e-5) a lower end of 3.03, where one record's truth is at most 0.20 and a group
    of two records each sampled on its own reaches 0.47 (the user-level step)."""
    for base in (Group(2)(Gaussian(1.0)), Composition()([Group(2)(Gaussian(1.0)), Gaussian(2.0)], [1, 1])):
        with pytest.raises(ValueError, match="mechanism .* protects groups"):
            sampler(base)


def test_swr_needs_a_gaussian_or_pure_dp_base():
    with pytest.raises(ValueError, match="mechanism 'ZCDP'"):
        SampleWithReplacement(2, 10)(ZCDP(0.5))


def test_not_a_mechanism():
    with pytest.raises(TypeError, match="mechanism"):
        PoissonSubsample(0.1)(1.0)


def test_provenance_and_immutability():
    base = Gaussian(1.1, name="GM")
    m = PoissonSubsample(0.01)(base)
    assert m.name == "PoissonSubsample(GM)"
    assert dict(m.params) == {"PoissonSubsample.q": 0.01, "GM.sigma": 1.1}
    assert dict(SampleWithoutReplacement(0.2)(base).params) == {"SampleWithoutReplacement.q": 0.2,
                                                               "GM.sigma": 1.1}
    with pytest.raises(AttributeError):
        m.q = 0.5
    assert dict(base.params) == {"GM.sigma": 1.1}
    first = Composition()([m], [100]).epsilon(1e-5)
    assert Composition()([m], [100]).epsilon(1e-5) == first
    assert PoissonSubsample(0.01)(base).epsilon(1e-5) == m.epsilon(1e-5)
    nested = PoissonSubsample(1.0)(PoissonSubsample(0.5)(Gaussian(1.0)))
    assert set(nested.params) == {"PoissonSubsample(PoissonSubsample(Gaussian)).q",
                                  "PoissonSubsample.q", "Gaussian.sigma"}


def test_round_trip_and_monotonicity():
    m = Composition()([PoissonSubsample(0.02)(Gaussian(1.0))], [500])
    for d in (1e-3, 1e-6):
        e = m.epsilon(d)
        assert m.delta(e) <= d * (1 + 1e-9)
    eps = np.linspace(0, 3, 7)
    deltas = m.delta(eps)
    assert np.all(np.diff(deltas) <= 0)
    alpha = np.array([0.001, 0.01, 0.1, 0.5])
    f = m.tradeoff(alpha)
    assert np.all(np.diff(f) <= 0) and np.all(f <= 1 - alpha)


def test_subsampled_laplace_single_step_epsilon_not_below_the_removal_direction():
    # Reproducer: the upper end was 1e-8 relative below the truth. The removal direction's
    # profile is q H_gamma(Lap(1, b) || Lap(0, b)) with log gamma = log(1 + (e^eps - 1)/q),
    # and H = 1 - e^{(log gamma - 1/b)/2}: its eps at delta is a lower bound on the truth.
    import mpmath as mp

    q, b, delta = 4.605738935273943e-05, 27.98339598140783, 4.602798580916719e-07
    mp.mp.dps = 50

    def remove(eps: mp.mpf) -> mp.mpf:
        x = mp.log(1 + mp.expm1(eps) / q)
        return q * max(mp.mpf(0), 1 - mp.e ** ((x - 1 / mp.mpf(b)) / 2))

    root = mp.findroot(lambda e: remove(e) - delta, (mp.mpf(0), mp.mpf(1e-5)), solver="bisect")
    lo, up = PoissonSubsample(q)(Laplace(b)).epsilon_bounds(delta)
    assert up >= root and lo <= up


def test_one_subsampled_pure_dp_step_just_below_delta_zero_is_answered_in_closed_form():
    # Reproducer: 255 s in the FFT accountant's refinement. One step of a Poisson-subsampled
    # randomized response has a closed-form profile; delta(0) = q tanh(eps0 / 2) here is just
    # below the delta asked, so eps is 0.
    q, eps0 = 0.15896582558940014, 0.009555861465548559
    m = PoissonSubsample(q)(PureDP(eps0))
    d0 = q * math.tanh(eps0 / 2)
    lo, up = m.delta_bounds(0.0)
    # Width: the rounding bound of the closed form, including that of its transformed argument.
    assert lo <= d0 <= up and up - lo <= 1e-10 * d0
    assert m.epsilon_bounds(0.0007595219246998617) == (0.0, 0.0)


def test_one_subsampled_discrete_gaussian_step_brackets_the_direct_sum():
    # One step of a Poisson-subsampled law on finitely many atoms is answered from the base's
    # profile; its rounding bound is the base's (absolute), carried through the transformation.
    from scipy import special

    from autoacct.zoo import DiscreteGaussian

    s, q = 2.0, 0.01
    x = np.arange(-200, 201.0)
    lw = -x * x / (2 * s * s)
    lz = special.logsumexp(lw)
    qm, pm = np.exp(lw - lz), np.exp(-(x - 1) ** 2 / (2 * s * s) - lz)
    mix = (1 - q) * qm + q * pm
    m = PoissonSubsample(q)(DiscreteGaussian(s))
    for eps in (0.0, 0.05, 0.5):
        truth = max(np.maximum(mix - np.exp(eps) * qm, 0).sum(), np.maximum(qm - np.exp(eps) * mix, 0).sum())
        lo, up = m.delta_bounds(eps)
        assert lo <= truth * (1 + 1e-12) and truth <= up * (1 + 1e-12) and up <= truth * (1 + 1e-9)


def _rr_poisson_delta_exact(q: float, p: float, k: int, eps: float) -> float:
    """delta(eps) of k Poisson-subsampled RR runs (removal pair) by summing over the number j of
    'yes' outcomes in mpmath: the pair is ((1-q) Q + q P, Q) per run, P = (p, 1-p), Q = (1-p, p)."""
    import mpmath as mp
    mp.mp.dps = 60
    q_, p_ = mp.mpf(q), mp.mpf(p)
    a = [(1 - q_) * (1 - p_) + q_ * p_, (1 - q_) * p_ + q_ * (1 - p_)]   # first distribution
    b = [1 - p_, p_]                                                      # Q
    total = mp.mpf(0)
    for j in range(k + 1):
        pa = mp.binomial(k, j) * a[0] ** j * a[1] ** (k - j)
        pb = mp.binomial(k, j) * b[0] ** j * b[1] ** (k - j)
        total += max(pa - mp.e ** eps * pb, 0)
    return float(total)


@pytest.mark.parametrize("q", [1e-24, 1e-20, 1e-12])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_rr_subsampled_below_an_ulp_keeps_its_delta(q, k):
    # With q (e^{eps0} - 1) below an ulp of 1 the first distribution's masses equal Q's in
    # floating point: the PLD once sent that cell to the loss 0 (delta(0) = 0 for k = 2, the
    # truth 2e-24), and the closed form's inverse map lost small eps to 1 - (1-q) = 0.
    m = Composition()([PoissonSubsample(q)(RandomizedResponse(0.9999))], [k])
    for eps in (0.0, 1e-22, 1e-15):
        truth = _rr_poisson_delta_exact(q, 0.9999, k, eps)
        lo, up = m.delta_bounds(eps)
        assert lo <= truth <= up, (eps, lo, truth, up)
        assert m.delta(eps, via="pld") >= truth


@pytest.mark.parametrize("sampler", [lambda b: PoissonSubsample(0.1)(b), lambda b: SampleWithoutReplacement(0.1)(b),
                                     lambda b: SampleWithReplacement(10, 100)(b)])
def test_subsampling_a_pair_no_mechanism_attains_certifies_no_lower_bound(sampler):
    """The exponential mechanism's envelope pair and permute-and-flip's pure-DP pair are not attained:
    their subsampled pairs are not either, so the lower end must not be read off them (it was, at
    0.1574 and 0.1586: lower bounds on the dominating pair only). An attained base keeps its lower end."""
    from autoacct.zoo import ExponentialMechanism, PermuteAndFlip
    for base in (ExponentialMechanism(1.0), PermuteAndFlip(1.0)):
        lo, up = sampler(base).epsilon_bounds(1e-6)
        assert lo <= base.epsilon_lower(1e-6) and up > 0
    lo, up = sampler(Gaussian(1.0)).epsilon_bounds(1e-6)
    assert 0 < lo <= up


def _with_replacement_pure_dp_delta(eps0: float, batch: int, n: int, eps: float) -> float:
    """The dominating pair of an eps0-DP base sampled with replacement, enumerated: the record is
    drawn l ~ Bin(B, 1/n) times, the base is then (l eps0)-DP (randomized response with log-odds
    l eps0, on outcomes of its own), and the pair is the Poisson removal pair of rate
    eta = P(l >= 1) over that mixture; at eps >= 0 its profile is the mechanism's bound."""
    ls = np.arange(1, batch + 1)
    w = stats.binom.pmf(ls, batch, 1.0 / n)
    eta = w.sum()
    p_true = special.expit(ls * eps0)
    mix_p = np.concatenate((w * p_true, w * (1 - p_true))) / eta
    mix_q = np.concatenate((w * (1 - p_true), w * p_true)) / eta
    big_p = (1 - eta) * mix_q + eta * mix_p
    return float(np.maximum(big_p - math.exp(eps) * mix_q, 0.0).sum())


@pytest.mark.parametrize("eps0, batch, n", [(1.0, 10, 100), (0.3, 5, 20)])
def test_with_replacement_of_a_pure_dp_base_against_enumeration(eps0, batch, n):
    m = SampleWithReplacement(batch, n)(PureDP(eps0))
    # (tol 1e-2 keeps it quick: one step of this atomic law is read off its discrete PLD, whose
    # upper profile is exact at the atoms anyway.)
    for eps in (0.2, 0.9):
        lo, up = m.delta_bounds(eps, tol=1e-2)
        truth = _with_replacement_pure_dp_delta(eps0, batch, n, eps)
        assert up >= truth and up <= truth * (1 + 1e-6) + 1e-15
    # Randomized response and Laplace are eps0-DP bases too; the lower end is not certified (0).
    assert SampleWithReplacement(batch, n)(Laplace(1.0 / eps0)).epsilon_bounds(1e-6)[0] == 0.0
    with pytest.raises(ValueError, match="neither a Gaussian nor a pure-DP"):
        SampleWithReplacement(batch, n)(ApproxDP(1.0, 1e-5))


def _poisson_laplace_delta(q: float, b: float, eps: mpmath.mpf) -> mpmath.mpf:
    """delta(eps) of Poisson(q) of Laplace(b), both directions, in closed form (40 digits).

    With Q = Lap(0, b), P = Lap(1, b), r = P/Q = e^{(|x| - |x - 1|)/b} is increasing in x, so
    the removal pair's (1 - q) Q + q P - e^eps Q is positive right of the x where q r equals
    e^eps - 1 + q, and the addition pair's Q - e^eps ((1 - q) Q + q P) left of where
    e^eps ((1 - q) + q r) equals 1; the Laplace tails integrate in closed form."""
    with mpmath.workdps(40):
        b_, q_, e = mpmath.mpf(b), mpmath.mpf(q), mpmath.e ** eps

        def point(ratio: mpmath.mpf) -> mpmath.mpf:    # where r(x) = ratio, clipped to [0, 1]
            if ratio <= 0:
                return -mpmath.inf
            return min(max((b_ * mpmath.log(ratio) + 1) / 2, mpmath.mpf(0)), mpmath.mpf(1))

        def q_above(x: mpmath.mpf) -> mpmath.mpf:
            return mpmath.mpf(1) if x == -mpmath.inf else mpmath.e ** (-x / b_) / 2

        def p_above(x: mpmath.mpf) -> mpmath.mpf:
            return mpmath.mpf(1) if x == -mpmath.inf else 1 - mpmath.e ** ((x - 1) / b_) / 2
        c = (e - 1 + q_) / q_
        removal = mpmath.mpf(0) if c >= mpmath.e ** (1 / b_) else max(
            q_ * p_above(point(c)) - (e - 1 + q_) * q_above(point(c)), mpmath.mpf(0))
        c2 = (1 / e - (1 - q_)) / q_
        x2 = point(c2)
        addition = mpmath.mpf(0) if c2 <= mpmath.e ** (-1 / b_) else max(
            (1 - q_above(x2)) - e * ((1 - q_) * (1 - q_above(x2)) + q_ * (1 - p_above(x2))), mpmath.mpf(0))
        return max(removal, addition)


@pytest.mark.parametrize("q, b", [(0.1, 0.001), (0.5, 1 / 710.0), (0.01, 1e-4)])
def test_poisson_laplace_with_a_loss_beyond_exp_range_matches_the_closed_form(q: float, b: float):
    # log1p(q expm1(1/b)), the amplified eps-DP guarantee, overflowed past 1/b = 709.78 and every
    # query raised OverflowError (found by a probe).
    delta = 1e-5
    with mpmath.workdps(40):
        # delta(eps) is non-increasing: bisection between 0 and 2 / b, where it is 0.
        lo_e, hi_e = mpmath.mpf(0), mpmath.mpf(2.0 / b)
        for _ in range(200):
            mid = (lo_e + hi_e) / 2
            lo_e, hi_e = (mid, hi_e) if _poisson_laplace_delta(q, b, mid) > delta else (lo_e, mid)
        truth = hi_e
    lo, up = PoissonSubsample(q)(Laplace(b)).epsilon_bounds(delta)
    assert lo <= float(truth) * (1 + 1e-12) and float(truth) * (1 - 1e-12) <= up
    assert up - lo <= 1e-3 * up
