"""A discretised mechanism and how many times it is composed: the unit the composer works on."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from autoacct.pld.discretize import DiscretePLD


class LowerPld(enum.Enum):
    """When the lower PLD of a newly discretised law is made (its values are the same either way).

    A component's lower PLD is read when it is first needed (:class:`Component`); what
    differs is the work and memory spent before that.
    """

    #: Made with the upper one: for laws whose lower PLDs are composed at once, several
    #: per direction (keeping every law's cell masses until then would hold them all).
    NOW = "now"
    #: From the cell masses computed for the upper PLD, kept until it is read: for the one
    #: law of a direction that levels may compose (levels may never read it).
    KEPT = "kept"
    #: Computed again from the law when first read: for passes that compose upper PLDs
    #: only (a probe, a Chernoff bound, a coarse settling pass), where it is likely never read.
    LAZY = "lazy"


@dataclass(frozen=True)
class Component:
    """One distinct discretised mechanism and how many times it is composed.

    The lower PLD may be given as a function that makes it: it is then made when first
    read, so that what reads only upper PLDs (a :class:`ChernoffProfile`) never pays for it.
    """

    upper: DiscretePLD
    lower_pld: DiscretePLD | Callable[[], DiscretePLD]
    count: int
    #: For a law whose atoms are merged onto the grid (``merged_lower``): its finite loss values
    #: and their P-masses, from which the composed law's largest cell mass is estimated.
    atoms: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False)
    #: For a computed composition (see :mod:`levels`): how far, at most, each of its PLDs'
    #: masses lies from the exact loss (start + i) h of its point. None for a law discretised
    #: directly (see :func:`autoacct.pld.compose.misplacement`).
    misplaced: float | None = None
    #: Whether compositions of this component are coarsened by merging their points
    #: (:func:`~autoacct.pld.levels.coarsen`): a law with atoms off any lattice, whose blocks'
    #: cells would bend around every atom, and a composition coarsened so.
    merged_points: bool = field(default=False, compare=False)

    @cached_property
    def lower(self) -> DiscretePLD:
        """The lower discrete PLD."""
        low = self.lower_pld
        return low if isinstance(low, DiscretePLD) else low()

    def recounted(self, count: int) -> Component:
        """The same component taken ``count`` times (sharing its lower PLD if already made)."""
        return Component(self.upper, self.__dict__.get("lower", self.lower_pld), count, self.atoms, self.misplaced,
                         self.merged_points)

    def lower_short(self, tol: float, eps: float) -> bool:
        """Whether the lower PLD of the law composed ``count`` times falls first-order short of
        the upper one at an answer near ``eps``: their means differ by more than 2 tol eps
        over the count. The second-order gap the grid is sized for stays well below that;
        where a law's mass sits within a few cells (steep support ends), the lower
        discretiser rounds cells down on some lattices, a first-order loss that levels (on a
        finer lattice than the accuracy needs) would carry through every block."""
        gap = self.upper.moment - self.lower.moment
        return self.count * gap > 2.0 * tol * max(eps, 1e-300)
