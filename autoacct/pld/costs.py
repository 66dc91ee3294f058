"""What discretising laws costs against a query's budget (:mod:`autoacct.limits`), checked
before the work starts, and the bytes an accountant's memo keeps; the accountant's warnings
when a budget stops it or its bounds stay wider than ``tol``."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from autoacct.errors import AccuracyWarning, BudgetExceeded, BudgetWarning
from autoacct.limits import afford
from autoacct.losses import PrivacyLoss
from autoacct.pld.chernoff import ChernoffProfile
from autoacct.pld.components import Component
from autoacct.pld.discretize import DiscretePLD, discretize
from autoacct.pld.grid import CELL_BYTES, CELL_SECONDS, UPPER_CELL_BYTES, UPPER_CELL_SECONDS
from autoacct.pld.mixture import MixtureProfile
from autoacct.pld.profiles import DiscreteProfile


def lower_of(loss: PrivacyLoss, h: float, j_lo: int, j_hi: int) -> DiscretePLD:
    """The lower discrete PLD of :func:`discretize` (which makes the upper one again)."""
    afford_cells(j_hi - j_lo, True, loss.cell_cost)
    return discretize(loss, h, j_lo, j_hi)[1]


def afford_cells(cells: int, full: bool, cost: float = 1.0) -> None:
    """Check that discretising a law on ``cells`` cells fits the budget (see :func:`afford`):
    its upper and lower PLDs when ``full``, else its upper one; ``cost`` is the law's work per
    cell relative to a closed-form law's (``PrivacyLoss.cell_cost``)."""
    per_byte, per_second = (CELL_BYTES, CELL_SECONDS) if full else (UPPER_CELL_BYTES, UPPER_CELL_SECONDS)
    afford(cells * per_byte, cells * per_second * cost, f"discretising a law on {cells} cells")


def afford_laws(cells: Sequence[int], full: bool, costs: Sequence[float]) -> None:
    """Check that discretising laws on ``cells`` cells each fits the budget, in one step (one
    check per law would sum the kept arrays once per law, a cost quadratic in the number of
    distinct laws): the time of all of them, and the working bytes of the largest plus the
    PLDs all of them keep (8 bytes a cell for each of the upper and, when ``full``, lower one),
    each law's cells weighted by its ``costs`` entry for the time."""
    if len(cells) == 1:
        afford_cells(cells[0], full, costs[0])
        return
    per_byte, per_second = (CELL_BYTES, CELL_SECONDS) if full else (UPPER_CELL_BYTES, UPPER_CELL_SECONDS)
    total = float(sum(cells))
    work = float(sum(n * c for n, c in zip(cells, costs)))
    afford(max(cells) * per_byte + total * (16.0 if full else 8.0), work * per_second,
           f"discretising {len(cells)} laws on {int(total)} cells")


class SharedCheck:
    """One budget check for the lower PLDs of all the laws of a direction, made lazily: the
    first one read checks for all of them (one composition reads them together), so that n
    laws cost one check rather than n, each summing every kept array. The bytes counted
    include the upper PLDs, already kept: an overestimate of 8 bytes a cell."""

    def __init__(self, cells: list[int], costs: list[float]) -> None:
        self._cells, self._costs = cells, costs
        self._done = False

    def __call__(self) -> None:
        if not self._done:
            afford_laws(self._cells, True, self._costs)
            self._done = True


def shared_lower_of(check: SharedCheck, loss: PrivacyLoss, h: float, j_lo: int, j_hi: int) -> DiscretePLD:
    """:func:`lower_of` for one of several laws whose lower PLDs share one budget check."""
    check()
    return discretize(loss, h, j_lo, j_hi)[1]


def nbytes_of(value: object) -> int:
    """Bytes of the arrays a memo entry keeps (discrete PLDs, composed profiles with the
    arrays their reads have made, components; a lower PLD not yet made counts nothing).
    (Every step's budget check walks the memo: values that hold no arrays, floats, laws,
    Chernoff profiles, are told apart by their type first.)"""
    kind = type(value)
    if kind in _NO_ARRAYS:
        return 0
    if isinstance(value, (tuple, list)):
        return sum(map(nbytes_of, value))
    if isinstance(value, Component):
        lower = value.__dict__.get("lower")
        return int(value.upper.masses.nbytes) + (int(lower.masses.nbytes) if lower is not None else 0)
    if isinstance(value, DiscretePLD):
        return int(value.masses.nbytes)
    if isinstance(value, (DiscreteProfile, MixtureProfile)):
        return value.nbytes
    return 0


#: Types of memo values that hold no arrays (see :func:`nbytes_of`).
_NO_ARRAYS = frozenset({type(None), bool, int, float, np.float64, ChernoffProfile})


def warn_budget(exc: BudgetExceeded, what: str, tol: float) -> None:
    """Say that the budget stopped a query, why, and what to change."""
    warnings.warn(f"{what} may be wider than tol={tol:g}: {exc}. A larger {exc.kind} budget "
                  "(autoacct.limits(memory=..., seconds=...)), a larger tol or a larger delta would "
                  "tighten them; the bounds are valid but looser than requested", BudgetWarning,
                  stacklevel=4)


def warn_loose(msg: str) -> None:
    warnings.warn(msg + "; the bounds are valid but looser than requested", AccuracyWarning,
                  stacklevel=4)
