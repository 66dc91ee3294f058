"""The process-wide cache of discretised laws, and the log-MGF rows kept with them.

A discretised law is a function of the law's value, the spacing, the index range and
whether the cells' halves were computed; :class:`LawCache` keeps the most recently used
ones (a ledger asked again and again, see :mod:`autoacct.accountant`, discretises each law
once), and the answer is the same whether a law comes from here or is computed. Also the
budget charges of making a lower PLD (:func:`charge`), replayed when it is read from here.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np

from autoacct.limits import afford
from autoacct.losses import PrivacyLoss
from autoacct.pld.mgf import log_mgfs_up

if TYPE_CHECKING:
    from autoacct.pld.discretize import DiscretePLD

#: Bytes the process-wide cache of discretised laws may hold (:class:`LawCache`).
LAW_CACHE_BYTES = 64 << 20
#: A law taking more than this share of the cache is discretised without being kept.
_LARGEST_SHARE = 8


#: The budget charges (:func:`~autoacct.limits.afford` arguments) of the lower PLD being made.
_CHARGES: ContextVar[list[tuple[float, float, str]] | None] = ContextVar("autoacct_law_charges", default=None)


def charge(nbytes: float, seconds: float, what: str) -> None:
    """:func:`~autoacct.limits.afford`, recorded for the lower PLD being made (see _Law.lower)."""
    afford(nbytes, seconds, what)
    charges = _CHARGES.get()
    if charges is not None:
        charges.append((nbytes, seconds, what))


class _Law:
    """One discretised law in the cache: its upper PLD and its lower one, made when first
    asked for (from the kept cell masses of the upper one, when those were computed), and
    the log-MGF rows computed from either (:func:`log_mgf_up`)."""

    __slots__ = ("cache", "key", "upper", "made", "make", "rows", "charges")

    def __init__(self, cache: LawCache, key: Hashable, upper: DiscretePLD,
                 make: Callable[[], DiscretePLD] | None) -> None:
        self.cache, self.key, self.upper, self.make = cache, key, upper, make
        self.made: DiscretePLD | None = None
        self.rows: dict[tuple[int, bytes], np.ndarray] = {}
        #: What making the lower PLD charged the running query's budget: charged again each
        #: time it is read from the cache, so that a query's budget, hence its answer, does
        #: not depend on what earlier queries left in the cache.
        self.charges: list[tuple[float, float, str]] = []

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays (a pending lower PLD counts the cell masses kept for it)."""
        n = self.upper.masses.nbytes
        if self.made is not None:
            n += self.made.masses.nbytes
        elif self.make is not None:
            n += _KEPT_ARRAYS * self.upper.masses.nbytes
        return n + sum(r.nbytes for r in self.rows.values())

    def lower(self) -> DiscretePLD:
        """The lower discrete PLD (made once)."""
        if self.made is None:
            if self.make is None:
                raise RuntimeError("a law discretised for its upper PLD alone has no lower one")
            charges: list[tuple[float, float, str]] = []
            token = _CHARGES.set(charges)
            try:
                made = self.make()
            finally:
                _CHARGES.reset(token)
            made.masses.flags.writeable = False  # shared by every query that reads the law

            def keep() -> None:
                self.made, self.make, self.charges = made, None, charges
            self.cache.resized(self, keep)
            return made
        for nbytes, seconds, what in self.charges:
            afford(nbytes, seconds, what)
        return self.made


#: Arrays of the grid's length that ``discretize_lazy`` keeps for the lower PLD (grid points,
#: P- and Q-masses of the cells and of their halves, the connect-the-dots masses), rounded up.
_KEPT_ARRAYS = 7


class LawCache:
    """A bounded, process-wide cache of discretised laws, least recently used out first.

    A discretised law is a function of the law (its class, ``key`` and the attributes the
    discretiser reads), the spacing h and the index range, and of whether the halves of the
    cells were computed (:func:`discretize` computes them for the lower PLD, and its upper
    PLD may then differ from :func:`discretize_upper`'s in the last bits): those are the
    key, so an answer is the same whether a law comes from the cache or is computed. Two
    queries that discretise the same law on the same grid (a ledger asked after every
    hundred steps, whose range follows the count only by powers of 2, see
    ``FFTAccountant._eta``) then discretise it once. Holds at most ``max_bytes`` bytes of
    arrays (discrete PLDs, cell masses kept for a lower PLD, log-MGF rows); a law larger
    than an eighth of that is not kept. Thread-safe.
    """

    def __init__(self, max_bytes: int = LAW_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._laws: OrderedDict[Hashable, _Law] = OrderedDict()
        # The laws kept, by the identity of their discrete PLDs (for log_mgf_up): a kept law
        # keeps its PLDs alive, so an identity stays theirs while listed.
        self._by_pld: dict[int, _Law] = {}
        self._bytes = 0
        self._lock = threading.RLock()
        self.hits = self.misses = 0

    @property
    def nbytes(self) -> int:
        """Bytes held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._laws)

    def clear(self) -> None:
        """Drop every law kept (their values are the same when computed again)."""
        with self._lock:
            self._laws.clear()
            self._by_pld.clear()
            self._bytes = 0

    def law(self, loss: PrivacyLoss, h: float, j_lo: int, j_hi: int, halves: bool,
            make: Callable[[], tuple[DiscretePLD, Callable[[], DiscretePLD] | None]]) -> _Law:
        """The law discretised on the points j h, j_lo <= j <= j_hi: with the halves of
        the cells (upper and lower PLDs) or without (the upper PLD alone); ``make``
        computes it (the upper PLD and the maker of the lower one, or None)."""
        key = (law_key(loss), float(h), int(j_lo), int(j_hi), halves)
        with self._lock:
            found = self._laws.get(key)
            if found is not None:
                self._laws.move_to_end(key)
                self.hits += 1
                return found
            self.misses += 1
        upper, lower = make()
        law = _Law(self, key, upper, lower)
        law.upper.masses.flags.writeable = False  # shared by every query that reads the law
        with self._lock:
            if key not in self._laws and law.nbytes * _LARGEST_SHARE <= self.max_bytes:
                self._laws[key] = law
                self._by_pld[id(law.upper)] = law
                self._bytes += law.nbytes
                self._evict()
        return law

    def resized(self, law: _Law, change: Callable[[], object]) -> None:
        """Apply ``change`` to ``law`` and count the bytes it adds (or frees)."""
        with self._lock:
            kept = self._laws.get(law.key) is law
            before = law.nbytes
            change()
            if kept:
                self._bytes += law.nbytes - before
                if law.made is not None:
                    self._by_pld[id(law.made)] = law
                self._evict()

    def rows_of(self, pld: DiscretePLD) -> _Law | None:
        """The kept law one of whose PLDs ``pld`` is, or None."""
        with self._lock:
            law = self._by_pld.get(id(pld))
            return law if law is not None and (law.upper is pld or law.made is pld) else None

    def _evict(self) -> None:
        """Drop the least recently used laws until the bytes fit (under the lock)."""
        while self._bytes > self.max_bytes and self._laws:
            _, old = self._laws.popitem(last=False)
            self._bytes -= old.nbytes
            for pld in (old.upper, old.made):
                if pld is not None and self._by_pld.get(id(pld)) is old:
                    del self._by_pld[id(pld)]


def law_key(loss: PrivacyLoss) -> Hashable:
    """What a discretised law depends on: the law's class and value key, and the attributes
    the discretisers read beyond its cell masses."""
    err = loss.value_error
    return (type(loss).__module__, type(loss).__qualname__, loss.key, loss.p_inf, loss.p_inf_truncated,
            loss.lattice, loss.has_atoms, loss.purely_atomic, loss.merged_lower,
            np.asarray(err, dtype=float).tobytes())


#: The process-wide cache of discretised laws.
_LAWS = LawCache()


def law_cache() -> LawCache:
    """The process-wide cache of discretised laws (for its size, counts and ``clear``)."""
    return _LAWS


def log_mgf_up(pld: DiscretePLD, theta: np.ndarray) -> np.ndarray:
    """``log_mgfs_up([pld], theta)[0]`` (read-only), kept with the law while ``pld`` is one of
    the cache's discretised laws: the same values either way."""
    theta = np.asarray(theta, dtype=float)
    law = _LAWS.rows_of(pld)
    if law is None:
        return log_mgfs_up([pld], theta)[0]
    key = (0 if pld is law.upper else 1, theta.tobytes())
    row = law.rows.get(key)
    if row is None:
        row = log_mgfs_up([pld], theta)[0]
        row.flags.writeable = False
        _LAWS.resized(law, lambda: law.rows.setdefault(key, row))
    return row


def round_up_pow2(k: int) -> int:
    """The least power of 2 at least k >= 1."""
    return 1 << (int(k) - 1).bit_length()


def round_up_quarter(k: int) -> int:
    """The least integer ceil(2^(j/4)) at least k >= 1: a count rounded up by at most 19%.
    The tail side and the jump scale take it rather than a power of 2, which moved their
    sizing enough to push queries past the time budget (q = 1e-5, sigma = 0.394, k = 1e4:
    [0, 0.99722] with a BudgetWarning instead of [0.997179, 0.997183])."""
    j = math.ceil(4.0 * math.log2(k)) if k > 1 else 0
    while math.ceil(2.0 ** (j / 4.0)) < k:  # log2's rounding
        j += 1
    return max(int(k), math.ceil(2.0 ** (j / 4.0)))


class ValueMemo:
    """A small process-wide memo of values computed from laws (floats and tuples of them),
    by a key of the laws' values and the arguments; least recently used out first."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value kept for ``key``, or ``make()`` (then kept)."""
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        value = make()
        with self._lock:
            self._kept[key] = value
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


#: Tail sides and jump scales of laws (see ``FFTAccountant._tail_side``), by value.
TAILS = ValueMemo(4096)
#: A law object per law value (see ``FFTAccountant._laws_of``): equal laws have equal moments.
LAWS_KEPT = ValueMemo(256)
#: Total-variation bounds of pairs of laws (see ``shortcuts.variation_up``), by value.
VARIATIONS = ValueMemo(4096)


def kept_law(loss: PrivacyLoss) -> PrivacyLoss:
    """The law object kept for ``loss``'s value (``loss`` itself the first time)."""
    kept: PrivacyLoss = LAWS_KEPT.get(law_key(loss), lambda: loss)
    return kept


def clear_caches() -> None:
    """Empty the process-wide caches of the PLD accountant (discretised laws, tail sides):
    answers stay the same, only the work to reach them is done again."""
    law_cache().clear()
    TAILS.clear()
    LAWS_KEPT.clear()
    VARIATIONS.clear()
