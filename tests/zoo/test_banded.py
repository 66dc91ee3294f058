"""BandedMatrixFactorization (DP-BandMF with cyclic Poisson sampling) against DP-SGD, closed forms,
exact enumeration, dp_accounting and jax_privacy's published values.

References: the reduction of Choquette-Choo et al. (2023, Theorem 4) read independently (DP-SGD at
rate q and noise multiplier sigma / kappa, composed ceil(n / b) times, built here from the library's
own Poisson-subsampled Gaussian, and from dp_accounting's PoissonSampledDpEvent); without sampling
the analytic Gaussian (Balle and Wang 2018) at mu = kappa sqrt(ceil(n / b)) / sigma, with the
sensitivity of b-banded matrices under b-min-sep participation checked by enumerating every
participation pattern of small random banded matrices; jax_privacy's DpsgdTrainingAccountant test
values for cycle length 64 (its analysis_test.py).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from closed_forms import gaussian_delta_closed, gaussian_eps_closed

from autoacct import Neighboring
from autoacct.zoo import BandedMatrixFactorization, Composition, Gaussian, PoissonSubsample

DELTAS = (1e-3, 1e-6, 1e-9)


def dpsgd(sigma: float, q: float, steps: int):
    return Composition()([PoissonSubsample(q)(Gaussian(sigma))], [steps])


# ----- the reduction ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma, steps, q", [(1.0, 200, 0.02), (0.8, 30, 0.1)])
def test_one_band_is_dpsgd(sigma, steps, q):
    """b = 1: one partition, every step samples the whole dataset; the mechanism is DP-SGD."""
    m = BandedMatrixFactorization(sigma, steps, 1, q)
    ref = dpsgd(sigma, q, steps)
    for d in DELTAS:
        assert m.epsilon_bounds(d) == ref.epsilon_bounds(d)
    e = np.array([0.0, 0.5, 2.0])
    assert np.array_equal(m.delta(e), ref.delta(e))
    alpha = np.array([1.5, 2.0, 8.0, 64.0])
    assert np.array_equal(m.rdp(alpha), ref.rdp(alpha))
    assert np.array_equal(m.tradeoff([0.01, 0.1]), ref.tradeoff([0.01, 0.1]))
    assert m.epsilon(1e-6, via="phi") == ref.epsilon(1e-6, via="phi")


@pytest.mark.parametrize("steps, bands, runs", [(1000, 10, 100), (1001, 10, 101), (999, 10, 100),
                                                (7, 10, 1), (64, 64, 1)])
def test_b_bands_are_dpsgd_for_ceil_n_over_b_steps(steps, bands, runs):
    """The theorem's count: a record of partition 0 is in ceil(n / b) steps (here written out)."""
    assert runs == math.ceil(steps / bands)
    m = BandedMatrixFactorization(1.1, steps, bands, 0.05)
    assert m.participations == runs
    ref = dpsgd(1.1, 0.05, runs)
    assert m.epsilon_bounds(1e-6) == ref.epsilon_bounds(1e-6)


def test_column_norm_scales_the_noise_multiplier():
    """Columns of norm at most kappa: C X + Z = kappa ((C / kappa) X + Z / kappa), noise sigma / kappa."""
    m = BandedMatrixFactorization(3.0, 400, 4, 0.05, max_column_norm=2.0)
    ref = dpsgd(1.5, 0.05, 100)
    assert m.epsilon_bounds(1e-6) == ref.epsilon_bounds(1e-6)


# ----- without sampling --------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma, steps, bands, kappa", [(4.0, 100, 8, 1.5), (10.0, 1000, 1, 1.0),
                                                        (2.0, 5, 5, 1.0), (0.5, 12, 5, 0.25)])
def test_unamplified_is_the_gaussian_at_kappa_sqrt_participations(sigma, steps, bands, kappa):
    mu = kappa * math.sqrt(math.ceil(steps / bands)) / sigma
    m = BandedMatrixFactorization(sigma, steps, bands, max_column_norm=kappa)
    assert m.neighboring is None  # the sensitivity is the caller's, under the caller's relation
    assert m.exact_gdp_mu() == pytest.approx(mu, rel=1e-14)
    for d in DELTAS:
        truth = gaussian_eps_closed(mu, d)
        lo, up = m.epsilon_bounds(d)
        assert lo <= truth * (1 + 1e-9) and truth * (1 - 1e-9) <= up <= truth * (1 + 1e-6)
    for e in (0.0, 0.5, 2.0):
        assert m.delta(e) == pytest.approx(gaussian_delta_closed(mu, e), rel=1e-6, abs=1e-300)
    assert float(m.rdp(3.0)) == pytest.approx(3.0 * mu * mu / 2.0, rel=1e-12)


def _min_sep_patterns(n: int, b: int):
    """Every non-empty set of steps in range(n) whose elements are at least b apart."""
    for r in range(1, n + 1):
        for pattern in itertools.combinations(range(n), r):
            if all(j - i >= b for i, j in zip(pattern, pattern[1:])):
                yield pattern


def _banded(rng: np.random.Generator, n: int, b: int, kappa: float) -> np.ndarray:
    """A random lower-triangular b-banded n x n matrix with columns of norm at most kappa."""
    i, j = np.indices((n, n))
    c = np.where((i - j >= 0) & (i - j < b), rng.normal(size=(n, n)), 0.0)
    norms = np.linalg.norm(c, axis=0)
    return c * (kappa * rng.uniform(0.5, 1.0, size=n) / norms)


@pytest.mark.parametrize("n, b", [(9, 3), (10, 4), (8, 1), (7, 7)])
def test_sensitivity_of_banded_matrices_under_min_sep_participation(n, b):
    """The L2 sensitivity behind the unamplified case, by exact enumeration: for a b-banded C and
    participations at least b apart (one record's per-step contributions u_i in [-1, 1]), the largest
    ||C u|| is the root of the selected columns' squared norms, at most kappa sqrt(ceil(n / b)),
    and C = kappa I attains it. The mechanism's mu times sigma is that bound."""
    kappa, sigma = 1.3, 2.0
    bound = BandedMatrixFactorization(sigma, n, b, max_column_norm=kappa).exact_gdp_mu() * sigma
    rng = np.random.default_rng(n * 100 + b)
    for c in [_banded(rng, n, b, kappa) for _ in range(5)] + [kappa * np.eye(n)]:
        worst = 0.0
        for pattern in _min_sep_patterns(n, b):
            cols = c[:, list(pattern)]
            # The selected columns have disjoint supports: signs and sub-unit weights only shrink ||C u||.
            assert np.allclose(cols.T @ cols, np.diag(np.sum(cols * cols, axis=0)))
            for signs in itertools.product((-1.0, 1.0), repeat=min(len(pattern), 3)):
                u = np.ones(len(pattern))
                u[:len(signs)] = signs
                worst = max(worst, float(np.linalg.norm(cols @ u)))
        assert worst <= bound * (1 + 1e-12)
    assert worst == pytest.approx(bound, rel=1e-12)  # C = kappa I, the last matrix: attained


# ----- monotonicity and relations -----------------------------------------------------------------------


def test_epsilon_non_increasing_in_bands():
    eps = [BandedMatrixFactorization(1.0, 960, b, 0.03).epsilon(1e-6) for b in (1, 2, 3, 5, 8, 16, 96, 960, 2000)]
    assert all(a >= b for a, b in zip(eps, eps[1:]))
    assert eps[0] > 2 * eps[4]
    assert eps[-2] == eps[-1]  # one participation from b = n on


def test_epsilon_non_decreasing_in_sampling_rate_and_steps():
    by_q = [BandedMatrixFactorization(1.0, 500, 5, q).epsilon(1e-6) for q in (0.0, 0.01, 0.05, 0.2, 1.0)]
    assert by_q[0] == 0.0 and all(a <= b for a, b in zip(by_q, by_q[1:]))
    by_n = [BandedMatrixFactorization(1.0, n, 5, 0.05).epsilon(1e-6) for n in (1, 5, 6, 100, 1000)]
    assert by_n[0] == by_n[1] and all(a <= b for a, b in zip(by_n, by_n[1:]))


def test_sampled_mechanism_is_declared_add_remove_and_composes_with_it():
    m = BandedMatrixFactorization(1.0, 100, 4, 0.1)
    assert m.neighboring is Neighboring.ADD_REMOVE
    both = Composition()([m, PoissonSubsample(0.1)(Gaussian(1.0))], [1, 25])
    assert both.epsilon(1e-6) == pytest.approx(dpsgd(1.0, 0.1, 50).epsilon(1e-6), rel=2e-3)
    assert BandedMatrixFactorization(1.0, 100, 4, neighboring=Neighboring.REPLACE_ONE).neighboring \
        is Neighboring.REPLACE_ONE


@pytest.mark.parametrize("make, name", [
    (lambda: BandedMatrixFactorization(0.0, 10, 2), "noise_multiplier"),
    (lambda: BandedMatrixFactorization(-1.0, 10, 2), "noise_multiplier"),
    (lambda: BandedMatrixFactorization(math.nan, 10, 2), "noise_multiplier"),
    (lambda: BandedMatrixFactorization(1.0, 0, 2), "steps"),
    (lambda: BandedMatrixFactorization(1.0, 2.5, 2), "steps"),
    (lambda: BandedMatrixFactorization(1.0, 10, 0), "bands"),
    (lambda: BandedMatrixFactorization(1.0, 10, -3), "bands"),
    (lambda: BandedMatrixFactorization(1.0, 10, 1.5), "bands"),
    (lambda: BandedMatrixFactorization(1.0, 10, 2, -0.1), "sampling_rate"),
    (lambda: BandedMatrixFactorization(1.0, 10, 2, 1.5), "sampling_rate"),
    (lambda: BandedMatrixFactorization(1.0, 10, 2, math.inf), "sampling_rate"),
    (lambda: BandedMatrixFactorization(1.0, 10, 2, 0.1, 0.0), "max_column_norm"),
    (lambda: BandedMatrixFactorization(1.0, 10, 2, 0.1, -1.0), "max_column_norm"),
    (lambda: BandedMatrixFactorization(1.0, 10, 2, 0.1, math.inf), "max_column_norm"),
    (lambda: BandedMatrixFactorization(1e-300, 10, 2, 0.1, 1e10), "noise_multiplier"),
    (lambda: BandedMatrixFactorization(1e10, 10, 2, 0.1, 1e-300), "max_column_norm"),
    (lambda: BandedMatrixFactorization(1.0, 10, 2, 0.1, neighboring=Neighboring.REPLACE_ONE), "neighboring"),
])
def test_bad_parameters_name_themselves(make, name):
    with pytest.raises(ValueError, match=name):
        make()


@pytest.mark.parametrize("make, name", [
    (lambda: BandedMatrixFactorization("1", 10, 2), "noise_multiplier"),
    (lambda: BandedMatrixFactorization(1.0, 10, True), "bands"),
    (lambda: BandedMatrixFactorization(1.0, 10, 2, None), "sampling_rate"),
])
def test_wrong_types_name_themselves(make, name):
    with pytest.raises(TypeError, match=name):
        make()


# ----- other accountants --------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma, steps, bands, q, kappa", [(1.0, 2000, 20, 0.02, 1.0), (2.5, 300, 7, 0.1, 1.7)])
def test_matches_dp_accountings_pld_of_the_poisson_sampled_gaussian(sigma, steps, bands, q, kappa):
    pld = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
    dpa = pytest.importorskip("dp_accounting")
    acc = pld.PLDAccountant(value_discretization_interval=1e-3)
    acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma / kappa)),
                                        math.ceil(steps / bands)))
    m = BandedMatrixFactorization(sigma, steps, bands, q, max_column_norm=kappa)
    for d in (1e-4, 1e-6, 1e-8):
        theirs = acc.get_epsilon(d)
        lo, up = m.epsilon_bounds(d)
        # Their pessimistic PLD is an upper bound too; ours is certified within 0.1% of the truth.
        assert lo <= theirs * (1 + 1e-9)
        assert up == pytest.approx(theirs, rel=2e-3)


def test_jax_privacy_cycle_length_values():
    """jax_privacy's BandMF accountant (DpsgdTrainingAccountant, cycle_length = 64) on 50000 * 64
    examples, batch 1024 (q = 1024 / 50000 within a partition), noise 4, 10000 * 64 updates, delta
    1e-5: eps 2.09245 by dp_accounting's PLD and 2.27535 by its RDP (their analysis_test.py); their
    'uneven multiples' case, (10000 - 1) * 64 + 1 updates, gives the same ceil(n / b) = 10000 runs."""
    q = 1024 / 50_000
    for steps in (10_000 * 64, 9_999 * 64 + 1):
        m = BandedMatrixFactorization(4.0, steps, 64, q)
        lo, up = m.epsilon_bounds(1e-5)
        assert lo <= 2.09245 * (1 + 1e-5) and up == pytest.approx(2.09245, rel=2e-3)
        assert m.epsilon(1e-5, via="rdp") <= 2.27535 * (1 + 1e-5)


@pytest.mark.parametrize("sigma, kappa, q", [(1e300, 1.0, 1.0), (1.0, 1e-300, 1.0), (1e300, 1.0, 0.5),
                                             (1.0, 1e-300, 0.5), (3.0, 0.7, 1.0)])
def test_huge_noise_multipliers_answer_a_tiny_upper_bound(sigma, kappa, q):
    # BandedMatrixFactorization(1e300, 100, 10).rdp(2.0) raised OverflowError (sigma ** 2 of its
    # reduction's Gaussian), and at sampling_rate < 1 the sampled Gaussian's RDP refused
    # sigma > 1e100 at query time. k = 10 participations of a Gaussian with noise sigma / kappa:
    # at most 10 alpha kappa^2 / (2 sigma^2) (exact rationals), and at least it at q = 1.
    m = BandedMatrixFactorization(sigma, 100, 10, sampling_rate=q, max_column_norm=kappa)
    exact = 10 * Fraction(2.0) * Fraction(kappa) ** 2 / (2 * Fraction(sigma) ** 2)
    got = Fraction(m.rdp(2.0))
    if q == 1.0:
        assert exact <= got <= exact * (1 + Fraction(1, 10 ** 13)) + Fraction(1, 10 ** 320)
    else:
        assert 0 < got <= 2 * exact * (1 + Fraction(1, 10 ** 13)) + Fraction(1, 10 ** 298)
    lo, up = m.epsilon_bounds(1e-5)
    assert 0.0 <= lo <= up < math.inf
