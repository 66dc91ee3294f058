"""A Chernoff bound on the reversed pairs' composition from the forward pairs' upper PLDs.

For a pair (P, Q) with loss L = log(dP/dQ), the reversed pair (Q, P) has loss
L' = -L, and under its first measure Q

    E_Q[e^{theta L'}; L' finite] = E_P[e^{-(1 + theta) L}; L finite],

the forward law's moment generating function at s = -(1 + theta) <= -1. A mechanism's
two directions under add/remove neighbours are such pairs where a Poisson-subsampled
pair ((1 - q) Q + q P, Q) meets its addition pair (Q, (1 - q) Q + q P) (laws say so by
:meth:`~autoacct.losses.PrivacyLoss.reverses`). The forward direction's upper PLDs,
made for its own composition, then bound the reversed direction's moment generating
function, and with it the reversed composition's delta (:class:`ChernoffProfile`), at
no discretisation of the reversed laws: where that bound puts the reversed direction
below the forward one's lower bound, it cannot set eps (1,000 distinct subsampled
Gaussian steps: 0.1 s here against 0.5 s for discretising the 1,000 reversed laws).

Why the connect-the-dots PLD bounds it (Doroshenko et al. 2022 for the split): each
cell (g_j, g_(j+1)] sends its P-mass to its two ends so that its P-mass and its Q-mass
E_P[e^{-L}; cell] are kept. In u = e^{-L} the split is the two-point law on the cell's
ends with the cell's mean of u, which dominates the cell's own law of u in the convex
order; e^{sL} = u^{1 + theta} is convex in u, so the split's sum is at least the cell's.
Three corrections make this a bound on the computed PLD:

* the split's ratio is lowered by a few roundoffs (:data:`~autoacct.pld.discretize.RATIO_ULPS`,
  sending P-mass to the larger loss, the safe side for delta but not here): each cell's
  sum may be short by at most (RATIO_ULPS + 16) u (e^{(1 + theta) h} - 1) / (1 - e^{-h})
  of itself, u the unit roundoff, and a relative 1e-9 covers the rounding of the cell
  masses and of the sums, as for a single step's PLD (:data:`~autoacct.pld.compose.LAW_REL`);
* the P-mass below the grid sits at its first point g_0 in the PLD: it is at most that
  point's mass, at losses no smaller than -M', M' the reversed law's largest finite loss
  (none exists where -M' > g_0), so it adds at most m_0 e^{(1 + theta) M'};
* the P-mass above the grid sits at +inf in the PLD: it is at most the PLD's mass at +inf
  beyond the law's own, at losses above the last point g_n, adding at most that times
  e^{-(1 + theta) g_n}.

The reversed laws' own mass at +inf (Q-mass where P vanishes) is theirs, exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses import PrivacyLoss
from autoacct.pld.chernoff import ChernoffProfile
from autoacct.pld.components import Component
from autoacct.pld.compose import LAW_REL
from autoacct.pld.cumulants import CHERNOFF_THETAS, Components, Cumulant, composed_inf_mass, counted_sum_up
from autoacct.pld.discretize import RATIO_ULPS
from autoacct.pld.lawcache import log_mgf_up
from autoacct.pld.mgf import log_mgfs_up

#: The exponents theta > 0 of the reversed direction's bound (16 per decade, as its own Chernoff bound's).
_THETAS = CHERNOFF_THETAS
#: The forward laws' exponents s = -(1 + theta) that give them.
_EXPONENTS = -(1.0 + _THETAS)


def reversed_chernoff(forward: Sequence[Component], reversed_laws: Sequence[PrivacyLoss],
                      forward_laws: Sequence[PrivacyLoss]) -> tuple[ChernoffProfile, ChernoffProfile] | None:
    """(upper, lower) Chernoff profiles of the composition of ``reversed_laws``, each taken as
    often as the ``forward`` component at its place, from those components' upper PLDs
    (connect-the-dots discretisations of ``forward_laws``, all on one lattice); None unless
    each reversed law reverses its forward law and has a finite largest loss."""
    if not forward or len(forward) != len(reversed_laws) or len(forward) != len(forward_laws):
        return None
    if any(not rev.reverses(fwd) or not math.isfinite(rev.max_loss) or c.upper.leak > 0.0
           for c, rev, fwd in zip(forward, reversed_laws, forward_laws, strict=True)):
        return None
    h, s = forward[0].upper.h, _EXPONENTS
    # One law's row is kept with it while it is a cached discretised law (a ledger or a
    # calibration asks for the same law's bound query after query); several laws' rows are
    # computed at once.
    # (each row rounded up by its log-sum-exp's rounding, and the sum below by (m + 2) roundoffs)
    table = (log_mgf_up(forward[0].upper, s)[None, :] if len(forward) == 1
             else log_mgfs_up([c.upper for c in forward], s))
    with np.errstate(over="ignore"):
        # (capped: an empty law's row is -inf, and -inf + inf would be NaN)
        short = np.minimum((RATIO_ULPS + 16.0) * MACHINE_EPSILON * np.expm1(-s * h) / -math.expm1(-h), 1e300)
    table = table + np.log1p(LAW_REL + short)
    for i, (c, rev, fwd) in enumerate(zip(forward, reversed_laws, forward_laws, strict=True)):
        # The two outer terms in logs: their exponentials may overflow where a mass is 0.
        pld = c.upper
        m_0 = float(pld.masses[0])
        below = math.log(m_0) - s * rev.max_loss if m_0 > 0.0 and -rev.max_loss <= pld.start * h else -np.inf
        beyond = max(pld.p_inf - fwd.p_inf, 0.0) * (1.0 + 4.0 * MACHINE_EPSILON) + 4.0 * MACHINE_EPSILON * pld.p_inf
        last = (pld.start + pld.masses.size - 1) * h
        above = math.log(beyond) + s * last if beyond > 0.0 else -np.inf
        table[i] = np.logaddexp(table[i], np.logaddexp(below, above))
    total = counted_sum_up(table, np.array([float(c.count) for c in forward]))
    values = np.concatenate(([0.0], total))
    k = Cumulant(Components(forward), "upper", h, values=values, grid=np.concatenate(([0.0], _THETAS)))
    inf_mass = composed_inf_mass([(rev.p_inf, c.count) for c, rev in zip(forward, reversed_laws, strict=True)],
                                 True)
    return ChernoffProfile(k, inf_mass, True), ChernoffProfile(k, inf_mass, False)


def reverses_law_by_law(directions: Sequence[Sequence[tuple[PrivacyLoss, int]]]) -> bool:
    """Whether there are two directions of (law, count) parts and the second's laws reverse
    the first's, part by part with the same counts (:meth:`PrivacyLoss.reverses`): the second
    direction's composed pair is then the first's reversed, (Q, P) for (P, Q)."""
    if len(directions) != 2 or len(directions[0]) != len(directions[1]):
        return False
    return all(k == k2 and rev.reverses(fwd) for (fwd, k), (rev, k2) in zip(*directions, strict=True))


def inverse_tradeoff(curve: Callable[[np.ndarray], np.ndarray], alpha: np.ndarray) -> np.ndarray:
    """A lower bound on the tradeoff curve of the reversed pair (Q, P) at type I errors
    ``alpha``, from ``curve``, a lower bound g on the curve f of (P, Q).

    The reversed pair's curve is f's inverse, f^-1(a) = inf {x : f(x) <= a} (Dong, Roth and
    Su 2022, Section 2, with this generalised inverse: the type II error of the best test of
    Q against P at level a).
    Where g(x) > a, f(x) >= g(x) > a at x and, f being non-increasing, left of it: f^-1(a)
    >= x. So any point found with g(x) > a bounds f^-1(a) from below, whatever g's shape; the
    largest is sought by halving [0, 1] _HALVINGS times, every a at once; 0 where none is
    found."""
    lo, hi = np.zeros(alpha.shape), np.ones(alpha.shape)
    found = np.zeros(alpha.shape, dtype=bool)
    for _ in range(_HALVINGS):
        mid = 0.5 * (lo + hi)
        above = curve(mid) > alpha
        found |= above
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(found, lo, 0.0)


#: Halvings of :func:`inverse_tradeoff`: to 2^-60 of [0, 1].
_HALVINGS = 60
