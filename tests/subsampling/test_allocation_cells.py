"""One summand's cell masses and offsets (allocation_cells), against independent computations:
50-digit mpmath differences of normal tails for the thin cells' masses and shares and for each
cell's mean offset."""

from __future__ import annotations

import math

import numpy as np
import pytest

from autoacct.subsampling.allocation_cells import least_offset, summand_masses


@pytest.mark.parametrize("sigma", [0.5, 1.0, 5.0])
def test_thin_cells_are_within_their_bounds(sigma: float) -> None:
    # Each cell's masses m_k, mu_k and hat shares against 50-digit differences of normal
    # tails (mpmath): within the stated bounds, which are themselves within a
    # relative 1e-11 (the float route's shares were off by up to a relative 3e-7 at sigma = 1).
    import mpmath

    from autoacct.subsampling.allocation_cells import _THIN, _thin_cells
    from autoacct.subsampling.allocation_pld import SPACING

    d = SPACING * math.sqrt(math.expm1(1.0 / sigma ** 2))
    first = math.ceil(sigma / _THIN)
    ks = np.unique(np.geomspace(first, 3e5, 12).astype(int))
    got = _thin_cells(sigma, d, ks)
    with mpmath.workdps(50):
        s, dd = mpmath.mpf(sigma), mpmath.mpf(d)
        for i, k in enumerate(ks):
            # (upper tails: the cells lie right of 0, where distribution functions cancel)
            sf = [mpmath.ncdf(-(s * mpmath.log(dd * j) + shift)) for j in (int(k), int(k) + 1)
                  for shift in (1 / (2 * s), -1 / (2 * s))]
            m, mu = sf[0] - sf[2], sf[1] - sf[3]
            exact = {"m": m, "mu": mu, "right": mu / dd - int(k) * m, "left": (int(k) + 1) * m - mu / dd}
            for name, value in exact.items():
                v, err = got[name][0][i], got[name][1][i]
                assert abs(mpmath.mpf(float(v)) - value) <= err, (k, name)
                if value > 1e-290:
                    assert err <= 1e-11 * value, (k, name)


def test_hat_masses_carry_small_error_bounds() -> None:
    # sigma = 1, t = 100's lattice: the hat masses' and their first moments' summed error bounds
    # (5.9e-13 and 5.6e-11 before the thin cells' quadrature; the first moments weigh a
    # cell's error by its l, up to 1800) are now at rounding level.
    from autoacct.subsampling.allocation_pld import lattice

    grid = lattice(1.0, 100)
    assert grid is not None
    vec = summand_masses(1.0, grid.spacing, grid.top + 1)
    assert float(np.sum(vec["w"][1])) < 1e-14
    assert float(np.sum(vec["xw"][1])) < 1e-14


def _cell_offset(k: int, d: float, sigma: float):
    """E_Q[l - x_k | l in C_k] = (P_1(C_k) - x_k Q(C_k)) / Q(C_k), from 50-digit normal masses
    (under P_1, log l has mean 1/(2 s^2))."""
    import mpmath

    s = mpmath.mpf(sigma)
    with mpmath.workdps(50):
        lo, hi = mpmath.mpf(k) * d, mpmath.mpf(k + 1) * d
        a = -mpmath.inf if k == 0 else (mpmath.log(lo) + 1 / (2 * s * s)) * s
        b = (mpmath.log(hi) + 1 / (2 * s * s)) * s

        def mass(x, y):  # Phi(y) - Phi(x), either tail
            return mpmath.ncdf(-x) - mpmath.ncdf(-y) if x > 0 else mpmath.ncdf(y) - mpmath.ncdf(x)

        return mass(a - 1 / s, b - 1 / s) / mass(a, b) - lo


def _sampled_cells(sigma: float, d: float, top: int) -> set[int]:
    """A dense block of cells around the density's steepest descent, at e^(1 - 3/(2 s^2)), and
    near l = 1, and cells spread over the whole lattice, the first among them."""
    steepest = int(math.exp(1.0 - 1.5 / sigma ** 2) / d)
    cells = set(range(max(steepest - 60, 0), steepest + 60)) | set(range(max(int(1.0 / d) - 60, 0), int(1.0 / d) + 60))
    return cells | {int(k) for k in np.unique(np.geomspace(1, top - 1, 60).astype(int))} | {0}


@pytest.mark.parametrize("sigma", [0.8, 0.9, 1.0, 2.0, 5.0, 20.0])
def test_least_offset_is_below_every_cells_mean_offset_and_near_the_least(sigma: float) -> None:
    # Each cell's mean offset against 50-digit normal masses, on the cells of _sampled_cells.
    from autoacct.subsampling.allocation_pld import lattice

    grid = lattice(sigma, 2)
    assert grid is not None
    d = grid.spacing
    bound = least_offset(sigma, d)
    least = min(_cell_offset(k, d, sigma) for k in _sampled_cells(sigma, d, grid.top))
    assert 0.0 < bound <= least
    # And within a thousandth of a cell of the least offset found (about half a cell).
    assert least - bound <= 1e-3 * d


@pytest.mark.parametrize("sigma", [0.8, 1.0, 2.0, 5.0, 20.0])
def test_offset_minorant_is_convex_and_below_every_cells_mean_offset(sigma: float) -> None:
    # The minorant at each sampled cell's left end (those of the lattice, below its top) lies
    # below its 50-digit mean offset, its slopes never fall, and it drops below the least
    # offset by its rounding allowance at most. Near l = 1 (the summand's mode, where the sums'
    # tails sit) it lies within 1e-3 of a cell of the offsets there: at sigma = 5 and 20 that is
    # 2.8e-3 d and 1.2e-2 d above the least offset.
    from autoacct.subsampling.allocation_cells import offset_minorant
    from autoacct.subsampling.allocation_pld import lattice

    grid = lattice(sigma, 2)
    assert grid is not None
    d = grid.spacing
    xs, ys = offset_minorant(sigma, d, grid.top + 1)
    assert xs[0] == 0.0 and np.all(np.diff(xs) > 0.0)
    assert np.all(np.diff(np.diff(ys) / np.diff(xs)) >= 0.0)
    assert np.all(ys >= least_offset(sigma, d) - 1e-9 * d)
    cells = sorted(k for k in _sampled_cells(sigma, d, grid.top) if k < grid.top)
    exact = np.array([float(_cell_offset(k, d, sigma)) for k in cells])
    assert np.all(np.interp(np.array(cells) * d, xs, ys) <= exact)
    near_one = [i for i, k in enumerate(cells) if abs(k * d - 1.0) <= 0.05]
    gap = exact[near_one] - np.interp(np.array(cells)[near_one] * d, xs, ys)
    if sigma >= 2.0:
        assert np.all(gap <= 1e-3 * d)
    if sigma >= 5.0:
        assert float(np.min(np.interp(np.array(cells)[near_one] * d, xs, ys))) > least_offset(sigma, d) + 2e-3 * d


def test_overflow_masses_are_above_the_normal_tails() -> None:
    import mpmath

    from autoacct.subsampling.allocation_cells import overflow_masses

    for sigma, x in ((2.0, 62.0), (0.8, 13800.0), (20.0, 1.6)):
        q_over, p_over = overflow_masses(sigma, x / 1000.0, 1000)
        with mpmath.workdps(50):
            a = sigma * mpmath.log(mpmath.mpf(x))
            q = mpmath.ncdf(-(a + 1 / (2 * mpmath.mpf(sigma))))
            p = mpmath.ncdf(-(a - 1 / (2 * mpmath.mpf(sigma))))
        assert float(q) <= q_over <= float(q) * (1 + 1e-12)
        assert float(p) <= p_over <= float(p) * (1 + 1e-12)
