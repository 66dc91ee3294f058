"""The merged end of a spike law (autoacct/pld/garbling.py), against the law's exact profile.

Truth: the Poisson-subsampled Gaussian's hockey-stick profile in closed form (q H_gamma of the
Gaussian pair, Balle et al. 2018), shifted with the law where the lattice's offset moves it. A
discrete PLD with masses w_i at x_i has profile sum_i w_i (1 - e^{eps - x_i})_+, computed here
from that definition.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from autoacct.losses import GaussianLoss
from autoacct.losses.laplace import LaplaceLoss
from autoacct.losses.shifted import ShiftedLoss
from autoacct.pld import discretize as discretize_module
from autoacct.pld import garbling
from autoacct.pld.discretize import discretize
from autoacct.pld.grid import index_range
from autoacct.subsampling.poisson import PoissonAddLoss, PoissonRemoveLoss

#: Relative slack for floating-point rounding in the profiles compared.
_ROUNDING = 1e-9


def _pld_profile(pld, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sum_{x_i > eps} w_i - e^eps sum_{x_i > eps} w_i e^{-x_i} (plus the mass at +inf) by suffix
    sums, and a bound on the rounding of that difference (the laws have millions of points)."""
    x, w = pld.losses, pld.masses
    sw = np.append(np.cumsum(w[::-1])[::-1], 0.0)
    sq = np.append(np.cumsum((w * np.exp(-x))[::-1])[::-1], 0.0)
    i = np.searchsorted(x, eps, side="right")
    return sw[i] - np.exp(eps) * sq[i] + pld.p_inf, 1e-13 * (sw[i] + pld.p_inf)


def _below(low, loss, eps: np.ndarray) -> bool:
    value, rounding = _pld_profile(low, eps)
    truth = np.asarray(loss.profile(eps), dtype=float)
    return bool(np.all(value - low.deficit <= truth * (1 + _ROUNDING) + rounding))


def _spike_law(q: float, sigma: float, add: bool):
    return (PoissonAddLoss if add else PoissonRemoveLoss)(GaussianLoss(1.0 / sigma), q)


def _end_star(loss, h: float, add: bool) -> float:
    """L* = log(P(R) / Q(R)) of the cell-wide region R at the spike's support end."""
    a, b = loss.quantile_range(1e-18)
    lo = b - h if add else a
    p, q = loss.cell_masses(np.array([lo, lo + h]))
    return math.log(p[0] / q[0])


def _aligned(loss, h: float, add: bool):
    """The law moved so that its end region's L* falls on the lattice hZ."""
    star = _end_star(loss, h, add)
    return ShiftedLoss(loss, star - math.floor(star / h) * h)


def _discretised(loss, h: float, eta: float = 1e-18):
    j_lo, j_hi = index_range(loss, h, eta)
    return discretize(loss, h, j_lo, j_hi)


def _cells(loss, h: float):
    """The grid points and the cell masses merged_end reads, as the discretiser makes them."""
    j_lo, j_hi = index_range(loss, h, 1e-18)
    g, m_p, m_q, _, _, halves = discretize_module._connect_the_dots(loss, h, j_lo, j_hi - j_lo + 1, halves=True)
    return g, m_p, m_q, halves


@pytest.fixture
def merges(monkeypatch):
    """The ends merged while a test runs (a spy on discretize's call of merged_end)."""
    made: list = []

    def spy(*args):
        out = garbling.merged_end(*args)
        made.append(out)
        return out
    monkeypatch.setattr(discretize_module, "merged_end", spy)
    return made


def _near_end(loss, h: float) -> np.ndarray:
    """eps values where a lower PLD that puts mass above the spike would show: dense over the
    cells around each support end, and over the whole range."""
    a, b = loss.quantile_range(1e-18)
    return np.concatenate((np.linspace(a - 3 * h, a + 40 * h, 400), np.linspace(b - 40 * h, b + 3 * h, 400),
                           np.linspace(a, b, 400)))


@pytest.mark.parametrize("add", [False, True])
@pytest.mark.parametrize("q, sigma, h", [(1e-5, 0.3, 4.3e-5), (1e-5, 0.3, 1.08e-5), (5e-5, 0.4, 2e-4),
                                         (1e-4, 0.5, 1e-4)])
def test_merged_spike_lies_below_the_profile(q, sigma, h, add, merges):
    loss = _aligned(_spike_law(q, sigma, add), h, add)
    up, low = _discretised(loss, h)
    assert merges and merges[-1] is not None and merges[-1].masses.sum() > 0.5
    eps = _near_end(loss, h)
    assert _below(low, loss, eps)
    value, rounding = _pld_profile(up, eps)
    assert np.all(value + up.deficit >= np.asarray(loss.profile(eps), dtype=float) * (1 - _ROUNDING) - rounding)


@pytest.mark.parametrize("add", [False, True])
def test_merged_spike_keeps_the_mean_to_second_order(add, monkeypatch):
    """q = 1e-5, sigma = 0.3, cells of 4.3e-5: 95% of the P-mass lies within 1e-5 of the
    support end. Rounded down, as the second-order construction must do there, the lower PLD's
    mean falls short of the upper PLD's (which keeps the mean) by a sizeable share of a cell a
    copy; merged into atoms on the lattice, by under 1e-3 of a cell."""
    h = 4.3e-5
    loss = _aligned(_spike_law(1e-5, 0.3, add), h, add)
    up, low = _discretised(loss, h)
    gap = float(up.masses @ up.losses - low.masses @ low.losses)
    assert 0.0 <= gap <= 1e-3 * h
    monkeypatch.setattr(discretize_module, "merged_end", lambda *args: None)
    # A spacing a part in 1e12 off, so that the cache of discretised laws (keyed by the
    # spacing) makes the law again rather than returning the merged one.
    other = h * (1 + 1e-12)
    up_plain, low_plain = _discretised(_aligned(_spike_law(1e-5, 0.3, add), other, add), other)
    plain_gap = float(up_plain.masses @ up_plain.losses - low_plain.masses @ low_plain.losses)
    assert plain_gap > 0.1 * h


def test_merged_atoms_sit_on_the_walked_end():
    """The atoms are at the grid points next inward of the spike's end, in order, and together
    with the rest of the law they hold the law's P-mass (up to rounding)."""
    h = 1.08e-5
    loss = _aligned(_spike_law(1e-5, 0.3, False), h, False)
    g, m_p, m_q, halves = _cells(loss, h)
    merged = garbling.merged_end(loss, g, m_p, m_q, halves)
    assert merged is not None
    assert np.all(np.diff(merged.indices) > 0)  # walking up from the bottom end
    assert merged.cuts[1] == math.inf  # the top end has mass beyond the grid: not merged
    assert g[merged.indices[0]] <= merged.cuts[0] <= g[merged.indices[-1]] + garbling.REACH * h
    total = float(m_p.sum())
    assert merged.masses.sum() + merged.m_p.sum() == pytest.approx(total, rel=1e-12)
    assert merged.masses.sum() > 0.9 * total


def test_a_law_without_a_spike_is_not_merged():
    loss = _spike_law(0.01, 1.5, False)
    h = 2e-3
    assert garbling.merged_end(loss, *_cells(loss, h)) is None


@settings(max_examples=10, deadline=None, derandomize=True)
@given(log_q=st.floats(-5.5, -4.0), sigma=st.floats(0.25, 0.5), log_h=st.floats(-4.6, -3.6),
       shift=st.floats(-0.3, 0.3), add=st.booleans())
def test_any_offset_stays_below_the_profile(log_q, sigma, log_h, shift, add):
    """Merging is valid wherever the lattice falls, the offset only decides how tight: lattices
    moved by up to 0.3 of a cell from the one that puts the end region's L* on a point (further
    off the walk's first region would reach beyond garbling.REACH cells, and nothing merges)."""
    h = 10.0 ** log_h
    base = _spike_law(10.0 ** log_q, sigma, add)
    star = _end_star(base, h, add) + shift * h
    loss = ShiftedLoss(base, star - math.floor(star / h) * h)
    up, low = _discretised(loss, h, 1e-12)
    assert _below(low, loss, _near_end(loss, h))


def _laplace_law(q: float, b: float, add: bool):
    return (PoissonAddLoss if add else PoissonRemoveLoss)(LaplaceLoss(b), q)


def _laplace_profile(q: float, b: float, add: bool, eps: np.ndarray) -> np.ndarray:
    """E_P[(1 - e^{eps - L})_+] of the Poisson-subsampled Laplace pair, by quadrature over the
    output o: with B = Lap(0, b) and M = (1 - q) B + q Lap(1, b), the loss log(M / B) is
    log(1 - q + q e^{(|o| - |o - 1|) / b}) (atoms for o <= 0 and o >= 1, smooth between), the
    pair (M, B) for removal and (B, M) for addition."""
    lo, hi = math.log1p(q * math.expm1(-1.0 / b)), math.log1p(q * math.expm1(1.0 / b))
    # P-masses of the two atoms and the P-density between them.
    atoms = [(1.0 - q) * 0.5 + q * 0.5 * math.exp(-1.0 / b), (1.0 - q) * 0.5 * math.exp(-1.0 / b) + q * 0.5]
    if add:
        atoms = [0.5, 0.5 * math.exp(-1.0 / b)]
        lo, hi = -lo, -hi

    def loss(o: float) -> float:
        ell = math.log1p(q * math.expm1((2.0 * o - 1.0) / b))
        return -ell if add else ell

    def density(o: float) -> float:
        base = math.exp(-o / b) / (2.0 * b)
        return base if add else (1.0 - q) * base + q * math.exp(-(1.0 - o) / b) / (2.0 * b)

    out = []
    for e in eps:
        value = sum(w * max(0.0, -math.expm1(e - v)) for w, v in zip(atoms, (lo, hi)))
        # The integrand is positive only on one side of the o at which the loss is e (the loss
        # is monotone in o): the integral runs over that side, where it is smooth.
        ratio = math.expm1(-e if add else e) / q
        kink = 0.5 * (1.0 + b * math.log1p(ratio)) if ratio > -1.0 else -math.inf
        a, z = (0.0, min(max(kink, 0.0), 1.0)) if add else (min(max(kink, 0.0), 1.0), 1.0)
        far = a if add else z  # where the integrand is largest
        if z - a > 1e-9:
            value += integrate.quad(lambda o, e=e: density(o) * max(0.0, -math.expm1(e - loss(o))), a, z,
                                    epsabs=0.0, epsrel=1e-13, limit=200)[0]
        elif z > a:
            # A sliver next to an atom, too narrow for quad (it warned at a width of 2.6e-16): its
            # width times the integrand's largest value, an upper estimate near 1e-18 that only
            # leaves the comparison a little more lenient.
            value += (z - a) * max(density(a), density(z)) * max(0.0, -math.expm1(e - loss(far)))
        out.append(value)
    return np.array(out)


@pytest.mark.parametrize("add", [False, True])
@pytest.mark.parametrize("q, b, h", [(1e-3, 1.0, 2.0 ** -18), (1e-3, 1.0, 2.0 ** -21), (0.02, 0.5, 2.0 ** -12)])
def test_atoms_at_both_support_ends_are_merged_below_the_profile(q, b, h, add, merges):
    """The Poisson-subsampled Laplace law has an atom at each support end (the outputs beyond
    0 and 1), off the lattice. Both are merged, and the lower PLD lies below the law's profile,
    here by quadrature over the output (not the law's own profile)."""
    loss = _laplace_law(q, b, add)
    up, low = _discretised(loss, h)
    assert merges and merges[-1] is not None and all(map(math.isfinite, merges[-1].cuts))
    a, z = loss.quantile_range(1e-18)
    eps = np.concatenate((np.linspace(a - 3 * h, a + 60 * h, 60), np.linspace(z - 60 * h, z + 3 * h, 60),
                          np.linspace(a, z, 60)))
    truth = _laplace_profile(q, b, add, eps)
    value, rounding = _pld_profile(low, eps)
    assert np.all(value - low.deficit <= truth * (1 + _ROUNDING) + rounding)
    value, rounding = _pld_profile(up, eps)
    assert np.all(value + up.deficit >= truth * (1 - _ROUNDING) - rounding)


@pytest.mark.parametrize("add", [False, True])
def test_merged_atoms_keep_the_mean_to_second_order(add):
    """q = 1e-3, b = 1, cells of 2^-18 (621 of them): the atoms at the support ends hold 68% of
    the P-mass. Bounded cell by cell, an atom inside a cell is rounded down by up to the cell,
    and the removal law's lower PLD's mean fell short of its upper PLD's (which keeps the mean)
    by 0.12 of a cell a copy (on this grid the addition law's atoms fell where that cost 1e-5 of
    a cell); 1e5 copies made such a shortfall a bracket 3% wide on eps(1e-8). Merged with the
    law next inward onto a lattice point, both fall short by 1.0e-5 of a cell."""
    h = 2.0 ** -18
    up, low = _discretised(_laplace_law(1e-3, 1.0, add), h)
    gap = float(up.masses @ up.losses - low.masses @ low.losses)
    assert 0.0 <= gap <= 1e-3 * h


def test_an_atom_on_the_lattice_is_not_merged(merges):
    """The Laplace mechanism's own atoms at +-1/b sit on its lattice, where the second-order
    construction keeps them exactly: merging would only move them."""
    loss = LaplaceLoss(0.5)
    _discretised(loss, 2.0 ** -10)
    assert merges == [None]


@settings(max_examples=8, deadline=None, derandomize=True)
@given(log_q=st.floats(-4.0, -1.0), b=st.floats(0.3, 3.0), log_h=st.floats(-21.0, -10.0), add=st.booleans())
def test_merged_atoms_stay_below_the_profile_wherever_the_lattice_falls(log_q, b, log_h, add):
    """Whatever the atoms' places in their cells and however far their regions reach."""
    q, h = 10.0 ** log_q, 2.0 ** log_h
    loss = _laplace_law(q, b, add)
    a, z = loss.quantile_range(1e-18)
    if (z - a) / h > 2e5:
        h = (z - a) / 2e5
    up, low = _discretised(loss, h)
    eps = np.concatenate((np.linspace(a - 3 * h, a + 30 * h, 20), np.linspace(z - 30 * h, z + 3 * h, 20),
                          np.linspace(a, z, 20)))
    value, rounding = _pld_profile(low, eps)
    assert np.all(value - low.deficit <= _laplace_profile(q, b, add, eps) * (1 + _ROUNDING) + rounding)
