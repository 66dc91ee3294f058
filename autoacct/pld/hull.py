"""The greatest convex minorant of a run of points: the lower convex hull's vertices.

:func:`autoacct.pld.discretize._convex_near` lowers the stretches of a lower PLD's
construction around its negative masses onto their greatest convex minorant, in gamma =
e^x, with the stretch's end points fixed. Any minorant keeps the construction below the
profile (it is capped by the values it replaces); the greatest convex one loses least.
"""

from __future__ import annotations

import numpy as np

#: Rounds over whole arrays before the points left go to the monotone chain.
ARRAY_ROUNDS = 8


def lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the vertices of the greatest convex minorant of the points (x_i, y_i), x
    strictly increasing, through the first and the last point, in increasing order.

    A point is not a vertex where the slope to it from the vertex before exceeds the slope
    from it to a later point. Every point above the segment of its current neighbours is
    dropped at once, over whole arrays, for up to ARRAY_ROUNDS rounds: on most runs that
    converges in a few (0.3 ms for 4,096 points of a random walk, where a loop over the
    points takes 2 ms). Some runs need rounds up to about half their points, a few
    milliseconds each for a few hundred points (at q = 5.25e-4, sigma = 0.411, k = 3801,
    delta = 2.9e-11 they took 0.22 s of the query's 0.55 s): the points left then go to
    Andrew's monotone chain (Andrew 1979), one pass. Both keep points on a segment, and
    both leave every dropped point above the chain, whose vertices are therefore the
    minorant's."""
    idx = np.arange(len(x))
    for _ in range(ARRAY_ROUNDS):
        if idx.size <= 2:
            return idx
        s = np.diff(y[idx]) / np.diff(x[idx])
        drop = np.flatnonzero(s[1:] < s[:-1]) + 1
        if drop.size == 0:
            return idx
        idx = np.delete(idx, drop)
    return idx[_chain(x[idx].tolist(), y[idx].tolist())]


def _chain(xs: list[float], ys: list[float]) -> list[int]:
    """The lower hull's vertex positions among the points (xs, ys), by the monotone chain."""
    hull = [0]
    for j in range(1, len(xs)):
        while len(hull) > 1:
            a, b = hull[-2], hull[-1]
            if (ys[b] - ys[a]) / (xs[b] - xs[a]) <= (ys[j] - ys[b]) / (xs[j] - xs[b]):
                break
            hull.pop()
        hull.append(j)
    return hull
