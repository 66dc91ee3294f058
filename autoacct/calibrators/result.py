"""What a calibration returns (:class:`CalibrationResult`) and its default optimality gap."""

from __future__ import annotations

from dataclasses import dataclass

from autoacct.mechanism import Mechanism

#: Default relative optimality gap: the result is within 0.2% of the optimal value.
DEFAULT_RTOL = 2e-3


@dataclass(frozen=True)
class CalibrationResult:
    """Outcome of a calibration.

    Attributes
    ----------
    value:
        The calibrated parameter x_s (an int for integer searches).
    mechanism:
        ``factory(value)``, the mechanism whose epsilon was certified.
    epsilon:
        Its certified upper bound eps_up(x_s) = mechanism.epsilon(delta, via, tol) <= target;
        for a ``target`` of "tpr" or "advantage", the certified upper bound of that quantity
        (``mechanism.tpr(fpr)``, ``mechanism.advantage()``) instead.
    epsilon_lower:
        The best certified lower bound on its true epsilon(delta) (or TPR, or advantage).
    target_epsilon, delta:
        The budget (delta None for a tpr or advantage target).
    increasing:
        Whether epsilon grows with the parameter.
    optimality_gap:
        Certified bound on |x_s - x*| / x*, where x* is the optimal value for the
        true epsilon (0 when x_s is a bound of the search range or, for integers,
        the exact optimum); ``inf`` when no certificate was found.
    certified:
        Whether ``optimality_gap`` <= the requested ``rtol`` (or, for integer
        parameters, whether x_s is certified to be the optimal integer).
    tol:
        The accountant tolerance at which ``epsilon`` was certified.
    evaluations:
        Number of accountant calls the search made.
    target:
        The calibrated quantity: "epsilon" (eps(delta)), "tpr" (the largest true-positive
        rate of a membership-inference attack at false-positive rate ``fpr``) or
        "advantage" (the largest TPR - FPR, i.e. delta(0)).
    fpr:
        The false-positive rate of a "tpr" target, else None.
    """

    value: float
    mechanism: Mechanism
    epsilon: float
    epsilon_lower: float
    target_epsilon: float
    delta: float | None
    increasing: bool
    optimality_gap: float
    certified: bool
    tol: float
    evaluations: int
    target: str = "epsilon"
    fpr: float | None = None
