"""A lower PLD at a steep support end: the law's end merged, region by region, into atoms on the
lattice.

Merging a region R of the loss line into one atom that carries R's P- and Q-masses is a
post-processing of the pair, so the merged law is dominated: R's part of the profile,
int_R (1 - gamma e^{-L})_+ dP, is at least P(R) (1 - gamma Q(R) / P(R))_+ by Jensen's inequality
((.)_+ is convex). The atom's loss is L*(R) = log(P(R) / Q(R)); moved down to a lattice point
g <= L*(R) its profile only decreases (Koskela et al. 2021, Lemma 6). Masses P(R_i) at lattice
points g_i <= L*(R_i), for disjoint regions R_i, are therefore a lower discrete PLD of the law
restricted to their union. The rest of the law gets the second-order construction of
:mod:`~autoacct.pld.discretize`, and the two lower PLDs add, since profiles are linear in the
measure.

Why it is needed: at the support end of a rarely sampled record's law the P-mass piles up in a
spike narrower than a cell (DP-SGD at q = 1e-5, sigma = 0.3: 95% of the mass within 1e-5 of
-log(1 - q), cells of 4e-5). A lattice measure whose profile follows the law's at the lattice
points must round that spike down by up to a cell, since the profile is 0 beyond the support
end and has no kink there: its mean falls short by up to h a copy, which k copies turn into a
shift of k h (at k = 1e5 the lower bound on eps(1e-5) was 0, the truth about 7.99). A merged
atom keeps the mean to second order: L*(R) lies below R's mean loss by about half R's variance
of L, and each region ends where L*(R) is the lattice point itself, found to within
2e-6 of a cell.

The walk, at the top end: from the outermost grid point x_0 with no mass beyond it, region i is
(x_(i+1), x_i], with x_(i+1) < g the least point at which L*(x_(i+1), x_i] >= g still holds, g
the lattice point next inward from x_i. Below g every added loss is below g, so
e^{-g} P(c, x] - Q(c, x] falls as c does and the least such point is a root, found on refined
grids of :meth:`~autoacct.losses.PrivacyLoss.cell_masses`. The bottom end is the mirror image.
The walk stops where the cell next inward holds less than STOP of the law's mass (the rest of
the law then ends gently there), where no point within REACH cells of g gives the root, or
after MOST regions. Where the lattice's offset puts the spike's own L* on a lattice point
(:func:`~autoacct.pld.jumps.aligned_bulk`) the first region is the spike. Both ends are walked
where both are steep, the top end on what the bottom end's walk leaves.

An atom at a support end off the lattice (the Poisson-subsampled Laplace mechanism's, at the
outputs beyond 0 and 1) is the same problem at its sharpest: bounded cell by cell it is rounded
down by up to a cell, whatever its mass (at q = 1e-3, b = 1 the two atoms hold 68% of the
P-mass, and 1e5 copies bracketed eps(1e-8) only within 3% at the time budget). Its region takes
in the atom and as much of the law next inward as brings L* down (at the top end) or up (at
the bottom end) to the lattice point: one region per end, reaching as far as that takes.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses import PrivacyLoss

#: An end is merged where its cell holds SPIKE of the law's P-mass and either the law has at
#: least MANY cells or the end cell holds STEEP times the next one's (a spike narrower than a
#: cell). On few cells, where the mass falls off over a cell or two (an end cell holding 10-68%
#: and the next 11-23%: DP-SGD at q = 0.18-0.4, sigma = 0.55-0.59, laws of 300-400 cells, or
#: q = 1.7e-5, sigma = 0.37 on 3654), the second-order construction already keeps the mean and
#: its rounds cost little, while merging loosened the bound or took longer; on many cells
#: those rounds can take seconds (q = 1e-5, sigma = 0.4: 78 rounds of 4.6e5 cells).
SPIKE = 0.1
STEEP = 4.0
MANY = 1 << 14
#: Share of the law's P-mass below which the cell next inward ends the walk.
STOP = 1e-4
#: Most regions merged, and the most cells a region may reach inward of its lattice point.
MOST = 128
REACH = 4
#: Factor by which the reach of an atom's region grows while its region is not found.
ATOM_REACH_GROWTH = 8
#: Points of each refining grid, and refinements: a region's inner end is found within
#: REACH / (POINTS - 1)^LEVELS = 1.9e-6 of a cell (each level is one call of the law's
#: cell_masses, whose fixed cost dominates).
POINTS = 129
LEVELS = 3
#: The margin by which e^{-g} P(R) must exceed Q(R), in units of rounding of P(R) + Q(R):
#: the sums of cell masses and the product each round, and the atom's P-mass is then lowered
#: by TRIM roundings, which the margin also covers.
MARGIN_ULPS = 64.0
TRIM_ULPS = 16.0


class MergedEnd(NamedTuple):
    """A law's end merged into atoms: their grid indices and P-masses, and the rest of the law,
    restricted to ``cuts``, as cell masses in the layout of
    :func:`~autoacct.pld.discretize.lower_from_cell_masses` (``m_p``, ``m_q`` and ``halves``)."""

    indices: np.ndarray
    masses: np.ndarray
    #: The rest of the law lies in (cuts[0], cuts[1]] (an infinite end where that end was not merged).
    cuts: tuple[float, float]
    m_p: np.ndarray
    m_q: np.ndarray
    halves: tuple[np.ndarray, np.ndarray]

    def kept(self, points: np.ndarray, values: np.ndarray) -> np.ndarray:
        """``values`` at ``points`` (such as the Q-masses of the law's atoms there) where the points
        lie in the rest of the law, else 0: an atom outside it was merged, and is not the rest's."""
        return np.where((points > self.cuts[0]) & (points <= self.cuts[1]), values, 0.0)


def merged_end(loss: PrivacyLoss, g: np.ndarray, m_p: np.ndarray, m_q: np.ndarray,
               halves: tuple[np.ndarray, np.ndarray]) -> MergedEnd | None:
    """The steep ends of ``loss`` on the grid points g merged into atoms (see the module
    docstring), or None where neither end is a spike (a cell holding SPIKE of the mass, on
    MANY cells or STEEP times the next cell's, with no mass beyond the grid) or the walks
    merge nothing. ``m_p``, ``m_q``: the cells' P- and Q-masses, with the cells below and
    above the grid; ``halves``: those of the left halves of the inner cells. The bottom end
    is walked first, then the top end on what is left of the law."""
    if len(g) < 8 or (m_p[0] > 0.0 and m_p[-1] > 0.0):
        # (Most laws have mass beyond both ends of their grid: no support end lies on it.)
        return None
    cells = m_p[1:-1]
    total = float(m_p.sum())
    nz = np.flatnonzero(cells > 0.0)
    if nz.size < 8 or not total > 0.0:
        return None
    first, last = int(nz[0]), int(nz[-1])
    ends = MergedEnd(np.zeros(0, dtype=int), np.zeros(0), (-math.inf, math.inf), m_p, m_q, halves)
    if m_p[0] == 0.0 and _steep(loss, cells[first], cells[first + 1], total, len(g)) and \
            not _atom_on_grid(loss, float(g[first + 1]), cells[first]):
        ends = _walk(loss, g, ends, first, False, total) or ends
    if m_p[-1] == 0.0 and _steep(loss, cells[last], cells[last - 1], total, len(g)) and \
            not _atom_on_grid(loss, float(g[last + 1]), cells[last]):
        ends = _walk(loss, g, ends, last + 1, True, total) or ends
    return ends if ends.indices.size else None


def is_spike(end: float, inward: float, total: float, cells: float) -> bool:
    """Whether a support end is merged whose cell holds P-mass ``end`` and the next cell inward
    ``inward``, in a law of P-mass ``total`` on ``cells`` cells."""
    return end > SPIKE * total and (cells >= MANY or end > STEEP * inward)


def _steep(loss: PrivacyLoss, end: float, inward: float, total: float, cells: float) -> bool:
    """Whether a support end whose cell holds P-mass ``end`` and the next cell inward ``inward`` is
    merged: a spike (:func:`is_spike`), or for a law with atoms an end cell holding STEEP times
    the next one's mass, whatever its share of the law. That is an atom at the end (the
    Poisson-subsampled Laplace mechanism's at q = 0.02, b = 0.5 holds 7.6% of the P-mass), which
    bounded cell by cell is rounded down by up to a cell, a first-order loss whatever its mass."""
    return is_spike(end, inward, total, cells) or (loss.has_atoms and end > STEEP * inward)


def _atom_on_grid(loss: PrivacyLoss, point: float, cell: float) -> bool:
    """Whether most of an end cell's P-mass ``cell`` is an atom of ``loss`` at the grid ``point``
    closing the cell: the second-order construction keeps such an atom exactly (the Laplace
    mechanism's atoms at +-1/b on its own lattice), and merging it would only move it."""
    return loss.has_atoms and loss.cell_masses(np.array([np.nextafter(point, -np.inf), point]))[0][0] > 0.5 * cell


def _walk(loss: PrivacyLoss, g: np.ndarray, ends: MergedEnd, start: int, top: bool,
          total: float) -> MergedEnd | None:
    """The walk from grid point ``start`` inward (downward from the top end with ``top``) over
    the part of the law that ``ends`` leaves (its regions never reach the grid point next to
    the cut already made on the other side); ``ends`` with the walk's atoms added and the law
    restricted further, or None where it merges nothing.

    A law with atoms walks one region: the one that takes in the atom at its support end (an
    atom off the lattice is what bounds the rest of the law to first order there). It may have
    to reach far inward: an atom of P-mass p a distance d above the lattice point g needs,
    from a density rho of P-mass per unit of loss below g, the span D with rho D^2 / 2 = p d,
    about sqrt(2 p / (rho h)) cells for d near h (45 cells for the Poisson-subsampled
    Laplace mechanism at q = 1e-3, b = 1, on 621 cells, where REACH falls short). So its reach
    grows by ATOM_REACH_GROWTH until the region is found or the reach spans the law."""
    h = float(g[1] - g[0])
    x = float(g[start])
    # The walk stays strictly inside the part left: beyond the grid point next to the cut.
    low, high = ends.cuts
    limit_lo = 1 if not math.isfinite(low) else int(np.searchsorted(g, low, side="right")) + 1
    limit_hi = len(g) - 2 if not math.isfinite(high) else int(np.searchsorted(g, high, side="left")) - 2
    edge = float(g[limit_lo] if top else g[limit_hi])
    target = start - 1 if top else start + 1
    indices: list[int] = []
    masses: list[float] = []
    while len(indices) < (1 if loss.has_atoms else MOST) and limit_lo <= target <= limit_hi:
        found = None
        reach = REACH
        while found is None:
            bound = max(edge, g[target] - reach * h) if top else min(edge, g[target] + reach * h)
            found = _region(loss, float(g[target]), x, bound, top)
            if not loss.has_atoms or bound == edge:
                break
            reach *= ATOM_REACH_GROWTH
        if found is None:
            break
        indices.append(target)
        masses.append(found[1])
        x = found[0]
        # The lattice point next inward of x, and the P-mass of the cell part between them.
        target = int(np.searchsorted(g, x, side="left")) - 1 if top else int(np.searchsorted(g, x, side="right"))
        if not limit_lo <= target <= limit_hi:
            break
        part = loss.cell_masses(np.array([g[target], x] if top else [x, g[target]]))[0][0]
        if part < STOP * total:
            break
    if not indices:
        return None
    cuts = (low, x) if top else (x, high)
    return MergedEnd(np.concatenate((ends.indices, indices)), np.concatenate((ends.masses, masses)), cuts,
                     *_rest(loss, g, ends.m_p, ends.m_q, ends.halves, x, top))


def _region(loss: PrivacyLoss, g: float, x: float, bound: float, top: bool) -> tuple[float, float] | None:
    """The inner end c of the region R between c and x with L*(R) >= g that is nearest the root
    (c between g and ``bound``), and R's P-mass lowered by TRIM_ULPS roundings; None where R
    would reach beyond ``bound`` or no point qualifies.

    Along the points, increasing, the condition fails and then holds: at the top end c runs
    from ``bound`` up to g and R shrinks to (g, x], whose losses all exceed g; at the bottom
    end c runs from g, where R = (x, g] has losses below g only, up to ``bound``. The least
    point where it holds is the end kept, and the next grid refines the step before it."""
    eg = math.exp(-g)
    lo, hi = (bound, g) if top else (g, bound)
    best: tuple[float, float] | None = None
    for level in range(LEVELS):
        points = np.linspace(lo, hi, POINTS)
        if top:
            p, q = loss.cell_masses(np.append(points, x))
            sp, sq = np.cumsum(p[::-1])[::-1], np.cumsum(q[::-1])[::-1]
        else:
            p, q = loss.cell_masses(np.insert(points, 0, x))
            sp, sq = np.cumsum(p), np.cumsum(q)
        ok = (eg * sp - sq >= MARGIN_ULPS * MACHINE_EPSILON * (sp + sq)) & (sp > 0.0)
        if not ok.any():
            return best
        i = int(ok.argmax())
        if i == 0:
            # Holding at the first point: at level 0 the region reaches beyond ``bound`` (top)
            # or is a rounding artefact (bottom); deeper, a rounding of the previous point.
            return None if level == 0 else best
        best = (float(points[i]), float(sp[i]) * (1.0 - TRIM_ULPS * MACHINE_EPSILON))
        lo, hi = points[i - 1], points[i]
    return best


def _rest(loss: PrivacyLoss, g: np.ndarray, m_p: np.ndarray, m_q: np.ndarray,
          halves: tuple[np.ndarray, np.ndarray], cut: float, top: bool
          ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Cell masses of the law restricted to L <= cut (``top``) or L > cut."""
    rp, rq = m_p.copy(), m_q.copy()
    lp, lq = halves[0].copy(), halves[1].copy()
    if top:
        # cut in (g_j, g_(j+1)]: inner cell j keeps (g_j, cut], the cells above it nothing.
        j = int(np.searchsorted(g, cut, side="left")) - 1
        rp[j + 2:], rq[j + 2:] = 0.0, 0.0
        lp[j + 1:], lq[j + 1:] = 0.0, 0.0
        p, q = loss.cell_masses(np.array([g[j], cut]))
        rp[j + 1], rq[j + 1] = p[0], q[0]
        if cut <= 0.5 * (g[j] + g[j + 1]):
            lp[j], lq[j] = p[0], q[0]
    else:
        # cut in [g_j, g_(j+1)): inner cell j keeps (cut, g_(j+1)], the cells below it nothing.
        j = int(np.searchsorted(g, cut, side="right")) - 1
        rp[:j + 1], rq[:j + 1] = 0.0, 0.0
        lp[:j], lq[:j] = 0.0, 0.0
        p, q = loss.cell_masses(np.array([cut, g[j + 1]]))
        rp[j + 1], rq[j + 1] = p[0], q[0]
        s = 0.5 * (g[j] + g[j + 1])
        if cut >= s:
            lp[j], lq[j] = 0.0, 0.0
        else:
            p, q = loss.cell_masses(np.array([cut, s]))
            lp[j], lq[j] = p[0], q[0]
    return rp, rq, (lp, lq)
