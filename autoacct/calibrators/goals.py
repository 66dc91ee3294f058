"""What a calibration aims at: a certified privacy quantity of a mechanism and its target.

The search of :mod:`autoacct.calibrators.search` is generic over a quantity
Q(M) that is monotone in the parameter and certified from both sides:
``bounds(M, via, tol)`` gives (lower, upper) with lower <= Q(M) <= upper, and a
value x meets the target t when upper(M_x) <= t. The quantities are

* :class:`EpsilonGoal`: eps(delta), the smallest eps with (eps, delta)-DP;
* :class:`TprGoal`: the largest true-positive rate of a membership-inference
  attack at false-positive rate a, 1 - f(a) with f the tradeoff function
  (:func:`autoacct.risk.tpr_bounds`);
* :class:`AdvantageGoal`: the largest membership advantage max_a (TPR(a) - a) =
  delta(0), the total variation distance of the pair (:func:`autoacct.risk.advantage`).

Each makes its own messages: ``text`` names the budget ("epsilon=1 at delta=1e-05"),
``quantity`` the certified quantity ("epsilon(delta=1e-05)").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from autoacct import _validation as check
from autoacct import risk
from autoacct.mechanism import Mechanism


class Goal(ABC):
    """A target value of a certified, parameter-monotone privacy quantity."""

    #: The target value t > 0 of the quantity.
    value: float

    @property
    @abstractmethod
    def text(self) -> str:
        """The budget in words, for messages."""

    @property
    @abstractmethod
    def quantity(self) -> str:
        """The certified quantity in words, for messages."""

    #: The quantity's short name in messages ("the smallest epsilon reachable").
    name = ""

    @property
    def unreachable(self) -> str:
        """The message that no parameter value meets the budget."""
        return f"{self.text} is not reachable"

    @abstractmethod
    def bounds(self, mech: Mechanism, via: str, tol: float) -> tuple[float, float]:
        """(lower, upper) around the mechanism's quantity, at accountant accuracy ``tol``."""

    @abstractmethod
    def upper(self, mech: Mechanism, via: str, tol: float) -> float:
        """The certified upper bound a result is re-checked with (the public query)."""


@dataclass(frozen=True)
class EpsilonGoal(Goal):
    """eps(delta) <= ``value``: the (epsilon, delta) budget, epsilon > 0 and delta in (0, 1)."""

    value: float
    delta: float
    name = "epsilon"

    @property
    def unreachable(self) -> str:
        return f"epsilon={self.value:g} is not reachable at delta={self.delta:g}"

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", check.real("epsilon", self.value, low=0.0, low_open=True))
        object.__setattr__(self, "delta", check.real("delta", self.delta, low=0.0, high=1.0,
                                                     low_open=True, high_open=True))

    @property
    def text(self) -> str:
        return f"epsilon={self.value:g} at delta={self.delta:g}"

    @property
    def quantity(self) -> str:
        return f"epsilon(delta={self.delta:g})"

    def bounds(self, mech: Mechanism, via: str, tol: float) -> tuple[float, float]:
        if via == "auto":
            lo, up = mech.epsilon_bounds(self.delta, tol=tol)
            return float(lo), float(up)
        up = float(mech.epsilon(self.delta, via=via, tol=tol))
        if via == "rdp":
            # Optimality is judged against the RDP conversion itself, a deterministic value.
            return up, up
        return float(mech.epsilon_bounds(self.delta, tol=tol)[0]), up

    def upper(self, mech: Mechanism, via: str, tol: float) -> float:
        return float(mech.epsilon(self.delta, via=via, tol=tol))


@dataclass(frozen=True)
class TprGoal(Goal):
    """TPR(fpr) <= ``value``: no membership-inference attack at false-positive rate ``fpr``
    in (0, 1) reaches a true-positive rate above ``value``, which must lie in (fpr, 1)."""

    value: float
    fpr: float
    name = "TPR"

    def __post_init__(self) -> None:
        fpr = check.real("fpr", self.fpr, low=0.0, high=1.0, low_open=True, high_open=True)
        tpr = check.real("tpr", self.value, low=0.0, high=1.0, high_open=True)
        if not tpr > fpr:
            raise ValueError(f"tpr must exceed fpr={fpr!r} (guessing reaches TPR = FPR), got {tpr!r}")
        object.__setattr__(self, "value", tpr)
        object.__setattr__(self, "fpr", fpr)

    @property
    def text(self) -> str:
        return f"tpr={self.value:g} at fpr={self.fpr:g}"

    @property
    def quantity(self) -> str:
        return f"TPR at fpr={self.fpr:g}"

    def bounds(self, mech: Mechanism, via: str, tol: float) -> tuple[float, float]:
        if via != "auto":
            up = self.upper(mech, via, tol)
            return self.fpr, up
        lo, up = risk.tpr_bounds(mech, self.fpr, tol)
        return float(lo), float(up)

    def upper(self, mech: Mechanism, via: str, tol: float) -> float:
        if via != "auto":
            return float(risk.tpr(mech, self.fpr, via))
        return float(risk.tpr_bounds(mech, self.fpr, tol)[1])


@dataclass(frozen=True)
class AdvantageGoal(Goal):
    """max_a (TPR(a) - a) <= ``value`` in (0, 1): the membership advantage, delta(0)."""

    value: float
    name = "advantage"

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", check.real("advantage", self.value, low=0.0, high=1.0,
                                                     low_open=True, high_open=True))

    @property
    def text(self) -> str:
        return f"advantage={self.value:g}"

    @property
    def quantity(self) -> str:
        return "advantage"

    def bounds(self, mech: Mechanism, via: str, tol: float) -> tuple[float, float]:
        if via == "rdp":
            up = float(mech.delta(0.0, via=via, tol=tol))
            return up, up
        lo, up = mech.delta_bounds(0.0, tol=tol)
        if via != "auto":
            up = mech.delta(0.0, via=via, tol=tol)
        return float(lo), float(up)

    def upper(self, mech: Mechanism, via: str, tol: float) -> float:
        return float(mech.delta(0.0, via=via, tol=tol))


def goal_of(epsilon: float | None, delta: float | None, tpr: float | None, fpr: float | None,
            advantage: float | None) -> Goal:
    """The one goal the keyword arguments describe: (epsilon, delta), (tpr, fpr) or advantage."""
    given = {"epsilon": epsilon, "tpr": tpr, "advantage": advantage}
    named = [k for k, v in given.items() if v is not None]
    if len(named) != 1:
        shown = ", ".join(f"{k}={given[k]!r}" for k in named) or "none"
        raise ValueError(f"give exactly one target of epsilon, tpr and advantage, got {shown}")
    if epsilon is not None:
        if fpr is not None:
            raise ValueError(f"fpr goes with a tpr target, not with epsilon; got fpr={fpr!r}")
        if delta is None:
            raise ValueError("an epsilon target needs delta, got delta=None")
        return EpsilonGoal(epsilon, delta)
    if delta is not None:
        raise ValueError(f"delta goes with an epsilon target only; got delta={delta!r}")
    if tpr is not None:
        if fpr is None:
            raise ValueError("a tpr target needs fpr, got fpr=None")
        return TprGoal(tpr, fpr)
    if fpr is not None:
        raise ValueError(f"fpr goes with a tpr target, not with advantage; got fpr={fpr!r}")
    assert advantage is not None
    return AdvantageGoal(advantage)

