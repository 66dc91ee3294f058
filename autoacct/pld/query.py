"""What one query asks of the composed PLDs: the answer it aims at and the accuracy it needs.

A :class:`PldQuery` is made once per query from (target eps, delta, tol); every budget the
accountant's parts need is derived from it here, in one place:

* the tilt aims at ``target`` (:func:`cumulants.choose_tilt`);
* FFT rounding may cost delta the share :data:`ROUNDING_SHARE` of tol * delta
  (``log_rounding_budget``), so that it moves eps by a small fraction of tol;
* the errors carried by levels may take the share :data:`LEVELS_SHARE` of tol * delta
  (``levels_allowance``);
* the tail mass a window leaves out (:func:`log_eta_for`), whether a bracket meets tol
  (:func:`within`) and how much finer the next grid is (:func:`shrink`).

A query by eps (a delta curve) has a target or none, and no delta: it asks for no
rounding budget and levels plans are then weighed without an allowance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

#: Share of tol * delta that the predicted FFT rounding error may take when the tilt is chosen.
ROUNDING_SHARE = 1e-2
#: Share of tol * delta that the errors carried by levels may take.
LEVELS_SHARE = 0.5


@dataclass(frozen=True)
class PldQuery:
    """A query's aim and accuracy.

    Parameters
    ----------
    target:
        The eps near which the answer is expected (the tilt aims there), or None
        for an untilted composition.
    delta:
        The delta of an eps(delta) query, or None.
    tol:
        Its relative accuracy on the eps scale, or None (with ``delta``).
    """

    target: float | None = None
    delta: float | None = None
    tol: float | None = None

    @property
    def log_rounding_budget(self) -> float | None:
        """log of the delta that FFT rounding may cost: ROUNDING_SHARE * tol * delta."""
        if self.delta is None or self.tol is None:
            return None
        return math.log(ROUNDING_SHARE * self.tol * self.delta)

    @property
    def levels_allowance(self) -> float | None:
        """The delta that the errors carried by levels may cost: LEVELS_SHARE * tol * delta."""
        if self.target is None or self.delta is None or self.tol is None:
            return None
        return LEVELS_SHARE * self.tol * self.delta

    @property
    def tilt_key(self) -> tuple[float | None, float | None]:
        """What the tilt depends on beyond the lattice: the target and the rounding budget."""
        return self.target, self.log_rounding_budget

    def aimed_at(self, target: float | None) -> PldQuery:
        """The same accuracy, aimed at another eps."""
        return replace(self, target=target)


def within(lower: float, upper: float, tol: float) -> bool:
    """Whether the bracket [lower, upper] on eps meets the relative accuracy tol (an infinite
    upper end meets it only when the lower end is infinite too)."""
    return lower == upper or (math.isfinite(upper) and upper - lower <= tol * upper)


def shrink(gap: float, target: float) -> float:
    """Factor for the grid tolerance when the certified gap was ``gap`` instead of ``target``.

    The gap scales like h^2, i.e. like the grid tolerance.
    """
    return min(max(0.5 * target / gap, 0.01), 0.5)


def log_eta_for(delta: float, tol: float) -> float:
    """Tilted tail mass left outside the window: far below the delta asked for (and 1e-6),
    rounded to a power of ten for caching."""
    return math.log(10.0) * math.floor(math.log10(max(min(delta, 1e-3) * tol * 1e-3, 1e-300)))
