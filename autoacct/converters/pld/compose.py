"""Composer: discrete PLDs -> the PLD of their composition, by one FFT.

The composed law of S = sum_i (k_i copies of L_i) is computed on a window of N
lattice points by multiplying the components' spectra, each raised to its count
(self-composition costs one power, whatever k is).

Exponential tilting. Each component's masses w(x) are replaced by the
probability vector w(x) e^{lam x} / M(lam), M(lam) = sum_x w(x) e^{lam x}; the
tilted composition is the composition's law tilted by e^{lam s}, and
p(s) = p~(s) e^{K - lam s} with K = sum_i k_i log M_i(lam). With lam chosen
where the Chernoff bound at the target eps is tightest, the part of S that
decides delta(eps) carries most of the tilted mass, so rounding and truncation
errors are relative to delta rather than to 1. lam = 0 is the plain method.

Errors, all accounted (every term has the form C e^{-lam eps} at the query eps):

* Wrap-around: a circular convolution folds the tilted mass outside the window
  back into it. Its total is bounded by Chernoff bounds from the tilted
  cumulants K(lam + t) - K(lam), computed from the components' exact discrete
  moment generating functions. The upper profile adds P(S above the window)
  (its folded copy only adds a nonnegative term); the lower profile subtracts
  e^{K - lam eps} times the folded tilted mass.
* Rounding of the FFTs and powers: each entry of the tilted result is within
  E of the exact value, where E is bounded from the spectra (forward FFT error
  of a unit-mass vector <= c u log2 N per frequency, propagated through the
  product of powers by |d prod z_i^k_i| <= prod M_i^k_i sum_i k_i |dz_i| / M_i
  with M_i >= |z_i| bounded by 1, plus the inverse FFT's error); summed against delta's weights it costs at most
  E e^{K - lam eps} / (1 - e^{-lam h}) (at most N points when lam = 0).
* Leaks: a component that is itself a computed composition (see :mod:`levels`)
  may fall short of the law it bounds by a measure whose moment generating
  function at lam is at most ``leak`` times its own; k_i copies then cost the
  upper profile e^{K - lam eps} ((1 + leak)^k_i - 1) more.

:func:`convolve` is the FFT step on its own, which :mod:`levels` also uses;
:class:`ChernoffProfile` bounds delta from the cumulants alone, with no FFT.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import fft as sfft

from .discretize import DiscretePLD, log_mgfs
from .profile_ops import DiscreteProfile

#: Largest FFT length the composer uses (2^22 points: with both bound rows, their
#: spectra and the error bookkeeping, well under 1 GB of memory).
N_MAX = 1 << 22
#: Positive exponents at which cumulants are evaluated for tail bounds and tilts
#: (any exponent gives a valid Chernoff bound; this grid only decides how tight).
THETAS = np.concatenate(([0.0], np.logspace(-3.0, 4.0, 25)))
#: Exponents in units of 1/h: they bound the mass of the last few lattice points.
_LATTICE_THETAS = np.logspace(0.0, 4.0, 5)
_U = np.finfo(float).eps


class AccuracyWarning(UserWarning):
    """The accountant could not reach the requested accuracy; its bounds remain valid."""


@dataclass(frozen=True)
class Component:
    """One distinct discretised mechanism and how many times it is composed.

    The lower PLD may be given as a function that makes it: it is then made when first
    read, so that what reads only upper PLDs (a :class:`ChernoffProfile`) never pays for it.
    """

    upper: DiscretePLD
    lower_pld: DiscretePLD | Callable[[], DiscretePLD]
    count: int

    @cached_property
    def lower(self) -> DiscretePLD:
        """The lower discrete PLD."""
        low = self.lower_pld
        return low if isinstance(low, DiscretePLD) else low()

    def recounted(self, count: int) -> Component:
        """The same component taken ``count`` times (sharing its lower PLD if already made)."""
        return Component(self.upper, self.__dict__.get("lower", self.lower_pld), count)


def _side(c: Component, side: str) -> DiscretePLD:
    return c.upper if side == "upper" else c.lower


def exponents(h: float) -> np.ndarray:
    """The exponents (both signs, and 0) at which component cumulants may be evaluated.

    Tilts are chosen among them and every tail bound searches them; the cumulant of a
    set of components is tabulated once at all of them (:class:`Components`), whatever the tilt.
    """
    pos = np.unique(np.concatenate((THETAS[1:], _LATTICE_THETAS / h)))
    return np.concatenate((-pos[::-1], [0.0], pos))


def cumulant(comps: Sequence[Component], side: str, theta: np.ndarray) -> np.ndarray:
    """K(theta) = sum_i k_i log E[e^{theta L_i}; L_i finite] for each theta."""
    theta = np.atleast_1d(np.asarray(theta, dtype=float))
    table = log_mgfs([_side(c, side) for c in comps], theta)
    counts = np.array([float(c.count) for c in comps])
    # An empty law (log-MGF -inf) makes K = -inf; counts are positive, so no 0 * inf.
    return (table * counts[:, None]).sum(axis=0)


class Components(tuple):
    """The components of one composition, all on one lattice, with what the composer derives
    from them more than once (cumulants on the exponent grid, support ends), computed once."""

    @cached_property
    def _cumulants(self) -> dict[str, _Cumulant]:
        return {}

    def recounted(self, count: int) -> Components:
        """This one-component set with its component taken ``count`` times, keeping the
        cumulant tables made so far (rescaled)."""
        (c,) = self
        out = Components([c.recounted(count)])
        out._cumulants.update({side: k.recounted(out) for side, k in self._cumulants.items()})
        return out

    def cumulant(self, side: str, lam: float = 0.0) -> _Cumulant:
        """K of the ``side`` discrete PLDs on the exponent grid of their lattice, and at lam."""
        k = self._cumulants.get(side)
        if k is None or not np.any(k.grid == lam):
            k = self._cumulants[side] = _Cumulant(self, side, self[0].upper.h, lam)
        return k

    @cached_property
    def mean(self) -> float:
        """Mean of the composed upper discrete PLD's finite part (masses as given)."""
        return sum(c.count * float((c.upper.masses * c.upper.losses).sum()) for c in self)

    @cached_property
    def _support(self) -> dict[str, tuple[float, float]]:
        return {side: _support_ends(self, side) for side in ("upper", "lower")}

    def support_top(self, side: str) -> float:
        """Largest finite loss the composed discrete PLD of ``side`` can take."""
        return self._support[side][1]

    def support_bottom(self, side: str) -> float:
        """Smallest finite loss the composed discrete PLD of ``side`` can take."""
        return self._support[side][0]


def _components(comps: Sequence[Component]) -> Components:
    """``comps`` as :class:`Components` (itself when it already is one)."""
    return comps if isinstance(comps, Components) else Components(comps)


class _Cumulant:
    """K on the exponent grid of spacing h (and the tilt ``lam``, which a tilt chosen on
    another grid need not be on), tabulated for every exponent at once."""

    def __init__(self, comps: Sequence[Component], side: str, h: float, lam: float = 0.0,
                 values: np.ndarray | None = None) -> None:
        self.comps, self.side, self.h, self.lam = comps, side, h, lam
        self.grid = np.union1d(exponents(h), [lam, -lam])
        self.zero = int(np.flatnonzero(self.grid == 0.0)[0])
        self._values = cumulant(comps, side, self.grid) if values is None else values

    def recounted(self, comps: Components) -> _Cumulant:
        """The same table for ``comps``: this table's one component, taken another number of
        times (K is linear in the count)."""
        (old,), (new,) = self.comps, comps
        return _Cumulant(comps, self.side, self.h, self.lam, self._values * (new.count / old.count))

    def __call__(self, idx: np.ndarray) -> np.ndarray:
        return self._values[np.asarray(idx, dtype=int)]

    def index(self, theta: float) -> int:
        """Index of a tabulated exponent."""
        return int(np.flatnonzero(self.grid == theta)[0])


def _best(f, lo: int, hi: int) -> int:
    """An index in [lo, hi] where f (vectorised over index arrays) is smallest, assuming f is
    unimodal there: every third index first, then the neighbours of the best of those.

    Any index gives a valid Chernoff-type bound; unimodality only makes it the best one.
    """
    coarse = np.arange(lo, hi + 1, _STRIDE)
    j = int(coarse[int(np.argmin(f(coarse)))])
    fine = np.arange(max(lo, j - _STRIDE + 1), min(hi, j + _STRIDE - 1) + 1)
    return int(fine[int(np.argmin(f(fine)))])


#: Stride of the coarse pass of :func:`_best`.
_STRIDE = 3


def _chernoff(k: _Cumulant, lam: float, k_lam: float, a: float, above: bool) -> float:
    """log of the Chernoff bound on the law tilted by lam (log-normaliser k_lam) beyond ``a``:
    above a (exponents > lam) or below it (exponents < lam)."""
    i_lam = k.index(lam)
    lo, hi = (i_lam + 1, k.grid.size - 1) if above else (0, i_lam - 1)
    if lo > hi:
        return 0.0

    def f(i: np.ndarray) -> np.ndarray:
        return k(i) - k_lam - (k.grid[i] - lam) * a

    return min(float(f(np.array([_best(f, lo, hi)]))[0]), 0.0)


@dataclass(frozen=True)
class ChernoffProfile:
    """A profile from moment generating functions alone, with no FFT.

    As an upper profile: for the composed upper PLDs S (finite part, cumulant K) and
    any theta > 0, delta(eps) <= E[(1 - e^{eps - S})_+] + p_inf
    <= c(theta) e^{K(theta) - theta eps} + p_inf, with
    c(theta) = max_{s > 0} (1 - e^{-s}) e^{-theta s} = (theta / (1 + theta))^theta / (1 + theta).
    As a lower profile it says nothing: delta >= 0 and eps >= 0.
    """

    k: _Cumulant
    inf_mass: float
    upper: bool

    def _log_terms(self, i: np.ndarray) -> np.ndarray:
        theta = self.k.grid[i]
        return self.k(i) + theta * np.log(theta / (1.0 + theta)) - np.log1p(theta)

    def delta(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        if not self.upper:
            return np.zeros(eps.shape)
        i = np.arange(self.k.zero + 1, self.k.grid.size)
        log_t = self._log_terms(i)
        theta = self.k.grid[i]
        best = np.min(log_t[:, None] - theta[:, None] * eps.ravel()[None, :], axis=0).reshape(eps.shape)
        return np.minimum(np.exp(np.minimum(best, 0.0)) + self.inf_mass, 1.0)

    def epsilon(self, delta: float) -> float:
        if not self.upper:
            return 0.0
        if delta <= self.inf_mass:
            return math.inf
        log_d = math.log(delta - self.inf_mass)

        def f(i: np.ndarray) -> np.ndarray:
            return (self._log_terms(i) - log_d) / self.k.grid[i]

        i = _best(f, self.k.zero + 1, self.k.grid.size - 1)
        return max(float(f(np.array([i]))[0]), 0.0)


def chernoff_profiles(comps: Sequence[Component], h: float) -> tuple[ChernoffProfile, ChernoffProfile]:
    """(upper, lower) :class:`ChernoffProfile` of the composition of ``comps``."""
    log_fin = sum(c.count * (math.log1p(-c.upper.p_inf) if c.upper.p_inf < 1.0 else -math.inf)
                  for c in comps)
    k = _components(comps).cumulant("upper")
    inf_mass = -math.expm1(log_fin)
    return ChernoffProfile(k, inf_mass, True), ChernoffProfile(k, inf_mass, False)


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
    mass onto the last lattice point.
    """
    if eps_target is None or _single_step(comps):
        return 0.0
    comps = _components(comps)
    mean = comps.mean
    top = comps.support_top("upper")
    target = min(eps_target, mean + 0.8 * (top - mean))
    if target <= mean:
        return 0.0
    k = comps.cumulant("upper")
    grid = k.grid
    i_star = _best(lambda i: k(i) - grid[i] * target, k.zero, grid.size - 1)
    lam_star = float(grid[i_star])
    if log_budget is None or i_star == k.zero:
        return lam_star
    k_tot = sum(c.count for c in comps)
    wanted = lam_star * np.array([0.0, 1 / 64, 1 / 16, 1 / 4, 1 / 2])
    candidates = np.unique(np.append(np.searchsorted(grid, wanted), i_star))
    choice, width = lam_star, np.inf
    for i in candidates[(candidates >= k.zero) & (candidates <= i_star)]:
        lam = float(grid[i])
        lo, hi = _window_from(k, lam, h, log_eta)
        n = hi - lo + 1
        # Curvature K''(lam) by the second divided difference on the (non-uniform) grid.
        j = np.array([i - 1, i, i + 1])
        kk, tt = k(j), grid[j]
        curv = 2.0 * ((kk[2] - kk[1]) / (tt[2] - tt[1]) - (kk[1] - kk[0]) / (tt[1] - tt[0])) / (tt[2] - tt[0])
        p_max = min(1.0, h / math.sqrt(2.0 * math.pi * max(float(curv), 1e-300)))
        geometric = n if lam <= 0 else min(n, 1.0 / -math.expm1(-lam * h))
        log_err = (float(k(np.array([i]))[0]) - lam * target
                   + math.log(k_tot * 8.0 * _U * (math.log2(max(n, 2)) + 2.0) * p_max * geometric))
        if log_err <= log_budget and n < width:
            choice, width = lam, n
    return choice


def _window_from(k: _Cumulant, lam: float, h: float, log_eta: float) -> tuple[int, int]:
    """Lattice indices outside which the law tilted by lam has mass at most e^log_eta on each side.

    hi = min over t > 0 of (K(lam + t) - K(lam) - log_eta) / t is unimodal in t (the slope
    from the point (lam, log_eta) to the convex curve K), and likewise lo.
    """
    grid = k.grid
    i_lam = k.index(lam)
    k_lam = float(k(np.array([i_lam]))[0])
    hi, lo = np.inf, -np.inf
    if i_lam + 1 < grid.size:
        def up(i: np.ndarray) -> np.ndarray:
            return (k(i) - k_lam - log_eta) / (grid[i] - lam)

        hi = float(up(np.array([_best(up, i_lam + 1, grid.size - 1)]))[0])
    if i_lam > 0:
        def down(i: np.ndarray) -> np.ndarray:
            return -(log_eta - (k(i) - k_lam)) / (lam - grid[i])

        lo = -float(down(np.array([_best(down, 0, i_lam - 1)]))[0])
    comps = k.comps
    support_lo = sum(c.count * c.upper.start for c in comps) * h
    support_hi = sum(c.count * (c.upper.start + len(c.upper.masses) - 1) for c in comps) * h
    lo, hi = max(lo, support_lo), min(hi, support_hi)
    return math.floor(lo / h), max(math.ceil(hi / h), math.floor(lo / h) + 1)


def window(comps: Sequence[Component], h: float, lam: float, log_eta: float) -> tuple[int, int]:
    """Lattice indices outside which the tilted law has mass at most e^log_eta on each side."""
    return _window_from(_components(comps).cumulant("upper", lam), lam, h, log_eta)


def window_points(comps: Components, counts: np.ndarray, lam: float, log_eta: float) -> np.ndarray:
    """Points of the :func:`window` of the one component of ``comps`` taken each of ``counts``
    times."""
    h = comps[0].upper.h
    return np.array([float(np.subtract(*window(comps.recounted(int(c)), h, lam, log_eta)[::-1]) + 1)
                     for c in counts])


@dataclass(frozen=True)
class Convolution:
    """The tilted composed masses of both bound rows on one window, with their error terms.

    Row 0 composes the components' upper PLDs and row 1 their lower ones. Entry
    i of a row is the tilted mass at loss (j_lo + i) h, within ``err`` of the
    exact circular convolution; the circular convolution adds to the window the
    tilted mass outside it (bounded by :meth:`tilted_above` and :meth:`tilted_below`).
    """

    comps: Components
    h: float
    lam: float
    j_lo: int
    dens: np.ndarray
    #: Per-entry error bound of each row.
    err: np.ndarray
    #: log of each row's tilt normaliser K(lam) = sum_i k_i log M_i(lam).
    log_k: np.ndarray

    @property
    def top(self) -> float:
        """First loss above the window."""
        return (self.j_lo + self.dens.shape[-1]) * self.h

    @property
    def bottom(self) -> float:
        """Last loss below the window."""
        return (self.j_lo - 1) * self.h

    def _cumulant(self, row: int) -> _Cumulant:
        """The row's cumulant table (shared with every other use of the same components)."""
        return self.comps.cumulant(("upper", "lower")[row], self.lam)

    def tilted_above(self, row: int) -> float:
        """Bound on the row's tilted mass above the window."""
        if self.top > self.comps.support_top(("upper", "lower")[row]):
            return 0.0
        return math.exp(_chernoff(self._cumulant(row), self.lam, float(self.log_k[row]), self.top,
                                  above=True))

    def log_above(self, row: int) -> float:
        """log of a bound on the row's untilted mass P(S >= top) (Chernoff at the plain exponents)."""
        if self.top > self.comps.support_top(("upper", "lower")[row]):
            return -math.inf
        return _chernoff(self._cumulant(row), 0.0, 0.0, self.top, above=True)

    def tilted_below(self, row: int) -> float:
        """Bound on the row's tilted mass below the window."""
        if self.bottom < self.comps.support_bottom(("upper", "lower")[row]):
            return 0.0
        return math.exp(_chernoff(self._cumulant(row), self.lam, float(self.log_k[row]), self.bottom,
                                  above=False))

    def leak(self) -> float:
        """Ratio of the moment generating function at lam of the measure the exact upper
        composition may exceed the composed components by, to theirs (see DiscretePLD.leak)."""
        total = 0.0
        for c in self.comps:
            if c.upper.leak > 0.0:
                if c.upper.leak_lam != self.lam:
                    raise RuntimeError("a component's leak was bounded at another tilt")
                total += c.count * math.log1p(c.upper.leak)
        return math.expm1(total)

    def inf_mass(self, row: int) -> float:
        """Mass of the composed row at +inf."""
        side = ("upper", "lower")[row]
        log_fin = sum(c.count * (math.log1p(-_side(c, side).p_inf) if _side(c, side).p_inf < 1.0
                                 else -math.inf) for c in self.comps)
        return -math.expm1(log_fin)

    def clipped(self) -> float:
        """Mass the lower row's steps added by clipping rounding-level negatives, compounded."""
        return math.expm1(sum(c.count * math.log1p(c.lower.deficit) for c in self.comps))


def convolve(comps: Sequence[Component], h: float, log_eta: float, lam: float = 0.0,
             max_points: float = math.inf) -> Convolution | None:
    """Tilted composition of ``comps`` on the lattice hZ by one FFT, on the window outside
    which the tilted law has mass at most e^log_eta on each side; None if that window has
    more than ``max_points`` points."""
    comps = _components(comps)
    j_lo, j_hi = window(comps, h, lam, log_eta)
    if j_hi - j_lo + 1 > max_points:
        return None
    n = sfft.next_fast_len(max(j_hi - j_lo + 1, 2), real=True)
    if n > N_MAX:
        warnings.warn(f"the PLD grid needs {n} points; capped at {N_MAX}, so the bounds "
                      "are valid but looser than requested", AccuracyWarning, stacklevel=4)
        n = N_MAX
    rho = 4.0 * _U * (math.log2(n) + 2.0)
    spec = None
    log_k = np.zeros(2)
    offset = 0
    # Error propagation: with M_i >= |z_i|, |z^_i| and |dz_i| <= e_i, the product of powers
    # moves by at most sum_i k_i e_i M_i^(k_i - 1) prod_{j != i} M_j^(k_j)
    # = prod_j M_j^(k_j) * sum_i k_i e_i / M_i, which is small wherever any factor is.
    bound = None
    weight = 0.0
    # Components are transformed in groups, both rows of each at once.
    group = max(1, _GROUP_POINTS // n)
    for g0 in range(0, len(comps), group):
        part = comps[g0:g0 + group]
        rows = np.zeros((len(part), 2, n))
        for i, c in enumerate(part):
            for j, pld in enumerate((c.upper, c.lower)):
                tilted, log_m = _tilt(pld, lam)
                log_k[j] += c.count * log_m
                _fold_into(rows[i, j], tilted)
            offset += c.count * c.upper.start
        s = sfft.rfft(rows, axis=-1)
        mag = np.abs(s)
        mag += rho
        np.minimum(mag, 1.0, out=mag)
        counts = np.array([float(c.count) for c in part])
        # Forward error rho plus the rounding of the power and the product (4u per factor).
        weight = weight + (rho + 4 * _U) * np.einsum("g,gij->ij", counts + 1.0, np.reciprocal(mag))
        power = mag
        for i in np.flatnonzero(counts > 1):
            if power is mag:
                power = mag.copy()
            power[i] = _power(mag[i], part[i].count, mag[i])
            s[i] = _power(s[i], part[i].count, mag[i])
        power = np.prod(power, axis=0)
        s = np.prod(s, axis=0)
        bound = power if bound is None else bound * power
        spec = s if spec is None else spec * s
    dens = sfft.irfft(spec, n=n, axis=-1)
    dens = np.roll(dens, -((j_lo - offset) % n), axis=-1)

    # Per-entry error bound of the tilted result (both rows).
    spec_err = bound * weight
    fold = 2.0 * spec_err[:, 1:].sum(axis=-1) + spec_err[:, 0]
    err = fold / n + rho * (2.0 * np.abs(spec[:, 1:]).sum(axis=-1) + np.abs(spec[:, 0])) / n
    # Powers set to zero where they underflow (see _power) move each entry by at most this.
    err = err + 2.0 * len(comps) * math.exp(_LOG_TINY)
    return Convolution(comps=comps, h=h, lam=lam, j_lo=j_lo, dens=dens, err=err, log_k=log_k)


def compose(comps: Sequence[Component], h: float, log_eta: float,
            lam: float = 0.0) -> tuple[DiscreteProfile, DiscreteProfile]:
    """Upper and lower profiles of the composition of ``comps`` on the lattice hZ.

    ``log_eta`` is the log of the tilted tail mass left outside the window;
    ``lam`` >= 0 is the tilt (see :func:`choose_tilt`).
    """
    if _single_step(comps):
        return _uncomposed(comps[0], h)
    conv = convolve(comps, h, log_eta, lam)
    assert conv is not None
    n = conv.dens.shape[-1]
    geometric = n if lam <= 0 else min(n, 1.0 / -math.expm1(-lam * h))
    out = []
    for j, side in enumerate(("upper", "lower")):
        k_lam = float(conv.log_k[j])
        tilted_above, tilted_below = conv.tilted_above(j), conv.tilted_below(j)
        inf_mass = conv.inf_mass(j)
        err = float(conv.err[j])
        with np.errstate(divide="ignore"):
            log_err = math.log(err * geometric) if err > 0 else -np.inf
            log_alias = math.log(tilted_above + tilted_below) if tilted_above + tilted_below > 0 else -np.inf
        if side == "upper":
            c0 = inf_mass + math.exp(conv.log_above(j))
            leak = conv.leak()
            log_c1 = k_lam + (float(np.logaddexp(log_err, math.log(leak))) if leak > 0 else log_err)
        else:
            c0 = inf_mass - conv.clipped()
            log_c1 = k_lam + float(np.logaddexp(log_err, log_alias))
        out.append(DiscreteProfile(h=h, start=conv.j_lo, tilted=conv.dens[j], log_k=k_lam, lam=lam,
                                   c0=c0, log_c1=log_c1, upper=side == "upper",
                                   support_top=conv.comps.support_top(side), inf_mass=inf_mass))
    return out[0], out[1]


def _power(z: np.ndarray, k: int, mag: np.ndarray) -> np.ndarray:
    """z ** k, computed only where it does not underflow: |z| <= ``mag`` and mag^k < 1e-300
    elsewhere (a self-composed spectrum is negligible at most frequencies)."""
    with np.errstate(divide="ignore"):
        live = k * np.log(mag) > _LOG_TINY
    out = np.zeros_like(z)
    out[live] = z[live] ** k
    return out


#: Powers below e^_LOG_TINY (about 1e-300) are set to zero.
_LOG_TINY = -690.0


def _single_step(comps: Sequence[Component]) -> bool:
    return len(comps) == 1 and comps[0].count == 1


def _uncomposed(c: Component, h: float) -> tuple[DiscreteProfile, DiscreteProfile]:
    """Profiles of one step taken once: its discrete PLDs themselves, read off without an
    FFT, so with no rounding or wrap-around term of the composer.

    The masses carry the rounding of the laws' cell masses: exponentials of
    log-probabilities (a few hundred ulps relative) and differences of tail
    functions, whose absolute errors matter only where the profile is large. They
    are covered by a relative margin of 1e-9 (the exact route's margin): the upper
    masses are scaled by 1 + 1e-9 and the lower ones by 1 - 1e-9, which scales each
    profile by the same factor.
    """
    out = []
    for pld, upper, scale in ((c.upper, True, 1.0 + _LAW_REL), (c.lower, False, 1.0 - _LAW_REL)):
        inf_mass = min(pld.p_inf, 1.0)
        c0 = inf_mass if upper else inf_mass - pld.deficit
        out.append(DiscreteProfile(h=h, start=pld.start, tilted=pld.masses * scale, log_k=0.0, lam=0.0,
                                   c0=min(c0 * scale, 1.0) if c0 > 0 else c0 / scale,
                                   log_c1=-math.inf, upper=upper,
                                   support_top=_support_ends([c], "upper" if upper else "lower")[1],
                                   inf_mass=min(inf_mass * (1.0 + _LAW_REL), 1.0)))
    return out[0], out[1]


#: Relative rounding margin on a single step's discrete masses (see :func:`_uncomposed`).
_LAW_REL = 1e-9


def _support_ends(comps: Sequence[Component], side: str) -> tuple[float, float]:
    """Smallest and largest finite losses the composed discrete PLD can take."""
    bottom = top = 0.0
    for c in comps:
        pld = _side(c, side)
        if pld.support is not None:
            bottom += c.count * (pld.start + pld.support[0]) * pld.h
            top += c.count * (pld.start + pld.support[1]) * pld.h
    return bottom, top


def _tilt(pld: DiscretePLD, lam: float) -> tuple[np.ndarray, float]:
    """Masses tilted by e^{lam x} and normalised, with log of the normaliser."""
    w = pld.masses
    if lam == 0.0:
        tot = float(w.sum())
        return (w / tot if tot > 0 else w), (math.log(tot) if tot > 0 else -np.inf)
    with np.errstate(divide="ignore"):
        z = np.log(w) + lam * pld.losses
    zmax = float(z.max())
    e = np.exp(z - zmax)
    tot = float(e.sum())
    return e / tot, zmax + math.log(tot)


def _fold_into(row: np.ndarray, masses: np.ndarray) -> None:
    """Add ``masses`` into the zero ``row`` of length n, wrapped around modulo n."""
    n = len(row)
    if len(masses) <= n:
        row[:len(masses)] = masses
    else:
        row += np.bincount(np.arange(len(masses)) % n, weights=masses, minlength=n)


#: Lattice points transformed per group of components in :func:`compose`.
_GROUP_POINTS = 1 << 19
