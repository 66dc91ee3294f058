"""The characteristic-function (phi) accountant, and f-DP tradeoff soundness.

The phi route is checked against closed forms wherever one exists (Gaussian
compositions, k-fold randomized response, single-step characteristic
functions) and against the PLD route otherwise (Laplace and
Poisson-subsampled Gaussian compositions). Its delta must never fall below
the exact value.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from closed_forms import mp_rr_delta
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, special, stats

from autoacct.losses import GaussianLoss, LaplaceLoss, gaussian_delta, leaky_rr_loss, randomized_response_loss
from autoacct.phi import PhiAccountant, composed_log_phi, log_phi, phi_delta, phi_epsilon, phi_tradeoff
from autoacct.zoo import ApproxDP, Composition, Gaussian, Laplace, PureDP, RandomizedResponse

try:  # the public home of PoissonSubsample; fall back to its module
    from autoacct.zoo import PoissonSubsample
except ImportError:  # pragma: no cover - depends on the zoo's export list
    from autoacct.subsampling import PoissonSubsample

TOL = 1e-3


def _gaussian_eps(mu: float, delta: float) -> float:
    """Exact eps(delta) of mu-GDP, by root finding on the closed-form profile."""
    return optimize.brentq(lambda e: float(gaussian_delta(mu, np.array(e))) - delta, 0.0, 200.0,
                           xtol=1e-14, rtol=1e-14)


def _rr_composed_delta(eps0: float, k: int, eps: np.ndarray) -> np.ndarray:
    """Exact delta(eps) of k-fold randomized response with log-odds eps0 (binomial closed form)."""
    p = special.expit(eps0)
    i = np.arange(k + 1)
    loss = (k - 2 * i) * eps0
    log_pm = stats.binom.logpmf(i, k, 1.0 - p)
    e = np.asarray(eps, dtype=float)[..., None]
    with np.errstate(over="ignore"):
        terms = np.exp(log_pm) * np.where(loss > e, -np.expm1(e - loss), 0.0)
    return terms.sum(axis=-1)


# ---------------------------------------------------------------------------------------------
# characteristic functions
# ---------------------------------------------------------------------------------------------
def test_gaussian_log_phi_closed_form():
    mu = 0.7
    t = np.linspace(0.0, 6.0, 13)
    g = GaussianLoss(mu)
    np.testing.assert_allclose(log_phi(g, t, "P"), 1j * t * mu * mu / 2 - mu * mu * t * t / 2)
    np.testing.assert_allclose(log_phi(g, t, "Q"), -1j * t * mu * mu / 2 - mu * mu * t * t / 2)


@pytest.mark.parametrize("b", [0.5, 1.0, 3.0])
def test_laplace_log_phi_matches_quadrature(b):
    """The closed form against atoms plus the quadrature of the continuous part.

    For (Lap(1, b), Lap(0, b)), L(o) = (|o| - |o - 1|)/b: L = 1/b on o >= 1, -1/b on
    o <= 0 and (2o - 1)/b in between.
    """
    loss = LaplaceLoss(b)

    def reference(t: float, under: str) -> complex:
        if under == "P":
            top, bottom = 0.5, 0.5 * math.exp(-1.0 / b)

            def dens(o):
                return math.exp(-(1.0 - o) / b) / (2.0 * b)
        else:
            top, bottom = 0.5 * math.exp(-1.0 / b), 0.5

            def dens(o):
                return math.exp(-o / b) / (2.0 * b)
        re = integrate.quad(lambda o: dens(o) * math.cos(t * (2 * o - 1) / b), 0.0, 1.0,
                            epsabs=1e-14, epsrel=1e-12, limit=200)[0]
        im = integrate.quad(lambda o: dens(o) * math.sin(t * (2 * o - 1) / b), 0.0, 1.0,
                            epsabs=1e-14, epsrel=1e-12, limit=200)[0]
        return top * np.exp(1j * t / b) + bottom * np.exp(-1j * t / b) + re + 1j * im

    t = np.array([0.0, 0.3, 1.0, 2.5, 7.0])
    for under in ("P", "Q"):
        ref = np.array([reference(x, under) for x in t])
        np.testing.assert_allclose(np.exp(log_phi(loss, t, under)), ref, atol=1e-12)


def test_discrete_log_phi_and_atoms():
    """Leaky randomized response: the atom at +inf is not part of phi_P (mass 1 - delta)."""
    loss = leaky_rr_loss(0.5, 1e-3)
    t = np.array([0.0, 1.0, 2.0])
    p = special.expit(0.5)
    ref = (1 - 1e-3) * (p * np.exp(0.5j * t) + (1 - p) * np.exp(-0.5j * t))
    np.testing.assert_allclose(np.exp(log_phi(loss, t, "P")), ref, rtol=1e-13)


def test_composition_adds_log_phi():
    rr = randomized_response_loss(0.3)
    lap = LaplaceLoss(2.0)
    parts = [(rr, rr, 4), (lap, lap, 3)]
    t = np.linspace(0.1, 3.0, 7)
    expected = 4 * log_phi(rr, t) + 3 * log_phi(lap, t)
    np.testing.assert_allclose(np.exp(composed_log_phi(parts, t)), np.exp(expected), rtol=1e-12)
    # k-fold randomized response: phi^k is the binomial sum's characteristic function.
    p = special.expit(0.3)
    i = np.arange(5)
    direct = (stats.binom.pmf(i, 4, 1 - p)[None, :]
              * np.exp(1j * np.outer(t, (4 - 2 * i) * 0.3))).sum(axis=1)
    np.testing.assert_allclose(np.exp(composed_log_phi([(rr, rr, 4)], t)), direct, rtol=1e-12)


def test_generic_law_is_discretised_from_cell_masses():
    """A law with no closed form (a subclass hiding gdp_mu) goes through the lattice route."""

    class PlainGaussian(GaussianLoss):
        def __init__(self, mu: float) -> None:
            super().__init__(mu)
            self.gdp_mu = None

        @property
        def key(self) -> tuple:
            return ("plain-gaussian", self.mu)

    plain = PlainGaussian(0.8)
    t = np.linspace(0.0, 3.0, 7)
    np.testing.assert_allclose(np.exp(log_phi(plain, t)), np.exp(log_phi(GaussianLoss(0.8), t)),
                               atol=1e-5)
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    exact = gaussian_delta(0.8 * math.sqrt(5), eps)
    got = phi_delta([(plain, plain, 5)], eps)
    assert np.all(got >= exact)
    np.testing.assert_allclose(got, exact, rtol=2e-3)


# ---------------------------------------------------------------------------------------------
# Gaussian compositions: exact closed form
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sigmas,counts", [([1.0], [1]), ([2.0], [10]), ([5.0, 8.0], [3, 5]),
                                           ([0.7, 30.0], [2, 400])])
def test_gaussian_delta_is_exact_and_never_below(sigmas, counts):
    m = Composition()([Gaussian(s) for s in sigmas], counts)
    mu = math.sqrt(sum(k / s ** 2 for s, k in zip(sigmas, counts)))
    eps = np.concatenate(([0.0], np.linspace(0.05, 6.0, 40)))
    exact = gaussian_delta(mu, eps)
    got = phi_delta(m.loss_parts(), eps)
    # The closed form itself is accurate to about 1e-13 relative (log-space evaluation).
    assert np.all(got >= exact * (1 - 1e-10)), "phi's delta fell below the exact Gaussian value"
    big = exact > 1e-10
    np.testing.assert_allclose(got[big], exact[big], rtol=TOL)


@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
def test_gaussian_epsilon_is_exact_and_never_below(delta):
    m = Composition()([Gaussian(5.0), Gaussian(8.0)], [3, 5])
    mu = math.sqrt(3 / 25 + 5 / 64)
    exact = _gaussian_eps(mu, delta)
    got = phi_epsilon(m.loss_parts(), delta)
    assert got >= exact
    assert got <= exact * (1 + TOL)


# ---------------------------------------------------------------------------------------------
# laws with atoms: randomized response (closed form), Laplace (PLD route), p_inf
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("eps0,k", [(1.0, 20), (0.1, 50), (0.5, 3)])
def test_randomized_response_composition_upper_bounds_closed_form(eps0, k):
    rr = randomized_response_loss(eps0)
    parts = [(rr, rr, k)]
    eps = np.linspace(0.0, k * eps0 * 0.9, 25)
    exact = _rr_composed_delta(eps0, k, eps)
    got = phi_delta(parts, eps)
    assert np.all(got >= exact)
    # Accurate to tol, relatively or on the epsilon scale (the exact profile at eps (1 - tol)).
    slack = np.maximum(_rr_composed_delta(eps0, k, eps * (1 - TOL)), exact * (1 + TOL))
    assert np.all(got <= slack + 1e-10)     # absolute floor: rounding, about u e^eps
    for delta in (1e-2, 1e-5):
        e = phi_epsilon(parts, delta)
        assert _rr_composed_delta(eps0, k, np.array([e]))[0] <= delta
        assert _rr_composed_delta(eps0, k, np.array([e * (1 - TOL)]))[0] > delta or e == 0.0


@settings(max_examples=60, derandomize=True, deadline=None, database=None)
@given(eps0=st.floats(1e-6, 1e-5), shave=st.sampled_from([1e-9, 1e-12]))
@example(eps0=2.894266124716752e-06, shave=1e-9)
def test_pure_dp_just_below_its_atom_is_not_below_the_closed_form(eps0, shave):
    # delta(eps) = p - e^eps (1 - p) = (1 - e^{eps - eps0}) / (1 + e^{-eps0}) for eps < eps0: at
    # eps = eps0 (1 - 1e-9) the log of the gap 1 - e^{eps - eps0} is about -33, whose rounding
    # the enumerated profile's margin left out (1.9e-15 relatively below, at the example).
    eps = eps0 * (1.0 - shave)
    got = float(PureDP(eps0).delta(eps, via="phi"))
    with mp.workdps(60):
        truth = mp_rr_delta(eps0, 1, eps)
        assert truth <= mp.mpf(got) <= truth * (1 + mp.mpf("1e-12")), (eps0, eps, got, truth)


@pytest.mark.parametrize("b,k", [(1.0, 10), (5.0, 50), (0.3, 1), (2.0, 4)])
def test_laplace_composition_agrees_with_pld(b, k):
    m = Composition()([Laplace(b)], [k])
    parts = m.loss_parts()
    for delta in (1e-3, 1e-6):
        lower, _ = m.epsilon_bounds(delta)
        pld = m.epsilon(delta, via="pld")
        got = phi_epsilon(parts, delta)
        assert got >= lower * (1 - 1e-9)
        assert abs(got / pld - 1) <= TOL
    eps = np.array([0.1, 0.5, 1.0, 2.0]) * min(k / b, 5.0) / 2.0
    got = phi_delta(parts, eps)
    lower, upper = m.delta_bounds(eps)
    assert np.all(got >= lower * (1 - 1e-9))
    # Within tol of the PLD route, relatively or on the epsilon scale.
    slack = np.maximum(upper * (1 + TOL), m.delta(eps * (1 - TOL), via="pld"))
    assert np.all(got <= slack)


def test_mixed_gaussian_and_pure_dp_agrees_with_pld():
    """The lecture demo of Wang's autodp lecture: three Gaussians, five Gaussians and one pure-DP step."""
    m = Composition()([Gaussian(5.0), Gaussian(8.0), PureDP(0.1)], [3, 5, 1])
    for delta in (1e-4, 1e-6):
        lower, upper = m.epsilon_bounds(delta)
        got = phi_epsilon(m.loss_parts(), delta)
        assert lower * (1 - 1e-9) <= got <= upper * (1 + TOL)


def test_atom_at_infinity():
    m = Composition()([ApproxDP(0.5, 1e-3)], [3])
    p_inf = 1 - (1 - 1e-3) ** 3
    eps = np.array([0.0, 1.0, 1.5, 3.0])
    got = phi_delta(m.loss_parts(), eps)
    assert np.all(got >= p_inf)
    assert got[-1] <= p_inf * (1 + TOL) + 1e-12    # no finite loss above 1.5
    assert phi_epsilon(m.loss_parts(), p_inf / 2) == math.inf
    e = phi_epsilon(m.loss_parts(), 2 * p_inf)
    assert 0.0 < e <= 1.5 * (1 + TOL)


# ---------------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian (generic laws, two directions)
# ---------------------------------------------------------------------------------------------
def test_poisson_subsampled_gaussian_agrees_with_pld():
    m = Composition()([PoissonSubsample(0.1)(Gaussian(1.0))], [10])
    parts = m.loss_parts()
    acc = PhiAccountant(parts)
    lower, _ = m.epsilon_bounds(1e-5)
    pld = m.epsilon(1e-5, via="pld")
    got = acc.epsilon(1e-5)
    assert got >= lower * (1 - 1e-9)
    assert abs(got / pld - 1) <= TOL
    eps = np.array([0.5, 1.0, 2.0])
    d_lo, d_up = m.delta_bounds(eps)
    got_d = acc.delta(eps)
    assert np.all(got_d >= d_lo * (1 - 1e-9))
    np.testing.assert_allclose(got_d, d_up, rtol=TOL)
    # The mechanism's delta is the larger of the two directions.
    forward = phi_delta([(f, f, k) for f, _, k in parts], eps)
    backward = phi_delta([(b, b, k) for _, b, k in parts], eps)
    assert np.all(got_d >= np.maximum(forward, backward) * (1 - 1e-12))


def test_seed_000_table_value():
    """Seed 000, Tables 1-2: delta(1.0) = 0.0496014103163 for q = 0.01, sigma = 1.5, k = 10^4."""
    m = Composition()([PoissonSubsample(0.01)(Gaussian(1.5))], [10_000])
    got = float(phi_delta(m.loss_parts(), [1.0])[0])
    assert 0.0496014103163 <= got <= 0.0496014103163 * (1 + 2e-4)


# ---------------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------------
def test_bad_inputs():
    g = GaussianLoss(1.0)
    with pytest.raises(ValueError, match="delta"):
        phi_epsilon([(g, g, 1)], 0.0)
    with pytest.raises(ValueError, match="delta"):
        phi_epsilon([(g, g, 1)], 1.5)
    with pytest.raises(ValueError, match="parts"):
        PhiAccountant([])
    with pytest.raises(ValueError, match="count"):
        PhiAccountant([(g, g, 0)])
    with pytest.raises(ValueError, match="under"):
        log_phi(g, np.array([1.0]), "R")


# ---------------------------------------------------------------------------------------------
# f-DP tradeoff soundness
# ---------------------------------------------------------------------------------------------
def _gdp_tradeoff(mu: float, alpha: np.ndarray) -> np.ndarray:
    return special.ndtr(-special.ndtri(alpha) - mu)  # not ndtri(1 - alpha): 1 - alpha rounds


def test_gaussian_composition_tradeoff_is_exact_and_a_lower_bound():
    m = Composition()([Gaussian(2.0), Gaussian(3.0)], [4, 2])
    mu = math.sqrt(4 / 4 + 2 / 9)
    alpha = np.concatenate((np.geomspace(1e-4, 0.1, 60), np.linspace(0.1, 0.9, 81)))
    exact = _gdp_tradeoff(mu, alpha)
    got = np.asarray(m.tradeoff(alpha))
    assert np.all(got <= exact)
    np.testing.assert_allclose(got, exact, atol=1e-6)


def test_phi_tradeoff_is_a_lower_bound():
    mu = 1.3
    parts = [(GaussianLoss(mu), GaussianLoss(mu), 1)]
    alpha = np.linspace(1e-4, 0.9, 50)
    exact = _gdp_tradeoff(mu, alpha)
    got = phi_tradeoff(parts, alpha)
    assert np.all(got <= exact + 1e-12)
    assert np.max(exact - got) < 0.02


def _laplace_tradeoff(b: float, alpha: np.ndarray) -> np.ndarray:
    """T(Lap(0, b), Lap(1, b)): the likelihood ratio is monotone in the output, so the
    Neyman-Pearson tests are thresholds; a threshold with type I error alpha has
    type II error F(F^{-1}(1 - alpha) - 1/b), F the standard Laplace CDF."""
    return stats.laplace.cdf(stats.laplace.ppf(1.0 - alpha) - 1.0 / b)


@pytest.mark.parametrize("b", [0.5, 1.0, 4.0])
def test_laplace_pld_tradeoff_never_exceeds_exact(b):
    alpha = np.concatenate((np.geomspace(1e-5, 0.05, 40), np.linspace(0.05, 1.0, 96)))
    exact = _laplace_tradeoff(b, alpha)
    got = np.asarray(Laplace(b).tradeoff(alpha, via="pld"))
    assert np.all(got <= exact + 1e-12)
    assert np.max(exact - got) < 0.02     # and not far below


def test_a_fine_lattice_is_summed_directly_not_by_its_period():
    # Poisson-subsampled RR at q = 1e-24 lives on a lattice so fine that its period held no
    # array ('array is too big' from numpy); the direct sum skips the lattice's empty points.
    from autoacct.subsampling import PoissonSubsample
    from autoacct.zoo import RandomizedResponse
    m = Composition()([PoissonSubsample(1e-24)(RandomizedResponse(0.9999))], [2])
    with pytest.warns(Warning):
        up = m.delta(0.0, via="phi")
    assert 2e-24 <= up <= 1.0


def test_one_law_composed_1e9_times_stops_its_direct_sums_at_the_deadline():
    """One DP-SGD law composed 1e9 times: the direct sums of its characteristic function are the
    whole query's work (over 4 minutes before). They stop between blocks at the deadline (three
    times the time budget), and the Chernoff bound, valid at every damping exponent, answers."""
    import warnings

    import autoacct
    from autoacct import BudgetWarning, dpsgd

    with warnings.catch_warnings(record=True) as caught, autoacct.limits(seconds=0.3):
        warnings.simplefilter("always")
        eps = dpsgd(0.01, 1.0, 10**9).epsilon(1e-5, via="phi")
    assert any(issubclass(w.category, BudgetWarning) and "direct sums" in str(w.message) for w in caught)
    # Not the bound that says nothing: the Chernoff bound of the composed law is finite.
    assert 0.0 < eps < math.inf



@pytest.mark.parametrize("make", [
    # Laplace(1): the loss is at most 1, so delta(eps) = 0 for eps >= 1.
    lambda: Laplace(1.0),
    # Randomized response with p = 0.75: the loss is +-log 3, so delta = 0 past log 3.
    lambda: RandomizedResponse(0.75),
    # Removal loss log(1 - q + q e^X) > eps needs X > eps + log q, X ~ N(1/2, 1): a Gaussian
    # tail past 1e99 standard deviations; the addition loss is at most -log(1 - q).
    lambda: PoissonSubsample(0.01)(Gaussian(1.0)),
    # At most 3 (the Laplace steps) plus N(1/4, 1/2): a Gaussian tail past 1e100.
    lambda: Composition()([Laplace(1.0), Gaussian(2.0)], [3, 2]),
])
def test_phi_delta_at_eps_near_the_largest_float(make):
    # eps up to 1e100 was answered, 1e200 raised ZeroDivisionError (the truncation bound of an
    # alias window of width ~eps divided by (n dt)^2 = 0) or OverflowError ((tol eps / 6)^2 in
    # the smoothing budget), and one such entry failed the whole array. The truth at eps >= 1e100
    # is 0 or a Gaussian tail e^{-1e199} (0 in double precision): the bound is >= 0 and ~0.
    m = make()
    eps = np.array([0.5, 1e100, 1e200, 1e300, 1.7e308])
    got = np.asarray(m.delta(eps, via="phi"))
    assert np.all(np.isfinite(got)) and np.all((got >= 0.0) & (got <= 1.0))
    assert np.all(got[1:] <= 1e-18)
    # The huge entries do not change the answer at a moderate eps of the same call, which
    # still brackets the PLD route's certified lower bound.
    alone = float(m.delta(0.5, via="phi"))
    assert got[0] == pytest.approx(alone, rel=1e-2)
    assert got[0] >= float(m.delta_bounds(0.5)[0])


def _off_lattice_law():
    """300 atoms on the lattice 1, the top one 2e-7 above its point (within the 1e-9 h |j| that
    the phi route's lattice accepts), masses decaying from the top."""
    from autoacct.losses import DiscreteLoss

    values = np.arange(300.0)
    values[-1] += 2e-7
    p = np.exp(-0.05 * (299.0 - np.arange(300.0)))
    p /= p.sum()
    return DiscreteLoss(values, p, p * np.exp(-values), lattice=1.0)


def test_atoms_moved_onto_the_phi_lattice_count_their_move():
    # The phi route puts a lattice law of more than 256 atoms on its lattice points, moving each
    # by up to 1e-9 h |j| (here the top atom down by 2e-7): delta at 299 + 1e-7 came out 1e-300
    # (the floor), the law's being p_top (1 - e^{-1e-7}) = 5e-10. The move is its value error now.
    loss = _off_lattice_law()
    eps = 299.0 + 1e-7
    with mp.workdps(50):
        truth = sum(mp.mpf(float(p)) * -mp.expm1(mp.mpf(eps) - mp.mpf(float(v)))
                    for v, p in zip(loss.values, loss.p_mass) if v > eps)
    assert mp.mpf(float(phi_delta([(loss, loss, 1)], np.array([eps]))[0])) >= truth
    from autoacct.phi.laws import closed_form_law

    law = closed_form_law(loss)
    s = np.array([0.5, 2.0, 10.0])
    got = law.log_mgf(s)
    with mp.workdps(50):
        for si, gi in zip(s, got):
            exact = mp.log(mp.fsum(mp.mpf(float(p)) * mp.exp(si * mp.mpf(float(v)))
                                   for v, p in zip(loss.values, loss.p_mass)))
            assert mp.mpf(float(gi)) >= exact


@pytest.mark.parametrize("p", [0.75, 0.999667])
def test_log_mgf_of_a_computed_log_odds_is_not_below_the_true_one(p):
    # RandomizedResponse(p) computes eps0 = log(p / (1 - p)) a fraction of an ulp below the true
    # value at these p (0.54 and 0.55 MACHINE_EPSILON relatively): its atoms read as they are gave
    # log E_P[e^{sL}] up to 5.7e-13 below the true pair's (50-digit mpmath), which the Chernoff
    # bounds and the spectrum's normaliser read. The law now carries the value error declared.
    from autoacct.phi.laws import closed_form_law

    (part,) = RandomizedResponse(p).loss_parts()
    s = np.array([1.0, 10.0, 100.0, 300.0, 600.0])
    got = closed_form_law(part.forward).log_mgf(s)
    with mp.workdps(50):
        q = mp.mpf(p)
        x = mp.log(q / (1 - q))
        for si, gi in zip(s, got):
            assert mp.mpf(float(gi)) >= mp.log(q * mp.exp(si * x) + (1 - q) * mp.exp(-si * x))


@pytest.mark.parametrize("offset", [-3, 0, 3])
def test_spectral_path_near_an_atom_of_a_computed_log_odds_holds_the_truth(offset):
    # 100 runs of RandomizedResponse(0.999667) (log-odds 5.5e-16 relatively low) beside a
    # Gaussian with mu = 3e-5, so that the spectrum answers, at eps within a few mu of the top
    # atom: against the exact mixture sum_j P(j) delta_G(eps - x_j) in 50-digit mpmath. (The
    # atoms' value error, 1e-13 over the composition, moves delta by about 4e-9 relatively
    # here, and the spectral answers were 1.6e-8 to 1.5e-7 relatively above the truth before
    # the law carried it: no spectral case was found where it decided the side.)
    p, k, mu = 0.999667, 100, 3e-5
    m = Composition()([RandomizedResponse(p), Gaussian(1.0 / mu)], [k, 1])
    eps = k * RandomizedResponse(p).eps0 + offset * mu
    got = m.delta(eps, via="phi", tol=1e-7)
    with mp.workdps(50):
        q, mm = mp.mpf(p), 1 / mp.mpf(1.0 / mu)
        x0 = mp.log(q / (1 - q))

        def gauss(e):
            return mp.ncdf(-e / mm + mm / 2) - mp.exp(e) * mp.ncdf(-e / mm - mm / 2)
        truth = mp.fsum(mp.binomial(k, j) * q ** j * (1 - q) ** (k - j) * gauss(mp.mpf(eps) - (2 * j - k) * x0)
                        for j in range(k + 1))
    assert mp.mpf(float(got)) >= truth


@settings(max_examples=120, deadline=None, derandomize=True)
@given(log_d0=st.floats(-12.0, -2.0), k=st.integers(2, 5000))
def test_composed_atom_at_infinity_is_not_below_the_exact_one(log_d0, k):
    # Beyond every finite loss delta is the atom at +inf, 1 - (1 - d0)^k for k runs of
    # ApproxDP(1, d0). Formed as the product of the laws' computed totals minus that of their
    # finite masses, it multiplied their rounding by k: up to 5.5e-13 relatively below the exact
    # value (38 of 300 random cases).
    from autoacct.zoo import ApproxDP, Composition

    d0 = 10.0 ** log_d0
    got = float(Composition()([ApproxDP(1.0, d0)], [k]).delta(1e5, via="phi"))
    with mp.workdps(60):
        exact = 1 - (1 - mp.mpf(d0)) ** k
    assert got >= exact
    assert got <= exact * (1 + 1e-12)
