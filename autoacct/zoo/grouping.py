"""Grouping the distinct steps of a long schedule: parameters moved onto a geometric grid.

A composition of thousands of distinct steps (a DP-SGD schedule whose sampling rate and noise
change every step) costs the PLD accountant one discretised law per distinct step on a grid
that grows with the schedule: 10,000 distinct subsampled Gaussians need about 3e7 cells. Moving
each step's parameters onto the grid ratio^Z, towards less privacy (a larger rate, a smaller
noise multiplier), gives a step that dominates it; composing the moved steps, of which only a
few hundred are distinct, bounds the schedule from above (dominance is kept under composition,
as tradeoff functions compose monotonically: Dong, Roth and Su 2022). Moving them the other way gives
steps it dominates, whose certified lower ends bound the schedule from below. The bracket is
as wide as the grid is coarse, so this serves where the exact composition exceeds the budget
(``ComposedMechanism.grouped``), with an accuracy warning that says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autoacct.mechanism import Mechanism

#: Grid ratios tried, finest first: 2^(1/m), m from 4096 down to 1 in steps of 2^(1/4) (the
#: coarser grid, about 19% fewer points per parameter range, is taken when the finer one
#: leaves too many distinct steps).
RATIOS = tuple(2.0 ** (2.0 ** (-j / 4.0)) for j in range(48, -1, -1))


def snap_value(x: float, ratio: float, up: bool) -> float:
    """The nearest point of the grid ratio^Z at or above x > 0 (``up``), or at or below it."""
    j = round(math.log(x) / math.log(ratio))
    # log and pow round: settle on the nearest grid point on the asked side by comparisons.
    if up:
        while ratio ** j < x:
            j += 1
        while ratio ** (j - 1) >= x:
            j -= 1
    else:
        while ratio ** j > x:
            j -= 1
        while ratio ** (j + 1) <= x:
            j += 1
    return float(ratio ** j)


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
