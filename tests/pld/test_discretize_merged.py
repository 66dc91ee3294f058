"""The discretiser on atom laws whose lower PLD merges the atoms onto the grid (``merged_lower``).

Truth: the hockey-stick profile sum_i p_i (1 - e^{eps - x_i})_+ + p_inf of the atoms,
summed here from the pmf of a Poisson-subsampled discrete Gaussian written down with
numpy (not autoacct). The upper PLD's profile must lie above it, the lower one's below,
at every eps, and the lower one must move no atom down by a cell or more. Merged, the
lower PLD keeps the law's Q-mass E_P[e^{-L}] (a mean-preserving contraction in e^{-L}),
where rounding every atom down adds about h/2 of it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from closed_forms import poisson_kary_rr_atoms
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from autoacct.pld.discretize import discretize, rounded_down
from autoacct.pld.grid import index_range
from autoacct.subsampling import PoissonSubsample
from autoacct.zoo import DiscreteGaussian, DiscreteLaplace


def _profile(x: np.ndarray, w: np.ndarray, p_inf: float, eps: np.ndarray) -> np.ndarray:
    x, w = x[w > 0], w[w > 0]
    terms = -np.expm1(np.minimum(eps[:, None] - x[None, :], 0.0))
    return (terms * w[None, :]).sum(axis=1) + p_inf


def _subsampled_dg_atoms(sigma: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Loss values and masses of the removal pair ((1-q) Q + q P, Q), P = N_Z(1, sigma^2)."""
    x = np.arange(-60, 62, dtype=float)
    log_q = -x * x / (2 * sigma ** 2)
    log_q -= special.logsumexp(log_q)
    log_p = -(x - 1) ** 2 / (2 * sigma ** 2)
    log_p -= special.logsumexp(log_p)
    log_mixed = np.logaddexp(math.log1p(-q) + log_q, math.log(q) + log_p)
    return log_mixed - log_q, np.exp(log_mixed)


@pytest.mark.parametrize("sigma, q, h", [(2.0, 0.01, 1e-4), (2.0, 0.01, 3.3e-6), (0.8, 0.1, 1e-3), (0.8, 1e-4, 2e-6),
                                        (0.8, 1e-4, 3e-7), (5.0, 1e-3, 1e-5)])
def test_rounded_atom_law_is_bracketed_by_its_discretisations(sigma: float, q: float, h: float) -> None:
    (removal, _, _), = PoissonSubsample(q)(DiscreteGaussian(sigma)).loss_parts()
    assert removal.merged_lower
    j_lo, j_hi = index_range(removal, h, 1e-20)
    upper, lower = discretize(removal, h, j_lo, j_hi)
    x, w = _subsampled_dg_atoms(sigma, q)
    eps = np.concatenate((np.linspace(-0.02, 0.3, 400), x[(x > -0.02) & (x < 3.0)]))
    truth = _profile(x, w, 0.0, eps)
    up = _profile(upper.losses, upper.masses, upper.p_inf, eps)
    low = _profile(lower.losses, lower.masses, lower.p_inf, eps)
    slack = 1e-12 * np.maximum(truth, 1e-300) + 1e-30
    assert np.all(up >= truth - slack)
    assert np.all(low <= truth + slack)
    # Moved down by less than a cell (but the atoms above the grid, taken at its top): its
    # profile at eps is at least the truth's at eps + h.
    above = float(w[x > lower.losses[-1]].sum())
    assert np.all(low >= _profile(x, w, 0.0, eps + h) - slack - 1e-18 - above)


@pytest.mark.parametrize("sigma, q, h", [(0.8, 1e-4, 2e-6), (5.0, 1e-4, 3e-6), (2.0, 0.01, 1e-4)])
def test_merged_lower_keeps_the_q_mass_that_rounding_down_adds(sigma: float, q: float, h: float) -> None:
    (removal, _, _), = PoissonSubsample(q)(DiscreteGaussian(sigma)).loss_parts()
    j_lo, j_hi = index_range(removal, h, 1e-20)
    _, lower = discretize(removal, h, j_lo, j_hi)
    rounded = rounded_down(removal, h, j_lo, j_hi - j_lo + 1)
    x, w = _subsampled_dg_atoms(sigma, q)
    inside = (x >= lower.losses[0]) & (x <= lower.losses[-1])
    q_true = float(np.sum(w[inside] * np.exp(-x[inside])))

    def q_mass(pld) -> float:
        return float(np.sum(pld.masses * np.exp(-pld.losses)))
    excess_rounded = q_mass(rounded) / q_true - 1.0
    excess_merged = abs(q_mass(lower) / q_true - 1.0)
    assert excess_rounded > 0.1 * h
    # Only the run at the bottom of the support, with no atom below to close it, is rounded
    # down: at q = 1e-4 the atoms pile up towards log(1 - q) (0.14 of rounding's excess).
    assert excess_merged < 0.2 * excess_rounded
    # The mean loss falls by a share of what rounding down takes from it.
    mean = float(np.sum(w[inside] * x[inside]))
    merged_fall = mean - float(np.sum(lower.masses * lower.losses))
    assert merged_fall < 0.2 * (mean - float(np.sum(rounded.masses * rounded.losses)))


def test_rounded_down_keeps_atoms_on_grid_points_and_drops_those_below() -> None:
    (removal, _, _), = PoissonSubsample(0.05)(DiscreteLaplace(1.0)).loss_parts()
    v = removal.values
    h = float(v[1]) / 7.0     # the top atom a few ulps above a grid point, so one cell down
    pld = rounded_down(removal, h, 0, 12)
    # The lower atom (negative loss) lies below the grid and is dropped; the upper one,
    # less its rounding allowance, lands on the grid point at or below it.
    assert pld.masses.sum() == pytest.approx(float(removal.p_mass[1]), rel=1e-15)
    at = int(np.flatnonzero(pld.masses)[0])
    assert pld.losses[at] <= v[1] - removal.value_error < pld.losses[at] + h


@pytest.mark.parametrize("h", [1e-5, 3e-6, 1e-6, 1e-7])
def test_a_heavy_lowest_atom_is_lifted_at_second_order(h: float) -> None:
    # Poisson-subsampled KaryRandomizedResponse(0.1, 10) at q = 1e-4: 91% of the P-mass sits in
    # the lowest atom, at log(1 - q + q/91), which no atom below can bring down to its lattice
    # point. Rounded down, it moved the mean by 8.55e-8 a step at h = 1e-6 and 1e-7 alike (a
    # first-order error that 1e6 steps made 0.09 in eps); lifted to the point above by a share
    # of the mass above it (merged.py), the lower PLD stays below the profile, and its shortfall
    # of the log moment generating function at lam = 30 falls with h (5.0e-6, 2.2e-7, 7.8e-8
    # and 2.7e-9 at these h) where rounding down left 3.0e-5, then 2.6e-6 at every h below.
    from autoacct.zoo import KaryRandomizedResponse
    (removal, _, _), = PoissonSubsample(1e-4)(KaryRandomizedResponse(0.1, 10)).loss_parts()
    assert removal.merged_lower
    j_lo, j_hi = index_range(removal, h, 1e-20)
    _, lower = discretize(removal, h, j_lo, j_hi)
    x, w, _ = poisson_kary_rr_atoms(1e-4, 0.1, 10)
    eps = np.concatenate((np.linspace(-2e-4, 0.02, 800), x, x + h / 2))
    truth = _profile(x, w, 0.0, eps)
    low = _profile(lower.losses, lower.masses, lower.p_inf, eps)
    assert np.all(low <= truth * (1 + 1e-12) + 1e-30)
    lam = 30.0
    mgf = float(np.dot(lower.masses, np.exp(lam * lower.losses)))
    shortfall = math.log(float(np.dot(w, np.exp(lam * x)))) - math.log(mgf)
    assert 0.0 <= shortfall <= 0.6 * h


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.floats(1e-4, 1.0), st.floats(1e-4, 1.0)), min_size=2, max_size=5),
       st.floats(-8.0, -2.0), st.integers(0, 3))
def test_merged_lower_of_few_atoms_stays_below_the_profile(masses, log_h, heavy):
    # Any few atoms, one of them (``heavy``) given most of the mass, the lowest included: the
    # merged lower PLD, its last run lifted or rounded down, lies below the atoms' profile at
    # every eps (grid points, atoms and between), and the upper PLD above it.
    from autoacct.losses.atoms import AtomLoss
    p = np.array([a for a, _ in masses])
    q = np.array([b for _, b in masses])
    p[heavy % len(p)] *= 100.0
    p, q = p / p.sum(), q / q.sum()
    values = np.log(p / q)
    law = AtomLoss(("few-atoms", tuple(p), tuple(q)), values, p, q, merged_lower=True)
    h = 10.0 ** log_h
    j_lo, j_hi = index_range(law, h, 1e-20)
    if j_hi - j_lo > 1 << 20:
        return
    upper, lower = discretize(law, h, j_lo, j_hi)
    eps = np.concatenate((np.linspace(values.min() - 2 * h, values.max() + 2 * h, 301), values, values - h / 3))
    truth = _profile(values, p, 0.0, eps)
    slack = 1e-12 * np.maximum(truth, 1e-300) + 1e-30
    assert np.all(_profile(lower.losses, lower.masses, lower.p_inf, eps) <= truth + slack)
    assert np.all(_profile(upper.losses, upper.masses, upper.p_inf, eps) >= truth - slack)
