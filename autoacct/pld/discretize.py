"""Discretiser: a privacy-loss law -> an upper and a lower discrete PLD on the lattice hZ.

Both outputs are sub-probability masses ``masses[i]`` at losses (start + i) h plus
an atom at +inf. Write delta_w(gamma) = sum_i w_i (1 - gamma e^{-x_i})_+ + w_inf
for the hockey-stick profile of such masses. The true law has profile
delta(gamma) = H_gamma(P || Q).

* Upper (connect the dots, Doroshenko et al. 2022): each cell (g_j, g_{j+1}]
  sends its P-mass to its two end points so that both its P-mass and its
  Q-mass (= E_P[e^{-L}; cell]) are kept. The profile is then the chord of the
  convex function delta(gamma) between grid points, so delta_up >= delta
  everywhere, with an error of second order in h. Mass below the grid is
  rounded up to its first point; mass above it goes to +inf.
* Lower: the grid values F_j of the profile, each lowered onto the tangents of
  delta(gamma) at the midpoints of its two cells. With s_j = (g_j + g_{j+1}) / 2,
  the tangent at gamma = e^{s_j} (slope -Q(L > s_j)) lies below the profile and
  passes P(g_j, s_j] - gamma_j Q(g_j, s_j] below F_j and
  gamma_{j+1} Q(s_j, g_{j+1}] - P(s_j, g_{j+1}] below F_{j+1}: half-cell masses
  only, so nothing of order 1 cancels. Lowering every grid value by the larger of
  its two cells' amounts puts each segment below its cell's tangent. With c the
  curvature and D the cell's width in gamma, the error is c D^2/8 at the grid
  points and c D^2/24 on average over the cell: half the chord's average c D^2/12,
  where tangents at the cell ends would give 5 c D^2/12. Where neighbouring
  cells' masses differ by more than a factor of 1.5 (support ends, atoms) a cell
  uses the tangent at one of its ends instead. Where the lowered values still
  have a concave kink (a negative mass: steep support ends, a law within a few
  cells), the values around it are lowered onto their greatest convex minorant,
  which lies below the segments and so below the profile; only where even that
  fails is a cell rounded down (Koskela et al. 2021, Lemma 6: first order, always valid).
  A finite atom law flagged ``merged_lower`` (a subsampled discrete law, whose atoms
  stand apart at the grid's scale) has its atoms merged onto the grid instead
  (:mod:`merged`): cell by cell, an isolated atom is bounded no better than by
  rounding it down, a first-order error that k copies multiply, while merging it with
  a share of its neighbour below costs only where the profile lies between the two.

Why these bounds survive composition: for masses w, w' with delta_w <= delta_w'
pointwise in gamma, and any other nonnegative masses v,
E_{w x v}[(1 - e^{eps - L1 - L2})_+] = E_v[delta_w(e^{eps - L2})] is monotone in
delta_w; applying this factor by factor orders the composed profiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses import DiscreteLoss, PrivacyLoss
from autoacct.pld.cellsums import Halves, each_way
from autoacct.pld.garbling import merged_end
from autoacct.pld.hull import lower_hull
from autoacct.pld.lawcache import charge, law_cache
from autoacct.pld.merged import merged_down


@dataclass(frozen=True)
class DiscretePLD:
    """Masses on the lattice {(start + i) h}, plus ``p_inf`` at +inf."""

    h: float
    start: int
    masses: np.ndarray
    p_inf: float
    #: Total mass added by clipping rounding-level negative masses to zero; a lower
    #: bound built from these masses must give back (1 + deficit)^k - 1 after k steps.
    deficit: float = 0.0
    #: For an upper PLD that is itself a computed composition (see :mod:`levels`): the
    #: measure it bounds may exceed these masses by a measure whose moment generating
    #: function at ``leak_lam`` is at most ``leak`` times theirs. Its part of delta(eps)
    #: is then at most leak M(leak_lam) e^{-leak_lam eps}, and after k steps
    #: ((1 + leak)^k - 1) times the composed M.
    leak: float = 0.0
    leak_lam: float = 0.0

    @property
    def losses(self) -> np.ndarray:
        return np.arange(self.start, self.start + len(self.masses)) * self.h

    @cached_property
    def moment(self) -> float:
        """sum_i masses_i x_i, the first moment of the finite masses.

        Not a BLAS dot: OpenBLAS runs a dot of more than 10^4 terms on a second thread,
        which then spins on the other core for a tenth of a second, doubling the CPU time of
        a query (and slowing it, where the two cores share a physical one)."""
        return float((self.masses * self.losses).sum())

    @cached_property
    def total(self) -> float:
        """The total mass, finite masses and the mass at +inf."""
        return float(self.masses.sum()) + self.p_inf

    @cached_property
    def support(self) -> tuple[int, int] | None:
        """Indices of the first and last positive masses (None when there is none)."""
        m = self.masses
        if m.size and m[0] > 0 and m[-1] > 0:
            return 0, m.size - 1
        nz = np.flatnonzero(m > 0)
        return (int(nz[0]), int(nz[-1])) if nz.size else None


def discretize(loss: PrivacyLoss, h: float, j_lo: int, j_hi: int) -> tuple[DiscretePLD, DiscretePLD]:
    """Upper and lower discrete PLDs of ``loss`` on the grid points j h, j_lo <= j <= j_hi
    (from the cache of discretised laws, see :class:`LawCache`)."""
    law = law_cache().law(loss, h, j_lo, j_hi, True, law_maker(loss, h, j_lo, j_hi, True))
    return law.upper, law.lower()


def discretize_lazy(loss: PrivacyLoss, h: float, j_lo: int, j_hi: int
                    ) -> tuple[DiscretePLD, Callable[[], DiscretePLD]]:
    """The upper discrete PLD of :func:`discretize`, and a function that returns the lower one,
    made when first called from the cell masses computed for the upper one (kept until then:
    a few arrays of the grid's length). From the cache of discretised laws."""
    law = law_cache().law(loss, h, j_lo, j_hi, True, law_maker(loss, h, j_lo, j_hi, True))
    return law.upper, law.lower


def _made_lazy(loss: PrivacyLoss, h: float, j_lo: int, j_hi: int
               ) -> tuple[DiscretePLD, Callable[[], DiscretePLD]]:
    """:func:`discretize_lazy` computed (not cached)."""
    g, m_p, m_q, inner, upper, halves = _connect_the_dots(loss, h, j_lo, j_hi - j_lo + 1, halves=True)
    assert halves is not None  # asked for
    return upper, partial(_lower_from_cells, loss, h, j_lo, g, m_p, m_q, inner, halves)


def _lower_from_cells(loss: PrivacyLoss, h: float, j_lo: int, g: np.ndarray, m_p: np.ndarray, m_q: np.ndarray,
                      inner: np.ndarray | None, halves: tuple[np.ndarray, np.ndarray]) -> DiscretePLD:
    """The lower discrete PLD of :func:`discretize` from its connect-the-dots pieces (``inner``: None if not made)."""
    n = len(g)
    if loss.merged_lower and isinstance(loss, DiscreteLoss):
        onto = merged_down(loss, h, j_lo, n)
        return rounded_down(loss, h, j_lo, n) if onto is None else DiscretePLD(h, j_lo, onto, _attained_inf(loss))
    if loss.purely_atomic and m_p[0] == 0.0 and m_p[-1] == 0.0 and _lattice_step(loss, h):
        # Every atom sits on a grid point: the split is exact and so is the PLD.
        split = _connected(m_p[1:-1], m_q[1:-1], g, h) if inner is None else inner.copy()
        return DiscretePLD(h, j_lo, split, _attained_inf(loss))

    atoms_q = _atoms_q(loss, g[1:]) if loss.has_atoms else np.zeros(n - 1)
    merged = merged_end(loss, g, m_p, m_q, halves)
    if merged is None:
        return lower_from_cell_masses(g, h, j_lo, m_p, m_q, halves, atoms_q, _attained_inf(loss), inner)
    # Spikes at support ends: merged into atoms, the rest bounded as usual (the two add).
    rest = lower_from_cell_masses(g, h, j_lo, *merged[3:], merged.kept(g[1:], atoms_q), _attained_inf(loss))
    masses = rest.masses.copy()
    np.add.at(masses, merged.indices, merged.masses)
    return DiscretePLD(h, j_lo, masses, rest.p_inf, rest.deficit)


def rounded_down(loss: DiscreteLoss, h: float, j_lo: int, n: int) -> DiscretePLD:
    """The lower discrete PLD on the points (j_lo + i) h, i < n, that moves each atom of ``loss``
    to the grid point at or below its value less ``loss.value_error`` (atoms below the grid
    are dropped), with the mass at +inf the law attains.

    Every loss only decreases (Koskela et al. 2021, Lemma 6), so the profile does. The
    mean loss then falls by about h/2 an atom: a first-order error, here only the fallback
    of :func:`~autoacct.pld.merged.merged_down` where the lattice spans too wide a range."""
    g = (j_lo + np.arange(n)) * h
    idx = np.searchsorted(g, loss.values - loss.value_error, side="right") - 1
    keep = idx >= 0
    masses = np.bincount(idx[keep], weights=loss.p_mass[keep], minlength=n).astype(float)
    return DiscretePLD(h, j_lo, masses, _attained_inf(loss))


def lower_from_cell_masses(g: np.ndarray, h: float, j_lo: int, m_p: np.ndarray, m_q: np.ndarray,
                           halves: tuple[np.ndarray, np.ndarray], atoms_q: np.ndarray,
                           p_inf: float, inner: np.ndarray | None = None) -> DiscretePLD:
    """The lower discrete PLD on the grid points g = (j_lo + j) h of a law (a nonnegative
    measure) given by its P- and Q-masses ``m_p``, ``m_q`` in the cells (-inf, g_0],
    (g_j, g_(j+1)] and (g_last, inf), those of the left halves (g_j, (g_j + g_(j+1)) / 2]
    of the inner cells (``halves``), the Q-masses ``atoms_q`` of its atoms at g_1, g_2, ...,
    and the P-mass ``p_inf`` at +inf it attains: the second-order construction of the
    module docstring, or each cell rounded down to its left end where that fails.
    ``inner``, the connect-the-dots masses of the inner cells if made already, is reused."""
    lower = _lower(p_inf, g, h, j_lo, m_p, m_q, halves, atoms_q, inner)
    if lower is None:
        down = np.zeros(len(g))
        down[:-1], down[-1] = m_p[1:-1], m_p[-1]
        lower = DiscretePLD(h, j_lo, down, p_inf)
    return lower


def discretize_upper(loss: PrivacyLoss, h: float, j_lo: int, j_hi: int) -> DiscretePLD:
    """The upper discrete PLD of :func:`discretize` alone, from whole cells' masses (the
    cells' halves are not computed, so its masses may differ from :func:`discretize`'s in
    the last bits). From the cache of discretised laws."""
    return law_cache().law(loss, h, j_lo, j_hi, False, law_maker(loss, h, j_lo, j_hi, False)).upper


def law_maker(loss: PrivacyLoss, h: float, j_lo: int, j_hi: int, halves: bool
              ) -> Callable[[], tuple[DiscretePLD, Callable[[], DiscretePLD] | None]]:
    """What :meth:`~autoacct.pld.lawcache.LawCache.law` calls on a miss: the law discretised
    with the cells' halves (upper PLD and the maker of the lower one) or without them (the
    upper PLD alone)."""
    if halves:
        return partial(_made_lazy, loss, h, j_lo, j_hi)
    return lambda: (_made_upper(loss, h, j_lo, j_hi), None)


def _made_upper(loss: PrivacyLoss, h: float, j_lo: int, j_hi: int) -> DiscretePLD:
    """:func:`discretize_upper` computed (not cached)."""
    return _connect_the_dots(loss, h, j_lo, j_hi - j_lo + 1)[4]


def _connect_the_dots(loss: PrivacyLoss, h: float, j_lo: int, n: int, halves: bool = False
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, DiscretePLD, Halves | None]:
    """Grid points, cell masses (P and Q, with the cells below and above the grid), the
    connect-the-dots masses of the inner cells, the upper PLD, and with ``halves`` the P- and
    Q-masses of the left halves (g_j, (g_j + g_{j+1}) / 2] of the inner cells. The masses are
    the lower PLD's; where sums of many atoms read each way differ (:mod:`cellsums`), no split."""
    g = _grid_points(loss, h, j_lo, n)
    if halves:
        edges = np.empty(2 * n + 1)
        edges[0], edges[-1] = -np.inf, np.inf
        edges[1:-1:2] = g
        edges[2:-2:2] = 0.5 * (g[:-1] + g[1:])
        h_p, h_q, rel = loss.cell_masses_with_error(edges)
        m_p, m_q = np.empty(n + 1), np.empty(n + 1)
        m_p[0], m_q[0], m_p[-1], m_q[-1] = h_p[0], h_q[0], h_p[-1], h_q[-1]
        np.add(h_p[1:-1:2], h_p[2:-1:2], out=m_p[1:-1])
        np.add(h_q[1:-1:2], h_q[2:-1:2], out=m_q[1:-1])
    else:
        edges = np.concatenate(([-np.inf], g, [np.inf]))
        m_p, m_q, rel = loss.cell_masses_with_error(edges)
    (up_p, up_q), low, same = each_way(m_p, m_q, rel, (h_p, h_q) if halves else None)
    inner = _connected(up_p[1:-1], up_q[1:-1], g, h)
    up = inner.copy()
    up[0] += up_p[0]
    upper = DiscretePLD(h, j_lo, up, min(1.0, loss.p_inf + up_p[-1]))
    return g, low[0], low[1], inner if same else None, upper, low[2]


def _connected(cell_p: np.ndarray, cell_q: np.ndarray, g: np.ndarray, h: float) -> np.ndarray:
    """Connect-the-dots masses on the grid points g of the inner cells (g_j, g_(j+1)] with P- and
    Q-masses ``cell_p``, ``cell_q``: each cell's P-mass split between its ends so that its
    Q-mass is kept (see :func:`_left_share`)."""
    w_left = _left_share(cell_p, cell_q, g[:-1], h)
    inner = np.zeros(len(g))
    inner[:-1] += w_left
    inner[1:] += cell_p - w_left
    return inner


def _lower(p_inf: float, g: np.ndarray, h: float, j_lo: int, m_p: np.ndarray, m_q: np.ndarray,
           halves: tuple[np.ndarray, np.ndarray], atoms_q: np.ndarray,
           inner: np.ndarray | None = None) -> DiscretePLD | None:
    """Second-order lower PLD, or None when no valid one was found.

    Each cell is bounded by :func:`_second_order` in the mode :func:`_modes` gives it
    (_MIDPOINT, or _ONE_END where the masses change fast). Around the points where that
    gives negative masses, cells move to the next mode, up to _ROUNDED: those form a
    second sub-measure whose mass moves to each cell's left end (losses only decrease),
    and the cells next to them are then support ends of the first. Profiles are linear
    in the measure, so the two lower bounds add. When there were negative masses, the
    same is done with concave kinks first lowered onto a convex minorant
    (:func:`_convex_near`), and of the two valid lower PLDs the one with the larger mean
    is kept: the minorant keeps a law with steep support ends second order where
    rounding cells down is first order, while for a law within a few cells rounding a
    cell or two can lose less than bridging many.
    """
    n = len(g)
    if n < 3:
        return None
    with np.errstate(over="ignore"):
        gam = np.exp(g)
    if not math.isfinite(gam[-1]):
        # e^g overflows (g increases, so its last point first).
        return None
    dgam = np.subtract(gam[1:], gam[:-1])
    if (dgam <= 0.0).any():
        # e^g underflows to equal values far below the loss scale.
        return None
    plain, kinked = _lower_in_modes(p_inf, g, h, j_lo, gam, dgam, m_p, m_q, halves, atoms_q, False, inner)
    if not kinked:
        return plain
    hulled, _ = _lower_in_modes(p_inf, g, h, j_lo, gam, dgam, m_p, m_q, halves, atoms_q, True, inner)
    found = [pld for pld in (plain, hulled) if pld is not None]
    return max(found, key=lambda pld: pld.moment - pld.deficit * float(g[-1]),
               default=None)


def _lower_in_modes(p_inf: float, g: np.ndarray, h: float, j_lo: int, gam: np.ndarray, dgam: np.ndarray,
                    m_p: np.ndarray, m_q: np.ndarray, halves: tuple[np.ndarray, np.ndarray],
                    atoms_q: np.ndarray, hull: bool, inner: np.ndarray | None = None
                    ) -> tuple[DiscretePLD | None, bool]:
    """The lower PLD of :func:`_lower` with or without the convex minorant (or None), and
    whether the first construction had negative masses."""
    n = len(g)
    level = np.full(n - 1, _MIDPOINT, dtype=np.int8)
    masses: np.ndarray | None = np.zeros(n)
    kinked = False
    last: np.ndarray | None = None
    for r in range(_ROUNDS):
        # Rounded cells leave the sub-measure: its cells next to them are at a support end.
        # Every level is _MIDPOINT until a round has moved cells on.
        mode = (_modes(m_p[1:-1]) if r == 0
                else np.maximum(level, _modes(np.where(level == _ROUNDED, 0.0, m_p[1:-1]))))
        if last is not None and np.array_equal(mode, last):
            # The last round moved no cell to another mode (its bad points' cells were all
            # rounded already), so this one would repeat it: the construction has failed, as
            # after _ROUNDS rounds, and more rounds only spend the time budget. (DP-SGD at
            # q = 1e-5, sigma = 0.487, k = 1e4 would repeat one round on 874,652 cells until
            # the budget stops the query at eps in [0, 2.0], the truth being about 0.1.)
            return None, kinked
        if r:
            # A round beyond the first is not in the grid's cost model (one round): a law
            # with a few atoms can take all _ROUNDS on every cell; each counts against the
            # query's time budget (see :mod:`autoacct.limits`), raising before it starts.
            charge(0.0, n * ROUND_SECONDS, f"lowering a PLD on {n} cells (round {r + 1})")
        last = mode
        masses, bad = _second_order(g, gam, dgam, h, m_p, m_q, halves, atoms_q, mode, hull, inner)
        if masses is None:
            return None, kinked
        if bad.size == 0:
            break
        kinked = True
        # The cells b - reach .. b + reach - 1 of each bad point b move on (+1 where each
        # run starts, -1 past where it ends, summed). The reach doubles every _GROW rounds:
        # where bad points persist, each round moved the kink's cells a few cells on, and a
        # spike's edge in a law of 63,562 cells took 29 to 43 rounds over the whole law.
        reach = 2 << (r // _GROW)
        runs = np.bincount(np.maximum(bad - reach, 0), minlength=n)
        runs -= np.bincount(np.minimum(bad + reach, n - 1), minlength=n)
        near = np.cumsum(runs[:-1]) > 0
        level[near] = np.minimum(mode[near] + 1, _ROUNDED)
    else:
        return None, kinked
    rounded = mode == _ROUNDED
    if rounded.any():
        masses[:-1] += np.where(rounded, m_p[1:-1], 0.0)
    # Left of the first grid point the lower profile is the line through its first
    # segment; the true profile there lies above the line P(L >= g_0) - gamma Q(L >= g_0).
    # Both lines agree at gamma = 0 unless the masses outweigh the law: an excess at
    # rounding level is given back like the clipped mass, a larger one means the
    # construction failed (a law within a cell or two) and rounding down takes over.
    finite = float(m_p[1:].sum())
    excess = max(float(masses.sum()) - finite, 0.0)
    if excess > _EXCESS * finite:
        return None, kinked
    unabsorbed = _absorb_negatives(masses)
    deficit = float(np.maximum(-masses, 0.0).sum()) + excess + unabsorbed
    return DiscretePLD(h, j_lo, np.maximum(masses, 0.0), p_inf, deficit), kinked


def _absorb_negatives(masses: np.ndarray) -> float:
    """Set each negative mass that its right neighbour can take, and each clearly negative one
    (below -_ABSORB times the largest), to zero, in place, taking as much from the first
    positive masses to its right; returns what they could not give.

    Together these move mass from larger losses to a smaller one, which lowers the profile
    everywhere, so the bound stays valid. Clipped instead, the masses would leave a deficit
    that grows like k times itself over k compositions.
    """
    n = len(masses)
    clear = -_ABSORB * max(float(masses.max()), 0.0)
    # Most are absorbed by their right neighbour alone: all those at once, also those at
    # rounding level (a deficit c costs (1 + c)^k - 1 after k steps, which at k = 1e6 and
    # delta = 1e-12 must stay far below 1e-18 per step).
    j = (masses[:-1] < 0.0).nonzero()[0]
    j = j[masses[j + 1] >= -masses[j]]
    masses[j + 1] += masses[j]
    masses[j] = 0.0
    left = 0.0
    for j in (masses < clear).nonzero()[0][:_MAX_ABSORBED]:
        need = -float(masses[j])
        masses[j] = 0.0
        i = j + 1
        while need > 0.0 and i < n:
            take = min(need, max(float(masses[i]), 0.0))
            masses[i] -= take
            need -= take
            i += 1
        left += need
    return left


def _kept_cells(rounded: np.ndarray | None, m_p: np.ndarray, m_q: np.ndarray, atoms_q: np.ndarray,
                halves: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, ...]:
    """The cells' P-, Q- and atom Q-masses and their left halves' P- and Q-masses, zero in
    the cells marked ``rounded`` (_ROUNDED cells leave the sub-measure; None: no cell is)."""
    left_p, left_q = halves
    if rounded is None:
        return m_p[1:-1], m_q[1:-1], atoms_q, left_p, left_q
    keep = ~rounded
    return (np.where(keep, m_p[1:-1], 0.0), np.where(keep, m_q[1:-1], 0.0), np.where(keep, atoms_q, 0.0),
            np.where(keep, left_p, 0.0), np.where(keep, left_q, 0.0))


def _tangent_gaps(gam: np.ndarray, dgam: np.ndarray, mode: np.ndarray,
                  cells: tuple[np.ndarray, np.ndarray, np.ndarray],
                  left: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """e_j of :func:`_second_order`: the largest gap to a tangent that the cells next to grid
    point j ask for (``cells``: P-, Q- and atom Q-masses; ``left``: their left halves).

    Nearly every cell is _MIDPOINT: their gaps are taken on the whole arrays and set to 0 at
    the few other cells, and the _ONE_END gaps only at those cells. A cell that asks nothing
    leaves e_j as it is, which is what taking the larger of e_j >= 0 and 0 gives."""
    cell_p, cell_q, cell_atoms = cells
    left_p, left_q = left
    e = np.zeros(len(gam))
    others = (mode != _MIDPOINT).nonzero()[0]
    with np.errstate(over="ignore", invalid="ignore"):
        at_left = _gap(left_p, gam[:-1] * left_q)
        at_left[others] = 0.0
        np.maximum(at_left, 0.0, out=e[:-1])
        at_right = _gap(gam[1:] * (cell_q - left_q), cell_p - left_p)
        at_right[others] = 0.0
        np.maximum(e[1:], at_right, out=e[1:])
        one = (mode == _ONE_END).nonzero()[0]
        if one.size:
            m = int(cell_p.argmax())
            # Up to the heaviest cell at the right end (e_(j+1)), after it at the left end (e_j).
            a = one[one <= m]
            e[a + 1] = np.maximum(e[a + 1], _gap(gam[a + 1] * cell_q[a], cell_p[a]))
            b = one[one > m]
            b_minus = gam[b] * cell_q[b]
            if cell_atoms.any():
                b_minus += dgam[b] * cell_atoms[b]
            e[b] = np.maximum(e[b], _gap(cell_p[b], b_minus))
    return e


def _second_order(g: np.ndarray, gam: np.ndarray, dgam: np.ndarray, h: float, m_p: np.ndarray, m_q: np.ndarray,
                  halves: tuple[np.ndarray, np.ndarray], atoms_q: np.ndarray,
                  mode: np.ndarray, hull: bool = False, inner_all: np.ndarray | None = None
                  ) -> tuple[np.ndarray | None, np.ndarray]:
    """Second-order lower masses for the cells not _ROUNDED, and the points where they are < 0
    (``gam`` = e^g, ``dgam`` its differences; ``halves`` the P- and Q-masses of the cells' left
    halves; ``inner_all`` the connect-the-dots masses of all inner cells, if made already).

    With F the finite part of this sub-measure's profile at the grid, the values are v_j = F_j - e_j, with e_j the
    largest of what the cells next to point j ask: a _MIDPOINT cell the gaps to its midpoint tangent at both ends (see
    the module docstring); a _ONE_END cell, up to the heaviest cell, A_j = e^{g_{j+1}} Q_j - P_j at its right end (the
    tangent at its left end) and after it B_j = P_j - e^{g_j} Q_j - (gamma_{j+1} - gamma_j) Q(L = g_{j+1}) at its left
    end (the tangent at its right end), so that a support boundary next to empty cells is never lowered against them.
    Each gap carries an allowance for the rounding of its difference. The masses are the connect-the-dots masses of
    the sub-measure, which interpolate u_j = F_j - T_j (T_j the part of F from the mass above the grid), plus those of
    the interpolant of c = v - u. Its split sends mass right (_left_share lowers its ratio by RATIO_ULPS roundoffs, and
    may be off by as many), which lifts its profile at g_j by at most 2 RATIO_ULPS u gamma_j Q(L > g_j): e_j takes that
    too, after e_0 >= e_1 is made, so that where no Q-mass lies (left of g_0 too) it is linear in gamma (no mass). (A
    DiscreteGaussian(100)'s lower PLD stood up to 4.8e-14 above its law without it.) From the first point T where v
    is not positive the values are 0, and the last segment before T is bounded by the left tangent at gamma_T, slope
    -Q(L >= g_T).
    """
    n = len(gam)
    above_p, above_q = m_p[-1], m_q[-1]
    rounded = mode == _ROUNDED
    whole = not rounded.any()
    cell_p, cell_q, cell_atoms, left_p, left_q = _kept_cells(None if whole else rounded, m_p, m_q, atoms_q, halves)
    # With no cell rounded the sub-measure is the whole law, whose split may be made already.
    inner = inner_all if inner_all is not None and whole else _connected(cell_p, cell_q, g, h)
    sp, sq = _suffix_sums(cell_p, above_p, cell_q, above_q)
    f = np.maximum(sp - gam * sq, 0.0)
    e = _tangent_gaps(gam, dgam, mode, (cell_p, cell_q, cell_atoms), (left_p, left_q))
    e += 8 * _UNIT * f
    e[0] = max(e[0], e[1])
    # (the split's lift, past e_0 >= e_1: see above)
    e += 2 * RATIO_ULPS * _UNIT * gam * sq
    v = f - e
    # Values at rounding level of the profile count as zero (an atom on the
    # last grid point leaves f = 1e-17 there rather than 0).
    nonpos = v <= 16 * _UNIT * max(float(f[0]), 1e-300)
    first = int(nonpos.argmax())
    top = first if nonpos[first] else n - 1
    if top < 2:
        return None, np.array([], dtype=int)
    v[top:] = 0.0
    q_at_or_above = sq[top] + cell_atoms[top - 1]
    v[top - 1] = min(v[top - 1], (gam[top] - gam[top - 1]) * q_at_or_above)
    j_star = _hull_from_top(gam, v, top)
    # c = v - u; where v is still F - e this is exactly t - e, two small numbers, which
    # avoids the rounding of O(1) profile values. Only the replaced points near the
    # top need v - u (and there all values are small).
    t = above_p - gam * above_q
    c = t - e
    tail = slice(min(j_star + 1, top - 1), n)
    c[tail] = v[tail] - (f[tail] - t[tail])
    masses = _masses_with_correction(inner, gam, dgam, c, top)
    # The mass at the top point is the profile's kink there, gamma_T v_{T-1} / (gamma_T - gamma_{T-1})
    # (v is 0 from T on). Taken so rather than as inner + correction, which cancel, it is an
    # exact 0 where the profile ends a cell before T, not a rounding residue beyond the support.
    masses[top] = gam[top] * v[top - 1] / dgam[top - 1]
    # Negative masses far below the masses next to them come from the rounding of the cell
    # masses (divided by the cell widths) or of the profile (e.g. an exact zero at a support
    # boundary); the caller absorbs or clips them and accounts for what is left. Larger ones
    # are real concave kinks.
    # -tiny, made in place: tiny = max(1e-6 (inner_j + inner_(j+1)), 1e-14 max(inner)).
    neg_tiny = inner.copy()
    neg_tiny[:-1] += inner[1:]
    neg_tiny *= 1e-6
    np.maximum(neg_tiny, 1e-14 * max(float(inner.max()), 1e-300), out=neg_tiny)
    np.negative(neg_tiny, out=neg_tiny)
    bad = (masses < neg_tiny).nonzero()[0]
    if hull and bad.size and top > 3:
        # Concave kinks: lower the values around them onto their greatest convex minorant,
        # which lies below the interpolant of v (so below the profile) and is convex there.
        w = _convex_near(gam, v, bad, top)
        c += w - v
        masses = _masses_with_correction(inner, gam, dgam, c, top)
        masses[top] = gam[top] * w[top - 1] / dgam[top - 1]
        bad = (masses < neg_tiny).nonzero()[0]
    return masses, bad


def _convex_near(gam: np.ndarray, v: np.ndarray, bad: np.ndarray, top: int) -> np.ndarray:
    """v with the points within _HULL_REACH of each of ``bad`` (and strictly between grid
    points 1 and ``top``, which stay) replaced by the greatest convex minorant, in gamma, of
    each such stretch with its end points fixed.

    The minorant's vertices are found by :func:`~autoacct.pld.hull.lower_hull`; it is then
    read off by interpolation, and capped by v (interpolation rounds).
    """
    w = v.copy()
    # The points within _HULL_REACH of a bad one, between 1 and top: +1 where each reach
    # starts, -1 past where it ends, summed.
    bad = np.asarray(bad, dtype=np.intp)
    reach = np.zeros(len(v) + 1, dtype=np.intp)
    np.add.at(reach, np.maximum(bad - _HULL_REACH, 1), 1)
    np.add.at(reach, np.minimum(bad + _HULL_REACH, top) + 1, -1)
    near = np.cumsum(reach[:-1]) > 0
    near[1] = near[top] = False
    # Each run of marked points, with the unmarked point on either side as fixed ends.
    edges = np.flatnonzero(np.diff(near.astype(np.int8)))
    for a, b in zip(edges[::2], edges[1::2] + 1):
        idx = a + lower_hull(gam[a:b + 1], v[a:b + 1])
        w[a:b + 1] = np.minimum(np.interp(gam[a:b + 1], gam[idx], v[idx]), v[a:b + 1])
    return w


def _gap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - b for nonnegative a and b, plus a bound on the rounding of the difference."""
    out = a - b
    bound = a + b
    bound *= 4 * _UNIT
    out += bound
    return out


def _suffix_sums(cells_p: np.ndarray, above_p: float, cells_q: np.ndarray,
                 above_q: float) -> tuple[np.ndarray, np.ndarray]:
    """sum_{i >= j} cells_i + above for each j (the mass at or above grid point j), for P and Q."""
    buf = np.empty((2, len(cells_p) + 1))
    buf[:, 0] = above_p, above_q
    buf[0, 1:] = cells_p[::-1]
    buf[1, 1:] = cells_q[::-1]
    buf.cumsum(axis=1, out=buf)
    return buf[0, ::-1], buf[1, ::-1]


_ROUNDS = 60
#: Rounds of the lower construction after which the cells moved on around a bad point
#: double (two on either side at first).
_GROW = 4
#: Seconds per cell of one round of the lower construction (:func:`_second_order`):
#: measured 0.5 (a binomial law, 15 million cell-rounds) to 0.9 microseconds (a Poisson-
#: subsampled randomized response, 120 rounds on 10^4 to 5 10^4 cells) on a loaded 2-core
#: machine, and 0.33 over the DP-SGD cases of benchmarks/sweep.py; about the middle.
ROUND_SECONDS = 5e-7
#: Negative lower masses below -_ABSORB times the largest are absorbed (:func:`_absorb_negatives`),
#: at most _MAX_ABSORBED of them by several masses to their right; smaller ones, at the rounding
#: level of the construction, only by their right neighbour, and where it is too small they are
#: clipped into the deficit.
_ABSORB = 1e-14
_MAX_ABSORBED = 256
#: How each cell's part of the lower profile is bounded (see :func:`_second_order`).
_MIDPOINT, _ONE_END, _ROUNDED = 0, 1, 2
#: Largest ratio of neighbouring cell masses for which a cell starts as _MIDPOINT.
_SMOOTH = 1.5


def _modes(cell_p: np.ndarray) -> np.ndarray:
    """_MIDPOINT for cells whose P-mass is within a factor _SMOOTH of both neighbours', else _ONE_END."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = cell_p[1:] / cell_p[:-1]
        rough = ~((ratio <= _SMOOTH) & (ratio >= 1.0 / _SMOOTH))
    mode = np.full(len(cell_p), _MIDPOINT, dtype=np.int8)
    mode[:-1][rough] = _ONE_END
    mode[1:][rough] = _ONE_END
    return mode
#: Relative excess of the lower masses over the law's mass still treated as rounding.
_EXCESS = 1e-12
_HULL_EDGES = 64
#: Points on either side of a concave kink that :func:`_convex_near` may lower.
_HULL_REACH = 16


def _hull_from_top(gam: np.ndarray, v: np.ndarray, top: int) -> int:
    """Replace the values near ``top`` by their lower convex hull (in place).

    Walks hull edges leftwards from the anchor point ``top``: each edge goes to
    the point of largest slope towards the anchor, and the points it passes are
    lowered onto it. Stops once the values left of the anchor are convex there.
    Returns the index of the leftmost point that was changed, minus one.
    """
    anchor = top
    first = top - 1
    for _ in range(_HULL_EDGES):
        if anchor < 2:
            break
        slopes = (v[anchor] - v[:anchor]) / (gam[anchor] - gam[:anchor])
        j = int(slopes.argmax())
        if j < anchor - 1:
            v[j + 1:anchor] = v[anchor] + slopes[j] * (gam[j + 1:anchor] - gam[anchor])
            first = min(first, j)
        left = (v[j] - v[j - 1]) / (gam[j] - gam[j - 1]) if j >= 1 else -np.inf
        # Done once past the capped point next to the top and convex at the new anchor.
        if j < top - 1 and left <= slopes[j]:
            break
        anchor = j
    return first


def _masses_with_correction(inner: np.ndarray, gam: np.ndarray, dgam: np.ndarray, c: np.ndarray,
                            top: int) -> np.ndarray:
    """``inner`` plus the masses of the piecewise-linear interpolant of c (in gamma, whose
    differences are ``dgam``), linear to the left of the first point; masses beyond point
    ``top`` are zero."""
    slope = np.subtract(c[1:], c[:-1])
    slope /= dgam
    # Slope to the right minus slope to the left of each point (none right of the last).
    masses = np.empty(len(c))
    masses[0] = slope[0] - slope[0]  # 0, or NaN when the slope is not finite
    np.subtract(slope[1:], slope[:-1], out=masses[1:-1])
    masses[-1] = -slope[-1]
    masses *= gam
    masses += inner
    masses[top + 1:] = 0.0
    return masses


def _attained_inf(loss: PrivacyLoss) -> float:
    """The mass a lower PLD may put at +inf: ``p_inf`` less what truncation moved there."""
    return max(loss.p_inf - loss.p_inf_truncated, 0.0)


def _lattice_step(loss: PrivacyLoss, h: float) -> int:
    """m >= 1 when h is the law's lattice ell over m, rounded (ell / m == h), else 0: only then
    does grid point j m h stand for j ell, within the slack DiscreteProfile charges (a lattice
    1e-11 off m h, once taken for it, put atoms 1e-11 below their losses in upper PLDs)."""
    m = round(ell / h) if (ell := loss.lattice) else 0
    return m if ell and m >= 1 and ell / m == h else 0


def _grid_points(loss: PrivacyLoss, h: float, j_lo: int, n: int) -> np.ndarray:
    """The points j h; those that stand for multiples of the law's lattice (j = 0 mod m, see
    :func:`_lattice_step`) are made exact multiples, so that its atoms sit on grid points."""
    g = (j_lo + np.arange(n)) * h
    if m := _lattice_step(loss, h):
        k, on = np.divmod(j_lo + np.arange(n), m)
        g[on == 0] = k[on == 0] * loss.lattice
    return g


#: Roundoffs by which a connect-the-dots ratio of masses is lowered (see _left_share).
RATIO_ULPS = 16.0
_UNIT = MACHINE_EPSILON


def _left_share(m_p: np.ndarray, m_q: np.ndarray, g_left: np.ndarray, h: float) -> np.ndarray:
    """Share of each cell's P-mass sent to its left end so that the Q-mass is kept.

    With ratio r = e^{g_left} m_q / m_p in [e^{-h}, 1], the left share is
    m_p (r - e^{-h}) / (1 - e^{-h}); computed in logs so that far tails neither
    overflow nor divide by zero, and clipped to [0, m_p] against rounding.

    r is lowered by RATIO_ULPS roundoffs, the error of a ratio of masses each computed
    to a few roundoffs: sending P-mass right raises delta at every eps, so the PLD stays
    an upper one where the masses' own difference is below their rounding (a pair
    Poisson-subsampled at q = 1e-24 has m_p = m_q in floating point in the cell of its
    loss 1e-20: r = 1 would send the whole cell to 0 and lose its delta). The cost is
    at most RATIO_ULPS roundoffs of the P-mass above eps - h.
    """
    # One array, in place: log_r = g_left + log m_q - log m_p + log(1 - 16u), then r, then the share.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        share = np.log(m_q)
        share += g_left
        share -= np.log(m_p)
        share += math.log1p(-RATIO_ULPS * _UNIT)
        np.minimum(share, 0.0, out=share)
        np.exp(share, out=share)
        share -= np.exp(-h)
        share *= m_p
        share /= -np.expm1(-h)
    # fmax takes 0 over NaN (an empty cell, m_p = 0, gives 0 or NaN here).
    np.fmax(share, 0.0, out=share)
    return np.minimum(share, m_p, out=share)


def _atoms_q(loss: PrivacyLoss, points: np.ndarray) -> np.ndarray:
    """Q-mass of the atoms of L sitting exactly at ``points``."""
    edges = np.empty(2 * len(points))
    edges[0::2] = np.nextafter(points, -np.inf)
    edges[1::2] = points
    _, m_q = loss.cell_masses(edges)
    return m_q[0::2]
