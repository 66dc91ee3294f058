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
composition for sub-probability measures as for laws (see :mod:`discretize`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol

import numpy as np

from autoacct.losses import PrivacyLoss
from autoacct.losses.restricted import RestrictedLoss
from autoacct.losses.shifted import ShiftedLoss
from autoacct.pld import blocks
from autoacct.pld.components import Component
from autoacct.pld.compose import LAW_REL, compose
from autoacct.pld.cumulants import Components, chernoff_bound, choose_tilt
from autoacct.pld.discretize import DiscretePLD
from autoacct.pld.garbling import is_spike
from autoacct.pld.mixture import SUM_ULPS, MixtureProfile
from autoacct.pld.profiles import DiscreteProfile

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
#: ... and the law's range needs at least this many cells of the fine lattice.
MIN_CELLS = 1 << 12
#: The terms left out may cost at most this share of tol * delta.
OMITTED_SHARE = 1e-3
#: Most terms composed (beyond, the split is not taken): k t = 10 (HEAVY_TAIL_RATE) needs
#: 38 terms for an omitted mass of 1e-11, 49 for 1e-18.
MAX_TERMS = 80


class _Tilt(Protocol):
    """A term's tilt for its components on the lattice of spacing h, moved by ``moved``."""

    def __call__(self, comps: Components, h: float, moved: float = 0.0) -> float: ...


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


@dataclass(frozen=True)
class SplitLaw:
    """A law's bulk discretised on the fine lattice and on the coarse one, and its tail on
    the coarse one, with the tail's total P-mass (an upper bound on it)."""

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


def quantiles(loss: PrivacyLoss, mass: float, a: float, b: float) -> tuple[float, float]:
    """(low, high) in [a, b] with P(L < low) <= ``mass`` and P(high < L < inf) <= ``mass``,
    read off the law's cell masses on _QUANTILE_POINTS points of [a, b]: a law's own
    :meth:`~PrivacyLoss.quantile_range` may be far from its quantiles (a subsampled law's
    maps the base's, which does not weigh the sampled part by q)."""
    if not b > a:
        return a, b
    grid = np.linspace(a, b, _QUANTILE_POINTS)
    m_p, _ = loss.cell_masses(np.concatenate(([-np.inf], grid, [np.inf])))
    below = np.cumsum(m_p[:-1])          # P(L <= grid_i)
    above = np.cumsum(m_p[::-1])[::-1][1:]  # P(grid_i < L < inf)
    # The last point with P(L <= x) <= mass bounds P(L < low); the first point with
    # P(L > x) <= mass bounds P(L > high).
    i = int(np.searchsorted(below, mass, side="right")) - 1
    j = int(np.flatnonzero(above <= mass)[0]) if np.any(above <= mass) else grid.size - 1
    return (float(grid[i]) if i >= 0 else a), float(grid[j])


_QUANTILE_POINTS = 1025


class TailSide(NamedTuple):
    """Where a law composed ``count`` times reaches far beyond its bulk (:func:`tail_side`)."""

    #: +1 for a tail above ``tau``, -1 for one below it.
    side: int
    tau: float
    #: The bulk's share of the law's range.
    share: float
    #: count times the tail's P-mass is at most about this (TAIL_RATE, LOOSE_TAIL_RATE or
    #: HEAVY_TAIL_RATE).
    rate: float


#: The loose rate is taken over the strict one where only it leaves the bulk this small a share
#: and its tail holds at most _PLATEAU of the loose rate.
_SMALL_BULK = MAX_BULK_SHARE / 4
_PLATEAU = 0.5


def tail_side(loss: PrivacyLoss, count: int, eta: float) -> TailSide | None:
    """Where a law composed ``count`` times reaches far beyond its bulk: side +1 and tau when
    all but a share TAIL_RATE / count of its mass lies below tau, in the first ``share`` of
    its range (up to P-mass ``eta`` each side), at most LOOSE_BULK_SHARE; side -1 for the
    mirror image (mass above tau, in the last share); None for a law that does not, a law
    with atoms (they sit on lattices), one run, or a range of width 0. The remove pair of a
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
    if count < 2 or loss.has_atoms or loss.lattice is not None:
        return None
    a, b = loss.quantile_range(eta)
    if not b > a:
        return None
    found: TailSide | None = None
    for rate in (TAIL_RATE, LOOSE_TAIL_RATE):
        low, high = quantiles(loss, rate / count, a, b)
        right, left = (high - a) / (b - a), (b - low) / (b - a)
        side = (TailSide(1, high, right, rate) if right <= LOOSE_BULK_SHARE and right <= left
                else TailSide(-1, low, left, rate) if left <= LOOSE_BULK_SHARE else None)
        if side is None:
            continue
        if found is None:
            found = side
        elif side.side > 0 and found.side > 0 and found.share > _SMALL_BULK >= side.share:
            # Only where the loose threshold falls between the spike and the sampled part,
            # where little mass lies: the tail then holds well under the loose rate.
            m_p, _ = loss.cell_masses(np.array([-np.inf, side.tau, np.inf]))
            if count * (m_p[1] + loss.p_inf) <= _PLATEAU * rate:
                found = side
    return found


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
    if count < 2 or loss.has_atoms or loss.lattice is not None:
        return None
    a, b = loss.quantile_range(eta)
    if not b > a:
        return None
    low, high = quantiles(loss, HEAVY_TAIL_RATE / count, a, b)
    right, left = (high - a) / (b - a), (b - low) / (b - a)
    if min(right, left) > MAX_BULK_SHARE:
        return None
    return TailSide(1, high, right, HEAVY_TAIL_RATE) if right <= left else TailSide(-1, low, left, HEAVY_TAIL_RATE)


def parts_at(loss: PrivacyLoss, side: int, tau: float) -> tuple[RestrictedLoss, RestrictedLoss]:
    """(bulk, tail) of ``loss`` split at ``tau``: the tail above tau for ``side`` +1, below or
    at it for -1."""
    if side > 0:
        return RestrictedLoss(loss, -math.inf, tau), RestrictedLoss(loss, tau, math.inf)
    return RestrictedLoss(loss, tau, math.inf), RestrictedLoss(loss, -math.inf, tau)


def pays(side: TailSide, width: float, scale: float, count: int, cells: float) -> bool:
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
    sigma = 0.8, k = 1e6, delta = 1e-9: 1.6 s against 0.53 s)."""
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
              offset: float = 0.0) -> SplitLaw:
    """The :class:`SplitLaw` of these discretisations (``bulk_fine`` on the lattice moved by
    ``offset``); the tail's P-mass is that of its upper PLD (which keeps each cell's P-mass),
    rounded up, and at least the lower PLD's."""
    up, low = tail_coarse.upper, tail_coarse.lower
    mass = max(up.total, low.total)
    bulk = bulk_fine.upper.total * (1.0 + SUM_ULPS)
    return SplitLaw(bulk_fine, bulk_coarse, tail_coarse, mass * (1.0 + SUM_ULPS), bulk, ratio, offset)


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
    does not do)."""
    yield 0.0
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
    m_up, v_up = _mean_var(up)
    m_low, v_low = _mean_var(low)
    moved = count * abs(m_up - m_low)
    if v_up > 0.0:
        spread = math.sqrt(count * v_up)
        moved += abs(v_up - v_low) * count * min(abs(scale - count * m_up), _Z * spread) / (2.0 * spread ** 2)
    return moved


def _mean_var(pld: DiscretePLD) -> tuple[float, float]:
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


def split_profiles(law: SplitLaw, count: int, log_eta: float, target: float,
                   log_budget: float, omitted_budget: float, tol: float = 0.0
                   ) -> tuple[MixtureProfile, MixtureProfile] | None:
    """(upper, lower) profiles of ``count`` copies of the split law (module docstring), or
    None when a re-discretisation fails (a mass out of the floating-point range) or more
    than MAX_TERMS terms would be needed.

    ``log_budget`` is the log of the delta that FFT rounding may cost over all terms (each
    term's tilt is chosen for its share), ``omitted_budget`` the delta the terms left out
    may cost; with ``tol`` (the query's relative accuracy) the terms j >= 1 may share one
    composition of the bulk (:func:`shares`), and the bulk's copies may be composed in
    blocks (:func:`blocks.blocked`; never without ``tol``, which their first-order check needs).
    """
    terms = terms_needed(count * law.tail_mass, omitted_budget)
    if terms is None or terms >= count:
        if count > MAX_TERMS:
            return None
        # Every term: the expansion is exact and leaves nothing out.
        terms = count
    h_fine = law.bulk_fine.upper.h
    h_coarse = law.tail_coarse.upper.h
    fine = Components([law.bulk_fine])
    share = math.log(terms + 1.0)
    weights, tilts, budgets = [], [], []
    for j in range(terms + 1):
        # C(k, j) exactly as an integer, rounded to the nearest float: within half an ulp.
        try:
            weight = float(math.comb(count, j))
        except OverflowError:
            return None  # beyond 1e308 (k near 1e9 and j near 40): one lattice then
        budget = log_budget - share - math.log(weight)

        def tilt(comps: Components, h: float, moved: float = 0.0, budget: float = budget) -> float:
            # (components moved by ``moved``, as the bulk's fine copies are: the target too)
            return choose_tilt(comps, target + moved, h, log_eta, budget)

        weights.append(weight)
        tilts.append(tilt)
        budgets.append(budget)
    jensen = _bulk_shift(law) if groups_share(count, terms, tol) else None
    # Term j holds count - j fine bulk copies, or count - J for terms sharing one composition
    # of the bulk (J the largest j among them), each moved by -offset: its profiles are read
    # at eps less their offsets.
    fine_copies = [count - j for j in range(terms + 1)]
    made: list[tuple[DiscreteProfile, DiscreteProfile, float, float] | None] = [None] * (terms + 1)
    short = tol <= 0.0 or law.bulk_fine.lower_short(tol, target)
    pair = _term(law, fine, count, 0, h_fine, h_coarse, log_eta, tilts[0], target, budgets[0], short)
    made[0] = None if pair is None else (*pair, 0.0, 0.0)
    if jensen is None:
        for j in range(1, terms + 1):
            pair = _term(law, fine, count, j, h_fine, h_coarse, log_eta, tilts[j], target, budgets[j], short)
            made[j] = None if pair is None else (*pair, 0.0, 0.0)
    else:
        for lam, js in _sharing(law, count, terms, tol, h_coarse, tilts).items():
            got = _shared_terms(law, fine, count, js, h_coarse, log_eta, lam, *jensen, short)
            if got is None:
                return None
            for j, m in zip(js, got):
                made[j] = m
                fine_copies[j] = count - js[-1]
    if any(m is None for m in made):
        return None
    ups = [m[0] for m in made if m is not None]
    lows = [m[1] for m in made if m is not None]
    moved = tuple(term_shift(0.0, n, law.offset, True) for n in fine_copies)
    shifts = tuple(term_shift(m[3], n, law.offset, False) for m, n in zip(made, fine_copies) if m is not None)
    weights_up = [w * (1.0 + SUM_ULPS) for w in weights]
    # A lower term read at a shifted eps also carries a factor at most 1 (its log, m[2]).
    weights_low = [w * math.exp(m[2]) * (1.0 - SUM_ULPS) for w, m in zip(weights, made) if m is not None]
    extra = omitted_mass(count * law.tail_mass, terms) if terms < count else 0.0
    # The bulk's discretised mass may exceed 1 by rounding: (1 - t)^(k - j) <= 1 then needs
    # its k-th power.
    bulk = max(law.bulk_mass, 1.0) ** count
    extra *= bulk
    caps = tuple(law.tail_mass ** j * bulk * (1.0 + SUM_ULPS) for j in range(terms + 1))
    return (MixtureProfile(tuple(weights_up), tuple(ups), extra, True, caps, target,
                           moved if any(moved) else ()),
            MixtureProfile(tuple(weights_low), tuple(lows), 0.0, False, caps, target,
                           shifts if any(shifts) else ()))


def groups_share(count: int, terms: int, tol: float) -> bool:
    """Whether terms j >= 1 may share compositions of the bulk (:func:`_shared_terms`): when
    the bulk copies whose spread a sharing term gives up, at most ``terms`` of ``count``, are
    at most a share SHARED_PER_TOL * tol of them."""
    return 0 < terms < count and terms <= SHARED_PER_TOL * tol * count


def shares(count: int, terms: int, tol: float, kt: float) -> bool:
    """Whether the terms j >= 1 all share one composition of the bulk, tilted for the term
    j = 1: where :func:`groups_share` allows it and the tail's weight ``kt`` (count times its
    P-mass) is at most twice TAIL_RATE. The term j = 1 then outweighs the others by 1 / kt
    or more; a heavier tail (LOOSE_TAIL_RATE) can put the answer on the terms j >= 2, whose
    tilted mass that tilt moves far above it (at q = 1e-5, sigma = 0.15, k = 1e4, delta =
    1e-5, eps = 50: term 3's window started at 80, and its upper bound, its whole mass, took
    eps to 80). Those terms are then grouped by their own tilts (:func:`_sharing`)."""
    return groups_share(count, terms, tol) and kt <= 2.0 * TAIL_RATE


def _sharing(law: SplitLaw, count: int, terms: int, tol: float, h_coarse: float,
             tilts: Sequence[_Tilt]) -> dict[float, list[int]]:
    """The terms j = 1..terms grouped by the tilt each shared composition of the bulk is
    made at: one group at the tilt of the term j = 1 where :func:`shares` holds, else each
    term's own tilt (that of :func:`_term`), the terms of one tilt in one group. A tilt is
    only a choice (any gives valid bounds); a group composes the bulk once, where the terms
    one by one compose it once each (at q = 1e-5, sigma = 0.3, k = 1e7, 78 terms took 8
    distinct tilts)."""
    if shares(count, terms, tol, count * law.tail_mass):
        return {tilts[1](_probe(law, count, 1), h_coarse): list(range(1, terms + 1))}
    groups: dict[float, list[int]] = {}
    for j in range(1, terms + 1):
        groups.setdefault(tilts[j](_probe(law, count, j), h_coarse), []).append(j)
    return groups


def _probe(law: SplitLaw, count: int, j: int) -> Components:
    """The components a term of j tail copies is tilted on: the bulk's and the tail's coarse
    discretisations (the tilt of the coarse composition; the fine composition of the bulk
    is tilted alike, as the leak it hands over must be)."""
    return Components([law.bulk_coarse.recounted(count - j), law.tail_coarse.recounted(j)])


def _bulk_shift(law: SplitLaw) -> tuple[float, float] | None:
    """(log m_P, c) for one copy of the bulk b: log m_P <= log of its P-mass, and c >= log of
    its Q-mass over its P-mass; None when the tail's masses leave no such bound.

    The law's P-mass is 1 and its finite Q-mass at most 1, so m_P >= 1 - t and
    m_Q <= 1 - Q(t), with t >= the tail's P-mass (law.tail_mass) and Q(t) >= sum_i w_i e^{-x_i}
    over the tail's upper PLD (connect-the-dots keeps each cell's Q-mass, moves the mass
    below its grid up to its first point and the mass above it to +inf, both of which lower
    the Q-mass it represents)."""
    up = law.tail_coarse.upper
    pos = up.masses > 0.0
    # (a tail far below 0 overflows e^{-x}: no bound then)
    with np.errstate(over="ignore"):
        q_tail = float((up.masses[pos] * np.exp(-up.losses[pos])).sum()) * (1.0 - LAW_REL)
    if not (law.tail_mass < 1.0 and 0.0 <= q_tail < 1.0):
        return None
    log_p = math.log1p(-law.tail_mass)
    log_q = math.log1p(-q_tail)
    return log_p * (1.0 + SUM_ULPS), (log_q - log_p) + SUM_ULPS * (abs(log_q) + abs(log_p))


def _shared_terms(law: SplitLaw, fine: Components, count: int, js: list[int], h_coarse: float,
                  log_eta: float, lam: float, log_p: float, c: float, short: bool = True
                  ) -> list[tuple[DiscreteProfile, DiscreteProfile, float, float]] | None:
    """(upper, lower, log scale, shift) of the terms b^{*(count - j)} * t^{*j} for j in ``js``
    (increasing; J the last), from one composition B of count - J bulk copies
    (:func:`blocks.on_lattice`, in blocks unless ``short``), all tilted by ``lam``: the lower
    profile of term j is e^{log scale} delta_j(eps + shift) for the profile delta_j of
    B * t^{*j}.

    Upper: B on the coarse lattice, composed with J - j copies of the bulk's coarse upper
    PLD and j tail copies (connect-the-dots bounds each copy from above).
    Lower (Jensen): for a measure nu of P-mass m_P and Q-mass m_Q and any measure mu,
    delta_{mu * nu}(eps) = int mu(ds) int nu(dr) (1 - e^{eps - s} e^{-r})_+
    >= int mu(ds) (m_P - e^{eps - s} m_Q)_+ = m_P delta_mu(eps + log(m_Q / m_P)), since
    u -> (1 - a u)_+ is convex. With nu = b^{*(J - j)} (P- and Q-masses the (J - j)-th
    powers of b's) and mu = B * t^{*j}: scale (J - j) log m_P and shift (J - j) c, with the
    bounds of :func:`_bulk_shift`. The J - j copies' spread is all it gives up, at most a
    share SHARED_PER_TOL * tol of the bulk's (:func:`groups_share`).
    """
    last = js[-1]
    bulk = blocks.on_lattice(fine, count - last, law.ratio, log_eta, lam, not short)
    if bulk is None:
        return None
    out = []
    for j in js:
        tails = law.tail_coarse.recounted(j)
        both = Components([*bulk, tails])
        up, low = compose(both, h_coarse, log_eta, lam)
        assert low is not None
        comps = both
        if j < last:
            comps = Components([*bulk, law.bulk_coarse.recounted(last - j), tails])
            up, _ = compose(comps, h_coarse, log_eta, lam, lower=False)
        out.append((_with_below(up, comps), low, (last - j) * log_p, (last - j) * c))
    return out


def term_shift(jensen: float, copies: int, offset: float, upper: bool) -> float:
    """The shift at which a term is read, jensen - copies * offset, rounded to its profile's
    side: at most the exact value for an upper profile, at least it for a lower one. The
    rounding of the product and the sum is bounded by the parts' magnitudes, not the result's
    (the two parts may nearly cancel), and :func:`mixture._shifted` then only rounds eps + shift."""
    moved = copies * offset
    value = jensen - moved
    margin = SUM_ULPS * (abs(jensen) + abs(moved))
    return value - margin if upper else value + margin


#: The terms share one bulk composition when the copies whose spread it gives up are at most
#: this many times tol of them. Measured on benchmarks/sweep.py, a share s widened the
#: certified bracket by 0.03 s to 0.04 s relatively (q = 5.25e-4, sigma = 0.411, k = 3801,
#: delta = 2.9e-11: s = 1.05e-3, width 1.6e-6 -> 3.1e-5; q = 1e-4, sigma = 0.8, k = 1e4,
#: delta = 1e-9: s = 4e-4, width 6.2e-5 -> 7.7e-5), so by about 0.08 tol at most here.
SHARED_PER_TOL = 2.0


def _term(law: SplitLaw, fine: Components, count: int, j: int, h_fine: float, h_coarse: float,
          log_eta: float, tilt: _Tilt, target: float = 0.0, budget: float = math.inf, short: bool = True
          ) -> tuple[DiscreteProfile, DiscreteProfile] | None:
    """Profiles of b^{*(count - j)} * t^{*j} (not weighted by C(count, j)).

    The bulk's copies are composed in blocks (:mod:`blocks`) where they cost less than
    one fine composition, unless the bulk's lower PLD is ``short`` (see
    :meth:`Component.lower_short`: the blocks would carry its first-order loss through
    each re-discretisation); for the term j = 0 also unless the blocks' rounding, read at
    the ``target`` eps, exceeds the term's share e^budget of delta (its own fine
    composition then)."""
    if j == 0:
        lam = tilt(fine.recounted(count), h_fine, -count * law.offset)
        return bulk_term(fine, count, law.offset, log_eta, lam, target, budget, short)
    if j == count:
        comps = Components([law.tail_coarse.recounted(count)])
        lam = tilt(comps, h_coarse)
        up, low = compose(comps, h_coarse, log_eta, lam)
        assert low is not None
        return _with_below(up, comps), low
    lam = tilt(_probe(law, count, j), h_coarse)
    bulk = blocks.on_lattice(fine, count - j, law.ratio, log_eta, lam, not short)
    if bulk is None:
        return None
    comps = Components([*bulk, law.tail_coarse.recounted(j)])
    up, low = compose(comps, h_coarse, log_eta, lam)
    assert low is not None
    return _with_below(up, comps), low


def bulk_term(fine: Components, count: int, offset: float, log_eta: float, lam: float,
              target: float, budget: float, short: bool) -> tuple[DiscreteProfile, DiscreteProfile]:
    """Profiles of ``count`` copies of the one measure of ``fine`` (on its lattice, each copy
    moved by -``offset``), tilted by lam: in blocks (:mod:`blocks`) where they cost less than
    one composition, unless its lower PLD is ``short`` (the blocks would carry its first-order
    loss through each re-discretisation) or the blocks' rounding, read at the ``target`` eps,
    exceeds e^budget of delta (one composition then)."""
    h = fine[0].upper.h
    if not short:
        blocked = blocks.blocked(fine, count, log_eta, lam, blocks.spread(blocks.max_ratio(count)))
        if blocked is not None:
            ratio, parts = blocked
            up, low = compose(parts, ratio * h, log_eta, lam)
            if up.log_c1 - lam * (target - count * offset) <= budget:
                assert low is not None
                return up, low
    up, low = compose(fine.recounted(count), h, log_eta, lam)
    assert low is not None
    return up, low


def moved_profiles(comp: Component, count: int, offset: float, log_eta: float, target: float,
                   log_budget: float, tol: float, in_blocks: bool = True) -> tuple[MixtureProfile, MixtureProfile]:
    """(upper, lower) profiles of ``count`` copies of a law from its component ``comp`` on the
    lattice moved by ``offset`` (the measure of L - offset discretised on hZ, see
    :func:`aligned_bulk`): a split law's term j = 0 with no tail, composed as
    :func:`bulk_term` composes it (without ``in_blocks``, in one fine composition) and read
    at eps - count offset, its weight and shift rounded to each profile's side. The whole
    law's mass at +inf is in its PLDs, so nothing is left out."""
    fine = Components([comp])
    lam = choose_tilt(fine.recounted(count), target - count * offset, comp.upper.h, log_eta, log_budget)
    short = not in_blocks or tol <= 0.0 or comp.lower_short(tol, target)
    up, low = bulk_term(fine, count, offset, log_eta, lam, target, log_budget, short)
    # The discretised mass may exceed 1 by rounding: its count-th power bounds the composition's.
    caps = (max(comp.upper.total * (1.0 + SUM_ULPS), 1.0) ** count * (1.0 + SUM_ULPS),)
    return (MixtureProfile((1.0 + SUM_ULPS,), (up,), 0.0, True, caps, target,
                           (term_shift(0.0, count, offset, True),)),
            MixtureProfile((1.0 - SUM_ULPS,), (low,), 0.0, False, caps, target,
                           (term_shift(0.0, count, offset, False),)))


def moved_composition(parts: Sequence[tuple[Component, float]], log_eta: float, target: float,
                      log_budget: float) -> tuple[MixtureProfile, MixtureProfile]:
    """(upper, lower) profiles of the composition of several laws, each from its component (with
    its count) on the lattice moved by its own offset d_i (:func:`aligned_bulk`): the measures
    of L_i - d_i composed on hZ at once, read at eps - sum_i k_i d_i. The offsets are >= 0, so
    the sum, taken exactly rounded, is off by at most one rounding of each product and of
    itself, within the margin :func:`term_shift` gives it."""
    comps = Components([c for c, _ in parts])
    h = parts[0][0].upper.h
    moved = math.fsum(c.count * d for c, d in parts)
    lam = choose_tilt(comps, target - moved, h, log_eta, log_budget)
    up, low = compose(comps, h, log_eta, lam)
    assert low is not None
    # Each discretised mass may exceed 1 by rounding; the product of the powers rounds once a factor.
    caps = (math.prod(max(c.upper.total * (1.0 + SUM_ULPS), 1.0) ** c.count for c, _ in parts)
            * (1.0 + SUM_ULPS) ** (len(parts) + 1),)
    return (MixtureProfile((1.0 + SUM_ULPS,), (up,), 0.0, True, caps, target, (term_shift(0.0, 1, moved, True),)),
            MixtureProfile((1.0 - SUM_ULPS,), (low,), 0.0, False, caps, target, (term_shift(0.0, 1, moved, False),)))


def _with_below(up: DiscreteProfile, comps: Components) -> DiscreteProfile:
    """The upper profile of a term with a bound on its composed mass below the window (a
    Chernoff bound on the components' exact discrete moment generating functions, untilted):
    a term of j tail copies has nearly all its mass above j tau, and eps below its window
    is where its profile matters once the term's mass is near delta."""
    bottom = (up.start - 1) * up.h
    log_below = chernoff_bound(comps.cumulant("upper", up.lam), 0.0, 0.0, bottom, above=False)
    return replace(up, below_mass=min(math.exp(log_below) * (1.0 + SUM_ULPS), 1.0))

