"""A mechanism's Renyi DP at given orders, from its ``rdp_curve`` hook, with both ends of the
order range: order 1 (the KL divergence) and order infinity (the max divergence)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from autoacct.errors import RouteUnavailableError

if TYPE_CHECKING:
    from autoacct.mechanism import Mechanism, PairRdp


#: Order at which the KL divergence (order 1) is bounded when a curve has no value at 1:
#: Renyi divergences are non-decreasing in the order, so D_1 <= D_{1 + KL_STEP}.
KL_STEP = 1e-6


def _curve_at(curve: PairRdp, alpha: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        val = np.max(np.asarray(curve(np.asarray(alpha, dtype=float)), dtype=float), axis=0)
    return np.where(np.isnan(val), np.inf, val)


def max_divergence(m: Mechanism) -> float:
    """An upper bound on the max divergence (Renyi order infinity) of ``m``'s pair.

    The pure-DP epsilon of a (eps0, 0) ``dp_guarantee`` (a mechanism is (D, 0)-DP
    exactly when its max divergence is at most D); +inf otherwise. Curves are not
    evaluated at infinity: some (the subsampled Gaussian's) have no finite limit
    and no cheap way of saying so.
    """
    guarantee = m.dp_guarantee()
    if guarantee is not None and guarantee[1] == 0.0:
        return guarantee[0]
    return math.inf


def rdp_of(m: Mechanism, alpha: np.ndarray) -> np.ndarray:
    """The mechanism's RDP at orders ``alpha`` in [1, inf]: the larger of the pair's two orders.

    +inf where the curve gives NaN. Order 1 (the KL divergence) is the curve's value
    there when it has one, else its value at 1 + KL_STEP (an upper bound, the
    divergence being non-decreasing in the order); order inf is :func:`max_divergence`.
    """
    curve = m.rdp_curve()
    if curve is None:
        raise RouteUnavailableError(f"{m.name} has no Renyi-DP representation")
    a = np.asarray(alpha, dtype=float)
    ends = (a == 1.0) | np.isinf(a)
    if not np.any(ends):
        return _curve_at(curve, a)
    at_one = a == 1.0
    val = _curve_at(curve, np.where(ends, 2.0, a))
    if np.any(at_one):
        try:
            kl = float(_curve_at(curve, np.array(1.0)))
        except ValueError:
            # Curves given by expansions in integer orders (the subsampled ones) are defined
            # above order 1 only, and their validation says so.
            kl = math.inf
        if not math.isfinite(kl):
            kl = float(_curve_at(curve, np.array(1.0 + KL_STEP)))
        val = np.where(at_one, kl, val)
    return np.where(np.isinf(a), max_divergence(m), val)
