"""The bounds on what the windows of random allocation's epoch laws drop (allocation_windows),
against exact sums: the outside masses of sums of iid draws from a lattice vector, by direct
convolution, and the mass a windowed binary power lost against the unwindowed one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from autoacct.subsampling.allocation_windows import dropped_mass


def _outside(vector: np.ndarray, j: int, first: int, last: float) -> float:
    """The mass of j iid draws' index sum outside [first, last], by repeated direct convolution."""
    law = np.array([1.0])
    for _ in range(j):
        law = np.convolve(law, vector)
    n = np.arange(len(law))
    return float(np.sum(law[(n < first) | (n > last)]))


def test_windows_count_every_copy_of_a_partial_sum() -> None:
    # A square of j summands is windowed once but enters the powered vector floor(k / j) times;
    # the union bound must count every copy. Narrow windows (about 2.5 standard deviations) make
    # the drops measurable: the mass the windowed power lost (against the exact power) is below
    # the per-window exact outside masses summed with their copies, and above their plain sum;
    # and below each window's cut (what its product dropped, from the computed product) summed
    # with the copies.
    from autoacct.subsampling.allocation_pld import Lattice
    from autoacct.subsampling.allocation_vectors import Vec, power

    k, d = 31, 0.1
    n = np.arange(21)
    vector = np.exp(-0.5 * ((n - 10) / 3.0) ** 2)
    vector /= vector.sum()
    grid = Lattice(d, 0, 2.5 * 0.3 / 12.0)
    windows: list = []
    kept = power(Vec.of(vector, np.zeros_like(vector)), k, grid.window, windows)
    lost = 1.0 - float(np.sum(kept.values))
    assert sorted(c for j, _, _, c, _ in windows if j & (j - 1) == 0) == [1, 3, 7, 15]
    per_window = [(_outside(vector, j, lo, hi), c) for j, lo, hi, c, _ in windows]
    assert sum(m * c for m, c in per_window) >= lost > 0.01
    assert sum(m for m, _ in per_window) < lost
    assert sum(c * cut for _, _, _, c, cut in windows) >= lost
    assert lost <= dropped_mass(vector, windows, None, d, False)
    # Each window's Chernoff bound from the vector alone (no summands' law: sigma None; no cut)
    # is above its exact outside mass, and within 20 times of it for these near-normal sums.
    for (j, lo, hi, _, _), (m, _) in zip(windows, per_window):
        assert m <= dropped_mass(vector, [(j, lo, hi, 1, math.inf)], None, d, False) <= 20.0 * m


@pytest.mark.parametrize("hats", [False, True])
def test_window_chernoff_bounds_are_above_the_exact_outside_mass(hats: bool) -> None:
    # One summand's cell (or hat) masses at sigma = 2, sums of j = 8 and 32 of them and windows
    # of 4.5 to 8 standard deviations each side: the exact outside mass (direct convolution) is
    # below the bound of the vector alone. Chernoff's bound is loose against the summand's heavy
    # right tail (100 to 1e5 times here); the epoch's windows reach 12 standard deviations and a
    # whole summand's range beyond the mean, where it is below 1e-16 at sigma = 2. (The exact sums
    # cut each summand 40 standard deviations above its mean, where its mass beyond is about
    # 1e-10, far inside the gap.)
    from autoacct.subsampling.allocation_cells import summand_masses
    from autoacct.subsampling.allocation_pld import lattice

    grid = lattice(2.0, 100)
    assert grid is not None
    vec = summand_masses(2.0, grid.spacing, grid.top + 1)
    values, err = vec["w" if hats else "m"]
    upper = values + err
    n = np.arange(len(upper))
    mean = float(np.sum(n * upper))
    sd = math.sqrt(float(np.sum((n - mean) ** 2 * upper)))
    for j, z in ((8, 4.5), (8, 8.0), (32, 6.0)):
        first, last = int(j * mean - z * math.sqrt(j) * sd), int(j * mean + z * math.sqrt(j) * sd)
        exact = _outside(upper[:int(mean + 40 * sd)], j, first, last)
        bound = dropped_mass(upper, [(j, first, last, 1, math.inf)], None, grid.spacing, hats)
        assert 1e-9 < exact <= bound < 0.2


def test_a_products_cut_is_above_the_exact_mass_outside_its_window() -> None:
    # Two vectors long enough for the FFT path (heads of 2048 entries, the rest by FFT), taken
    # as exact data, multiplied and cut to a window that drops about 1e-4 of the mass at each
    # end: the product's cut is at least the exact mass outside (direct convolution, whose own
    # rounding is 1e-19 here) and within its relative slack (1e-9) and 1e-14 of it.
    from autoacct.subsampling.allocation_vectors import Vec, product

    rng = np.random.default_rng(7)
    x = np.arange(3000.0)
    a = np.exp(-0.5 * ((x - 1500.0) / 300.0) ** 2) * rng.uniform(0.5, 1.5, x.size)
    b = np.exp(-x / 400.0) * rng.uniform(0.5, 1.5, x.size)
    a, b = a / a.sum(), b / b.sum()
    exact = np.convolve(a, b)
    cum = np.cumsum(exact)
    lo, hi = int(np.searchsorted(cum, 1e-4)), int(np.searchsorted(cum, 1.0 - 1e-4))
    outside = float(np.sum(exact[:lo]) + np.sum(exact[hi + 1:]))
    slack = 4.0 * exact.size * 2.0 ** -52 * outside
    prod = product(Vec.of(a, np.zeros_like(a)), Vec.of(b, np.zeros_like(b)), (lo, hi))
    assert outside > 1e-4
    assert outside + slack <= prod.dropped <= outside * (1.0 + 2e-9) + 1e-14


@pytest.mark.parametrize("fft_like", [False, True])
def test_a_products_cut_holds_for_factors_with_errors(fft_like: bool) -> None:
    # True factors a, b and computed ones a^ = a + e_a, b^ = b + e_b (clipped at 0, which only
    # shrinks the errors), the errors declared as data errors (1- and inf-norm) or as FFT-like
    # ones (2-norm): the cut is at least the true product's exact mass outside the window, and
    # the errors' share in it is far below sqrt(m) |e|_2 over the m entries outside (the
    # factors' errors meet the other factor's mass beyond the window, which is small).
    from autoacct.subsampling.allocation_vectors import Vec, product

    rng = np.random.default_rng(11)
    x = np.arange(3000.0)
    a = np.exp(-0.5 * ((x - 1500.0) / 300.0) ** 2)
    b = np.exp(-0.5 * ((x - 1000.0) / 200.0) ** 2)
    a, b = a / a.sum(), b / b.sum()
    exact = np.convolve(a, b)
    cum = np.cumsum(exact)
    lo, hi = int(np.searchsorted(cum, 1e-6)), int(np.searchsorted(cum, 1.0 - 1e-6))
    outside = float(np.sum(exact[:lo]) + np.sum(exact[hi + 1:]))
    vecs = []
    for v in (a, b):
        e = rng.normal(size=v.size) * 1e-12
        v_hat = np.maximum(v + e, 0.0)
        err = np.abs(v_hat - v)
        if fft_like:
            vecs.append(Vec(v_hat, 0, 0.0, 0.0, float(np.sqrt(np.sum(err * err))) * 1.01))
        else:
            vecs.append(Vec(v_hat, 0, float(np.sum(err)) * 1.01, float(np.max(err)) * 1.01, 0.0))
    prod = product(vecs[0], vecs[1], (lo, hi))
    m_out = exact.size - (hi - lo + 1)
    plain = np.sqrt(m_out) * np.sqrt(np.sum((1e-12 * np.ones(3000)) ** 2))
    assert outside > 1e-7
    assert outside * (1.0 + 1e-9) <= prod.dropped <= outside + 0.1 * plain
