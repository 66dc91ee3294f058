"""The common part of the subsampled laws: cell masses at transformed edges and representations.

Every law here is built from a *base* law: the privacy loss L = log(dP/dQ) of
a dominating pair (P, Q) of the mechanism that runs on the sample. The
transformed laws never re-derive densities; their cell masses are the base
law's cell masses at transformed edges, so whatever tail precision the base
law has is kept.

* :class:`PoissonRemoveLoss`: the pair ((1-q) Q + q P, Q), loss phi(L) with
  phi(x) = log(1 - q + q e^x) (Poisson subsampling, removal direction).
* :class:`PoissonAddLoss`: the pair (Q, (1-q) Q + q P), loss -phi(L)
  (Poisson subsampling, addition direction).
* :class:`SymmetrizedLoss`: the symmetric pair whose profile equals that of a
  given pair for eps >= 0 (and is fixed by symmetry for eps < 0); the
  dominating pair of subsampling under the replace-one relation.
* :class:`MixtureLoss`: the disjoint union of weighted pairs (sampling with
  replacement, where the differing record is drawn a random number of times).

``moments`` and ``sizing_cgf`` of these laws (used only to size grids) come from a
*representation*: finitely many loss values with P- and Q-masses. A base law
may give its own; otherwise it is cut into cells, and for a cell the
representative value is log(P-mass / Q-mass), the loss at which e^L has its
conditional Q-mean, so that smooth functions of e^L (such as phi) are
integrated to second order. Representations are rebuilt when asked for (only
the summaries are kept): they are needed once per law, and thousands of distinct
laws would otherwise each hold a few thousand nodes.
"""

from __future__ import annotations

import math
import weakref
from abc import abstractmethod
from functools import cached_property

import numpy as np

from autoacct.losses import PrivacyLoss, segment_sums, sizing_cgf_of

#: Grid points representing a base law for the moments, which only size grids: they give the
#: moments of subsampled Gaussians to about 1e-4 of the standard deviation.
_REPR_POINTS = 1001
#: Tail mass left out of a base law's representation on each side.
_REPR_ETA = 1e-15

Representation = tuple[np.ndarray, np.ndarray, np.ndarray]


# ----------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------

def masses_between(loss: PrivacyLoss, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P- and Q-masses of the finite part of ``loss`` in (t_i, t_{i+1}], for non-decreasing t.

    ``t`` may repeat values (a repeated value makes an empty cell) and contain
    +-inf. The base law is asked once, on the distinct values only, so that it
    always sees strictly increasing edges: the cells (t_i, t_{i+1}] with t_i < t_{i+1}
    are, in order, exactly the cells between consecutive distinct values.
    """
    t = np.asarray(t, dtype=float)
    grows = t[1:] != t[:-1]
    m_p, m_q = np.zeros(max(len(t) - 1, 0)), np.zeros(max(len(t) - 1, 0))
    if grows.any():
        first = int(grows.argmax())
        if grows[first:].all():
            # Only a first run repeats (edges below a map's range, all sent to -inf): the
            # distinct values are t[first:], and the cells from ``first`` on all grow.
            m_p[first:], m_q[first:] = loss.cell_masses(t[first:])
        else:
            mp_u, mq_u = loss.cell_masses(t[np.concatenate(([True], grows))])
            m_p[grows] = mp_u
            m_q[grows] = mq_u
    return m_p, m_q


def masses_on(loss: PrivacyLoss, edge_sets: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`masses_between` for several non-decreasing edge arrays, with one call to ``loss``.

    The law is asked for the masses of the elementary cells between all distinct
    edges; each requested cell is the sum of the elementary cells it covers (sums
    of non-negative terms, so tail cells keep their relative precision).
    """
    u = np.unique(np.concatenate([np.asarray(t, dtype=float) for t in edge_sets]))
    out = []
    if len(u) < 2:
        for t in edge_sets:
            z = np.zeros(max(len(t) - 1, 0))
            out.append((z, z.copy()))
        return out
    mp_u, mq_u = loss.cell_masses(u)
    for t in edge_sets:
        if len(t) < 2:
            out.append((np.zeros(0), np.zeros(0)))
            continue
        idx = np.searchsorted(u, t)
        out.append((segment_sums(mp_u, idx), segment_sums(mq_u, idx)))
    return out


def previous_float(x: np.ndarray) -> np.ndarray:
    """The largest float below each finite entry; infinities are kept.

    Turns a half-open cell [a, b) into the cell (prev(a), prev(b)] holding the
    same floating-point values, so atoms on an edge land in the right cell.
    """
    x = np.asarray(x, dtype=float)
    return np.where(np.isfinite(x), np.nextafter(x, -np.inf), x)


def cell_of(edges: np.ndarray, value: float) -> int | None:
    """Index i with edges[i] < value <= edges[i+1], or None when there is none."""
    i = int(np.searchsorted(edges, value, side="left")) - 1
    if 0 <= i < len(edges) - 1:
        return i
    return None


def representation(loss: PrivacyLoss) -> Representation:
    """Finitely many (value, P-mass, Q-mass) triples approximating the finite part of ``loss``.

    Laws with a ``_representation`` of their own give it (those of this module, and
    :class:`~autoacct.losses.GaussianLoss`, which integrates its two marginals
    separately); any other law is represented by its cell masses on a fine grid
    over its quantile range, each cell at the loss log(P-mass / Q-mass) (the
    cell's midpoint when a mass vanishes).
    """
    own = getattr(loss, "_representation", None)
    if own is not None:
        return own
    if loss not in _GRID_REPRESENTATIONS:
        _GRID_REPRESENTATIONS[loss] = _grid_representation(loss)
    return _GRID_REPRESENTATIONS[loss]


#: Grid representations of laws that have no own one, kept while the law lives: the
#: removal and addition laws of a subsampled mechanism share one base law.
_GRID_REPRESENTATIONS: weakref.WeakKeyDictionary[PrivacyLoss, Representation] = weakref.WeakKeyDictionary()


def _grid_representation(loss: PrivacyLoss) -> Representation:
    """The representation of :func:`representation` for a law without its own."""
    a, b = (float(x) for x in loss.quantile_range(_REPR_ETA))
    if b <= a:
        a, b = a - 1e-9, a + 1e-9
    grid = np.linspace(a, b, _REPR_POINTS)
    edges = np.concatenate(([-np.inf], grid, [np.inf]))
    m_p, m_q = loss.cell_masses(edges)
    m_p = np.asarray(m_p, dtype=float)
    m_q = np.asarray(m_q, dtype=float)
    mids = np.concatenate(([a], 0.5 * (grid[1:] + grid[:-1]), [b]))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(m_p) - np.log(m_q)
    lo = np.concatenate(([-np.inf], grid))
    hi = np.concatenate((grid, [np.inf]))
    ok = np.isfinite(ratio)
    values = np.where(ok, np.clip(ratio, lo, hi), mids)
    keep = (m_p > 0) | (m_q > 0)
    return values[keep], m_p[keep], m_q[keep]


def moments_of(rep: Representation) -> tuple[float, float]:
    """Mean and variance under P of a representation (finite part, renormalised)."""
    values, m_p, _ = rep
    tot = float(m_p.sum())
    if tot <= 0.0:
        return 0.0, 0.0
    mean = float((m_p * values).sum() / tot)
    var = float((m_p * (values - mean) ** 2).sum() / tot)
    return mean, max(var, 0.0)


class RepresentedLoss(PrivacyLoss):
    """A law whose grid-sizing summaries, :attr:`moments` and :attr:`sizing_cgf`, come from
    its :attr:`_representation`, built once for both (see the module docstring)."""

    @property
    @abstractmethod
    def _representation(self) -> Representation: ...

    # Each summary is made when first asked for, from the representation made again: a
    # direction that its reversal settles is asked for its moments only (they weigh the two
    # directions), and the sizing table's 22 tilts cost more than the representation (a
    # subsampled Gaussian's: 71 and 42 microseconds, the moments 11).
    @cached_property
    def moments(self) -> tuple[float, float]:
        return moments_of(self._representation)

    @cached_property
    def sizing_cgf(self) -> np.ndarray:
        values, p_mass, _ = self._representation
        return sizing_cgf_of(values, p_mass)


def check_q(q: float) -> float:
    q = float(q)
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must lie in (0, 1) for a subsampled loss law, got {q!r}")
    return q


class PoissonLossMap:
    """phi(x) = log(1 - q + q e^x) and its inverse, to full relative precision in the tails."""

    def __init__(self, q: float) -> None:
        self.q = q
        self.log_q = math.log(q)
        #: log(1 - q): the image of x = -inf.
        self.c = math.log1p(-q)

    def forward(self, x: np.ndarray) -> np.ndarray:
        """phi(x) = logaddexp(log(1-q), log q + x); -inf maps to log(1 - q), and 0 exactly to 0.

        (Rounded, log((1-q) + q) may come out an ulp above 0: an outcome both pairs give
        equal mass, such as the other buckets of k-ary randomized response, would then count
        as a positive loss of the removal pair, and its symmetrisation, which needs the mass
        above 0 of both distributions to total at most 1, fails.)"""
        x = np.asarray(x, dtype=float)
        return np.where(x == 0.0, 0.0, np.logaddexp(self.c, self.log_q + x))

    def inverse(self, y: np.ndarray, increasing: bool = False) -> np.ndarray:
        """phi^{-1}(y) = log((e^y - 1 + q) / q): -inf for y <= log(1-q), +inf at +inf.

        For 0 <= y <= 1 as log(expm1(y) + q) - log q (two positive terms, no cancellation
        however small y and q are: with q below an ulp of 1, 1 - (1-q) e^{-y} is 0 in
        floating point; and exactly 0 at y = 0, see :meth:`forward`); for y > 1 as
        y + log1p(-(1-q) e^{-y}) - log q, which does not overflow; for log(1-q) < y < 0 as
        log(1-q) + log(expm1(y - log(1-q))) - log q, which keeps its precision right down
        to the bottom of the range.

        With ``increasing`` (y non-decreasing, as cell edges are) the three ranges are
        consecutive runs of y, found by bisection and taken as slices: the same values
        without masking the whole array three times.
        """
        y = np.asarray(y, dtype=float)
        out = np.full(y.shape, -np.inf)
        big: slice | np.ndarray
        small: slice | np.ndarray
        mid: slice | np.ndarray
        if increasing:
            i_mid, i_big = (int(i) for i in np.searchsorted(y, (self.c, 1.0), side="right"))
            i_small = int(np.searchsorted(y, 0.0, side="left"))
            big, small, mid = slice(i_big, None), slice(i_small, i_big), slice(i_mid, i_small)
        else:
            big = y > 1.0
            small = (y >= 0.0) & ~big
            mid = (y > self.c) & (y < 0.0)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            yb = y[big]
            out[big] = yb + np.log1p(-(1.0 - self.q) * np.exp(-yb)) - self.log_q
            out[small] = np.log(np.expm1(y[small]) + self.q) - self.log_q
            d = y[mid] - self.c
            out[mid] = self.c + np.log(np.expm1(d)) - self.log_q
        return out
