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

from autoacct.losses import GaussianLoss
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
    assert g[merged.indices[0]] <= merged.cut <= g[merged.indices[-1]] + garbling.REACH * h
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
