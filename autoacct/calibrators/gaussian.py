"""Analytic Gaussian calibration (Balle and Wang 2018).

The k-fold composition of Gaussian mechanisms with noise multiplier sigma
(noise std / L2 sensitivity) is exactly mu-GDP with mu = sqrt(k) / sigma, and
its privacy profile is (Balle and Wang 2018, Theorem 8)

    delta(eps; mu) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2),

strictly increasing in mu for every eps > 0. The calibrated sigma solves
delta(eps*; sqrt(k)/sigma) = delta* by a bracketed Brent iteration on log mu.
"""

from __future__ import annotations

import math
import warnings

from scipy import optimize

from autoacct import _validation as check
from autoacct.calibrators.result import DEFAULT_RTOL
from autoacct.errors import AccuracyWarning
from autoacct.losses import gaussian_delta
from autoacct.zoo import Composition, Gaussian

#: Most rounds of raising sigma until the library's certified epsilon meets the budget.
_MAX_RAISES = 20


def _log_delta(mu: float, eps: float) -> float:
    d = float(gaussian_delta(mu, eps))
    return math.log(d) if d > 0 else -math.inf


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest mu such that mu-GDP is (epsilon, delta)-DP.

    Solves delta(epsilon; mu) = delta for mu > 0, where
    delta(eps; mu) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).

    Parameters
    ----------
    epsilon:
        eps* > 0.
    delta:
        delta* in (0, 1).
    """
    eps = check.real("epsilon", epsilon, low=0.0, low_open=True)
    d = check.real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    target = math.log(d)

    def f(log_mu: float) -> float:
        return _log_delta(math.exp(log_mu), eps) - target

    # delta -> 0 as mu -> 0 and -> 1 as mu -> inf: expand a bracket in log mu.
    lo, hi = -1.0, 1.0
    while f(lo) > 0:
        lo -= 2.0
        if lo < -700:
            raise ValueError(f"no mu > 0 gives delta <= {d:g} at epsilon={eps:g}")
    while f(hi) < 0:
        hi += 2.0
        if hi > 50:
            raise ValueError(f"epsilon={eps:g}, delta={d:g} is met by every Gaussian "
                             "(mu beyond 1e21)")
    while f(lo) == -math.inf:
        # delta underflows at lo: move lo up, keeping the sign change.
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    log_mu = optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * 2.0 ** -52, maxiter=500)
    mu = math.exp(log_mu)
    # The root's safe side: delta(eps; mu) must not exceed delta.
    while _log_delta(mu, eps) > target:
        mu = math.nextafter(mu, 0.0)
    return mu


def calibrate_gaussian(epsilon: float, delta: float, count: int = 1) -> float:
    """Exact noise multiplier of a (k-fold composed) Gaussian mechanism for (epsilon, delta).

    Returns the smallest sigma such that ``count`` = k compositions of the
    Gaussian mechanism with noise std sigma times the L2 sensitivity are
    (epsilon, delta)-DP: sigma = sqrt(k) / mu, with mu the root of

        Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) = delta.

    The root is solved to machine precision, on the safe side of the closed
    form, then raised (in practice by ~1e-10 relative) when that is needed for
    the library's certified epsilon of ``Composition()([Gaussian(sigma)], [k])``,
    which carries a small safety margin (relative 1e-9 in delta), to be within
    the budget too. The raise is capped at ``DEFAULT_RTOL`` (0.2%), the
    optimality gap of the other calibrators; where the margin moves epsilon by
    more (a tiny epsilon with delta near 1, where delta(eps) is nearly flat)
    the exact closed-form root is returned, which meets the budget exactly,
    and an ``AccuracyWarning`` says that the library's certified epsilon of
    it exceeds the target.

    Parameters
    ----------
    epsilon:
        eps* > 0.
    delta:
        delta* in (0, 1).
    count:
        k >= 1, the number of composed Gaussian mechanisms.
    """
    k = check.positive_int("count", count)
    mu = gdp_mu(epsilon, delta)
    exact = math.sqrt(k) / mu
    # The closed form is met at `exact`. The library's certified epsilon carries a small
    # relative margin; scale sigma up by the excess (epsilon falls at least as fast as
    # 1/sigma) until it agrees, by at most DEFAULT_RTOL relative.
    sigma = exact
    for _ in range(_MAX_RAISES):
        mech = Composition()([Gaussian(sigma)], [k]) if k > 1 else Gaussian(sigma)
        excess = mech.epsilon(delta) / float(epsilon)
        if excess <= 1.0:
            return sigma
        sigma = max(sigma * excess, math.nextafter(sigma, math.inf)) * (1.0 + 1e-13)
        if sigma > exact * (1.0 + DEFAULT_RTOL):
            break
    warnings.warn(f"sigma={exact:.10g} meets epsilon={float(epsilon):g} at delta={float(delta):g} "
                  "by the closed form, but the library's certified epsilon of it exceeds the "
                  f"target by more than its {DEFAULT_RTOL:g} relative calibration margin; "
                  "returning the closed-form root", AccuracyWarning, stacklevel=2)
    return exact
