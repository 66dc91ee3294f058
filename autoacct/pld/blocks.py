"""Many copies of one discretised law composed in blocks, on FFT windows that grow like
k^(1/4) instead of sqrt(k).

A split law's bulk (see :mod:`jumps`) composed k = 1e6-1e7 times still needs a window of
sqrt(k) times its spread over the fine spacing h: 531,441 and 614,400 points at q =
1.2e-5, sigma = 0.92, k = 3.6e6 (benchmarks/sweep.py case 59). Here the copies are
composed in blocks of B = BLOCK_SQUARES R^2 on the fine lattice, each block discretised
again on R h, and the k / B blocks composed there: one level of :mod:`levels`, whose
re-discretisation carries its rounding and window tails as the upper PLD's leak and the
lower PLD's deficit (:func:`levels.coarsen`), so the result is certified as one fine
composition is.

Accuracy: connect-the-dots costs each discretised copy about h^2 / 8 of spread (see
:mod:`levels`); the k / B blocks on R h add k (R h)^2 / (8 B), a share 1 / BLOCK_SQUARES
of the fine copies' (with 4 R^2 a quarter widened q = 1e-4, sigma = 0.8, k = 1e6 to 8.6e-4
of eps, too near tol = 1e-3; with 8 R^2, 7.9e-4).
"""

from __future__ import annotations

import math

import numpy as np

from autoacct.pld.components import Component
from autoacct.pld.compose import convolve
from autoacct.pld.cumulants import Components, window_points
from autoacct.pld.levels import MIN_COUNT, Plan, coarsen, convolution_cost, self_compose

#: Window length assumed when choosing the tail mass a re-discretised window may leave out.
_POINTS = 1 << 15


def on_lattice(fine: Components, n: int, coarse_ratio: int, log_eta: float, lam: float,
               in_blocks: bool = True) -> list[Component] | None:
    """Components on the lattice ``coarse_ratio`` h whose composition bounds ``n`` copies of
    the one fine component (lattice h, tilted by lam): with ``in_blocks``, blocks of them
    (:func:`blocked`) on R h for a divisor R of coarse_ratio, composed there and
    discretised again on coarse_ratio h unless R is coarse_ratio; else, or where that
    costs more, one fine composition discretised again there. None when a
    re-discretisation fails."""
    h = fine[0].upper.h
    coarse = coarse_ratio * h
    # Tail mass a window leaves out ends up in the final bounds (once here, and once per
    # point in the lower one): left out far below the final composition's share.
    level_eta = log_eta - math.log(4.0 * _POINTS)
    ratios = [r for r in range(2, min(coarse_ratio, max_ratio(n)) + 1) if coarse_ratio % r == 0]
    made = blocked(fine, n, log_eta, lam, ratios) if in_blocks else None
    if made is None:
        bulk = coarsen(convolve(fine.recounted(n), h, level_eta, lam), coarse)
        return None if bulk is None else [bulk]
    ratio, parts = made
    if ratio == coarse_ratio:
        return list(parts)
    bulk = coarsen(convolve(parts, ratio * h, level_eta, lam), coarse)
    return None if bulk is None else [bulk]


def block_ratio(count: int) -> int:
    """The lattice ratio R near which blocks of ``count`` copies cost least (see
    :func:`blocked`), or 0 below levels.MIN_COUNT copies (where one lattice composes them
    more cheaply, as for the accountant's levels) or where no block ratio leaves MIN_BLOCKS
    blocks. The split law's coarse ratio is made a multiple of it
    (:meth:`~autoacct.pld.splitting.SplitDirections._split_law`), so that the blocks'
    lattice R h refines the coarse one."""
    r = max(2, round((count / BLOCK_SQUARES) ** 0.25))
    return r if count >= MIN_COUNT and r <= max_ratio(count) else 0


def blocked(fine: Components, n: int, log_eta: float, lam: float, ratios: list[int]
            ) -> tuple[int, Components] | None:
    """(R, components on the lattice R h) whose composition bounds ``n`` copies of the one
    fine component (lattice h, tilted by lam), for the R of ``ratios`` whose windows cost
    least: n // B blocks of B = BLOCK_SQUARES R^2 copies and the n mod B copies left over,
    each composed on h and discretised again on R h (a one-level plan of
    :func:`levels.self_compose`, whose re-discretisations carry their errors). None below
    levels.MIN_COUNT copies, when no R leaves MIN_BLOCKS blocks, when the blocks cost more
    than BLOCK_GAIN times one composition of the n copies on h
    (:func:`levels.convolution_cost` of the windows' points: it leaves out the lower PLDs'
    re-discretisation, which blocks of a wide law spend on windows as long as the whole
    one's), or when a window is far longer than its estimate.

    Accuracy: the fine copies cost about n h^2 / 8 of spread (connect-the-dots, see
    :mod:`levels`), the n / B blocks on R h about n (R h)^2 / (8 B), a share
    1 / BLOCK_SQUARES of it. The blocks' windows grow like sqrt(B) and the top one's is
    the fine one's over R, so with B = BLOCK_SQUARES R^2 the cheapest R is near
    (n / BLOCK_SQUARES)^(1/4)."""
    cand = np.array([r for r in ratios if n // (BLOCK_SQUARES * r * r) >= MIN_BLOCKS], dtype=np.int64)
    if n < MIN_COUNT or cand.size == 0:
        return None
    sizes = BLOCK_SQUARES * cand * cand
    left = n % sizes
    level_eta = log_eta - math.log(4.0 * _POINTS * n)
    pts = window_points(fine, np.concatenate(([n], sizes, np.maximum(left, 1))).astype(float), lam, level_eta)
    whole, block_pts, left_pts = pts[0], pts[1:cand.size + 1], pts[cand.size + 1:]
    top = whole / cand
    costs = convolution_cost(block_pts) + np.where(left > 0, convolution_cost(left_pts), 0.0) + convolution_cost(top)
    i = int(np.argmin(costs))
    if costs[i] > BLOCK_GAIN * convolution_cost(whole):
        return None
    r, b = int(cand[i]), int(sizes[i])
    plan = Plan(r, fine[0].upper.h, (n % b,), n // b, float(max(block_pts[i], left_pts[i], top[i])), b)
    parts = self_compose(fine, plan, log_eta, lam)
    return None if parts is None else (r, parts)


def max_ratio(n: int) -> int:
    """The largest R whose blocks (BLOCK_SQUARES R^2 copies) leave MIN_BLOCKS of them in n."""
    return int(math.isqrt(n // (BLOCK_SQUARES * MIN_BLOCKS)))


def spread(r_max: int) -> list[int]:
    """Ratios from 2 to r_max tried for a block's lattice: about _RATIOS_TRIED of them,
    evenly spread in log (the cost varies slowly with R near its minimum)."""
    if r_max < 2:
        return []
    return sorted({int(r) for r in np.round(np.geomspace(2, r_max, _RATIOS_TRIED))})


#: A block of the bulk composes BLOCK_SQUARES R^2 copies on the fine lattice before it is
#: discretised again on R h (see :func:`blocked`), and at least MIN_BLOCKS blocks make a
#: term: a block's profile then matters where it is at least about delta^(1/8) (0.03 at
#: delta = 1e-12), far above the discretiser's rounding floors. (The top count of
#: :mod:`levels` is at least 16; here that leaves out the cheapest ratios: benchmarks/sweep.py
#: case 59 took 0.177 s against 0.153 s.)
BLOCK_SQUARES = 8
MIN_BLOCKS = 8
#: Blocks are composed only where their windows cost at most this share of one composition's.
BLOCK_GAIN = 0.5
#: Block ratios :func:`spread` tries.
_RATIOS_TRIED = 16
