"""Cumulants of a set of discretised components: tilts, windows and tail bounds.

For components (discrete PLDs L_i, each composed k_i times) the cumulant of the
composed law is K(theta) = sum_i k_i log E[e^{theta L_i}; L_i finite]. It is
tabulated once per component set on a fixed grid of exponents (both signs, and
the exponents in units of 1/h that bound the last lattice points), from the
components' exact discrete moment generating functions
(:func:`mgf.log_mgfs`). From the table come:

* the tilt lam for a query near a target eps (:func:`choose_tilt`);
* the FFT window outside which the tilted law has a given mass (:func:`window`);
* Chernoff bounds on the tilted or untilted mass beyond a point
  (:func:`chernoff_bound`), which the composer charges for wrap-around;
* the cumulant tables that :class:`~autoacct.pld.chernoff.ChernoffProfile` bounds delta with, no FFT at all.

Any exponent gives a valid Chernoff bound: the grid and the unimodal searches
(:func:`best_index`) only decide how tight the bounds are.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from autoacct.exactness import MACHINE_EPSILON, round_up
from autoacct.pld.components import Component
from autoacct.pld.discretize import DiscretePLD
from autoacct.pld.lawcache import log_mgf_up
from autoacct.pld.mgf import log_mgfs_up

#: Positive exponents at which cumulants are evaluated for tail bounds and tilts, 8 per
#: decade (factors of 1.33 apart). Any exponent gives a valid Chernoff bound; this grid only
#: decides how tight. A window's end above the tilt lam is the best over exponents t > lam of
#: (K(t) - K(lam) - log eta) / (t - lam), and for a wide composed law the best t lies within
#: a few tenths of lam: with exponents a factor 2 apart the window of DP-SGD at q = 0.002,
#: sigma = 0.676, k = 1e4 came out 2.8e7 points long against 7.3e4 at this spacing (the
#: FFT then ran on the capped 2^22 points).
THETAS = np.concatenate(([0.0], np.logspace(-3.0, 4.0, 57)))
#: Further positive exponents of a Chernoff profile (16 per decade): its bound is the best
#: over the exponents tabulated, and the grid of THETAS can leave it enough above the best
#: over all exponents to keep a direction from settling.
CHERNOFF_THETAS = np.logspace(-3.0, 4.0, 7 * 16 + 1)
#: Exponents in units of 1/h: they bound the mass of the last few lattice points.
_LATTICE_THETAS = np.logspace(0.0, 4.0, 5)
_U = MACHINE_EPSILON

def side_pld(c: Component, side: str) -> DiscretePLD:
    return c.upper if side == "upper" else c.lower


def exponents(h: float) -> np.ndarray:
    """The exponents (both signs, and 0) at which component cumulants may be evaluated.

    Tilts are chosen among them and every tail bound searches them; the cumulant of a
    set of components is tabulated once at all of them (:class:`Components`), whatever the tilt.
    """
    return _exponents(float(h))


@functools.lru_cache(maxsize=1024)
def _grid(h: float, lam: float, chernoff: bool) -> tuple[np.ndarray, int]:
    """A :class:`Cumulant`'s exponents (read-only) and the index of 0, made once per argument."""
    grid = np.union1d(exponents(h), [lam, -lam] if not chernoff else np.append(CHERNOFF_THETAS, [lam, -lam]))
    grid.flags.writeable = False
    return grid, int(np.flatnonzero(grid == 0.0)[0])


def chernoff_exponents(h: float) -> np.ndarray:
    """The exponents (read-only, increasing, with 0) of a Chernoff profile's table at spacing
    h: those of :func:`exponents` and CHERNOFF_THETAS."""
    return _grid(float(h), 0.0, True)[0]


@functools.lru_cache(maxsize=256)
def _exponents(h: float) -> np.ndarray:
    """:func:`exponents`, made once per spacing (read-only): a ledger asks for the same few."""
    pos = np.concatenate((THETAS[1:], _LATTICE_THETAS / h))
    if 1.0 / h > THETAS[-1]:
        # A lattice finer than 1 / THETAS[-1] serves answers of about that size, and their
        # best tilt, about (eps - mean) / variance, lies far above THETAS[-1]. Capped there,
        # the FFT's rounding stays relative to the total mass rather than to delta: at eps =
        # 3e-5, delta = 4e-12 (benchmarks/sweep.py --seed 19) a fifth of delta, and a bracket
        # 1.2% wide on every lattice. So the grid goes on to 1 / h, 8 exponents a decade.
        decades = math.log10(1.0 / h / THETAS[-1])
        pos = np.concatenate((pos, THETAS[-1] * np.logspace(0.0, decades, math.ceil(8 * decades) + 1)))
    pos = np.unique(pos)
    out = np.concatenate((-pos[::-1], [0.0], pos))
    out.flags.writeable = False
    return out


def cumulant(comps: Sequence[Component], side: str, theta: np.ndarray) -> np.ndarray:
    """K(theta) = sum_i k_i log E[e^{theta L_i}; L_i finite] for each theta, rounded up.

    Every use of K bounds a mass from above (the Chernoff bounds e^{K(t) - t a} on a
    window's tails, on the mass below or above it and on delta; windows and tilts only
    choose), so each law's row is rounded up by its rounding (:func:`mgf.log_mgfs_up`: up to
    1315 u below the exact value, measured on a Gaussian's PLD), and the sum by the products',
    the sum's and the margin's own roundings, (m + 2) u sum_i |k_i log M_i| for m laws.
    """
    theta = np.atleast_1d(np.asarray(theta, dtype=float))
    plds = [side_pld(c, side) for c in comps]
    counts = np.array([float(c.count) for c in comps])
    # One law's row is kept with it while it is a cached discretised law (a ledger asks
    # for the same law's table query after query); several laws' rows are computed at once.
    rows = log_mgf_up(plds[0], theta)[None, :] if len(comps) == 1 else log_mgfs_up(plds, theta)
    return counted_sum_up(rows, counts)


def counted_sum_up(rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """sum_i k_i rows_i (rows of log-MGFs, rounded up already), rounded up by the products',
    the sum's and the margin's own roundings, (m + 2) u sum_i |k_i rows_i| for m rows. An empty
    law (row -inf) makes the sum -inf; counts are positive, so no 0 * inf; an infinite sum is
    kept as it is (see :func:`margin`)."""
    terms = rows * counts[:, None]
    return terms.sum(axis=0) + margin((len(counts) + 2) * _U * np.abs(terms).sum(axis=0))


class Components(tuple):
    """The components of one composition, all on one lattice, with what the composer derives
    from them more than once (cumulants on the exponent grid, support ends), computed once."""

    @cached_property
    def _cumulants(self) -> dict[str, Cumulant]:
        return {}

    def recounted(self, count: int) -> Components:
        """This one-component set with its component taken ``count`` times, keeping the
        cumulant tables made so far (rescaled)."""
        (c,) = self
        out = Components([c.recounted(count)])
        out._cumulants.update({side: k.recounted(out) for side, k in self._cumulants.items()})
        return out

    def cumulant(self, side: str, lam: float = 0.0) -> Cumulant:
        """K of the ``side`` discrete PLDs on the exponent grid of their lattice, and at lam."""
        k = self._cumulants.get(side)
        if k is None or not np.any(k.grid == lam):
            k = self._cumulants[side] = Cumulant(self, side, self[0].upper.h, lam)
        return k

    @cached_property
    def mean(self) -> float:
        """Mean of the composed upper discrete PLD's finite part (masses as given)."""
        return sum(c.count * c.upper.moment for c in self)

    @cached_property
    def _support(self) -> dict[str, tuple[float, float]]:
        return {}

    def _support_of(self, side: str) -> tuple[float, float]:
        # Per side, so that reading the upper side never makes lazy lower PLDs.
        if side not in self._support:
            self._support[side] = support_ends(self, side)
        return self._support[side]

    def support_top(self, side: str) -> float:
        """Largest finite loss the composed discrete PLD of ``side`` can take."""
        return self._support_of(side)[1]

    def support_bottom(self, side: str) -> float:
        """Smallest finite loss the composed discrete PLD of ``side`` can take."""
        return self._support_of(side)[0]


def as_components(comps: Sequence[Component]) -> Components:
    """``comps`` as :class:`Components` (itself when it already is one)."""
    return comps if isinstance(comps, Components) else Components(comps)


class Cumulant:
    """K on the exponent grid of spacing h (and the tilt ``lam``, which a tilt chosen on
    another grid need not be on), tabulated for every exponent at once."""

    def __init__(self, comps: Sequence[Component], side: str, h: float, lam: float = 0.0,
                 values: np.ndarray | None = None, chernoff: bool = False, grid: np.ndarray | None = None) -> None:
        self.side, self.h, self.lam = side, h, lam
        # What the table reads of its components, not the components themselves: a
        # :class:`Components` keeps its tables, so a table that kept it back would make a
        # reference cycle, and a mechanism's composed laws then waited for the garbage
        # collector (1.5 MB a query of 1e7 DP-SGD steps, freed every fourth query or so).
        #: Each component's count.
        self.counts = tuple(c.count for c in comps)
        #: The composed upper PLDs' least and largest finite losses (in loss units, from each
        #: PLD's own lattice: the table's h may be another lattice's spacing).
        self.support = (sum(c.count * c.upper.start * c.upper.h for c in comps),
                        sum(c.count * (c.upper.start + len(c.upper.masses) - 1) * c.upper.h for c in comps))
        # With ``chernoff``, the further exponents of CHERNOFF_THETAS too; a ``grid`` of its own
        # (increasing, with 0) comes with its ``values``.
        if grid is None:
            self.grid, self.zero = _grid(float(h), float(lam), chernoff)
        else:
            self.grid, self.zero = grid, int(np.flatnonzero(grid == 0.0)[0])
        self._values = cumulant(comps, side, self.grid) if values is None else values
        #: The windows of :func:`_window_from` read from this table, by (lam, h, log_eta).
        self.windows: dict[tuple[float, float, float], tuple[int, int]] = {}

    def recounted(self, comps: Components) -> Cumulant:
        """The same table for ``comps``: this table's one component, taken another number of
        times (K is linear in the count)."""
        (old,), (new,) = self.counts, comps
        # (K up, times the exact ratio, is above the new K: the ratio and the product round by 2u)
        scaled = self._values * (new.count / old)
        out = Cumulant(comps, self.side, self.h, self.lam, scaled + margin(3.0 * _U * np.abs(scaled)))
        out.grid, out.zero = self.grid, self.zero
        return out

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        return self._values[np.asarray(idx, dtype=int)]

    def index(self, theta: float) -> int:
        """Index of a tabulated exponent."""
        return int(np.flatnonzero(self.grid == theta)[0])


def best_index(f: Callable[[np.ndarray], np.ndarray], lo: int, hi: int) -> int:
    """An index in [lo, hi] where f (vectorised over index arrays) is smallest, assuming f is
    unimodal there: every third index first, then the neighbours of the best of those.

    Any index gives a valid Chernoff-type bound; unimodality only makes it the best one.
    """
    return best_value(f, lo, hi)[0]


def best_value(f: Callable[[np.ndarray], np.ndarray], lo: int, hi: int) -> tuple[int, np.float64]:
    """:func:`best_index` and f there. f is elementwise (each entry depends on its own index
    only), so it is evaluated once over [lo, hi] (at most a few hundred exponents) and read at
    the same indices as the two passes would: one call instead of three, the same values and
    the same choice (np.argmin's first smallest, or first NaN, among the same entries).
    Warnings of entries the passes would not read are not raised: no value depends on them."""
    with np.errstate(all="ignore"):
        values = f(np.arange(lo, hi + 1))
    j = int(np.argmin(values[::_STRIDE])) * _STRIDE
    start = max(0, j - _STRIDE + 1)
    i = start + int(np.argmin(values[start:min(hi - lo, j + _STRIDE - 1) + 1]))
    return lo + i, values[i]


#: Stride of the coarse pass of :func:`best_index`.
_STRIDE = 3


def rounded_exponent(k: np.ndarray, te: np.ndarray, more: np.ndarray | float = 0.0) -> np.ndarray:
    """k - te, a Chernoff exponent K(t) - t a (te a product, rounded once), rounded up by the
    roundoffs of the product and the difference and by ``more`` (a nonnegative margin); -inf
    where te is +inf (not inf - inf)."""
    return k - te + margin(_U * (np.abs(k) + 2.0 * np.abs(te)) + more)


def margin(m: np.ndarray | float) -> np.ndarray:
    """A nonnegative rounding margin to add to a value: capped at MARGIN_CAP, so that an
    infinite value plus its (infinite) margin stays the value and never turns NaN (a finite
    value's margin is far below the cap). Cheaper on the accountant's short arrays than a
    test of finiteness under np.errstate, in Chernoff searches that evaluate one index at a
    time."""
    return np.fmin(m, MARGIN_CAP)


#: See :func:`margin`.
MARGIN_CAP = 1e300


def chernoff_bound(k: Cumulant, lam: float, k_lam: float, a: float, above: bool) -> float:
    """log of the Chernoff bound on the law tilted by lam (log-normaliser k_lam) beyond ``a``:
    above a (exponents > lam) or below it (exponents < lam)."""
    i_lam = k.index(lam)
    lo, hi = (i_lam + 1, k.grid.size - 1) if above else (0, i_lam - 1)
    if lo > hi:
        return 0.0

    def f(i: np.ndarray) -> np.ndarray:
        te = (k.grid[i] - lam) * a
        k_i = k(i)
        # (rounded up by the roundings of t - lam and of K(t) - K(lam) too)
        return rounded_exponent(k_i - k_lam, te, _U * (np.abs(k_i) + abs(k_lam) + np.abs(te)))

    return min(float(best_value(f, lo, hi)[1]), 0.0)


def choose_tilt(comps: Sequence[Component], eps_target: float | None, h: float, log_eta: float,
                log_budget: float | None = None) -> float:
    """The tilt lam >= 0 for a query near ``eps_target``.

    The Chernoff-optimal exponent lam* (minimising K(lam) - lam eps_target)
    makes rounding errors relative to delta, but widens the window when the
    steps' loss has a heavy right tail. Among a few exponents in [0, lam*]
    (lam* times 0, 1/64, 1/16, 1/4, 1/2 and 1, rounded to the grid), the one
    with the narrowest window is taken whose predicted rounding error at the
    target, e^{K(lam) - lam eps} k u log2(N) p_max min(N, 1/(lam h)) with p_max
    the tilted law's largest cell mass (normal approximation), stays below
    e^log_budget; lam* when none does, and lam* when no budget is given. The
    target is first pulled inside the composed support (at most 80% of the way
    from the mean to the largest finite loss), so that the tilt never piles all
    mass onto the last lattice point. Another tabulated exponent in [lam* / 64,
    lam*] replaces it where that one's window is at most half as wide and also
    meets the budget.
    """
    if eps_target is None or single_step(comps):
        return 0.0
    comps = as_components(comps)
    target = _pulled(comps, eps_target)
    if target <= comps.mean:
        return 0.0
    k = comps.cumulant("upper")
    grid = k.grid
    i_star = best_index(lambda i: k(i) - grid[i] * target, k.zero, grid.size - 1)
    lam_star = float(grid[i_star])
    if log_budget is None or i_star == k.zero:
        return lam_star
    k_tot = sum(c.count for c in comps)
    # The candidates: lam* times 0, 1/64, 1/16, 1/4, 1/2 and 1 (rounded to the grid), and
    # every tabulated exponent between lam* / 64 and lam*.
    first = max(int(np.searchsorted(grid, lam_star / 64.0)), k.zero + 1)
    idx = np.append(k.zero, np.arange(first, i_star + 1))
    lam = grid[idx]
    points = np.asarray(_window_points_at(k, idx, h, log_eta), dtype=float)
    kv = k(np.arange(grid.size))
    # Curvature K''(lam) by the second divided difference on the (non-uniform) grid, on the
    # three points nearest lam (lam* may be the grid's last exponent: 10^7 runs of a discrete
    # Gaussian with sigma = 0.1 and of an exponential mechanism indexed past its end).
    j = np.minimum(np.maximum(idx, 1), grid.size - 2)
    t0, t1, t2 = grid[j - 1], grid[j], grid[j + 1]
    with np.errstate(invalid="ignore", over="ignore"):
        curv = 2.0 * ((kv[j + 1] - kv[j]) / (t2 - t1) - (kv[j] - kv[j - 1]) / (t1 - t0)) / (t2 - t0)
    peaks = np.array([_atom_peak(comps, float(x)) for x in lam]) if _has_atoms(comps) else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        # (a NaN curvature, from an infinite K, leaves p_max at 1)
        p_max = np.fmin(1.0, np.maximum(h / np.sqrt(2.0 * math.pi * np.maximum(curv, 1e-300)), peaks))
        geometric = np.where(lam <= 0, points, np.minimum(points, 1.0 / -np.expm1(-lam * h)))
        log_err = (kv[idx] - lam * target + math.log(k_tot * 8.0 * _U)
                   + np.log((np.log2(np.maximum(points, 2.0)) + 2.0) * p_max * geometric))
    ok = log_err <= log_budget
    if not ok.any():
        return lam_star
    # First the narrowest window among the fractions of lam*, the smallest exponent of equals.
    fractions = np.searchsorted(grid, lam_star * np.array([0.0, 1 / 64, 1 / 16, 1 / 4, 1 / 2, 1.0]))
    listed = (idx[:, None] == fractions[None, :]).any(axis=1)
    fit = np.flatnonzero(ok & listed)
    choice = int(fit[np.argmin(points[fit])]) if fit.size else len(idx) - 1
    # Another tabulated exponent is taken only where its window is much narrower. Above
    # lam* / 2 the window can widen tenfold from one exponent to the next where the tail is
    # heavy: at q = 5e-4, sigma = 1.78, k = 262, delta = 1.5e-10 (benchmarks/sweep.py, case
    # 13) lam* needs 2e5 points and lam* / 2 just misses the budget, while the exponent
    # between them meets it on 2.2e4 points.
    others = np.flatnonzero(ok & (points <= MUCH_NARROWER * points[choice]))
    if others.size:
        choice = int(others[np.argmin(points[others])])
    return float(lam[choice])


def _pulled(comps: Components, eps_target: float) -> float:
    """The target pulled inside the composed support: at most 80% of the way from the mean to
    the largest finite loss (a tilt aimed beyond piles all mass onto the last lattice point)."""
    mean = comps.mean
    return min(eps_target, mean + 0.8 * (comps.support_top("upper") - mean))


def least_rounding(comps: Sequence[Component], eps_target: float) -> float:
    """log of e^{K(lam*) - lam* eps} k u, lam* the Chernoff-optimal exponent at ``eps_target``
    (pulled inside the support as :func:`choose_tilt` pulls it): about the least FFT rounding
    at the target that any tilt of these components' composition gives, choose_tilt's
    prediction at lam* without its window's factors. Only chooses (see jumps.far_cut)."""
    comps = as_components(comps)
    target = _pulled(comps, eps_target)
    k = comps.cumulant("upper")
    grid = k.grid
    i = best_index(lambda i: k(i) - grid[i] * target, k.zero, grid.size - 1)
    k_tot = sum(c.count for c in comps)
    return float(k(np.array([i]))[0] - grid[i] * target) + math.log(k_tot * 8.0 * _U)


#: A tilt off the fractions of lam* in :func:`choose_tilt` is taken where its window has at
#: most this share of the points of the fractions' choice: a few points fewer are not worth
#: its larger rounding error (K(lam) - lam eps falls on [0, lam*]).
MUCH_NARROWER = 0.5


def _has_atoms(comps: Components) -> bool:
    return any(c.atoms is not None and len(c.atoms[0]) > 0 for c in comps)


def _atom_peak(comps: Components, lam: float) -> float:
    """An estimate of the largest mass one composed atom has under the tilt lam, from the
    components whose atoms are rounded to the grid (0 if there are none).

    Such a law has a few atoms apart from each other, so its composition sits on few
    points: k copies of a law whose atoms have (tilted) masses p_i put at most about
    (2 pi k)^{-(a-1)/2} (prod p_i)^{-1/2} on one point (the multinomial's mode, by the
    local limit theorem), over the a atoms with k p_i >= 1 (the others are rarely drawn
    at all). The normal approximation of the whole composition, which spreads the mass
    over every cell of the window, misses this by the ratio of the atoms' spacing to h
    for a law of two or three atoms; a composition with other components only spreads
    the mass further, so the largest estimate over the components is taken.
    """
    peak = 0.0
    for c in comps:
        if c.atoms is None or len(c.atoms[0]) == 0:
            continue
        v, p = c.atoms
        w = np.log(np.maximum(p, 1e-300)) + lam * (v - float(v.max()))
        w = np.exp(w - float(np.max(w)))
        w = w / float(w.sum())
        drawn = w[c.count * w >= 1.0]
        if drawn.size == 0:
            continue
        log_peak = (-0.5 * (drawn.size - 1) * math.log(2.0 * math.pi * c.count)
                    - 0.5 * float(np.sum(np.log(drawn))))
        peak = max(peak, math.exp(min(log_peak, 0.0)))
    return peak


def _window_from(k: Cumulant, lam: float, h: float, log_eta: float) -> tuple[int, int]:
    """Lattice indices outside which the law tilted by lam has mass at most e^log_eta on each side
    (kept with the table: the levels' top composition asks for its window twice, see
    :func:`levels.self_compose`)."""
    key = (lam, h, log_eta)
    if key not in k.windows:
        lo, hi = _windows(k, lam, h, log_eta, np.ones(1))
        k.windows[key] = int(lo[0]), int(hi[0])
    return k.windows[key]


def _windows(k: Cumulant, lam: float, h: float, log_eta: float, scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The windows of :func:`_window_from` for the laws whose cumulants are ``scales`` times
    k's (the composition of each multiple of k's components, all counts scaled alike).

    Each end is the best Chernoff bound over the tabulated exponents:
    hi = min over t > 0 of (K(lam + t) - K(lam) - log_eta) / t, and likewise lo; every
    exponent gives a valid end, all are compared at once.
    """
    grid = k.grid
    i_lam = k.index(lam)
    values = k(np.arange(grid.size))
    scales = np.asarray(scales, dtype=float)
    hi = np.full(scales.shape, np.inf)
    lo = np.full(scales.shape, -np.inf)
    with np.errstate(invalid="ignore"):
        # (K may be +inf at large exponents, also at lam itself: inf - inf is a NaN, which the
        # nan-reductions below skip)
        rise = values - values[i_lam]
        if i_lam + 1 < grid.size:
            t = grid[i_lam + 1:] - lam
            hi = np.nanmin((np.multiply.outer(scales, rise[i_lam + 1:]) - log_eta) / t, axis=1, initial=np.inf)
        if i_lam > 0:
            t = lam - grid[:i_lam]
            lo = np.nanmax((log_eta - np.multiply.outer(scales, rise[:i_lam])) / t, axis=1, initial=-np.inf)
    # (in loss units, from each PLD's own lattice: h may be another lattice's spacing)
    support_lo, support_hi = k.support
    return _indices(np.maximum(lo, scales * support_lo), np.minimum(hi, scales * support_hi),
                    scales * support_lo, scales * support_hi, h)


def _window_points_at(k: Cumulant, idx: np.ndarray, h: float, log_eta: float) -> list[int]:
    """The points hi - lo + 1 of the window of :func:`_window_from` for the law tilted by
    each of the tabulated exponents ``k.grid[idx]``, all at once: the same values."""
    grid = k.grid
    values = k(np.arange(grid.size))
    lam = grid[idx]
    t = grid[None, :] - lam[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        rise = values[None, :] - values[idx][:, None]
        # Each row's exponents above its own (t > 0) give its upper end, those below its lower end.
        hi = np.nanmin(np.where(t > 0, (rise - log_eta) / t, np.inf), axis=1)
        lo = np.nanmax(np.where(t < 0, (log_eta - rise) / -t, -np.inf), axis=1)
    support_lo, support_hi = k.support
    j_lo, j_hi = _indices(np.maximum(lo, support_lo), np.minimum(hi, support_hi), support_lo, support_hi, h)
    return [int(b) - int(a) + 1 for a, b in zip(j_lo, j_hi)]


def _indices(lo: np.ndarray, hi: np.ndarray, support_lo: Any, support_hi: Any, h: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """Lattice indices floor(lo / h) and max(ceil(hi / h), that + 1) as int64. An end the
    cumulant table leaves undefined (NaN: every exponent's bound was) is the support's end,
    and indices are kept within +-2^62, past which a window is refused anyway: 10^7 runs of a
    discrete Gaussian with sigma = 0.1 had ends past int64, cast to garbage with a warning."""
    lo = np.where(np.isnan(lo), support_lo, lo)
    hi = np.where(np.isnan(hi), support_hi, hi)
    cap = float(2 ** 62)
    # (np.minimum of np.maximum: np.clip's values, without its wrapper's cost on short arrays)
    j_lo = np.minimum(np.maximum(np.floor(lo / h), -cap), cap)
    j_hi = np.minimum(np.maximum(np.maximum(np.ceil(hi / h), j_lo + 1), -cap), cap)
    return j_lo.astype(np.int64), j_hi.astype(np.int64)


def window(comps: Sequence[Component], h: float, lam: float, log_eta: float) -> tuple[int, int]:
    """Lattice indices outside which the tilted law has mass at most e^log_eta on each side."""
    return _window_from(as_components(comps).cumulant("upper", lam), lam, h, log_eta)


def window_points(comps: Components, counts: np.ndarray, lam: float, log_eta: float) -> np.ndarray:
    """Points of the :func:`window` of the one component of ``comps`` taken each of ``counts``
    times (K is linear in the count)."""
    (c,) = comps
    lo, hi = _windows(comps.cumulant("upper", lam), lam, c.upper.h, log_eta, np.asarray(counts, dtype=float) / c.count)
    return (hi - lo + 1).astype(float)

def single_step(comps: Sequence[Component]) -> bool:
    return len(comps) == 1 and comps[0].count == 1

def support_ends(comps: Sequence[Component], side: str) -> tuple[float, float]:
    """Smallest and largest finite losses the composed discrete PLD can take."""
    bottom = top = 0.0
    for c in comps:
        pld = side_pld(c, side)
        if pld.support is not None:
            bottom += c.count * (pld.start + pld.support[0]) * pld.h
            top += c.count * (pld.start + pld.support[1]) * pld.h
    return bottom, top


def composed_inf_mass(parts: Sequence[tuple[float, int]], upper: bool) -> float:
    """The mass at +inf of the composition of laws with masses p_i at +inf, each taken k_i times
    (``parts``: the pairs (p_i, k_i)), 1 - prod_i (1 - p_i)^k_i, rounded up for an ``upper``
    PLD and down for a lower one (an upper profile is min(., mass) beyond its support, and a
    lower one is infinite below it: either read it as it is).

    Computed as -expm1(L), L = sum_i k_i log1p(-p_i): each log1p within an ulp (2 unit
    roundoffs u), the product and the float of k_i one u each, the n terms' sum (of one sign)
    n - 1 more relative to L, and expm1 an ulp; an error d L moves the result by e^L |d L|,
    at most (n + 3) u of it relatively (|L| e^L <= 1 - e^L). That is within (n + 5) u, which
    a margin of (n + 6) MACHINE_EPSILON (2u each) covers with the margin's own rounding.
    Unrounded, 10 runs of ApproxDP(1, 4.6e-7) had the mass 1.7 ulps below the exact one: a
    delta below the truth at every eps past the support, and a finite eps(delta) for a delta
    the mass at +inf alone exceeds. An exact 0 (no mass) and 1 (a law all at +inf) stay."""
    log_fin = sum(k * (math.log1p(-p) if p < 1.0 else -math.inf) for p, k in parts)
    if log_fin == 0.0 or log_fin == -math.inf:
        return -math.expm1(log_fin)
    rel = (len(parts) + 6.0) * _U
    value = -math.expm1(log_fin)
    return min(round_up(value, rel), 1.0) if upper else max(-round_up(-value, rel), 0.0)
