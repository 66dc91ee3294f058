"""log E[e^{theta L}] of discrete PLDs on one lattice, every law at every exponent at once.

The tables behind the grid sizing, the tilts and the Chernoff bounds (:mod:`cumulants`,
:mod:`levels`); a kept law's rows are cached with it (:func:`autoacct.pld.lawcache.log_mgf_up`).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.pld.transforms import workspace
from autoacct.products import matmul

if TYPE_CHECKING:
    from autoacct.pld.discretize import DiscretePLD


def log_mgfs(plds: Sequence[DiscretePLD], theta: np.ndarray) -> np.ndarray:
    """log E[e^{theta L}; L finite] of every law at every exponent, shape (len(plds), len(theta)).

    The laws must share one lattice spacing h, up to its rounding (:func:`same_lattice`;
    every law is read on the first one's lattice, as the composer reads it: spacings an ulp
    apart move a mass by that share of its loss). For theta >= 0 each law's sum is
    taken relative to its largest finite loss x_top, sum_d w(x_top - d h) e^{-theta h d},
    and for theta < 0 relative to its smallest one, so every factor is at most 1
    and nothing overflows. Cut into blocks of ``_MGF_BLOCK`` lattice points, every
    law at every exponent is one matrix product: block sums against the table
    e^{-|theta| h c}, c < _MGF_BLOCK, times the block's offset factor. Terms lost to
    underflow are each below 1e-322, and ``_UNDERFLOW`` per point is added back, so
    the values are never below the exact ones by more than rounding.
    """
    theta = np.asarray(theta, dtype=float)
    out = np.full((len(plds), theta.size), -np.inf)
    live = [i for i, pld in enumerate(plds) if pld.support is not None]
    if not live or theta.size == 0:
        return out
    h = plds[live[0]].h
    if not all(same_lattice(h, plds[i].h) for i in live):
        raise ValueError("log_mgfs needs laws on one lattice")
    laws = [plds[i] for i in live]
    starts = np.array([pld.start for pld in laws])
    # (every law live, as a composed law's table asks: its rows are all of out's)
    rows = slice(None) if len(laws) == len(plds) else np.array(live)[:, None]
    for sign in (1.0, -1.0):
        cols = np.flatnonzero(theta >= 0) if sign > 0 else np.flatnonzero(theta < 0)
        if cols.size == 0:
            continue
        at = theta[cols]
        sums = _block_sums(laws, sign > 0, np.abs(at) * h)
        ends = np.array([_support(pld)[1] if sign > 0 else _support(pld)[0] for pld in laws])
        with np.errstate(divide="ignore"):
            out[rows, cols] = np.log(sums) + np.multiply.outer((starts + ends) * h, at)
    return out


def log_mgf_rounding(pld: DiscretePLD, theta: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:func:`log_mgf_roundings` of one law's row ``values``."""
    return log_mgf_roundings([pld], theta, np.asarray(values, dtype=float)[None, :])[0]


def log_mgf_roundings(plds: Sequence[DiscretePLD], theta: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Bounds on |values - log E[e^{theta L}; L finite]|, law by law (rows), for ``values`` =
    log_mgfs(plds, theta) (the masses at the exact points (start + i) h; 0 where a value is not
    finite, -inf exactly). Computed for all laws at once: a schedule of 10,000 distinct steps
    asks it of every law for every table.

    In roundoffs u: a table entry e^{-y} of :func:`_table` or a block's factor, y the exact
    |theta| h d, has its argument off by 2u y (the products |theta| h and its multiple) and
    each of its exponentials and products by u or an ulp (2u): 2y + 7 over an entry and its
    block's factor together, y at most |theta| h (n - 1) over the n points and, where a term
    matters beyond the underflow allowance, e^{-y} >= 1e-324, y <= 746; the products with
    the masses and the sum of 256 of them (any order: nonnegative terms) 256 more, the sum of
    the b blocks b, the allowance one: the sum S within u (2y + 264 + b) relatively. Then
    log S (an ulp of |log S| <= |value| + |theta x|), the end point x = (start + e) h and
    theta x (u |theta x| each) and their sum (u |value|): 2y + 264 + b + 3 |value| + 4 |theta x|,
    taken with x the larger of the support's two ends (measured: 1315 u below the exact value
    at most, on Gaussians' PLDs at |theta| <= 178, where this gives 2.5e4 u)."""
    # Per law: the span (n - 1) h, the constant 272 + b and the larger end |x| (0 for a law
    # without mass, whose row is -inf exactly and gets no margin).
    laws = np.array([(0.0, 0.0, 0.0) if (s := p.support) is None else
                     ((s[1] - s[0]) * p.h, 272.0 + -(-(s[1] - s[0] + 1) // _MGF_BLOCK),
                      max(abs(p.start + s[0]), abs(p.start + s[1])) * p.h) for p in plds])
    span, const, ends = laws[:, 0:1], laws[:, 1:2], laws[:, 2:3]
    theta = np.abs(np.asarray(theta, dtype=float))[None, :]
    with np.errstate(over="ignore"):
        ulps = 2.0 * np.minimum(theta * span, _LAST_EXPONENT) + const + 4.0 * (np.abs(values) + theta * ends)
    # (capped, see cumulants.margin: an infinite value keeps no finite margin to lose)
    return np.where(const > 0.0, np.fmin(ulps * MACHINE_EPSILON, 1e300), 0.0)


def log_mgfs_up(plds: Sequence[DiscretePLD], theta: np.ndarray) -> np.ndarray:
    """:func:`log_mgfs` rounded up, law by law, by :func:`log_mgf_roundings`: every table of
    cumulants bounds a mass from above."""
    rows = log_mgfs(plds, theta)
    return rows + log_mgf_roundings(plds, theta, rows)


def _block_sums(plds: list[DiscretePLD], from_top: bool, rate: np.ndarray) -> np.ndarray:
    """sum_d w(x_end -/+ d h) e^{-rate d} for each law (rows) and rate (columns), with x_end the
    law's last (``from_top``) or first point of positive mass, plus the underflow allowance."""
    ends = [_support(pld) for pld in plds]
    sizes = [hi - lo + 1 for lo, hi in ends]
    blocks = [-(-n // _MGF_BLOCK) for n in sizes]
    starts = [0]
    for b in blocks[:-1]:
        starts.append(starts[-1] + b)
    flat = np.zeros(sum(blocks) * _MGF_BLOCK)
    for pld, (lo, hi), b0, n in zip(plds, ends, starts, sizes):
        seg = pld.masses[lo:hi + 1]
        flat[b0 * _MGF_BLOCK:b0 * _MGF_BLOCK + n] = seg[::-1] if from_top else seg
    rows = flat.reshape(-1, _MGF_BLOCK)
    # Each block's offset factor e^{-rate b B}, tabulated once per block index b.
    factors = np.exp(-np.multiply.outer(np.arange(max(blocks)) * _MGF_BLOCK, rate))
    terms = matmul(rows, _table_for(rate.tobytes()))
    terms *= factors if len(plds) == 1 else factors[np.concatenate([np.arange(b) for b in blocks])]
    return np.add.reduceat(terms, np.array(starts), axis=0) + _UNDERFLOW * np.array(sizes)[:, None]


def _table(rate: bytes, out: np.ndarray | None = None) -> np.ndarray:
    """The table e^{-rate c}, c < _MGF_BLOCK (rows), for each rate (columns) of the float64
    vector ``rate`` as bytes: in the first _MGF_BLOCK len(rate) entries of ``out`` (a fresh
    array without it).

    With c = _MGF_SPLIT a + b, each entry is e^{-rate _MGF_SPLIT a} e^{-rate b}: 2 _MGF_SPLIT
    exponentials per rate instead of _MGF_BLOCK. Its error is that of one exponential of rate c,
    rounded: both are dominated by the rounding of the argument, about x ulps relatively
    for an argument x (measured against 200-bit mpmath over c < 256 and 40 rates: at
    most 0.95 ulp per unit of x, one exponential 0.78); an entry that underflows is below
    e^{-745}, as one exponential's would be.

    The two factors are made once per rate vector (:func:`_factors`)."""
    high, low = _factors(rate)
    n = high.shape[1]
    if out is None:
        out = np.empty(_MGF_BLOCK * n)
    entries = out[:_MGF_BLOCK * n].reshape(_MGF_BLOCK // _MGF_SPLIT, _MGF_SPLIT, n)
    np.multiply(high[:, None, :], low[None, :, :], out=entries)
    return entries.reshape(_MGF_BLOCK, n)


@functools.lru_cache(maxsize=64)
def _factors(rate: bytes) -> tuple[np.ndarray, np.ndarray]:
    """e^{-rate _MGF_SPLIT a} and e^{-rate b}, a, b < _MGF_SPLIT (rows), for each rate (columns)
    of :func:`_table`'s vector, read-only: a query asks the same lattice's exponents again and
    again, and the exponentials cost about two thirds of a small law's block sums."""
    rates = np.frombuffer(rate)
    low = np.exp(-np.multiply.outer(np.arange(_MGF_SPLIT), rates))
    high = np.exp(-np.multiply.outer(np.arange(0, _MGF_BLOCK, _MGF_SPLIT), rates))
    high.flags.writeable = low.flags.writeable = False
    return high, low


def _table_for(rate: bytes) -> np.ndarray:
    """:func:`_table` for :func:`_block_sums`, which reads it before its next call: kept whole
    (read-only) once its rate vector has been asked for _KEEP_ASKED times, as a ledger asked
    again and again asks its lattices' exponents; until then made in this thread's work
    memory (:func:`~autoacct.pld.transforms.workspace`), reused from call to call. A table
    kept at once took fresh memory each time, whose page faults cost about 0.1 ms of its 0.14
    (300 kB at 150 rates), some 0.6 ms of a 7 ms query on new lattices, whose rate vectors
    are asked once or twice; a product costs 5-12 microseconds."""
    with _TABLES_LOCK:
        table = _TABLES.get(rate)
        if table is not None:
            _TABLES.move_to_end(rate)
            return table
        asked = _ASKED.pop(rate, 0) + 1
        if asked < _KEEP_ASKED:
            _ASKED[rate] = asked
            while len(_ASKED) > _ASKED_KEPT:
                _ASKED.popitem(last=False)
    if asked < _KEEP_ASKED:
        return _table(rate, workspace("mgf-table", _MGF_BLOCK * (len(rate) // 8), float))
    table = _table(rate)
    table.flags.writeable = False
    with _TABLES_LOCK:
        _TABLES[rate] = table
        while len(_TABLES) > _TABLES_KEPT:
            _TABLES.popitem(last=False)
    return table


#: Tables kept whole (:func:`_table_for`), by rate vector, least recently used out first; and
#: how often each rate vector not kept was asked for.
_TABLES: OrderedDict[bytes, np.ndarray] = OrderedDict()
_ASKED: OrderedDict[bytes, int] = OrderedDict()
_TABLES_LOCK = threading.Lock()
_TABLES_KEPT = 32
_ASKED_KEPT = 256
_KEEP_ASKED = 3




def _support(pld: DiscretePLD) -> tuple[int, int]:
    """The first and last index of positive mass of a PLD known to have some."""
    if pld.support is None:
        raise ValueError("the discrete PLD has no finite mass")
    return pld.support


#: Lattice points per block of :func:`log_mgfs`, and the factor of :func:`_table`'s split
#: of a point's offset in the block (its square root).
_MGF_BLOCK = 256
_MGF_SPLIT = 16
#: Bound on what underflow takes from one term of :func:`log_mgfs` (a few subnormal ulps).
_UNDERFLOW = 1e-322
#: Past this argument e^{-y} is below 1e-324, a term within the underflow allowance.
_LAST_EXPONENT = 746.0


def same_lattice(h: float, other: float) -> bool:
    """Whether the spacings h and ``other`` are one lattice's, computed two ways (a coarse
    lattice as R (r h) and as (R r) h): within LATTICE_ROUNDING relatively. Composition
    and the moment generating functions then place every mass on the first one's lattice,
    so both read the same measure."""
    return abs(h - other) <= LATTICE_ROUNDING * abs(h)


#: Relative difference of two spacings that :func:`same_lattice` takes for rounding.
LATTICE_ROUNDING = 1e-12
