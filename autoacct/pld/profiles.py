"""Profiles: queries on a composed discrete PLD (delta(eps), eps(delta), the tradeoff curve).
The Chernoff profile, from cumulants alone, is in :mod:`chernoff`.

A :class:`DiscreteProfile` holds the composed masses in tilted form,
p_i = p~_i e^{K - lam x_i} at losses x_i = (start + i) h, and represents

    delta(eps) = sum_{x_i > eps} p_i (1 - e^{eps - x_i}) + c0 +/- E(eps),

clipped to [0, 1], where c0 is the mass at +inf (plus, for an upper profile,
the mass above the window) and E(eps) the accounted rounding and wrap-around
error (added for an upper profile, subtracted for a lower one). Negative computed
masses are set to 0; the error term covers them.

The error has two parts, each weighed as delta weighs a mass at x > eps, by
1 - e^{eps - x}, which is at most x - eps: every computed mass may be off by
e_i <= E1 e^{-lam x_i} (the FFT's rounding), and a measure nu of unknown place
may be missing or extra (wrap-around, leaks), with int e^{lam x} dnu <= E2. With
f(u) = e^{-lam u} (1 - e^{-u}), the error at eps is at most

    E(eps) = e^{-lam eps} (E1 sum_{x_i > eps} f(x_i - eps) + E2 sup_u f(u)),

bounded in closed form by :mod:`weights` over the window's points above eps. A
window narrow in loss or a steep tilt (lam >> 1) weighs the rounding of its N
masses far below N: a tiny eps, decided near the middle of a narrow law, is then
not held back by the FFT's rounding.

The true profile is non-increasing in eps, so an upper profile may be replaced
by its running minimum from the left and a lower profile by its running
maximum from the right; both stay valid and become monotone, which makes
eps(delta) well defined. Within a cell the sum is A - e^eps B with suffix sums
A and B, so eps(delta) is solved in closed form once the cell is found, with
the error term frozen at the cell's safe end.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.pld import weights
from autoacct.pld.cumulants import rounded_exponent
from autoacct.pld.weights import Width

_EPS = MACHINE_EPSILON
_ULP = 8 * _EPS
#: Points of the coarse scan that brackets a crossing before bisection.
_SCAN = 257
#: Below this an upper bound's terms may be subnormal or underflowed (see DiscreteProfile._raw).
_SMALL = 1e-300
#: What an upper bound below _SMALL adds for the absolute error of its subnormal terms.
_UNDERFLOW_MARGIN = 1e-320
#: Points of one chunk of :attr:`DiscreteProfile.grid_deltas`.
_CHUNK = 1 << 16
#: Above this many points, :meth:`DiscreteProfile.delta` reads suffix sums from the block
#: sums rather than keeping whole arrays of them.
_FULL_SUMS = 1 << 20
#: Up to this many points the eps(delta) solve reads the whole suffix sums of
#: :attr:`DiscreteProfile._sums` rather than the block sums (see :meth:`DiscreteProfile._sums_of`).
_SOLVE_FULL_SUMS = 1 << 15
#: How far, relative to its largest |loss|, a lattice point of a law discretised directly may
#: lie from the loss it stands for (see :attr:`DiscreteProfile.slack`): 2.5 unit roundoffs.
POSITION_REL = 1.25 * _EPS


class SolvedEpsilon:
    """eps(delta) for arrays of delta, each solved once by the subclass's ``_solve_once`` and
    kept in its ``_solved`` dict: the accountant asks each profile for the same delta several
    times (settling directions, then the best bounds)."""

    _solved: dict[float, float]

    def epsilon(self, delta: float | np.ndarray) -> np.ndarray:
        """eps(delta) for each delta (an upper profile's safe upper answer, a lower profile's
        lower one; see ``_solve_once``)."""
        if type(delta) is float:
            # (one delta, as the accountant asks: the same value, without the arrays)
            return np.float64(self._solve(delta))
        delta = np.asarray(delta, dtype=float)
        out = np.array([self._solve(float(d)) for d in np.atleast_1d(delta).ravel()])
        return out.reshape(delta.shape) if delta.shape else out[0]

    def _solve(self, target: float) -> float:
        if target not in self._solved:
            self._solved[target] = self._solve_once(target)
        return self._solved[target]

    def _solve_once(self, target: float) -> float:
        raise NotImplementedError


@dataclass(frozen=True)
class DiscreteProfile(SolvedEpsilon):
    """delta(eps) of a composed discrete PLD; ``upper`` says which side of the truth it bounds."""

    h: float
    start: int
    tilted: np.ndarray = field(repr=False)
    log_k: float
    lam: float
    c0: float
    #: log E1: each composed mass p_i is within E1 e^{-lam x_i} of its exact value.
    log_entry_err: float
    #: log E2: a measure of unknown place with int e^{lam x} dnu <= E2 may be missing (upper)
    #: or extra (lower).
    log_measure_err: float
    upper: bool
    #: Largest finite loss of the composed upper PLD and its mass at +inf: at and
    #: beyond that loss the true delta is at most that mass.
    support_top: float = np.inf
    inf_mass: float = 1.0
    #: For an upper profile, a bound on the composed mass below the window, which bounds
    #: delta below it together with the window's masses; 1 (the default) where none was
    #: computed: delta there is then bounded by 1 only.
    below_mass: float = 1.0
    #: For an upper profile, exponents t > 0 and upper bounds K(t) on the log moment
    #: generating function of its composed measure (None where none were computed): beyond
    #: the window only the mass above eps counts, so delta there is also at most the mass at
    #: +inf plus min_t e^{K(t) - t eps} (c0 bounds the mass above the window's top only).
    above: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)
    #: How far, at most, each mass lies from the exact loss (start + i) h of its point (the
    #: composer's :func:`~autoacct.pld.compose.misplacement`); None: as for one law's lattice.
    misplaced: float | None = None
    #: eps(delta) already solved, by delta: the accountant asks each profile for the same
    #: delta several times (settling directions, then the best bounds).
    _solved: dict[float, float] = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def x(self) -> np.ndarray:
        return (self.start + np.arange(len(self.tilted))) * self.h

    @cached_property
    def slack(self) -> float:
        """A bound D on how far each lattice point x_i lies from the loss whose mass it holds.

        The masses sit at losses j h* for a spacing h* that h rounds (a lattice law's atoms at
        multiples of its lattice ell, h = ell / m rounded): |h - h*| <= u h, and x_i = (start
        + i) h is a product rounded by another u |x_i| (u the unit roundoff), so each point is
        off by at most (2u + u^2) |x_i| <= 2.5 u max |x|. The composed top of k runs of
        randomized response, k eps0 = 77253.5, was 7e-12 low, which moved delta 1e-3
        relatively at an eps 1e-9 below it. Every mass moves by at most D, so the true profile
        at eps is at most the lattice's at eps - D and at least it at eps + D: reads and
        solves are shifted by D (and rounded outward).

        A composition's masses each sit at a sum of their parts' losses, each part off by
        its own rounding: ``misplaced`` bounds their sum (whose parts may be far larger than
        any loss in the window), and the product x_i = (start + i) h adds u |x_i|.
        """
        if len(self.tilted) == 0:
            return 0.0
        size = max(abs(float(self.x[0])), abs(float(self.x[-1])))
        if self.misplaced is None:
            return POSITION_REL * size
        return (self.misplaced + 0.5 * _EPS * size) * (1.0 + 2.0 * _EPS)

    def _read_at(self, eps: np.ndarray) -> np.ndarray:
        """Where the lattice's profile bounds the true one at eps (:attr:`slack`): eps - D for
        an upper profile, eps + D for a lower one, the sum rounded outward."""
        if self.slack == 0.0:
            return eps
        if self.upper:
            return np.nextafter(eps - self.slack, -np.inf)
        return np.nextafter(eps + self.slack, np.inf)

    @cached_property
    def _sums(self) -> tuple[np.ndarray, np.ndarray]:
        """S_i = sum_{j >= i} p~_j e^{-lam (x_j - x_i)} and T_i, the same with lam + 1 (index N: 0).

        A stable backward recursion S_i = p~_i + e^{-lam h} S_{i+1} (a linear
        filter) of sums of at most the total tilted mass.
        """
        # Imported here: scipy.signal costs about 0.65 s to load, and a command that never
        # reads a composed profile (the CLI's help, a closed-form answer) should not pay it.
        from scipy.signal import lfilter

        w = np.maximum(self.tilted, 0.0)[::-1]
        out = (np.zeros(len(w) + 1), np.zeros(len(w) + 1))
        for rate, sums in zip((self.lam, self.lam + 1.0), out):
            sums[:-1] = lfilter([1.0], [1.0, -np.exp(-rate * self.h)], w)[::-1]
        return out

    @cached_property
    def _blocks(self) -> tuple[int, np.ndarray, np.ndarray]:
        """What the solve reads the sums of :attr:`_sums` from without making them all: the
        stride s (index 1 + b s starts block b of the weights at indices 1, 2, ..., see
        :meth:`_block_weights`), and S and T at each block's start (and 0 at index N). The
        blocks' weights are not kept: a copy of the masses, 32 MiB at 2^22 points.

        With r = e^{-lam h} (the recursion's factor), block b's own sum is
        P_b = sum_c w_(1+bs+c) r^c, the powers made by repeated multiplication, and the
        starts follow by the recursion S_(1+bs) = P_b + r^s S_(1+(b+1)s) over the blocks.
        Against the exact sums each P_b is off by at most (2c - 1) roundoffs for its power
        r^c (r's own rounding c times, c - 1 products), one for each product and s - 1
        for the sum, fewer than 3 s in all, and each step of the recursion over
        the blocks adds at most 2 s + 2 (r^s, the product and the sum), so a start with t
        terms after it is off by at most 3 t roundoffs for s >= 2 (for s = 1 this is the
        recursion of :attr:`_sums` itself): the bound :meth:`_rounding` charges.
        """
        from scipy.signal import lfilter

        w = np.maximum(self.tilted[1:], 0.0)
        s = self._stride
        nb = -(-len(w) // s)
        padded = np.zeros((nb, s))
        padded.ravel()[:len(w)] = w
        del w
        r = self._factors
        powers = np.ones((2, s))
        powers[:, 1:] = r[:, None]
        np.cumprod(powers, axis=1, out=powers)
        blocks = np.einsum("bs,rs->rb", padded, powers)
        starts = [np.append(lfilter([1.0], [1.0, -powers[j, -1] * r[j]], blocks[j, ::-1])[::-1], 0.0)
                  if nb else np.zeros(1) for j in range(2)]
        return s, starts[0], starts[1]

    def _block_weights(self, b: int) -> np.ndarray:
        """The weights max(p~_i, 0) of block b (:attr:`_blocks`), zeros past the last."""
        s = self._blocks[0]
        w = np.zeros(s)
        part = self.tilted[1 + b * s:1 + (b + 1) * s]
        w[:len(part)] = np.maximum(part, 0.0)
        return w

    @cached_property
    def _factors(self) -> np.ndarray:
        """The recursion's factors e^{-lam h} and e^{-(lam + 1) h}, as :attr:`_sums` takes them."""
        return np.array([np.exp(-rate * self.h) for rate in (self.lam, self.lam + 1.0)])

    @cached_property
    def _local(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """The sums within the blocks made so far (:meth:`_block_suffix`), by block."""
        return {}

    def _block_suffix(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """S and T at the indices 1 + b s, ..., 1 + (b + 1) s of block b (:attr:`_blocks`):
        the recursion of :attr:`_sums` run down the block from the next block's start
        (3 roundoffs per term, as there)."""
        from scipy.signal import lfilter

        if b not in self._local:
            _, sa, sb = self._blocks
            weights = self._block_weights(b)
            out = []
            for r, starts in zip(self._factors, (sa, sb)):
                down = lfilter([1.0], [1.0, -r], weights[::-1], zi=[r * starts[b + 1]])[0]
                out.append(np.append(down[::-1], starts[b + 1]))
            self._local[b] = out[0], out[1]
        return self._local[b]

    def _sums_at(self, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """S_i and T_i of :attr:`_sums` (within their rounding bound) at indices 0 <= i <= N
        (a 1-d array), from the block starts and the blocks the indices fall in (:attr:`_blocks`)."""
        i = np.asarray(i)
        if np.any(i == 0):
            # S_0 = w_0 + r S_1: one more term of the recursion (within its rounding bound).
            at_a, at_b = self._sums_at(np.maximum(i, 1))
            w0 = max(float(self.tilted[0]), 0.0)
            r = self._factors
            return np.where(i == 0, w0 + r[0] * at_a, at_a), np.where(i == 0, w0 + r[1] * at_b, at_b)
        s, sa, sb = self._blocks
        b, c = np.divmod(i - 1, s)
        # Indices past the last weight (i = N) are the final start (0).
        last = len(sa) - 1
        b = np.minimum(b, last)
        c[b == last] = 0
        inside = c > 0
        if not inside.any():
            return sa[b], sb[b]
        out_a, out_b = sa[b], sb[b]
        for blk in np.unique(b[inside]):
            block_a, block_b = self._block_suffix(int(blk))
            at = (b == blk) & inside
            out_a[at], out_b[at] = block_a[c[at]], block_b[c[at]]
        return out_a, out_b

    @cached_property
    def _stride(self) -> int:
        """The blocks' length s of :attr:`_blocks`: _SCAN - 1 blocks span the weights 1..N-1."""
        return max(1, -(-(len(self.tilted) - 1) // (_SCAN - 1)))

    def _sums_of(self, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """S_i and T_i for the solve: from the whole arrays of :attr:`_sums` up to
        _SOLVE_FULL_SUMS points, else from the block sums (:meth:`_sums_at`). Both are the
        recursion of :attr:`_sums` within the same rounding bound. Small grids pay for the
        blocks' bookkeeping more than for two whole recursions: a ledger's solves on 2-24
        thousand points take 0.7-1.1 ms by the blocks, 0.45-0.67 ms by the whole sums;
        at 3.7e4-5e4 points the blocks are faster (0.7-1.3 against 1.7-1.9 ms). Whole sums
        already made (by :meth:`delta`, up to _FULL_SUMS points) are read at any size: the
        blocks would be made on top of them."""
        if len(self.tilted) <= _SOLVE_FULL_SUMS or "_sums" in self.__dict__:
            full = self._sums
            return full[0][i], full[1][i]
        return self._sums_at(i)

    def _log_suffix(self, i: np.ndarray, sums: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
        """log A_i = log sum_{j >= i} p_j and log B_i = log sum_{j >= i} p_j e^{-x_j}
        (p_j = p~_j e^{K - lam x_j}), at the indices ``i`` only; from ``sums``, the sums
        S_i and T_i at those indices, when given."""
        if sums is None:
            full_a, full_b = self._sums
            sums = full_a[i], full_b[i]
        x = (self.start + np.asarray(i)) * self.h
        with np.errstate(divide="ignore"):
            return (np.log(sums[0]) + self.log_k - self.lam * x,
                    np.log(sums[1]) + self.log_k - (self.lam + 1.0) * x)

    @cached_property
    def _suffix(self) -> tuple[np.ndarray, np.ndarray]:
        """log A and log B at every index 0..N."""
        return self._log_suffix(np.arange(len(self.tilted) + 1))

    def floor(self, eps: np.ndarray) -> np.ndarray:
        """The part of the bound that a finer grid does not shrink: accounted rounding and
        wrap-around at ``eps``, plus (upper) the mass above the window."""
        extra = self.c0 - self.inf_mass if self.upper else 0.0
        return self._err(np.asarray(eps, dtype=float)) + max(extra, 0.0)

    def _err(self, eps: Width) -> Width:
        """E(eps) (see the module's docstring), rounded up, at a float or an array of eps:
        non-increasing in eps, so that its value at a cell's left end bounds it over the cell."""
        exp: Callable[[Any], Any] = math.exp if isinstance(eps, float) else np.exp
        least: Callable[[Any, Any], Any] = min if isinstance(eps, float) else np.minimum
        most: Callable[[Any, Any], Any] = max if isinstance(eps, float) else np.maximum
        lam, h = self.lam, self.h
        # Every window point above eps lies within (0, width] of it (one spacing more covers
        # the rounding of the points' positions).
        width = most((self.start + len(self.tilted) - 1) * h - eps + h, 0.0)
        entries = exp(least(self.log_entry_err - lam * eps, 700.0)) * weights.points(lam, h, width,
                                                                                      self._plain_points)
        spread = exp(least(self.log_measure_err - lam * eps, 700.0)) * self._peak
        return (entries + spread) * (1.0 + 16.0 * _EPS)

    @cached_property
    def _peak(self) -> float:
        return weights.peak(self.lam)

    @cached_property
    def _plain_points(self) -> float:
        """sum_{x_i > eps} e^{-lam (x_i - eps)} over the window, each weight bounded by 1: at most
        N, and at most 1 / (1 - e^{-lam h})."""
        n = float(len(self.tilted))
        return n if self.lam <= 0.0 else min(n, 1.0 / -math.expm1(-self.lam * self.h))

    @property
    def error_log_scale(self) -> float:
        """log c with E(eps) <= c e^{-lam eps} at every eps (each mass weighed 1, the measure by
        sup f): the simple form of the error term that :func:`autoacct.risk.pld` exports."""
        entries = self.log_entry_err + math.log(self._plain_points) if self._plain_points > 0 else -math.inf
        log_c = float(np.logaddexp(entries, self.log_measure_err + math.log(self._peak)))
        return log_c + 16.0 * _EPS * (abs(log_c) + 1.0) if math.isfinite(log_c) else log_c

    def error_at(self, eps: float) -> float:
        """E(eps): how far the profile's delta at eps may lie from the exact composition's."""
        return float(self._err(float(eps)))

    def _rounding(self, i: np.ndarray, la: np.ndarray, lb_eps: np.ndarray, mass: np.ndarray) -> np.ndarray:
        """A bound on the floating-point error of A_i - e^eps B_i (lb_eps = eps + log B_i,
        mass = A_i + e^eps B_i as computed).

        The suffix sums are built by a recursion of one multiplication and one addition
        per term over N - i positive terms, so each is off by at most 3 (N - i) unit
        roundoffs of itself; taking them to and from logarithms costs a few roundoffs of
        the logarithm's magnitude. The difference can cancel almost all of A_i (delta far
        below the mass beyond eps), so its error is counted against A_i + e^eps B_i,
        not against the difference.
        """
        n_terms = len(self.tilted) - np.asarray(i)
        # Empty sums (log -inf) are exact zeros: their logarithms' sizes do not count.
        size = np.where(np.isfinite(la), np.abs(la), 0.0) + np.where(np.isfinite(lb_eps), np.abs(lb_eps), 0.0)
        rel = (3.0 * n_terms + 8.0 + 4.0 * size) * _EPS
        with np.errstate(invalid="ignore"):
            return np.where(np.isfinite(mass), rel * mass, 0.0)

    def _raw(self, i: np.ndarray, eps: np.ndarray, err_at: np.ndarray,
             sums: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """delta at ``eps`` using suffix sums from index i (``sums``: S_i and T_i when given)
        and the error term evaluated at ``err_at``."""
        la, lb = self._log_suffix(i, sums)
        lb_eps = eps + lb
        with np.errstate(over="ignore", invalid="ignore"):
            a = np.exp(np.minimum(la, 700.0))
            b = np.exp(np.minimum(lb_eps, 700.0))
            core = a - b
            mass = a + b
        core = np.maximum(np.where(np.isfinite(core), core, 0.0), 0.0)
        margin = self._rounding(i, la, lb_eps, mass)
        if self.upper:
            val = core + margin + self.c0 + self._err(err_at)
            # Below about 1e-308 the exponentials above lose their relative accuracy and, past
            # 5e-324, underflow to 0: each term is then off by at most half the smallest
            # subnormal, which _UNDERFLOW_MARGIN covers many times over. Without it, k = 2000
            # runs of randomized response with log-odds 1e-4 had the upper bound 0 just below
            # their largest loss, where the truth is 8.7e-596.
            val = np.where(val < _SMALL, val + _UNDERFLOW_MARGIN, val)
        else:
            val = core - margin + self.c0 - self._err(err_at)
        return np.clip(val, 0.0, 1.0)

    @cached_property
    def grid_deltas(self) -> np.ndarray:
        """Monotone (non-increasing) delta at every lattice point.

        Made in chunks of _CHUNK points from the right, the recursion of :attr:`_sums`
        carried from one chunk to the next (the same operations, so the same values, as
        over the whole array at once), the running extremum taken after. A chunk's dozen
        temporaries stay in the processor's cache, which made 2^22 points 3x faster than
        whole arrays (70-90 against 230-430 ns a point), and above _FULL_SUMS points the
        suffix sums are not kept: the deltas cost 8 bytes a point, not 24. Up to _FULL_SUMS
        points the chunks read :attr:`_sums`, which :meth:`delta` keeps there anyway.
        """
        from scipy.signal import lfilter

        n = len(self.tilted)
        full = self._sums if n <= _FULL_SUMS else None
        out = np.empty(n)
        carry = np.zeros(2)  # S and T at the index after the chunk (0 past the last)
        for a in reversed(range(0, n, _CHUNK)):
            b = min(a + _CHUNK, n)
            # S_i and T_i at i = a + 1, ..., b: the weights a + 1 .. b - 1 run down from S_b.
            if full is not None:
                sums = [full[0][a + 1:b + 1], full[1][a + 1:b + 1]]
            else:
                sums = []
                w = np.maximum(self.tilted[a:b], 0.0)  # the chunk's weights a .. b - 1
                for j, r in enumerate(self._factors):
                    down = lfilter([1.0], [1.0, -r], w[1:][::-1], zi=[r * carry[j]])[0]
                    sums.append(np.append(down[::-1], carry[j]))
                    carry[j] = w[0] + r * sums[j][0]
            out[a:b] = self._raw(np.arange(a + 1, b + 1), self.x[a:b], self.x[a:b], (sums[0], sums[1]))
        if self.upper:
            return np.minimum.accumulate(out, out=out)
        return np.maximum.accumulate(out[::-1], out=out[::-1])[::-1]

    def delta(self, eps: np.ndarray) -> np.ndarray:
        """delta(eps) for an array of eps (beyond the window: the nearest safe value)."""
        eps = self._read_at(np.asarray(eps, dtype=float))
        n = len(self.tilted)
        i = np.searchsorted(self.x, eps, side="right")
        # Freeze the error term at the cell's safe end: the left end for both sides.
        left = np.where(i > 0, self.x[np.maximum(i - 1, 0)], eps)
        left = np.minimum(left, eps)
        if n > _FULL_SUMS:
            # The suffix sums at i from the block sums the eps solve reads too, not the
            # whole arrays of :attr:`_sums` (16 bytes a point kept, 64 MiB at 2^22 points).
            at = self._sums_at(np.atleast_1d(i).ravel())
            sums = at[0].reshape(i.shape), at[1].reshape(i.shape)
        else:
            # Reads at scattered points, as a split law's solve makes on its terms, visit a
            # block each: the whole arrays are faster (3x on tiny-rate sweep cases).
            full = self._sums
            sums = full[0][i], full[1][i]
        val = self._raw(i, eps, left, sums)
        g = self.grid_deltas
        if self.upper:
            # The running minimum from the left: delta(eps) <= delta at grid points below eps.
            return self._upper_read(eps, i, val, g[np.maximum(i - 1, 0)])
        nxt = np.where(i < n, g[np.minimum(i, n - 1)], 0.0)
        return np.maximum(val, nxt)

    def _upper_read(self, eps: np.ndarray, i: np.ndarray, val: np.ndarray, prev: np.ndarray) -> np.ndarray:
        """An upper profile's delta at eps (in cell i, its own cell's value ``val``) given a
        bound ``prev`` from the lattice points below eps (read where i > 0).

        Below the window every window point lies above eps, so the window's part is its
        whole suffix sum A_0 - e^eps B_0 (val at i = 0), and the mass below the window adds
        at most below_mass (1 where unknown). Beyond the window the Chernoff bound of
        :meth:`_beyond` holds too, and at and beyond the largest finite loss only the mass
        at +inf remains."""
        below = np.minimum(val + self.below_mass, 1.0) if self.below_mass < 1.0 else 1.0
        val = np.where(i > 0, np.minimum(val, prev), below)
        if self.above is not None:
            val = np.minimum(val, self._beyond(eps))
        return np.where(eps >= self.support_top, np.minimum(val, self.inf_mass), val)

    def pointwise(self, eps: np.ndarray) -> np.ndarray:
        """A bound on delta at each eps (1-d) on the same side as :meth:`delta`, from eps's own
        cell and its one lattice neighbour on the safe side (x_{i-1} below eps for an upper
        profile, x_i above it for a lower one), without the running extremum over the whole
        window: the values :meth:`_first_below` reads. The true profile is non-increasing,
        so each neighbour's value bounds delta(eps) as the running extremum does, only less
        tightly where the pointwise values are not monotone (where the rounding allowance
        swamps them). No whole-window array is made: the suffix sums come from the block
        sums above _SOLVE_FULL_SUMS points (:meth:`_sums_of`); on the four terms of 5.3e5 and
        6.5e5 points of case 59 of benchmarks/sweep.py the block sums took 19 ms, the
        monotone deltas and whole sums 235 ms."""
        eps = self._read_at(np.asarray(eps, dtype=float))
        n = len(self.tilted)
        i = np.searchsorted(self.x, eps, side="right")
        left = np.minimum(np.where(i > 0, self.x[np.maximum(i - 1, 0)], eps), eps)
        sums = self._sums_of(i)
        val = self._raw(i, eps, left, sums)
        if not self.upper:
            # x_i's value reads the sums from i + 1; none beyond the window (0 there).
            j = np.minimum(i, n - 1)
            nxt = self._raw(j + 1, self.x[j], self.x[j], self._sums_of(j + 1))
            return np.maximum(val, np.where(i < n, nxt, 0.0))
        # x_{i-1}'s value reads the same sums (from i) at eps = x_{i-1}.
        return self._upper_read(eps, i, val, self._raw(i, left, left, sums))

    def _beyond(self, eps: np.ndarray) -> np.ndarray:
        """An upper bound on delta at each eps at or above the window's top (1 below it): the
        mass at +inf, the Chernoff bound min_t e^{K(t) - t eps} on the mass above eps (the
        mass between the top and eps adds nothing to delta(eps)), and the error term, with
        a few roundoffs of their sum."""
        assert self.above is not None
        t, k = self.above
        out = np.ones(eps.shape)
        at = eps >= (self.start + len(self.tilted)) * self.h
        if at.any() and t.size:
            e = eps[at]
            # (t eps overflows to inf at eps near 1e308: the bound's exponent is then -inf)
            with np.errstate(over="ignore", invalid="ignore"):
                log_p = np.min(rounded_exponent(k[:, None], t[:, None] * e[None, :]), axis=0)
                bound = self.inf_mass + np.exp(np.minimum(log_p, 0.0)) + self._err(e)
            out[at] = bound * (1.0 + 8.0 * _EPS) + _UNDERFLOW_MARGIN
        return out

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays it holds, those its cached properties made on first use
        included (x, the suffix sums and their logarithms, the block sums, the monotone
        deltas: up to 5 times the masses once read). Named one by one: walking every value
        (the solved deltas too) cost a ledger query a tenth of its time."""
        made = self.__dict__
        total = self.tilted.nbytes
        total += sum(made[name].nbytes for name in ("x", "grid_deltas") if name in made)
        total += sum(a.nbytes for name in ("_sums", "_suffix") if name in made for a in made[name])
        if "_blocks" in made:
            total += sum(a.nbytes for a in made["_blocks"][1:])
        total += sum(a.nbytes + b.nbytes for a, b in made.get("_local", {}).values())
        return int(total)

    def cell_ends(self) -> tuple[np.ndarray, np.ndarray]:
        """The bound inside each cell [x_i, x_{i+1}] (i < N - 1) at its two ends, for export.

        Inside the cell the profile is the cell's suffix sums A - e^eps B plus c0, with
        the error term frozen at the left end, as :meth:`delta` evaluates it before its
        running extremum: (its value at x_i, its value at x_{i+1}). For a lower profile
        the bound on the cell lies above its chord in e^eps, so its extremes over the
        cell are at these ends. No number is changed: the same sums as :meth:`delta`.
        """
        i = np.arange(1, len(self.tilted))
        left = self.x[:-1]
        return self._raw(i, left, left), self._raw(i, self.x[1:], left)

    def _solve_once(self, target: float) -> float:
        """Upper profile: the smallest safe eps >= 0 with delta(eps) <= target.
        Lower profile: an eps below which the true delta certainly exceeds target."""
        if not self.upper and self.c0 - self.error_at(0.0) > target:
            # The mass at +inf alone (less the largest error term) exceeds the target.
            return math.inf
        eps = self._solve_on_grid(target)
        # The lattice's answer moved by the points' misplacement (:attr:`slack`), outward.
        if self.slack > 0.0 and math.isfinite(eps):
            eps = (math.nextafter(eps + self.slack, math.inf) if self.upper
                   else max(math.nextafter(eps - self.slack, -math.inf), 0.0))
        if self.upper and target >= self.inf_mass:
            # The largest finite loss is a product of lattice values that carry their own
            # relative rounding (a randomized response's logit(p) may be 0.6 ulp low): it is
            # raised by _ULP relatively (a top of exactly 0, losses that are all 0, stays 0).
            top = self.support_top * (1.0 + _ULP) if self.support_top > 0 else self.support_top
            eps = min(eps, max(top, 0.0))
        return eps

    def _first_below(self, target: float) -> int:
        """An index i with delta(x_i) <= target < delta(x_{i-1}) (n when delta(x_{n-1}) > target).

        A coarse scan of the pointwise values, then bisection between the two scanned
        points around the crossing, without evaluating the whole window. The scan
        takes the first crossing for an upper profile and the last one for a lower
        profile, whose values drop to 0 at the far left where the error term
        (growing like e^{-lam x}) swamps them. Either way the answer is safe: an
        upper eps only needs delta(x_i) <= target, a lower eps only needs
        delta(x_{i-1}) > target (the true profile is non-increasing).
        """
        n = len(self.tilted)

        def values(j: np.ndarray) -> np.ndarray:
            x = (self.start + j) * self.h
            return self._raw(j + 1, x, x, self._sums_of(j + 1))

        # The points whose sums start the blocks of _blocks, and the last point.
        scan = np.append(np.arange(0, n - 1, self._stride), n - 1)
        above = values(scan) > target
        if self.upper:
            below = np.flatnonzero(~above)
            if below.size == 0:
                return n
            if below[0] == 0:
                return 0
            lo, hi = int(scan[below[0] - 1]), int(scan[below[0]])
        else:
            high = np.flatnonzero(above)
            if high.size == 0:
                return 0
            if high[-1] == scan.size - 1:
                return n
            lo, hi = int(scan[high[-1]]), int(scan[high[-1] + 1])
        # The bisection between them, on the values of the whole bracket computed at once
        # (its points are at most n / (_SCAN - 1) + 1).
        base = lo
        inside = values(np.arange(lo, hi + 1)) > target
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if inside[mid - base]:
                lo = mid
            else:
                hi = mid
        return hi

    def _solve_on_grid(self, target: float) -> float:
        n = len(self.tilted)
        i = self._first_below(target)
        if i >= n:
            if self.upper:
                return np.inf
            return max(float(self.x[-1]), 0.0)
        if i == 0:
            # Already below target at the window's first point: that point is a
            # safe upper answer; nothing is known below the window for a lower one.
            return max(float(self.x[0]), 0.0) if self.upper else 0.0
        lo_x = float((self.start + i - 1) * self.h)  # x_{i-1}, as self.x holds it
        la, lb = (float(v[0]) for v in self._log_suffix(np.array([i]), self._sums_of(np.array([i]))))
        err = self.error_at(lo_x)
        const = self.c0 + err if self.upper else self.c0 - err
        # On [x_{i-1}, x_i): delta = A_i - e^eps B_i + const (error frozen at the left end).
        a_i = math.exp(la)
        num = a_i + const - target
        # The rounding of A_i - e^eps B_i near the answer, where e^eps B_i is about A_i - target.
        lb_eps = max(la, lb + lo_x)
        margin = float(self._rounding(np.array(i), np.array(la), np.array(lb_eps),
                                      np.array(a_i + math.exp(min(lb_eps, 700.0)))))
        num += margin if self.upper else -margin
        if num <= 0 or not np.isfinite(lb):
            eps = lo_x
        else:
            eps = float(np.log(num) - lb)
            eps = min(max(eps, lo_x), float((self.start + i) * self.h))
        eps += (_ULP if self.upper else -_ULP) * (abs(eps) + 1.0)
        return max(eps, 0.0)

    def tradeoff(self, alpha: np.ndarray) -> np.ndarray:
        """sup_gamma [1 - delta(log gamma) - gamma alpha], clipped to [0, 1]: 1 - :meth:`power`,
        rounded down. For an upper profile this is a lower bound on the tradeoff function of
        the pair."""
        return np.clip(np.nextafter(1.0 - self.power(alpha), -np.inf), 0.0, 1.0)

    def power(self, alpha: np.ndarray) -> np.ndarray:
        """inf_gamma [delta(log gamma) + gamma alpha], clipped to [0, 1], rounded up.

        For an upper profile this is an upper bound on the largest power (TPR) of a test of
        the pair at level alpha. The infimum is attained at a lattice point, where the
        piecewise-linear convex function of gamma has slope -B crossing -alpha; the error
        term is handled by evaluating the monotone grid values at the breakpoint and its
        neighbours (it perturbs convexity slightly). Summed as delta + gamma alpha, without
        the cancellation of 1 - (1 - delta - gamma alpha), so that a power far below the
        unit roundoff keeps its relative accuracy: e^{x + log alpha} is off by at most
        (|x| + |log alpha| + 2) ulps (x = j h and the sum rounded, then the exponential),
        and the sum by one more.
        """
        alpha = np.asarray(alpha, dtype=float)
        _, lb = self._suffix
        with np.errstate(divide="ignore"):
            la = np.log(alpha)
        nxt = lb[1:]
        i = np.searchsorted(-nxt, -la, side="left")
        i = np.minimum(i, len(self.tilted) - 1)
        best = np.full(alpha.shape, np.inf)
        # The grid value at x_j bounds the true delta at x_j + D (:attr:`slack`), where the
        # bracket's gamma is e^{x_j + D}: one more addition, one more ulp.
        slack = self.slack if self.upper else 0.0
        for shift in (-1, 0, 1):
            j = np.clip(i + shift, 0, len(self.tilted) - 1)
            arg = self.x[j] + slack + la
            with np.errstate(over="ignore", invalid="ignore"):
                term = np.exp(arg)
                term = np.where(term > 0, term * (1.0 + (np.abs(self.x[j]) + np.abs(la) + 3.0) * MACHINE_EPSILON), 0.0)
                val = (self.grid_deltas[j] + term) * (1.0 + MACHINE_EPSILON)
            best = np.minimum(best, np.where(np.isnan(val), np.inf, val))
        return np.clip(best, 0.0, 1.0)
