"""A mechanism given by the law of its privacy loss: the distribution functions of L = log(dP/dQ).

:class:`ContinuousPair` accounts for a pair (P, Q) that no closed form in the zoo
covers, from the distribution (and optionally survival) functions of its
privacy loss under both distributions: the form in which the law of a loss is
usually derived on paper.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from autoacct.losses import PROFILE_REL, ContinuousLoss
from autoacct.mechanism import LossPart, Mechanism

#: A vectorised function of loss values: an array in, an array of probabilities out.
LawFunction = Callable[[np.ndarray], np.ndarray]

#: Loss values at which the supplied functions are checked at construction.
_PROBES = np.concatenate((-np.geomspace(1e2, 1e-3, 26), [0.0], np.geomspace(1e-3, 1e2, 26)))
#: How far the checks tolerate the rounding of the supplied functions.
_SLACK = 1e-9


class _CdfLoss(ContinuousLoss):
    """The law of L (or of -L, ``flip``) given by the user's functions of the law of L."""

    def __init__(self, functions: tuple[LawFunction, LawFunction, LawFunction, LawFunction],
                 flip: bool, tails: bool) -> None:
        self._f = functions
        self._flip = flip
        # With survival functions given, one run is answered from the profile
        # sf_P(eps) - e^eps sf_Q(eps) itself (no discretisation; a deep tail would need a
        # very fine grid), its subtraction's rounding bounded by profile_error.
        self.exact_profile = tails

    def profile_error(self, eps: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            scale = self._sf(eps, "P") + np.exp(eps) * self._sf(eps, "Q")
        return PROFILE_REL * np.where(np.isfinite(scale), scale, 0.0)

    @property
    def key(self) -> tuple:
        return ("cdf-pair", self._flip, *self._f)

    def _cdf(self, x: np.ndarray, under: str) -> np.ndarray:
        cdf_p, cdf_q, sf_p, sf_q = self._f
        x = np.asarray(x, dtype=float)
        if not self._flip:
            return np.asarray((cdf_p if under == "P" else cdf_q)(x), dtype=float)
        # The addition direction: the law of -L under Q (its "P") and under P (its "Q");
        # Pr(-L <= x) = Pr(L >= -x), the survival function at -x for a continuous law.
        return np.asarray((sf_q if under == "P" else sf_p)(-x), dtype=float)

    def _sf(self, x: np.ndarray, under: str) -> np.ndarray:
        cdf_p, cdf_q, sf_p, sf_q = self._f
        x = np.asarray(x, dtype=float)
        if not self._flip:
            return np.asarray((sf_p if under == "P" else sf_q)(x), dtype=float)
        return np.asarray((cdf_q if under == "P" else cdf_p)(-x), dtype=float)


def _complement(cdf: LawFunction) -> LawFunction:
    def sf(x: np.ndarray) -> np.ndarray:
        return 1.0 - np.asarray(cdf(x), dtype=float)
    return sf


@dataclass(frozen=True, eq=False, repr=False)
class ContinuousPair(Mechanism):
    """A mechanism given by the distribution functions of its privacy loss L = log(dP/dQ).

    For the worst-case neighbouring datasets D ~ D' with output laws P = M(D) and
    Q = M(D') (mutually absolutely continuous), ``cdf_p(x)`` = P(L <= x) and
    ``cdf_q(x)`` = Q(L <= x); the law of L must be continuous (no atoms). Both
    directions are accounted: removal, the law of L under P, and addition, that of
    log(dQ/dP) = -L under Q, whose distribution functions are the survival
    functions of L at -x. Every representation the PLD and characteristic-function
    routes need follows (there is no Renyi-DP curve). The pair is the mechanism's
    own, so lower bounds are certified, and all answers are exact to the accuracy of
    the supplied functions: give ``sf_p`` and ``sf_q`` (P(L > x), Q(L > x)) whenever the
    tails matter, since 1 - cdf loses every digit below 1e-16.

    Construction checks the functions at loss values from -100 to 100: probabilities
    in [0, 1], non-decreasing distribution functions, cdf + sf = 1, and the two
    inequalities every loss law obeys, Q(L <= x) >= P(L <= x) and P(L > x) >=
    e^x Q(L > x) for x >= 0 (Q-mass is e^{-L} times P-mass).

    Parameters
    ----------
    cdf_p, cdf_q:
        Vectorised distribution functions of L under P and under Q.
    sf_p, sf_q:
        Their survival functions (default 1 - cdf).
    neighboring:
        The relation D ~ D' refers to (keyword; default None, the caller's).
    """

    cdf_p: LawFunction
    cdf_q: LawFunction
    sf_p: LawFunction | None = None
    sf_q: LawFunction | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("cdf_p", "cdf_q", "sf_p", "sf_q"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"{name} must be a callable of an array of loss values, got {value!r}")
        self._check()

    def _functions(self) -> tuple[LawFunction, LawFunction, LawFunction, LawFunction]:
        sf_p = self.sf_p if self.sf_p is not None else _complement(self.cdf_p)
        sf_q = self.sf_q if self.sf_q is not None else _complement(self.cdf_q)
        return self.cdf_p, self.cdf_q, sf_p, sf_q

    def _check(self) -> None:
        values = {}
        for name, fn in zip(("cdf_p", "cdf_q", "sf_p", "sf_q"), self._functions()):
            try:
                v = np.asarray(fn(_PROBES.copy()), dtype=float)
            except Exception as err:
                # The user's own function: whatever it raises is reported against its parameter
                # name at construction, not from deep inside a later query.
                raise ValueError(f"{name} failed on an array of loss values: {err}") from err
            if v.shape != _PROBES.shape or not np.all(np.isfinite(v)):
                raise ValueError(f"{name} must map an array of loss values to finite probabilities of its "
                                 f"shape, got {v!r:.80}")
            if np.any(v < -_SLACK) or np.any(v > 1.0 + _SLACK):
                raise ValueError(f"{name} must return probabilities in [0, 1], got {v.min()!r}..{v.max()!r}")
            values[name] = v
        for side in ("p", "q"):
            cdf, sf = values[f"cdf_{side}"], values[f"sf_{side}"]
            if np.any(np.diff(cdf) < -_SLACK):
                raise ValueError(f"cdf_{side} must be non-decreasing")
            if np.any(np.abs(cdf + sf - 1.0) > _SLACK):
                raise ValueError(f"cdf_{side} + sf_{side} must be 1 (they describe the same law)")
        if np.any(values["cdf_q"] < values["cdf_p"] - _SLACK):
            raise ValueError("cdf_q must be >= cdf_p everywhere: L = log(dP/dQ) is larger under P "
                             "(are cdf_p and cdf_q swapped?)")
        pos = _PROBES >= 0
        with np.errstate(over="ignore"):
            gap = values["sf_p"][pos] - np.exp(_PROBES[pos]) * values["sf_q"][pos]
        if np.any(gap < -_SLACK):
            raise ValueError("P(L > x) >= e^x Q(L > x) must hold for x >= 0 (Q-mass is e^-L times P-mass): "
                             "cdf_q does not belong to the law cdf_p describes")

    @property
    def params(self) -> Mapping[str, Any]:
        """No numeric parameters: the pair is given by functions."""
        return MappingProxyType({})

    def loss_parts(self) -> list[LossPart]:
        def make() -> list[LossPart]:
            f = self._functions()
            tails = self.sf_p is not None and self.sf_q is not None
            return [LossPart(_CdfLoss(f, flip=False, tails=tails), _CdfLoss(f, flip=True, tails=tails), 1)]
        return self.cached(("parts",), make)
