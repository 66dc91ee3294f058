"""The exponent grid of cumulant tables and tilts (autoacct/pld/cumulants.py)."""

from __future__ import annotations

import numpy as np
import pytest

from autoacct.pld.cumulants import THETAS, exponents


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
