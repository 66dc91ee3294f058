"""The greatest convex minorant's vertices (autoacct/pld/hull.py), against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from autoacct.pld import hull
from autoacct.pld.hull import lower_hull


def _brute_vertices(x: np.ndarray, y: np.ndarray) -> list[int]:
    """Point j is a vertex of the lower hull unless it lies strictly above the segment of some
    pair i < j < k (the first and the last point always are): O(n^3), exact in rationals."""
    from fractions import Fraction
    xs, ys = [Fraction(v) for v in x.tolist()], [Fraction(v) for v in y.tolist()]
    n = len(xs)
    out = []
    for j in range(n):
        above = any(ys[j] > ys[i] + (ys[k] - ys[i]) * (xs[j] - xs[i]) / (xs[k] - xs[i])
                    for i in range(j) for k in range(j + 1, n))
        if not above:
            out.append(j)
    return out


def _runs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.exp(np.sort(rng.uniform(-3.0, 3.0, n)))
    kind = seed % 3
    if kind == 0:
        y = np.cumsum(rng.normal(0.0, 1.0, n))  # a random walk: the array rounds settle it
    elif kind == 1:
        # A concave arch with noise: its points fall a few per round, so the chain finishes.
        y = -np.sqrt(np.abs(np.linspace(-1.0, 1.0, n))) + 1e-3 * rng.normal(size=n)
    else:
        y = 1e-19 * np.cumsum(rng.normal(size=n)) + 1e-23 * rng.normal(size=n)  # a tail's scale
    return x, y


@pytest.mark.parametrize("rounds", [0, hull.ARRAY_ROUNDS])  # the chain alone; as used
@pytest.mark.parametrize("seed", range(12))
def test_the_vertices_are_the_lower_hulls(monkeypatch, seed, rounds):
    monkeypatch.setattr(hull, "ARRAY_ROUNDS", rounds)
    x, y = _runs(seed, 40)
    got = lower_hull(x, y).tolist()
    # The brute force keeps a point that lies on a chord, as the rounds and the chain do.
    assert got == _brute_vertices(x, y)


def test_both_paths_give_the_same_vertices(monkeypatch):
    # The chain alone (no array rounds) and the array rounds alone (never handing over).
    for seed in range(30):
        x, y = _runs(seed, 300)
        monkeypatch.setattr(hull, "ARRAY_ROUNDS", 0)
        chain = lower_hull(x, y)
        monkeypatch.setattr(hull, "ARRAY_ROUNDS", 10 ** 6)
        rounds = lower_hull(x, y)
        assert np.array_equal(chain, rounds)
        assert chain[0] == 0 and chain[-1] == len(x) - 1
        # Convex: the slopes between consecutive vertices do not decrease.
        s = np.diff(y[chain]) / np.diff(x[chain])
        assert np.all(np.diff(s) >= 0.0)
