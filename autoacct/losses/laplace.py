"""The closed-form law of the Laplace mechanism's pair (Lap(1, b), Lap(0, b))."""

from __future__ import annotations

import numpy as np

from autoacct.exactness import MACHINE_EPSILON
from autoacct.losses.base import PROFILE_REL, ContinuousLoss

_EPS = MACHINE_EPSILON


class LaplaceLoss(ContinuousLoss):
    """Loss of the pair (Lap(1, b), Lap(0, b)).

    L = (|o| - |o - 1|)/b: the atom +1/b (o >= 1), the atom -1/b (o <= 0) and
    (2o - 1)/b in between.
    """

    def __init__(self, b: float) -> None:
        self.b = float(b)
        self.lattice = 1.0 / self.b
        self.has_atoms = True

    @property
    def key(self) -> tuple:
        return ("laplace", self.b)

    @property
    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        b = self.b
        return np.array([-1.0 / b, 1.0 / b]), np.array([0.5 * np.exp(-1.0 / b), 0.5])

    def _x(self, t: np.ndarray) -> np.ndarray:
        return np.clip((self.b * np.asarray(t, dtype=float) + 1.0) / 2.0, 0.0, 1.0)

    def _cdf(self, t: np.ndarray, under: str) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        b = self.b
        x = self._x(t)
        if under == "P":
            inner = 0.5 * np.exp(-(1.0 - x) / b)
        else:
            inner = 1.0 - 0.5 * np.exp(-x / b)
        return np.where(t < -1.0 / b, 0.0, np.where(t >= 1.0 / b, 1.0, inner))

    def _sf(self, t: np.ndarray, under: str) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        b = self.b
        x = self._x(t)
        if under == "P":
            inner = 1.0 - 0.5 * np.exp(-(1.0 - x) / b)
        else:
            inner = 0.5 * np.exp(-x / b)
        return np.where(t < -1.0 / b, 1.0, np.where(t >= 1.0 / b, 0.0, inner))

    def quantile_range(self, eta: float) -> tuple[float, float]:
        return -1.0 / self.b, 1.0 / self.b

    @property
    def max_loss(self) -> float:
        return 1.0 / self.b

    exact_profile = True

    def profile(self, eps: np.ndarray) -> np.ndarray:
        """H_{e^eps} = 1 - e^{(eps - 1/b)/2} for 0 <= eps < 1/b, 0 beyond (and by symmetry
        1 - e^eps (1 - H_{e^-eps}) for eps < 0), without the cancellation of sf_P - e^eps sf_Q."""
        eps = np.asarray(eps, dtype=float)
        x = 1.0 / self.b
        e = np.abs(eps)
        pos = -np.expm1(np.minimum(e - x, 0.0) / 2.0)
        with np.errstate(over="ignore"):
            neg = 1.0 - np.exp(-e) * (1.0 - pos)
        return np.clip(np.where(eps >= 0.0, pos, neg), 0.0, 1.0)

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        """A relative PROFILE_REL of the closed form, plus its change over the few roundoffs
        by which 1/b (a computed quotient) and |eps| - 1/b are off: at eps = fl(1/b) below
        1/b the true profile is positive (about ulp(1/b) / 2) where the formula gives 0.
        Its derivative in 1/b is e^{(|eps| - 1/b)/2} / 2 <= 1/2 there; beyond 1/b + d, 0."""
        eps = np.asarray(eps, dtype=float)
        e = np.abs(eps)
        x = 1.0 / self.b
        d = 8.0 * _EPS * (x + e + 1.0)
        return PROFILE_REL * np.asarray(self.profile(eps), dtype=float) + np.where(e < x + d, 0.5 * d, 0.0)
