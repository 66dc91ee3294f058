"""Loss laws held atom by atom: large and infinite discrete supports, and the bounded-range envelope.

Infinite supports are truncated soundly: the P-mass of every truncated tail
(at most :data:`TAIL_MASS` per tail) is moved to the atom L = +inf, which can
only raise the privacy profile; when a support is too large to enumerate,
adjacent outcomes are merged into one whose loss is the largest loss of the
group, which again only raises it (see :func:`atoms`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses import ATOM_MASS_ULPS, ContinuousLoss, DiscreteLoss

#: P-mass of each truncated tail of an infinite support; it is moved to L = +inf.
TAIL_MASS = 1e-40
#: Most atoms a loss law keeps; larger supports are merged soundly into this many groups.
MAX_ATOMS = 1 << 17
#: Outcomes evaluated at once when a large support is merged into groups.
_CHUNK = 1 << 20
#: Integer parameters must stay exactly representable as floats.


class AtomLoss(DiscreteLoss):
    """Loss law of a pair on countably many outcomes, held as sorted arrays of atoms.

    Like :class:`autoacct.losses.DiscreteLoss`, but for large supports: its
    ``key`` is given by the caller (the mechanism's parameters) instead of
    the arrays, and its profile and quantiles use precomputed tail sums.

    Parameters
    ----------
    key:
        Hashable identity of the law (equal keys must mean equal laws).
    values, p_mass, q_mass:
        Finite loss values and the P- and Q-masses of their atoms
        (p_mass = e^value q_mass).
    p_inf, q_ninf:
        P-mass at L = +inf and Q-mass at L = -inf.
    p_inf_truncated:
        The part of ``p_inf`` that is truncated finite-loss mass (see
        :attr:`autoacct.losses.PrivacyLoss.p_inf_truncated`).
    lattice:
        Spacing h of a lattice hZ containing every value, or None.
    tight:
        False when the atoms only dominate the mechanism's pair (merged by
        :func:`_atoms`): lower bounds computed from them are then not certified
        (see :attr:`autoacct.losses.PrivacyLoss.tight`).
    merged_lower, value_error:
        See :attr:`autoacct.losses.PrivacyLoss.merged_lower` and ``value_error``.
    """

    def __init__(self, key: tuple, values: np.ndarray, p_mass: np.ndarray, q_mass: np.ndarray, *,
                 p_inf: float = 0.0, q_ninf: float = 0.0, lattice: float | None = None,
                 p_inf_truncated: float = 0.0, tight: bool = True, merged_lower: bool = False,
                 value_error: float | np.ndarray = 0.0) -> None:
        super().__init__(values, p_mass, q_mass, p_inf=min(max(p_inf, 0.0), 1.0),
                         q_ninf=min(max(q_ninf, 0.0), 1.0))
        self.p_inf_truncated = min(max(p_inf_truncated, 0.0), self.p_inf)
        # Set after the base class: truncated lattice laws are not treated as purely atomic.
        self.lattice = lattice
        self.tight = tight
        self.merged_lower = merged_lower
        self.value_error = value_error
        self._key = key
        # _sp[i] = sum_{j >= i} p_j (summed from the small end), _pp[i] = sum_{j < i} p_j.
        self._sp = np.concatenate((np.cumsum(self.p_mass[::-1])[::-1], [0.0]))
        self._sq = np.concatenate((np.cumsum(self.q_mass[::-1])[::-1], [0.0]))
        self._pp = np.concatenate(([0.0], np.cumsum(self.p_mass)))

    @property
    def key(self) -> tuple:
        return self._key

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        """Tail sums over up to n atoms: a few roundoffs per atom of the masses involved, and
        each mass's own (see :data:`~autoacct.losses.base.ATOM_MASS_ULPS`)."""
        eps = np.asarray(eps, dtype=float)
        idx = np.searchsorted(self.values, eps, side="right")
        sq = self._sq[idx]
        # Atoms above eps have e^eps q <= p <= 1: the product only overflows where q = 0.
        with np.errstate(over="ignore", invalid="ignore"):
            mass = self._sp[idx] + np.where(sq > 0, np.exp(np.minimum(eps, 700.0)) * sq, 0.0) + self.p_inf
        return (4.0 * len(self.values) + ATOM_MASS_ULPS) * MACHINE_EPSILON * np.minimum(mass, 2.0)

    def profile(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        idx = np.searchsorted(self.values, eps, side="right")
        sp = self._sp[idx]
        sq = self._sq[idx]
        with np.errstate(over="ignore", invalid="ignore"):
            val = np.where(sq > 0, sp - np.exp(eps) * sq, sp)
        val = np.where(np.isfinite(val), val, 0.0)
        return np.clip(val, 0.0, None) + self.p_inf

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The atoms' P- and Q-masses summed cell by cell; for a law that only dominates its
        pair (not ``tight``, read for upper bounds alone) rounded outward, P up and Q down, by the
        bound of :meth:`~autoacct.losses.DiscreteLoss.cell_masses_with_error`.

        The discretiser's upper PLD only rises with a cell's P-mass and falls with its Q-mass
        (connect the dots keeps the Q-mass), so with these factors it bounds the atoms' profile
        however many atoms share a cell (an epoch of balls-in-bins has 1e5 atoms, which had
        moved 4 n u, 7e-11, to +inf for this). A ``tight`` law's sums are left as they are:
        its readers move them each way themselves (:meth:`cell_masses_with_error`)."""
        if self.tight:
            return super().cell_masses(edges)
        m_p, m_q, rel = super().cell_masses_with_error(edges)
        assert rel is not None  # (a DiscreteLoss bounds its sums)
        # (4 u more for the products' own rounding and for a caller's sum of two neighbouring
        # cells, the discretiser's half cells: a lone atom's mass is then moved too)
        slack = rel + 4.0 * MACHINE_EPSILON
        return m_p * (1.0 + slack), m_q * (1.0 - slack)

    def cell_masses_with_error(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """A ``tight`` law's plain sums and their bound; a dominating law's sums are moved outward
        by :meth:`cell_masses` already (its lower PLD is not certified), so None."""
        if self.tight:
            return super().cell_masses_with_error(edges)
        m_p, m_q = self.cell_masses(edges)
        return m_p, m_q, None

    def quantile_range(self, eta: float) -> tuple[float, float]:
        n = len(self.values)
        i = int(np.searchsorted(self._pp, eta, side="right")) - 1
        i = min(max(i, 0), n - 1)
        j = int(np.argmax(self._sp[1:] <= eta))
        a, b = float(self.values[i]), float(self.values[j])
        return min(a, b), max(a, b)


def atoms(lo: int, hi: int, fn: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
           max_atoms: int = MAX_ATOMS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Atoms (values, p_mass, q_mass) of the outcomes lo..hi, merged into at most ``max_atoms``.

    ``fn(i)`` returns (loss, log P-mass) of the integer outcomes ``i``, the
    loss nondecreasing in i. When there are too many outcomes, consecutive
    runs of B of them are merged into one atom carrying their total P-mass at
    the run's largest loss, with Q-mass P e^{-loss} (at most the run's true
    Q-mass). The true pair is a post-processing of the merged one (split each
    merged atom back in proportion to P, and send the Q-mass deficit, placed
    on an outcome P cannot produce, to the outcomes it came from), so the
    merged pair dominates it.
    """
    count = hi - lo + 1
    if count <= max_atoms:
        i = np.arange(lo, hi + 1, dtype=float)
        loss, logp = fn(i)
        return loss, np.exp(logp), np.exp(logp - loss)
    block = -(-count // max_atoms)
    vals, ps = [], []
    per_chunk = max(1, _CHUNK // block) * block
    for start in range(lo, hi + 1, per_chunk):
        stop = min(start + per_chunk - 1, hi)
        i = np.arange(start, stop + 1, dtype=float)
        loss, logp = fn(i)
        full = (len(i) // block) * block
        if full:
            vals.append(loss[block - 1:full:block])
            ps.append(special.logsumexp(logp[:full].reshape(-1, block), axis=1))
        if full < len(i):
            vals.append(loss[-1:])
            ps.append(np.array([special.logsumexp(logp[full:])]))
    values = np.concatenate(vals)
    logp_b = np.concatenate(ps)
    return values, np.exp(logp_b), np.exp(logp_b - values)


class BoundedRangeEnvelopeLoss(ContinuousLoss):
    """Loss of the pair dominating every ``eps``-bounded-range pair (see :class:`ExponentialMechanism`).

    Under P the loss L has density e^{(eps + l)/2} / (2 (e^eps - 1)) on [-eps, eps]; under Q,
    e^{(eps - l)/2} / (2 (e^eps - 1)).

    Every mass is a closed form to a few roundoffs (see :meth:`cell_masses`). The
    discretiser's connect-the-dots split keeps its upper PLD on the safe side only while the
    ratio of a cell's Q- and P-mass is within RATIO_ULPS roundoffs (see
    :func:`autoacct.pld.discretize._left_share`), and composed k times a mass's relative
    error e becomes about k e. Masses taken as exp(log(e^y - 1) - log(e^eps - 1)) and then
    as differences of distribution functions were off by up to 390 roundoffs at eps = 1e-8
    (a logarithm near -20 carries 20 roundoffs, and a cell holds 1/65 of the difference's
    terms): the upper PLD on h = 3.3e-10 had mean -1.6e-16 against the true
    KL divergence 1.7e-17, and total mass 1 - 4.0e-15, so that 2^51 copies composed to mean
    -0.37 and mass e^{-9} and delta(0.237) came out at 4.3e-4, below the 0.022 that the
    composed randomized response with log-odds eps / 2 (eps-bounded-range itself) attains.
    """

    #: The pair dominates the class but no eps-BR mechanism attains it, so a
    #: lower bound computed from it (especially after composition) need not be
    #: a lower bound for the mechanism.
    tight: bool = False

    def __init__(self, eps: float) -> None:
        self.eps = float(eps)
        # 1 - e^{-eps} and e^eps - 1, each one rounding (expm1 is correctly rounded to within
        # an ulp or so in every libm numpy uses).
        self._tail = -math.expm1(-self.eps)
        self._norm = math.expm1(self.eps)

    @property
    def key(self) -> tuple:
        return ("bounded-range-envelope", self.eps)

    @property
    def max_loss(self) -> float:
        return self.eps

    def _clip(self, x: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(x, dtype=float), -self.eps, self.eps)

    def _cdf(self, x: np.ndarray, under: str) -> np.ndarray:
        # P(L <= x) = (e^{(e + x)/2} - 1) / (e^e - 1); Q(L <= x) = (1 - e^{-(e + x)/2}) / (1 - e^{-e}).
        e = self.eps
        x = self._clip(x)
        if under == "P":
            return np.expm1((e + x) / 2.0) / self._norm
        return -np.expm1(-(e + x) / 2.0) / self._tail

    def _sf(self, x: np.ndarray, under: str) -> np.ndarray:
        # P(L > x) = (1 - e^{-(e - x)/2}) / (1 - e^{-e}); Q(L > x) = (e^{(e - x)/2} - 1) / (e^e - 1).
        e = self.eps
        x = self._clip(x)
        if under == "P":
            return -np.expm1(-(e - x) / 2.0) / self._tail
        return np.expm1((e - x) / 2.0) / self._norm

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """P- and Q-masses of the cells (a, b], each a product of three factors of one
        rounding each: with a, b clipped to [-eps, eps],

            P(a, b] = e^{(a - eps)/2} (e^{(b - a)/2} - 1) / (1 - e^{-eps}),
            Q(a, b] = e^{-(b + eps)/2} (e^{(b - a)/2} - 1) / (1 - e^{-eps}).

        No difference of two masses is taken, so each is within a few roundoffs (plus the
        rounding of its exponent's argument, a relative u max(|a|, eps)), and the Q- to
        P-mass ratio e^{-(a + b)/2} the discretiser reads is as accurate. Both exponents are
        at most 0, and the product of the first two factors is at most 1, so nothing overflows
        for eps up to 700.
        """
        e = self.eps
        x = self._clip(edges)
        a, b = x[:-1], x[1:]
        # (b - a)/2 >= 0; an empty (clipped) cell gives expm1(0) = 0.
        spread = np.expm1((b - a) / 2.0)
        m_p = np.exp((a - e) / 2.0) * spread / self._tail
        m_q = np.exp(-(b + e) / 2.0) * spread / self._tail
        return m_p, m_q

    def quantile_range(self, eta: float) -> tuple[float, float]:
        return -self.eps, self.eps
