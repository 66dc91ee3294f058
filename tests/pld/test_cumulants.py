"""The exponent grid of cumulant tables and tilts (autoacct/pld/cumulants.py)."""

from __future__ import annotations

import gc
import math
import warnings
import weakref
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from closed_forms import poisson_gaussian_lattice_delta

import autoacct
from autoacct.errors import AccuracyWarning
from autoacct.pld import compose, cumulants
from autoacct.pld.components import Component
from autoacct.pld.cumulants import THETAS, exponents
from autoacct.pld.discretize import DiscretePLD


@pytest.mark.parametrize("h", [1e-2, 1e-4, 3e-7, 1e-10])
def test_exponents_leave_no_gap_up_to_the_lattice(h):
    # The best tilt of an answer near eps is about (eps - mean) / variance, which on the
    # lattice of a tiny eps lies far above THETAS[-1]: the grid must reach 1 / h with steps no
    # coarser than THETAS' own (8 per decade), symmetric, with 0 once.
    grid = exponents(h)
    assert np.array_equal(grid, -grid[::-1])
    assert np.count_nonzero(grid == 0.0) == 1
    pos = grid[grid > 0]
    assert pos[0] == THETAS[1] and pos[-1] >= 1e4 / h
    inside = pos[pos <= max(1.0 / h, THETAS[-1]) * (1 + 1e-12)]
    assert inside[-1] >= min(1.0 / h, THETAS[-1]) * (1 - 1e-12)
    assert float(np.max(inside[1:] / inside[:-1])) <= 10 ** (1 / 8) * (1 + 1e-9)


def test_a_tilt_between_the_fractions_of_the_best_one_narrows_a_heavy_tailed_window(monkeypatch):
    # Sweep case 13 (benchmarks/sweep.py): the Chernoff-optimal tilt needs 2e5 points, the
    # heavy right tail of the removal loss widening the tilted law's window, and half of it
    # just misses the rounding budget; the exponent between them meets it on about 2.2e4.
    # Against an independent lattice composition of the removal pair (closed_forms, second
    # order in its spacing: 1.2e-3 of delta between spacings 1e-5 and 5e-6, the bracket's
    # ends 3.5e-3 and 4.9e-3 of delta away from delta at 5e-6; the addition pair's delta is
    # 1e-4 of it).
    q, sigma, k, delta = 0.0005029951714075004, 1.7805484294961345, 262, 1.4649856434989247e-10

    def largest_window() -> tuple[int, tuple[float, float]]:
        seen = []
        real = compose.window

        def spy(comps, h, lam, log_eta):
            lo, hi = real(comps, h, lam, log_eta)
            seen.append(hi - lo + 1)
            return lo, hi
        with monkeypatch.context() as m:
            m.setattr(compose, "window", spy)
            with warnings.catch_warnings():
                warnings.simplefilter("error", AccuracyWarning)
                bounds = autoacct.dpsgd(sample_rate=q, noise_multiplier=sigma, steps=k).epsilon_bounds(delta)
        return max(seen), bounds

    points, (lower, upper) = largest_window()
    assert points <= 5e4
    assert upper - lower <= 1e-3 * upper
    values, left_out = poisson_gaussian_lattice_delta(q, sigma, k, np.array([lower, upper]), 5e-6, lam=500.0,
                                                      top=0.07, points=1 << 22)
    assert left_out < 1e-6 * delta
    assert values[0] >= delta * (1 + 1e-3) and values[1] <= delta * (1 - 1e-3)
    # Only the fractions of the optimal tilt: the window is four times as long.
    monkeypatch.setattr(cumulants, "MUCH_NARROWER", 0.0)
    assert largest_window()[0] > 4 * points


def _exact_log_mgf(pld, theta: float) -> mpmath.mpf:
    """log sum_i w_i e^{theta (start + i) h} in 40-digit mpmath, from the exact doubles."""
    with mpmath.workdps(40):
        h, t = mpmath.mpf(pld.h), mpmath.mpf(theta)
        return mpmath.log(mpmath.fsum(mpmath.mpf(float(w)) * mpmath.exp(t * (pld.start + i) * h)
                                      for i, w in enumerate(pld.masses) if w > 0))


@pytest.mark.parametrize("count", [1, 3])
def test_cumulants_are_never_below_the_exact_ones(count):
    # The log-sum-exp of a table rounds by up to 1315 u below the exact log moment generating
    # function (Gaussian mu = 3 on h = 0.01, at theta = -75); every use of K bounds a mass from
    # above, so the table carries its rounding (mgf.log_mgf_rounding), up, counted k times.
    from autoacct.losses import GaussianLoss
    from autoacct.pld.components import Component
    from autoacct.pld.discretize import discretize

    h = 0.01
    up, low = discretize(GaussianLoss(3.0), h, -4050, 4050)
    theta = np.array([-177.82794100389228, -74.98942093324558, -13.33521432163324, 7.498942093324558,
                      42.169650342858226])
    k = cumulants.cumulant([Component(up, low, count)], "upper", theta)
    for t, value in zip(theta, k):
        exact = count * _exact_log_mgf(up, float(t))
        assert mpmath.mpf(float(value)) >= exact, (t, float(value), float(exact))
        assert float(value - exact) <= 1e-10 * count * abs(float(exact))


def test_a_table_keeps_its_components_support_but_not_its_components():
    # A Components keeps its cumulant tables (Components.cumulant); a table that kept the
    # Components back closed a reference cycle, so every composed law of a mechanism waited
    # for the garbage collector. The table keeps what it reads of them: their counts and the
    # composed upper PLDs' support ends, sum_i k_i (start_i + (0 or n_i - 1)) h_i (exact in
    # fractions to within the floats' rounding), its own and a recounted one's.
    from autoacct.losses import GaussianLoss
    from autoacct.pld.components import Component
    from autoacct.pld.discretize import discretize

    h = 0.01
    up, low = discretize(GaussianLoss(3.0), h, -4050, 4050)
    gc.collect()
    gc.disable()
    try:
        comp = Component(up, low, 3)
        freed = weakref.ref(comp)
        comps = cumulants.Components([comp])
        tables = [comps.cumulant("upper", 0.5), comps.recounted(7).cumulant("upper", 0.5)]
        del comp, comps
        assert freed() is None
    finally:
        gc.enable()
    for table, count in zip(tables, (3, 7)):
        assert table.counts == (count,)
        for end, index in zip(table.support, (up.start, up.start + len(up.masses) - 1)):
            exact = Fraction(count) * index * Fraction(h)
            assert abs(Fraction(end) - exact) <= abs(exact) * Fraction(1, 2 ** 50)


def _two_passes(f, lo: int, hi: int) -> int:
    """The search best_index made: every third index, then the best one's neighbours."""
    coarse = np.arange(lo, hi + 1, 3)
    j = int(coarse[int(np.argmin(f(coarse)))])
    near = np.arange(max(lo, j - 2), min(hi, j + 2) + 1)
    return int(near[int(np.argmin(f(near)))])


@pytest.mark.parametrize("seed", range(40))
def test_best_value_reads_f_once_and_chooses_as_the_two_passes(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    table = rng.standard_normal(n) + (np.linspace(-3, 3, n) - rng.uniform(-3, 3)) ** 2
    if seed % 4 == 0:
        table[rng.integers(0, n, 3)] = np.nan  # an undefined entry is chosen first, as before
    lo = int(rng.integers(0, n))
    hi = int(rng.integers(lo, n))
    calls = []

    def f(i: np.ndarray) -> np.ndarray:
        calls.append(i)
        return table[i] * 1.0

    i, value = cumulants.best_value(f, lo, hi)
    assert len(calls) == 1
    assert i == _two_passes(lambda j: table[j], lo, hi)
    assert value == table[i] or (np.isnan(value) and np.isnan(table[i]))


def test_a_window_is_read_from_its_table_once(monkeypatch):
    # The levels' top composition asks for its window twice (self_compose, then convolve):
    # the second time it is read from the table, with the same value.
    law = DiscretePLD(0.01, -30, np.full(80, 1.0 / 80), 0.0)
    comps = cumulants.Components([Component(law, law, 400)])
    calls = []
    windows = cumulants._windows

    def counted(*args):
        calls.append(args)
        return windows(*args)
    monkeypatch.setattr(cumulants, "_windows", counted)
    first = cumulants.window(comps, 0.01, 0.5, math.log(1e-20))
    assert cumulants.window(comps, 0.01, 0.5, math.log(1e-20)) == first
    assert len(calls) == 1
    assert cumulants.window(comps, 0.01, 0.5, math.log(1e-30)) != first and len(calls) == 2
