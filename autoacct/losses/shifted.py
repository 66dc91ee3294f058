"""A privacy-loss law moved by a constant: the measure of X = L - d, not a law.

For a pair (P, Q) with loss L and a real d, the measure of X = L - d under P has, in a
cell (a, b], the P-mass P(a + d < L <= b + d) and the Q-mass (the measure's
E_P[e^{-X}] over the cell) e^d Q(a + d < L <= b + d). Its profile is

    E_P[(1 - e^{eps - X})_+] = delta_L(eps + d),

so k copies of it compose to the measure of S - k d for the composition S of k copies of
L, whose profile read at eps - k d is delta_S(eps). The discretiser's bounds hold for any
nonnegative measure (see :mod:`autoacct.pld.discretize`), so the moved measure is
discretised like a law, on the lattice hZ: for L that lattice is hZ + d. That is its use:
a law whose mass sits in a spike narrower than a cell has a lower discrete PLD that is
first-order short unless the spike sits near a lattice point (no lattice measure below the
profile has the profile's kink between two lattice points), and moving the lattice by a
fraction of a cell puts it there (see :mod:`autoacct.pld.jumps`).
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from autoacct.losses.base import SIZING_TILTS, PrivacyLoss


class ShiftedLoss(PrivacyLoss):
    """The measure of X = L - ``shift`` for the law L of ``base`` (module docstring).

    Parameters
    ----------
    base:
        The law of L = log(dP/dQ) of a pair (P, Q), or a part of one
        (:class:`~autoacct.losses.restricted.RestrictedLoss`), off any lattice of its own and
        not a law of atoms merged by its lower PLD (``merged_lower``): atoms read through its
        cells (the subsampled Laplace mechanism's) move with them.
    shift:
        The finite real d subtracted from every finite loss.
    """

    def __init__(self, base: PrivacyLoss, shift: float) -> None:
        if isinstance(shift, bool) or not isinstance(shift, (int, float)):
            raise TypeError(f"shift must be a real number, got shift={shift!r}")
        if not math.isfinite(shift):
            raise ValueError(f"shift must be finite, got shift={shift!r}")
        if base.merged_lower or base.lattice is not None:
            raise ValueError("only laws off any lattice, whose atoms are read through their cells, are shifted")
        self.base, self.shift = base, float(shift)
        self.has_atoms = base.has_atoms
        self.cell_cost = base.cell_cost
        self.p_inf = base.p_inf
        self.p_inf_truncated = base.p_inf_truncated
        self.q_ninf = base.q_ninf * math.exp(self.shift)
        self.tight = base.tight

    @property
    def key(self) -> tuple:
        return ("shifted", self.shift, self.base.key)

    @property
    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        values, masses = self.base.atoms
        return values - self.shift, masses

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The cells of X are those of L moved by d; a moved edge is off by at most an ulp of
        # itself, the rounding every lattice point (j h) carries already.
        m_p, m_q = self.base.cell_masses(np.asarray(edges, dtype=float) + self.shift)
        return m_p, m_q * math.exp(self.shift)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        a, b = self.base.quantile_range(eta)
        # Rounded outward, so that P(X < a') <= P(L < a) and P(b' < X < inf) <= P(b < L < inf).
        return float(np.nextafter(a - self.shift, -np.inf)), float(np.nextafter(b - self.shift, np.inf))

    def profile(self, eps: np.ndarray) -> np.ndarray:
        return self.base.profile(np.asarray(eps, dtype=float) + self.shift)

    @property
    def max_loss(self) -> float:
        top = self.base.max_loss
        return top if math.isinf(top) else float(np.nextafter(top - self.shift, np.inf))

    @cached_property
    def moments(self) -> tuple[float, float]:
        mean, var = self.base.moments
        return mean - self.shift, var

    @property
    def sizing_cgf(self) -> np.ndarray:
        # log E[e^{lam X}] = log E[e^{lam L}] - lam d.
        return self.base.sizing_cgf - SIZING_TILTS * self.shift
