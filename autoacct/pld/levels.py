"""Multi-level self-composition: k copies of one law on FFT windows that barely grow with k.

On one lattice, the spacing an accuracy needs does not grow with k while the
composed loss spreads like sqrt(k), so one FFT window grows like sqrt(k). Here
the copies are composed in levels instead. Level j holds, on the lattice H_j Z
with H_j = h_0 R^j, the upper and lower discrete PLDs of n_j = R^(2j) copies
(C_j) and of a_j < n_j copies (A_j: k's base-R^2 digits below level j). Level
j + 1 composes R^2 copies of C_j, and A_j with d_j copies of C_j, each by one
FFT on H_j (:func:`compose.convolve`), and discretises both results again on
H_(j+1): the upper row by connect-the-dots point by point, the lower row by the
second-order construction of :mod:`discretize` from its cell masses
(:func:`discretize.lower_from_cell_masses`). The top level hands C_L with count
q = k // n_L, and A_L, to the final composition.

A one-level plan may take a block B within 15% of R^2 instead (C_1 is then B
copies), chosen so that k = q B + r leaves few copies r over: instead of a second
convolution on h_0 for A_1, the r copies join the final composition directly,
with the law's upper PLD on H_1 and a point mass at loss 0 as lower PLD (valid
for any law; the lower bound then holds for k - r copies, below k). The plan
allows r up to k tol / 20, which moves the lower eps by about r / k relatively.

Validity. A convolution's rows are turned into discrete measures. The upper row
plus its error bound at every point (positive part) falls short of the exact
composition of its components by at most the tilted mass outside the window: a
measure whose moment generating function at the tilt lam is bounded, and carried
as the upper PLD's ``leak`` together with the components' own leaks (its share of
delta(eps) is at most that function times e^{-lam eps}, and it composes by
multiplication; see :mod:`compose`). The lower row less its error bound and less
the tilted mass folded in from outside the window (a tilted mass folded from x to
x' stands for e^{lam (x - x')} times the untilted mass it had) lies below the
exact composition entry by entry. Profiles are monotone in the masses, the
discretiser bounds any measure's profile from above and below (its lower PLD up
to the deficit it reports, which is carried), and both orders survive
composition (see :mod:`discretize`).

Accuracy. Connect-the-dots costs each discretised variable about h^2 / 8 in
bias and h^2 / 4 in variance (see :mod:`grid`). The k steps on h_0 and the
k / n_j copies of C_j on H_j each cost about k h_0^2 / 8, so L levels with
h_0 = h / sqrt(L + 1) cost what one lattice of spacing h costs. For light tilted
tails each window then has about R sqrt(L + 1) n / sqrt(k) points instead of the
n of that lattice; the plan samples the windows the law actually needs, and a
plan whose windows come out much longer is given up for one lattice.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from autoacct.exactness import MACHINE_EPSILON, round_up
from autoacct.losses import DiscreteLoss, PrivacyLoss
from autoacct.pld.components import Component
from autoacct.pld.compose import Convolution, convolve, max_window, misplacement
from autoacct.pld.cumulants import Components, margin, window
from autoacct.pld.discretize import DiscretePLD, lower_from_cell_masses
from autoacct.pld.merged import merged_down
from autoacct.pld.mgf import log_mgf_rounding, log_mgfs

#: One lattice is used when its window has at most this many points, or the count is below
#: MIN_COUNT.
_MIN_POINTS = 1 << 16
MIN_COUNT = 50_000
#: The top level's count is at least this: C_L's profile then matters where it is at least
#: about delta^(1/16), far above the rounding floors of the discretiser.
_MIN_TOP = 16
_MAX_LEVELS = 4
#: A window may be this many times longer than planned before the plan is given up.
_SLACK = 4.0
#: Typical per-point error bound of one convolution, as compose.convolve finds it (the
#: composed result is checked afterwards: this only skips plans that cannot work).
_FFT_ERROR = 2e-15
#: Counts at which the window width is sampled to plan.
_SAMPLES = 6
#: Window length assumed when the tail mass a level may leave out is chosen.
_POINTS = 1 << 15
#: Cost of one convolution and re-discretisation beyond its FFT: per point, and fixed (in
#: units of one point's share of an FFT).
_PER_POINT = 40.0
_OVERHEAD = 2e6


@dataclass(frozen=True)
class Plan:
    """How k copies are composed: spacing ratio R, finest spacing h_0, digits d_j, top count q,
    copies per level B (R^2, or near it for one level), and ``extra`` copies composed on the
    top lattice directly."""

    ratio: int
    finest: float
    digits: tuple[int, ...]
    top_count: int
    #: The longest window the plan expects.
    points: float = math.inf
    block: int = 0
    extra: int = 0

    @property
    def copies(self) -> int:
        """Copies of the level below that each level composes (B)."""
        return self.block or self.ratio * self.ratio

    @property
    def coarse(self) -> float:
        """The top lattice's spacing H_L = h_0 R^L."""
        return self.finest * self.ratio ** len(self.digits)

    @property
    def count(self) -> int:
        """The number of copies composed, k = q B^L + sum_j d_j B^j + extra."""
        b = self.copies
        return self.top_count * b ** len(self.digits) + sum(d * b ** j for j, d in enumerate(self.digits)) + self.extra


def applies(parts: Sequence[tuple[PrivacyLoss, int]]) -> bool:
    """Whether a direction's (law, count) parts may be composed by levels: one law composed at
    least MIN_COUNT times, off any lattice of its own. A law whose atoms sit on a lattice of
    its own is left to that lattice, which the levels' coarser ones would not respect.
    (Poisson-subsampled discrete Gaussian, sigma = 1, q = 1e-3, 1e6 runs: one lattice needed
    9e6 points and bounded eps(1e-12) by [0.44, 10.18] in 1.8 s; by levels [9.79498, 9.79645]
    in 0.59 s. Poisson-subsampled Laplace, b = 0.1, q = 1e-3, 1e6 runs: eps(1e-6) in
    [3.13, 2133.96] with warnings after 3.6 s; by levels [2133.402, 2133.476] in 0.26 s.)
    The blocks of a law with atoms are coarsened by merging their points (see
    :func:`coarsen`)."""
    return len(parts) == 1 and parts[0][1] >= MIN_COUNT and parts[0][0].lattice is None


def finest(h: float) -> float:
    """The finest spacing h_0 of a one-level plan for the accuracy of spacing h (plans with
    more levels are finer still)."""
    return h / math.sqrt(2.0)


#: A plan's windows are measured on the law discretised this many times coarser than the
#: accuracy's spacing (see FFTAccountant._plan).
PROBE = 8.0


@functools.lru_cache(maxsize=64)
def sample_counts(k: int) -> np.ndarray:
    """The counts of copies at which :func:`plan` needs the window widths for k copies (read-only,
    made once per k: the accountant and :func:`plan` both ask, query after query)."""
    out = np.unique(np.round(np.logspace(math.log10(_MIN_TOP), math.log10(max(k, 1)), _SAMPLES)))
    out.flags.writeable = False
    return out


def plan(k: int, h: float, widths: np.ndarray, max_leak: float = math.inf,
         max_extra: int = 0) -> Plan | None:
    """The cheapest plan for k copies at the accuracy of spacing h, or None when one lattice
    is cheaper; ``widths`` are the window widths, in loss units, that the composition of
    each count of :func:`sample_counts` (k) copies needs.

    Each level's rounding leaks about n E_FFT per copy of its result (n window points,
    E_FFT the per-point error of an FFT convolution); plans whose leak would exceed
    ``max_leak`` (relative to the composition's moment generating function at the tilt),
    or whose windows would exceed the composer's largest FFT, are not taken.

    A one-level plan whose k is not a multiple of R^2 would compose the remainder by a
    second convolution on the fine lattice. Instead a block B within 15% of R^2 is sought
    that leaves at most ``max_extra`` copies over: those are composed on the top lattice
    directly (see :func:`self_compose`), and the top level's error grows by R^2 / B.
    """
    if k < MIN_COUNT:
        return None
    widths = np.asarray(widths, dtype=float)
    return _cheapest(int(k), float(h), widths.tobytes(), float(max_leak), int(max_extra), max_window())


@functools.lru_cache(maxsize=256)
def _cheapest(k: int, h: float, widths_bytes: bytes, max_leak: float, max_extra: int, longest_fft: int) -> Plan | None:
    """:func:`plan` for the widths as bytes, made once per argument (a plan is a frozen value,
    and a ledger asked again and again plans the same composition each time: 0.2-0.4 ms of a
    5 ms query of 1e7 DP-SGD steps); ``longest_fft`` is :func:`compose.max_window` then."""
    counts = sample_counts(k)
    log_counts = np.log(counts)
    log_w = np.log(np.maximum(np.frombuffer(widths_bytes), 1e-300))

    def points(count: np.ndarray, spacing: np.ndarray | float) -> np.ndarray:
        return np.exp(np.interp(np.log(count), log_counts, log_w)) / spacing

    n_single = float(points(np.array([k]), h)[0])
    if n_single <= _MIN_POINTS:
        return None
    best, best_cost = None, convolution_cost(n_single)
    for levels in range(1, _MAX_LEVELS + 1):
        if (levels + 1) * _OVERHEAD >= best_cost:
            # Every plan with this many levels makes at least levels + 1 convolutions.
            break
        h_0 = h / math.sqrt(levels + 1)
        ratio = _ratios(int((k / _MIN_TOP) ** (1.0 / (2 * levels))))
        if ratio.size == 0:
            break
        # Level j composes R^(2j + 2) copies on the spacing h_0 R^j, and the part of k below
        # R^(2j + 2) once a digit so far is not 0; the top composes all k on h_0 R^L.
        block = ratio.astype(np.int64) ** 2
        extra = np.zeros(ratio.shape, dtype=np.int64)
        if levels == 1 and max_extra > 0:
            # Without a remainder the cost is that of the block and the top; for the few
            # cheapest ratios, look for a block that leaves at most max_extra copies over.
            free = (convolution_cost(points(block.astype(float), h_0))
                    + convolution_cost(points(np.full(ratio.shape, float(k)), h_0 * ratio)))
            for i in np.argsort(free)[:_BLOCK_TRIES]:
                block[i], extra[i] = _block(k, int(block[i]), max_extra)
        digits = [((k - extra) // block ** j) % block for j in range(levels)]
        n_levels = [points(block.astype(float) ** (j + 1), h_0 * ratio ** j) for j in range(levels)]
        n_top = points(np.full(ratio.shape, float(k)), h_0 * ratio ** levels)
        remainder = np.cumsum([d > 0 for d in digits], axis=0) > 0
        cost = sum((1 + remainder[j]) * convolution_cost(n) for j, n in enumerate(n_levels)) + convolution_cost(n_top)
        leak = sum(k / block.astype(float) ** (j + 1) * n * _FFT_ERROR for j, n in enumerate(n_levels))
        longest = np.max([n_top, *n_levels], axis=0)
        cost = np.where((leak <= max_leak) & (longest <= longest_fft), cost, np.inf)
        i = int(np.argmin(cost))
        if cost[i] < best_cost:
            best = Plan(int(ratio[i]), h_0, tuple(int(d[i]) for d in digits),
                        (k - int(extra[i])) // int(block[i]) ** levels, float(longest[i]), int(block[i]),
                        int(extra[i]))
            best_cost = float(cost[i])
    return best


#: Ratios of a one-level plan for which a block near R^2 is sought.
_BLOCK_TRIES = 4
#: Most blocks tried near one R^2 (see :func:`_block`).
_BLOCK_CANDIDATES = 1 << 16


def _ratios(top: int) -> np.ndarray:
    """The ratios R of 2..top that a plan tries: all of them, or _MAX_RATIOS of them spaced
    geometrically when there are more (2^24 at k = 2^52: the plan's arrays of one entry a
    ratio then took 1.6 GB; the cost varies slowly in R, and any R gives a valid plan)."""
    if top - 1 <= _MAX_RATIOS:
        return np.arange(2, top + 1).astype(float)
    return np.unique(np.round(np.geomspace(2, top, _MAX_RATIOS)))


#: Most ratios a plan tries at each number of levels (see :func:`_ratios`).
_MAX_RATIOS = 1 << 14


def _block(k: int, square: int, max_extra: int) -> tuple[int, int]:
    """The block B within 15% of ``square`` (R^2) that leaves the fewest copies of k over,
    and that remainder k mod B, if it is at most ``max_extra``; else R^2 and 0 (its
    remainder then goes to a digit). R^2 itself is kept when it divides k."""
    if k % square == 0:
        return square, 0
    # At most _BLOCK_CANDIDATES blocks nearest R^2 are tried: the range is 30% of R^2, 2e13
    # blocks at k = 2^50 (R^2 up to k / 16), which no memory holds. Any block composes k
    # copies; the search only spares a convolution for the remainder.
    half = _BLOCK_CANDIDATES // 2
    cand = np.arange(max(2, int(0.85 * square), square - half), min(int(1.15 * square), square + half) + 1,
                     dtype=np.int64)
    rem = k % cand
    j = int(np.argmin(rem + np.abs(cand - square) / (square + 1.0)))
    return (int(cand[j]), int(rem[j])) if rem[j] <= max_extra else (square, 0)


def convolution_cost(n: float | np.ndarray) -> float | np.ndarray:
    """Rough cost of one convolution and re-discretisation on n points (in units of one
    point's share of an FFT)."""
    return n * (np.log2(np.maximum(n, 2.0)) + _PER_POINT) + _OVERHEAD


def self_compose(step: Components, p: Plan, log_eta: float, lam: float, lower: bool = True) -> Components | None:
    """Components on the lattice ``p.coarse`` whose composition bounds k copies of the one
    component of ``step`` (discretised on ``p.finest``), tilted by ``lam`` in every window;
    None when a window would be much longer than planned (heavy tilted tails), a level's
    untilted masses would leave the floating-point range, or its lower PLD is empty.
    Without ``lower`` only the upper PLDs are composed (and read). The plan's ``extra``
    copies are left out: the caller adds them on the top lattice (see :func:`extra_copies`)."""
    block = p.copies
    k = p.count - p.extra
    chain, acc = step, None
    h = p.finest
    limit = _SLACK * p.points
    for j, d in enumerate(p.digits):
        coarse = h * p.ratio
        # Tail masses left outside a window end up in the final bounds once per copy of the
        # level's result and, in the lower ones, once per window point.
        level_eta = log_eta - math.log(4.0 * _POINTS * (k // block ** (j + 1)))
        new_chain = coarsen(convolve(chain.recounted(block), h, level_eta, lam, limit, lower), coarse)
        parts = Components(([acc] if acc is not None else []) + ([chain[0].recounted(d)] if d else []))
        if acc is None and d:
            parts = chain.recounted(d)
        new_acc = coarsen(convolve(parts, h, level_eta, lam, limit, lower), coarse) if parts else None
        if new_chain is None or (parts and new_acc is None):
            return None
        chain, acc, h = Components([new_chain]), new_acc, coarse
    out = Components([chain[0].recounted(p.top_count)] + ([acc] if acc is not None else []))
    j_lo, j_hi = window(out, h, lam, log_eta)
    return out if j_hi - j_lo + 1 <= limit else None


def extra_copies(upper: DiscretePLD, count: int) -> Component:
    """``count`` copies of a law composed on the top lattice directly: its upper PLD there,
    and as lower PLD a point mass at loss 0, whose profile (1 - e^eps)_+ lies below that of
    any pair (H_gamma(P || Q) >= P(all) - gamma Q(all)); the lower bound then holds for the
    composition without these copies, which is below the one with them."""
    return Component(upper, DiscretePLD(upper.h, 0, np.ones(1), 0.0), count)


def coarsen(conv: Convolution | None, coarse: float) -> Component | None:
    """Upper and lower discrete PLDs on the lattice ``coarse`` (a multiple of conv.h) that
    bound the composition ``conv`` computed, with count 1 (None without a convolution).

    The upper measure is the upper row plus its error bound at every point, positive
    part: the exact circular convolution's tilted entry is at most the computed one plus
    the bound, and the exact composition inside the window is at most the circular one.
    The tilted mass outside the window, and what the components' own leaks allow, is
    carried as the upper PLD's leak. (A leak counts at the Chernoff bound
    e^{K(lam) - lam eps} wherever the result is read, which far from the tilt's aim is
    many times the profile itself: 37 times a split law's term at q = 1.2e-5, sigma = 0.92,
    k = 3.6e6, delta = 7.4e-11 of benchmarks/sweep.py. Placed, the error bound counts where
    it lies.)
    The lower measure is the lower row less its error bound and less the tilted mass the
    circular convolution folded in from either side (a tilted mass folded from x to x'
    stands for e^{lam (x - x')} times the untilted mass it had). A convolution of the
    upper PLDs alone gives a component without a lower PLD (reading it is an error).
    """
    if conv is None:
        return None
    ratio = round(coarse / conv.h)
    # The rows are conv's own: each becomes its bound in place (a fresh array of a 38,400-point
    # window is mapped anew by the allocator, and its pages fault, on every call).
    top = conv.dens[0]
    top += float(conv.err[0])
    np.maximum(top, 0.0, out=top)
    up = _coarse_upper(top, conv, ratio)
    if up is None:
        return None
    # Missing moment generating function at lam, relative to the composed components' one
    # (e^{log_k}), and then to the upper PLD's own (its logarithm rounded down: it divides).
    missing = conv.leak() + conv.tilted_above(0) + conv.tilted_below(0)
    lam = np.array([conv.lam])
    own = log_mgfs([up], lam)[0]
    own -= log_mgf_rounding(up, lam, own)
    gap = float(conv.log_k[0]) - float(own[0])
    # Rounded up past the roundings after conv.leak() (itself rounded up): the two tilted
    # masses' exponentials (an ulp each), the sum of the three (two roundoffs), the difference
    # of the logarithms (a roundoff of |gap|, which the exponential passes on as it is) and the
    # exponential and product (an ulp and a roundoff): within (4 + |gap|) MACHINE_EPSILON.
    # (A leak is charged as an upper bound on a measure left out: a leak rounded down could
    # charge less than that measure; none stays an exact 0.)
    leak = round_up(missing * math.exp(gap), (5.0 + abs(gap)) * MACHINE_EPSILON) if missing > 0.0 else 0.0
    up = replace(up, leak=leak, leak_lam=conv.lam)
    parts = max(misplacement(conv.comps, side, conv.h) for side in ("upper", "lower")[:conv.dens.shape[0]])
    if conv.dens.shape[0] == 1:
        return Component(up, _no_lower, 1, misplaced=_misplaced(parts, [up]))
    folded = conv.tilted_above(1) + conv.tilted_below(1)
    sub = conv.dens[1]
    sub -= float(conv.err[1]) + folded
    np.maximum(sub, 0.0, out=sub)
    # (laws with atoms off any lattice, and their blocks: their composition's points are merged)
    low = None
    if all(c.merged_points for c in conv.comps):
        low = _merged_coarse_lower(sub, conv, ratio)
    merged = low is not None
    if low is None:
        low = _coarse_lower(sub, conv, ratio)
    if low is None or not np.any(low.masses > 0):
        return None
    deficit = (1.0 + conv.clipped()) * (1.0 + low.deficit) - 1.0
    return Component(up, replace(low, deficit=deficit), 1, misplaced=_misplaced(parts, [up, low], merged),
                     merged_points=merged)


def _misplaced(parts: float, plds: list[DiscretePLD], merged: bool = False) -> float:
    """How far a coarsened composition's masses lie from their coarse points' exact losses: their
    parts' misplacement ``parts`` (each composed mass sits within it of its fine point, and
    connect-the-dots moves it to the coarse points j R h as if it were there), and the coarse
    point j H stands for j R h within u |j H| (H = R h rounded, u the unit roundoff), rounded up.
    A lower PLD that ``merged`` the fine points read them at fl(j h), within u |j h| / 2 of
    j h: as much once more."""
    top = max(max(abs(p.start), abs(p.start + len(p.masses) - 1)) * p.h for p in plds)
    return (parts + (1.0 if merged else 0.5) * MACHINE_EPSILON * top) * (1.0 + 2.0 * MACHINE_EPSILON)


def _no_lower() -> DiscretePLD:
    raise RuntimeError("this component composed upper PLDs only")


def _coarse_upper(tilted: np.ndarray, conv: Convolution, ratio: int) -> DiscretePLD | None:
    """The upper discrete PLD on the lattice ``ratio`` conv.h of the untilted measure
    tilted_i e^{K - lam x_i} (row 0), with mass at +inf ``conv.inf_mass(0)``; None when a
    mass would underflow or overflow.

    Connect-the-dots (see :mod:`discretize`) point by point: a mass p at offset r h
    inside the coarse cell [G, G + H] sends p (e^{-r h} - e^{-H}) / (1 - e^{-H}) to G and
    the rest to G + H, which keeps its P- and Q-mass, so the cell's split is the one
    :func:`discretize.discretize` makes. Computed on the tilted masses; on a lattice so coarse
    that moving a tilt across a cell overflows, None.

    Rounding. The left share is taken as e^{-r h} (1 - e^{-(H - r h)}) / (1 - e^{-H}) with
    H - r h = (R - r) h: as a difference of two exponentials near 1 it carried an absolute
    roundoff, u / H relatively, which made a share and the right one (computed apart) miss
    their sum 1 by up to 4e-9 on H = 3.2e-8: the envelope's 256 copies at eps = 1.3e-7 lost
    1.4e-9 of their mass, and the levels of 2^44 copies composed that loss to e^-98 (delta
    9e-45 against the composed randomized response's 0.025). Every mass is then raised by
    a bound on its relative rounding (:func:`_rounding_margin`): composed k / B times, a
    relative error e of each mass moves the profile by up to a factor e^{e k / B}, and only
    masses rounded up keep the PLD an upper one (profiles are monotone in the masses).
    """
    h, lam = conv.h, conv.lam
    first = conv.j_lo // ratio
    pad = conv.j_lo - first * ratio
    cells = -(-(pad + tilted.size) // ratio)
    coarse = ratio * h

    def left(off: np.ndarray) -> np.ndarray:
        return np.exp(-(1.0 + lam) * off * h) * np.expm1(-(ratio - off) * h) / math.expm1(-coarse)

    def right(off: np.ndarray) -> np.ndarray:
        return np.expm1(-off * h) / math.expm1(-coarse) * np.exp(lam * (ratio - off) * h)
    out = np.zeros(cells + 1)
    # (right's factor e^{lam (H - r)} moves a tilt to the cell's right end: it may overflow for a
    # very coarse lattice, and the PLD is then not made)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = _cell_sums_upper(out, tilted, pad, ratio, left, right)
    if not np.all(np.isfinite(out)):
        return None
    x = (first + np.arange(cells + 1)) * coarse
    log_k = float(conv.log_k[0])
    with np.errstate(divide="ignore"):
        log_out = np.log(out)
    log_w = log_out + log_k - lam * x
    # Untilted, a mass may leave the floating-point range either way: below it where the
    # tilt is steep, above it where a capped window's rounding is untilted from far left.
    live = log_w[out > 0]
    if float(live.min(initial=0.0)) < _LOG_FLOOR or float(live.max(initial=0.0)) > -_LOG_FLOOR:
        return None
    with np.errstate(invalid="ignore"):
        margin = _rounding_margin(terms, (1.0 + lam) * coarse, np.where(out > 0, np.abs(log_out), 0.0),
                                  abs(log_k), np.abs(lam * x))
    return DiscretePLD(coarse, first, np.exp(log_w) * (1.0 + margin), conv.inf_mass(0))


def _rounding_margin(terms: np.ndarray | float, span: float, log_out: np.ndarray, log_k: float,
                     tilt: np.ndarray) -> np.ndarray:
    """Twice a bound on the relative rounding of each coarse upper mass of :func:`_coarse_upper`,
    in units of 1 (a computed mass w' >= w (1 - e) for e <= 1/2 gives w <= w' (1 + 2 e)).

    Each share is two or three exponentials (exp and expm1, each within an ulp; the rounding
    of an argument y moves exp(y) by u |y| relatively and expm1(y), y < 0, by at most u), at
    most two quotients or products, and its product with the tilted mass (itself its bound
    plus the error bound, one rounding): at most 9 + 3 ``span`` roundoffs, ``span`` =
    (1 + lam) H bounding the exponents' arguments. A coarse mass adds the weighted points of
    two cells (``terms``: the roundoffs of those sums, see :func:`_cell_sums_upper`); then its
    logarithm (an ulp of |log out|, and the sums' relative error as it is), the product
    lam x (2 |lam x|), two additions (|log out| + |log K| + |lam x| each at most), the
    exponential and the margin's two products: 12 + terms + 3 |log out| + 2 |log K| +
    3 |lam x| + 3 span, rounded up."""
    ulps = 13.0 + terms + 5.0 * span + 3.0 * log_out + 2.0 * log_k + 4.0 * tilt
    return 2.0 * ulps * MACHINE_EPSILON


def _cell_sums_upper(out: np.ndarray, tilted: np.ndarray, pad: int, ratio: int,
                     left: Callable[[np.ndarray], np.ndarray], right: Callable[[np.ndarray], np.ndarray]
                     ) -> np.ndarray | float:
    """Add to ``out`` each coarse cell's weighted sums of the points at offsets pad + i (cell
    c's left weights to out[c], its right weights to out[c + 1]); the weights are functions of
    the integer offsets. Returns a bound on the roundoffs of each sum relative to itself (the
    terms are nonnegative): a sum of m terms in order is within m - 1 of them; numpy sums a
    row along its fast axis pairwise (numpy.sum's notes), eight running sums per block of at
    most 128 terms and halves above that, within 16 + 7 + 3 + log2(n / 128) of them (rounded
    up to 26 + log2(n / 128)); a sum of the two sums into ``out`` is within the larger of
    theirs, and the additions add 2."""
    cells = out.size - 1
    if ratio > SPARSE_RATIO * tilted.size:
        # Far more offsets than points (a split law's bulk coarsened R = 5e10 times): summed
        # over the points themselves, as a padded (cells x R) array would take 410 GB.
        cell, off = np.divmod(pad + np.arange(tilted.size), ratio)
        out += np.bincount(cell, weights=tilted * left(off), minlength=cells + 1)
        out += np.bincount(cell + 1, weights=tilted * right(off), minlength=cells + 1)
        # out[c] sums cell c's points and cell c - 1's, each in order.
        per_cell = np.bincount(cell, minlength=cells + 1).astype(float)
        both = per_cell.copy()
        both[1:] += per_cell[:-1]
        return both + 2.0
    flat = np.zeros(cells * ratio)
    flat[pad:pad + tilted.size] = tilted
    block = flat.reshape(cells, ratio)
    offsets = np.arange(ratio)
    # (one product array for both sums: see coarsen on fresh arrays)
    prod = np.multiply(block, left(offsets))
    out[:-1] += prod.sum(axis=1)
    out[1:] += np.multiply(block, right(offsets), out=prod).sum(axis=1)
    return 26.0 + math.log2(max(ratio / 128.0, 1.0)) + 2.0


def _merged_coarse_lower(tilted: np.ndarray, conv: Convolution, ratio: int) -> DiscretePLD | None:
    """The lower discrete PLD on the lattice ``ratio`` conv.h that merges the points of the
    measure p_i = tilted_i e^{K - lam x_i} at x_i = (conv.j_lo + i) conv.h onto it as atoms
    (:func:`~autoacct.pld.merged.merged_down`), with mass ``conv.inf_mass(1)`` at +inf; None
    where the merge does not apply (a range over _MAX_SPREAD).

    For compositions of laws of a few atoms (Poisson-subsampled KaryRandomizedResponse): their
    blocks are combs of isolated points, whose cells' second-order construction
    (:func:`_coarse_lower`) found a kink after every round, and the rounds met the time budget
    (1e6 runs: eps(1e-8) in [4.871, 5.211] after 2.5 s; merged, [5.2075, 5.2106] in 1.8 s).
    Merging is post-processing of the measure, so the merged one lies below it. Each p_i is
    lowered by e^r, r bounding the roundings of log tilted_i + K - lam x_i (three, each within
    u of the sizes) and of its exponential (one)."""
    n = tilted.size
    x = (conv.j_lo + np.arange(n)) * conv.h
    keep = tilted > 0.0
    log_k = float(conv.log_k[1])
    with np.errstate(divide="ignore"):
        log_t = np.log(tilted[keep])
    v, tilt = x[keep], conv.lam * x[keep]
    r = 4.0 * MACHINE_EPSILON * (np.abs(log_t) + abs(log_k) + 2.0 * np.abs(tilt) + 2.0)
    p = np.exp(log_t + log_k - tilt - r)
    live = p > 0.0
    j_lo = conv.j_lo // ratio
    j_hi = max(-(-(conv.j_lo + n - 1) // ratio), j_lo + 3)
    masses = merged_down(DiscreteLoss(v[live], p[live], p[live] * np.exp(-v[live])), ratio * conv.h, j_lo,
                         j_hi - j_lo + 1)
    return None if masses is None else DiscretePLD(ratio * conv.h, j_lo, masses, conv.inf_mass(1))


def _coarse_lower(tilted: np.ndarray, conv: Convolution, ratio: int) -> DiscretePLD | None:
    """The lower discrete PLD (:func:`discretize.lower_from_cell_masses`) on the lattice
    ``ratio`` conv.h of the measure p_i = tilted_i e^{K - lam x_i} at the points
    x_i = (conv.j_lo + i) conv.h (``tilted`` >= 0, row 1), with mass ``conv.inf_mass(1)``
    at +inf; None when a Q-mass would overflow.

    The coarse grid runs from the coarse point at or below the first point to the one at
    or above the last (at least 4 points). Its cells (G_j, G_(j+1)] hold the points
    G_j + r h, r = 1..R, so the half-cell masses are block sums, computed in logs:
    P = e^{K - lam G_j} sum_r tilted e^{-lam r h} and
    Q = e^{K - (lam + 1) G_j} sum_r tilted e^{-(lam + 1) r h} over each half. The left halves
    hold the points with r < R / 2 and, for even R, half of the point at the midpoint: the
    midpoint tangent's slope may be any subgradient of the profile there, between -Q(L > s)
    and -Q(L >= s), and each share of the midpoint's mass in the left half is one of them;
    half and half is the choice that keeps the lower PLD closest to the truth.

    Rounding. Each half-cell's computed masses are within a factor e^r of the exact ones
    (:func:`_lower_rounding`; measured up to 91 u above them for 400 copies of a Gaussian's
    PLD at lam = 8). They are moved outward to those of a measure below the exact one: P
    lowered by e^-r (the measure scaled by P~ / P <= 1) and Q raised by e^r, capped at the
    half's left end e^-G P~, rounded up (part of the scaled mass moved down within the half, which
    only lowers the profile: Koskela et al. 2021, Lemma 6; see :func:`_cap`). The Q-masses of the points at the
    cells' right ends are then not known and are taken as 0: the slope -Q(L > G) is a
    subgradient there too.
    """
    h, lam = conv.h, conv.lam
    n = tilted.size
    j_lo = conv.j_lo // ratio
    j_hi = max(-(-(conv.j_lo + n - 1) // ratio), j_lo + 3)
    cells = j_hi - j_lo
    base = j_lo * ratio
    g = (j_lo + np.arange(cells + 1)) * ratio * h
    log_k = float(conv.log_k[1])

    def left_share(offsets: np.ndarray) -> np.ndarray:
        # 1 for the cell's left half, 1/2 for its midpoint when R is even, else 0.
        return np.where(2 * offsets < ratio, 1.0, np.where(2 * offsets == ratio, 0.5, 0.0))
    # Fine offsets 0..cells R from G_0; offset 0 is the cell below the grid, (-inf, G_0]; the
    # sums per half-cell (P- and Q-masses at rates lam and lam + 1) by a (cells x R) block
    # array, or where R exceeds the points (a split law's bulk coarsened R = 5e10 times) over
    # the points themselves.
    first = conv.j_lo - base  # (conv.j_lo mod R: the window's first point is at offset 0 only when it is 0)
    below = float(tilted[0]) if first == 0 and n else 0.0
    sparse = ratio > SPARSE_RATIO * n
    if sparse:
        pos = first + np.arange(n)
        inside = pos > 0
        cell, off = np.divmod(pos[inside] - 1, ratio)
        off = off + 1
        vals = tilted[inside]
    else:
        padded = np.zeros(cells * ratio + 1)
        padded[first:first + n] = tilted
        block = padded[1:].reshape(cells, ratio)
        offsets = np.arange(1, ratio + 1)
    share = left_share(off if sparse else offsets)
    sums = []
    for rate in (lam, lam + 1.0):
        if sparse:
            w = vals * np.exp(-rate * off * h)
            sums += [np.bincount(cell, weights=w * share, minlength=cells),
                     np.bincount(cell, weights=w * (1.0 - share), minlength=cells)]
        else:
            w = np.exp(-rate * offsets * h)
            sums += [np.einsum("ij,j->i", block, w * share), np.einsum("ij,j->i", block, w * (1.0 - share))]
    tilt = (lam + 1.0) * np.abs(g[:-1])
    # (the four half-cell sums' bounds at once: the same values, entry by entry)
    r = list(_lower_rounding(np.array(sums), min(ratio, n), (lam + 1.0) * ratio * h, log_k, tilt))
    r_below = float(_lower_rounding(np.array([below]), 1, 0.0, log_k, tilt[:1])[0])
    with np.errstate(divide="ignore"):
        logs = [np.log(x) for x in sums]
        below_log = math.log(below) if below > 0 else -math.inf
    left_p, right_p = (x + (log_k - lam * g[:-1]) - e for x, e in zip(logs[:2], r[:2]))
    scale_q = log_k - (lam + 1.0) * g[:-1]
    # (Q raised by e^r, at most to the half's left end: the points above G_j, or above the midpoint)
    mid = 0.5 * (g[:-1] + g[1:])
    left_q = np.minimum(logs[2] + scale_q + r[2], _cap(left_p, g[:-1]))
    right_q = np.minimum(logs[3] + scale_q + r[3], _cap(right_p, mid))
    below_p = below_log + log_k - lam * float(g[0]) - r_below
    below_q = below_log + log_k - (lam + 1.0) * float(g[0]) + r_below
    if max(float(np.max(np.maximum(left_q, right_q), initial=-np.inf)), below_q) > -_LOG_FLOOR:
        return None
    halves = (np.exp(left_p), np.exp(left_q))
    m_p = np.concatenate(([math.exp(below_p)], halves[0] + np.exp(right_p), [0.0]))
    m_q = np.concatenate(([math.exp(below_q)], halves[1] + np.exp(right_q), [0.0]))
    return lower_from_cell_masses(g, ratio * h, j_lo, m_p, m_q, halves, np.zeros(cells), conv.inf_mass(1))


def _cap(log_p: np.ndarray, end: np.ndarray) -> np.ndarray:
    """log(e^-G P) for a half-cell of P-mass e^log_p above its left end G (``end``, computed):
    the largest Q-mass of a measure of that P-mass at losses above G, rounded up.

    A Q-mass capped below the scaled measure's would move its mass up (raising the lower
    profile), one above it moves mass down within or below the half, which only lowers the
    profile (Koskela et al. 2021, Lemma 6): the cap is rounded up. Its difference is off by a
    roundoff of |log_p| + |G|, the computed G (a product, or the midpoint's sum and product) by
    up to two of |G|, and the exponentials of the P-mass and of the capped Q-mass by an ulp each
    (2 roundoffs, in the logarithms): MACHINE_EPSILON (|log_p| + 2 |G| + 3) covers them and the
    margin's addition. (Where every point of a half sits at its left end, a midpoint alone in
    its right half, the cap is the Q-mass taken.)"""
    with np.errstate(invalid="ignore"):
        out = log_p - end
    return out + margin(MACHINE_EPSILON * (np.abs(log_p) + 2.0 * np.abs(end) + 3.0))


def _lower_rounding(sums: np.ndarray, terms: int, span: float, log_k: float, tilt: np.ndarray) -> np.ndarray:
    """A bound r on the relative rounding, as a factor e^r, of each half-cell mass of
    :func:`_coarse_lower` with the block sum S (``sums``) of at most ``terms`` points, after its
    final exponential, and for what the caller adds up; ``span`` = (lam + 1) H and ``tilt`` =
    (lam + 1) |G_j| per cell (0 where S = 0: the mass is then an exact 0).

    In roundoffs (MACHINE_EPSILON): a weight e^{-rate r h} has its argument off by 3 span (rate =
    lam + 1 rounded, two products) and its exponential by one; a sum of ``terms`` products of
    nonnegative terms ``terms`` + 1, and where a term is subnormal 2^-1074 absolutely (``terms``
    2^-1074 / S relatively); log S one of |log S|; the scale log K - rate G_j has G_j (a
    product) and rate G_j off by 3 |rate G_j| and its difference by |log K| + |rate G_j|; their
    sum |log S| + |log K| + |rate G_j|, the final exponential one, and the caller's sum of the
    two halves one: 4 + terms + 3 span + 2 |log S| + 2 |log K| + 6 |rate G_j|, doubled."""
    live = sums > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        size = np.abs(np.log(np.where(live, sums, 1.0)))
        faint = np.where(live, terms * 5e-324 / np.where(live, sums, 1.0), 0.0)
    ulps = 4.0 + terms + 3.0 * span + 2.0 * size + 2.0 * abs(log_k) + 6.0 * tilt
    return np.where(live, 2.0 * ulps * MACHINE_EPSILON + faint, 0.0)


#: Coarsening ratios above this many times the points are summed over the points (bincount), not
#: over a (cells x ratio) block array: equal sums, in another order.
SPARSE_RATIO = 1.0
#: Smallest log-mass an upper PLD may have, and minus the largest log Q-mass of a lower measure.
_LOG_FLOOR = -700.0
