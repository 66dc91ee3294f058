"""A privacy-loss law restricted to a range of losses: a part of a law, not a law.

For a pair (P, Q) with loss L and lo < hi, the restriction keeps the P- and Q-mass
of L in (lo, hi] (and the mass at +inf when hi is +inf) and drops the rest. It is a
sub-probability measure on the losses, and every quantity the PLD accountant reads
from a law is linear in the measure: the profile

    H(eps) = P(max(lo, eps) < L <= hi) - e^eps Q(max(lo, eps) < L <= hi) (+ p_inf),

the cell masses, and the profile of a composition with other measures. So the law of
L is the sum of its restrictions to (-inf, tau] and (tau, inf], and k-fold
composition expands binomially over them (see :mod:`autoacct.pld.jumps`). The
discretiser's bounds hold for any nonnegative measure (see :mod:`autoacct.pld.discretize`),
so the restriction is discretised like any law. A law held atom by atom is restricted
by :func:`restricted` to the atoms in the range (an atom law again, see there). The part
outside a range, both tails of a law at once, is :func:`outside`: the sum of its two
restrictions, which a law whose tails both reach far splits off (see
:func:`autoacct.pld.jumps.tail_side`).
"""

from __future__ import annotations

import math

import numpy as np

from autoacct.losses.atoms import AtomLoss
from autoacct.losses.base import DiscreteLoss, PrivacyLoss


class RestrictedLoss(PrivacyLoss):
    """The part of ``base`` with loss in (lo, hi] (with +inf when ``hi`` is +inf).

    Parameters
    ----------
    base:
        The law of L = log(dP/dQ) of a pair (P, Q), without atoms, or with atoms it lists
        (:attr:`~autoacct.losses.base.PrivacyLoss.atoms`) none of which is at or near lo or hi.
    lo, hi:
        The range kept, lo < hi (lo may be -inf, hi +inf).
    """

    def __init__(self, base: PrivacyLoss, lo: float, hi: float) -> None:
        if not lo < hi:
            raise ValueError(f"a restriction needs lo < hi, got lo={lo!r}, hi={hi!r}")
        if base.has_atoms and not atoms_apart(base, (lo, hi)):
            raise ValueError("only laws without atoms, or whose listed atoms lie apart from the range's "
                             "ends, are restricted (an atom at a range end would need a share of its own)")
        self.base, self.lo, self.hi = base, float(lo), float(hi)
        values, _ = base.atoms
        self.has_atoms = bool(np.any((values > self.lo) & (values <= self.hi)))
        self.cell_cost = base.cell_cost
        keeps_inf = math.isinf(self.hi)
        self.p_inf = base.p_inf if keeps_inf else 0.0
        self.p_inf_truncated = base.p_inf_truncated if keeps_inf else 0.0
        self.q_ninf = base.q_ninf if math.isinf(self.lo) else 0.0
        self.tight = base.tight

    @property
    def key(self) -> tuple:
        return ("restricted", self.lo, self.hi, self.base.key)

    @property
    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        values, masses = self.base.atoms
        keep = (values > self.lo) & (values <= self.hi)
        return values[keep], masses[keep]

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Clipping the edges to [lo, hi] gives the cells (max(e_i, lo), min(e_(i+1), hi)],
        # empty outside the range; the base's cell masses accept repeated edges.
        return self.base.cell_masses(np.clip(np.asarray(edges, dtype=float), self.lo, self.hi))

    def quantile_range(self, eta: float) -> tuple[float, float]:
        a, b = self.base.quantile_range(eta)
        a, b = max(a, self.lo), min(b, self.hi)
        return (a, b) if a <= b else (b, b)

    def profile(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        flat = eps.ravel()
        order = np.argsort(flat)
        starts = np.clip(np.maximum(flat[order], self.lo), None, self.hi)
        # The cells between consecutive sorted starts and hi; suffix sums give the mass in
        # (max(lo, eps), hi] for each eps (sums of the cells themselves: no cancellation).
        m_p, m_q = self.base.cell_masses(np.append(starts, self.hi))
        above_p = np.cumsum(m_p[::-1])[::-1]
        above_q = np.cumsum(m_q[::-1])[::-1]
        with np.errstate(over="ignore", invalid="ignore"):
            val = np.maximum(above_p - np.exp(flat[order]) * above_q, 0.0) + self.p_inf
        out = np.empty(flat.size)
        out[order] = np.where(np.isfinite(val), val, self.p_inf)
        return out.reshape(eps.shape)


#: An atom closer than this share of its magnitude (or than this, near 0) to a range end is
#: refused: a law's cells may read its atoms a few ulps off their stored values (the mirrored
#: side of :class:`~autoacct.subsampling.without_replacement.SymmetrizedLoss`).
_ATOM_CLEARANCE = 1e-9


def atoms_apart(base: PrivacyLoss, ends: tuple[float, ...]) -> bool:
    """Whether ``base`` lists its atoms (a law with atoms and an empty list reads them through
    its cells only, as the Laplace law does) and each lies clear of the finite ``ends``, so that
    cells clipped at an end split no atom."""
    values, _ = base.atoms
    if not values.size or not np.all(np.isfinite(values)):
        return False
    return all(not np.any(np.abs(values - e) <= _ATOM_CLEARANCE * np.maximum(np.abs(values), 1.0))
               for e in ends if math.isfinite(e))


def restricted(base: PrivacyLoss, lo: float, hi: float) -> PrivacyLoss:
    """The part of ``base`` with loss in (lo, hi] (with +inf when ``hi`` is +inf, -inf when
    ``lo`` is -inf): a :class:`RestrictedLoss` for a law without atoms; for a finite atom law
    whose lower PLD merges its atoms (``merged_lower``, a subsampled discrete law) the
    :class:`~autoacct.losses.atoms.AtomLoss` of its atoms in the range, merged again.

    The atoms are split by their stored values: each atom lands in exactly one part, so the
    parts add up to the law whatever the rounding of a value near lo or hi, which is all the
    binomial expansion of :mod:`autoacct.pld.jumps` needs. Each part is a nonnegative
    measure of isolated atoms, which :func:`~autoacct.pld.merged.merged_down` merges onto a
    lattice below its profile as it does a law's (merging is linear in the measure)."""
    if not lo < hi:
        raise ValueError(f"a restriction needs lo < hi, got lo={lo!r}, hi={hi!r}")
    if not (base.has_atoms and base.merged_lower and isinstance(base, DiscreteLoss)):
        return RestrictedLoss(base, lo, hi)
    place = hi if math.isfinite(hi) else float(np.nextafter(lo, math.inf))
    return _atom_part(base, (base.values > lo) & (base.values <= hi), ("restricted", float(lo), float(hi)),
                      place, math.isinf(hi), math.isinf(lo))


def _atom_part(base: DiscreteLoss, keep: np.ndarray, kind: tuple, place: float, keeps_inf: bool,
               keeps_ninf: bool) -> AtomLoss:
    """The atoms ``keep`` of ``base`` as an atom law keyed by ``kind`` (its part in a range, or
    outside one), with the mass at +inf where ``keeps_inf`` and at -inf where ``keeps_ninf``."""
    values, p, q = base.values[keep], base.p_mass[keep], base.q_mass[keep]
    err = base.value_error[keep] if isinstance(base.value_error, np.ndarray) else base.value_error
    if not values.size:
        # A range between atoms (a threshold moved onto a coarse lattice past the tail's last
        # atom) holds one atom of mass 0 at ``place``, in the part, so that the part is still a
        # law with a support.
        values = np.array([place])
        p, q = np.zeros(1), np.zeros(1)
        err = 0.0
    return AtomLoss((*kind, base.key), values, p, q,
                    p_inf=base.p_inf if keeps_inf else 0.0,
                    q_ninf=base.q_ninf if keeps_ninf else 0.0,
                    p_inf_truncated=base.p_inf_truncated if keeps_inf else 0.0,
                    lattice=base.lattice, tight=base.tight, merged_lower=True, value_error=err)


class OutsideLoss(PrivacyLoss):
    """The part of ``base`` with loss at most lo or above hi (with the masses at +-inf): the sum
    of its restrictions to (-inf, lo] and (hi, +inf], both tails of a law at once. Every
    quantity read from it is the sum of the two parts' (each is linear in the measure)."""

    def __init__(self, base: PrivacyLoss, lo: float, hi: float) -> None:
        if not (lo < hi and math.isfinite(lo) and math.isfinite(hi)):
            raise ValueError(f"the part outside a range needs finite lo < hi, got lo={lo!r}, hi={hi!r}")
        self.base, self.lo, self.hi = base, float(lo), float(hi)
        self.parts = (RestrictedLoss(base, -math.inf, lo), RestrictedLoss(base, hi, math.inf))
        self.cell_cost = 2.0 * base.cell_cost
        self.p_inf = base.p_inf
        self.p_inf_truncated = base.p_inf_truncated
        self.q_ninf = base.q_ninf
        self.tight = base.tight
        self.has_atoms = any(p.has_atoms for p in self.parts)

    @property
    def key(self) -> tuple:
        return ("outside", self.lo, self.hi, self.base.key)

    @property
    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        (v0, m0), (v1, m1) = (p.atoms for p in self.parts)
        return np.concatenate((v0, v1)), np.concatenate((m0, m1))

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        (p0, q0), (p1, q1) = (p.cell_masses(edges) for p in self.parts)
        return p0 + p1, q0 + q1

    def quantile_range(self, eta: float) -> tuple[float, float]:
        # The lower part's range starts at or below lo and the upper one's ends at or above hi;
        # each leaves out at most eta of its mass on its outer side, so their union does.
        (a0, _), (_, b1) = (p.quantile_range(eta) for p in self.parts)
        return a0, b1

    def profile(self, eps: np.ndarray) -> np.ndarray:
        below, above = (np.asarray(p.profile(eps), dtype=float) for p in self.parts)
        # (each part's profile counts the mass at +inf where it keeps it: the upper part alone)
        return below + above


def outside(base: PrivacyLoss, lo: float, hi: float) -> PrivacyLoss:
    """The part of ``base`` with loss at most ``lo`` or above ``hi`` (finite, lo < hi), with the
    masses at +-inf: :class:`OutsideLoss`, or for a finite atom law whose lower PLD merges its
    atoms the :class:`~autoacct.losses.atoms.AtomLoss` of its atoms there (as :func:`restricted`)."""
    if not (lo < hi and math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"the part outside a range needs finite lo < hi, got lo={lo!r}, hi={hi!r}")
    if not (base.has_atoms and base.merged_lower and isinstance(base, DiscreteLoss)):
        return OutsideLoss(base, lo, hi)
    return _atom_part(base, (base.values <= lo) | (base.values > hi), ("outside", float(lo), float(hi)),
                      float(np.nextafter(hi, math.inf)), True, True)
