"""The profile points a mechanism's auto route has certified, which tighten its later answers.

Kept per mechanism (:func:`autoacct.routes.epsilon_bounds` and :func:`~autoacct.routes.delta_bounds`
read and add them), so that ``m.delta(m.epsilon(d)) <= d`` holds whatever grids the queries used.
"""

from __future__ import annotations

import math

import numpy as np


class CertifiedPoints:
    """Points (eps, delta) of the privacy profile that the auto policy has certified for one
    mechanism: delta(eps) <= delta at each (upper) and delta(eps) >= delta (lower).

    The profile is non-increasing, so an upper point (e, d) bounds delta by d at every
    eps >= e, and eps(d') by e for every d' >= d; a lower point (e, d) bounds delta from
    below by d at every eps <= e. Answers of one kind are tightened by the points of the
    other: two certified bounds, each valid, so their combination is. With it
    ``m.delta(m.epsilon(d)) <= d`` holds even where the delta query's own grid is coarser
    than the one that solved the epsilon query.
    """

    #: Points kept of each kind: a delta query over an array looks each of them up per entry.
    MAX_POINTS = 512

    def __init__(self) -> None:
        self._up_e: list[float] = []
        self._up_d: list[float] = []
        self._lo_e: list[float] = []
        self._lo_d: list[float] = []

    def add(self, eps: np.ndarray, lo: np.ndarray, up: np.ndarray) -> None:
        """Record delta_lo(eps) <= delta(eps) <= delta_up(eps) at each finite eps (the most
        recent MAX_POINTS of each kind are kept)."""
        for e, lo_d, up_d in zip(np.ravel(eps), np.ravel(lo), np.ravel(up), strict=True):
            if math.isfinite(e) and up_d < 1.0:
                self._up_e.append(float(e))
                self._up_d.append(float(up_d))
            if math.isfinite(e) and lo_d > 0.0:
                self._lo_e.append(float(e))
                self._lo_d.append(float(lo_d))
        for kept in (self._up_e, self._up_d, self._lo_e, self._lo_d):
            del kept[:-self.MAX_POINTS]

    def delta(self, eps: np.ndarray, lo: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lo, up) on delta at ``eps`` tightened by the recorded points."""
        if self._up_e:
            e, d = np.array(self._up_e), np.array(self._up_d)
            # A recorded delta is the user's own number or a value as the API returned it,
            # so exact: one ulp below it here is moved back onto it by :func:`outward`.
            known = np.nextafter(np.min(np.where(e <= eps[..., None], d, np.inf), axis=-1), 0.0)
            up = np.minimum(up, known)
        if self._lo_e:
            e, d = np.array(self._lo_e), np.array(self._lo_d)
            lo = np.maximum(lo, np.max(np.where(e >= eps[..., None], d, 0.0), axis=-1))
        return lo, np.maximum(up, lo)

    def epsilon(self, delta: float, lo: float, up: float) -> tuple[float, float]:
        """(lo, up) on eps(delta) tightened by the recorded points: eps(delta) <= e where
        delta_up(e) <= delta, and eps(delta) >= e where delta_lo(e) > delta."""
        ups = [e for e, d in zip(self._up_e, self._up_d, strict=True) if d <= delta]
        lows = [e for e, d in zip(self._lo_e, self._lo_d, strict=True) if d > delta]
        up = min([up, *(float(np.nextafter(e, 0.0)) for e in ups)])  # exact, as above
        return min(max([lo, *lows]), up), up
