"""Lattice vectors with certified error bounds, and their products: the arithmetic of random
allocation's epoch laws (:mod:`autoacct.subsampling.allocation_pld`).

The laws are sums of summands on a lattice, their vectors products (convolutions) of vectors,
each kept on its window (:func:`power`): what falls outside is dropped, so the computed vector
approximates a sub-measure of the true one, and each product bounds the mass it dropped
(:attr:`Vec.dropped`). A product a * b is H_a * H_b + (T_a * b + H_a * T_b), H the head of a
vector (its heaviest 2048 consecutive entries) and T the rest: the heads are convolved directly
(:func:`product`), the tails, of small norms, by FFT on a power of two n of points (no
wrap-around). Each vector carries bounds on its error x^ - x = a + f: |a|_1 and |a|_inf for the
errors of the data and of the direct sums, |f|_2 for the FFTs' rounding; and a second, relative
one (:class:`Vec`). For computed a^, b^ every norm propagates as
|e_a * b^ + a * e_b|_p <= |e_a|_p |b^|_1 + |a|_1 |e_b|_p (Young's inequality; |a|_1 <= 1 for
every true vector here: sub-probability laws and E_Q[l] = 1). An FFT product's own rounding is
bounded in 2-norm: with kappa = log2(n) eta / (1 - log2(n) eta) the relative 2-norm error of a
computed FFT (Higham 2002, Theorem 24.2, about 6.7 unit roundoffs; eta = 8 u, u the machine
epsilon (twice the unit roundoff) here and below, allows for the weights and for the library's
FFT not being the textbook radix-2 one), the spectra X^, Y^ of a^, b^ are within
kappa sqrt(n) |a^|_2 (Parseval), their product within a further 3 u |X^||Y^| per frequency (a
complex product), and the inverse transform within kappa of its result, so

    F = (1 + kappa) (kappa A2 B1 g + kappa A1 B2 + 3 u g (1 + kappa) A1 B2) + (kappa + 2 u) A1 B2,

A1 = |a^|_1, A2 = |a^|_2 (B likewise), g = 1 + kappa sqrt(n) (bounding |Y^|_inf <= B1 g).
Clipping a computed entry at 0 and dropping entries do not increase an error. The error of
each entry is at most |a|_inf + |f|_2, and the summed errors of any m entries at most
min(|a|_1, m |a|_inf) + sqrt(m) |f|_2 (Cauchy and Schwarz): the epoch's laws read their bounds
off these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import fft as sfft

from autoacct.exactness import MACHINE_EPSILON

_U = MACHINE_EPSILON
#: Largest relative error of a data entry the relative bound of :class:`Vec` takes (the rest
#: of the entries' errors stays absolute): t summands make it t times as much.
_REL_MOST = 1e-11
#: Relative 2-norm error per level of a computed FFT (Higham 2002, Theorem 24.2: the weights'
#: error mu plus gamma_4 (sqrt(2) + mu), about 6.7 unit roundoffs for weights accurate to one),
#: 16 unit roundoffs (8 machine epsilons) to leave room for the library's FFT.
_ETA = 8.0 * _U
#: Longest head of a vector whose products are summed directly (:func:`product`).
_DIRECT = 2048
#: Entries of a head per block of its direct products (:func:`_direct`).
_BLOCK = 16


@dataclass(frozen=True)
class Vec:
    """A computed non-negative vector x^ (on the lattice indices ``start``, ``start`` + 1, ...) of a
    true one x: the error x^ - x is a + f, with |a|_1 <= ``d1`` and |a|_inf <= ``dinf`` (errors of
    the data, propagated) and |f|_2 <= ``f2`` (the FFTs' rounding, propagated).

    A second bound holds at the same time, entry by entry: x^ - x = alpha x + a' + f' with
    |alpha| <= ``rel``, |a'|_inf <= ``dabs`` and |f'|_2 <= ``f2r`` (the data's and the direct
    sums' errors are relative to the entries they are made of, so they compose relatively: a
    lower law's tail entries of 1e-12 need not lose the largest entry's share, 3e-13 at
    t = 1e4; see :meth:`lower_values`). The upper laws keep the first: a relative error of
    every entry is one of the total mass too, which their mass at +inf would then carry."""

    values: np.ndarray
    start: int
    d1: float
    dinf: float
    f2: float
    rel: float = 0.0
    dabs: float = 0.0
    f2r: float = 0.0
    #: For a product (:func:`product`), an upper bound on the true product's mass outside the
    #: window it was cut to (the mass the window dropped); 0 for data.
    dropped: float = 0.0

    @classmethod
    def of(cls, values: np.ndarray, err: np.ndarray) -> Vec:
        """A vector from index 0 whose entries are off by at most ``err`` (the norms rounded up);
        for the relative bound, ``rel`` is the largest err / x^ up to :data:`_REL_MOST`, and the
        rest of each entry's error beyond rel x^ goes to ``dabs`` (with x^ in place of x: rel x^
        <= rel (x + err), so the error is at most rel x + (1 + rel) err - rel x^, taken whole)."""
        grow = 1.0 + 2.0 * len(err) * _U
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(values > 0.0, err / values, np.inf)
        rel = float(np.max(ratio, initial=0.0, where=ratio <= _REL_MOST)) * (1.0 + 4.0 * _U)
        rest = np.maximum((1.0 + rel) * err - rel * values, 0.0)
        # (each of rest's two products and its difference one rounding: within 4 u rel x^)
        dabs = (float(np.max(rest, initial=0.0)) * (1.0 + 4.0 * _U)
                + 4.0 * _U * rel * float(np.max(values, initial=0.0)))
        return cls(values, 0, float(np.sum(err)) * grow, float(np.max(err, initial=0.0)), 0.0, rel, dabs)

    @property
    def indices(self) -> np.ndarray:
        return self.start + np.arange(len(self.values), dtype=float)

    def sum_error(self) -> float:
        """A bound on the sum of the absolute errors of the entries (|x|_1 <= sqrt(len) |x|_2)."""
        return (self.d1 + math.sqrt(len(self.values)) * self.f2) * (1.0 + 1e-9)

    def entry_error(self) -> float:
        """A bound on the error of each entry (|x|_inf <= |x|_1 and |x|_inf <= |x|_2)."""
        return (self.dinf + self.f2) * (1.0 + 1e-9)

    def lower_values(self) -> np.ndarray:
        """Lower bounds on the true entries, the larger of the two bounds': x^ less the entry
        error, and (x^ - dabs - |f'|_2) / (1 + rel); each rounded down."""
        plain = self.values - self.entry_error()
        relative = (self.values - (self.dabs + self.f2r) * (1.0 + 1e-9)) / (1.0 + self.rel)
        return np.maximum(plain, relative) * (1.0 - 4.0 * _U)

    def upper_values(self) -> np.ndarray:
        """Upper bounds on the true entries: x^ plus the entry error, or (x^ + dabs + |f'|_2) /
        (1 - rel), the smaller; each rounded up."""
        plain = self.values + self.entry_error()
        relative = (self.values + (self.dabs + self.f2r) * (1.0 + 1e-9)) / (1.0 - self.rel)
        return np.minimum(plain, relative) * (1.0 + 4.0 * _U)


def _head(x: np.ndarray) -> tuple[int, int]:
    """The slice [i, j) of at most :data:`_DIRECT` entries of a non-negative vector holding the
    most mass (where its products are computed directly)."""
    if len(x) <= _DIRECT:
        return 0, len(x)
    cum = np.concatenate(([0.0], np.cumsum(x)))
    i = int(np.argmax(cum[_DIRECT:] - cum[:-_DIRECT]))
    return i, i + _DIRECT


def _direct(ha: np.ndarray, hb: np.ndarray) -> tuple[np.ndarray, int]:
    """(ha * hb computed, m) where each computed entry is within gamma_m = m u / (1 - m u) of
    the sum of its products' magnitudes (ha, hb >= 0).

    ha is cut into blocks of :data:`_BLOCK` entries: each block's product with hb (np.convolve)
    has entries that are sums of at most _BLOCK products, each product and addition one
    rounding, so within gamma_BLOCK whatever the order of the additions (every product passes
    through at most _BLOCK roundings; Higham 2002, section 3.1). The shifted block products are
    then summed pairwise, a tree of depth h = ceil(log2(blocks)), which adds h roundings
    to every product's path (Higham 2002, section 4.2), so m = _BLOCK + h
    ((1 + theta_j)(1 + theta_k) = 1 + theta_(j+k), Higham 2002, Lemma 3.3). A single np.convolve
    of the heads gave m = len(head) + 1, up to 2049: its 1-norm error, about 4.5e-13 per
    product, doubled with every squaring of the binary powering and put 1e-9 of mass at +inf
    in an epoch of t = 1000 steps."""
    blocks = [ha[i:i + _BLOCK] for i in range(0, len(ha), _BLOCK)]
    width = len(ha) + len(hb) - 1
    rows = np.zeros((len(blocks), width))
    for j, block in enumerate(blocks):
        rows[j, j * _BLOCK:j * _BLOCK + len(block) + len(hb) - 1] = np.convolve(block, hb)
    depth = 0
    while rows.shape[0] > 1:
        if rows.shape[0] % 2:
            rows = np.vstack((rows, np.zeros((1, width))))  # (adding 0 is exact)
        rows = rows[0::2] + rows[1::2]
        depth += 1
    return rows[0], min(_BLOCK, len(ha)) + depth


def _fft_error(n: int, a1: float, a2: float, b1: float, b2: float) -> float:
    """A bound on the 2-norm of the rounding error of ifft(fft(a) fft(b)) on n points (a power of 2)
    for vectors with 1-norms a1, b1 and 2-norms a2, b2 (see the module docstring)."""
    lg = math.log2(n)
    kappa = lg * _ETA / (1.0 - lg * _ETA)
    g = 1.0 + kappa * math.sqrt(n)
    return ((1.0 + kappa) * (kappa * a2 * b1 * g + kappa * a1 * b2 + 3.0 * _U * g * (1.0 + kappa) * a1 * b2)
            + (kappa + 2.0 * _U) * a1 * b2)


def _norms(x: np.ndarray, n: int) -> tuple[float, float]:
    """Upper bounds on the 1-norm and the 2-norm of the non-negative vector x (n >= its length)."""
    grow = 1.0 + 2.0 * n * _U
    return float(np.sum(x)) * grow, float(np.sqrt(np.sum(x * x))) * grow


def product(a: Vec, b: Vec, window: tuple[int, int]) -> Vec:
    """The entries of the convolution a * b at the lattice indices in ``window`` (those outside
    are dropped: the true vector restricted likewise is a sub-measure), with its error bounds.

    With H the heads of a and b (:func:`_head`) and T = a - H their tails, a * b is H_a * H_b,
    summed directly (:func:`_direct`: every entry off by a relative gamma_m of its non-negative
    products' sum, m about 23; its 1- and inf-norm join the data errors), plus
    T_a * b + H_a * T_b by FFT, whose rounding is bounded (module docstring) from the norms of
    the small tails. The data errors propagate by
    |e_a * b^ + a * e_b|_p <= |e_a|_p |b^|_1 + |a|_1 |e_b|_p (every p; |a|_1 <= 1)."""
    length = len(a.values) + len(b.values) - 1
    n = 1 << max(1, math.ceil(math.log2(length)))
    start = a.start + b.start
    lo, hi = max(window[0], start), min(window[1], start + length - 1)
    (ai, aj), (bi, bj) = _head(a.values), _head(b.values)
    ha, hb = a.values[ai:aj], b.values[bi:bj]
    ta, tb = a.values.copy(), b.values.copy()
    ta[ai:aj] = 0.0
    tb[bi:bj] = 0.0
    spectrum = sfft.fft(ta, n) * sfft.fft(b.values, n) + sfft.fft(np.pad(ha, (ai, 0)), n) * sfft.fft(tb, n)
    full = sfft.ifft(spectrum).real
    direct, m = _direct(ha, hb)
    full[ai + bi:ai + bi + len(direct)] += direct
    c = np.maximum(full[lo - start:hi - start + 1], 0.0)
    a1, a2 = _norms(a.values, n)
    b1, b2 = _norms(b.values, n)
    ta1, ta2 = _norms(ta, n)
    tb1, tb2 = _norms(tb, n)
    ha1, ha2 = _norms(ha, n)
    fft_err = _fft_error(n, ta1, ta2, b1, b2) + _fft_error(n, ha1, ha2, tb1, tb2)
    gamma = m * _U / (1.0 - m * _U)
    h1 = ha1 * float(np.sum(hb)) * (1.0 + 2.0 * n * _U)
    # The direct sums' rounding, and that of adding them to the FFT part (one rounding of each
    # entry, at most the direct part's and the tails' 1-norms).
    add1 = gamma * h1 + 2.0 * _U * (h1 + ta1 * b1 + ha1 * tb1)
    addinf = (gamma + 2.0 * _U) * float(np.max(np.abs(full), initial=0.0)) * (1.0 + gamma)
    slack = 1.0 + 1e-9
    # The relative bound: a (1 + alpha) * b (1 + beta) is within (1 + rel_a)(1 + rel_b) of a * b
    # entry by entry (non-negative terms); the direct sums add gamma of the computed products'
    # sum (at most the whole computed product, itself within these bounds), the one rounding
    # of each entry's final addition 2 u of it; the errors a'_a * b^ + a (1 + alpha) * a'_b
    # (|a|_1 <= 1) stay absolute, f'_a * b^ + a (1 + alpha) * f'_b and the FFTs' own rounding
    # in 2-norm, each grown by the same roundings.
    grown = 1.0 + gamma + 2.0 * _U
    rel = ((1.0 + a.rel) * (1.0 + b.rel) * grown - 1.0) * slack
    dabs = (a.dabs * b1 + (1.0 + a.rel) * b.dabs) * grown * slack
    f2r = (fft_err + a.f2r * b1 + (1.0 + a.rel) * b.f2r) * grown * slack
    d1, dinf, f2 = ((a.d1 * b1 + b.d1 + add1) * slack, (a.dinf * b1 + b.dinf + addinf) * slack,
                    (fft_err + a.f2 * b1 + b.f2) * slack)
    # The true product's mass outside the window: the computed entries there (signed, summed
    # with a bound on their own rounding) and their errors, by either model (the FFTs' part
    # over m entries at most sqrt(m) times its 2-norm bound), or split as in _outside_error.
    outside = np.concatenate((full[:lo - start], full[hi - start + 1:length]))
    m_out = float(outside.size)
    out_sum = float(np.sum(outside)) + 2.0 * m_out * _U * float(np.sum(np.abs(outside)))
    root = math.sqrt(m_out)
    # (the direct part's entries sit at positions ai + bi onwards)
    at = ai + bi
    direct_out = float(np.sum(np.abs(direct[:max(lo - start - at, 0)]))
                       + np.sum(np.abs(direct[max(hi - start + 1 - at, 0):])))
    own = root * fft_err + (gamma * (1.0 + gamma) + 2.0 * _U) * direct_out + 2.0 * _U * float(np.sum(np.abs(outside)))
    split = out_sum + own + _outside_error(a, b, lo - start, hi - start)
    dropped = max(min((out_sum + m_out * dabs + root * f2r) / (1.0 - rel), out_sum + min(d1, m_out * dinf) + root * f2,
                      split), 0.0) * slack
    return Vec(c, lo, d1, dinf, f2, rel, dabs, f2r, dropped)


def _outside_error(a: Vec, b: Vec, first: int, last: int) -> float:
    """A bound on |sum over i outside [first, last] of (a^ * b^ - a * b)(i) less the product's
    own rounding|, positions i relative to the product's start, a^ = a + e_a and b^ = b + e_b the
    computed factors and a, b the true ones.

    a * b = a^ * b^ - e_a * b^ - a^ * e_b + e_a * e_b, and the sum of e_a * b^ over the outside
    is sum_k e_a(k) B(k), B(k) the mass of b^ at positions j with k + j outside (prefix and
    suffix sums of b^, no cancellation), so at most |e_a|_2 |B|_2 (Cauchy and Schwarz), where
    |e_a|_2 <= sqrt(|a-part|_1 |a-part|_inf) + |f_a|_2 (Hoelder); likewise a^ * e_b; and
    |e_a * e_b|_1 <= |e_a|_1 |e_b|_1. B is small where the window lies far beyond what the parts
    reach (the summands' tails), so this is far below the sqrt(m) |f|_2 of the plain bound:
    the product's own FFT rounding (in the caller) is the larger part."""
    def outside_mass(x: np.ndarray, span: int) -> np.ndarray:
        # For each position k of the other factor (0..span-1): the mass of x at j with k + j
        # outside [first, last]; x >= 0, its prefix and suffix sums each within n u of their
        # own size.
        k = np.arange(span)
        prefix = np.concatenate(([0.0], np.cumsum(x)))
        suffix = np.concatenate((np.cumsum(x[::-1])[::-1], [0.0]))
        below = prefix[np.clip(first - k, 0, len(x))]
        above = suffix[np.clip(last - k + 1, 0, len(x))]
        return (below + above) * (1.0 + 2.0 * (len(x) + 2) * _U)

    def norm2(v: Vec) -> float:
        return math.sqrt(v.d1 * v.dinf) + v.f2

    def norm1(v: Vec) -> float:
        return v.d1 + math.sqrt(len(v.values)) * v.f2

    def length(x: np.ndarray) -> float:
        # (squares and a pairwise sum, not a BLAS dot: see the README's Development section)
        return math.sqrt(float(np.sum(x * x)) * (1.0 + 2.0 * (len(x) + 2) * _U))

    from_a = norm2(a) * length(outside_mass(b.values, len(a.values))) if norm2(a) > 0.0 else 0.0
    from_b = norm2(b) * length(outside_mass(a.values, len(b.values))) if norm2(b) > 0.0 else 0.0
    return (from_a + from_b + norm1(a) * norm1(b)) * (1.0 + 1e-9)


def power(a: Vec, k: int, window: Callable[[int], tuple[int, int]],
          windows: list[tuple[int, int, float, int, float]] | None = None) -> Vec:
    """a^{*k} (k >= 1 summands) by binary powering, each partial sum of j summands kept on
    ``window(j)`` (its first and last lattice index); each window applied is appended to
    ``windows`` as (j, first, last, copies, dropped), copies the number of partial sums of the k
    summands it was applied to (a square of j = 2^i summands enters the result through every
    power 2^L >= j of k's binary digits, as 2^L / j copies, floor(k / j) in all; each product of
    the result chain once) and dropped the bound on the mass that product's window cut
    (:attr:`Vec.dropped`)."""
    result: Vec | None = None
    count, square, size, total = 0, a, 1, k

    def kept(x: Vec, y: Vec, j: int, copies: int) -> Vec:
        lo, hi = window(j)
        out = product(x, y, (lo, hi))
        if windows is not None:
            windows.append((j, lo, hi, copies, out.dropped))
        return out

    while True:
        if k & 1:
            result = square if result is None else kept(result, square, count + size, 1)
            count += size
        k >>= 1
        if not k:
            break
        square = kept(square, square, 2 * size, total // (2 * size))
        size *= 2
    assert result is not None
    return result
