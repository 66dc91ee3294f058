"""Grouping the distinct steps of a long schedule: parameters moved onto a geometric grid.

A composition of thousands of distinct steps (a DP-SGD schedule whose sampling rate and noise
change every step) costs the PLD accountant one discretised law per distinct step on a grid
that grows with the schedule: 10,000 distinct subsampled Gaussians need about 3e7 cells. Moving
each step's parameters onto the grid ratio^Z, towards less privacy (a larger rate, a smaller
noise multiplier), gives a step that dominates it; composing the moved steps, of which only a
few hundred are distinct, bounds the schedule from above (dominance is kept under composition,
as tradeoff functions compose monotonically: Dong, Roth and Su 2022). Moving them the other way gives
steps it dominates, whose certified lower ends bound the schedule from below. The bracket is
as wide as the grid is coarse. The PLD route (:func:`through_groups`) bounds a schedule of many
distinct steps this way first; where that misses tol it composes the steps themselves if that
is predicted to fit the time budget left, and takes the intersection of the two brackets, and
otherwise warns that the bracket comes from the grid and what budget the exact one needs. A
schedule of fewer distinct steps is composed exactly first, and bounded through the grid too
where the budget stops that composition.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from autoacct.errors import AccuracyWarning, BudgetWarning
from autoacct.limits import current, limits, predicted_seconds

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


#: Distinct laws above which the PLD route bounds a composition through grouped steps first
#: (2,000; below it, grouping follows a stopped exact composition: the default time budget
#: composes 2,000 and 3,000 distinct subsampled Gaussians exactly, in 1.5 and 3.6 s of CPU, not
#: 5,000: benchmarks/hetero.py), the most distinct steps a grouping of GROUPS_MOST runs
#: may have (1,000 distinct subsampled Gaussians take 0.7 s of CPU), and the fewest any
#: grouping is allowed.
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

    def warn(self, what: str, met: bool, tol: float, why: str) -> None:
        """Say that the bounds ``what`` come from the grouping, where they miss ``tol``, and
        ``why`` the steps were not composed exactly."""
        if not met:
            warnings.warn(f"{what} may be wider than tol={tol:g}: the {self.distinct} distinct steps were "
                          f"bounded through steps moved onto a parameter grid of ratio {self.ratio:.4g} "
                          f"(dominating ones above, dominated ones below), as composing them exactly {why}. "
                          "A larger time budget (autoacct.limits(seconds=...)), fewer distinct steps, or "
                          "grouping them yourself gives tighter bounds.", AccuracyWarning, stacklevel=7)


def exact_need(rate: list[float], spent: float, made: int, distinct: int) -> float:
    """Predicted seconds (the budget's measure, :func:`limits.predicted_seconds`) of composing
    ``distinct`` distinct laws exactly, from grouped compositions of ``made`` distinct laws
    that took ``spent``: an FFT composition's steps (discretising each law, transforming it,
    raising it to its count) cost about the same per distinct law. ``rate`` keeps the
    largest rate per law seen (a later query that finds the grouped laws discretised
    already spends less)."""
    rate[0] = max(rate[0], spent / max(made, 1))
    return rate[0] * distinct


def budget_left(start: float) -> float:
    """The time budget less the predicted seconds spent since ``start``."""
    return current().seconds - (predicted_seconds() - start)


def fits(need: float, start: float) -> bool:
    """Whether ``need`` predicted seconds fit what is left of the time budget since ``start``."""
    left = budget_left(start)
    return left > 0.0 and need <= left


def through_groups(pair: Grouped | None, exact: Callable[[], tuple[Any, Any]],
                   grouped: Callable[[Grouped], tuple[Any, Any]], met: Callable[[Any, Any], bool],
                   what: Callable[[Any, Any], str], tol: float, made: Callable[[Grouped], int],
                   rate: list[float], regroup: Callable[[], Grouped | None]) -> tuple[Any, Any]:
    """Bounds on a composition from ``exact()`` (its own steps), from ``grouped(pair)`` (its
    steps moved onto the grid, ``pair``), or both intersected (both brackets hold the truth,
    so does their intersection). Where ``pair`` is given (more than GROUP_ABOVE distinct
    laws), the grid's bracket comes first, and the exact one where that misses tol and is
    predicted (:func:`exact_need`, from ``made(pair)`` distinct laws grouped, and ``rate``) to
    fit the time budget left. Otherwise the exact one comes first, and where the budget
    stopped it short of tol, the grid's of ``regroup()``, if any: a budget of 2 s stops the
    exact composition of 2,000 distinct DP-SGD steps (at GROUP_ABOVE) before it bounds
    anything. ``met`` says whether a bracket is within tol; ``what`` names it in a warning.

    Budget: each composition keeps to the time budget on its own (the grouped ones each on
    its own clock, as every accountant query; the exact one after the grid's under what the
    grid's left),
    so a query that falls back on the grid after a stopped exact composition may spend up
    to three budgets of predicted time, within the wall-clock deadline of the public query."""
    start = predicted_seconds()
    if pair is not None:
        lower, upper = grouped(pair)
        need = exact_need(rate, predicted_seconds() - start, made(pair), pair.distinct)
        if met(lower, upper) or not fits(need, start):
            pair.warn(what(lower, upper), met(lower, upper), tol,
                      f"is predicted to take about {need:.2g} s, more than the time budget left")
            return lower, upper
        # (its own warnings say how the exact composition ended)
        with within_budget_left(start):
            return intersect((lower, upper), exact())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lower, upper = exact()
    if not met(lower, upper) and any(issubclass(w.category, BudgetWarning) for w in caught):
        pair = regroup()
    if pair is None:
        for w in caught:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return lower, upper
    lower, upper = intersect((lower, upper), grouped(pair))
    pair.warn(what(lower, upper), met(lower, upper), tol, "stopped at the time budget")
    return lower, upper


def intersect(a: tuple[Any, Any], b: tuple[Any, Any]) -> tuple[Any, Any]:
    """The intersection of two brackets (floats or arrays of them) that both hold the truth."""
    if isinstance(a[0], np.ndarray) or isinstance(b[0], np.ndarray):
        return np.maximum(a[0], b[0]), np.minimum(a[1], b[1])
    return max(a[0], b[0]), min(a[1], b[1])


def within_budget_left(start: float) -> AbstractContextManager[Any]:
    """The time budget less what was spent since ``start``: an exact composition that refines
    grouped bounds runs under it, so that the query as a whole keeps to the budget."""
    return limits(seconds=budget_left(start))


def grouped_pair(m: Mechanism, distinct: int, runs: int, threshold: int | None = None) -> Grouped | None:
    """Where a composition has more than GROUP_ABOVE distinct laws (an exact composition then
    costs more than the default time budget: 3,000 distinct subsampled Gaussians need about
    8e6 cells, predicted at 25 s), the mechanisms with few distinct parts that dominate it
    and that it dominates (``Mechanism.grouped``); None otherwise. ``distinct`` and ``runs``:
    its distinct laws and its runs in all. ``threshold`` replaces GROUP_ABOVE (the route groups
    fewer steps where the budget stopped their exact composition); None also where the
    grouping would leave as many distinct steps.

    A composition's FFT work is its distinct laws times its window, which grows like the
    square root of its runs: GROUPS_MOST distinct laws of as many runs in all take 2-3 s, and
    more runs get proportionally fewer groups (at least GROUPS_FEWEST).
    """
    most = max(GROUPS_FEWEST, int(GROUPS_MOST * math.sqrt(min(1.0, GROUPS_MOST / runs))))
    if distinct <= (GROUP_ABOVE if threshold is None else threshold) or distinct <= most:
        return None
    above, below = m.grouped(True, most), m.grouped(False, most)
    if above is None or below is None:
        return None
    return Grouped(above[0], below[0], max(above[1], below[1]), distinct)
