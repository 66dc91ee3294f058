"""Lattice vectors with error bounds and their products (allocation_vectors), against exact
arithmetic: rational convolutions for the direct sums, 64-bit-mantissa convolutions of the true
vectors for the products' entrywise bounds.
"""

from __future__ import annotations

import numpy as np
import pytest


def test_direct_products_are_within_their_rounding_bound() -> None:
    # Against exact rational convolution: every entry within gamma_m of its products' sum.
    from fractions import Fraction

    from autoacct.subsampling.allocation_vectors import _direct

    rng = np.random.default_rng(3)
    ha, hb = rng.random(53) * 1e-3, rng.random(40)
    got, m = _direct(ha, hb)
    exact = [sum((Fraction(float(ha[i])) * Fraction(float(hb[k - i])) for i in range(len(ha))
                  if 0 <= k - i < len(hb)), Fraction(0)) for k in range(len(ha) + len(hb) - 1)]
    gamma = m * 2.0 ** -52 / (1.0 - m * 2.0 ** -52)
    assert m <= 16 + 2
    for g, e in zip(got, exact):
        assert abs(Fraction(float(g)) - e) <= Fraction(gamma) * e


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_products_relative_bound_holds_entry_by_entry(seed: int) -> None:
    # Two vectors of 3000 entries (past the 2048 of the direct heads: FFT tails too), masses
    # from 1e-3 down to 1e-40, given with relative errors rel and absolute ones dabs; their
    # computed product against the product of the true vectors in 64-bit-mantissa floats
    # (each sum within 1e-15 of its terms relatively, far inside the bound's gamma of 23 u).
    from autoacct.subsampling.allocation_vectors import Vec, product

    rng = np.random.default_rng(seed)
    n = 3000
    true = [np.exp(-rng.uniform(0.0, 1.0, n).cumsum() * 0.03 - 7.0) for _ in range(2)]
    true = [x / x.sum() * 0.999 for x in true]
    vecs = []
    for x in true:
        rel, dabs = 1e-13, 1e-30
        # (relative errors near their bound and of one sign: the product's are then near twice)
        noisy = x * (1.0 + rel * rng.uniform(0.9, 1.0, n)) + dabs * rng.uniform(-1.0, 1.0, n)
        vecs.append(Vec(np.maximum(noisy, 0.0), 0, float(np.sum(np.abs(noisy - x))) * 1.01,
                         float(np.max(np.abs(noisy - x))) * 1.01, 0.0, rel * 1.01, dabs * 1.01))
    got = product(vecs[0], vecs[1], (0, 2 * n))
    exact = np.convolve(true[0].astype(np.longdouble), true[1].astype(np.longdouble))
    exact = exact[got.start:got.start + len(got.values)]
    lo, up = got.lower_values().astype(np.longdouble), got.upper_values().astype(np.longdouble)
    assert np.all(lo <= exact * (1 + 1e-15)) and np.all(exact * (1 - 1e-15) <= up)
    # In the tail the relative bound binds: entries of 1e-14 and below are pinned far closer
    # than by the absolute bound (the largest entries' rounding share).
    tail = (exact > 1e-30) & (exact < 1e-14)
    assert tail.sum() > 100 and np.all((up - lo)[tail] < 0.01 * got.entry_error())
