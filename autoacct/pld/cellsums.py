"""Cell masses summed from many atoms, moved outward by their rounding for each discrete PLD.

A law held atom by atom gives each cell's P- and Q-mass as a float sum of its atoms' masses,
within a relative r of the exact sum (:meth:`~autoacct.losses.PrivacyLoss.cell_masses_with_error`).
Left as they are, the upper PLD of such a law fell below the atoms' profile by a relative 1e-17
at very negative eps (its total mass), and k compositions multiply that by k.

* The upper PLD (connect the dots) only rises with a cell's P-mass and falls with its Q-mass:
  at a fixed Q-mass more P-mass is sent to the cell's right end. It reads P up and Q down.
* The lower PLD reads P down and Q up. Those are the masses of a sub-law of the cell's atoms,
  a share of each atom's P-mass left out and some losses then moved down within the cell
  until the Q-mass is reached, whose profile lies below the law's (losses only decrease:
  Koskela et al. 2021, Lemma 6); so the lower PLD, a lower bound for the masses it reads,
  is one for the law. (This needs the cell's loss log(P/Q) at least about 4 r above its left
  end, which fails only where all its atoms crowd there: within 9e-11 for 1e5 atoms.) A
  cell's left half is moved by the whole cell's factor, at least its own bound, so that the
  right half, read as their difference, is moved the same way.
"""

from __future__ import annotations

import numpy as np

from autoacct.exactness import MACHINE_EPSILON

#: P- and Q-masses of a set of cells.
Halves = tuple[np.ndarray, np.ndarray]
#: Masses as one PLD reads them: the cells' P- and Q-masses, and their left halves' (or None).
Cells = tuple[np.ndarray, np.ndarray, Halves | None]


def whole_cells(rel: np.ndarray, h_p: np.ndarray, h_q: np.ndarray) -> np.ndarray:
    """The rounding bound of each cell (-inf, g_0], (g_j, g_(j+1)], (g_last, inf) whose inner
    cells are summed from two halves, given the bounds ``rel`` and masses ``h_p``, ``h_q`` of
    the half cells (-inf, g_0], (g_0, s_0], (s_0, g_1], ..., (g_last, inf): the larger of its
    halves' bounds, and 2u more where both halves hold mass (their sum rounds once, by at most
    u of itself)."""
    out = np.empty(len(rel) // 2 + 1)
    out[0], out[-1] = rel[0], rel[-1]
    both = ((h_p[1:-1:2] > 0.0) & (h_p[2:-1:2] > 0.0)) | ((h_q[1:-1:2] > 0.0) & (h_q[2:-1:2] > 0.0))
    np.maximum(rel[1:-1:2], rel[2:-1:2], out=out[1:-1])
    out[1:-1] += np.where(both, MACHINE_EPSILON, 0.0)
    return out


def moved(m_p: np.ndarray, m_q: np.ndarray, rel: np.ndarray, up: bool) -> tuple[np.ndarray, np.ndarray]:
    """``m_p`` and ``m_q`` moved outward by their bounds ``rel``: P up and Q down when ``up``,
    else P down and Q up. A factor 1 +- s and its product each round once (by u), so s is
    rel + 4u: (1 - r)(1 + r + 4u)(1 - u)^2 >= 1 for r <= 1e-8. Cells with rel 0 stay as they are."""
    step = np.where(rel > 0.0, rel + 2.0 * MACHINE_EPSILON, 0.0)
    if not up:
        np.negative(step, out=step)
    return m_p * (1.0 + step), m_q * (1.0 - step)


def each_way(m_p: np.ndarray, m_q: np.ndarray, rel: np.ndarray | None, halves: Halves | None
             ) -> tuple[Halves, Cells, bool]:
    """The cells' masses ``m_p``, ``m_q`` (with the cells below and above the grid) as the upper
    PLD reads them; as the lower PLD reads them, with their left halves (None without
    ``halves``); and whether the two are the same (``rel`` None or 0: no mass moves). ``rel``
    bounds the rounding of the cells, or with ``halves`` (the P- and Q-masses of all the half
    cells the discretiser sums ``m_p`` and ``m_q`` from, see :func:`whole_cells`) that of the
    half cells."""
    left = None if halves is None else (halves[0][1:-1:2], halves[1][1:-1:2])
    if rel is not None and halves is not None:
        rel = whole_cells(rel, *halves)
    if rel is None or not rel.any():
        return (m_p, m_q), (m_p, m_q, left), True
    low_p, low_q = moved(m_p, m_q, rel, False)
    low_left = None if left is None else moved(left[0], left[1], rel[1:-1], False)
    return moved(m_p, m_q, rel, True), (low_p, low_q, low_left), False
