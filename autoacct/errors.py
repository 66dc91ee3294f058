"""The exceptions and warnings autoacct raises, in one place.

* :class:`AccuracyWarning`: an answer is certified but wider than the requested
  ``tol`` (the bounds remain valid).
* :class:`RouteUnavailableError`: a representation (route) was asked of a
  mechanism that cannot give it.
* :class:`InfeasibleBudgetError`: no parameter value in a calibrator's search
  range meets the budget; it says what is achievable.
* :class:`BudgetWarning`: a query stopped at its memory or time budget
  (:mod:`autoacct.limits`); its bounds remain valid.
* :class:`BudgetExceeded`: raised inside an accountant before a step that the
  budget cannot afford; the accountants catch it (it never reaches a query's caller).
"""

from __future__ import annotations


class AccuracyWarning(UserWarning):
    """The accountant could not reach the requested accuracy; its bounds remain valid."""


class PhiAccuracyWarning(AccuracyWarning):
    """The phi accountant could not reach the requested accuracy; its bounds remain valid."""


class RouteUnavailableError(ValueError):
    """A representation was asked for that this mechanism cannot give."""


class InfeasibleBudgetError(ValueError):
    """The budget cannot be met by any parameter value in the search range.

    ``achievable`` is the smallest certified epsilon(delta) found in the range
    (at the most private end of it), ``at`` the parameter value giving it.
    ``achievable`` is ``inf`` when epsilon(delta) is infinite for every value
    tried (delta below the mechanism's reach); the message then gives the
    smallest delta reachable at the target epsilon.
    """

    def __init__(self, message: str, achievable: float, at: float) -> None:
        super().__init__(message)
        self.achievable = achievable
        self.at = at


class BudgetWarning(AccuracyWarning):
    """A query stopped refining at its memory or time budget (:mod:`autoacct.limits`); its
    bounds remain valid. The message names the budget and what to change."""


class BudgetExceeded(RuntimeError):
    """A step of a query would exceed its memory or time budget (:mod:`autoacct.limits`).

    Raised before the step allocates anything; the accountants catch it and answer with
    the certified bounds they have (and a :class:`BudgetWarning`). ``kind`` is "memory"
    or "time".
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
