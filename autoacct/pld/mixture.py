"""The profile of a weighted sum of measures from their profiles (:class:`MixtureProfile`):
the profile of a split law's composition (see :mod:`jumps`), its terms each read at their
own shift, the weights and the sum rounded to the profile's side, and eps(delta) solved from
the terms' pointwise bounds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.pld.profiles import DiscreteProfile, SolvedEpsilon

#: Relative rounding a term's weight and the sum of the terms may carry, rounded up.
SUM_ULPS = 64.0 * MACHINE_EPSILON


@dataclass(frozen=True)
class MixtureProfile(SolvedEpsilon):
    """delta(eps) = sum_j c_j delta_j(eps) + extra: the profile of a weighted sum of measures
    from their profiles; ``upper`` says which side of the truth it bounds (each delta_j is
    on that side, the weights c_j and the sum are rounded that way, and ``extra`` bounds
    what the terms leave out, 0 for a lower profile)."""

    weights: tuple[float, ...]
    terms: tuple[DiscreteProfile, ...]
    extra: float
    upper: bool
    #: Upper bounds on the terms' total masses, which bound their profiles (an upper term
    #: profile says 1 below its window, where it knows nothing else).
    caps: tuple[float, ...]
    #: The eps the terms' tilts aim at.
    target: float
    #: Term j's profile is read at eps + shifts[j] (empty: at eps), the sum rounded to the
    #: profile's side: down for an upper profile, up for a lower one (a profile read further
    #: right is lower). A term whose bulk copies are discretised on a moved lattice
    #: (:attr:`jumps.SplitLaw.offset`) is the profile of the term moved by its copies' offsets;
    #: a lower term may also carry Jensen's shift (:func:`terms._shared_terms`).
    shifts: tuple[float, ...] = ()
    #: eps(delta) already solved, by delta.
    _solved: dict[float, float] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays its terms hold (see :attr:`DiscreteProfile.nbytes`)."""
        return sum(t.nbytes for t in self.terms)

    def delta(self, eps: np.ndarray) -> np.ndarray:
        return self._summed(np.asarray(eps, dtype=float), pointwise=False)

    def _summed(self, eps: np.ndarray, pointwise: bool) -> np.ndarray:
        """sum_j c_j delta_j(eps + shift_j) + extra, each term read by its monotone
        :meth:`~DiscreteProfile.delta` or (``pointwise``, eps 1-d) by its
        :meth:`~DiscreteProfile.pointwise` bound, on the profile's side either way."""
        total = np.full(eps.shape, self.extra)
        shifts = self.shifts or (0.0,) * len(self.terms)
        for c, prof, cap, shift in zip(self.weights, self.terms, self.caps, shifts):
            at = eps if shift == 0.0 else _shifted(eps, shift, self.upper)
            read = prof.pointwise(at) if pointwise else prof.delta(at)
            total = total + c * np.minimum(np.asarray(read, dtype=float), cap)
        if self.upper:
            return np.minimum(total * (1.0 + SUM_ULPS), 1.0)
        return np.maximum(total * (1.0 - SUM_ULPS), 0.0)

    def _solve_once(self, target: float) -> float:
        """Upper profile: a safe eps >= 0 with delta(eps) <= target (inf if none is found).
        Lower profile: an eps at which the bounded delta still exceeds target (0 if none).

        A bracket [lo, hi] with delta(lo) > target >= delta(hi) as evaluated, from 0 and
        powers of 2 times the terms' largest window end, shrunk by evaluating the terms'
        pointwise bounds at the points of :func:`_probes` at once until it is relatively
        _REL wide: the upper answer is its right end, the lower one its left end. Each is
        sound whatever the values between: an upper bound at or below the target at hi, or
        a lower one above it at lo, is all the true profile (non-increasing) needs. The
        pointwise bounds read no whole window, as the terms' running extrema would: a split
        law's terms run to half a million points, where those extrema cost a fifth of the
        query.
        """
        def f(e: np.ndarray) -> np.ndarray:
            return self._summed(e, pointwise=True)

        shifts = self.shifts or (0.0,) * len(self.terms)
        top = max(max(float(p.x[-1]) - shift for p, shift in zip(self.terms, shifts)), 1e-12)
        xs = np.concatenate(([0.0], top * 2.0 ** np.arange(-_DOUBLINGS, _DOUBLINGS)))
        fs = f(xs)
        while True:
            # The first crossing for an upper profile, the last one for a lower profile: a
            # lower term's pointwise bound drops to 0 at the far left of its window, where
            # the error term (growing like e^{-lam x}) swamps it.
            if self.upper:
                below = np.flatnonzero(fs <= target)
                if below.size == 0:
                    return math.inf
                i = int(below[0])
                if i == 0:
                    return float(xs[0])
            else:
                above = np.flatnonzero(fs > target)
                if above.size == 0:
                    return 0.0
                i = int(above[-1]) + 1
                if i == xs.size:
                    return float(xs[-1])
            lo, hi = float(xs[i - 1]), float(xs[i])
            if hi - lo <= _REL * hi:
                return hi if self.upper else lo
            # The bracket's ends and up to one known point beyond each, for the prediction.
            near = slice(max(i - 2, 0), i + 2)
            grid = _probes(xs[near], fs[near], lo, hi, target)
            xs = np.concatenate(([lo], grid, [hi]))
            fs = np.concatenate(([fs[i - 1]], f(grid), [fs[i]]))


def _probes(xs: np.ndarray, fs: np.ndarray, lo: float, hi: float, target: float) -> np.ndarray:
    """Increasing points strictly inside the bracket (lo, hi), where delta(lo) > target >=
    delta(hi), from the values ``fs`` known at points ``xs`` around it (lo, hi and up to one
    more each side): _UNIFORM evenly spaced ones, which shrink the bracket that many times
    at least, and _CLUSTER each side of a predicted crossing, spaced geometrically from
    _REL hi / 4 out to the bracket's width, which shrink it to about the prediction's error.
    The prediction interpolates eps as a polynomial in log delta through the known points
    (log delta is close to a low-degree polynomial of eps over a short bracket); where the
    values are not all positive and decreasing, or it falls outside the bracket, it is the
    secant's (in delta)."""
    width = hi - lo
    guess = math.nan
    positive = bool(np.all(fs > 0.0))
    y = np.log(fs) if positive else fs
    # (strictly decreasing in log delta too: values an ulp apart can share one logarithm, and
    # Lagrange's weights would divide by their difference, 0)
    if target > 0.0 and positive and np.all(np.diff(y) < 0.0):
        y0 = math.log(target)
        # Lagrange's form of the polynomial x(y) through the points, read at y0.
        weights = [np.prod([(y0 - y[m]) / (y[j] - y[m]) for m in range(y.size) if m != j]) for j in range(y.size)]
        guess = float(np.dot(weights, xs))
    if not lo < guess < hi:
        f_lo, f_hi = float(fs[xs == lo][0]), float(fs[xs == hi][0])
        guess = lo + (f_lo - target) / (f_lo - f_hi) * width
    near = _REL * hi / 4.0
    offsets = near * (width / near) ** np.linspace(0.0, 1.0, _CLUSTER)
    points = np.concatenate((np.linspace(lo, hi, _UNIFORM + 2)[1:-1], guess - offsets, guess + offsets, [guess]))
    return np.unique(points[(points > lo) & (points < hi)])


#: Evenly spaced probes, probes each side of the predicted crossing, powers of 2 each side of
#: the terms' largest window end tried for the first bracket, its relative width at the end.
_UNIFORM = 31
_CLUSTER = 48
_DOUBLINGS = 24
_REL = 1e-13


def _shifted(eps: np.ndarray, shift: float, upper: bool) -> np.ndarray:
    """eps + shift rounded down for an upper profile, up for a lower one (a profile read
    further right is lower), by more than the rounding of the sum and of the shift itself
    (a product of a count and an offset, or a sum of a few bounds)."""
    at = eps + shift
    margin = SUM_ULPS * (np.abs(eps) + abs(shift))
    return at - margin if upper else at + margin
