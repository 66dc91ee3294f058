"""The mixture-of-Gaussians mechanism: a Gaussian mechanism whose sensitivity is random."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from autoacct import _validation as check
from autoacct.exactness import MACHINE_EPSILON, round_up
from autoacct.losses.mixture import MixtureGaussianLoss
from autoacct.mechanism import LossPart, Mechanism
from autoacct.zoo.custom import probability_vector

__all__ = ["MixtureOfGaussians"]


@dataclass(frozen=True, eq=False, repr=False)
class MixtureOfGaussians(Mechanism):
    """Gaussian noise N(0, sigma^2) added to a query whose sensitivity is s_i with probability
    p_i (the semantics of dp_accounting's ``MixtureOfGaussiansDpEvent``).

    Dominating pair (P, Q) = (sum_i p_i N(s_i, sigma^2), N(0, sigma^2)), accounted in both
    directions (removal: log(dP/dQ) under P; addition: log(dQ/dP) under Q). Sensitivities
    (0, 1) with probabilities (1 - q, q) are the Poisson-subsampled Gaussian with noise
    multiplier sigma; (0, 1, 2) with (0.81, 0.18, 0.01) a record that may be sampled twice.
    The loss log sum_i p_i e^{(2 s_i x - s_i^2) / (2 sigma^2)} is increasing in the output x
    (all s_i >= 0), so its law is exact at every cell (:mod:`autoacct.losses.mixture`).
    The pair is the mechanism's own: lower bounds are certified. Its total variation
    distance, delta(0), is at most sum_i p_i erf(s_i / (2 sqrt(2) sigma)) (``dp_guarantee``).
    No Renyi-DP curve is
    given (the ``"rdp"`` route is unavailable; ``PoissonSubsample(q)(Gaussian(sigma))``
    has the exact one for two components).

    Parameters
    ----------
    sigma:
        Noise standard deviation, > 0 (in the units of the sensitivities).
    sensitivities:
        The support s_i >= 0 of the sensitivity, finite; some s_i > 0 with p_i > 0.
    probabilities:
        p_i >= 0, summing to 1 within 1e-9 (divided by their sum, stored so); same length.
    """

    sigma: float
    sensitivities: tuple[float, ...]
    probabilities: tuple[float, ...]

    def __post_init__(self) -> None:
        super().__post_init__()
        sigma = check.real("sigma", self.sigma, low=0.0, low_open=True)
        s = self.sensitivities
        if isinstance(s, (str, bytes)) or not isinstance(s, (Sequence, np.ndarray)):
            raise TypeError(f"sensitivities must be a sequence of numbers, got {s!r}")
        sens = check.real_array("sensitivities", s, low=0.0)
        if sens.ndim != 1 or sens.size == 0:
            raise ValueError(f"sensitivities must be a non-empty one-dimensional sequence, got {s!r}")
        probs = probability_vector("probabilities", self.probabilities)
        check.same_length(("sensitivities", "probabilities"), sens, probs)
        if not np.any((sens > 0) & (probs > 0)):
            raise ValueError(f"some sensitivity with positive probability must be positive (else P = Q), "
                             f"got sensitivities={s!r}, probabilities={self.probabilities!r}")
        shifts = sens / sigma
        if not np.all(np.isfinite(shifts)) or float(shifts.max()) > 1e150:
            raise ValueError(f"sensitivities / sigma must stay below 1e150, got sigma={self.sigma!r}")
        self._set(sigma=sigma, sensitivities=tuple(float(x) for x in sens),
                  probabilities=tuple(float(x) for x in probs))

    def _components(self) -> tuple[np.ndarray, np.ndarray]:
        """(shifts s_i / sigma, probabilities) of the components with positive probability."""
        p = np.array(self.probabilities)
        live = p > 0
        return np.array(self.sensitivities)[live] / self.sigma, p[live]

    def exact_gdp_mu(self) -> float | None:
        shifts, _ = self._components()
        # One sensitivity s almost surely: the Gaussian mechanism, exactly (s / sigma)-GDP.
        if shifts.size == 1 or np.all(shifts == shifts[0]):
            return float(shifts[0])
        return None

    def loss_parts(self) -> list[LossPart]:
        if self.exact_gdp_mu() is not None:
            return super().loss_parts() or []

        def make() -> list[LossPart]:
            shifts, probs = self._components()
            return [LossPart(MixtureGaussianLoss(shifts, probs, "remove"),
                             MixtureGaussianLoss(shifts, probs, "add"), 1)]
        return self.cached(("parts",), make)

    def dp_guarantee(self) -> tuple[float, float] | None:
        """(0, delta0): the pair's total variation distance delta(0) = TV(P, Q) is at most
        delta0 = sum_i p_i TV(N(s_i, sigma^2), N(0, sigma^2)) = sum_i p_i erf(t_i / (2 sqrt 2)),
        t_i = s_i / sigma, as TV is convex in its first argument (P - Q = sum_i p_i (P_i - Q));
        so delta(eps) <= delta0 at every eps >= 0, in closed form (the "dp" route). The PLD of a
        rare component far out is costly to discretise: MixtureOfGaussians(0.01, (0, 1),
        (1 - 1e-100, 1e-100)) answered eps(1e-5) <= inf and delta(1) <= 1 under a one-second
        budget, where delta(0) <= 1e-100 makes eps(1e-5) = 0.

        The p_i are the stored probabilities over their sum (the stored ones sum to 1 within
        ulps): that division, the shifts' (one rounding, as the laws' own shifts), erf's
        argument (two more), erf (a few ulps of relative error; its relative condition number
        is at most 1, so the argument's error carries over), the products and the correctly
        rounded sums are a relative few tens of MACHINE_EPSILON, covered by 64 of them."""
        def make() -> tuple[float, float] | None:
            shifts, probs = self._components()
            terms = probs * special.erf(shifts / (2.0 * math.sqrt(2.0)))
            delta0 = round_up(math.fsum(terms) / math.fsum(self.probabilities), 64.0 * MACHINE_EPSILON)
            return (0.0, delta0) if delta0 < 1.0 else None
        return self.cached(("total variation",), make)
