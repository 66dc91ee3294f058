"""Rare large losses: one law composed k times, split into its bulk and its tail.

Where large-scale training lives (sampling rates of 1e-5 to 1e-3, deltas of 1e-8 to
1e-12), the loss of a Poisson-subsampled step is almost always within a few
thousandths of 0, but a small delta is decided by the rare steps where it is large
(the record was sampled and its noise was large). One lattice then serves neither
part: the k copies of the bulk need a spacing of about 1e-5, the tail a range of
several units, and no single exponential tilt makes both the window short and the
FFT rounding small relative to delta (the tilt that suits the bulk puts the tilted
mass on the tail, whose window then runs to k times its range).

Split the law's P-measure w at a threshold tau into its bulk b (losses <= tau) and
its tail t (losses > tau, with the mass at +inf). Composition convolves measures and
is bilinear, so

    w^{*k} = sum_j C(k, j) b^{*(k - j)} * t^{*j},

and the profile is linear in the measure, so delta(eps) of the composition is the
same sum of the terms' profiles. With tau so high that k t(all) is below 1, the
terms fall like (k t(all))^j / j!: the terms j > J are bounded by their total mass,
at most (k t)^(J+1) / (J+1)! / (1 - k t / (J + 2)), added to the upper bound and
left out of the lower one. Each term is computed where it is cheap:

* b^{*(k - j)} on the fine lattice h, whose window the bulk's short range keeps
  short at any tilt; for k in the millions that window still grows like sqrt(k),
  and the copies are composed in blocks, each discretised again on a lattice R' h
  (:mod:`blocks`);
* for j >= 1 that composition is discretised again on a lattice R h (upper and
  lower, as :mod:`levels` does for its blocks), and composed there with j copies of
  the tail discretised on R h: j is small, so the coarse spacing costs as little as
  the fine one does over k copies (R about sqrt(k / J));
* each term has its own tilt, chosen for its own composition: the term of one
  large step is tilted at the tail's rate, not at the bulk's.

Every term's upper and lower profiles are the composer's (:func:`compose.compose`,
with the re-discretisation's errors carried as the coarse upper PLD's leak and the
lower PLD's deficit, see :func:`levels.coarsen`), so each is certified; the sum
with weights rounded outward is certified too. Ordered profiles stay ordered under
composition for sub-probability measures as for laws (see :mod:`discretize`). The
terms and their sum are made by :mod:`terms`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from autoacct.losses import PrivacyLoss
from autoacct.losses.restricted import atoms_apart, outside, restricted
from autoacct.losses.shifted import ShiftedLoss
from autoacct.pld.components import Component
from autoacct.pld.discretize import DiscretePLD
from autoacct.pld.garbling import is_spike
from autoacct.pld.merged import on_any_lattice
from autoacct.pld.mixture import SUM_ULPS

#: The tail keeps at most this P-mass times 1/k: k t(all) <= TAIL_RATE, or LOOSE_TAIL_RATE
#: where the strict rate finds no small bulk (see :func:`tail_side`), or HEAVY_TAIL_RATE
#: where neither gives a split that pays (see :func:`heavy_side`).
TAIL_RATE = 1e-3
LOOSE_TAIL_RATE = 0.3
HEAVY_TAIL_RATE = 10.0
#: The split is taken when the bulk's range is at most this share of the law's, or at most
#: LOOSE_BULK_SHARE of it when the law's range is also WIDE times the answer's scale or more;
#: but not at a tail side at TAIL_RATE whose bulk spans more than PAYING_SHARE of the range
#: where k copies of the law span at most FEW_CELLS cells of the fine lattice (see :func:`pays`).
MAX_BULK_SHARE = 0.05
LOOSE_BULK_SHARE = 0.25
WIDE = 4.0
PAYING_SHARE = 0.02
FEW_CELLS = 1 << 22
#: A right tail at TAIL_RATE of an atom law pays at any bulk share up to LOOSE_BULK_SHARE where k
#: copies of the law's range span at least this many cells of the fine lattice (see :func:`pays`).
MANY_CELLS = 1 << 30
#: ... and the law's range needs at least this many cells of the fine lattice.
MIN_CELLS = 1 << 12
#: A tail on both sides (side 0 of :func:`tail_side`) is split only where its bulk spans at
#: most this share of the law's range (see :func:`pays`).
BOTH_SIDES_SHARE = 0.09
#: The terms left out may cost at most this share of tol * delta.
OMITTED_SHARE = 1e-3
#: Most terms composed (beyond, the split is not taken): k t = 10 (HEAVY_TAIL_RATE) needs
#: 38 terms for an omitted mass of 1e-11, 49 for 1e-18.
MAX_TERMS = 80


def omitted_mass(kt: float, terms: int) -> float:
    """A bound on sum_{j > J} C(k, j) (1 - t)^{k - j} t^j <= sum_{j > J} (k t)^j / j!,
    J = ``terms``, for kt = k t < J + 2: the first omitted term times the geometric
    series of the ratios (k t / (j + 1) <= k t / (J + 2))."""
    ratio = kt / (terms + 2.0)
    if ratio >= 1.0:
        return math.inf
    log_first = (terms + 1) * math.log(kt) - math.lgamma(terms + 2.0) if kt > 0 else -math.inf
    return math.exp(log_first) / (1.0 - ratio) * (1.0 + SUM_ULPS)


def terms_needed(kt: float, budget: float) -> int | None:
    """The fewest terms J >= 1 whose omitted mass is at most ``budget`` (None past MAX_TERMS)."""
    for terms in range(1, MAX_TERMS + 1):
        if omitted_mass(kt, terms) <= budget:
            return terms
    return None


#: Where a right tail is split again (:func:`far_cut`), the terms that leaves out may cost
#: about this share of tol * delta. Their mass is carried to every eps, and a delta loop reads
#: the profiles made for one delta at smaller ones: at q = 9.04e-5, sigma = 0.903, k = 31782
#: those of delta = 3.8e-12 bound delta(1) = 1.25e-17 (tests/pld/test_inverted.py), to which
#: a share of 1e-3 would add 1.9e-18 (and 1e-6 adds 1.9e-21). The far part's mass goes as the
#: root of the share (:func:`far_omitted`), so a small one still cuts low.
FAR_SHARE = 1e-6
#: ... and it is split only where that cuts at least this share off the tail's range, and
#: leaves the far part more than FAR_GAIN times the mass the tail's window leaves out.
FAR_CUT_SHARE = 0.25
FAR_GAIN = 100.0


def far_omitted(kt: float, kf: float, terms: int | None) -> float:
    """A bound on the P-mass of the terms of k copies of a law split into its bulk b, its
    tail t and its far part f (sub-probability measures, t and f of P-mass at most kt / k and
    kf / k) that hold a far copy and are not composed: all those of two far copies or more,
    and of one far copy with more than ``terms`` tail copies (None: every one of those is
    composed). With b's mass at most 1 and k! / (k - n)! <= k^n, the terms of m far and j tail
    copies weigh at most (kt)^j (kf)^m / (j! m!): over m >= 2 that sums to
    e^{kt} (e^{kf} - 1 - kf) <= e^{kt + kf} (kf)^2 / 2, and over m = 1, j > J to kf times the
    tail of e^{kt}'s series (:func:`omitted_mass`). (Rounded up, with a few of the least
    subnormals for products that underflow.)"""
    out = 0.5 * kf * kf * math.exp(kf + kt)
    if terms is not None:
        out += kf * omitted_mass(kt, terms)
    return out * (1.0 + SUM_ULPS) + 4.0 * math.ulp(0.0)


def far_terms(kt: float, kf: float, budget: float, count: int) -> int | None:
    """The fewest tail copies J (None: all count - 1) that the terms of one far copy need
    for their left-out ones (:func:`far_omitted`) to cost at most ``budget``, beyond what the
    terms of two far copies cost."""
    needed = terms_needed(kt, budget / kf) if kf > 0.0 else 0
    return None if needed is None or needed >= count - 1 else needed


def far_cut(loss: PrivacyLoss, tau: float, count: int, budget: float, coarse: float, top: float,
            least: float, eta: float) -> float | None:
    """The loss c, a multiple of ``coarse`` in [``least``, top), above which the right tail of
    ``loss`` (above ``tau``, its range ending at ``top``) is split off as a far part whose
    terms of two far copies or more (:func:`far_omitted`) cost about half of ``budget``; None
    where that cuts less than FAR_CUT_SHARE of the tail's range, or leaves the far part at
    most FAR_GAIN times the mass ``eta`` the tail's window leaves out anyway (its end then
    barely moves: at q = 1.2e-5, sigma = 0.92, k = 3.6e6, delta = 7.4e-11, a far part of
    7e-26 above twice the answer cost its terms, 25% of the query, for the same bracket).

    A subsampled Gaussian's tail is heavier than exponential in the loss: at q = 1e-5,
    sigma = 1.05 its P-mass above L falls at a rate z sigma / L (z the noise's quantile), 2000
    at L = 0.0035 and 670 at L = 0.012. A term composed with one tilt then has its tilted mass
    on its window's far end, which caps the tilt far below the rate near the answer, and the
    FFT's rounding, bounded at e^{K(lam) - lam eps}, stays a few percent of a delta of 1e-13
    at any spacing (a finer lattice only lengthens the window). Split off at c, above the
    answer (``least``), the far part's terms need no tilt, and the tail's window ends at c.
    Only chooses: the terms' bounds hold for any c."""
    m_p, _ = loss.cell_masses(np.array([tau, math.inf]))
    kt = count * (float(m_p[0]) + loss.p_inf)
    kf = math.sqrt(budget * math.exp(-kt))
    mass = min(kf / count, 0.5 * kt / count) - loss.p_inf
    if not (mass > 0.0 and top > tau):
        return None
    c = math.ceil(max(quantiles(loss, mass, tau, top)[1], least) / coarse) * coarse
    if not tau < c <= top - FAR_CUT_SHARE * (top - tau):
        return None
    m_far, _ = loss.cell_masses(np.array([c, math.inf]))
    return c if float(m_far[0]) + loss.p_inf > FAR_GAIN * eta else None


@dataclass(frozen=True)
class SplitLaw:
    """A law's bulk discretised on the fine lattice and on the coarse one, and its tail on
    the coarse one, with the tail's total P-mass (an upper bound on it). A right tail may be
    split again at a loss c (:func:`far_cut`): ``tail_coarse`` then holds the tail up to c and
    ``far`` the part above it, on the coarse lattice too."""

    bulk_fine: Component
    bulk_coarse: Component
    tail_coarse: Component
    tail_mass: float
    #: The bulk's total P-mass on the fine lattice (upper PLD), rounded up.
    bulk_mass: float
    ratio: int
    #: The offset d of the fine lattice: ``bulk_fine`` discretises the measure of the bulk's
    #: losses less d (:class:`~autoacct.losses.shifted.ShiftedLoss`), so n of its copies
    #: compose to n copies of the bulk moved by -n d, and a term holding them is read at
    #: eps - n d (see :func:`aligned_bulk`).
    offset: float = 0.0
    far: Component | None = None
    #: An upper bound on the far part's P-mass.
    far_mass: float = 0.0

    @cached_property
    def bulk_var(self) -> float:
        """The variance of one bulk copy's fine upper PLD (normalised): it only chooses how a
        term bounds its bulk copies (:func:`~autoacct.pld.terms._narrow`); made once, read by every term."""
        return mean_var(self.bulk_fine.upper)[1]


def quantiles(loss: PrivacyLoss, mass: float, a: float, b: float) -> tuple[float, float]:
    """(low, high) in [a, b] with P(L < low) <= ``mass`` and P(high < L < inf) <= ``mass``,
    read off the law's cell masses on _QUANTILE_POINTS points of [a, b]: a law's own
    :meth:`~PrivacyLoss.quantile_range` may be far from its quantiles (a subsampled law's
    maps the base's, which does not weigh the sampled part by q)."""
    return quantiles_at(loss, (mass,), a, b)[0]


def quantiles_at(loss: PrivacyLoss, masses: Sequence[float], a: float, b: float) -> list[tuple[float, float]]:
    """:func:`quantiles` for each of ``masses``, from one reading of the law's cell masses."""
    if not b > a:
        return [(a, b) for _ in masses]
    grid = np.linspace(a, b, _QUANTILE_POINTS)
    m_p, _ = loss.cell_masses(np.concatenate(([-np.inf], grid, [np.inf])))
    below = np.cumsum(m_p[:-1])          # P(L <= grid_i)
    above = np.cumsum(m_p[::-1])[::-1][1:]  # P(grid_i < L < inf)
    out = []
    for mass in masses:
        # The last point with P(L <= x) <= mass bounds P(L < low); the first point with
        # P(L > x) <= mass bounds P(L > high).
        i = int(np.searchsorted(below, mass, side="right")) - 1
        j = int(np.flatnonzero(above <= mass)[0]) if np.any(above <= mass) else grid.size - 1
        out.append(((float(grid[i]) if i >= 0 else a), float(grid[j])))
    return out


_QUANTILE_POINTS = 1025


class TailSide(NamedTuple):
    """Where a law composed ``count`` times reaches far beyond its bulk (:func:`tail_side`)."""

    #: +1 for a tail above ``tau``, -1 for one below it, 0 for both: the losses above ``tau``
    #: and those at or below ``low``.
    side: int
    tau: float
    #: The bulk's share of the law's range.
    share: float
    #: count times the tail's P-mass is at most about this (TAIL_RATE, LOOSE_TAIL_RATE or
    #: HEAVY_TAIL_RATE).
    rate: float
    #: The lower threshold of a tail on both sides (side 0).
    low: float = -math.inf


#: The loose rate is taken over the strict one where only it leaves the bulk this small a share
#: and its tail holds at most _PLATEAU of the loose rate.
_SMALL_BULK = MAX_BULK_SHARE / 4
_PLATEAU = 0.5


def tail_side(loss: PrivacyLoss, count: int, eta: float) -> TailSide | None:
    """Where a law composed ``count`` times reaches far beyond its bulk: side +1 and tau when
    all but a share TAIL_RATE / count of its mass lies below tau, in the first ``share`` of
    its range (up to P-mass ``eta`` each side), at most LOOSE_BULK_SHARE; side -1 for the
    mirror image (mass above tau, in the last share); side 0 where neither exists but both
    tails together leave such a bulk (:func:`_both_sides`); None for a law that does not, a
    law that :func:`splits` does not take, one run, or a range of width 0. The remove pair of a
    subsampled law has its tail on the right, its add pair on the left (the one large loss of
    a rarely sampled record lowers it there).

    Where TAIL_RATE leaves no small share, or (for a right tail) only LOOSE_TAIL_RATE leaves a
    share of at most _SMALL_BULK with a tail of at most _PLATEAU times its rate, the loose rate
    is taken: a record sampled about
    k q < 0.3 times over the run with little noise has a spike of unsampled losses near
    log(1 - q) and its sampled losses far above it (at q = 1e-5, sigma = 0.15: near 10 +- 6.6),
    and its largest 1e-3 / k of mass lies inside the sampled part, so the strict rate puts
    tau there. The loose rate puts it between the two: the terms j >= 2 then carry weight,
    and each term is composed with its own tilt (see :func:`shares`)."""
    if count < 2 or not splits(loss):
        return None
    a, b = loss.quantile_range(eta)
    if not b > a:
        return None
    found: TailSide | None = None
    rates = (TAIL_RATE, LOOSE_TAIL_RATE)
    # (one reading of the cells gives the quantiles at both rates and those of both sides)
    *at_rates, both = quantiles_at(loss, [rate / count for rate in rates] + [0.5 * TAIL_RATE / count], a, b)
    for rate, (low, high) in zip(rates, at_rates):
        right, left = (high - a) / (b - a), (b - low) / (b - a)
        side = (TailSide(1, high, right, rate) if right <= LOOSE_BULK_SHARE and right <= left
                else TailSide(-1, low, left, rate) if left <= LOOSE_BULK_SHARE else None)
        if side is None or not cuttable(loss, (side.tau,)):
            continue
        if found is None:
            found = side
        elif side.side > 0 and found.side > 0 and found.share > _SMALL_BULK >= side.share:
            # Only where the loose threshold falls between the spike and the sampled part,
            # where little mass lies: the tail then holds well under the loose rate.
            m_p, _ = loss.cell_masses(np.array([-np.inf, side.tau, np.inf]))
            if count * (m_p[1] + loss.p_inf) <= _PLATEAU * rate:
                found = side
    return found if found is not None else _both_sides(loss, both, a, b)


def _both_sides(loss: PrivacyLoss, both: tuple[float, float], a: float, b: float) -> TailSide | None:
    """Side 0 of :func:`tail_side` at TAIL_RATE: a law whose tails both reach far beyond a bulk
    of at most LOOSE_BULK_SHARE of its range [a, b] (a symmetric law: the pair of sampling
    without replacement, whose losses under X are those of the Poisson remove pair above 0 and
    the mirror image of its add pair's below), ``both`` the quantiles (low, high) at half the
    rate's mass each. The binomial expansion over bulk and tail holds for any split of the
    measure in two, a tail in two pieces included. A one-sided tail is preferred where there
    is one: its terms' windows span one side of the law, not both."""
    low, high = both
    share = (high - low) / (b - a)
    if not (low < high and share <= LOOSE_BULK_SHARE and cuttable(loss, (low, high))):
        return None
    return TailSide(0, high, share, TAIL_RATE, low)


def heavy_side(loss: PrivacyLoss, count: int, eta: float) -> TailSide | None:
    """The tail side of :func:`tail_side` at HEAVY_TAIL_RATE, where it leaves a bulk of at
    most MAX_BULK_SHARE of the law's range; None otherwise (and where tail_side has none).

    A record sampled about k q = 1-20 times with little noise: its sampled losses spread
    over units and its unsampled ones sit in a spike near log(1 - q), so no rate below 1
    leaves a small bulk (at q = 1e-5, sigma = 0.23, k = 1e6 the loose rate's bulk spans 13%
    of a range of 48). Just above the spike, the terms of up to MAX_TERMS tail copies carry
    the answer (k t = 7.7 there, 39 terms for delta = 1e-5), each with its own tilt, where
    one lattice over the whole composition needs 5.5e6 points. Where one lattice serves,
    these many terms cost more (at q = 3.2e-3, sigma = 1.55, k = 8e6 about 100 times
    more), so the accountant asks for this side only once one lattice has failed the
    direction (:meth:`splitting.SplitDirections._heavy_side`)."""
    if count < 2 or not splits(loss):
        return None
    a, b = loss.quantile_range(eta)
    if not b > a:
        return None
    low, high = quantiles(loss, HEAVY_TAIL_RATE / count, a, b)
    right, left = (high - a) / (b - a), (b - low) / (b - a)
    side = TailSide(1, high, right, HEAVY_TAIL_RATE) if right <= left else TailSide(-1, low, left, HEAVY_TAIL_RATE)
    return side if side.share <= MAX_BULK_SHARE and cuttable(loss, (side.tau,)) else None


def splits(loss: PrivacyLoss) -> bool:
    """Whether a law may be split into bulk and tail: one that may go on any lattice
    (:func:`~autoacct.pld.merged.on_any_lattice`; a subsampled discrete law's parts are atom
    laws again, :func:`~autoacct.losses.restricted.restricted`), or a law off any lattice with
    a density beside atoms it lists (the atom at 0 of sampling without replacement's pair,
    about 38% of its mass at sigma = 1): its parts are then restricted at thresholds clear of
    those atoms (:func:`cuttable`). A finite atom law (its atoms hold all its mass) is not."""
    if on_any_lattice(loss):
        return True
    if loss.lattice is not None or not atoms_apart(loss, ()):
        return False
    return float(np.sum(loss.atoms[1])) + loss.p_inf < _ATOMS_SHARE


#: A law whose listed atoms and mass at +inf hold at least this share of its P-mass is taken
#: as a finite atom law (its masses sum to 1 up to rounding), which :func:`splits` leaves whole.
_ATOMS_SHARE = 1.0 - 1e-6


def cuttable(loss: PrivacyLoss, ends: Sequence[float]) -> bool:
    """Whether ``loss`` may be restricted at the thresholds ``ends``: a law without atoms, one
    whose atoms are split by their stored values (:func:`~autoacct.pld.merged.on_any_lattice`),
    or one whose listed atoms lie clear of every end (else a split is not taken)."""
    return not loss.has_atoms or on_any_lattice(loss) or atoms_apart(loss, tuple(ends))


def parts_at(loss: PrivacyLoss, side: int, tau: float, low: float = -math.inf) -> tuple[PrivacyLoss, PrivacyLoss]:
    """(bulk, tail) of ``loss`` split at ``tau``: the tail above tau for ``side`` +1, below or
    at it for -1; for 0 the bulk in (low, tau] and the tail outside it."""
    if side > 0:
        return restricted(loss, -math.inf, tau), restricted(loss, tau, math.inf)
    if side == 0:
        return restricted(loss, low, tau), outside(loss, low, tau)
    return restricted(loss, tau, math.inf), restricted(loss, -math.inf, tau)


def pays(side: TailSide, width: float, scale: float, count: int, cells: float, atoms: bool = False) -> bool:
    """Whether splitting a law composed ``count`` times at ``side`` pays: its bulk (all but the
    tail) spans ``side.share`` of its range ``width`` (``cells`` cells of the fine lattice),
    for an answer near ``scale``. One lattice composes the DP-SGD matrix's laws (bulk shares
    7% to 43%, ranges below twice the answer) fast; a bulk share of 19% with a range five
    times the answer (q = 5.25e-4, sigma = 0.411, k = 3801, delta 2.9e-11) needs a window of
    2e8 points there.

    A side at TAIL_RATE leaves the tail so little mass that the split's few terms compose
    the bulk much as one lattice would, adding a second lattice and the bulk's offsets; where
    k copies of the whole range span few cells, one lattice is cheap. On benchmarks/sweep.py,
    at bulk shares of 2.3% to 12% and k copies spanning 5e4 to 1.3e6 cells (k = 6, 51 and
    157), one lattice took 21 to 24 ms where the split took 43 to 52 ms, within tol both. At
    shares of 1.1% or less the split is what bounds the spike near log(1 - q) from below
    (q = 1e-5, sigma = 0.5, k = 3, delta = 1e-12: [1.1734, 1.1739] in 0.11 s, one lattice
    [0.91, 1.36] in 3.7 s), and over many more cells one lattice costs more (q = 1e-4,
    sigma = 0.8, k = 1e6, delta = 1e-9: 1.6 s against 0.53 s).

    A law of ``atoms`` (a subsampled discrete law, merged onto its lattices) costs one lattice
    far more: its isolated sampled atoms are merged at second order only on a fine lattice
    (:mod:`~autoacct.pld.grid`), 2e6 to 2e7 points for the discrete Gaussian at kq = 1 to 1e4.
    Its right tail at TAIL_RATE then pays at bulk shares up to LOOSE_BULK_SHARE where k copies
    span MANY_CELLS cells or more. At shares of 5.5% to 25% and 1.5e9 to 1.2e12 such cells,
    one lattice or the heavy split took 0.5 to 3.1 s, or stopped at the grid's cap (q = 1e-3,
    sigma = 0.7, k = 1e5, delta = 1e-12: [6.771, 6.933]), where this split answers within tol
    in 0.11 to 0.67 s. Over a 72-case scan of the discrete Gaussian (q 1e-4 to 0.01, sigma
    0.7 to 5, k 1e4 to 1e6) that is 16.4 s against 25.7 s, and 0.03 to 0.06 s more on a few
    fast cases (sigma = 2: 0.08-0.1 s on one lattice, 0.12-0.16 s split). Left tails stay as
    they are: split at 5.7% (q = 1e-4, sigma = 0.7, k = 1e6, delta = 1e-6), the add pair's
    upper bound reached 1.163 where the remove pair's eps is 1.125.

    A tail on both sides (the symmetric pair of sampling without replacement) pays up to
    BOTH_SIDES_SHARE. Over a scan of a Gaussian so sampled (q 1e-4 to 0.01, sigma 0.7 to 2,
    k 100 to 1e6, delta 1e-6 and 1e-10), the split at shares of 0.6% to 8% took 0.02 to
    0.21 s, within tol, where one lattice took up to 5.1 s, warned on five of them (its grid
    capped at 4.2e6 points, brackets up to 2% wide) and needed 0.5 to 5 s on eight; at a share
    of 10% (q = 1e-3, sigma = 0.7, k = 1e4, delta = 1e-6) the split took 0.09 s against one
    lattice's 0.03 s, and at 24% (60000 records, batches of 256, 3 epochs, sigma = 1) it only
    loosened the bound by 7e-5 relatively in the same time. An atom law's tails on both sides
    pay as its right tail does, up to LOOSE_BULK_SHARE over MANY_CELLS cells: the discrete
    Gaussian so sampled (q = 1e-4, sigma = 1, k = 1e4 to 1e6, delta = 1e-10) went from 1.7 to
    3.2 s with grid-cap warnings ([0, 0.0945] at k = 1e4) to 0.16 to 0.22 s within tol, at bulk
    shares of 4% to 6%."""
    if side.side == 0 and side.share > BOTH_SIDES_SHARE:
        return False
    if atoms and side.side >= 0 and side.rate <= TAIL_RATE and count * cells >= MANY_CELLS:
        return side.share <= LOOSE_BULK_SHARE
    if side.rate <= TAIL_RATE and side.share > PAYING_SHARE and count * cells <= FEW_CELLS:
        return False
    return side.share <= MAX_BULK_SHARE or (side.share <= LOOSE_BULK_SHARE and width >= WIDE * scale)


def coarse_ratio(count: int) -> int:
    """The least R, the coarse lattice's spacing over the fine one's. The fine lattice is
    sized for ``count`` copies; the coarse one composes the terms' few tail copies (4 or 5 at
    TAIL_RATE, at most 16 counted here) and one re-discretised bulk, so R^2 = count / 64
    keeps their spacing error at most a quarter of the fine lattice's. The accountant takes
    a larger R where the tail's own sizing allows it."""
    return max(1, int(math.sqrt(count / 64.0)))


def split_law(bulk_fine: Component, bulk_coarse: Component, tail_coarse: Component, ratio: int,
              offset: float = 0.0, far: Component | None = None) -> SplitLaw:
    """The :class:`SplitLaw` of these discretisations (``bulk_fine`` on the lattice moved by
    ``offset``); the tail's and the far part's P-masses are those of their upper PLDs (which
    keep each cell's P-mass), rounded up, and at least the lower PLDs'."""
    bulk = bulk_fine.upper.total * (1.0 + SUM_ULPS)
    return SplitLaw(bulk_fine, bulk_coarse, tail_coarse, _mass(tail_coarse), bulk, ratio, offset, far,
                    0.0 if far is None else _mass(far))


def _mass(comp: Component) -> float:
    """A component's P-mass: its upper PLD's, rounded up, and at least its lower PLD's."""
    return max(comp.upper.total, comp.lower.total) * (1.0 + SUM_ULPS)


#: Largest offset of a moved lattice: e^d must be a finite float (log of the largest is 709.78).
_LARGEST_SHIFT = 709.0


def aligned_bulk(bulk: PrivacyLoss, h: float, count: int, scale: float, allowance: float, eta: float,
                 make: Callable[[PrivacyLoss], Component]) -> tuple[Component, float]:
    """The bulk's component on the fine lattice hZ + d (``make`` discretises a measure on hZ),
    and the offset d in [0, h).

    The bulk of a rarely sampled record's loss sits in a spike narrower than a cell, or a
    few cells wide with a steep edge at its support's start log(1 - q). Its lower PLD then
    depends, at first order in h, on where the lattice falls in the spike: no lattice
    measure below the profile follows a near-kink between two lattice points.

    * At q = 1e-5, sigma = 0.26 on the lattice of eps near 10, 97% of the bulk lies within
      1e-5 of log(1 - q), a cell being 3.5e-4: on hZ its lower PLD's mean is 0.95 h below
      the upper PLD's per copy, and over 1e4 copies the composed lower bound leaves its
      window; with log(1 - q) on the lattice, 0.005 h.
    * At q = 1.6e-5, sigma = 0.45 (a spike about 5 cells wide) the means agree within
      1e-5 h, but the lower PLD's variance falls short by 1.1% on hZ and 0.13% on hZ + h/2;
      the composed lower profile at eps = 0.002 over 737 copies falls short by 0.78% and
      0.087%.

    Both move eps(delta) of ``count`` copies near ``scale``: by count times the mean's gap,
    and by the variance's gap as a normal approximation's eps moves with it
    (:func:`_moved_eps`). Offsets are tried in turn: 0; those that put on the lattice the
    loss L* = log(P(R) / Q(R)) of a cell-wide region R at a support end that is a spike
    (garbling.is_spike), where the lower PLD merges the spike into one atom at L*, second
    order where rounding it down is first order (see :mod:`~autoacct.pld.garbling`; at
    q = 1e-5, sigma = 0.3, k = 1e5, delta = 1e-5 eps in [7.9865, 7.9874] in 0.3 s, where the
    other offsets left [0, 7.987] after 3 s); those that put the bulk's support ends (up to
    P-mass ``eta``) on the lattice; then h/2, h/4 and 3h/4. The first that moves eps by at
    most ``allowance`` is taken, else the one that moves it least. Any offset gives valid
    bounds: this only chooses."""
    a, b = bulk.quantile_range(eta)
    tried: list[float] = []
    best: tuple[float, Component, float] | None = None
    for d in _offsets(bulk, h, a, b):
        # (offsets are the same modulo h: one a cell apart only moves the lattice's indices)
        if not 0.0 <= d < h or any(min(abs(d - e), h - abs(d - e)) <= _SAME_OFFSET * h for e in tried):
            continue
        if d > _LARGEST_SHIFT:
            # The moved measure's Q-masses are e^d times L's (ShiftedLoss): past the floats
            # at lattices of astronomic spacing (sigma = 1e-20, h = 1.2e33). The offset 0
            # stays, and any offset gives valid bounds.
            continue
        tried.append(d)
        comp = make(bulk if d == 0.0 else ShiftedLoss(bulk, d))
        moved = _moved_eps(comp.upper, comp.lower, count, scale)
        if best is None or moved < best[0]:
            best = (moved, comp, d)
        if moved <= allowance:
            break
    assert best is not None  # d = 0 is always tried
    return best[1], best[2]


def _offsets(bulk: PrivacyLoss, h: float, a: float, b: float) -> Iterator[float]:
    """:func:`aligned_bulk`'s offsets in the order tried (the spike offsets only made where 0
    does not do). A ``merged_lower`` law's bulk has 0 alone: its lower PLD merges its atoms onto
    any lattice at second order (:mod:`~autoacct.pld.merged`), and its atoms are not moved."""
    yield 0.0
    if bulk.merged_lower:
        return
    yield from _spike_offsets(bulk, h, a, b)
    yield from (a - math.floor(a / h) * h, b - math.floor(b / h) * h, h / 2, h / 4, 3 * h / 4)


def _spike_offsets(bulk: PrivacyLoss, h: float, a: float, b: float) -> list[float]:
    """The offsets in [0, h) that put on the lattice L*(R) of the regions R = (b - h, b] and
    (a, a + h] at the bulk's support ends where garbling.is_spike merges them."""
    total = float(bulk.cell_masses(np.array([-math.inf, math.inf]))[0][0])
    out = []
    for edges, end in (([b - 2 * h, b - h, b], 1), ([a, a + h, a + 2 * h], 0)):
        p, q = bulk.cell_masses(np.array(edges))
        if is_spike(p[end], p[1 - end], total, (b - a) / h) and q[end] > 0.0:
            star = math.log(p[end] / q[end])
            out.append(star - math.floor(star / h) * h)
    return out


def _moved_eps(up: DiscretePLD, low: DiscretePLD, count: int, scale: float) -> float:
    """How far the lower PLD ``low`` moves eps(delta) of ``count`` copies near ``scale`` from
    where the upper one ``up`` puts it, to first order: count |m_up - m_low| plus
    |v_up - v_low| z sqrt(count / v_up) / 2, from the PLDs' means m and variances v (a normal
    approximation's eps, count m + z sqrt(count v), moves so with the variance), with
    z = (scale - count m_up) / sqrt(count v_up) capped at _Z: an answer further out is
    decided by the tail's copies, which the bulk's spread moves far less. Only chooses a
    lattice, never enters a bound."""
    m_up, v_up = mean_var(up)
    m_low, v_low = mean_var(low)
    moved = count * abs(m_up - m_low)
    if v_up > 0.0:
        spread = math.sqrt(count * v_up)
        moved += abs(v_up - v_low) * count * min(abs(scale - count * m_up), _Z * spread) / (2.0 * spread ** 2)
    return moved


def mean_var(pld: DiscretePLD) -> tuple[float, float]:
    """Mean and variance of a PLD's finite masses (normalised; 0, 0 when there are none)."""
    w, x = pld.masses, pld.losses
    total = float(w.sum())
    if total <= 0.0:
        return 0.0, 0.0
    mean = pld.moment / total
    return mean, float((w * (x - mean) ** 2).sum()) / total


#: Offsets closer than this share of a cell count as the same: a support end 0.3% of a cell
#: from the lattice is not tried again (its lower PLD took 0.3 to 0.6 s of a 3 s query at
#: q = 8.6e-5, sigma = 0.32, k = 131, as d = 0 did), while the end 3% of a cell below it
#: at q = 1e-5, sigma = 0.26 is (it makes the lower PLD second order there).
_SAME_OFFSET = 1.0 / 64.0
#: Standard deviations of a bulk's composition beyond which an answer is taken as the tail's
#: (a normal tail there is below 1e-15).
_Z = 8.0
