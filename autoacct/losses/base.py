"""Privacy-loss random variables of dominating pairs.

For a pair of distributions (P, Q) on one outcome space the privacy loss is
L(o) = log(dP/dQ)(o). Under o ~ P it may take the value +inf (where Q has no
mass); that atom is ``p_inf``. Everything the PLD accountant needs from a
mechanism is the law of L under P and under Q, given here as the P- and
Q-masses of L in half-open cells (a, b]: from them it builds the discrete
upper and lower PLDs, and the hockey-stick divergence

    H_{e^eps}(P || Q) = P(L > eps) - e^eps Q(L > eps) + p_inf   (p_inf counted in P(L > eps))

is the privacy profile delta(eps) of the pair.

Classes here are immutable values; ``key`` identifies equal laws so that the
accountant can share work between equal components.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import cache, cached_property
from typing import TYPE_CHECKING

import numpy as np
from scipy import optimize, special

from autoacct.exactness import MACHINE_EPSILON
from autoacct.products import matmul

if TYPE_CHECKING:
    from autoacct.losses.binary import TwoPoint

#: Exponents at which :attr:`PrivacyLoss.sizing_cgf` is tabulated: 0, then 1/8 to 2^7 in steps of
#: a factor sqrt(2) (so that each exponent is twice the one two places before it).
SIZING_TILTS = np.concatenate(([0.0], 2.0 ** np.arange(-3.0, 7.5, 0.5)))


def sizing_cgf_of(values: np.ndarray, p_mass: np.ndarray) -> np.ndarray:
    """log E[e^{lam X}] at lam = :data:`SIZING_TILTS` for X with finitely many ``values``
    (P-masses ``p_mass``, renormalised); -inf when every mass is 0."""
    values = np.asarray(values, dtype=float)
    p_mass = np.asarray(p_mass, dtype=float)
    live = p_mass > 0
    if not live.any():
        return np.full(SIZING_TILTS.size, -np.inf)
    # (w is a fresh contiguous copy for the product; v is only read elementwise)
    w = p_mass[live]
    v = values if w.size == values.size else values[live]
    top = float(v.max())
    # e^{lam (v - top)} <= 1 (nothing overflows): two exponentials, then each row is the
    # square of the row two places up (rounding grows to 2^10 ulp, ample for sizing), two
    # rows squared at a time.
    rows = np.empty((SIZING_TILTS.size, v.size))
    rows[0] = 1.0
    below = v - top
    np.exp(SIZING_TILTS[1] * below, out=rows[1])
    np.exp(SIZING_TILTS[2] * below, out=rows[2])
    for i in range(3, SIZING_TILTS.size, 2):
        pair = min(2, SIZING_TILTS.size - i)
        np.multiply(rows[i - 2:i - 2 + pair], rows[i - 2:i - 2 + pair], out=rows[i:i + pair])
    return np.log(matmul(rows, w[:, None])[:, 0] / w.sum()) + SIZING_TILTS * top


def segment_sums(masses: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """sum(masses[idx[i]:idx[i+1]]) for each i, for non-decreasing ``idx`` in [0, len(masses)]
    (0 for an empty segment): sums of the terms themselves, so small ones keep their
    relative precision."""
    ext = np.append(np.asarray(masses, dtype=float), 0.0)
    out = np.add.reduceat(ext, idx)[:-1]
    out[idx[1:] <= idx[:-1]] = 0.0
    return out


_EPS = MACHINE_EPSILON
#: The smallest normal float: below it a mass has lost relative precision.
_TINY = float(np.finfo(float).tiny)
#: log of the smallest positive float (the subnormal 2^-1074).
_LOG_SMALLEST = math.log(5e-324)
#: Relative accuracy of the profile of a law flagged ``exact_profile`` (closed forms).
PROFILE_REL = 1e-12
#: Roundoffs an atom's mass may carry when it is the exponential of a logarithm of size up
#: to ~700 (masses down to 1e-300), plus those of the term's own arithmetic.
ATOM_MASS_ULPS = 1024.0


class PrivacyLoss(ABC):
    """Law of the privacy loss L = log(dP/dQ) of a pair (P, Q).

    Subclasses give the finite part of the law through :meth:`cell_masses`;
    the mass of L = +inf under P is :attr:`p_inf`.
    """

    #: P(L = +inf): mass of P where Q vanishes.
    p_inf: float = 0.0
    #: The part of ``p_inf`` that is finite-loss mass moved to +inf by truncating an
    #: infinite support: sound for upper bounds, but a lower bound must not count it.
    p_inf_truncated: float = 0.0
    #: Q(L = -inf): mass of Q where P vanishes.
    q_ninf: float = 0.0
    #: A bound, at every eps >= 0, on the part of :meth:`profile` that comes from mass a
    #: truncation moved to +-inf and that ``p_inf_truncated`` does not count: a profile read
    #: through the base pair's symmetry (the addition law of Poisson subsampling) counts the
    #: base's truncated tails too. Sound for upper bounds; a lower bound must not count it.
    profile_truncated: float = 0.0
    #: Spacing of a lattice containing every finite loss value, if there is one.
    lattice: float | None = None
    #: mu when this is the loss of (N(mu, 1), N(0, 1)); such laws compose in closed form.
    gdp_mu: float | None = None
    #: Whether the finite part of L has atoms (discrete or mixed laws).
    has_atoms: bool = False
    #: Whether the finite part of L is purely atomic (every value a multiple of ``lattice``).
    purely_atomic: bool = False
    #: Whether :meth:`profile` is a closed form or a finite sum whose rounding at every eps >= 0
    #: :meth:`profile_error` bounds, so that one run of the pair is answered from it exactly.
    exact_profile: bool = False
    #: Whether the lower discrete PLD merges the atoms onto the grid (a finite atom law whose
    #: atoms stand apart at the grid's scale, such as a subsampled discrete law; see
    #: :mod:`autoacct.pld.merged`) rather than bounding cell by cell, which for an isolated
    #: atom no better than rounding it down.
    merged_lower: bool = False
    #: An absolute bound on the rounding of the finite loss values, one for all or one per
    #: value (a lower PLD takes the atoms at their value less this).
    value_error: float | np.ndarray = 0.0
    #: Work of :meth:`cell_masses` per cell relative to a closed-form law's, on which the time
    #: budget's per-cell rate is measured: a mixture of m laws costs the sum of theirs, a law
    #: built on another one at least that one's (10 runs of a sampled-with-replacement
    #: Gaussian, a mixture of its multiplicities, took 40 s of CPU on a predicted 10).
    cell_cost: float = 1.0
    #: Whether some mechanism of the class attains this pair, so that lower bounds
    #: computed from it (also after composition) are lower bounds on the class's
    #: privacy. False for a pair that only dominates, e.g. an envelope of several pairs.
    tight: bool = True

    @property
    @abstractmethod
    def key(self) -> tuple:
        """A hashable value equal for equal laws."""

    @property
    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        """Finite loss values carrying atoms under P, with their P-masses (empty if none)."""
        return np.empty(0), np.empty(0)

    @abstractmethod
    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """P- and Q-masses of the finite part of L in the cells (edges[i], edges[i+1]].

        ``edges`` is increasing and may begin with -inf and end with +inf.
        """

    def cell_masses_with_error(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """:meth:`cell_masses` and r, a bound cell by cell on their relative rounding where they are
        sums of many terms (|m - m_exact| <= r m_exact for each of the two masses), which a reader
        that needs a mass on one side moves outward by (see :func:`autoacct.pld.cellsums.each_way`);
        None where the masses are as accurate as their readers' own allowances assume (a few
        roundoffs: closed forms)."""
        m_p, m_q = self.cell_masses(edges)
        return m_p, m_q, None

    @abstractmethod
    def quantile_range(self, eta: float) -> tuple[float, float]:
        """An interval [a, b] with P(L < a) <= eta and P(b < L < inf) <= eta."""

    @abstractmethod
    def profile(self, eps: np.ndarray) -> np.ndarray:
        """Hockey-stick divergence H_{e^eps}(P || Q) for real ``eps`` (array in, array out)."""

    def two_point(self) -> TwoPoint | None:
        """The pair's two outcomes, if it has exactly two, each of positive P- and Q-mass and
        none of infinite loss; None otherwise (see :class:`~autoacct.losses.binary.TwoPoint`)."""
        return None

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        """An absolute bound on the rounding error of :meth:`profile` at ``eps``; used only
        for laws that answer one run of their pair directly (see ``exact_profile``)."""
        return PROFILE_REL * np.asarray(self.profile(eps), dtype=float)

    def profile_with_error(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`profile` and :meth:`profile_error` at ``eps``, the same values: a law whose
        error bound evaluates the profile anyway computes it once."""
        return np.asarray(self.profile(eps), dtype=float), np.asarray(self.profile_error(eps), dtype=float)

    @property
    def max_loss(self) -> float:
        """An upper bound on the largest finite loss with positive P-mass (+inf where none is
        known): beyond it the profile is the mass at +inf exactly, below it may be positive."""
        return math.inf

    def reverses(self, other: PrivacyLoss) -> bool:
        """Whether this is the law of the reversed pair (Q, P) of ``other``'s pair (P, Q), its
        loss -L under Q: then E_Q[e^{theta L'}] is ``other``'s E_P[e^{-(1 + theta) L}]
        (see :mod:`autoacct.pld.reversal`). False unless the law knows it."""
        return False

    @cached_property
    def moments(self) -> tuple[float, float]:
        """Approximate mean and variance of the finite part of L under P.

        Used only to size grids, never in a bound.
        """
        a, b = self.quantile_range(1e-12)
        if b - a <= 0:
            return a, 0.0
        grid = np.linspace(a, b, 4001)
        edges = np.concatenate(([-np.inf], grid, [np.inf]))
        m_p, _ = self.cell_masses(edges)
        # Representative points: the cell mid-points, and the edges for the two outer cells
        # (which hold the atoms a law may have exactly at a or beyond b).
        points = np.concatenate(([a], 0.5 * (grid[1:] + grid[:-1]), [b]))
        tot = m_p.sum()
        if tot <= 0:
            return a, 0.0
        mean = float((m_p * points).sum() / tot)
        var = float((m_p * (points - mean) ** 2).sum() / tot)
        return mean, max(var, ((b - a) / 4000) ** 2 / 12)

    @property
    def sizing_cgf(self) -> np.ndarray:
        """Approximate K(lam) = log E_P[e^{lam L} | L finite] at lam = :data:`SIZING_TILTS`.

        Used only to size grids, never in a bound: the exponent lam minimising
        K(lam) - lam eps is the rate at which delta(eps) of a composition falls.
        This default is the normal approximation lam mean + lam^2 var / 2 (exact
        for :class:`GaussianLoss`); laws with heavier tails override it.
        """
        mean, var = self.moments
        return SIZING_TILTS * mean + SIZING_TILTS ** 2 * var / 2.0


class ContinuousLoss(PrivacyLoss):
    """A loss law given by its distribution and survival functions under P and Q.

    Subclasses define ``_cdf(x, under)`` = Pr(L <= x) and ``_sf(x, under)`` =
    Pr(x < L < inf) with ``under`` in {"P", "Q"}; both are vectorised. Cell
    masses are differences of whichever of the two is smaller, so that tail
    cells keep their relative precision.
    """

    @abstractmethod
    def _cdf(self, x: np.ndarray, under: str) -> np.ndarray: ...

    @abstractmethod
    def _sf(self, x: np.ndarray, under: str) -> np.ndarray: ...

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        edges = np.asarray(edges, dtype=float)
        out = []
        for under in ("P", "Q"):
            cdf = self._cdf(edges, under)
            sf = self._sf(edges, under)
            use_sf = sf[:-1] < 0.5
            m = np.where(use_sf, sf[:-1] - sf[1:], cdf[1:] - cdf[:-1])
            out.append(np.maximum(m, 0.0))
        return out[0], out[1]

    def profile(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        sp = self._sf(eps, "P")
        sq = self._sf(eps, "Q")
        with np.errstate(over="ignore", invalid="ignore"):
            val = sp - np.exp(eps) * sq
        val = np.where(np.isfinite(val), val, 0.0)
        return np.clip(val, 0.0, None) + self.p_inf

    def quantile_range(self, eta: float) -> tuple[float, float]:
        def lower(x: float) -> float:
            return float(self._cdf(np.array([x]), "P")[0]) - eta

        def upper(x: float) -> float:
            return float(self._sf(np.array([x]), "P")[0]) - eta

        return _bracket_root(lower, increasing=True), _bracket_root(upper, increasing=False)


def _bracket_root(f: Callable[[float], float], *, increasing: bool) -> float:
    """Root of a monotone function on the real line, found by expanding a bracket."""
    lo, hi = -1.0, 1.0
    for _ in range(80):
        flo, fhi = f(lo), f(hi)
        if increasing and flo > 0:
            lo *= 2.0
        elif increasing and fhi < 0:
            hi *= 2.0
        elif not increasing and flo < 0:
            lo *= 2.0
        elif not increasing and fhi > 0:
            hi *= 2.0
        else:
            break
    if (f(lo) > 0) == (f(hi) > 0):
        return lo if (f(lo) <= 0) == increasing else hi
    return float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-10))


class GaussianLoss(ContinuousLoss):
    """Loss of the pair (N(mu, 1), N(0, 1)), i.e. of Gaussian(sigma) with mu = 1/sigma.

    Under P, L ~ N(mu^2/2, mu^2); under Q, L ~ N(-mu^2/2, mu^2).
    """

    def __init__(self, mu: float) -> None:
        self.mu = float(mu)
        self.gdp_mu = self.mu

    def reverses(self, other: PrivacyLoss) -> bool:
        """The pair (N(0, 1), N(mu, 1)) has loss -L under N(0, 1), again N(mu^2/2, mu^2)."""
        return isinstance(other, GaussianLoss) and other.mu == self.mu

    @property
    def key(self) -> tuple:
        return ("gaussian", self.mu)

    def _z(self, x: np.ndarray, under: str) -> np.ndarray:
        m = self.mu
        centre = m * m / 2 if under == "P" else -m * m / 2
        z = np.subtract(x, centre, dtype=float)
        z /= m
        return z

    def _cdf(self, x: np.ndarray, under: str) -> np.ndarray:
        return special.ndtr(self._z(x, under))

    def _sf(self, x: np.ndarray, under: str) -> np.ndarray:
        return special.ndtr(-self._z(x, under))

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The differences of :class:`ContinuousLoss`, from one tail function per edge:
        t = Phi(-|z|) is the survival function where z > 0 and the distribution function
        elsewhere, so a cell is sf - sf right of the centre and cdf - cdf left of it (one
        cell straddling the centre takes its right cdf as 1 - t)."""
        edges = np.asarray(edges, dtype=float)
        out = []
        for under in ("P", "Q"):
            z = self._z(edges, under)
            # Edges increase, so z > 0 from index k on: cells before k - 1 are cdf - cdf,
            # cells from k on sf - sf, and cell k - 1 (if any) straddles the centre.
            k = int(np.searchsorted(z, 0.0, side="right"))
            t = np.abs(z, out=z)
            special.ndtr(np.negative(t, out=t), out=t)
            m = np.empty(len(t) - 1)
            if k > 1:
                np.subtract(t[1:k], t[:k - 1], out=m[:k - 1])
            if 0 < k < len(t):
                m[k - 1] = (1.0 - t[k]) - t[k - 1]
            np.subtract(t[k:-1], t[k + 1:], out=m[k:])
            out.append(np.maximum(m, 0.0, out=m))
        return out[0], out[1]

    #: The profile is the analytic Gaussian's, with its rounding bounded
    #: (:func:`gaussian_delta_with_error`): one run of a pair built on it (a subsampled
    #: Gaussian step) is answered from it without discretisation.
    exact_profile = True

    def profile(self, eps: np.ndarray) -> np.ndarray:
        return gaussian_delta(self.mu, eps)

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        return self.profile_with_error(eps)[1]

    def profile_with_error(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        value, rel = gaussian_delta_with_error(self.mu, eps)
        # Where the relative bound is infinite the absolute one is 1 (value * rel would be
        # 0 * inf there, NaN with a warning).
        with np.errstate(invalid="ignore", over="ignore"):
            return value, np.where(np.isfinite(rel), value * rel, 1.0)

    def quantile_range(self, eta: float) -> tuple[float, float]:
        z = -special.ndtri(eta)
        m = self.mu
        return m * m / 2 - z * m, m * m / 2 + z * m

    @cached_property
    def moments(self) -> tuple[float, float]:
        return self.mu ** 2 / 2, self.mu ** 2

    @property
    def _representation(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(loss values, P-masses, Q-masses) quadrature of both marginals, for the subsampled laws' moments.

        With y ~ N(0, 1) under Q and N(mu, 1) under P the loss is mu y - mu^2/2. The
        cells of one standard normal grid, each at its conditional mean x, serve both
        sides: Q-nodes at mu x - mu^2/2 carry Q-mass only, P-nodes at mu x + mu^2/2
        P-mass only (every consumer of a representation is linear in the masses).
        Only the values depend on mu; the (read-only) masses are shared by all laws.
        """
        x, p_masses, q_masses = _standard_normal_cells()
        half = self.mu * self.mu / 2
        values = np.concatenate((self.mu * x - half, self.mu * x + half))
        return values, p_masses, q_masses


#: Grid points of the standard normal cells of :func:`_standard_normal_cells` (odd:
#: 0 is a grid point) and the half-width of the grid; beyond it are two tail cells.
_STD_CELL_POINTS = 1001
_STD_CELL_RANGE = 8.5


@cache
def _standard_normal_cells() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cells of N(0, 1) on a uniform grid on +-8.5 plus its tails: conditional means x, and
    the masses w laid out for :attr:`GaussianLoss._representation` as (0, w) and (w, 0).

    Masses of the left half come from the distribution function (where it keeps
    its relative precision); the right half is their mirror image. The arrays are
    read-only, as they are shared.
    """
    grid = np.linspace(-_STD_CELL_RANGE, 0.0, (_STD_CELL_POINTS + 1) // 2)
    edges = np.concatenate(([-np.inf], grid))
    w_half = np.diff(special.ndtr(edges))
    density = np.exp(-0.5 * edges * edges) / np.sqrt(2.0 * np.pi)
    x_half = (density[:-1] - density[1:]) / w_half
    x = np.concatenate((x_half, -x_half[::-1]))
    w = np.concatenate((w_half, w_half[::-1]))
    zeros = np.zeros(len(w))
    out = (x, np.concatenate((zeros, w)), np.concatenate((w, zeros)))
    for arr in out:
        arr.setflags(write=False)
    return out


def gaussian_delta_with_error(mu: float, eps: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact privacy profile of mu-GDP (Balle and Wang 2018, Theorem 8), and a bound on its
    relative rounding error.

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), computed in log space
    as Phi(a) (1 - e^r) with r = eps + log Phi(b) - log Phi(a), so that it neither
    underflows nor cancels before 1e-300. In the far tail r is small and is the
    difference of logarithms of size |log Phi(a)|: each is off by a few ulps of its
    size, so the relative error of 1 - e^r is about (|log Phi(a)| + |log Phi(b)| + eps)
    ulps over |r|, which the second array bounds.
    """
    eps = np.asarray(eps, dtype=float)
    if mu == 0.0:
        # 0-GDP: the two distributions are equal, H_{e^eps}(P || P) = (1 - e^eps)^+.
        return np.maximum(-np.expm1(np.minimum(eps, 0.0)), 0.0), np.full(eps.shape, 4.0 * _EPS)
    with np.errstate(over="ignore"):
        # (eps / mu overflows to inf for a subnormal mu, where Phi(a) = 0 is right: see below)
        a = -eps / mu + mu / 2
        b = -eps / mu - mu / 2
    la = special.log_ndtr(a)
    lb = special.log_ndtr(b)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = np.minimum(eps + lb - la, 0.0)
        out = np.exp(la + np.log(-np.expm1(r)))
        # a and b carry the rounding of eps/mu -+ mu/2 (absolute ~ ulp(eps/mu + mu/2)), which
        # log Phi turns into an absolute error of about |a| (or |b|) times that.
        shift = _EPS * (np.abs(eps) / mu + mu / 2.0 + 1.0) * (np.abs(a) + np.abs(b) + 1.0)
        # Or, more finely: an absolute error da of a (an ulp of eps/mu + mu/2, and one more)
        # moves log Phi(a) by at most phi(a) / Phi(a) da <= (max(-a, 0) + 1) da (Birnbaum 1942's
        # bound on the Mills ratio for a < 0; phi(0) / Phi(0) = 0.8 bounds a >= 0), so Phi(a)
        # relatively by about that, and 1 - e^r, r moved by at most dr, by
        # e^r (e^dr - 1) / (1 - e^r) = expm1(dr) / expm1(-r), at most e^(r + dr) / (1 - e^r) (the
        # form taken where dr >= 1, whose quotient may be inf / inf): nothing where r is far
        # below 0 (mu = 1e8, eps = 0.5: 1 - e^r = 1 exactly, though a and b are off by 1e-8,
        # which the first form took for a relative error of 2 and so bounded delta by [0, 1]).
        da = 2.0 * _EPS * (np.abs(eps) / mu + mu / 2.0 + 1.0)
        dla = da * (np.maximum(-a, 0.0) + 1.0)
        dr = dla + da * (np.maximum(-b, 0.0) + 1.0)
        moved = np.where(dr < 1.0, np.expm1(dr) / np.expm1(-r), np.exp(r + dr) / -np.expm1(r))
        rel = 16.0 * _EPS * (1.0 + np.abs(la) + (np.abs(la) + np.abs(lb) + eps + 1.0) / np.abs(r)) \
            + 4.0 * np.minimum(shift * (1.0 + 1.0 / np.abs(r)), dla + moved)
    # delta(eps) <= Phi(a): where that underflows (eps of 1e10 at mu = 1, say) delta is 0 to
    # within the smallest float, exactly, though r (two logarithms of size 1e19 that cancel)
    # and so the bound above are lost (at eps = 1e300 both logarithms are -inf and r is NaN).
    gone = la < _LOG_SMALLEST
    return np.clip(np.where(gone, 0.0, out), 0.0, 1.0), np.where(gone, 0.0, np.where(np.isfinite(rel), rel, np.inf))


def gaussian_delta_bounds(mu: float, eps: float | np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) on the mu-GDP profile delta(eps): :func:`gaussian_delta_with_error`'s
    value moved by its relative rounding bound plus ``margin``.

    Where the relative bound is infinite (mu below ~1e-16: Phi(-eps/mu +- mu/2) round to the
    same float, and the computed value, 0, says nothing) the lower end is 0, and the upper end
    is, at every eps >= 0, delta(0) = 2 Phi(mu/2) - 1 = int_{-mu/2}^{mu/2} phi <= mu phi(0)
    = mu / sqrt(2 pi) (delta is non-increasing in eps), which is also kept where it is below
    the closed form's upper end. Gaussian(1e17).delta(0) was 1e-300 before, below the truth
    3.99e-18: the value 0 times an infinite relative error had been read as 0.
    """
    val, rel = gaussian_delta_with_error(mu, eps)
    known = np.isfinite(rel)
    with np.errstate(invalid="ignore", over="ignore"):
        lower = np.where(known & (val > 0.0), val * np.maximum(1 - margin - rel, 0.0), 0.0)
        upper = np.where(known, np.where(val > 0.0, val * (1 + margin + rel), 0.0), 1.0)
    # (one rounding of the product and one of the constant: 4 ulps cover them)
    spread = mu * 0.3989422804014327 * (1.0 + 4.0 * _EPS)
    return lower, np.minimum(np.minimum(upper, spread), 1.0)


def gaussian_delta(mu: float, eps: float | np.ndarray) -> np.ndarray:
    """Exact privacy profile of mu-GDP (see :func:`gaussian_delta_with_error`)."""
    return gaussian_delta_with_error(mu, eps)[0]


class DiscreteLoss(PrivacyLoss):
    """Loss of a pair of distributions on finitely many outcomes.

    ``values[i]`` is the finite loss of outcome class i, with P-mass
    ``p_mass[i]`` and Q-mass ``q_mass[i]``; ``p_inf`` is the P-mass of outcomes
    Q cannot produce. Consistency (p = e^value q) is the caller's duty.
    """

    def __init__(self, values: np.ndarray, p_mass: np.ndarray, q_mass: np.ndarray,
                 p_inf: float = 0.0, q_ninf: float = 0.0, lattice: float | None = None,
                 tight: bool = True) -> None:
        # Sorted by value; arrays already sorted are kept as given (not copied: every caller
        # hands over arrays it has just computed and does not modify).
        self.values = np.asarray(values, dtype=float)
        self.p_mass = np.asarray(p_mass, dtype=float)
        self.q_mass = np.asarray(q_mass, dtype=float)
        if np.any(self.values[1:] < self.values[:-1]):
            order = np.argsort(self.values)
            self.values, self.p_mass, self.q_mass = self.values[order], self.p_mass[order], self.q_mass[order]
        self.p_inf = float(p_inf)
        self.q_ninf = float(q_ninf)
        self.lattice = lattice
        self.tight = tight
        self.has_atoms = True
        if lattice:
            # Purely atomic on the lattice ell only where every value v is an exact multiple n ell
            # up to the roundoff u |v| that DiscreteProfile.slack charges (u the unit roundoff):
            # the float product n ell itself (the grid point a lattice grid puts there, see
            # discretize._grid_points) or a value whose quotient by ell rounds to n (then
            # |v / ell - n| <= u |n|). The lower PLD of such a law is its connect-the-dots split
            # as it is: a value 5e-10 above 1 on the lattice 1, once accepted (within 1e-9), sent
            # 8e-10 of its mass to the grid point 2, and the lower delta at 1.5 was 2.2e-10 where
            # the law's is 0.
            n = np.round(self.values / lattice)
            self.purely_atomic = bool(np.all((self.values == n * lattice) | (self.values / lattice == n)))

    @cached_property
    def _faint(self) -> np.ndarray:
        """Atoms of finite loss whose Q-mass q = p e^-value is not a normal float: subnormal (its
        relative precision lost) or 0 (underflowed). Their terms p - e^eps q are read as
        p (1 - e^{eps - value}) (see :meth:`profile`)."""
        return (self.q_mass < _TINY) & (self.p_mass > 0) & np.isfinite(self.values)

    @property
    def key(self) -> tuple:
        return ("discrete", tuple(self.values), tuple(self.p_mass), tuple(self.q_mass), self.p_inf,
                self.q_ninf)

    @property
    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        return self.values, self.p_mass

    @property
    def max_loss(self) -> float:
        """The largest finite value, whatever its P-mass: a mass read as 0 may be a positive one
        that underflowed (a finite loss v with true P-mass 0 has Q-mass 0 too, no outcome at
        all). BinaryCountingExponential(74.6, 20, 5)'s atom at 74.6 has P-mass e^-746, read 0:
        counted only where that read was positive, the largest loss was -e^-746, and delta(1)
        came out 0 on every route, below the truth 1.04e-324."""
        finite = self.values[np.isfinite(self.values)]
        return float(finite.max()) if finite.size else -math.inf

    #: Finitely many atoms: the profile is a finite sum, answered directly for one run,
    #: with the absolute rounding bound of :meth:`profile_error`.
    exact_profile = True

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        """The profile sums at most n terms p - e^eps q and their mass sums; each term and
        each addition is off by a few roundoffs of the masses involved, and each mass,
        computed from a logarithm of size up to ~700, by up to ATOM_MASS_ULPS roundoffs."""
        eps = np.asarray(eps, dtype=float)
        e = eps[..., None]
        # Atoms above eps have e^eps q <= p <= 1: the product only overflows where q = 0.
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = np.where(self.q_mass > 0, np.exp(np.minimum(e, 700.0)) * self.q_mass, 0.0)
            mass = np.where(self.values > e, self.p_mass + scaled, 0.0).sum(axis=-1)
        out = (4.0 * len(self.values) + ATOM_MASS_ULPS) * _EPS * (np.minimum(mass, 2.0) + self.p_inf)
        # An atom's value v is off by d at most (value_bounds). A faint atom's term
        # p (1 - e^{eps - v}) moves by at most p d e^d with it; any atom's term is left out
        # where v <= eps while the true value may reach v + d, and is then at most p d. (Only
        # faint atoms were counted: KaryRandomizedResponse, DiscreteLaplace and DiscretePair
        # taken once, read at their computed top loss, answered delta 0 against a truth of
        # 1e-16 to 2e-17.)
        v, p, d = self.values, self.p_mass, self.value_bounds()
        near = np.where(self._faint, v + d > e, (v <= e) & (v + d > e)) & (p > 0) & np.isfinite(v)
        return out + np.where(near, 2.0 * p * d, 0.0).sum(axis=-1)

    def two_point(self) -> TwoPoint | None:
        """Two finite atoms with no mass at +-inf: masses within ATOM_MASS_ULPS roundoffs, values
        within :meth:`value_bounds` (DiscreteLaplace of sensitivity 1, a two-outcome DiscretePair)."""
        # (imported here: binary.py builds on this module)
        from autoacct.losses.binary import TwoPoint, two_point_masses_ok

        if len(self.values) != 2 or self.p_inf > 0.0 or self.q_ninf > 0.0 or not two_point_masses_ok(
                self.p_mass, self.q_mass) or not np.all(np.isfinite(self.values)):
            return None
        err = self.value_bounds()
        return TwoPoint((float(self.p_mass[0]), float(self.p_mass[1])), (float(self.q_mass[0]), float(self.q_mass[1])),
                        ATOM_MASS_ULPS * _EPS, (float(self.values[0]), float(self.values[1])),
                        (float(err[0]), float(err[1])))

    def value_bounds(self) -> np.ndarray:
        """Bounds on how far each finite atom's value lies from the pair's log-ratio (0 at an
        infinite one): a log-ratio of masses computed in floats, ATOM_MASS_ULPS roundoffs of
        logarithms of its size, plus any ``value_error``. A law whose values are given exactly
        (randomized response's +-eps0) has its ``value_error`` alone."""
        v = self.values
        return np.where(np.isfinite(v), ATOM_MASS_ULPS * _EPS * (np.abs(v) + 1.0) + self.value_error, 0.0)

    def cell_masses(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # idx[i] values are <= e_i (they are sorted), so (e_i, e_{i+1}] holds those from idx[i]
        # to idx[i+1] - 1.
        idx = np.searchsorted(self.values, np.asarray(edges, dtype=float), side="right")
        return segment_sums(self.p_mass, idx), segment_sums(self.q_mass, idx)

    def cell_masses_with_error(self, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """A cell's sum of n non-negative masses is within gamma_(n-1) = (n-1) u / (1 - (n-1) u) of
        the exact one whatever the order of the additions (each mass passes through at most n - 1
        of them; Higham 2002, section 4.2), here with u counted as MACHINE_EPSILON (twice the unit
        roundoff); a lone mass is its atom's own, exact."""
        idx = np.searchsorted(self.values, np.asarray(edges, dtype=float), side="right")
        adds = np.maximum(np.diff(idx) - 1, 0) * _EPS
        return segment_sums(self.p_mass, idx), segment_sums(self.q_mass, idx), adds / (1.0 - adds)

    def profile(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        e = eps[..., None]
        # Each term with value > eps is non-negative (p = e^value q); an outcome with q = 0
        # contributes p whatever eps (inf * 0 would give NaN), and an overflowing e^eps q
        # means the term is 0.
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = np.where(self.q_mass > 0, np.exp(e) * self.q_mass, 0.0)
            terms = np.where(self.values > e, np.maximum(self.p_mass - scaled, 0.0), 0.0)
            # A Q-mass below the normal floats has lost its relative precision (to 0 where it
            # underflowed: the term read p, above the truth p (1 - e^{eps - v}), at every
            # eps < v; BinaryCountingExponential(400, 3, 1)'s lower delta(399) was 1.92e-174 for
            # 1.21e-174). The pair's own relation q = p e^-v gives the term from p and v.
            if self._faint.any():
                faint = self.p_mass * -np.expm1(np.minimum(e - self.values, 0.0))
                terms = np.where(self._faint, faint, terms)
        return np.clip(terms.sum(axis=-1), 0.0, None) + self.p_inf

    def quantile_range(self, eta: float) -> tuple[float, float]:
        return float(self.values[0]), float(self.values[-1])

    @cached_property
    def moments(self) -> tuple[float, float]:
        tot = self.p_mass.sum()
        mean = float((self.p_mass * self.values).sum() / tot)
        var = float((self.p_mass * (self.values - mean) ** 2).sum() / tot)
        return mean, var

    @cached_property
    def sizing_cgf(self) -> np.ndarray:
        return sizing_cgf_of(self.values, self.p_mass)
