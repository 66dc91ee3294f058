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
  with M_i >= |z_i| bounded by 1, plus the inverse FFT's error); summed against delta's weights
  1 - e^{eps - x} it costs E e^{K - lam eps} times at most min(N, 1 / (1 - e^{-lam h})), and
  far less where the window is narrow in loss or lam is large (see :mod:`profiles`).
* Leaks: a component that is itself a computed composition (see :mod:`levels`)
  may fall short of the law it bounds by a measure whose moment generating
  function at lam is at most ``leak`` times its own; k_i copies then cost the
  upper profile e^{K - lam eps} ((1 + leak)^k_i - 1) more.

:func:`convolve` is the FFT step on its own, which :mod:`levels` also uses.
Tilts, windows and the Chernoff bounds above come from :mod:`cumulants`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import fft as sfft

from autoacct.errors import AccuracyWarning
from autoacct.exactness import MACHINE_EPSILON, round_up
from autoacct.limits import afford, max_points
from autoacct.pld.components import Component
from autoacct.pld.cumulants import (
    Components,
    Cumulant,
    as_components,
    chernoff_bound,
    composed_inf_mass,
    side_pld,
    single_step,
    support_ends,
    window,
)
from autoacct.pld.discretize import DiscretePLD
from autoacct.pld.mgf import same_lattice
from autoacct.pld.profiles import POSITION_REL, DiscreteProfile
from autoacct.pld.transforms import ROW_BY_ROW, irfft_rows, rfft_rows, workspace

#: Largest FFT length the composer uses (2^22 points: with both bound rows, their
#: spectra and the error bookkeeping, well under 1 GB of memory).
N_MAX = 1 << 22
#: Working bytes and seconds per window point of composing one bound row of one component.
#: They size the window to the memory budget and predict a step's time (see
#: :mod:`autoacct.limits`). The bytes: 61 to 68 for both rows, measured with tracemalloc at
#: 2^18 to 2^20 points. The seconds: over the 102 compositions of at least 2^17 point-rows
#: that the 67 cases of benchmarks/sweep.py make, on a 2-core machine with a two-worker test
#: run beside them, a median of 3.6e-8 a point-row, 7e-8 at the 90th percentile and 1.09e-7
#: at most; rounded up, so that a prediction stays above the composition's own time without
#: stopping a query at a fraction of its budget. The uncharged work around the compositions
#: (profile reads, tail bounds) comes on top: a query that spends most of its time there can
#: pass its budget (5e6 runs of a sampled randomized response at delta 1e-300: 13 s of CPU
#: for 10 s charged, beside another process; 7 s at twice this rate, with the same bracket).
POINT_BYTES = 40.0
POINT_SECONDS = 1.25e-7
#: Seconds per window point of each further component of one composition: its forward FFT,
#: power and product only (the inverse FFT and the profile are shared). Measured 9 to 11 ns
#: with 8 and 64 components of 2,000 to 100,000 points (2-core AMD EPYC, three other
#: workers beside it), 2e-8 to 6e-8 earlier on an older machine; rounded up. (At 1e-7 the
#: exact composition of 2,000 distinct DP-SGD steps was predicted at 16 times its FFTs'
#: time. Charged the first component's rate each, 1000 distinct DP-SGD steps would be
#: predicted at several times their time and stopped by the budget.)
COMPONENT_POINT_SECONDS = 3e-8
_U = MACHINE_EPSILON
#: Components of at least this total mass are laws (their discretisation drops at most
#: tiny tails); below it, parts of laws.
_LAW_MASS = 0.5
#: Relative rounding of the products of a sub-probability composition's mass at +inf
#: (a few logarithms and exponentials of sums of at most a few hundred terms), rounded up.
_SUB_REL = 1e-12


def max_window() -> int:
    """Most points of an FFT window: N_MAX, or fewer when the memory budget affords fewer
    (see :func:`autoacct.limits.max_points`)."""
    return max_points(2 * POINT_BYTES, N_MAX)


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

    def _cumulant(self, row: int) -> Cumulant:
        """The row's cumulant table (shared with every other use of the same components)."""
        return self.comps.cumulant(("upper", "lower")[row], self.lam)

    def tilted_above(self, row: int) -> float:
        """Bound on the row's tilted mass above the window."""
        if self.top > self.comps.support_top(("upper", "lower")[row]):
            return 0.0
        return math.exp(chernoff_bound(self._cumulant(row), self.lam, float(self.log_k[row]), self.top,
                                  above=True))

    def log_above(self, row: int) -> float:
        """log of a bound on the row's untilted mass P(S >= top) (Chernoff at the plain exponents)."""
        if self.top > self.comps.support_top(("upper", "lower")[row]):
            return -math.inf
        return chernoff_bound(self._cumulant(row), 0.0, 0.0, self.top, above=True)

    def above_exponents(self) -> tuple[np.ndarray, np.ndarray]:
        """The exponents t > 0 of the upper row's cumulant table and K(t) there, the bounds on
        the log moment generating function of the untilted composition that
        :meth:`log_above` minimises over."""
        k = self._cumulant(0)
        i = np.arange(k.index(0.0) + 1, k.grid.size)
        values = np.asarray(k(i), dtype=float)
        # (an undefined entry bounds nothing: +inf, so that the minimum never reads it)
        return k.grid[i].copy(), np.where(np.isnan(values), np.inf, values)

    def tilted_below(self, row: int) -> float:
        """Bound on the row's tilted mass below the window."""
        if self.bottom < self.comps.support_bottom(("upper", "lower")[row]):
            return 0.0
        return math.exp(chernoff_bound(self._cumulant(row), self.lam, float(self.log_k[row]), self.bottom,
                                  above=False))

    def leak(self) -> float:
        """Ratio of the moment generating function at lam of the measure the exact upper
        composition may exceed the composed components by, to theirs (see DiscretePLD.leak),
        rounded up.

        expm1(T), T = sum_i k_i log1p(leak_i): T is within (n + 3) unit roundoffs u of itself
        (as in :func:`~autoacct.pld.cumulants.composed_inf_mass`), which moves expm1(T) by at
        most e^T / (e^T - 1) T <= 1 + T times that relatively, and expm1 adds an ulp: (n + 6)
        (1 + T) MACHINE_EPSILON covers both and the margin's own rounding."""
        total = 0.0
        for c in self.comps:
            if c.upper.leak > 0.0:
                if c.upper.leak_lam != self.lam:
                    raise RuntimeError("a component's leak was bounded at another tilt")
                total += c.count * math.log1p(c.upper.leak)
        if total == 0.0:
            return 0.0
        return round_up(math.expm1(total), (len(self.comps) + 6.0) * (1.0 + total) * _U)

    def inf_mass(self, row: int) -> float:
        """Mass of the composed row at +inf: prod_i m_i^k_i - prod_i (m_i - p_i)^k_i for
        components of total mass m_i and mass p_i at +inf. For laws (m_i = 1, up to the
        mass their discretisation dropped) 1 - prod_i (1 - p_i)^k_i, rounded outward
        (:func:`~autoacct.pld.cumulants.composed_inf_mass`). For parts of laws
        (sub-probability measures, see :mod:`jumps`), whose products are far below 1, the
        products themselves, rounded outward (up for the upper row, down for the lower)."""
        side = ("upper", "lower")[row]
        plds = [(side_pld(c, side), c.count) for c in self.comps]
        if all(pld.total >= _LAW_MASS for pld, _ in plds):
            return composed_inf_mass([(pld.p_inf, k) for pld, k in plds], row == 0)
        if all(pld.p_inf == 0.0 for pld, _ in plds):
            return 0.0
        log_all = sum(k * math.log(pld.total) if pld.total > 0 else -math.inf for pld, k in plds)
        share = sum(k * (math.log1p(-pld.p_inf / pld.total) if pld.p_inf < pld.total else -math.inf)
                    for pld, k in plds if pld.total > 0)
        value = math.exp(log_all) * -math.expm1(share)
        return value * (1.0 + _SUB_REL) if row == 0 else value * (1.0 - _SUB_REL)

    def clipped(self) -> float:
        """Mass the lower row's steps added by clipping rounding-level negatives, compounded.

        A lower PLD of mass m_i is a measure raised by at most c_i (its deficit) above a
        valid lower bound, so the composed masses exceed the composed bound by a measure of
        mass at most prod_i (m_i + c_i)^k_i - prod_i m_i^k_i, whose profile is at most that.
        For laws (m_i <= 1) this is at most prod_i (1 + c_i)^k_i - 1, taken as it is. For
        parts of laws (sub-probability measures, see :mod:`jumps`) the products themselves,
        rounded up: a split law's term of j tail copies has a mass near t^j (about 1e-72 at
        q = 1e-5, sigma = 0.23, k = 1e6, j = 14), which a deficit of 1e-32 counted as for
        laws swamps."""
        plds = [(c.lower, c.count) for c in self.comps]
        if all(pld.deficit == 0.0 for pld, _ in plds):
            return 0.0
        if all(pld.total >= _LAW_MASS for pld, _ in plds):
            return _expm1_or_inf(sum(k * math.log1p(pld.deficit) for pld, k in plds))
        # Each mass rounded up (a float sum of at most a few million terms).
        masses = [(pld.total * (1.0 + _SUB_REL), pld.deficit, k) for pld, k in plds]
        if any(m <= 0.0 for m, _, _ in masses):
            value = _exp_or_inf(sum(k * math.log(m + c) if m + c > 0 else -math.inf for m, c, k in masses))
        else:
            log_all = sum(k * math.log(m) for m, _, k in masses)
            grown = sum(k * math.log1p(c / m) for m, c, k in masses)
            # expm1(grown) < e^grown: past expm1's range the product is formed in logs
            # (1e11 steps of deficits 1e-8 overflowed it).
            value = (math.exp(log_all) * math.expm1(grown) if grown < _EXP_LAST
                     else _exp_or_inf(log_all + grown))
        return value * (1.0 + _SUB_REL)


def _exp_or_inf(x: float) -> float:
    """e^x, inf past the floats (math.exp raises there): a clipped mass beyond them leaves the
    lower profile 0."""
    return math.exp(x) if x < _EXP_LAST else math.inf


def _expm1_or_inf(x: float) -> float:
    """e^x - 1, inf past the floats."""
    return math.expm1(x) if x < _EXP_LAST else math.inf


#: Largest argument :func:`_exp_or_inf` hands to math.exp (e^709.78 is the largest float).
_EXP_LAST = 709.0


def convolve(comps: Sequence[Component], h: float, log_eta: float, lam: float = 0.0,
             max_points: float = math.inf, lower: bool = True) -> Convolution | None:
    """Tilted composition of ``comps`` on the lattice hZ by one FFT, on the window outside
    which the tilted law has mass at most e^log_eta on each side; None if that window has
    more than ``max_points`` points. Without ``lower`` only row 0 (the upper PLDs) is
    composed and the lower PLDs are never read."""
    comps = as_components(comps)
    _check_lattice(comps, h)
    j_lo, j_hi = window(comps, h, lam, log_eta)
    if j_hi - j_lo + 1 > max_points:
        return None
    need = max(j_hi - j_lo + 1, 2)
    cap = max_window()
    # (a window past the cap is capped anyway; next_fast_len refuses lengths near 2^63, which
    # a loss spread of 1e40 at 2^52 steps asks for)
    n = sfft.next_fast_len(need, real=True) if need <= cap else need
    if n > cap:
        why = "" if cap == N_MAX else " by the memory budget (autoacct.limits(memory=...) raises it)"
        warnings.warn(f"the PLD grid needs {n} points; capped at {cap}{why}, so the bounds "
                      "are valid but looser than requested", AccuracyWarning, stacklevel=4)
        n = cap
    rho = 4.0 * _U * (math.log2(n) + 2.0)
    rows = 2 if lower else 1
    # Each row's work grows with its components (at most _GROUP_POINTS points at once
    # beyond the first); its result and the other row's stay.
    group = min(len(comps), max(1, _GROUP_POINTS // n))
    afford(n * POINT_BYTES * (1 + group) + 8.0 * rows * n,
           n * rows * (POINT_SECONDS + (len(comps) - 1) * COMPONENT_POINT_SECONDS),
           f"an FFT composition on {n} points")
    log_k = np.zeros(rows)
    dens = np.empty((rows, n))
    err = np.empty(rows)
    # Each row is composed to the end before the next one starts: a long row's arrays then
    # stay in cache, and half as many are alive at once.
    long_rows = n >= ROW_BY_ROW
    for j in range(rows):
        spec, bound, weight, log_k[j], offset = _row_spectrum(comps, j, n, lam, rho)
        # The rows' PLDs may start apart: each row's composed first point is its own offset.
        inverse = irfft_rows(spec, n, workspace("inverse", n, float) if long_rows else None)
        _rolled_into(dens[j], inverse, (j_lo - offset) % n)
        # Per-entry error bound of the tilted result.
        spec_err = np.multiply(bound, weight, out=weight)
        fold = 2.0 * spec_err[1:].sum() + spec_err[0]
        mod = np.abs(spec, out=bound)
        err[j] = fold / n + rho * (2.0 * mod[1:].sum() + mod[0]) / n
    # Powers set to zero where they underflow (see _power) move each entry by at most this.
    err = err + 2.0 * len(comps) * math.exp(_LOG_TINY)
    return Convolution(comps=comps, h=h, lam=lam, j_lo=j_lo, dens=dens, err=err, log_k=log_k)


def _row_spectrum(comps: Components, row: int, n: int, lam: float, rho: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    """The composed spectrum of one bound row (0: the components' upper PLDs, 1: their lower
    ones) on n points, tilted by lam; with the bound M on its factors' moduli, the error
    weight sum_i k_i e_i / M_i (see :func:`convolve`), log K(lam), and the lattice index of
    the composed first point (the sum of the components' first indices, each k_i times).

    Error propagation: with M_i >= |z_i|, |z^_i| and |dz_i| <= e_i, the product of powers
    moves by at most sum_i k_i e_i M_i^(k_i - 1) prod_{j != i} M_j^(k_j)
    = prod_j M_j^(k_j) * sum_i k_i e_i / M_i, which is small wherever any factor is.
    """
    spec: np.ndarray | None = None
    bound: np.ndarray | None = None
    weight: np.ndarray | None = None
    log_k, offset = 0.0, 0
    # Components are transformed in groups.
    group = max(1, _GROUP_POINTS // n)
    by_row = n >= ROW_BY_ROW
    for g0 in range(0, len(comps), group):
        part = comps[g0:g0 + group]
        # (the first group's arrays in memory kept from call to call, see transforms.workspace)
        grid = workspace("grid", len(part) * n, float)[:len(part) * n].reshape(len(part), n)
        for i, c in enumerate(part):
            pld = c.upper if row == 0 else c.lower
            tilted, log_m, rel = _tilt(pld, lam)
            # (log K moved by the masses' rounding to the row's side, 2 r up for the upper
            # row: (1 - r) e^{2r} >= 1; r down for the lower one: (1 + r) e^{-r} <= 1; and by
            # the product's and the sum's own roundings)
            step = c.count * (log_m + (2.0 * rel if row == 0 else -rel))
            if math.isfinite(step):
                step += (1.0 if row == 0 else -1.0) * 2.0 * _U * (abs(step) + abs(log_k))
            log_k += step
            _fold_into(grid[i], tilted)
            offset += c.count * pld.start
        s = rfft_rows(grid, workspace("spectrum", len(part) * (n // 2 + 1), complex) if by_row and not g0 else None)
        del grid
        mag = np.abs(s)
        mag += rho
        np.minimum(mag, 1.0, out=mag)
        # Forward error rho plus the rounding of the power and the product (4u per factor, and
        # past that the compounded rounding of huge counts: see power_rounding), summed over the
        # group into row 0 of ``inv``.
        inv = np.reciprocal(mag)
        for i, c in enumerate(part):
            inv[i] *= (rho + 4 * _U) * (c.count + 1.0) + power_rounding(c.count)
            if i:
                inv[0] += inv[i]
        if weight is None:
            weight = inv[0]
        else:
            weight += inv[0]
        del inv
        # Powers and products in place: mag becomes the bound on the spectra's moduli.
        for i, c in enumerate(part):
            if c.count > 1:
                live = mag[i] > math.exp(_LOG_TINY / c.count)
                _power(s[i], c.count, live)
                _power(mag[i], c.count, live)
            if i:
                s[0] *= s[i]
                mag[0] *= mag[i]
        if spec is None:
            spec, bound = s[0], mag[0]
        else:
            spec *= s[0]
            bound *= mag[0]
        del s, mag
    assert spec is not None and bound is not None and weight is not None  # comps is not empty
    return spec, bound, weight, log_k, offset


def _rolled_into(out: np.ndarray, x: np.ndarray, shift: int) -> None:
    """out[i] = x[(i + shift) mod n] (np.roll(x, -shift), written into ``out``)."""
    n = len(x)
    out[:n - shift] = x[shift:]
    out[n - shift:] = x[:shift]


def compose(comps: Sequence[Component], h: float, log_eta: float, lam: float = 0.0,
            lower: bool = True) -> tuple[DiscreteProfile, DiscreteProfile | None]:
    """Upper and lower profiles of the composition of ``comps`` on the lattice hZ (without
    ``lower``: the upper one and None, and the lower PLDs are never read).

    ``log_eta`` is the log of the tilted tail mass left outside the window;
    ``lam`` >= 0 is the tilt (see :func:`cumulants.choose_tilt`).
    """
    if single_step(comps):
        _check_lattice(comps, h)
        return _uncomposed(comps[0], h, lower)
    conv = convolve(comps, h, log_eta, lam, lower=lower)
    assert conv is not None
    out = []
    for j, side in enumerate(("upper", "lower")[:conv.dens.shape[0]]):
        k_lam = float(conv.log_k[j])
        inf_mass = conv.inf_mass(j)
        if side == "upper":
            c0 = inf_mass + math.exp(conv.log_above(j))
            measure = conv.leak()
        else:
            c0 = inf_mass - conv.clipped()
            measure = conv.tilted_above(j) + conv.tilted_below(j)
        err = float(conv.err[j])
        out.append(DiscreteProfile(h=h, start=conv.j_lo, tilted=conv.dens[j], log_k=k_lam, lam=lam, c0=c0,
                                   log_entry_err=k_lam + math.log(err) if err > 0 else -math.inf,
                                   log_measure_err=k_lam + math.log(measure) if measure > 0 else -math.inf,
                                   upper=side == "upper",
                                   support_top=conv.comps.support_top(side), inf_mass=inf_mass,
                                   above=conv.above_exponents() if side == "upper" else None,
                                   misplaced=misplacement(conv.comps, side, h)))
    return out[0], (out[1] if lower else None)


def misplacement(comps: Sequence[Component], side: str, h: float) -> float:
    """A bound on how far each composed mass of the ``side`` PLDs of ``comps``, composed on the
    lattice hZ, lies from the exact loss j h of its lattice point: sum_i k_i (e_i + x_i |h_i - h|
    / h), x_i the largest |loss| of component i's masses, h_i its spacing (an index j
    is read as j h: see :func:`_check_lattice`) and e_i its own bound.

    The composed mass at index S = sum_i j_i sits at the sum of its parts' losses, each off
    from its j_i h by its e_i: those add over the k_i copies, of whatever sign the parts are,
    so no bound in |S h| alone holds (the parts of a point near 0 may be far from 0). A
    computed composition gives its e_i (:mod:`levels`); a law discretised directly has its
    masses at fl(j h) (u |x| off, u the unit roundoff) or, on a law's lattice ell, at its
    atoms' losses, within u |x| of n ell = j ell / m, itself within u |x| of j h (h is ell / m
    rounded): 2.5 u x_i (DiscreteProfile.POSITION_REL) covers both."""
    total = 0.0
    for c in comps:
        pld = side_pld(c, side)
        ends = pld.support
        size = 0.0 if ends is None else max(abs(pld.start + ends[0]), abs(pld.start + ends[1])) * pld.h
        own = c.misplaced if c.misplaced is not None else POSITION_REL * size
        total += c.count * (own + size * abs(pld.h - h) / h)
    return total * (1.0 + 4.0 * _U * len(comps))


def _check_lattice(comps: Sequence[Component], h: float) -> None:
    """Components composed on the lattice hZ must have been discretised on it (up to the
    rounding of h computed two ways)."""
    if not all(same_lattice(h, c.upper.h) for c in comps):
        raise ValueError(f"components discretised on another lattice than h={h!r}")


def _power(z: np.ndarray, k: int, live: np.ndarray) -> None:
    """z ** k in place where ``live``, and 0 elsewhere (where the caller found |z|^k below
    about 1e-300: a self-composed spectrum is negligible at most frequencies).

    By binary exponentiation over whole arrays (of the live points where they are fewer than
    half): numpy's power takes exp(k log z) point by point for a complex array and k >= 100
    (7.2 ms on 19,201 points at k = 3200, against 0.30 ms for the 13 products here), and
    pow() point by point for a real one (1.0 against 0.4 ms on 32,768 points at k = 31).
    Each complex product rounds by at most sqrt(5) u relatively (Brent, Percival and
    Zimmermann 2007), each real one by u, and the chain's relative errors add up to at most
    (k - 1) times that to first order: within the 4u per factor that :func:`_row_spectrum`
    charges, and compounded past it for counts near 2^52 (see :func:`power_rounding`). A real z
    is the bound on the moduli, so its power is then scaled up past its rounding, by
    1 + 2ku (above expm1(ku) >= (1 + u)^(k - 1) - 1 while ku <= 1.25, and expm1(ku) beyond). Every
    |z| <= 1 (spectra of normalised measures, their moduli capped at 1) and every live |z|^k
    is above 1e-300, so no intermediate power overflows or loses precision to underflow."""
    np.copyto(z, 0.0, where=~live)
    idx = np.flatnonzero(live)
    if idx.size == 0 or k < 2:
        return
    if 2 * idx.size >= z.size:
        # (the dead points are 0, and stay 0)
        _binary_power(z.copy(), k, z)
    else:
        sub = z[idx]
        _binary_power(sub.copy(), k, sub)
        z[idx] = sub
    if not np.iscomplexobj(z):
        z *= 1.0 + max(2.0 * k * _U, math.expm1(k * _U))


def power_rounding(k: int) -> float:
    """What the relative rounding of :func:`_power`'s z^k needs beyond the first-order 4u per
    factor, (k + 1) 4u, that :func:`_row_spectrum` charges: the chain of products compounds
    to (1 + sqrt(5) u)^(k - 1) - 1 <= expm1(sqrt(5) u (k - 1)) (Brent, Percival and Zimmermann
    2007 for one complex product), which passes (k + 1) 4u once sqrt(5) u k reaches about 0.79,
    at k of about 1.6e15 (at k = 2^52 it is 8.4 against 4). Below that it is 0, and the charge
    is the first-order one bit for bit."""
    return max(0.0, math.expm1(math.sqrt(5.0) * _U * (k - 1.0)) - 4.0 * _U * (k + 1.0))


def _binary_power(base: np.ndarray, k: int, out: np.ndarray) -> None:
    """out = base ** k for an integer k >= 1 by squaring (``base`` is overwritten)."""
    first = True
    while True:
        if k & 1:
            if first:
                np.copyto(out, base)
                first = False
            else:
                np.multiply(out, base, out=out)
        k >>= 1
        if not k:
            return
        np.multiply(base, base, out=base)


#: Powers below e^_LOG_TINY (about 1e-300) are set to zero.
_LOG_TINY = -690.0


def _uncomposed(c: Component, h: float, lower: bool = True) -> tuple[DiscreteProfile, DiscreteProfile | None]:
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
    sides = ((True, 1.0 + LAW_REL), (False, 1.0 - LAW_REL))[:2 if lower else 1]
    for upper, scale in sides:
        pld = c.upper if upper else c.lower
        inf_mass = min(pld.p_inf, 1.0)
        c0 = inf_mass if upper else inf_mass - pld.deficit
        out.append(DiscreteProfile(h=h, start=pld.start, tilted=pld.masses * scale, log_k=0.0, lam=0.0,
                                   c0=min(c0 * scale, 1.0) if c0 > 0 else c0 / scale,
                                   log_entry_err=-math.inf, log_measure_err=-math.inf, upper=upper,
                                   support_top=support_ends([c], "upper" if upper else "lower")[1],
                                   inf_mass=min(inf_mass * (1.0 + LAW_REL), 1.0),
                                   misplaced=misplacement([c], "upper" if upper else "lower", h)))
    return out[0], (out[1] if lower else None)


#: Relative rounding margin on a single step's discrete masses (see :func:`_uncomposed`).
LAW_REL = 1e-9


def _tilt(pld: DiscretePLD, lam: float) -> tuple[np.ndarray, float, float]:
    """Masses tilted by e^{lam x} and normalised, the log of the normaliser M, and a bound r on
    the relative error of each tilted mass times M against w_i e^{lam x_i}.

    The composition is e^{sum_i k_i log M_i} times the composed normalised masses: k copies
    raise a relative error r of the masses to about k r, so it is carried into log K
    (:func:`_row_spectrum`) on each row's side. Untilted, a mass is off by its division and its
    normaliser's logarithm: (2 + |log M|) u. Tilted, each mass passes through exp(log w_i +
    lam x_i - z_max), whose argument is off by u (3 |log w_i| + 4 |lam x_i| + 2 |z_max|) (the
    logarithm, x_i's own rounding and the product, the sum, the shift), and exp and the
    division add 2u; log M = z_max + log(tot) adds (|z_max| + |log tot| + 1) u, with
    |log w_i| <= max(|z_min|, |z_max|) + |lam x_i| over the positive masses' exponents z. (A
    mass that leaves the normal floats is off by at most 2^-1074 of M, which k copies of N
    points raise to k N 2^-1074, far below the e^{_LOG_TINY} per entry that :func:`convolve`
    adds to its error bound.)"""
    w = pld.masses
    if lam == 0.0:
        tot = float(w.sum())
        if not tot > 0:
            return w, -np.inf, 0.0
        return w / tot, math.log(tot), _U * (2.0 + abs(math.log(tot)))
    # One array, transformed in place (the steps of log w + lam x, exp(z - max z), / sum).
    with np.errstate(divide="ignore"):
        z = np.log(w)
    x = pld.losses
    x *= lam
    z += x
    zmax = float(z.max())
    zmin = float(np.min(z, initial=zmax, where=z > -np.inf))
    z -= zmax
    np.exp(z, out=z)
    tot = float(z.sum())
    z /= tot
    top = abs(lam) * max(abs(pld.start), abs(pld.start + len(w) - 1)) * pld.h
    log_w = max(abs(zmin), abs(zmax)) + top
    rel = _U * (3.0 * log_w + 4.0 * top + 3.0 * abs(zmax) + abs(math.log(tot)) + 4.0)
    return z, zmax + math.log(tot), rel


def _fold_into(row: np.ndarray, masses: np.ndarray) -> None:
    """Write ``masses`` into ``row`` of length n, wrapped around modulo n, zeros elsewhere
    (every entry is written: ``row`` may hold a previous call's values)."""
    n = len(row)
    if len(masses) <= n:
        row[:len(masses)] = masses
        row[len(masses):] = 0.0
    else:
        row[:] = 0.0
        row += np.bincount(np.arange(len(masses)) % n, weights=masses, minlength=n)


#: Lattice points transformed per group of components in :func:`_row_spectrum`.
_GROUP_POINTS = 1 << 19
