"""A lower discrete PLD for a law of isolated atoms: atoms merged onto the lattice, not rounded down.

A lower discrete PLD must be a measure whose profile lies below the law's at every eps
(see :mod:`discretize`). Two ways to make one for an atom at loss v between the lattice
points g_j < v < g_(j+1):

* Rounding it down to g_j (Koskela et al. 2021, Lemma 6). Every loss only decreases, so
  the profile does; but the mean loss falls by v - g_j, about h/2 an atom, and k copies
  move eps by about k h/2: first order in h, which k multiplies.
* Merging it with part of the next atom below g_j. Merging outcomes of a pair is
  post-processing, and a merged outcome has P- and Q-masses the sums of its parts', so
  its loss lies between theirs (Blackwell 1953: the merged pair is dominated by the
  pair). With the share of the lower atom chosen so that the merged loss is g_j exactly,
  the merged measure puts its mass on the lattice and keeps E_P[e^{-L}] (the Q-mass):
  in the variable X = e^{-L} it is a mean-preserving contraction of the law, whose
  profile E_P[(1 - e^eps X)_+] lies below the law's at every eps (the integrand is convex
  in X) and equals it for eps outside (g_j, v). The profile is lowered only between
  the two atoms, so k copies move eps by about k times the share moved times the
  atoms' spacing (a variance), not k times a mean shift.

:func:`merged_down` sweeps the atoms from the largest loss down, merging each run into
the lattice point at or below its first atom's loss with the least share of the next
atom that brings the run's loss down to that point. Where atoms are dense at the
lattice's scale a run holds all the atoms of about a cell and the merge moves mass by
less than a cell: second order in h, as the second-order construction of
:mod:`discretize` is. The last run, the lowest atoms, has no atom below: it is lifted to
the lattice point above it with shares of the masses placed above that point
(:func:`_place_last`), where rounding it down would be first order.

Rounding. Each run's loss is brought to g_j + _MARGIN rather than g_j (the merged loss
then still lies at or above g_j after the few roundoffs of its sums, so that placing it
at g_j only lowers it), and every mass is scaled down by 1 - _MASS_ULPS, which covers the
roundoff of splitting an atom's mass into two shares. Atoms are taken at their values
less ``value_error`` (a lower loss than the true one); those below the lattice are
dropped and those above it taken at its top point, both of which only lower losses.
"""

from __future__ import annotations

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses import DiscreteLoss, PrivacyLoss

#: A merged run's loss is brought this far above its lattice point (relative to e^{-L}).
_MARGIN = 1e-12
#: Relative scaling of every mass down, for the roundoff of splitting atoms.
_MASS_ULPS = 64.0 * MACHINE_EPSILON
#: Beyond this spread of the lattice's losses, e^{-L} relative to the top point leaves the
#: floating-point range and the atoms are rounded down instead.
_MAX_SPREAD = 600.0


def on_any_lattice(loss: PrivacyLoss) -> bool:
    """Whether a law may be discretised on any lattice the accountant chooses, a coarser one
    included: a law without atoms or a lattice of its own, or a finite atom law off any lattice
    whose lower PLD merges its atoms (``merged_lower``: a subsampled discrete law). A law on a
    lattice of its own composes exactly there. The split into bulk and tail
    (:func:`autoacct.pld.jumps.splits`) asks it: its parts are restricted laws
    (:func:`~autoacct.losses.restricted.restricted`), which take no atoms read through a law's
    cells (the subsampled Laplace mechanism's)."""
    return loss.lattice is None and (not loss.has_atoms or loss.merged_lower)


def merged_down(loss: DiscreteLoss, h: float, j_lo: int, n: int) -> np.ndarray | None:
    """P-masses on the lattice points (j_lo + i) h, i < n, of the measure that merges the finite
    atoms of ``loss`` onto them (module docstring): with the mass at +inf the law attains,
    its profile lies below the law's. None where the lattice spans more than _MAX_SPREAD
    in loss."""
    g = (j_lo + np.arange(n)) * h
    if n < 1 or float(g[-1] - g[0]) > _MAX_SPREAD:
        return None
    v = np.asarray(loss.values, dtype=float) - loss.value_error
    p = np.asarray(loss.p_mass, dtype=float)
    keep = (v >= g[0]) & (p > 0) & np.isfinite(v)
    v, p = np.minimum(v[keep], g[-1]), p[keep]
    order = np.argsort(-v, kind="stable")
    v, p = v[order], p[order]
    # X = e^{g_top - L} >= 1 for atoms and lattice points alike: the lattice point j has t[j].
    x = np.exp(g[-1] - v)
    t = np.exp(g[-1] - g)
    idx = np.searchsorted(g, v, side="right") - 1
    masses = np.zeros(n)
    _sweep(p.tolist(), x.tolist(), idx.tolist(), t.tolist(), masses)
    masses *= 1.0 - _MASS_ULPS
    return masses


def _sweep(p: list[float], x: list[float], idx: list[int], t: list[float], masses: np.ndarray) -> None:
    """Merge the atoms (P-masses p, X-values x increasing, lattice points idx at or below their
    losses) into runs, adding each run's P-mass to ``masses`` at its lattice point."""
    a_run = b_run = 0.0
    j = -1
    target = 0.0
    for i in range(len(p)):
        pi, xi = p[i], x[i]
        if a_run > 0.0:
            if xi <= target:
                a_run += pi
                b_run += pi * xi
                continue
            # The share s of this atom with (b + s x) / (a + s) = target.
            share = max(target * a_run - b_run, 0.0) / (xi - target)
            if share >= pi:
                a_run += pi
                b_run += pi * xi
                continue
            masses[j] += a_run + share
            pi -= share
            a_run = 0.0
        # A new run from what is left of this atom, aimed at the lattice point at or below it.
        j = idx[i]
        target = t[j] * (1.0 - _MARGIN)
        if xi > target:
            # The atom sits on its lattice point (within the margin): it is placed there.
            masses[j] += pi
            continue
        a_run, b_run = pi, pi * xi
    if a_run > 0.0:
        _place_last(a_run, b_run, j, t, masses)


def _place_last(a: float, b: float, j: int, t: list[float], masses: np.ndarray) -> None:
    """Place the last run (P-mass a, sum b of P-mass times X), whose loss lies between the
    lattice points j and j + 1 and which no atom below brings down to point j: merged with
    shares of the masses already placed above point j + 1, nearest first, so that its loss
    rises to point j + 1, where the masses there suffice; else at point j (rounded down).

    Each mass placed at a point j' is merged runs of loss at or above g_j' (X at most t[j']):
    taking a share of it is merging further. Its X is taken as t[j'], at least its true one,
    so the true merged X is at most the one computed, and its loss at or above g_(j+1). Merging
    keeps E_P[X], so this costs only where the profile lies between the merged parts (second
    order), where rounding down moves the run's loss by up to a cell: a first-order error that
    k copies multiply when the lowest atom is heavy (Poisson-subsampled KaryRandomizedResponse:
    91% of the P-mass at log(1 - q + q e^{-eps0})).
    """
    n = len(t)
    if j + 1 < n:
        target = t[j + 1] * (1.0 - _MARGIN)
        # The shares needed from the points above, nearest first: (point, share).
        taken: list[tuple[int, float]] = []
        a_new, b_new = a, b
        # (the points holding mass, found at once: a lattice of 4e6 points may hold a few)
        for point in (j + 2 + np.flatnonzero(masses[j + 2:] > 0.0)).tolist():
            m = float(masses[point])
            # The share s of this point's mass with (b + s t) / (a + s) = target.
            share = (b_new - target * a_new) / (target - t[point])
            if share <= m:
                taken.append((point, share))
                for partner, s in taken:
                    masses[partner] -= s
                masses[j + 1] += a + sum(s for _, s in taken)
                return
            taken.append((point, m))
            a_new += m
            b_new += m * t[point]
    masses[j] += a

