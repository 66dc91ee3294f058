"""Grid sizing: the cumulant tables of the laws and the decay rate taken from them.

Truths: for Poisson subsampling (removal direction) of the Gaussian mechanism with
mu = 1/sigma, E_P[e^{lam L}] = E_Q[(1 - q + q e^{L_base})^{lam + 1}], which for integer
alpha = lam + 1 is the binomial sum sum_j C(alpha, j) (1-q)^{alpha-j} q^j e^{j (j-1) mu^2 / 2}
(Mironov et al. 2019, the integer-order SGM moments); randomized response has two atoms.
"""

from __future__ import annotations

import itertools
import math
import warnings

import mpmath
import numpy as np
import pytest
from closed_forms import mp_counting_pair, neyman_pearson_tradeoff
from scipy import integrate, special

from autoacct import AccuracyWarning
from autoacct.losses import SIZING_TILTS, DiscreteLoss, GaussianLoss, PrivacyLoss, randomized_response_loss
from autoacct.pld.accountant import FFTAccountant
from autoacct.pld.grid import choose_spacing, decay_rate, index_range, max_cells
from autoacct.subsampling.poisson import PoissonAddLoss, PoissonRemoveLoss
from autoacct.zoo import BinaryCountingExponential, Composition, Gaussian, PoissonSubsample


def _sgm_log_moment(q: float, sigma: float, alpha: int) -> float:
    """log E_Q[(1 - q + q e^{L})^alpha] for the Gaussian loss L with mu = 1/sigma (binomial sum)."""
    j = np.arange(alpha + 1)
    log_terms = (special.gammaln(alpha + 1) - special.gammaln(j + 1) - special.gammaln(alpha - j + 1)
                 + (alpha - j) * math.log1p(-q) + j * math.log(q) + j * (j - 1) / (2 * sigma ** 2))
    return float(special.logsumexp(log_terms))


@pytest.mark.parametrize("q, sigma", [(0.01, 1.0), (0.001, 0.8), (0.1, 2.0), (0.005, 1.5)])
def test_subsampled_gaussian_cumulants_match_the_binomial_sums(q, sigma):
    # Up to lam = 4 the moments come from within 8.5 sd of the base law, where its
    # representation lies (so does the accountant's grid: the tails beyond hold P-mass < 1e-16).
    loss = PoissonRemoveLoss(GaussianLoss(1.0 / sigma), q)
    table = loss.sizing_cgf
    for lam in (1, 2, 4):
        i = int(np.flatnonzero(SIZING_TILTS == lam)[0])
        assert table[i] == pytest.approx(_sgm_log_moment(q, sigma, lam + 1), rel=1e-2)


def test_randomized_response_cumulants_are_exact():
    eps = 0.7
    p = special.expit(eps)
    truth = np.log(p * np.exp(SIZING_TILTS * eps) + (1 - p) * np.exp(-SIZING_TILTS * eps))
    np.testing.assert_allclose(randomized_response_loss(eps).sizing_cgf, truth, rtol=1e-12)


@pytest.mark.parametrize("mu2, eps", [(1.0, 3.0), (0.04, 0.9), (4.0, 30.0)])
def test_decay_rate_of_a_gaussian_is_the_saddle_point(mu2, eps):
    # K(lam) = lam (lam + 1) mu^2 / 2 is minimised against lam eps at eps / mu^2 - 1/2; the
    # parabola through three tabulated points of a parabola is the parabola itself.
    cgf = SIZING_TILTS * (SIZING_TILTS + 1) * mu2 / 2
    assert decay_rate(cgf, eps, 0.0) == pytest.approx(eps / mu2 - 0.5, rel=1e-9)


def test_decay_rate_of_a_heavy_tail_is_the_saddle_point_of_the_truncated_law():
    # 1000 steps of q = 0.01, sigma = 1 at eps = 2. The truth minimises 1000 K(lam) - 2 lam over
    # a fine grid, with K by quadrature over the base law within 8.5 sd (the accountant
    # truncates near 8 sd: the tails beyond carry P-mass below 1e-16 and set no eps).
    q, mu, k, eps = 0.01, 1.0, 1000, 2.0

    def cgf(lam: float) -> float:
        def integrand(x: float) -> float:
            return math.exp(-x * x / 2 + (lam + 1) * math.log1p(q * math.expm1(mu * x - mu * mu / 2)))
        val, _ = integrate.quad(integrand, -8.5, 8.5, epsabs=0, epsrel=1e-12, limit=200)
        return math.log(val / math.sqrt(2 * math.pi))

    lams = np.arange(1.0, 12.0, 0.125)
    best = float(lams[int(np.argmin([k * cgf(a) - a * eps for a in lams]))])
    rate = decay_rate(k * PoissonRemoveLoss(GaussianLoss(mu), q).sizing_cgf, eps, 0.0)
    # The parabola through three tabulated points (factor sqrt(2) apart) misses a minimum next to
    # where K turns steeply upwards by up to a fifth: the spacing, which goes with
    # 1 / sqrt(1 + rate), by up to a tenth.
    assert abs(rate - best) <= 0.2 * best
    # The normal approximation's rate is several times larger: the tail is heavy.
    mean, var = PoissonRemoveLoss(GaussianLoss(mu), q).moments
    assert (eps - k * mean) / (k * var) > 2 * rate


class _NormalRemove(PoissonRemoveLoss):
    """The same law, sized by the normal approximation of its moments."""

    sizing_cgf = PrivacyLoss.sizing_cgf


class _NormalAdd(PoissonAddLoss):
    sizing_cgf = PrivacyLoss.sizing_cgf


def test_heavy_tails_coarsen_the_grid_and_light_ones_do_not():
    base = GaussianLoss(1.0)
    # The removal law's right tail is heavy: its cumulants give a rate about 3 times below the
    # normal one, hence a grid about sqrt(3) times coarser (up to the 2^(1/4) rounding).
    h_cgf = choose_spacing([(PoissonRemoveLoss(base, 0.01), 1000)], 2.0, 1e-3)
    h_normal = choose_spacing([(_NormalRemove(base, 0.01), 1000)], 2.0, 1e-3)
    assert 1.3 * h_normal < h_cgf < 2.5 * h_normal
    # The addition law's loss is bounded above: its tail is light, and it keeps the normal grid.
    assert (choose_spacing([(PoissonAddLoss(base, 0.01), 1000)], 2.0, 1e-3)
            == choose_spacing([(_NormalAdd(base, 0.01), 1000)], 2.0, 1e-3))


def test_a_refinement_makes_the_grid_finer_when_a_narrow_law_caps_it():
    """The spacing is capped at a few standard deviations of the narrowest law (here q = 1e-3,
    sigma = 2), so halving the grid tolerance leaves it unchanged; the accountant's next pass
    must still run on a finer grid, not repeat the last one."""
    m = Composition()([PoissonSubsample(1e-3)(Gaussian(2.0)), PoissonSubsample(0.05)(Gaussian(0.8))], [200, 300])
    acc = FFTAccountant(m.loss_parts())
    scale = acc.eps_scale(1e-6)
    assert acc.spacing(scale, 5e-4, [0]) == acc.spacing(scale, 1e-3, [0])
    refined = acc._finer(scale, 1e-3, 5e-4, [0])
    assert refined <= 5e-4
    assert acc.spacing(scale, refined, [0]) < acc.spacing(scale, 1e-3, [0])


# ----- the window of a law wider than the cell cap -----------------------------------------------

def _counting_runs(eps_tilde: float, n: int, m: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """k runs of BinaryCountingExponential's pair (closed_forms.mp_counting_pair): the product
    laws on the 2^k outcomes, as floats."""
    px, py = mp_counting_pair(eps_tilde, n, m, 40)
    outcomes = list(itertools.product((0, 1), repeat=k))
    return (np.array([float(mpmath.fprod(px[y] for y in ys)) for ys in outcomes]),
            np.array([float(mpmath.fprod(py[y] for y in ys)) for ys in outcomes]))


@pytest.mark.parametrize("k", [1, 2])
def test_counting_exponential_tradeoff_is_below_the_exact_curve_and_not_vacuous(k):
    # The backward law (atoms -5 of P-mass 1.4e-11 and 2e-9 of P-mass 1 - 1.4e-11) needed 3
    # cells beyond the cap at the spacing the accountant chose: the window centred on the
    # range [-5, 2e-9] stopped at 0, the atom of mass ~1 went to +inf, the upper profile was 1
    # on all of [-5, 0], and the tradeoff curve was [0, 0] where it is about 1 - alpha.
    m = BinaryCountingExponential(5.0, 20, 8)
    mech = m if k == 1 else Composition()([m], [k])
    alpha = np.array([0.1, 0.5])
    p, q = _counting_runs(5.0, 20, 8, k)
    truth = np.minimum(neyman_pearson_tradeoff(p, q, alpha), neyman_pearson_tradeoff(q, p, alpha))
    for via in ("auto", "pld"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AccuracyWarning)
            got = mech.tradeoff(alpha, via=via)
        # (the curve is about 1 - alpha - 2e-9 k; the bound is within 4e-7 of it)
        assert np.all((truth - 1e-5 <= got) & (got <= truth)), (k, via, got, truth)


def test_a_capped_window_keeps_the_mass_at_the_top():
    cap = max_cells()
    h = 5.0 / cap
    # Mass ~1 at the top of a range 3 cells wider than the cap: the window ends at the top.
    heavy_top = DiscreteLoss(np.array([-5.0, 2e-9]), np.array([1.4e-11, 1.0 - 1.4e-11]),
                             np.array([1.4e-11 * math.exp(5.0), (1.0 - 1.4e-11) * math.exp(-2e-9)]))
    j_lo, j_hi = index_range(heavy_top, h, 1e-18)
    assert j_hi - j_lo == cap and j_hi * h >= 2e-9
    # Mass ~1 at the bottom and 1e-11 at the top, beyond the centred window: moving the window
    # to the top would leave more below it (moved up to its first point) than the centred one
    # leaves above (moved to +inf); it stays centred.
    top = 5.0 + 3.0 * h
    heavy_bottom = DiscreteLoss(np.array([-2e-9, top]), np.array([1.0 - 1e-11, 1e-11]),
                                np.array([(1.0 - 1e-11) * math.exp(2e-9), 1e-11 * math.exp(-top)]))
    j_lo, j_hi = index_range(heavy_bottom, h, 1e-18)
    assert j_hi - j_lo == cap and j_hi * h < top and j_lo <= 1
