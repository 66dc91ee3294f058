"""Grouping the distinct steps of a long schedule: parameters moved onto a geometric grid.

A composition of thousands of distinct steps (a DP-SGD schedule whose sampling rate and noise
change every step) costs the PLD accountant one discretised law per distinct step on a grid
that grows with the schedule: 10,000 distinct subsampled Gaussians need about 3e7 cells. Moving
each step's parameters onto the grid ratio^Z, towards less privacy (a larger rate, a smaller
noise multiplier), gives a step that dominates it; composing the moved steps, of which only a
few hundred are distinct, bounds the schedule from above (dominance is kept under composition,
as tradeoff functions compose monotonically: Dong, Roth and Su 2022). Moving them the other way gives
steps it dominates, whose certified lower ends bound the schedule from below. The bracket is
as wide as the grid is coarse. The PLD route (:func:`grouped_pair`) bounds a schedule of many
distinct steps this way first; where that misses tol it composes the steps themselves if that
is predicted to fit the time budget left, and takes the intersection of the two brackets, and
otherwise warns that the bracket comes from the grid and what budget the exact one needs.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from autoacct.errors import AccuracyWarning

if TYPE_CHECKING:
    from autoacct.mechanism import Mechanism

#: Grid ratios tried, finest first: 2^(1/m), m from 4096 down to 1 in steps of 2^(1/4) (the
#: coarser grid, about 19% fewer points per parameter range, is taken when the finer one
#: leaves too many distinct steps).
RATIOS = tuple(2.0 ** (2.0 ** (-j / 4.0)) for j in range(48, -1, -1))


def snap_value(x: float, ratio: float, up: bool) -> float:
    """The nearest point of the grid ratio^Z at or above x > 0 (``up``; +inf past the largest
    float), or at or below it."""
    j = round(math.log(x) / math.log(ratio))
    # log and pow round: settle on the nearest grid point on the asked side by comparisons.
    if up:
        while _power(ratio, j) < x:
            j += 1
        while _power(ratio, j - 1) >= x:
            j -= 1
    else:
        while _power(ratio, j) > x:
            j -= 1
        while _power(ratio, j + 1) <= x:
            j += 1
    return _power(ratio, j)


def _power(ratio: float, j: int) -> float:
    """ratio^j, +inf where it overflows."""
    try:
        return float(ratio ** j)
    except OverflowError:
        return math.inf


def group(children: Sequence[Mechanism], counts: Sequence[int], up: bool, most: int
          ) -> tuple[list[Mechanism], list[int], float] | None:
    """The children moved onto the finest grid of :data:`RATIOS` on which at most ``most`` of
    them are distinct (``Mechanism.snap``: dominating ones with ``up``, dominated ones
    without), equal ones merged with their counts added, and the grid's ratio; None where a
    child cannot be moved or no grid is coarse enough."""
    for ratio in RATIOS:
        made: dict[Hashable, tuple[Callable[[], Mechanism], int]] = {}
        for child, k in zip(children, counts):
            moved = child.snap(ratio, up)
            if moved is None:
                return None
            key, make = moved
            old = made.get(key)
            made[key] = (make, k + (old[1] if old is not None else 0))
            if len(made) > most:
                break
        else:
            return [make() for make, _ in made.values()], [k for _, k in made.values()], ratio
    return None


#: Distinct laws above which the PLD route bounds a composition through grouped steps (2,000:
#: 3,000 distinct subsampled Gaussians exceed the default time budget), the most distinct
#: steps a grouping of GROUPS_MOST runs may have (1,000 distinct subsampled Gaussians take 2-3
#: s), and the fewest any grouping is allowed.
GROUP_ABOVE = 2000
GROUPS_MOST = 1000
GROUPS_FEWEST = 64


class Grouped(NamedTuple):
    """A composition's steps moved onto a parameter grid (:meth:`PldRoute.grouped`): ``above``
    dominates it, ``below`` is dominated by it, made on the grid of ratio ``ratio`` from
    ``distinct`` distinct laws."""

    above: Mechanism
    below: Mechanism
    ratio: float
    distinct: int

    def warn(self, what: str, met: bool, tol: float, need: float) -> None:
        """Say that the bounds ``what`` come from the grouping, where they miss ``tol``, as
        composing the steps exactly would take about ``need`` predicted seconds, more than
        the time budget left."""
        if not met:
            warnings.warn(f"{what} may be wider than tol={tol:g}: the {self.distinct} distinct steps were "
                          f"bounded through steps moved onto a parameter grid of ratio {self.ratio:.4g} "
                          "(dominating ones above, dominated ones below), as composing them exactly, "
                          f"predicted to take about {need:.2g} s, does not fit the time budget. A larger "
                          "time budget (autoacct.limits(seconds=...)), fewer distinct steps, or grouping "
                          "them yourself gives tighter bounds.", AccuracyWarning, stacklevel=5)


def grouped_pair(m: Mechanism, distinct: int, runs: int) -> Grouped | None:
    """Where a composition has more than GROUP_ABOVE distinct laws (an exact composition then
    costs more than the default time budget: 3,000 distinct subsampled Gaussians need about
    8e6 cells, predicted at 25 s), the mechanisms with few distinct parts that dominate it
    and that it dominates (``Mechanism.grouped``); None otherwise. ``distinct`` and ``runs``:
    its distinct laws and its runs in all.

    A composition's FFT work is its distinct laws times its window, which grows like the
    square root of its runs: GROUPS_MOST distinct laws of as many runs in all take 2-3 s, and
    more runs get proportionally fewer groups (at least GROUPS_FEWEST).
    """
    if distinct <= GROUP_ABOVE:
        return None
    most = max(GROUPS_FEWEST, int(GROUPS_MOST * math.sqrt(min(1.0, GROUPS_MOST / runs))))
    above, below = m.grouped(True, most), m.grouped(False, most)
    if above is None or below is None:
        return None
    return Grouped(above[0], below[0], max(above[1], below[1]), distinct)
