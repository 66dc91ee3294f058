"""Grid: the lattice spacing h and each component's range, chosen from the mechanism.

The user never picks h or the domain. Connect-the-dots moves each step's loss
by a mean-preserving (in e^{-L}) split across one cell: a bias of at most h^2/8
and an added variance of at most h^2/4 per step. For a composed loss with mean
m and variance V, an eps near m + z sqrt(V) then moves by about
K h^2 (1 + z / sqrt(V)) / 8 for K discretised steps; h is chosen so that this is
half of the tolerance when no law has atoms: the lower bound (see
:mod:`discretize`) then moves by about half as much as the upper one, so the
certified gap is about 3/4 of the tolerance at most; over DP-SGD cases it came
out at 0.2 to 0.75 of it. Atoms between grid points cost the lower bound a
first-order term, so with atoms the share is a quarter. The accountant checks
the result afterwards against its certified lower bound and refines h if the
model was optimistic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...loss import PrivacyLoss


def choose_spacing(parts: Sequence[tuple[PrivacyLoss, int]], eps_scale: float, tol: float) -> float:
    """Lattice spacing h for composing ``parts`` (law, count) to relative accuracy ``tol``.

    When every part is a discrete law on one common lattice, that lattice is the
    grid: the discrete PLDs are then exact and no finer grid can help.
    """
    common = _common_lattice(parts)
    if common is not None:
        return common
    step_sds = [math.sqrt(loss.moments[1]) for loss, _ in parts if loss.moments[1] > 0]
    if not step_sds:
        # Every law is a point mass: no grid resolves anything finer than another.
        return _snap(parts, _MAX_SPACING)
    k_tot = sum(k for _, k in parts)
    mean = sum(k * loss.moments[0] for loss, k in parts)
    var = sum(k * loss.moments[1] for loss, k in parts)
    sd = math.sqrt(var)
    scale = max(eps_scale, 0.05 * sd, 1e-6)
    z = max(1.0, (scale - mean) / sd)
    share = 0.25 if any(loss.has_atoms for loss, _ in parts) else 0.5
    h = math.sqrt(8.0 * share * tol * scale / (k_tot * (1.0 + z / sd)))
    h = max(min(h, 2.0 * min(step_sds), _MAX_SPACING), _MIN_SPACING)
    h = 2.0 ** (math.floor(4.0 * math.log2(h)) / 4.0)
    return _snap(parts, h)


def _common_lattice(parts: Sequence[tuple[PrivacyLoss, int]]) -> float | None:
    """The lattice shared by all parts when all are purely atomic on one lattice."""
    lattices = {loss.lattice for loss, _ in parts}
    if len(lattices) != 1 or None in lattices:
        return None
    if not all(getattr(loss, "purely_atomic", False) for loss, _ in parts):
        return None
    return float(lattices.pop())


def _snap(parts: Sequence[tuple[PrivacyLoss, int]], h: float) -> float:
    """A spacing at most h that puts the parts' atoms on or near grid points.

    With a lattice part, the candidates are its divisors ell/m (the most-composed
    lattice part lies exactly on the grid); otherwise spacings just below h. Among
    the candidates the one that leaves the least atom mass, weighted by count and by
    distance to the nearest grid point, is chosen: an atom between grid points
    costs the lower bound a first-order term.
    """
    lattice_parts = [(k, loss.lattice) for loss, k in parts if loss.lattice]
    if lattice_parts:
        _, ell = max(lattice_parts)
        m0 = math.ceil(ell / h - 1e-9)
        candidates = ell / (m0 + np.arange(min(2 * m0, _MAX_CANDIDATES) + 1))
    else:
        candidates = h * (1.0 - np.arange(0, 120) / 240.0)
    values, weights = [], []
    for loss, k in parts:
        v, w = loss.atoms
        if 0 < len(v) <= _MAX_ATOMS:
            values.append(v)
            weights.append(k * w)
    if not values:
        return float(candidates[0])
    v = np.concatenate(values)
    w = np.concatenate(weights)
    r = v[None, :] / candidates[:, None]
    cost = (np.abs(r - np.round(r)) * w[None, :]).sum(axis=1) * candidates
    best = float(cost.min())
    # The coarsest candidate within a whisker of the best: coarser grids are cheaper.
    return float(candidates[np.flatnonzero(cost <= best * 1.05 + 1e-300)[0]])


#: Coarsest and finest spacings ever used (the finest only matters for nearly
#: degenerate laws, whose loss barely varies).
_MAX_SPACING = 0.05
_MIN_SPACING = 1e-12
#: Most lattice divisors compared when snapping.
_MAX_CANDIDATES = 240
#: Laws with more atoms than this are treated as continuous when snapping.
_MAX_ATOMS = 64


def index_range(loss: PrivacyLoss, h: float, eta: float) -> tuple[int, int]:
    """Grid indices covering ``loss`` up to P-mass ``eta`` on each side, with one spare cell each side."""
    a, b = loss.quantile_range(eta)
    j_lo = _to_index(a, h, math.floor) - 1
    j_hi = _to_index(b, h, math.ceil) + 1
    return j_lo, max(j_hi, j_lo + 2)


def _to_index(x: float, h: float, rounding) -> int:
    r = x / h
    nearest = round(r)
    if abs(r - nearest) < 1e-9 * max(1.0, abs(r)):
        return int(nearest)
    return int(rounding(r))
